/* tf.cond at import (issue 23: rvm): a Switch whose predicate is a Const once the import has
 * folded what it can is resolved here, as TensorFlow's executor would resolve it at run time:
 * Switch(data, pred) forwards data to output 1 if pred else output 0, and the other output is
 * dead; a node that reads a dead tensor (or has a dead control input) is dead and is not
 * built; a Merge forwards its one live input (output 0) and that input's index (output 1, an
 * int32 Const). So the branch not taken never reaches the graph, and graphs without a Switch
 * take none of this. A dead tensor is a model tensor whose graph tensor is {NULL, 0}; a dead
 * node has DEAD_OUTS of them. A Switch whose predicate does not fold, or a Merge with two live
 * inputs, is left to the builder (op types clgraph cannot run). */
#include <string.h>

#include "import/build.h"

enum { DEAD_OUTS = 16 }; /* outputs a dead node answers for (none has more) */

/* Whether input string `in` (data "x:i" or control "^x") reads something dead. */
static bool reads_dead(imp *c, const char *in)
{
  bool ctrl = in[0] == '^';
  const char *s = ctrl ? in + 1 : in;
  if (!ctrl && clg_imp_mapped(c, s) >= 0)
    return false;
  size_t len;
  int index;
  bool isctrl;
  clg_imp_parse_tensor_name(s, &len, &index, &isctrl);
  int p = clg_imp_hash_find(c->hash, c->hash_size, clg_imp_model_node_name, c->m, s, len);
  if (p < 0 || !c->outs[p]) /* unknown (the builder says so) or waiting in a fold wave */
    return false;
  if (ctrl)
    return !c->nodes[p] && c->nouts[p] == DEAD_OUTS && !c->outs[p][0].node;
  return index < c->nouts[p] && !c->outs[p][index].node;
}

static clg_code mark_dead(imp *c, int idx)
{
  clg_output none[DEAD_OUTS] = {0};
  memset(none, 0, sizeof none);
  return clg_imp_set_outs(c, idx, NULL, DEAD_OUTS, none);
}

/* A Switch whose predicate folded: data on the taken output, the other one dead. */
static clg_code fold_switch(imp *c, int idx, bool *done)
{
  const clg_imp_node *n = &c->m->nodes[idx];
  clg_output data = {0}, pred = {0};
  clg_code code = clg_imp_flush_for(c, n);
  if (code == CLG_OK && n->num_inputs >= 2)
    code = clg_imp_resolve(c, n, n->inputs[1], &pred);
  if (code != CLG_OK || n->num_inputs < 2)
    return code;
  const clg_tensor *t = clg_node_value(pred.node);
  if (!(pred.node->def->flags & CLG_OP_CONST) || !t || clg_tensor_dtype(t) != CLG_BOOL ||
      clg_tensor_rank(t) != 0)
    return CLG_OK; /* decided at run time, or refused by the builder */
  if ((code = clg_imp_resolve(c, n, n->inputs[0], &data)) != CLG_OK)
    return code;
  bool taken = *(const uint8_t *)clg_tensor_const_data(t) != 0;
  clg_output outs[2] = {{NULL, 0}, {NULL, 0}};
  outs[taken] = data;
  *done = true;
  return clg_imp_set_outs(c, idx, data.node, 2, outs);
}

/* A Merge with one live input: that input and its index. */
static clg_code fold_merge(imp *c, int idx, bool *done)
{
  const clg_imp_node *n = &c->m->nodes[idx];
  int live = -1, nlive = 0;
  for (int i = 0; i < n->num_inputs; i++) {
    if (n->inputs[i][0] == '^')
      continue;
    if (!reads_dead(c, n->inputs[i])) {
      live = i; /* data inputs come before control inputs: i is the input's index */
      nlive++;
    }
  }
  if (nlive > 1)
    return CLG_OK;
  *done = true;
  if (nlive == 0)
    return mark_dead(c, idx);
  clg_output v = {0};
  clg_code code = clg_imp_resolve(c, n, n->inputs[live], &v);
  if (code != CLG_OK)
    return code;
  clg_tensor *t = clg_tensor_new(CLG_INT32, 0, NULL, NULL);
  if (!t)
    return fail(c, CLG_RESOURCE_EXHAUSTED);
  *(int32_t *)clg_tensor_data(t) = live;
  clg_node *index = clg_const(c->g, n->name, t);
  clg_tensor_free(t);
  if (!index)
    return clg_graph_status(c->g);
  clg_output outs[2] = {v, clg_out(index, 0)};
  return clg_imp_set_outs(c, idx, v.node, 2, outs);
}

clg_code clg_imp_cond_try(imp *c, int idx, bool *done)
{
  const clg_imp_node *n = &c->m->nodes[idx];
  const clg_op_def *def = clg_op_find(n->op);
  bool merge = def == &clg_op_Merge, dead = false;
  *done = false;
  for (int i = 0; i < n->num_inputs && !dead; i++)
    dead = (!merge || n->inputs[i][0] == '^') && reads_dead(c, n->inputs[i]);
  if (dead) {
    *done = true;
    return mark_dead(c, idx);
  }
  if (merge)
    return fold_merge(c, idx, done);
  if (def == &clg_op_Switch)
    return fold_switch(c, idx, done);
  return CLG_OK;
}

bool clg_imp_is_dead(const imp *c, int idx)
{
  return c->outs[idx] && !c->nodes[idx] && c->nouts[idx] == DEAD_OUTS && !c->outs[idx][0].node;
}
