/* The op registry: the list of op definitions, lookups, kernel selection, and the helpers
 * every op file uses (errors naming the node, the one checked path for output shapes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "graph/graph.h"
#include "ops/ops.h"

/* Variables, their updates and initializers (variable.c, assign.c, random.c). */
extern const clg_op_def clg_op_Floor, clg_op_VariableV2, clg_op_NoOp, clg_op_Assign,
    clg_op_AssignAdd, clg_op_AssignSub, clg_op_ApplyGradientDescent, clg_op_ApplyMomentum,
    clg_op_RandomUniform, clg_op_RandomStandardNormal, clg_op_TruncatedNormal, clg_op_ConstFill;
/* Collectives over the tasks of a cluster (all_reduce.c). */
extern const clg_op_def clg_op_AllReduce;

static const clg_op_def *const registry[] = {
    &clg_op_Const,
    &clg_op_Placeholder,
    &clg_op_MatMul,
    &clg_op_Add,
    &clg_op_Sub,
    &clg_op_Mul,
    &clg_op_AddN,
    &clg_op_Identity,
    &clg_op_Relu,
    &clg_op_Neg,
    &clg_op_Square,
    &clg_op_ReluGrad,
    &clg_op_VariableV2,
    &clg_op_NoOp,
    &clg_op_Floor,
    &clg_op_Assign,
    &clg_op_AssignAdd,
    &clg_op_AssignSub,
    &clg_op_ApplyGradientDescent,
    &clg_op_ApplyMomentum,
    &clg_op_RandomUniform,
    &clg_op_RandomStandardNormal,
    &clg_op_TruncatedNormal,
    &clg_op_ConstFill,
    /* the CNN set */
    &clg_op_RealDiv,
    &clg_op_Maximum,
    &clg_op_Equal,
    &clg_op_GreaterEqual,
    &clg_op_Select,
    &clg_op_Exp,
    &clg_op_Log,
    &clg_op_Sqrt,
    &clg_op_Rsqrt,
    &clg_op_Cast,
    &clg_op_Fill,
    &clg_op_ZerosLike,
    &clg_op_OnesLike,
    &clg_op_Reshape,
    &clg_op_Transpose,
    &clg_op_Sum,
    &clg_op_Mean,
    &clg_op_Max,
    &clg_op_L2Loss,
    &clg_op_ArgMax,
    &clg_op_Softmax,
    &clg_op_LogSoftmax,
    &clg_op_SparseSoftmaxCrossEntropyWithLogits,
    &clg_op_InTopKV2,
    &clg_op_BiasAdd,
    &clg_op_MaxPool,
    &clg_op_AvgPool,
    &clg_op_LRN,
    &clg_op_Conv2D,
    /* gradients */
    &clg_op_Conv2DBackpropInput,
    &clg_op_Conv2DBackpropFilter,
    &clg_op_MaxPoolGrad,
    &clg_op_AvgPoolGrad,
    &clg_op_LRNGrad,
    &clg_op_BiasAddGrad,
    /* clusters */
    &clg_op_AllReduce,
    /* TensorFlow graphs (issue 23) */
    &clg_op_Sigmoid,
    &clg_op_Tanh,
    &clg_op_Relu6,
    &clg_op_LeakyRelu,
    &clg_op_Abs,
    &clg_op_Sign,
    &clg_op_SigmoidGrad,
    &clg_op_TanhGrad,
    &clg_op_Relu6Grad,
    &clg_op_LeakyReluGrad,
    &clg_op_AddV2,
    &clg_op_Minimum,
    &clg_op_Squeeze,
    &clg_op_ExpandDims,
    &clg_op_Slice,
    &clg_op_Pad,
    &clg_op_PadV2,
    &clg_op_ConcatV2,
    &clg_op_DepthwiseConv2dNative,
    &clg_op_DepthwiseConv2dNativeBackpropInput,
    &clg_op_DepthwiseConv2dNativeBackpropFilter,
    &clg_op_ResizeBilinear,
    &clg_op_ResizeBilinearGrad,
    &clg_op_StridedSlice,
    &clg_op_Pack,
    &clg_op_Shape,
    &clg_op_DepthToSpace,
    &clg_op_Prelu,
    &clg_op_MirrorPad,
    &clg_op_MirrorPadGrad,
};

#define NUM_OPS ((int)(sizeof registry / sizeof registry[0]))

int clg_op_count(void) { return NUM_OPS; }

const clg_op_def *clg_op_at(int i) { return i >= 0 && i < NUM_OPS ? registry[i] : NULL; }

const clg_op_def *clg_op_find(const char *name)
{
  for (int i = 0; name && i < NUM_OPS; i++)
    if (strcmp(registry[i]->name, name) == 0)
      return registry[i];
  return NULL;
}

static clg_device_kind kind_of(const clg_device *dev) { return clg_device_ops_of(dev)->kind; }

/* --- helpers for op files ---------------------------------------------------------------- */

clg_code clg_node_error(const clg_node *n, clg_code code, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return clg_error(code, "%s '%s': %s", n->op, n->name, msg);
}

/* Element counts stay below this so that byte sizes of every dtype fit in int64. */
#define MAX_ELEMENTS (INT64_MAX / 8)

clg_code clg_node_set_output(clg_node *n, int i, clg_dtype dtype, int rank, const int64_t *dims)
{
  if (i < 0 || i >= n->num_outputs)
    return clg_node_error(n, CLG_INTERNAL, "output %d of %d", i, n->num_outputs);
  if (clg_dtype_size(dtype) == 0)
    return clg_node_error(
        n, CLG_INVALID_ARGUMENT,
        "dtype %d is not float (1), double (2), int32 (3), int64 (9), bool (10) or "
        "half (19)",
        (int)dtype);
  if (rank < 0 || rank > CLG_MAX_RANK)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "rank %d is out of range [0, %d]", rank,
                          CLG_MAX_RANK);
  if (rank > 0 && !dims)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dims is NULL for rank %d", rank);
  clg_out_desc d = {dtype, rank, {0}};
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "dims[%d] is %lld; dimensions must be >= 0", k,
                            (long long)dims[k]);
    d.dims[k] = dims[k];
  }
  int64_t count;
  if (!clg_dims_product(rank, d.dims, &count) || count > MAX_ELEMENTS) {
    char s[192];
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "shape %s has too many elements",
                          clg_out_shape_string(&d, s, sizeof s));
  }
  n->outs[i] = d;
  return CLG_OK;
}

const clg_out_desc *clg_node_in(const clg_node *n, int i)
{
  return &n->inputs[i].node->outs[n->inputs[i].index];
}

const clg_out_desc *clg_node_out(const clg_node *n, int i) { return &n->outs[i]; }

const clg_attr_value *clg_node_attr(const clg_node *n, int i) { return &n->attrs[i]; }

clg_attr_value *clg_node_attr_mut(clg_node *n, int i) { return &n->attrs[i]; }

bool clg_checked_mul(int64_t a, int64_t b, int64_t *r)
{
  if (a != 0 && b > INT64_MAX / a)
    return false;
  *r = a * b;
  return true;
}

bool clg_dims_product(int n, const int64_t *dims, int64_t *count)
{
  bool fits = true;
  int64_t c = 1;
  for (int k = 0; k < n; k++) {
    if (dims[k] == 0) {
      *count = 0;
      return true;
    }
    fits = fits && clg_checked_mul(c, dims[k], &c);
  }
  *count = fits ? c : INT64_MAX;
  return fits;
}

size_t clg_out_count(const clg_out_desc *d)
{
  size_t count = 1;
  for (int i = 0; i < d->rank; i++)
    count *= (size_t)d->dims[i];
  return count;
}

char *clg_out_shape_string(const clg_out_desc *d, char *buf, size_t size)
{
  if (!buf || size == 0)
    return buf;
  /* snprintf returns the length it wanted: once that reaches size, the rest is cut. */
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; d && i < d->rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)d->dims[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
  return buf;
}

bool clg_node_all_dtype(const clg_node *n, clg_dtype dtype)
{
  for (int i = 0; i < n->num_inputs; i++)
    if (clg_node_in(n, i)->dtype != dtype)
      return false;
  for (int i = 0; i < n->num_outputs; i++)
    if (n->outs[i].dtype != dtype)
      return false;
  return true;
}

bool clg_kernel_float_or_double(const clg_node *n, const clg_device *dev)
{
  return clg_node_all_dtype(n, CLG_FLOAT32) ||
         (clg_node_all_dtype(n, CLG_FLOAT64) &&
          (kind_of(dev) == CLG_KIND_HOST || dev->info.has_fp64));
}

clg_code clg_node_const_ints(const clg_node *n, int i, const char *what, int max, int64_t *vals,
                             int *count)
{
  const clg_node *p = n->inputs[i].node;
  const clg_tensor *t = clg_node_value(p);
  if (!(p->def->flags & CLG_OP_CONST) || !t)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "%s (input %d) must be a constant: shapes are static, but '%s' is a %s",
                          what, i, p->name, p->op);
  clg_dtype dt = clg_tensor_dtype(t);
  if (dt != CLG_INT32 && dt != CLG_INT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s (input %d) must be int32 or int64, not %s",
                          what, i, clg_dtype_name(dt));
  char s[192];
  if (clg_tensor_rank(t) > 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s (input %d) must be a vector, not shape %s",
                          what, i, clg_tensor_shape_string(t, s, sizeof s));
  size_t c = clg_tensor_count(t);
  if (c > (size_t)max)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s (input %d) has %zu values; at most %d", what,
                          i, c, max);
  const void *d = clg_tensor_const_data(t);
  for (size_t k = 0; k < c; k++)
    vals[k] = dt == CLG_INT32 ? ((const int32_t *)d)[k] : ((const int64_t *)d)[k];
  *count = (int)c;
  return CLG_OK;
}

clg_code clg_infer_elementwise_unary(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_attr_value *t = &n->attrs[0];
  if (t->set && t->dtype != x->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but the input is %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(x->dtype));
  t->set = true;
  t->dtype = x->dtype;
  return clg_node_set_output(n, 0, x->dtype, x->rank, x->dims);
}

const clg_attr_def clg_attrs_T[1] = {{.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true}};

static const char *dt_enum(clg_dtype d)
{
  switch (d) {
  case CLG_FLOAT64:
    return "DT_DOUBLE";
  case CLG_FLOAT16:
    return "DT_HALF";
  case CLG_INT32:
    return "DT_INT32";
  case CLG_INT64:
    return "DT_INT64";
  case CLG_BOOL:
    return "DT_BOOL";
  case CLG_FLOAT32:
    break;
  }
  return "DT_FLOAT";
}

/* Element i of a host tensor as a double (int64 beyond 2^53 rounds: summaries only). */
double clg_tensor_element_double(const clg_tensor *t, size_t i)
{
  const void *p = clg_tensor_const_data(t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT64:
    return ((const double *)p)[i];
  case CLG_FLOAT16:
    return clg_half_to_double(((const uint16_t *)p)[i]);
  case CLG_INT32:
    return ((const int32_t *)p)[i];
  case CLG_INT64:
    return (double)((const int64_t *)p)[i];
  case CLG_BOOL:
    return ((const uint8_t *)p)[i] != 0;
  case CLG_FLOAT32:
    break;
  }
  return ((const float *)p)[i];
}

/* "1 2 3..." (TensorFlow's summary of a value: the first three). */
static void summarize_value(clg_strbuf *s, const clg_tensor *t)
{
  char shape[192];
  clg_strbuf_printf(s, "Tensor<type: %s shape: %s values: ", clg_dtype_name(clg_tensor_dtype(t)),
                    clg_tensor_shape_string(t, shape, sizeof shape));
  size_t count = clg_tensor_count(t);
  size_t shown = count < 3 ? count : 3;
  for (size_t i = 0; i < shown; i++)
    clg_strbuf_printf(s, "%s%g", i ? " " : "", clg_tensor_element_double(t, i));
  clg_strbuf_append(s, count > shown ? "...>" : ">");
}

static void print_attr(clg_strbuf *s, const clg_attr_value *a)
{
  switch (a->type) {
  case CLG_ATTR_INT:
    clg_strbuf_printf(s, "%lld", (long long)a->i);
    break;
  case CLG_ATTR_FLOAT:
    clg_strbuf_printf(s, "%g", a->f);
    break;
  case CLG_ATTR_BOOL:
    clg_strbuf_append(s, a->b ? "true" : "false");
    break;
  case CLG_ATTR_STRING:
    clg_strbuf_printf(s, "\"%.64s\"", a->s ? a->s : "");
    break;
  case CLG_ATTR_DTYPE:
    clg_strbuf_append(s, dt_enum(a->dtype));
    break;
  case CLG_ATTR_INT_LIST:
  case CLG_ATTR_SHAPE:
    clg_strbuf_append(s, "[");
    for (int i = 0; i < a->n && a->v; i++)
      clg_strbuf_printf(s, "%s%lld", i ? (a->type == CLG_ATTR_SHAPE ? "," : ", ") : "",
                        (long long)a->v[i]);
    clg_strbuf_append(s, "]");
    break;
  case CLG_ATTR_TENSOR:
    if (a->tensor)
      summarize_value(s, a->tensor);
    break;
  }
}

/* Whether a's value is the one the caller gave (the types agree: checked when it was set). */
static bool attr_same(const clg_attr_value *a, const clg_attr *given)
{
  switch (a->type) {
  case CLG_ATTR_INT:
    return a->i == given->v.i;
  case CLG_ATTR_FLOAT:
    return a->f == given->v.f;
  case CLG_ATTR_BOOL:
    return a->b == (given->v.b != 0);
  case CLG_ATTR_STRING:
    return a->s && given->v.s && strcmp(a->s, given->v.s) == 0;
  case CLG_ATTR_DTYPE:
    return a->dtype == given->v.dtype;
  case CLG_ATTR_INT_LIST:
  case CLG_ATTR_SHAPE:
    return a->n == given->v.list.n &&
           (a->n <= 0 || memcmp(a->v, given->v.list.v, sizeof *a->v * (size_t)a->n) == 0);
  case CLG_ATTR_TENSOR:
    return a->tensor == given->v.tensor; /* no op infers a tensor */
  }
  return false;
}

clg_code clg_node_attr_agrees(const clg_node *n, int i, const clg_attr *given)
{
  const clg_attr_value *a = &n->attrs[i];
  if (attr_same(a, given))
    return CLG_OK;
  clg_strbuf want, got;
  clg_strbuf_init(&want);
  clg_strbuf_init(&got);
  if (a->type == CLG_ATTR_DTYPE) {
    clg_strbuf_append(&want, clg_dtype_name(given->v.dtype));
    clg_strbuf_append(&got, clg_dtype_name(a->dtype));
  } else {
    clg_attr_value g = {.set = true, .type = given->type};
    switch (given->type) {
    case CLG_ATTR_INT:
      g.i = given->v.i;
      break;
    case CLG_ATTR_FLOAT:
      g.f = given->v.f;
      break;
    case CLG_ATTR_BOOL:
      g.b = given->v.b != 0;
      break;
    case CLG_ATTR_STRING:
      g.s = (char *)given->v.s;
      break;
    case CLG_ATTR_INT_LIST:
    case CLG_ATTR_SHAPE:
      g.n = given->v.list.n;
      g.v = (int64_t *)given->v.list.v;
      break;
    default:
      break;
    }
    print_attr(&want, &g);
    print_attr(&got, a);
  }
  char *w = clg_strbuf_take(&want), *o = clg_strbuf_take(&got);
  clg_code code =
      clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute %s is %s but the inputs make it %s",
                     n->def->attrs[i].name, w ? w : "?", o ? o : "?");
  free(w);
  free(o);
  return code;
}

char *clg_node_def_string(const clg_node *n)
{
  clg_strbuf s;
  clg_strbuf_init(&s);
  clg_strbuf_printf(&s, "%s = %s[", n->name, n->op);
  int printed = 0;
  for (int i = 0; i < n->def->num_attrs; i++) {
    if (!n->attrs[i].set)
      continue;
    clg_strbuf_printf(&s, "%s%s=", printed++ ? ", " : "", n->def->attrs[i].name);
    print_attr(&s, &n->attrs[i]);
  }
  if (n->requested_text && n->requested_text[0])
    clg_strbuf_printf(&s, "%s_device=\"%s\"", printed ? ", " : "", n->requested_text);
  clg_strbuf_append(&s, "](");
  for (int i = 0; i < n->num_inputs; i++) {
    const clg_output *in = &n->inputs[i];
    clg_strbuf_printf(&s, "%s%s", i ? ", " : "", in->node->name);
    if (in->index)
      clg_strbuf_printf(&s, ":%d", in->index);
  }
  for (int i = 0; i < n->num_control; i++)
    clg_strbuf_printf(&s, "%s^%s", i || n->num_inputs ? ", " : "", n->control[i]->name);
  clg_strbuf_append(&s, ")");
  return clg_strbuf_take(&s);
}

/* --- helpers for gradient functions ---------------------------------------------------- */

clg_output clg_grad_build(clg_graph *g, const clg_op_def *def, int num_inputs,
                          const clg_output *inputs, int num_attrs, const clg_attr *attrs)
{
  return clg_out(clg_graph_build(g, def, NULL, num_inputs, inputs, num_attrs, attrs), 0);
}

clg_output clg_grad_scalar(clg_graph *g, clg_dtype dtype, double value)
{
  clg_tensor *t = clg_tensor_new(dtype, 0, NULL, NULL);
  if (t && dtype == CLG_FLOAT32)
    *(float *)clg_tensor_data(t) = (float)value;
  else if (t && dtype == CLG_FLOAT64)
    *(double *)clg_tensor_data(t) = value;
  else if (t && dtype == CLG_FLOAT16)
    *(uint16_t *)clg_tensor_data(t) = clg_half_from_double(value);
  clg_output o = clg_out(t ? clg_const(g, NULL, t) : NULL, 0);
  clg_tensor_free(t);
  return o;
}
