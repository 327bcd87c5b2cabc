/* Element-wise kernels of clgraph. Built twice per context: for float, and with
 * -DCLG_DOUBLE for double on the devices that have cl_khr_fp64.
 *
 * Tensors arrive as (buffer, offset in elements): the engine sub-allocates large buffers
 * and never creates sub-buffers. One work-item per output element; the global size is
 * rounded up to the work-group size, hence the bounds check. */
#ifdef CLG_TEST_BUILD_ERROR /* lets tests see a real build failure and its log */
#error "clgraph test: build failure requested with -DCLG_TEST_BUILD_ERROR"
#endif

#ifdef CLG_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double T;
#else
typedef float T;
#endif

/* a_step and b_step are 1 for a full operand and 0 for a broadcast scalar. */
#define CLG_BINARY_KERNEL(name, OP)                                                              \
  __kernel void name(__global const T *a, ulong a_off, ulong a_step, __global const T *b,        \
                     ulong b_off, ulong b_step, __global T *out, ulong out_off, ulong count)     \
  {                                                                                              \
    ulong i = get_global_id(0);                                                                  \
    if (i < count)                                                                               \
      out[out_off + i] = a[a_off + i * a_step] OP b[b_off + i * b_step];                         \
  }

CLG_BINARY_KERNEL(clg_add, +)
CLG_BINARY_KERNEL(clg_sub, -)
CLG_BINARY_KERNEL(clg_mul, *)

/* out = x0 + x1 + ... + x(n-1) for 1 <= n <= 8, summed in input order. Unused inputs are
 * passed as x0 and never read. out may be one of the inputs. */
__kernel void clg_addn8(__global T *out, ulong out_off, ulong count, uint n,
                        __global const T *x0, ulong o0, __global const T *x1, ulong o1,
                        __global const T *x2, ulong o2, __global const T *x3, ulong o3,
                        __global const T *x4, ulong o4, __global const T *x5, ulong o5,
                        __global const T *x6, ulong o6, __global const T *x7, ulong o7)
{
  ulong i = get_global_id(0);
  if (i >= count)
    return;
  T s = x0[o0 + i];
  if (n > 1)
    s += x1[o1 + i];
  if (n > 2)
    s += x2[o2 + i];
  if (n > 3)
    s += x3[o3 + i];
  if (n > 4)
    s += x4[o4 + i];
  if (n > 5)
    s += x5[o5 + i];
  if (n > 6)
    s += x6[o6 + i];
  if (n > 7)
    s += x7[o7 + i];
  out[out_off + i] = s;
}
