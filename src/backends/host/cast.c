/* Cast on the host: float to integer truncates toward zero and saturates (NaN gives 0), as
 * OpenCL's convert_*_sat_rtz; integer narrowing wraps; anything to bool is x != 0; half goes
 * through double (exact), and to half rounds once from double (a correct float, double or
 * integer rounding, as numpy's astype(float16)). */
#include <math.h>

#include "backends/host/host.h"

static bool is_int(clg_dtype t) { return t == CLG_INT32 || t == CLG_INT64 || t == CLG_BOOL; }

static int64_t read_int(const void *p, clg_dtype t, size_t i)
{
  return t == CLG_INT32   ? ((const int32_t *)p)[i]
         : t == CLG_INT64 ? ((const int64_t *)p)[i]
                          : ((const uint8_t *)p)[i];
}

static double read_float(const void *p, clg_dtype t, size_t i)
{
  return t == CLG_FLOAT32   ? ((const float *)p)[i]
         : t == CLG_FLOAT16 ? clg_half_to_double(((const uint16_t *)p)[i])
                            : ((const double *)p)[i];
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

static clg_code cast_run(const clg_kernel_ctx *c)
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
      case CLG_FLOAT16:
        ((uint16_t *)y)[i] = clg_half_from_double((double)v);
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
      case CLG_FLOAT16:
        ((uint16_t *)y)[i] = clg_half_from_double(v);
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

static const clg_kernel_entry entries[] = {
    {&clg_op_Cast, {CLG_KIND_HOST, NULL, cast_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_cast, entries);
