/* Constant folding for the importer: foldable nodes (every input a Const) wait in a scratch
 * graph as a wave; when a node reads one of them (or the build ends) one helper session and one
 * run compute the whole wave on the host, and its nodes become Consts in the import's graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "import/build.h"
#include "runtime/runtime.h"

/* A folded constant holds at most this many elements (per output): beyond, the node is built
 * as is and computed at run time (folding would only move weights-sized work to import). */
#define FOLD_MAX_ELEMENTS (1u << 20)

static void pending_clear(imp *c)
{
  for (int i = 0; i < c->num_pend; i++) {
    c->pending[c->pend[i].idx] = false;
    free(c->pend[i].ins);
    free(c->pend[i].attrs);
  }
  c->num_pend = 0;
  clg_graph_free(c->scratch);
  c->scratch = NULL;
}

void clg_imp_fold_reset(imp *c)
{
  pending_clear(c);
  free(c->pend);
  c->pend = NULL;
  c->cap_pend = 0;
  clg_session_free(c->anchor);
  clg_graph_free(c->anchor_g);
  c->anchor = NULL;
  c->anchor_g = NULL;
}

/* Node p of a wave in scratch graph sg (on CPU:0): Consts of its inputs' values, then it. */
static clg_node *scratch_node(clg_graph *sg, const pending *p)
{
  clg_output sins[64] = {0};
  for (int i = 0; i < p->nin; i++)
    sins[i] = clg_out(clg_const(sg, NULL, clg_node_value(p->ins[i].node)), 0);
  return clg_op(sg, p->def->name, NULL, p->nin, sins, p->na, p->attrs);
}

static clg_graph *scratch_new(void)
{
  clg_graph *sg = clg_graph_new();
  if (sg && clg_graph_push_device(sg, "/device:CPU:0") != CLG_OK) {
    clg_graph_free(sg);
    return NULL;
  }
  return sg;
}

/* Folds a node whose inputs are all Consts: into the wave (*done true), computed at the next
 * flush. *done false (and no error) when the node does not fold. */
clg_code clg_imp_fold_try(imp *c, int idx, const clg_op_def *def, int nin, const clg_output *ins,
                          int na, const clg_attr *attrs, bool *done)
{
  *done = false;
  if (c->no_fold || nin < 1 || nin > 64 ||
      def->flags & (CLG_OP_CONST | CLG_OP_MUST_FEED | CLG_OP_VARIABLE | CLG_OP_ASSIGNS) ||
      def->ref_inputs || (def->num_outputs < 1 && def->num_outputs != CLG_OP_VARIADIC))
    return CLG_OK;
  for (int i = 0; i < nin; i++)
    if (!ins[i].node || !(ins[i].node->def->flags & CLG_OP_CONST))
      return CLG_OK;
  if (!c->scratch && !(c->scratch = scratch_new()))
    return CLG_OK;
  if (c->num_pend == c->cap_pend) {
    int cap = c->cap_pend ? 2 * c->cap_pend : 16;
    pending *grown = realloc(c->pend, sizeof *grown * (size_t)cap);
    if (!grown)
      return CLG_OK; /* built as is */
    c->pend = grown;
    c->cap_pend = cap;
  }
  pending *p = &c->pend[c->num_pend];
  *p = (pending){.idx = idx, .def = def, .nin = nin, .na = na};
  p->ins = malloc(sizeof *p->ins * (size_t)nin);
  p->attrs = malloc(sizeof *p->attrs * (size_t)(na ? na : 1));
  if (!p->ins || !p->attrs) {
    free(p->ins);
    free(p->attrs);
    return CLG_OK;
  }
  memcpy(p->ins, ins, sizeof *p->ins * (size_t)nin);
  memcpy(p->attrs, attrs, sizeof *p->attrs * (size_t)na);
  p->sn = scratch_node(c->scratch, p);
  bool fits = p->sn && (p->nout = clg_node_num_outputs(p->sn)) >= 1 && p->nout <= 64;
  for (int i = 0; fits && i < p->nout; i++)
    fits = clg_node_out_count(p->sn, i) <= FOLD_MAX_ELEMENTS;
  if (!p->sn) {
    /* The scratch graph's error is sticky (the real build reports it): the wave so far moves
     * to a fresh one. */
    clg_error_clear();
    clg_graph *sg = scratch_new();
    for (int i = 0; sg && i < c->num_pend; i++)
      if (!(c->pend[i].sn = scratch_node(sg, &c->pend[i]))) {
        clg_graph_free(sg);
        sg = NULL;
      }
    clg_error_clear();
    clg_graph_free(c->scratch);
    c->scratch = sg;
    if (!sg) /* cannot happen (they were built once): the wave is built as is */
      c->no_fold = true;
  }
  if (!fits) { /* an unused node of the scratch graph: never run */
    free(p->ins);
    free(p->attrs);
    return CLG_OK;
  }
  c->num_pend++;
  c->pending[idx] = true;
  *done = true;
  return CLG_OK;
}

/* The model node of p as it is (not folded), in g under its device. */
static clg_code build_unfolded(imp *c, const pending *p)
{
  const clg_imp_node *n = &c->m->nodes[p->idx];
  if (n->device[0] && clg_graph_push_device(c->g, n->device) != CLG_OK)
    return clg_graph_status(c->g);
  clg_node *built = clg_op(c->g, p->def->name, n->name, p->nin, p->ins, p->na, p->attrs);
  if (n->device[0])
    clg_graph_pop_device(c->g);
  if (!built)
    return clg_graph_status(c->g);
  return clg_imp_set_outs(c, p->idx, built, clg_node_num_outputs(built), NULL);
}

/* The values of p as Consts in g, under its device: output 0 keeps the node's name, the others
 * are "<name>/output_<i>". Frees vals. */
static clg_code build_folded(imp *c, const pending *p, clg_tensor **vals)
{
  const clg_imp_node *n = &c->m->nodes[p->idx];
  clg_code code = CLG_OK;
  bool pushed = n->device[0] && clg_graph_push_device(c->g, n->device) == CLG_OK;
  if (n->device[0] && !pushed)
    code = clg_graph_status(c->g);
  clg_output outs[64] = {0};
  for (int i = 0; i < p->nout; i++) {
    char name[1024];
    if (i == 0)
      snprintf(name, sizeof name, "%s", n->name);
    else
      snprintf(name, sizeof name, "%s/output_%d", n->name, i);
    clg_node *k = code == CLG_OK ? clg_const(c->g, name, vals[i]) : NULL;
    if (!k && code == CLG_OK)
      code = clg_graph_status(c->g);
    outs[i] = clg_out(k, 0);
    clg_tensor_free(vals[i]);
  }
  if (pushed)
    clg_graph_pop_device(c->g);
  return code == CLG_OK ? clg_imp_set_outs(c, p->idx, outs[0].node, p->nout, outs) : code;
}

/* Folds wave nodes [lo, hi) with one session on sg (NULL: a scratch graph of them is built)
 * and one run; when that fails (a node without a host kernel, or one whose kernel fails), each
 * half is tried alone, down to single nodes, which are then built as they are. */
static clg_code fold_range(imp *c, clg_graph *sg, int lo, int hi)
{
  clg_graph *own = NULL;
  clg_node **sn = malloc(sizeof *sn * (size_t)(hi - lo));
  if (!sn)
    return fail(c,
                clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing %s", file_of(c)));
  for (int i = lo; i < hi; i++)
    sn[i - lo] = sg ? c->pend[i].sn : NULL;
  if (!sg && (own = sg = scratch_new()))
    for (int i = lo; i < hi && sg; i++)
      if (!(sn[i - lo] = scratch_node(sg, &c->pend[i])))
        sg = NULL;
  int total = 0;
  for (int i = lo; i < hi; i++)
    total += c->pend[i].nout;
  clg_output *fetch = malloc(sizeof *fetch * (size_t)total);
  clg_tensor **vals = calloc((size_t)total, sizeof *vals);
  clg_session *s = NULL;
  bool ran = false;
  if (sg && fetch && vals && clg_process_helper_session(sg, &s) == CLG_OK) {
    int k = 0;
    for (int i = lo; i < hi; i++)
      for (int j = 0; j < c->pend[i].nout; j++)
        fetch[k++] = clg_out(sn[i - lo], j);
    ran = clg_session_run_outputs(s, 0, NULL, NULL, total, fetch, vals, 0, NULL) == CLG_OK;
  }
  clg_error_clear(); /* not folded: computed at run time instead */
  clg_session_free(s);
  clg_graph_free(own);
  free(sn);
  free(fetch);
  clg_code code = CLG_OK;
  if (ran) {
    int k = 0;
    for (int i = lo; i < hi; i++) {
      clg_code one = build_folded(c, &c->pend[i], vals + k);
      k += c->pend[i].nout;
      if (code == CLG_OK)
        code = one;
    }
  } else if (hi - lo == 1)
    code = build_unfolded(c, &c->pend[lo]);
  else {
    int mid = lo + (hi - lo) / 2;
    code = fold_range(c, NULL, lo, mid);
    if (code == CLG_OK)
      code = fold_range(c, NULL, mid, hi);
  }
  free(vals);
  return code;
}

/* Computes the wave: its nodes become Consts in g (or themselves where they do not fold). */
clg_code clg_imp_fold_flush(imp *c)
{
  if (c->num_pend == 0)
    return CLG_OK;
  /* The device state stays held across the waves (a helper session alone would create and
   * release it each wave); without a host session nothing folds in this import. */
  if (!c->anchor && !c->no_fold &&
      (!(c->anchor_g = clg_graph_new()) ||
       clg_process_helper_session(c->anchor_g, &c->anchor) != CLG_OK)) {
    clg_error_clear();
    c->anchor = NULL;
    c->no_fold = true;
  }
  clg_code code = CLG_OK;
  if (c->no_fold)
    for (int i = 0; i < c->num_pend && code == CLG_OK; i++)
      code = build_unfolded(c, &c->pend[i]);
  else
    code = fold_range(c, c->scratch, 0, c->num_pend);
  pending_clear(c);
  return code;
}
