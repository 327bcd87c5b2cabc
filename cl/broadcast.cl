/* Binary ops with numpy broadcasting, and strided copies (Transpose). T is float or double.
 * The map gives, per output dim (outermost first), its size and the strides in elements of
 * the inputs (0 where broadcast); its layout matches clg_cl_map in src/kernels/broadcast.c. */
typedef struct clg_map {
  ulong rank;
  ulong dims[8];
  ulong sa[8];
  ulong sb[8];
} clg_map;

static T clg_floormod(T x, T y)
{
  T r = fmod(x, y);
  return r != (T)0 && ((y < (T)0) != (r < (T)0)) ? r + y : r;
}

/* out[i] = EXPR of x = a and y = b (of type TI) at output element i's broadcast positions. */
#define CLG_BCAST_IO(name, TI, TO, EXPR)                                                         \
  __kernel void name(__global const TI *a, ulong ao, __global const TI *b, ulong bo,             \
                     __global TO *out, ulong oo, ulong n, clg_map m)                             \
  {                                                                                              \
    ulong i = get_global_id(0);                                                                  \
    if (i >= n)                                                                                  \
      return;                                                                                    \
    ulong ia = 0, ib = 0, r = i;                                                                 \
    for (int k = (int)m.rank - 1; k >= 0; k--) {                                                 \
      ulong d = r % m.dims[k];                                                                   \
      r /= m.dims[k];                                                                            \
      ia += d * m.sa[k];                                                                         \
      ib += d * m.sb[k];                                                                         \
    }                                                                                            \
    TI x = a[ao + ia], y = b[bo + ib];                                                           \
    out[oo + i] = EXPR;                                                                          \
  }
/* The float ops, on the program's T. */
#define CLG_BCAST(name, TO, EXPR) CLG_BCAST_IO(name, T, TO, EXPR)

CLG_BCAST(clg_bc_add, T, x + y)
CLG_BCAST(clg_bc_sub, T, x - y)
CLG_BCAST(clg_bc_mul, T, x * y)
CLG_BCAST(clg_bc_div, T, x / y)
CLG_BCAST(clg_bc_max, T, x < y ? y : x)
CLG_BCAST(clg_bc_equal, uchar, x == y ? 1 : 0)
CLG_BCAST(clg_bc_ge, uchar, x >= y ? 1 : 0)
CLG_BCAST(clg_bc_min, T, y < x ? y : x)
CLG_BCAST(clg_bc_prelu, T, x < (T)0 ? y * x : x)
/* TensorFlow's FloorDiv and FloorMod on floats: floor of the rounded quotient; fmod moved to
 * y's sign when the two differ (Python's %). */
CLG_BCAST(clg_bc_floordiv, T, floor(x / y))
CLG_BCAST(clg_bc_floormod, T, clg_floormod(x, y))
CLG_BCAST(clg_bc_less, uchar, x < y ? 1 : 0)
CLG_BCAST(clg_bc_greater, uchar, x > y ? 1 : 0)
CLG_BCAST(clg_bc_le, uchar, x <= y ? 1 : 0)
CLG_BCAST(clg_bc_ne, uchar, x != y ? 1 : 0)
CLG_BCAST(clg_bc_pow, T, pow(x, y))
CLG_BCAST(clg_bc_atan2, T, atan2(x, y))
/* SquaredDifference: the difference rounded to T, then squared (as TensorFlow's). */
CLG_BCAST(clg_bc_sqdiff, T, (x - y) * (x - y))

/* The comparisons on integers, Equal, NotEqual, LogicalAnd and LogicalOr on bool (the
 * program's T is then unused). */
#define CLG_BCAST_CMP(name, TI, OP) CLG_BCAST_IO(name, TI, uchar, x OP y ? 1 : 0)
CLG_BCAST_CMP(clg_bc_equal_i32, int, ==)
CLG_BCAST_CMP(clg_bc_equal_i64, long, ==)
CLG_BCAST_CMP(clg_bc_ge_i32, int, >=)
CLG_BCAST_CMP(clg_bc_ge_i64, long, >=)
CLG_BCAST_CMP(clg_bc_less_i32, int, <)
CLG_BCAST_CMP(clg_bc_less_i64, long, <)
CLG_BCAST_CMP(clg_bc_greater_i32, int, >)
CLG_BCAST_CMP(clg_bc_greater_i64, long, >)
CLG_BCAST_CMP(clg_bc_le_i32, int, <=)
CLG_BCAST_CMP(clg_bc_le_i64, long, <=)
CLG_BCAST_CMP(clg_bc_ne_i32, int, !=)
CLG_BCAST_CMP(clg_bc_ne_i64, long, !=)
CLG_BCAST_CMP(clg_bc_equal_u8, uchar, ==)
CLG_BCAST_CMP(clg_bc_ne_u8, uchar, !=)
CLG_BCAST_CMP(clg_bc_and, uchar, &&)
CLG_BCAST_CMP(clg_bc_or, uchar, ||)

/* SquaredDifference on integers, wrapping as TensorFlow's (unsigned: no signed overflow). */
#define CLG_BCAST_SQDIFF_INT(name, TI, TU)                                                       \
  CLG_BCAST_IO(name, TI, TI, (TI)(((TU)x - (TU)y) * ((TU)x - (TU)y)))
CLG_BCAST_SQDIFF_INT(clg_bc_sqdiff_i32, int, uint)
CLG_BCAST_SQDIFF_INT(clg_bc_sqdiff_i64, long, ulong)

/* out[i] = in[strided(i)] for elements of 1, 2, 4 or 8 bytes (Transpose of any dtype). */
#define CLG_GATHER(name, TE)                                                                     \
  __kernel void name(__global const TE *a, ulong ao, __global TE *out, ulong oo, ulong n,       \
                     clg_map m)                                                                  \
  {                                                                                              \
    ulong i = get_global_id(0);                                                                  \
    if (i >= n)                                                                                  \
      return;                                                                                    \
    ulong ia = 0, r = i;                                                                         \
    for (int k = (int)m.rank - 1; k >= 0; k--) {                                                 \
      ulong d = r % m.dims[k];                                                                   \
      r /= m.dims[k];                                                                            \
      ia += d * m.sa[k];                                                                         \
    }                                                                                            \
    out[oo + i] = a[ao + ia];                                                                    \
  }
CLG_GATHER(clg_gather1, uchar)
CLG_GATHER(clg_gather2, ushort)
CLG_GATHER(clg_gather4, uint)
CLG_GATHER(clg_gather8, ulong)
