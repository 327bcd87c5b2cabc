/* Einsum (src/backends/opencl/einsum.c), one work-item per output element: the sum over every
 * value of the summed labels of the product of the operands' elements, in the host's order
 * (backends/host/einsum.c) and, where the device has fp64, in double as the host, so the
 * same result. A label's strides per operand add a repeated label's axes (the diagonal) and
 * are 0 for a broadcast dim of 1. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif
#pragma OPENCL FP_CONTRACT OFF
typedef struct {
  long rank;
  long dims[16];
  long s0[16];
  long s1[16];
} clg_labels;

/* The operands' offsets of the labels' values numbered i (row-major over m's dims), added. */
static void label_offsets(const clg_labels *m, ulong i, ulong *o0, ulong *o1)
{
  for (long k = m->rank - 1; k >= 0; k--) {
    ulong d = (ulong)m->dims[k], v = i % d;
    i /= d;
    *o0 += v * (ulong)m->s0[k];
    *o1 += v * (ulong)m->s1[k];
  }
}

__kernel void clg_einsum(__global const T *x0, ulong xo0, __global const T *x1, ulong xo1,
                         __global T *y, ulong yo, clg_labels out, clg_labels sum, ulong nsum,
                         uint two, ulong n)
{
  ulong o = get_global_id(0);
  if (o >= n)
    return;
  ulong b0 = 0, b1 = 0;
  label_offsets(&out, o, &b0, &b1);
  acc_t acc = 0;
  for (ulong s = 0; s < nsum; s++) {
    ulong o0 = b0, o1 = b1;
    label_offsets(&sum, s, &o0, &o1);
    acc += two ? (acc_t)x0[xo0 + o0] * (acc_t)x1[xo1 + o1] : (acc_t)x0[xo0 + o0];
  }
  y[yo + o] = (T)acc;
}
