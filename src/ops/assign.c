/* Updates of a variable, in place on its buffer (TensorFlow's ref ops): Assign, AssignAdd,
 * AssignSub, ApplyGradientDescent, ApplyMomentum. Input 0 (and ApplyMomentum's accum) is a
 * reference edge: the kernel gets the variable's own buffer and output 0 is the variable.
 * The placer puts these nodes on their variable's device; the executor checks that what
 * they read is initialized. Assign takes any dtype (a byte copy); the arithmetic takes
 * float, and double where the device has it. */
#include <string.h>

#include "device/device.h"
#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"

/* --- inference --------------------------------------------------------------------------- */

static bool same_desc(const clg_out_desc *a, const clg_out_desc *b)
{
  if (a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

static clg_code need_variable(clg_node *n, int i)
{
  if (clg_node_ref_variable(n, i))
    return CLG_OK;
  return clg_node_error(n, CLG_INVALID_ARGUMENT,
                        "input %d ('%s') must be a variable (a VariableV2, or an update op on "
                        "one): %s changes it in place",
                        i, n->inputs[i].node->name, n->op);
}

/* Input i has the variable's dtype and shape (like) or is a scalar of its dtype. */
static clg_code need_input(clg_node *n, int i, bool scalar, const char *what)
{
  const clg_out_desc *v = clg_node_in(n, 0), *x = clg_node_in(n, i);
  char want[96], got[96];
  if (x->dtype != v->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s ('%s') is %s but the variable is %s", what,
                          n->inputs[i].node->name, clg_dtype_name(x->dtype),
                          clg_dtype_name(v->dtype));
  if (scalar ? x->rank != 0 : !same_desc(x, v))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s ('%s') has shape %s; want %s", what,
                          n->inputs[i].node->name, clg_out_shape_string(x, got, sizeof got),
                          scalar ? "[] (a scalar)" : clg_out_shape_string(v, want, sizeof want));
  return CLG_OK;
}

/* Sets T and output 0 (the variable). */
static clg_code finish(clg_node *n)
{
  const clg_out_desc *v = clg_node_in(n, 0);
  clg_attr_value *t = &n->attrs[0];
  if (t->set && t->dtype != v->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but the variable is %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(v->dtype));
  t->set = true;
  t->dtype = v->dtype;
  return clg_node_set_output(n, 0, v->dtype, v->rank, v->dims);
}

static clg_code infer_assign(clg_node *n)
{
  clg_code code = need_variable(n, 0);
  if (code == CLG_OK)
    code = need_input(n, 1, false, "value");
  return code == CLG_OK ? finish(n) : code;
}

static clg_code infer_apply_gd(clg_node *n)
{
  clg_code code = need_variable(n, 0);
  if (code == CLG_OK)
    code = need_input(n, 1, true, "alpha");
  if (code == CLG_OK)
    code = need_input(n, 2, false, "delta");
  return code == CLG_OK ? finish(n) : code;
}

static clg_code infer_apply_momentum(clg_node *n)
{
  clg_code code = need_variable(n, 0);
  if (code == CLG_OK)
    code = need_variable(n, 1);
  if (code == CLG_OK)
    code = need_input(n, 1, false, "accum");
  if (code == CLG_OK)
    code = need_input(n, 2, true, "lr");
  if (code == CLG_OK)
    code = need_input(n, 3, false, "grad");
  if (code == CLG_OK)
    code = need_input(n, 4, true, "momentum");
  if (code == CLG_OK && clg_node_ref_variable(n, 0) == clg_node_ref_variable(n, 1))
    code = clg_node_error(n, CLG_INVALID_ARGUMENT, "var and accum are the same variable '%s'",
                          clg_node_ref_variable(n, 0)->name);
  return code == CLG_OK ? finish(n) : code;
}

/* --- host kernels ------------------------------------------------------------------------ */

static size_t count_of(const clg_kernel_ctx *c) { return clg_out_count(&c->node->outs[0]); }

static clg_code host_assign(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes && c->in[0].host != c->in[1].host)
    memmove(c->in[0].host, c->in[1].host, bytes);
  return CLG_OK;
}

#define HOST_LOOP(T, body)                                                                         \
  do {                                                                                             \
    T *v = c->in[0].host;                                                                          \
    for (size_t i = 0; i < count; i++)                                                             \
      body;                                                                                        \
  } while (0)

static clg_code host_assign_add(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  if (c->node->outs[0].dtype == CLG_INT64) /* a global step */
    HOST_LOOP(int64_t, v[i] += ((const int64_t *)c->in[1].host)[i]);
  else if (c->node->outs[0].dtype == CLG_INT32)
    HOST_LOOP(int32_t, v[i] += ((const int32_t *)c->in[1].host)[i]);
  else if (c->node->outs[0].dtype == CLG_FLOAT64)
    HOST_LOOP(double, v[i] += ((const double *)c->in[1].host)[i]);
  else
    HOST_LOOP(float, v[i] += ((const float *)c->in[1].host)[i]);
  return CLG_OK;
}

static clg_code host_assign_sub(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    HOST_LOOP(double, v[i] -= ((const double *)c->in[1].host)[i]);
  else
    HOST_LOOP(float, v[i] -= ((const float *)c->in[1].host)[i]);
  return CLG_OK;
}

#define HOST_GD(T)                                                                                 \
  do {                                                                                             \
    T a = *(const T *)c->in[1].host;                                                               \
    const T *d = c->in[2].host;                                                                    \
    HOST_LOOP(T, v[i] -= a * d[i]);                                                                \
  } while (0)

static clg_code host_apply_gd(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    HOST_GD(double);
  else
    HOST_GD(float);
  return CLG_OK;
}

#define HOST_MOMENTUM(T)                                                                           \
  do {                                                                                             \
    T *acc = c->in[1].host;                                                                        \
    T lr = *(const T *)c->in[2].host, m = *(const T *)c->in[4].host;                               \
    const T *g = c->in[3].host;                                                                    \
    if (nesterov)                                                                                  \
      HOST_LOOP(T, (acc[i] = acc[i] * m + g[i], v[i] -= g[i] * lr + acc[i] * m * lr));             \
    else                                                                                           \
      HOST_LOOP(T, (acc[i] = acc[i] * m + g[i], v[i] -= lr * acc[i]));                             \
  } while (0)

static clg_code host_apply_momentum(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  bool nesterov = c->node->attrs[2].b;
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    HOST_MOMENTUM(double);
  else
    HOST_MOMENTUM(float);
  return CLG_OK;
}

/* --- OpenCL kernels ---------------------------------------------------------------------- */

/* No contraction into fma, so that the devices compute what the host loops compute. */
static const clg_cl_text source = {
    "updates",
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "__kernel void assign_add(__global T *v, ulong vo, __global const T *x, ulong xo, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) v[vo + i] += x[xo + i]; }\n"
    "__kernel void assign_sub(__global T *v, ulong vo, __global const T *x, ulong xo, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) v[vo + i] -= x[xo + i]; }\n"
    "__kernel void apply_gd(__global T *v, ulong vo, __global const T *a, ulong ao,\n"
    "                       __global const T *d, ulong dof, ulong n)\n"
    "{ ulong i = get_global_id(0); if (i < n) v[vo + i] -= a[ao] * d[dof + i]; }\n"
    "__kernel void apply_momentum(__global T *v, ulong vo, __global T *acc, ulong aco,\n"
    "                             __global const T *lr, ulong lro, __global const T *g,\n"
    "                             ulong go, __global const T *m, ulong mo, ulong n, int nest)\n"
    "{\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  T a = acc[aco + i] * m[mo] + g[go + i];\n"
    "  acc[aco + i] = a;\n"
    "  if (nest) v[vo + i] -= g[go + i] * lr[lro] + a * m[mo] * lr[lro];\n"
    "  else v[vo + i] -= lr[lro] * a;\n"
    "}\n"};

static clg_code cl_assign(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  /* v = v: one block (OpenCL refuses a copy onto itself: CL_MEM_COPY_OVERLAP). */
  if (!bytes || (c->in[0].mem == c->in[1].mem && c->in[0].offset == c->in[1].offset))
    return CLG_OK;
  clg_event *done = NULL;
  clg_code code = clg_device_ops_of(c->dev)->copy_from_peer(c->dev, &c->in[0], c->dev, &c->in[1],
                                                            bytes, 0, NULL, &done);
  clg_event_release(done);
  return code;
}

/* Launches kernel `name` over the variable with blocks in[0..nblocks) as (mem, offset)
 * pairs, then extra arguments. */
static clg_code cl_update(const clg_kernel_ctx *c, const char *name, int nblocks, int extra)
{
  size_t count = count_of(c);
  if (!count)
    return CLG_OK;
  clg_dtype dt = c->node->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  cl_ulong off[5], n = count;
  cl_int nest = extra;
  clg_cl_arg args[12];
  int k = 0;
  for (int i = 0; i < nblocks; i++) {
    off[i] = c->in[i].offset / es;
    args[k++] = (clg_cl_arg){sizeof(cl_mem), &c->in[i].mem};
    args[k++] = (clg_cl_arg){sizeof off[i], &off[i]};
  }
  args[k++] = (clg_cl_arg){sizeof n, &n};
  if (nblocks == 5)
    args[k++] = (clg_cl_arg){sizeof nest, &nest};
  return clg_cl_launch(c->dev, dt, &source, name, args, k, count);
}

static clg_code cl_assign_add(const clg_kernel_ctx *c) { return cl_update(c, "assign_add", 2, 0); }
static clg_code cl_assign_sub(const clg_kernel_ctx *c) { return cl_update(c, "assign_sub", 2, 0); }
static clg_code cl_apply_gd(const clg_kernel_ctx *c) { return cl_update(c, "apply_gd", 3, 0); }
static clg_code cl_apply_momentum(const clg_kernel_ctx *c)
{
  return cl_update(c, "apply_momentum", 5, c->node->attrs[2].b);
}

/* --- definitions ------------------------------------------------------------------------- */

static const clg_attr_def assign_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "use_locking", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
    {.name = "validate_shape", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 1},
};
static const clg_attr_def update_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "use_locking", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
};
static const clg_attr_def momentum_attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "use_locking", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
    {.name = "use_nesterov", .type = CLG_ATTR_BOOL, .has_default = true, .def_i = 0},
};

static const clg_kernel_def assign_kernels[] = {{CLG_KIND_HOST, NULL, host_assign, NULL, NULL},
                                                {CLG_KIND_OPENCL, NULL, cl_assign, NULL, NULL}};

/* AssignAdd also counts in int32 and int64 on the host (tf.train's global step). */
static bool host_add_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_or_double(n, dev) ||
         ((n->outs[0].dtype == CLG_INT64 || n->outs[0].dtype == CLG_INT32) &&
          clg_node_all_dtype(n, n->outs[0].dtype) && n->def == &clg_op_AssignAdd);
}

#define UPDATE_OP(NAME, NIN, ATTRS, INFER, HOST, CL)                                               \
  static const clg_kernel_def NAME##_kernels[] = {                                                 \
      {CLG_KIND_HOST, host_add_supports, HOST, NULL, NULL},                                        \
      {CLG_KIND_OPENCL, clg_kernel_float_or_double, CL, NULL, NULL}};                              \
  const clg_op_def clg_op_##NAME = {                                                               \
      .name = #NAME,                                                                               \
      .num_inputs = NIN,                                                                           \
      .num_outputs = 1,                                                                            \
      .num_attrs = sizeof ATTRS / sizeof ATTRS[0],                                                 \
      .attrs = ATTRS,                                                                              \
      .infer = INFER,                                                                              \
      .kernels = NAME##_kernels,                                                                   \
      .num_kernels = 2,                                                                            \
      .inplace = -1,                                                                               \
      .ref_inputs = NIN == 5 ? 3u : 1u,                                                            \
  }

const clg_op_def clg_op_Assign = {
    .name = "Assign",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = assign_attrs,
    .infer = infer_assign,
    .kernels = assign_kernels,
    .num_kernels = 2,
    .inplace = -1,
    .flags = CLG_OP_ASSIGNS,
    .ref_inputs = 1u,
};
UPDATE_OP(AssignAdd, 2, update_attrs, infer_assign, host_assign_add, cl_assign_add);
UPDATE_OP(AssignSub, 2, update_attrs, infer_assign, host_assign_sub, cl_assign_sub);
UPDATE_OP(ApplyGradientDescent, 3, update_attrs, infer_apply_gd, host_apply_gd, cl_apply_gd);
UPDATE_OP(ApplyMomentum, 5, momentum_attrs, infer_apply_momentum, host_apply_momentum,
          cl_apply_momentum);

/* --- builders ---------------------------------------------------------------------------- */

clg_node *clg_assign(clg_graph *g, const char *name, clg_node *ref, clg_node *value)
{
  clg_output in[2] = {{ref, 0}, {value, 0}};
  return clg_graph_build(g, &clg_op_Assign, name, 2, in, 0, NULL);
}

clg_node *clg_assign_add(clg_graph *g, const char *name, clg_node *ref, clg_node *value)
{
  clg_output in[2] = {{ref, 0}, {value, 0}};
  return clg_graph_build(g, &clg_op_AssignAdd, name, 2, in, 0, NULL);
}

clg_node *clg_assign_sub(clg_graph *g, const char *name, clg_node *ref, clg_node *value)
{
  clg_output in[2] = {{ref, 0}, {value, 0}};
  return clg_graph_build(g, &clg_op_AssignSub, name, 2, in, 0, NULL);
}

clg_node *clg_apply_gradient_descent(clg_graph *g, const char *name, clg_node *var, clg_node *alpha,
                                     clg_node *delta)
{
  clg_output in[3] = {{var, 0}, {alpha, 0}, {delta, 0}};
  return clg_graph_build(g, &clg_op_ApplyGradientDescent, name, 3, in, 0, NULL);
}

clg_node *clg_apply_momentum(clg_graph *g, const char *name, clg_node *var, clg_node *accum,
                             clg_node *lr, clg_node *grad, clg_node *momentum)
{
  clg_output in[5] = {{var, 0}, {accum, 0}, {lr, 0}, {grad, 0}, {momentum, 0}};
  return clg_graph_build(g, &clg_op_ApplyMomentum, name, 5, in, 0, NULL);
}
