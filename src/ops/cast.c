/* Cast (tf.cast): between float, double, half, the integers (int8..int64, uint8..uint64) and
 * bool (the small integers and the unsigned ones on the host only). Float to integer truncates
 * toward zero and saturates (NaN gives 0), integer narrowing wraps, anything to bool is
 * x != 0; to half rounds once, to nearest even. OpenCL: cl/cast.cl, built for float, and for
 * double on devices with fp64.
 * Kernels: backends/host/cast.c, backends/opencl/cast.c. */
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_DSTT, A_SRCT, A_TRUNCATE };

static const clg_attr_def attrs[] = {
    {.name = "DstT", .type = CLG_ATTR_DTYPE},
    {.name = "SrcT", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Truncate", .type = CLG_ATTR_BOOL, .has_default = true},
};

static bool castable(clg_dtype t)
{
  return t == CLG_FLOAT32 || t == CLG_FLOAT64 || t == CLG_FLOAT16 || clg_dtype_is_integer(t) ||
         t == CLG_BOOL;
}

static clg_code infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_code code = clg_infer_dtype_attr(n, A_SRCT, x->dtype, false);
  if (code != CLG_OK)
    return code;
  clg_dtype dst = n->attrs[A_DSTT].dtype;
  if (!castable(x->dtype) || !castable(dst))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "no cast from %s to %s",
                          clg_dtype_name(x->dtype), clg_dtype_name(dst));
  return clg_node_set_output(n, 0, dst, x->rank, x->dims);
}

static bool is_int(clg_dtype t) { return clg_dtype_is_integer(t) || t == CLG_BOOL; }

/* Between float types: dy cast back to the source type. To or from integers and bool:
 * none, as in TensorFlow. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  clg_dtype st = clg_node_in(n, 0)->dtype, dt = n->outs[0].dtype;
  if (is_int(st) || is_int(dt))
    return CLG_OK;
  clg_attr a = clg_attr_dtype("DstT", st);
  dx[0] = clg_grad_build(g, &clg_op_Cast, 1, dy, 1, &a);
  return clg_graph_status(g);
}

const clg_op_def clg_op_Cast = {
    .name = "Cast",
    .num_inputs = 1,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .grad = grad,
};

clg_node *clg_cast(clg_graph *g, const char *name, clg_node *x, clg_dtype dtype)
{
  clg_output in = {x, 0};
  clg_attr a = clg_attr_dtype("DstT", dtype);
  return clg_graph_build(g, &clg_op_Cast, name, 1, &in, 1, &a);
}
