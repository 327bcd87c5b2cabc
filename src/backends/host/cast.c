/* Cast on the host: float to integer truncates toward zero and saturates to the destination's
 * range (NaN gives 0), as OpenCL's convert_*_sat_rtz; integer to integer keeps the low bits
 * (narrowing and signedness changes wrap); anything to bool is x != 0; half goes
 * through double (exact), and to half rounds once from double (a correct float, double or
 * integer rounding, as numpy's astype(float16)). */
#include <math.h>

#include "backends/host/host.h"

static bool is_int(clg_dtype t) { return clg_dtype_is_integer(t) || t == CLG_BOOL; }

static double read_float(const void *p, clg_dtype t, size_t i)
{
  return t == CLG_FLOAT32   ? ((const float *)p)[i]
         : t == CLG_FLOAT16 ? clg_half_to_double(((const uint16_t *)p)[i])
                            : ((const double *)p)[i];
}

/* Truncation toward zero with saturation to [lo, hi] (both exact in double but INT64_MAX's,
 * 2^63, and UINT64_MAX's, 2^64), as OpenCL's convert_*_sat_rtz; NaN gives 0. The result as
 * the destination's bit pattern, widened. */
static uint64_t sat(double v, clg_dtype dt)
{
  if (isnan(v))
    return 0;
  if (dt == CLG_UINT64)
    return v <= 0 ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
  if (dt == CLG_INT64)
    return v <= -9223372036854775808.0  ? (uint64_t)INT64_MIN
           : v >= 9223372036854775808.0 ? (uint64_t)INT64_MAX
                                        : (uint64_t)(int64_t)v;
  int bits = (int)clg_dtype_size(dt) * 8;
  double lo = clg_dtype_is_unsigned(dt) ? 0 : -ldexp(1, bits - 1);
  double hi = clg_dtype_is_unsigned(dt) ? ldexp(1, bits) - 1 : ldexp(1, bits - 1) - 1;
  return (uint64_t)(int64_t)(v <= lo ? lo : v >= hi ? hi : v);
}

static void store_float(void *y, clg_dtype dt, size_t i, double v)
{
  if (dt == CLG_FLOAT32)
    ((float *)y)[i] = (float)v;
  else if (dt == CLG_FLOAT64)
    ((double *)y)[i] = v;
  else
    ((uint16_t *)y)[i] = clg_half_from_double(v);
}

static clg_code cast_run(const clg_kernel_ctx *c)
{
  clg_dtype st = clg_node_in(c->node, 0)->dtype, dt = c->node->outs[0].dtype;
  const void *x = c->in[0].host;
  void *y = c->out[0].host;
  size_t count = clg_out_count(&c->node->outs[0]);
  bool su = clg_dtype_is_unsigned(st) || st == CLG_BOOL;
  for (size_t i = 0; i < count; i++) {
    if (is_int(st)) {
      /* Integer to integer keeps the low bits (wraps, as TensorFlow's and ONNX's). */
      uint64_t v = clg_uint_load(st, x, i);
      if (dt == CLG_BOOL)
        ((uint8_t *)y)[i] = v != 0;
      else if (is_int(dt))
        clg_int_store(dt, y, i, v);
      else
        store_float(y, dt, i, su ? (double)v : (double)(int64_t)v);
    } else {
      double v = read_float(x, st, i);
      if (dt == CLG_BOOL)
        ((uint8_t *)y)[i] = v != 0;
      else if (is_int(dt))
        clg_int_store(dt, y, i, sat(v, dt));
      else
        store_float(y, dt, i, v);
    }
  }
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Cast, {CLG_KIND_HOST, NULL, cast_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_cast, entries);
