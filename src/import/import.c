/* The importer (include/clgraph/import.h): a reader's neutral model becomes graph nodes through
 * the generic builder (clg_op), in a topological order of the model's edges, each under its
 * NodeDef's device as a device scope and the options' prefix as a name scope. Constant
 * subgraphs fold into Consts on the host as they are built (shape arithmetic gives the static
 * shapes Reshape and friends need). The entry points that read a model first: entry.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "graph/graph.h"
#include "import/build.h"
#include "runtime/runtime.h"

/* --- the build ------------------------------------------------------------------------------ */

static bool same_tensor(const char *a, const char *b)
{
  size_t la, lb;
  int ia, ib;
  bool ca, cb;
  clg_imp_parse_tensor_name(a, &la, &ia, &ca);
  clg_imp_parse_tensor_name(b, &lb, &ib, &cb);
  return !ca && !cb && la == lb && ia == ib && memcmp(a, b, la) == 0;
}

/* The input_map entry feeding model tensor `tensor`, or -1. */
static int mapped(imp *c, const char *tensor)
{
  for (int i = 0; i < c->o->num_input_map; i++)
    if (c->o->input_map[i].name && same_tensor(c->o->input_map[i].name, tensor))
      return i;
  return -1;
}

/* The graph tensor a model input string reads. */
static clg_code resolve_input(imp *c, const clg_imp_node *n, const char *in, clg_output *out)
{
  int k = mapped(c, in);
  if (k >= 0) {
    c->map_used[k] = true;
    *out = c->o->input_map[k].value;
    return CLG_OK;
  }
  size_t len;
  int index;
  bool ctrl;
  clg_imp_parse_tensor_name(in, &len, &index, &ctrl);
  int p = clg_imp_hash_find(c->hash, c->hash_size, clg_imp_model_node_name, c->m, in, len);
  if (p < 0 || !c->outs[p])
    return fail(c, clg_error(CLG_INTERNAL, "%s: node '%s': input '%s' was not built", file_of(c),
                             n->name, in));
  if (index >= c->nouts[p])
    return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                             "%s: node '%s': input '%s' names output %d of a node with %d",
                             file_of(c), n->name, in, index, c->nouts[p]));
  c->consumed[p] = true;
  *out = c->outs[p][index];
  return CLG_OK;
}

/* Attributes the fused rule consumes itself. */
static bool fused_attr(const char *name)
{
  return strcmp(name, "fused_ops") == 0 || strcmp(name, "num_args") == 0 ||
         strcmp(name, "epsilon") == 0 || strcmp(name, "leakyrelu_alpha") == 0;
}

static const char *attr_kind_name(clg_imp_attr_kind k)
{
  static const char *const names[] = {"empty",  "a string", "an int",   "a float", "a bool",
                                      "a type", "a shape",  "a tensor", "a list",  "a function"};
  return k >= 0 && k <= CLG_IMP_FUNC ? names[k] : "?";
}

/* The model attributes as clgraph attributes of def (what they point at stays in the model). */
static clg_code convert_attrs(imp *c, const clg_imp_node *n, const clg_op_def *def, bool fused,
                              clg_attr *out, int *num_out)
{
  char dt[24];
  int k = 0;
  for (int i = 0; i < n->num_attrs; i++) {
    const clg_imp_attr *a = &n->attrs[i];
    const clg_attr_def *d = NULL;
    for (int j = 0; j < def->num_attrs && !d; j++)
      if (strcmp(def->attrs[j].name, a->name) == 0)
        d = &def->attrs[j];
    if (!d) {
      if (clg_imp_attr_ignorable(a) || (fused && fused_attr(a->name)))
        continue;
      return fail(c, clg_error(CLG_UNIMPLEMENTED,
                               "%s: node '%s' (op %s): attribute '%s' is not one clgraph's %s "
                               "has",
                               file_of(c), n->name, n->op, a->name, def->name));
    }
    if (d->type == CLG_ATTR_SHAPE && def->flags & CLG_OP_MUST_FEED)
      continue; /* bound by bind_shape */
    clg_attr *o = &out[k];
    o->name = d->name;
    o->type = d->type;
    bool ok = true;
    switch (d->type) {
    case CLG_ATTR_INT:
      ok = a->kind == CLG_IMP_I;
      o->v.i = a->i;
      break;
    case CLG_ATTR_FLOAT:
      ok = a->kind == CLG_IMP_F || a->kind == CLG_IMP_I;
      o->v.f = a->kind == CLG_IMP_F ? a->f : (double)a->i;
      break;
    case CLG_ATTR_BOOL:
      ok = a->kind == CLG_IMP_B;
      o->v.b = a->i != 0;
      break;
    case CLG_ATTR_STRING:
      ok = a->kind == CLG_IMP_S;
      o->v.s = a->s;
      break;
    case CLG_ATTR_DTYPE:
      ok = a->kind == CLG_IMP_TYPE;
      if (ok && !clg_imp_dtype((int)a->i, &o->v.dtype))
        return fail(c, clg_error(CLG_UNIMPLEMENTED,
                                 "%s: node '%s' (op %s): attribute '%s' is %s, a dtype clgraph "
                                 "does not have",
                                 file_of(c), n->name, n->op, a->name,
                                 clg_imp_tf_dtype_name((int)a->i, dt)));
      break;
    case CLG_ATTR_INT_LIST:
      ok = a->kind == CLG_IMP_LIST && (a->n == 0 || a->elem == CLG_IMP_I);
      o->v.list.n = a->n;
      o->v.list.v = a->ints;
      break;
    case CLG_ATTR_SHAPE:
      ok = a->kind == CLG_IMP_SHAPE;
      if (ok && a->shape.rank < 0)
        return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                                 "%s: node '%s' (op %s): attribute '%s' is a shape of unknown "
                                 "rank (clgraph's shapes are static)",
                                 file_of(c), n->name, n->op, a->name));
      for (int j = 0; ok && j < a->shape.rank; j++)
        if (a->shape.dims[j] < 0)
          return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                                   "%s: node '%s' (op %s): attribute '%s' has unknown dim %d "
                                   "(clgraph's shapes are static)",
                                   file_of(c), n->name, n->op, a->name, j));
      o->v.list.n = a->shape.rank;
      o->v.list.v = a->shape.dims;
      break;
    case CLG_ATTR_TENSOR:
      ok = a->kind == CLG_IMP_TENSOR;
      if (ok && !a->tensor.value) {
        clg_dtype cd;
        if (!clg_imp_dtype(a->tensor.tf_dtype, &cd))
          return fail(c, clg_error(CLG_UNIMPLEMENTED,
                                   "%s: node '%s' (op %s): a tensor of %s, a dtype clgraph does "
                                   "not have",
                                   file_of(c), n->name, n->op,
                                   clg_imp_tf_dtype_name(a->tensor.tf_dtype, dt)));
        return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                                 "%s: node '%s' (op %s): attribute '%s' holds no value (no "
                                 "weight names the node)",
                                 file_of(c), n->name, n->op, a->name));
      }
      o->v.tensor = a->tensor.value;
      break;
    }
    if (!ok)
      return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                               "%s: node '%s' (op %s): attribute '%s' is %s, not what clgraph's "
                               "%s declares",
                               file_of(c), n->name, n->op, a->name, attr_kind_name(a->kind),
                               def->name));
    k++;
  }
  *num_out = k;
  return CLG_OK;
}

/* Placeholders: the model's shape with input_shapes' dims bound where it has -1. */
static clg_code bind_shape(imp *c, const clg_imp_node *n, const clg_op_def *def, clg_attr *attrs,
                           int *num, int64_t *dims)
{
  /* The op's one SHAPE attribute (Placeholder's "shape"). */
  const char *shape_attr = NULL;
  for (int i = 0; i < def->num_attrs && !shape_attr; i++)
    if (def->attrs[i].type == CLG_ATTR_SHAPE)
      shape_attr = def->attrs[i].name;
  if (!shape_attr)
    return CLG_OK;
  const clg_imp_attr *sa = clg_imp_node_attr(n, shape_attr);
  clg_imp_shape s = {.rank = -1};
  if (sa && sa->kind == CLG_IMP_SHAPE)
    s = sa->shape;
  const clg_import_shape *bind = NULL;
  for (int i = 0; i < c->o->num_input_shapes; i++) {
    const clg_import_shape *b = &c->o->input_shapes[i];
    if (b->name && (same_tensor(b->name, n->name) || strcmp(b->name, n->name) == 0)) {
      bind = b;
      c->shape_used[i] = true;
    }
  }
  char text[200];
  if (bind) {
    if (bind->rank < 0 || bind->rank > CLG_MAX_RANK)
      return fail(
          c, clg_error(CLG_INVALID_ARGUMENT, "input_shapes '%s': rank %d", bind->name, bind->rank));
    if (s.rank >= 0 && s.rank != bind->rank)
      return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                               "input_shapes '%s': rank %d, but the model's input has rank %d",
                               bind->name, bind->rank, s.rank));
    for (int i = 0; i < bind->rank; i++) {
      if (bind->dims[i] < 0)
        return fail(c, clg_error(CLG_INVALID_ARGUMENT, "input_shapes '%s': dim %d is %lld",
                                 bind->name, i, (long long)bind->dims[i]));
      if (s.rank >= 0 && s.dims[i] >= 0 && s.dims[i] != bind->dims[i])
        return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                                 "input_shapes '%s': dim %d is %lld, but the model fixes it at "
                                 "%lld",
                                 bind->name, i, (long long)bind->dims[i], (long long)s.dims[i]));
    }
    s.rank = bind->rank;
    memcpy(s.dims, bind->dims, sizeof s.dims[0] * (size_t)bind->rank);
  }
  size_t k = 0;
  text[0] = 0;
  for (int i = 0; i < s.rank && k < sizeof text; i++)
    k += (size_t)snprintf(text + k, sizeof text - k, "%s%lld", i ? "," : "", (long long)s.dims[i]);
  if (s.rank < 0)
    return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                             "%s: input '%s' has an unknown rank: bind it with input_shapes "
                             "(clgraph's shapes are static)",
                             file_of(c), n->name));
  for (int i = 0; i < s.rank; i++)
    if (s.dims[i] < 0)
      return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                               "%s: input '%s' has shape [%s] with unknown dims: bind them with "
                               "input_shapes (clgraph's shapes are static)",
                               file_of(c), n->name, text));
  memcpy(dims, s.dims, sizeof s.dims[0] * (size_t)s.rank);
  int j = 0;
  while (j < *num && strcmp(attrs[j].name, shape_attr) != 0)
    j++;
  attrs[j] = clg_attr_shape(shape_attr, s.rank, dims);
  if (j == *num)
    (*num)++;
  return CLG_OK;
}

/* Records model node idx as the graph tensors outs[0..n). */
clg_code clg_imp_set_outs(imp *c, int idx, clg_node *node, int n, const clg_output *outs)
{
  c->nodes[idx] = node;
  c->outs[idx] = malloc(sizeof *c->outs[idx] * (size_t)(n + 1));
  if (!c->outs[idx])
    return fail(c,
                clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing %s", file_of(c)));
  c->nouts[idx] = n;
  for (int i = 0; i < n; i++)
    c->outs[idx][i] = outs ? outs[i] : clg_out(node, i);
  return CLG_OK;
}

static clg_code build_fused(imp *c, const clg_imp_node *n, const clg_imp_rule *rule, int nin,
                            const clg_output *ins, clg_node **built)
{
  const clg_op_def *def = clg_op_find(rule->target);
  if (!def)
    return fail(c, clg_error(CLG_UNIMPLEMENTED,
                             "%s: op type %s (node '%s') is not supported by clgraph (it needs "
                             "%s)",
                             file_of(c), n->op, n->name, rule->target));
  const clg_imp_attr *fo = clg_imp_node_attr(n, "fused_ops");
  int nsteps = fo && fo->kind == CLG_IMP_LIST ? fo->n : 0;
  if (nin < 2)
    return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                             "%s: node '%s' (op %s) has %d inputs, not 2 + "
                             "its args",
                             file_of(c), n->name, n->op, nin));
  int nargs = 0;
  for (int i = 0; i < nsteps; i++) {
    if (!fo->strs || !clg_op_find(fo->strs[i]))
      return fail(c, clg_error(CLG_UNIMPLEMENTED,
                               "%s: op type %s (node '%s') fuses %s, which clgraph does not have",
                               file_of(c), n->op, n->name, fo->strs ? fo->strs[i] : "?"));
    nargs += clg_imp_fused_step_args(fo->strs[i]);
  }
  if (nin != 2 + nargs)
    return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                             "%s: node '%s' (op %s) has %d inputs, but its fused ops take 2 + %d",
                             file_of(c), n->name, n->op, nin, nargs));
  clg_attr attrs[64];
  int na = 0;
  if (n->num_attrs > 64)
    return fail(c, clg_error(CLG_INVALID_ARGUMENT, "%s: node '%s' has %d attributes", file_of(c),
                             n->name, n->num_attrs));
  clg_code code = convert_attrs(c, n, def, true, attrs, &na);
  if (code != CLG_OK)
    return code;
  char name[1024];
  snprintf(name, sizeof name, "%s/%s", n->name, def->name);
  clg_node *cur = clg_op(c->g, def->name, nsteps ? name : n->name, 2, ins, na, attrs);
  int arg = 2;
  for (int i = 0; i < nsteps && cur; i++) {
    const char *step = fo->strs[i];
    snprintf(name, sizeof name, "%s/%s", n->name, step);
    const char *nm = i == nsteps - 1 ? n->name : name;
    clg_output sin[2] = {clg_out(cur, 0), {NULL, 0}};
    int sn = 1;
    if (clg_imp_fused_step_args(step))
      sin[sn++] = ins[arg++];
    clg_attr sa[8];
    int nsa = 0;
    const clg_op_def *sd = clg_op_find(step);
    for (int j = 0; j < sd->num_attrs && nsa < 8; j++) {
      const char *from = clg_imp_fused_step_attr(sd->attrs[j].name);
      const clg_imp_attr *v = from ? clg_imp_node_attr(n, from) : NULL;
      if (v && v->kind == CLG_IMP_F && sd->attrs[j].type == CLG_ATTR_FLOAT)
        sa[nsa++] = clg_attr_float(sd->attrs[j].name, v->f);
    }
    cur = clg_op(c->g, step, nm, sn, sin, nsa, sa);
  }
  if (!cur)
    return clg_graph_status(c->g);
  *built = cur;
  return CLG_OK;
}

/* A node that reads the wave (data or control) needs it computed first. */
static clg_code flush_if_reads_wave(imp *c, const clg_imp_node *n)
{
  for (int i = 0; i < n->num_inputs && c->num_pend; i++) {
    const char *in = n->inputs[i][0] == '^' ? n->inputs[i] + 1 : n->inputs[i];
    size_t len;
    int index;
    bool isctrl;
    clg_imp_parse_tensor_name(in, &len, &index, &isctrl);
    int p = clg_imp_hash_find(c->hash, c->hash_size, clg_imp_model_node_name, c->m, in, len);
    if (p >= 0 && c->pending[p]) {
      clg_code code = clg_imp_fold_flush(c);
      if (code != CLG_OK)
        return code;
    }
  }
  return CLG_OK;
}

/* The node's data inputs resolved into ins and its control inputs (those built) into ctrl, at
 * most 256 of each. */
static clg_code gather_inputs(imp *c, const clg_imp_node *n, clg_output *ins, int *num_ins,
                              clg_node **ctrl, int *num_ctrl)
{
  int nin = 0, nctrl = 0;
  for (int i = 0; i < n->num_inputs; i++) {
    const char *in = n->inputs[i];
    if (in[0] == '^') {
      size_t len;
      int index;
      bool isctrl;
      clg_imp_parse_tensor_name(in, &len, &index, &isctrl);
      int p = clg_imp_hash_find(c->hash, c->hash_size, clg_imp_model_node_name, c->m, in + 1, len);
      if (nctrl >= 256)
        return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                                 "%s: node '%s' has more than 256 control inputs", file_of(c),
                                 n->name));
      if (p >= 0 && c->nodes[p])
        ctrl[nctrl++] = c->nodes[p];
      *num_ctrl = nctrl;
      continue;
    }
    if (nin >= 256)
      return fail(c, clg_error(CLG_INVALID_ARGUMENT, "%s: node '%s' has more than 256 inputs",
                               file_of(c), n->name));
    clg_code code = resolve_input(c, n, in, &ins[nin]);
    if (code != CLG_OK)
      return code;
    *num_ins = ++nin;
  }
  return CLG_OK;
}

/* Shape of a static shape: a Const of out_type (int32 unless int64 asked); Size (the rule's
 * target) of it: its element count, a scalar Const. */
static clg_code build_static_shape(imp *c, const clg_imp_node *n, const clg_imp_rule *rule, int nin,
                                   const clg_output *ins, clg_node **built)
{
  const clg_imp_attr *ot = clg_imp_node_attr(n, "out_type");
  bool i64 = ot && ot->kind == CLG_IMP_TYPE && ot->i == 9, size = rule->target != NULL;
  if (nin != 1)
    return fail(c, clg_error(CLG_INVALID_ARGUMENT, "%s: node '%s' (op %s) has %d inputs, not 1",
                             file_of(c), n->name, n->op, nin));
  int rank = clg_node_output_rank(ins[0].node, ins[0].index);
  int64_t dims[1] = {rank}, count = 1;
  clg_tensor *t = clg_tensor_new(i64 ? CLG_INT64 : CLG_INT32, size ? 0 : 1, dims, NULL);
  if (!t)
    return fail(c, CLG_RESOURCE_EXHAUSTED);
  for (int i = 0; i < rank; i++) {
    int64_t d = clg_node_output_dim(ins[0].node, ins[0].index, i);
    count *= d;
    if (size)
      continue;
    if (i64)
      ((int64_t *)clg_tensor_data(t))[i] = d;
    else
      ((int32_t *)clg_tensor_data(t))[i] = (int32_t)d;
  }
  if (size && !i64 && count > INT32_MAX) {
    clg_tensor_free(t);
    return fail(c, clg_error(CLG_INVALID_ARGUMENT,
                             "%s: node '%s' (op Size): Number of elements was larger than "
                             "representable by 32-bit output type (%lld elements)",
                             file_of(c), n->name, (long long)count));
  }
  if (size && i64)
    *(int64_t *)clg_tensor_data(t) = count;
  else if (size)
    *(int32_t *)clg_tensor_data(t) = (int32_t)count;
  *built = clg_const(c->g, n->name, t);
  clg_tensor_free(t);
  return *built ? CLG_OK : clg_graph_status(c->g);
}

int clg_imp_mapped(imp *c, const char *tensor) { return mapped(c, tensor); }

clg_code clg_imp_resolve(imp *c, const clg_imp_node *n, const char *in, clg_output *out)
{
  return resolve_input(c, n, in, out);
}

clg_code clg_imp_flush_for(imp *c, const clg_imp_node *n) { return flush_if_reads_wave(c, n); }

/* A Const's value in the model, which the node takes rather than copies (the model is freed
 * after the build): one copy of the weights in memory, not two. NULL for other ops. */
static clg_tensor **const_value(clg_imp_node *n, const clg_op_def *def)
{
  for (int i = 0; def->flags & CLG_OP_CONST && i < n->num_attrs; i++)
    if (n->attrs[i].kind == CLG_IMP_TENSOR && n->attrs[i].tensor.value)
      return &n->attrs[i].tensor.value;
  return NULL;
}

static clg_code build_node(imp *c, int idx)
{
  clg_imp_node *n = &c->m->nodes[idx];
  bool cond_done;
  clg_code cond = clg_imp_cond_try(c, idx, &cond_done);
  if (cond != CLG_OK || cond_done)
    return cond;
  const clg_imp_rule *rule = clg_imp_rule_find(n->op);
  const clg_op_def *def = NULL;
  if (!rule || rule->kind == CLG_IMP_RULE_NOFOLD || rule->kind == CLG_IMP_RULE_ALIAS)
    def = clg_op_find(rule && rule->kind == CLG_IMP_RULE_ALIAS ? rule->target : n->op);
  /* A Placeholder fed through input_map is not built: its consumers read the mapped value. */
  if (def && def->flags & CLG_OP_MUST_FEED) {
    int k = mapped(c, n->name);
    if (k >= 0) {
      c->map_used[k] = true;
      c->fed[idx] = true;
      clg_output v = c->o->input_map[k].value;
      if (!v.node)
        return fail(c, clg_error(CLG_INVALID_ARGUMENT, "input_map '%s': the value's node is NULL",
                                 c->o->input_map[k].name));
      return clg_imp_set_outs(c, idx, v.node, 1, &v);
    }
  }
  if (!def && (!rule || (rule->kind != CLG_IMP_RULE_SHAPE && rule->kind != CLG_IMP_RULE_FUSED)))
    return fail(c, clg_error(CLG_UNIMPLEMENTED,
                             "%s: op type %s (node '%s') is not supported by clgraph", file_of(c),
                             n->op, n->name));
  int nin = 0, nctrl = 0;
  clg_output ins[256] = {0};
  clg_node *ctrl[256];
  clg_code code = flush_if_reads_wave(c, n);
  if (code == CLG_OK)
    code = gather_inputs(c, n, ins, &nin, ctrl, &nctrl);
  if (code != CLG_OK)
    return code;
  if (n->device[0] && clg_graph_push_device(c->g, n->device) != CLG_OK)
    return clg_graph_status(c->g);
  clg_node *built = NULL;
  bool deferred = false; /* in the wave */
  if (rule && rule->kind == CLG_IMP_RULE_SHAPE) {
    code = build_static_shape(c, n, rule, nin, ins, &built);
  } else if (rule && rule->kind == CLG_IMP_RULE_FUSED) {
    code = build_fused(c, n, rule, nin, ins, &built);
  } else {
    clg_attr attrs[66];
    int na = 0;
    int64_t dims[CLG_MAX_RANK];
    if (n->num_attrs > 64)
      code = fail(c, clg_error(CLG_INVALID_ARGUMENT, "%s: node '%s' has %d attributes", file_of(c),
                               n->name, n->num_attrs));
    if (code == CLG_OK)
      code = convert_attrs(c, n, def, false, attrs, &na);
    if (code == CLG_OK && def->flags & CLG_OP_MUST_FEED)
      code = bind_shape(c, n, def, attrs, &na, dims);
    if (code == CLG_OK && !(rule && rule->kind == CLG_IMP_RULE_NOFOLD))
      code = clg_imp_fold_try(c, idx, def, nin, ins, na, attrs, &deferred);
    if (code == CLG_OK && !deferred) {
      clg_tensor **value = const_value(n, def);
      built = value ? clg_graph_build_move(c->g, def, n->name, nin, ins, na, attrs, value)
                    : clg_op(c->g, def->name, n->name, nin, ins, na, attrs);
      if (!built)
        code = clg_graph_status(c->g);
    }
  }
  if (n->device[0])
    clg_graph_pop_device(c->g);
  if (code != CLG_OK)
    return code;
  if (deferred) {
    if (nctrl == 0)
      return CLG_OK;
    /* Control inputs go on what the node becomes: computed now. */
    if ((code = clg_imp_fold_flush(c)) != CLG_OK)
      return code;
    built = c->nodes[idx];
  }
  for (int i = 0; i < nctrl; i++)
    if (clg_node_add_control_input(built, ctrl[i]) != CLG_OK)
      return clg_graph_status(c->g);
  return deferred ? CLG_OK : clg_imp_set_outs(c, idx, built, clg_node_num_outputs(built), NULL);
}

/* A topological order of the model's nodes (data and control edges), file order among
 * equals; a cycle and an input naming no node are INVALID_ARGUMENT naming a node. */
static clg_code topo_order(imp *c, int *order)
{
  int n = c->m->num_nodes;
  int *indeg = calloc((size_t)n + 1, sizeof *indeg);
  int *start = calloc((size_t)n + 2, sizeof *start);
  int total = 0;
  for (int i = 0; i < n; i++)
    total += c->m->nodes[i].num_inputs;
  int *edges = malloc(((size_t)total + 1) * sizeof *edges);
  int *src = malloc(((size_t)total + 1) * sizeof *src);
  clg_code code = CLG_OK;
  if (!indeg || !start || !edges || !src) {
    code =
        fail(c, clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing %s", file_of(c)));
    goto out;
  }
  /* Producer of every input; counts per producer for the consumer lists. */
  int e = 0;
  for (int i = 0; i < n && code == CLG_OK; i++) {
    const clg_imp_node *nd = &c->m->nodes[i];
    for (int j = 0; j < nd->num_inputs; j++) {
      const char *in = nd->inputs[j];
      size_t len;
      int index;
      bool ctrl;
      clg_imp_parse_tensor_name(in, &len, &index, &ctrl);
      const char *nm = ctrl ? in + 1 : in;
      int p = clg_imp_hash_find(c->hash, c->hash_size, clg_imp_model_node_name, c->m, nm, len);
      if (p < 0) {
        if (!ctrl && mapped(c, in) >= 0)
          continue; /* fed from the graph: no model edge */
        code = fail(c, clg_error(CLG_INVALID_ARGUMENT,
                                 "%s: node '%s': input '%s' names no node of the model", file_of(c),
                                 nd->name, in));
        break;
      }
      src[e] = p;
      edges[e++] = i;
      start[p + 1]++;
      indeg[i]++;
    }
  }
  if (code != CLG_OK)
    goto out;
  for (int i = 0; i < n; i++)
    start[i + 1] += start[i];
  int *fill = malloc(((size_t)n + 1) * sizeof *fill);
  int *cons = malloc(((size_t)e + 1) * sizeof *cons);
  if (!fill || !cons) {
    free(fill);
    free(cons);
    code =
        fail(c, clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing %s", file_of(c)));
    goto out;
  }
  memcpy(fill, start, (size_t)n * sizeof *fill);
  for (int k = 0; k < e; k++)
    cons[fill[src[k]]++] = edges[k];
  int head = 0, tail = 0;
  for (int i = 0; i < n; i++)
    if (indeg[i] == 0)
      order[tail++] = i;
  while (head < tail) {
    int v = order[head++];
    for (int k = start[v]; k < start[v + 1]; k++)
      if (--indeg[cons[k]] == 0)
        order[tail++] = cons[k];
  }
  free(fill);
  free(cons);
  if (tail < n) {
    int bad = 0;
    while (indeg[bad] == 0)
      bad++;
    code = fail(c, clg_error(CLG_INVALID_ARGUMENT,
                             "%s: node '%s' is on a cycle (or fed by one): the graph is not "
                             "acyclic",
                             file_of(c), c->m->nodes[bad].name));
  }
out:
  free(indeg);
  free(start);
  free(edges);
  free(src);
  return code;
}

clg_code clg_imp_add_tensor(clg_import_tensor **v, int *n, const char *name, clg_output value)
{
  clg_import_tensor *g = realloc(*v, sizeof *g * (size_t)(*n + 1));
  if (!g)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  *v = g;
  clg_import_tensor *t = &g[*n];
  memset(t, 0, sizeof *t);
  if (!(t->name = clg_strdup(name)))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  (*n)++;
  t->value = value;
  t->rank = -1;
  if (value.node) {
    t->dtype = clg_node_output_dtype(value.node, value.index);
    t->rank = clg_node_output_rank(value.node, value.index);
    for (int i = 0; i < t->rank && i < CLG_MAX_RANK; i++)
      t->dims[i] = clg_node_output_dim(value.node, value.index, i);
  }
  return CLG_OK;
}

/* The name map: every model node's outputs as graph tensors (folded ones included). */
static clg_code fill_map(imp *c)
{
  clg_import_result *r = c->r;
  int n = c->m->num_nodes;
  r->map = calloc((size_t)n + 1, sizeof *r->map);
  if (!r->map)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  for (int i = 0; i < n; i++) {
    const clg_imp_node *nd = &c->m->nodes[i];
    name_map_entry *e = &r->map[r->num_map];
    if (!(e->name = clg_strdup(nd->name)))
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
    r->num_map++;
    clg_node *gn = c->nodes[i];
    (void)gn;
    e->outs = malloc(sizeof *e->outs * (size_t)(c->nouts[i] + 1));
    if (!e->outs)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
    e->num_outs = c->nouts[i];
    if (c->nouts[i])
      memcpy(e->outs, c->outs[i], sizeof *e->outs * (size_t)c->nouts[i]);
  }
  r->hash = clg_imp_hash_build(r->num_map, clg_imp_map_entry_name, r, &r->hash_size);
  if (!r->hash)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  return CLG_OK;
}

static clg_code fill_io(imp *c)
{
  clg_import_result *r = c->r;
  clg_imp_model *m = c->m;
  clg_code code = CLG_OK;
  if (m->num_sig_inputs) {
    for (int i = 0; i < m->num_sig_inputs && code == CLG_OK; i++) {
      clg_output v = {0};
      if (mapped(c, m->sig_inputs[i].name) >= 0)
        continue;
      if ((code = clg_import_find(r, m->sig_inputs[i].name, &v)) != CLG_OK)
        return clg_error(CLG_INVALID_ARGUMENT, "%s: signature input '%s' names no node", file_of(c),
                         m->sig_inputs[i].name);
      code = clg_imp_add_tensor(&r->inputs, &r->num_inputs, m->sig_inputs[i].name, v);
    }
  } else {
    for (int i = 0; i < m->num_nodes && code == CLG_OK; i++)
      if (c->nodes[i] && !c->fed[i] && c->nodes[i]->def->flags & CLG_OP_MUST_FEED)
        code = clg_imp_add_tensor(&r->inputs, &r->num_inputs, m->nodes[i].name,
                                  clg_out(c->nodes[i], 0));
  }
  if (m->num_sig_outputs) {
    for (int i = 0; i < m->num_sig_outputs && code == CLG_OK; i++) {
      clg_output v = {0};
      clg_code found = clg_import_find(r, m->sig_outputs[i].name, &v);
      if (found == CLG_INVALID_ARGUMENT) /* dead (cond.c) */
        return clg_error_prefix("%s: signature output: ", file_of(c));
      if (found != CLG_OK)
        return clg_error(CLG_INVALID_ARGUMENT, "%s: signature output '%s' names no tensor",
                         file_of(c), m->sig_outputs[i].name);
      code = clg_imp_add_tensor(&r->outputs, &r->num_outputs, m->sig_outputs[i].name, v);
    }
  } else {
    for (int i = 0; i < m->num_nodes && code == CLG_OK; i++) {
      if (c->consumed[i] || c->fed[i] || !c->nodes[i])
        continue;
      const name_map_entry *e = &r->map[i];
      for (int j = 0; j < e->num_outs && code == CLG_OK; j++) {
        char name[1100];
        if (!e->outs[j].node) /* a folded Switch's dead output */
          continue;
        if (j == 0)
          snprintf(name, sizeof name, "%s", m->nodes[i].name);
        else
          snprintf(name, sizeof name, "%s:%d", m->nodes[i].name, j);
        code = clg_imp_add_tensor(&r->outputs, &r->num_outputs, name, e->outs[j]);
      }
    }
  }
  return code;
}

clg_code clg_imp_build_tf(clg_graph *g, clg_imp_model *m, const clg_import_options *o,
                          clg_import_result **result)
{
  imp c = {.g = g, .o = o, .m = m};
  int n = m->num_nodes;
  clg_code code = CLG_OK;
  int *order = NULL;
  c.r = clg_imp_result_new(m);
  c.hash = clg_imp_hash_build(n, clg_imp_model_node_name, m, &c.hash_size);
  c.nodes = calloc((size_t)n + 1, sizeof *c.nodes);
  c.outs = calloc((size_t)n + 1, sizeof *c.outs);
  c.nouts = calloc((size_t)n + 1, sizeof *c.nouts);
  c.fed = calloc((size_t)n + 1, sizeof *c.fed);
  c.consumed = calloc((size_t)n + 1, sizeof *c.consumed);
  c.pending = calloc((size_t)n + 1, sizeof *c.pending);
  c.shape_used = calloc((size_t)o->num_input_shapes + 1, sizeof *c.shape_used);
  c.map_used = calloc((size_t)o->num_input_map + 1, sizeof *c.map_used);
  order = malloc(((size_t)n + 1) * sizeof *order);
  if (!c.r || !c.hash || !c.nodes || !c.outs || !c.nouts || !c.fed || !c.consumed || !c.pending ||
      !c.shape_used || !c.map_used || !order) {
    code =
        fail(&c, clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing %s", file_of(&c)));
    goto out;
  }
  for (int i = 0; i < n; i++) {
    size_t len = strlen(m->nodes[i].name);
    int k =
        clg_imp_hash_find(c.hash, c.hash_size, clg_imp_model_node_name, m, m->nodes[i].name, len);
    if (k != i) {
      code = fail(&c, clg_error(CLG_INVALID_ARGUMENT, "%s: two nodes are named '%s'", file_of(&c),
                                m->nodes[i].name));
      goto out;
    }
  }
  for (int i = 0; i < o->num_input_map; i++) {
    const char *nm = o->input_map[i].name;
    size_t len;
    int index;
    bool ctrl;
    if (!nm) {
      code = fail(&c, clg_error(CLG_INVALID_ARGUMENT, "input_map[%d]: the name is NULL", i));
      goto out;
    }
    clg_imp_parse_tensor_name(nm, &len, &index, &ctrl);
    if (ctrl || clg_imp_hash_find(c.hash, c.hash_size, clg_imp_model_node_name, m, nm, len) < 0) {
      code = fail(&c, clg_error(CLG_INVALID_ARGUMENT,
                                "input_map '%s' names no tensor of the model %s", nm, file_of(&c)));
      goto out;
    }
  }
  if ((code = topo_order(&c, order)) != CLG_OK)
    goto out;
  bool scoped = o->prefix && o->prefix[0];
  if (scoped && clg_graph_push_name_scope(g, o->prefix) != CLG_OK) {
    code = clg_graph_status(g);
    goto out;
  }
  for (int i = 0; i < n && code == CLG_OK; i++)
    code = build_node(&c, order[i]);
  if (code == CLG_OK)
    code = clg_imp_fold_flush(&c);
  if (scoped)
    clg_graph_pop_name_scope(g);
  if (code != CLG_OK)
    goto out;
  for (int i = 0; i < o->num_input_shapes; i++)
    if (!c.shape_used[i]) {
      code = fail(&c, clg_error(CLG_INVALID_ARGUMENT,
                                "input_shapes '%s' names no placeholder of the model %s",
                                o->input_shapes[i].name ? o->input_shapes[i].name : "(NULL)",
                                file_of(&c)));
      goto out;
    }
  if ((code = fill_map(&c)) != CLG_OK || (code = clg_imp_census(c.r, m)) != CLG_OK ||
      (code = fill_io(&c)) != CLG_OK) {
    code = fail(&c, code);
    goto out;
  }
out:
  clg_imp_fold_reset(&c);
  free(c.hash);
  free(c.nodes);
  for (int i = 0; c.outs && i < n; i++)
    free(c.outs[i]);
  free(c.outs);
  free(c.nouts);
  free(c.fed);
  free(c.consumed);
  free(c.pending);
  free(c.shape_used);
  free(c.map_used);
  free(order);
  if (code != CLG_OK || !result) {
    clg_import_result_free(c.r);
    c.r = NULL;
  }
  if (result)
    *result = c.r;
  return code;
}
