/* Cast (tf.cast): between float, double, int32, int64 and bool. Float to integer truncates
 * toward zero and saturates (NaN gives 0), integer narrowing wraps, anything to bool is
 * x != 0. OpenCL: cl/cast.cl, built for float, and for double on devices with fp64. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

enum { A_DSTT, A_SRCT, A_TRUNCATE };

static const clg_attr_def attrs[] = {
    {.name = "DstT", .type = CLG_ATTR_DTYPE},
    {.name = "SrcT", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "Truncate", .type = CLG_ATTR_BOOL, .has_default = true},
};

static bool castable(clg_dtype t)
{
  return t == CLG_FLOAT32 || t == CLG_FLOAT64 || t == CLG_INT32 || t == CLG_INT64 || t == CLG_BOOL;
}

static clg_code infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0);
  clg_attr_value *src = &n->attrs[A_SRCT];
  if (src->set && src->dtype != x->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute SrcT is %s but the input is %s",
                          clg_dtype_name(src->dtype), clg_dtype_name(x->dtype));
  src->set = true;
  src->dtype = x->dtype;
  clg_dtype dst = n->attrs[A_DSTT].dtype;
  if (!castable(x->dtype) || !castable(dst))
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "no cast from %s to %s",
                          clg_dtype_name(x->dtype), clg_dtype_name(dst));
  return clg_node_set_output(n, 0, dst, x->rank, x->dims);
}

static bool is_int(clg_dtype t) { return t == CLG_INT32 || t == CLG_INT64 || t == CLG_BOOL; }

static int64_t read_int(const void *p, clg_dtype t, size_t i)
{
  return t == CLG_INT32   ? ((const int32_t *)p)[i]
         : t == CLG_INT64 ? ((const int64_t *)p)[i]
                          : ((const uint8_t *)p)[i];
}

static double read_float(const void *p, clg_dtype t, size_t i)
{
  return t == CLG_FLOAT32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

/* Truncation toward zero with saturation, as OpenCL's convert_*_sat_rtz. */
static int64_t sat(double v, double lo, double hi)
{
  if (isnan(v))
    return 0;
  if (v <= lo)
    return (int64_t)lo;
  if (v >= hi)
    return hi >= 9.2e18 ? INT64_MAX : (int64_t)hi;
  return (int64_t)v;
}

static clg_code host_run(const clg_kernel_ctx *c)
{
  clg_dtype st = clg_node_in(c->node, 0)->dtype, dt = c->node->outs[0].dtype;
  const void *x = c->in[0].host;
  void *y = c->out[0].host;
  size_t count = clg_out_count(&c->node->outs[0]);
  for (size_t i = 0; i < count; i++) {
    if (is_int(st)) {
      int64_t v = read_int(x, st, i);
      switch (dt) {
      case CLG_FLOAT32:
        ((float *)y)[i] = (float)v;
        break;
      case CLG_FLOAT64:
        ((double *)y)[i] = (double)v;
        break;
      case CLG_INT32:
        ((int32_t *)y)[i] = (int32_t)(uint32_t)(uint64_t)v; /* wraps */
        break;
      case CLG_INT64:
        ((int64_t *)y)[i] = v;
        break;
      default:
        ((uint8_t *)y)[i] = v != 0;
        break;
      }
    } else {
      double v = read_float(x, st, i);
      switch (dt) {
      case CLG_FLOAT32:
        ((float *)y)[i] = (float)v;
        break;
      case CLG_FLOAT64:
        ((double *)y)[i] = v;
        break;
      case CLG_INT32:
        ((int32_t *)y)[i] = (int32_t)sat(v, -2147483648.0, 2147483647.0);
        break;
      case CLG_INT64:
        ((int64_t *)y)[i] = sat(v, -9223372036854775808.0, 9223372036854775807.0);
        break;
      default:
        ((uint8_t *)y)[i] = v != 0;
        break;
      }
    }
  }
  return CLG_OK;
}

static const clg_cl_text source = {"cast", NULL};

/* The kernel's code for a dtype in the program of element type prog. */
static char code_of(clg_dtype t, clg_dtype prog)
{
  switch (t) {
  case CLG_INT32:
    return 'i';
  case CLG_INT64:
    return 'l';
  case CLG_BOOL:
    return 'b';
  case CLG_FLOAT32:
    return prog == CLG_FLOAT64 ? 'f' : 'T';
  default:
    return 'T';
  }
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  clg_dtype st = clg_node_in(c->node, 0)->dtype, dt = c->node->outs[0].dtype;
  size_t count = clg_out_count(&c->node->outs[0]);
  size_t ses = clg_dtype_size(st), des = clg_dtype_size(dt);
  if (st == dt || count == 0) {
    if (count == 0 || (c->in[0].mem == c->out[0].mem && c->in[0].offset == c->out[0].offset))
      return CLG_OK;
    return clg_device_copy(c->dev, c->out[0].mem, c->out[0].offset, c->dev, c->in[0].mem,
                           c->in[0].offset, count * ses, NULL, NULL);
  }
  clg_dtype prog = st == CLG_FLOAT64 || dt == CLG_FLOAT64 ? CLG_FLOAT64 : CLG_FLOAT32;
  char kernel[32];
  char sc = code_of(st, prog), dc = code_of(dt, prog);
  snprintf(kernel, sizeof kernel, "clg_cast_%c_%c", sc, dc);
  cl_ulong xo = c->in[0].offset / ses, yo = c->out[0].offset / des, n = count;
  clg_cl_arg args[] = {{sizeof(cl_mem), &c->in[0].mem},
                       {sizeof xo, &xo},
                       {sizeof(cl_mem), &c->out[0].mem},
                       {sizeof yo, &yo},
                       {sizeof n, &n}};
  return clg_cl_launch(c->dev, prog, &source, kernel, args, 5, count);
}

static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  clg_dtype st = clg_node_in(n, 0)->dtype, dt = n->outs[0].dtype;
  return (st != CLG_FLOAT64 && dt != CLG_FLOAT64) || dev->info.has_fp64 || st == dt;
}

static const clg_kernel_def kernels[] = {{CLG_KIND_HOST, NULL, host_run, NULL, NULL},
                                         {CLG_KIND_OPENCL, cl_supports, cl_run, NULL, NULL}};

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
    .kernels = kernels,
    .num_kernels = 2,
    .inplace = -1,
    .grad = grad,
};

clg_node *clg_cast(clg_graph *g, const char *name, clg_node *x, clg_dtype dtype)
{
  clg_output in = {x, 0};
  clg_attr a = clg_attr_dtype("DstT", dtype);
  return clg_graph_build(g, &clg_op_Cast, name, 1, &in, 1, &a);
}
