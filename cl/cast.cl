/* Cast between float/double (T), float, half (h), int32, int64 and bool (uchar 0/1). Float to integer
 * truncates toward zero and saturates (NaN gives 0), as the host kernel does; to bool is
 * x != 0. Built for T = float (every pair without double) and T = double (pairs with
 * double, float written f). */
#define CLG_CAST(SN, DN, S, D, EXPR)                                                             \
  __kernel void clg_cast_##SN##_##DN(__global const S *x, ulong xo, __global D *y, ulong yo,    \
                                     ulong n)                                                    \
  {                                                                                              \
    ulong i = get_global_id(0);                                                                  \
    if (i < n) {                                                                                 \
      S v = x[xo + i];                                                                           \
      y[yo + i] = EXPR;                                                                          \
    }                                                                                            \
  }

/* From T */
CLG_CAST(T, i, T, int, convert_int_sat_rtz(v))
CLG_CAST(T, l, T, long, convert_long_sat_rtz(v))
CLG_CAST(T, b, T, uchar, v != (T)0 ? 1 : 0)
/* To T */
CLG_CAST(i, T, int, T, (T)v)
CLG_CAST(l, T, long, T, (T)v)
CLG_CAST(b, T, uchar, T, (T)v)
/* Integers and bools among themselves (T unused) */
CLG_CAST(i, l, int, long, (long)v)
CLG_CAST(l, i, long, int, (int)v)
CLG_CAST(i, b, int, uchar, v != 0 ? 1 : 0)
CLG_CAST(l, b, long, uchar, v != 0 ? 1 : 0)
CLG_CAST(b, i, uchar, int, (int)v)
CLG_CAST(b, l, uchar, long, (long)v)
/* float <-> double (T is double here; in the float program these are float <-> float) */
CLG_CAST(T, f, T, float, (float)v)
CLG_CAST(f, T, float, T, (T)v)
/* half (h): read exactly through vload_half, written by vstore_half_rte (one rounding to
 * nearest even from T, as the host's; core OpenCL, no cl_khr_fp16 needed) */
#define CLG_CAST_FROM_H(DN, D, EXPR)                                                             \
  __kernel void clg_cast_h_##DN(__global const half *x, ulong xo, __global D *y, ulong yo,     \
                                ulong n)                                                         \
  {                                                                                              \
    ulong i = get_global_id(0);                                                                  \
    if (i < n) {                                                                                 \
      float v = vload_half(xo + i, x);                                                           \
      y[yo + i] = EXPR;                                                                          \
    }                                                                                            \
  }
#define CLG_CAST_TO_H(SN, S)                                                                     \
  __kernel void clg_cast_##SN##_h(__global const S *x, ulong xo, __global half *y, ulong yo,   \
                                  ulong n)                                                       \
  {                                                                                              \
    ulong i = get_global_id(0);                                                                  \
    if (i < n)                                                                                   \
      vstore_half_rte((T)x[xo + i], yo + i, y);                                                  \
  }
CLG_CAST_FROM_H(T, T, (T)v)
CLG_CAST_FROM_H(i, int, convert_int_sat_rtz(v))
CLG_CAST_FROM_H(l, long, convert_long_sat_rtz(v))
CLG_CAST_FROM_H(b, uchar, v != 0.0f ? 1 : 0)
CLG_CAST_TO_H(T, T)
CLG_CAST_TO_H(i, int)
CLG_CAST_TO_H(l, long)
CLG_CAST_TO_H(b, uchar)
