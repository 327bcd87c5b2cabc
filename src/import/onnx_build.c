/* Building an ONNX model (onnx_read.c's neutral model) into a graph: initializers become Consts,
 * graph inputs Placeholders (unknown dims bound through input_shapes), and each node, in the
 * file's order (ONNX's is topological), goes to its op rule (onnx_ops_*.c) under a name scope
 * of its own. Constant subgraphs fold on the host as they are built. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "import/onnx.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

/* --- the value table ----------------------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static int value_find(const clg_onnx *c, const char *name)
{
  if (!c->hash_size)
    return -1;
  size_t mask = c->hash_size - 1;
  for (size_t k = hash_str(name) & mask;; k = (k + 1) & mask) {
    int i = c->hash[k];
    if (i < 0)
      return -1;
    if (strcmp(c->vals[i].name, name) == 0)
      return i;
  }
}

static clg_code rehash(clg_onnx *c, size_t size)
{
  int *h = malloc(sizeof *h * size);
  if (!h)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing an ONNX model");
  for (size_t i = 0; i < size; i++)
    h[i] = -1;
  for (int i = 0; i < c->num_vals; i++) {
    size_t k = hash_str(c->vals[i].name) & (size - 1);
    while (h[k] >= 0)
      k = (k + 1) & (size - 1);
    h[k] = i;
  }
  free(c->hash);
  c->hash = h;
  c->hash_size = size;
  return CLG_OK;
}

/* The value named name (a new one when it is not there yet). */
static clg_onnx_value *value_get(clg_onnx *c, const char *name)
{
  int i = value_find(c, name);
  if (i >= 0)
    return &c->vals[i];
  if (c->num_vals == c->cap_vals) {
    int cap = c->cap_vals ? 2 * c->cap_vals : 256;
    clg_onnx_value *g = realloc(c->vals, sizeof *g * (size_t)cap);
    if (!g) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing an ONNX model");
      return NULL;
    }
    c->vals = g;
    c->cap_vals = cap;
  }
  clg_onnx_value *v = &c->vals[c->num_vals++];
  memset(v, 0, sizeof *v);
  v->name = name;
  if ((size_t)c->num_vals * 2 > c->hash_size) {
    if (rehash(c, c->hash_size ? 2 * c->hash_size : 512) != CLG_OK)
      return NULL;
  } else {
    size_t k = hash_str(name) & (c->hash_size - 1);
    while (c->hash[k] >= 0)
      k = (k + 1) & (c->hash_size - 1);
    c->hash[k] = c->num_vals - 1;
  }
  return v;
}

/* --- readers of each name ------------------------------------------------------------------ */

struct clg_onnx_readers {
  const char *name; /* the model's; NULL: an empty slot */
  int count;
};

/* The slot of name in the table: its entry, or the empty slot where it would go. */
static struct clg_onnx_readers *reader_slot(struct clg_onnx_readers *t, size_t size,
                                            const char *name)
{
  if (!size)
    return NULL;
  size_t mask = size - 1;
  for (size_t k = hash_str(name) & mask;; k = (k + 1) & mask)
    if (!t[k].name || strcmp(t[k].name, name) == 0)
      return &t[k];
}

static void add_reader(clg_onnx *c, const char *name)
{
  struct clg_onnx_readers *e = reader_slot(c->readers, c->readers_size, name);
  e->name = name;
  e->count++;
}

/* How many node inputs and graph outputs name each value, once per build. */
static clg_code count_readers(clg_onnx *c)
{
  size_t names = (size_t)c->m->num_sig_outputs, size = 16;
  for (int i = 0; i < c->m->num_nodes; i++)
    names += (size_t)c->m->nodes[i].num_inputs;
  while (size < 2 * names && size < SIZE_MAX / 4 / sizeof *c->readers)
    size *= 2;
  if (size < 2 * names || !(c->readers = calloc(size, sizeof *c->readers)))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing an ONNX model");
  c->readers_size = size;
  for (int i = 0; i < c->m->num_nodes; i++)
    for (int j = 0; j < c->m->nodes[i].num_inputs; j++)
      add_reader(c, c->m->nodes[i].inputs[j]);
  for (int i = 0; i < c->m->num_sig_outputs; i++)
    add_reader(c, c->m->sig_outputs[i].name);
  return CLG_OK;
}

static const char *file_name(const clg_onnx *c) { return c->m->file[0] ? c->m->file : "(memory)"; }

clg_code clg_onnx_fail(clg_onnx *c, const clg_imp_node *n, clg_code code, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  clg_error(code, "%s: node '%s' (op %s): %s", file_name(c), n->name, n->op, msg);
  return clg_graph_record_error(c->g);
}

/* --- inputs ---------------------------------------------------------------------------------- */

bool clg_onnx_has(const clg_imp_node *n, int i)
{
  return i >= 0 && i < n->num_inputs && n->inputs[i][0];
}

static clg_onnx_value *input_value(clg_onnx *c, const clg_imp_node *n, int i)
{
  if (!clg_onnx_has(n, i))
    return NULL;
  int k = value_find(c, n->inputs[i]);
  return k >= 0 ? &c->vals[k] : NULL;
}

static clg_code missing(clg_onnx *c, const clg_imp_node *n, int i)
{
  return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d is required but not given", i);
}

clg_code clg_onnx_in(clg_onnx *c, const clg_imp_node *n, int i, clg_output *out)
{
  clg_onnx_value *v = input_value(c, n, i);
  if (!v)
    return missing(c, n, i);
  if (!v->canon.node) {
    static const int64_t to_nchw[4] = {0, 3, 1, 2};
    clg_output t = {0};
    clg_code code = clg_onnx_transpose(c, v->nhwc, 4, to_nchw, &t);
    if (code != CLG_OK)
      return code;
    v = input_value(c, n, i); /* the table may have moved */
    v->canon = t;
  }
  *out = v->canon;
  return CLG_OK;
}

clg_code clg_onnx_in_nhwc(clg_onnx *c, const clg_imp_node *n, int i, clg_output *out)
{
  clg_onnx_value *v = input_value(c, n, i);
  if (!v)
    return missing(c, n, i);
  if (!v->nhwc.node) {
    if (clg_onnx_rank(v->canon) != 4)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d has rank %d, not 4 (NCHW)", i,
                           clg_onnx_rank(v->canon));
    static const int64_t to_nhwc[4] = {0, 2, 3, 1};
    clg_output t = {0};
    clg_code code = clg_onnx_transpose(c, v->canon, 4, to_nhwc, &t);
    if (code != CLG_OK)
      return code;
    v = input_value(c, n, i);
    v->nhwc = t;
  }
  *out = v->nhwc;
  return CLG_OK;
}

bool clg_onnx_in_is_nhwc(clg_onnx *c, const clg_imp_node *n, int i)
{
  clg_onnx_value *v = input_value(c, n, i);
  return v && v->nhwc.node && !v->canon.node;
}

static const clg_tensor *const_of(clg_output x)
{
  return x.node && x.node->def->flags & CLG_OP_CONST ? clg_node_value(x.node) : NULL;
}

const clg_tensor *clg_onnx_in_const(clg_onnx *c, const clg_imp_node *n, int i)
{
  clg_onnx_value *v = input_value(c, n, i);
  if (!v)
    return NULL;
  if (v->canon.node)
    return const_of(v->canon);
  if (!const_of(v->nhwc))
    return NULL;
  clg_output t = {0};
  return clg_onnx_in(c, n, i, &t) == CLG_OK ? const_of(t) : NULL;
}

int clg_onnx_in_rank(clg_onnx *c, const clg_imp_node *n, int i)
{
  clg_onnx_value *v = input_value(c, n, i);
  if (!v)
    return -1;
  return v->canon.node ? clg_onnx_rank(v->canon) : 4;
}

int64_t clg_onnx_in_dim(clg_onnx *c, const clg_imp_node *n, int i, int d)
{
  static const int from_nhwc[4] = {0, 3, 1, 2}; /* NCHW dim d is NHWC dim from_nhwc[d] */
  clg_onnx_value *v = input_value(c, n, i);
  if (!v)
    return -1;
  if (v->canon.node)
    return clg_onnx_dim(v->canon, d);
  return d >= 0 && d < 4 ? clg_onnx_dim(v->nhwc, from_nhwc[d]) : -1;
}

clg_dtype clg_onnx_in_dtype(clg_onnx *c, const clg_imp_node *n, int i)
{
  clg_onnx_value *v = input_value(c, n, i);
  if (!v)
    return (clg_dtype)0;
  return clg_onnx_dtype(v->canon.node ? v->canon : v->nhwc);
}

clg_code clg_onnx_in_ints(clg_onnx *c, const clg_imp_node *n, int i, int64_t *v, int max,
                          int *count)
{
  const clg_tensor *t = clg_onnx_in_const(c, n, i);
  if (!t)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                         "input %d ('%s') must be a constant: clgraph's shapes are static (bind "
                         "it at import)",
                         i, clg_onnx_has(n, i) ? n->inputs[i] : "");
  size_t cnt = clg_tensor_count(t);
  clg_dtype dt = clg_tensor_dtype(t);
  if (dt != CLG_INT32 && dt != CLG_INT64)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d ('%s') is %s, not an integer", i,
                         n->inputs[i], clg_dtype_name(dt));
  if (cnt > (size_t)max)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d ('%s') holds %zu values, at most %d",
                         i, n->inputs[i], cnt, max);
  const void *d = clg_tensor_data((clg_tensor *)t);
  for (size_t k = 0; k < cnt; k++)
    v[k] = dt == CLG_INT64 ? ((const int64_t *)d)[k] : ((const int32_t *)d)[k];
  *count = (int)cnt;
  return CLG_OK;
}

clg_code clg_onnx_in_scalar(clg_onnx *c, const clg_imp_node *n, int i, double *v)
{
  const clg_tensor *t = clg_onnx_in_const(c, n, i);
  if (!t || clg_tensor_count(t) != 1)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "input %d ('%s') must be a constant scalar", i,
                         clg_onnx_has(n, i) ? n->inputs[i] : "");
  const void *d = clg_tensor_data((clg_tensor *)t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT32:
    *v = *(const float *)d;
    return CLG_OK;
  case CLG_FLOAT64:
    *v = *(const double *)d;
    return CLG_OK;
  case CLG_INT32:
    *v = *(const int32_t *)d;
    return CLG_OK;
  case CLG_INT64:
    *v = (double)*(const int64_t *)d;
    return CLG_OK;
  case CLG_BOOL:
    *v = *(const uint8_t *)d;
    return CLG_OK;
  case CLG_UINT64:
    *v = (double)clg_uint_load(CLG_UINT64, d, 0);
    return CLG_OK;
  case CLG_INT8:
  case CLG_INT16:
  case CLG_UINT8:
  case CLG_UINT16:
  case CLG_UINT32:
    *v = (double)clg_int_load(clg_tensor_dtype(t), d, 0);
    return CLG_OK;
  default:
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "input %d is %s", i,
                         clg_dtype_name(clg_tensor_dtype(t)));
  }
}

/* --- outputs --------------------------------------------------------------------------------- */

/* Output i's value into *v: NULL where the node omits that output (ONNX lets optional
 * outputs be left out, trailing ones by their absence); an error only when out of memory. */
static clg_code output_value(clg_onnx *c, const clg_imp_node *n, int i, clg_onnx_value **v)
{
  *v = NULL;
  if (i < 0 || i >= n->num_outputs || !n->outputs[i][0])
    return CLG_OK;
  *v = value_get(c, n->outputs[i]);
  return *v ? CLG_OK : clg_graph_record_error(c->g);
}

clg_code clg_onnx_out(clg_onnx *c, const clg_imp_node *n, int i, clg_output canon)
{
  clg_onnx_value *v;
  clg_code code = output_value(c, n, i, &v);
  if (v)
    v->canon = canon;
  return code;
}

clg_code clg_onnx_out_nhwc(clg_onnx *c, const clg_imp_node *n, int i, clg_output nhwc)
{
  clg_onnx_value *v;
  clg_code code = output_value(c, n, i, &v);
  if (v) {
    v->canon = (clg_output){NULL, 0};
    v->nhwc = nhwc;
  }
  return code;
}

clg_code clg_onnx_out_alias(clg_onnx *c, const clg_imp_node *n, int i, int j)
{
  clg_onnx_value *in = input_value(c, n, j);
  if (!in)
    return missing(c, n, j);
  clg_output canon = in->canon, nhwc = in->nhwc;
  clg_onnx_value *v;
  clg_code code = output_value(c, n, i, &v);
  if (v) {
    v->canon = canon;
    v->nhwc = nhwc;
  }
  return code;
}

/* --- building -------------------------------------------------------------------------------- */

static bool foldable(const clg_op_def *def, int nin, const clg_output *ins)
{
  if (nin < 1 || nin > 64 ||
      def->flags & (CLG_OP_CONST | CLG_OP_MUST_FEED | CLG_OP_VARIABLE | CLG_OP_ASSIGNS) ||
      def->ref_inputs)
    return false;
  const clg_imp_rule *rule = clg_imp_rule_find(def->name); /* random and stateful ops */
  if (rule && rule->kind == CLG_IMP_RULE_NOFOLD)
    return false;
  for (int i = 0; i < nin; i++)
    if (!const_of(ins[i]))
      return false;
  return true;
}

/* The op computed on the host now: its outputs as Consts in g (false: it does not fold, with
 * no error, and is built as is). */
static bool fold(clg_onnx *c, const clg_op_def *def, int nin, const clg_output *ins, int na,
                 const clg_attr *attrs, int nout, clg_output *outs, clg_code *code)
{
  *code = CLG_OK;
  if (c->no_fold)
    return false;
  if (!c->anchor && (!(c->anchor_g = clg_graph_new()) ||
                     clg_process_helper_session(c->anchor_g, &c->anchor) != CLG_OK)) {
    clg_error_clear();
    c->no_fold = true;
    return false;
  }
  clg_graph *sg = clg_graph_new();
  clg_session *s = NULL;
  clg_tensor *vals[64] = {0};
  bool ran = false;
  int have = 0;
  if (sg && clg_graph_push_device(sg, "/device:CPU:0") == CLG_OK) {
    clg_output sins[64] = {0};
    for (int i = 0; i < nin; i++)
      sins[i] = clg_out(clg_const(sg, NULL, const_of(ins[i])), 0);
    clg_node *sn = clg_op(sg, def->name, NULL, nin, sins, na, attrs);
    have = sn ? clg_node_num_outputs(sn) : 0;
    if (sn && have >= nout && have <= 64 && clg_process_helper_session(sg, &s) == CLG_OK) {
      clg_output fetch[64] = {0};
      for (int i = 0; i < have; i++)
        fetch[i] = clg_out(sn, i);
      ran = clg_session_run_outputs(s, 0, NULL, NULL, have, fetch, vals, 0, NULL) == CLG_OK;
    }
  }
  clg_error_clear(); /* not folded: built as is, and computed at run time */
  clg_session_free(s);
  clg_graph_free(sg);
  for (int i = 0; ran && i < nout && *code == CLG_OK; i++) {
    clg_node *k = clg_const(c->g, NULL, vals[i]);
    if (!k)
      *code = clg_graph_status(c->g);
    outs[i] = clg_out(k, 0);
  }
  for (int i = 0; i < have && i < 64; i++)
    clg_tensor_free(vals[i]);
  return ran;
}

clg_code clg_onnx_op_n(clg_onnx *c, const char *op, int nin, const clg_output *ins, int na,
                       const clg_attr *attrs, int nout, clg_output *outs)
{
  const clg_op_def *def = clg_op_find(op);
  if (!def) {
    clg_error(CLG_UNIMPLEMENTED, "%s: clgraph has no op %s", file_name(c), op);
    return clg_graph_record_error(c->g);
  }
  clg_code code;
  if (foldable(def, nin, ins) && fold(c, def, nin, ins, na, attrs, nout, outs, &code))
    return code;
  clg_node *nd = clg_op(c->g, op, NULL, nin, ins, na, attrs);
  if (!nd)
    return clg_graph_status(c->g);
  if (clg_node_num_outputs(nd) < nout) {
    clg_error(CLG_INTERNAL, "%s: op %s has %d outputs, not %d", file_name(c), op,
              clg_node_num_outputs(nd), nout);
    return clg_graph_record_error(c->g);
  }
  for (int i = 0; i < nout; i++)
    outs[i] = clg_out(nd, i);
  return CLG_OK;
}

clg_code clg_onnx_op(clg_onnx *c, const char *op, int nin, const clg_output *ins, int na,
                     const clg_attr *attrs, clg_output *out)
{
  return clg_onnx_op_n(c, op, nin, ins, na, attrs, 1, out);
}

clg_code clg_onnx_const(clg_onnx *c, const clg_tensor *t, clg_output *out)
{
  clg_node *k = t ? clg_const(c->g, NULL, t) : NULL;
  if (!k)
    return t ? clg_graph_status(c->g) : clg_graph_record_error(c->g);
  *out = clg_out(k, 0);
  return CLG_OK;
}

clg_code clg_onnx_const_i32(clg_onnx *c, int n, const int64_t *v, clg_output *out)
{
  int64_t dims[1] = {n};
  clg_tensor *t = clg_tensor_new(CLG_INT32, 1, dims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  for (int i = 0; i < n; i++)
    ((int32_t *)clg_tensor_data(t))[i] = (int32_t)v[i];
  clg_code code = clg_onnx_const(c, t, out);
  clg_tensor_free(t);
  return code;
}

clg_code clg_onnx_const_scalar(clg_onnx *c, clg_dtype dt, double v, clg_output *out)
{
  clg_tensor *t = clg_tensor_new(dt, 0, NULL, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  void *d = clg_tensor_data(t);
  switch (dt) {
  case CLG_FLOAT32:
    *(float *)d = (float)v;
    break;
  case CLG_FLOAT64:
    *(double *)d = v;
    break;
  case CLG_INT32:
    *(int32_t *)d = (int32_t)v;
    break;
  case CLG_INT64:
    *(int64_t *)d = (int64_t)v;
    break;
  case CLG_BOOL:
    *(uint8_t *)d = v != 0;
    break;
  case CLG_INT8: /* the other integers: v is a value of dt (a bound, a zero) */
  case CLG_INT16:
  case CLG_UINT8:
  case CLG_UINT16:
  case CLG_UINT32:
  case CLG_UINT64:
    clg_int_store(dt, d, 0, v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v);
    break;
  default:
    clg_tensor_free(t);
    clg_error(CLG_UNIMPLEMENTED, "%s: a %s scalar constant", file_name(c), clg_dtype_name(dt));
    return clg_graph_record_error(c->g);
  }
  clg_code code = clg_onnx_const(c, t, out);
  clg_tensor_free(t);
  return code;
}

clg_code clg_onnx_scalar_op(clg_onnx *c, const char *op, clg_output x, double v, clg_output *y)
{
  clg_output k = {0};
  clg_code code = clg_onnx_const_scalar(c, clg_onnx_dtype(x), v, &k);
  clg_output ins[2] = {x, k};
  return code == CLG_OK ? clg_onnx_op(c, op, 2, ins, 0, NULL, y) : code;
}

clg_code clg_onnx_binop(clg_onnx *c, const char *op, clg_output a, clg_output b, clg_output *y)
{
  clg_output ins[2] = {a, b};
  return clg_onnx_op(c, op, 2, ins, 0, NULL, y);
}

clg_code clg_onnx_slice_axis(clg_onnx *c, clg_output x, int axis, int64_t lo, int64_t len,
                             clg_output *y)
{
  int r = clg_onnx_rank(x);
  int64_t b[CLG_MAX_RANK] = {0}, s[CLG_MAX_RANK];
  for (int i = 0; i < r; i++)
    s[i] = i == axis ? len : clg_onnx_dim(x, i);
  b[axis] = lo;
  clg_output bo = {0}, so = {0};
  clg_code code = clg_onnx_const_i32(c, r, b, &bo);
  if (code == CLG_OK)
    code = clg_onnx_const_i32(c, r, s, &so);
  clg_output ins[3] = {x, bo, so};
  return code == CLG_OK ? clg_onnx_op(c, "Slice", 3, ins, 0, NULL, y) : code;
}

clg_code clg_onnx_const_f(clg_onnx *c, clg_dtype dt, int rank, const int64_t *dims, const double *v,
                          clg_output *out)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  if (!t)
    return clg_graph_record_error(c->g);
  size_t cnt = clg_tensor_count(t);
  for (size_t i = 0; i < cnt; i++) {
    if (dt == CLG_FLOAT32)
      ((float *)clg_tensor_data(t))[i] = (float)v[i];
    else
      ((double *)clg_tensor_data(t))[i] = v[i];
  }
  clg_code code = clg_onnx_const(c, t, out);
  clg_tensor_free(t);
  return code;
}

clg_code clg_onnx_in_either(clg_onnx *c, const clg_imp_node *n, clg_output *x, bool *nhwc)
{
  *nhwc = clg_onnx_in_rank(c, n, 0) == 4 && clg_onnx_in_is_nhwc(c, n, 0);
  return *nhwc ? clg_onnx_in_nhwc(c, n, 0, x) : clg_onnx_in(c, n, 0, x);
}

clg_code clg_onnx_out_either(clg_onnx *c, const clg_imp_node *n, bool nhwc, clg_output y)
{
  return nhwc ? clg_onnx_out_nhwc(c, n, 0, y) : clg_onnx_out(c, n, 0, y);
}

/* A Const's permutation computed here (weights change layout once, at import). */
static clg_tensor *permute_host(const clg_tensor *t, int rank, const int64_t *perm)
{
  int64_t in_dims[CLG_MAX_RANK], out_dims[CLG_MAX_RANK], stride[CLG_MAX_RANK];
  for (int i = 0; i < rank; i++)
    in_dims[i] = clg_tensor_dim(t, i);
  for (int i = 0; i < rank; i++)
    out_dims[i] = in_dims[perm[i]];
  clg_tensor *o = clg_tensor_new(clg_tensor_dtype(t), rank, out_dims, NULL);
  if (!o)
    return NULL;
  size_t es = clg_dtype_size(clg_tensor_dtype(t)), count = clg_tensor_count(t);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    stride[i] = s;
    s *= in_dims[i];
  }
  const uint8_t *src = clg_tensor_data((clg_tensor *)t);
  uint8_t *dst = clg_tensor_data(o);
  int64_t idx[CLG_MAX_RANK] = {0};
  for (size_t k = 0; k < count; k++) {
    int64_t off = 0;
    for (int i = 0; i < rank; i++)
      off += idx[i] * stride[perm[i]];
    memcpy(dst + k * es, src + (size_t)off * es, es);
    for (int i = rank - 1; i >= 0; i--) {
      if (++idx[i] < out_dims[i])
        break;
      idx[i] = 0;
    }
  }
  return o;
}

clg_code clg_onnx_transpose(clg_onnx *c, clg_output x, int rank, const int64_t *perm,
                            clg_output *out)
{
  bool identity = true;
  for (int i = 0; i < rank; i++)
    identity = identity && perm[i] == i;
  if (identity) {
    *out = x;
    return CLG_OK;
  }
  const clg_tensor *k = const_of(x);
  if (k && clg_tensor_rank(k) == rank) {
    clg_tensor *t = permute_host(k, rank, perm);
    if (!t)
      return clg_graph_record_error(c->g);
    clg_code code = clg_onnx_const(c, t, out);
    clg_tensor_free(t);
    return code;
  }
  clg_output p = {0};
  clg_code code = clg_onnx_const_i32(c, rank, perm, &p);
  if (code != CLG_OK)
    return code;
  clg_output ins[2] = {x, p};
  return clg_onnx_op(c, "Transpose", 2, ins, 0, NULL, out);
}

clg_code clg_onnx_reshape(clg_onnx *c, clg_output x, int rank, const int64_t *dims, clg_output *out)
{
  bool same = clg_onnx_rank(x) == rank;
  for (int i = 0; same && i < rank; i++)
    same = clg_onnx_dim(x, i) == dims[i];
  if (same) {
    *out = x;
    return CLG_OK;
  }
  const clg_tensor *k = const_of(x);
  if (k) {
    int64_t count = 1;
    for (int i = 0; i < rank; i++)
      count *= dims[i];
    if (count == (int64_t)clg_tensor_count(k)) {
      clg_tensor *t =
          clg_tensor_new(clg_tensor_dtype(k), rank, dims, clg_tensor_data((clg_tensor *)k));
      if (!t)
        return clg_graph_record_error(c->g);
      clg_code code = clg_onnx_const(c, t, out);
      clg_tensor_free(t);
      return code;
    }
  }
  clg_output s = {0};
  clg_code code = clg_onnx_const_i32(c, rank, dims, &s);
  if (code != CLG_OK)
    return code;
  clg_output ins[2] = {x, s};
  return clg_onnx_op(c, "Reshape", 2, ins, 0, NULL, out);
}

/* --- attributes ------------------------------------------------------------------------------ */

const clg_imp_attr *clg_onnx_attr(const clg_imp_node *n, const char *name)
{
  return clg_imp_node_attr(n, name);
}

int64_t clg_onnx_attr_i(const clg_imp_node *n, const char *name, int64_t def)
{
  const clg_imp_attr *a = clg_imp_node_attr(n, name);
  return a && a->kind == CLG_IMP_I ? a->i : def;
}

double clg_onnx_attr_f(const clg_imp_node *n, const char *name, double def)
{
  const clg_imp_attr *a = clg_imp_node_attr(n, name);
  return a && a->kind == CLG_IMP_F ? a->f : a && a->kind == CLG_IMP_I ? (double)a->i : def;
}

const char *clg_onnx_attr_s(const clg_imp_node *n, const char *name, const char *def)
{
  const clg_imp_attr *a = clg_imp_node_attr(n, name);
  return a && a->kind == CLG_IMP_S ? a->s : def;
}

int clg_onnx_attr_ints(const clg_imp_node *n, const char *name, int64_t *v, int max)
{
  const clg_imp_attr *a = clg_imp_node_attr(n, name);
  if (!a)
    return -1;
  if (a->kind == CLG_IMP_I) { /* a single int where a list is expected */
    if (max >= 1)
      v[0] = a->i;
    return 1;
  }
  if (a->kind != CLG_IMP_LIST || (a->n && a->elem != CLG_IMP_I))
    return -1;
  int k = a->n < max ? a->n : max;
  for (int i = 0; i < k; i++)
    v[i] = a->ints[i];
  return a->n;
}

bool clg_onnx_dtype_of(int64_t onnx, clg_dtype *out)
{
  int tf = clg_imp_onnx_dtype_to_tf(onnx);
  return tf && clg_imp_dtype(tf, out);
}

/* --- rules ----------------------------------------------------------------------------------- */

#define CLG_ONNX_RULES(family) &clg_onnx_rules_##family,
static const clg_onnx_rule_set *const rule_sets[] = {
#include "import/onnx_op_list.h"
};
#undef CLG_ONNX_RULES

const clg_onnx_rule *clg_onnx_rule_find(const char *op, int opset)
{
  const clg_onnx_rule *best = NULL;
  for (size_t s = 0; s < sizeof rule_sets / sizeof rule_sets[0]; s++)
    for (int i = 0; i < rule_sets[s]->num; i++) {
      const clg_onnx_rule *r = &rule_sets[s]->rules[i];
      if (strcmp(r->op, op) == 0 && r->since <= opset && (!best || r->since > best->since))
        best = r;
    }
  return best;
}

static bool default_domain(const char *d) { return !d[0] || strcmp(d, "ai.onnx") == 0; }

bool clg_imp_onnx_supported(const clg_imp_node *n, int opset)
{
  const clg_onnx_rule *r = default_domain(n->domain) ? clg_onnx_rule_find(n->op, opset) : NULL;
  return r && (!r->tf || clg_op_find(r->tf));
}

/* --- the build ------------------------------------------------------------------------------- */

/* A valid node-name scope for an ONNX node ("/layer1/conv/Conv" gives "layer1/conv/Conv"). */
static void scope_name(const clg_imp_node *n, int idx, char *buf, size_t size)
{
  const char *s = n->name;
  while (*s == '/')
    s++;
  size_t k = 0;
  for (; *s && k + 1 < size; s++) {
    char ch = *s;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-' || ch == '/';
    if (ch == '/' && (k == 0 || buf[k - 1] == '/'))
      continue;
    buf[k++] = ok ? ch : '_';
  }
  while (k && buf[k - 1] == '/')
    k--;
  buf[k] = 0;
  if (!k || buf[0] == '_' || buf[0] == '-' || buf[0] == '/')
    snprintf(buf, size, "%s_%d", n->op, idx);
}

static int map_entry(const clg_onnx *c, const char *name)
{
  for (int i = 0; i < c->o->num_input_map; i++)
    if (c->o->input_map[i].name && strcmp(c->o->input_map[i].name, name) == 0)
      return i;
  return -1;
}

/* A graph input as a Placeholder of its declared dtype and shape (unknown dims bound). */
static clg_code build_input(clg_onnx *c, const clg_imp_sig *s)
{
  clg_imp_shape sh = s->shape;
  for (int i = 0; i < c->o->num_input_shapes; i++) {
    const clg_import_shape *b = &c->o->input_shapes[i];
    if (!b->name || strcmp(b->name, s->name) != 0)
      continue;
    c->shape_used[i] = true;
    if (b->rank < 0 || b->rank > CLG_MAX_RANK || (sh.rank >= 0 && sh.rank != b->rank)) {
      clg_error(CLG_INVALID_ARGUMENT,
                "input_shapes '%s': rank %d, but the model's input has rank %d", b->name, b->rank,
                sh.rank);
      return clg_graph_record_error(c->g);
    }
    for (int d = 0; d < b->rank; d++)
      if (b->dims[d] < 0 || (sh.rank >= 0 && sh.dims[d] >= 0 && sh.dims[d] != b->dims[d])) {
        clg_error(CLG_INVALID_ARGUMENT,
                  "input_shapes '%s': dim %d is %lld, but the model fixes it at %lld", b->name, d,
                  (long long)b->dims[d], (long long)(sh.rank >= 0 ? sh.dims[d] : -1));
        return clg_graph_record_error(c->g);
      }
    sh.rank = b->rank;
    memcpy(sh.dims, b->dims, sizeof sh.dims[0] * (size_t)b->rank);
  }
  if (sh.rank < 0) {
    clg_error(CLG_INVALID_ARGUMENT,
              "%s: input '%s' has an unknown rank: bind it with input_shapes (clgraph's shapes "
              "are static)",
              file_name(c), s->name);
    return clg_graph_record_error(c->g);
  }
  for (int d = 0; d < sh.rank; d++)
    if (sh.dims[d] < 0) {
      clg_error(CLG_INVALID_ARGUMENT,
                "%s: input '%s' has unknown dim %d: bind it with input_shapes (clgraph's shapes "
                "are static)",
                file_name(c), s->name, d);
      return clg_graph_record_error(c->g);
    }
  clg_dtype dt;
  if (!clg_imp_dtype(s->tf_dtype, &dt)) {
    char b[24];
    clg_error(CLG_UNIMPLEMENTED, "%s: input '%s' is of %s, which clgraph lacks", file_name(c),
              s->name, s->tf_dtype ? clg_imp_tf_dtype_name(s->tf_dtype, b) : "a non-tensor type");
    return clg_graph_record_error(c->g);
  }
  char name[512];
  scope_name(&(clg_imp_node){.name = (char *)s->name, .op = "input"}, 0, name, sizeof name);
  clg_node *p = clg_placeholder(c->g, name, dt, sh.rank, sh.dims);
  if (!p)
    return clg_graph_status(c->g);
  clg_onnx_value *v = value_get(c, s->name);
  if (!v)
    return clg_graph_record_error(c->g);
  v->canon = clg_out(p, 0);
  return CLG_OK;
}

static clg_code build_sources(clg_onnx *c)
{
  for (int i = 0; i < c->m->num_inits; i++) {
    clg_imp_init *in = &c->m->inits[i];
    if (!in->t.value) {
      char b[24];
      clg_error(CLG_UNIMPLEMENTED, "%s: initializer '%s' is of %s, which clgraph lacks",
                file_name(c), in->name, clg_imp_tf_dtype_name(in->t.tf_dtype, b));
      return clg_graph_record_error(c->g);
    }
    clg_onnx_value *v = value_get(c, in->name);
    if (!v)
      return clg_graph_record_error(c->g);
    char name[512];
    scope_name(&(clg_imp_node){.name = in->name, .op = "initializer"}, i, name, sizeof name);
    clg_node *k = clg_const(c->g, name, in->t.value);
    if (!k)
      return clg_graph_status(c->g);
    v->canon = clg_out(k, 0);
  }
  for (int i = 0; i < c->m->num_sig_inputs; i++) {
    const clg_imp_sig *s = &c->m->sig_inputs[i];
    int k = map_entry(c, s->name);
    if (k >= 0) {
      c->map_used[k] = true;
      clg_onnx_value *v = value_get(c, s->name);
      if (!v)
        return clg_graph_record_error(c->g);
      v->canon = c->o->input_map[k].value;
      continue;
    }
    clg_code code = build_input(c, s);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

static clg_code build_node(clg_onnx *c, int idx)
{
  const clg_imp_node *n = &c->m->nodes[idx];
  if (c->done[idx])
    return CLG_OK;
  if (!default_domain(n->domain))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "domain '%s' is not supported (only ONNX's "
                         "default domain)",
                         n->domain);
  const clg_onnx_rule *r = clg_onnx_rule_find(n->op, c->m->opset);
  if (!r || (r->tf && !clg_op_find(r->tf)))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "op type %s (opset %d) is not supported by "
                         "clgraph",
                         n->op, c->m->opset);
  for (int i = 0; i < n->num_inputs; i++)
    if (n->inputs[i][0] && value_find(c, n->inputs[i]) < 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "input '%s' is no initializer, graph input or output of an earlier "
                           "node (ONNX lists nodes in topological order)",
                           n->inputs[i]);
  for (int i = 0; i < n->num_outputs; i++)
    if (n->outputs[i][0] && value_find(c, n->outputs[i]) >= 0)
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "output '%s' is already defined",
                           n->outputs[i]);
  char scope[512];
  scope_name(n, idx, scope, sizeof scope);
  if (clg_graph_push_name_scope(c->g, scope) != CLG_OK)
    return clg_graph_status(c->g);
  clg_code code = r->fn(c, n, r);
  clg_graph_pop_name_scope(c->g);
  if (code != CLG_OK)
    return code;
  for (int i = 0; i < n->num_outputs; i++) {
    int k = n->outputs[i][0] ? value_find(c, n->outputs[i]) : 0;
    if (k < 0 || (n->outputs[i][0] && !c->vals[k].canon.node && !c->vals[k].nhwc.node))
      return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "output %d ('%s') is not supported", i,
                           n->outputs[i]);
  }
  c->done[idx] = true;
  return CLG_OK;
}

/* The result: every value by name (canonical forms), the inputs and the outputs. */
static clg_code fill_result(clg_onnx *c)
{
  clg_import_result *r = c->r;
  r->map = calloc((size_t)c->num_vals + 1, sizeof *r->map);
  if (!r->map)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  for (int i = 0; i < c->m->num_sig_outputs; i++) {
    const char *nm = c->m->sig_outputs[i].name;
    int k = value_find(c, nm);
    if (k < 0)
      return clg_error(CLG_INVALID_ARGUMENT, "%s: graph output '%s' is produced by no node",
                       file_name(c), nm);
    clg_imp_node fake = {
        .name = (char *)nm, .op = (char *)"output", .num_inputs = 1, .inputs = (char **)&nm};
    clg_output v = {0};
    clg_code code = clg_onnx_in(c, &fake, 0, &v);
    if (code != CLG_OK)
      return code;
    code = clg_imp_add_tensor(&r->outputs, &r->num_outputs, nm, v);
    if (code != CLG_OK)
      return code;
  }
  for (int i = 0; i < c->num_vals; i++) {
    clg_onnx_value *v = &c->vals[i];
    name_map_entry *e = &r->map[r->num_map];
    if (!(e->name = clg_strdup(v->name)) || !(e->outs = malloc(sizeof *e->outs)))
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
    r->num_map++;
    e->num_outs = 1;
    e->outs[0] = v->canon.node ? v->canon : v->nhwc;
  }
  r->hash = clg_imp_hash_build(r->num_map, clg_imp_map_entry_name, r, &r->hash_size);
  if (!r->hash)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  for (int i = 0; i < c->m->num_sig_inputs; i++) {
    const char *nm = c->m->sig_inputs[i].name;
    if (map_entry(c, nm) >= 0)
      continue;
    int k = value_find(c, nm);
    clg_code code = clg_imp_add_tensor(&r->inputs, &r->num_inputs, nm, c->vals[k].canon);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

static clg_code check_options(clg_onnx *c)
{
  for (int i = 0; i < c->o->num_input_map; i++) {
    const char *nm = c->o->input_map[i].name;
    bool found = false;
    for (int j = 0; nm && j < c->m->num_sig_inputs && !found; j++)
      found = strcmp(c->m->sig_inputs[j].name, nm) == 0;
    if (!found) {
      clg_error(CLG_INVALID_ARGUMENT, "input_map '%s' names no graph input of the model %s",
                nm ? nm : "(NULL)", file_name(c));
      return clg_graph_record_error(c->g);
    }
    if (!c->o->input_map[i].value.node) {
      clg_error(CLG_INVALID_ARGUMENT, "input_map '%s': the value's node is NULL", nm);
      return clg_graph_record_error(c->g);
    }
  }
  return CLG_OK;
}

clg_code clg_imp_build_onnx(clg_graph *g, clg_imp_model *m, const clg_import_options *o,
                            clg_import_result **result)
{
  clg_onnx c = {.g = g, .o = o, .m = m};
  clg_code code = CLG_OK;
  c.r = clg_imp_result_new(m);
  c.done = calloc((size_t)m->num_nodes + 1, sizeof *c.done);
  c.shape_used = calloc((size_t)o->num_input_shapes + 1, sizeof *c.shape_used);
  c.map_used = calloc((size_t)o->num_input_map + 1, sizeof *c.map_used);
  if (!c.r || !c.done || !c.shape_used || !c.map_used || rehash(&c, 512) != CLG_OK) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing %s", file_name(&c));
    code = clg_graph_record_error(g);
    goto out;
  }
  if ((code = check_options(&c)) != CLG_OK)
    goto out;
  if (count_readers(&c) != CLG_OK) {
    code = clg_graph_record_error(g);
    goto out;
  }
  bool scoped = o->prefix && o->prefix[0];
  if (scoped && clg_graph_push_name_scope(g, o->prefix) != CLG_OK) {
    code = clg_graph_status(g);
    goto out;
  }
  code = build_sources(&c);
  for (int i = 0; i < m->num_nodes && code == CLG_OK; i++)
    code = build_node(&c, i);
  if (code == CLG_OK && (code = fill_result(&c)) != CLG_OK)
    code = clg_graph_record_error(g);
  if (scoped)
    clg_graph_pop_name_scope(g);
  if (code != CLG_OK)
    goto out;
  for (int i = 0; i < o->num_input_shapes; i++)
    if (!c.shape_used[i]) {
      clg_error(CLG_INVALID_ARGUMENT, "input_shapes '%s' names no graph input of the model %s",
                o->input_shapes[i].name ? o->input_shapes[i].name : "(NULL)", file_name(&c));
      code = clg_graph_record_error(g);
      goto out;
    }
  if ((code = clg_imp_census(c.r, m)) != CLG_OK)
    code = clg_graph_record_error(g);
out:
  clg_session_free(c.anchor);
  clg_graph_free(c.anchor_g);
  free(c.vals);
  free(c.hash);
  free(c.done);
  free(c.shape_used);
  free(c.map_used);
  free(c.readers);
  if (code != CLG_OK || !result) {
    clg_import_result_free(c.r);
    c.r = NULL;
  }
  if (result)
    *result = c.r;
  return code;
}

/* Readers of a value (for fusions that must know a result has one reader): looked up in the
 * counts count_readers made, not by scanning every node per call (quadratic over a CNN). */
int clg_onnx_readers(const clg_onnx *c, const char *name)
{
  struct clg_onnx_readers *e = reader_slot(c->readers, c->readers_size, name);
  return e && e->name ? e->count : 0;
}
