/* Exp, Log, Sqrt, Rsqrt, Square, Floor, Neg on the host: libm's functions element-wise. */
#include <math.h>

#include "backends/host/host.h"

#define LOOP(T, EXP, LOG, SQRT, FLOOR)                                                             \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    T *y = c->out[0].host;                                                                         \
    switch (clg_unop_of(c->node)) {                                                                \
    case CLG_UNOP_EXP:                                                                             \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = EXP(x[i]);                                                                          \
      break;                                                                                       \
    case CLG_UNOP_LOG:                                                                             \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = LOG(x[i]);                                                                          \
      break;                                                                                       \
    case CLG_UNOP_SQRT:                                                                            \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = SQRT(x[i]);                                                                         \
      break;                                                                                       \
    case CLG_UNOP_SQUARE:                                                                          \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = x[i] * x[i];                                                                        \
      break;                                                                                       \
    case CLG_UNOP_FLOOR:                                                                           \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = FLOOR(x[i]);                                                                        \
      break;                                                                                       \
    case CLG_UNOP_NEG:                                                                             \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = -x[i];                                                                              \
      break;                                                                                       \
    default:                                                                                       \
      for (size_t i = 0; i < count; i++)                                                           \
        y[i] = (T)1 / SQRT(x[i]);                                                                  \
      break;                                                                                       \
    }                                                                                              \
  } while (0)

static clg_code math_run(const clg_kernel_ctx *c)
{
  size_t count = clg_out_count(&c->node->outs[0]);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double, exp, log, sqrt, floor);
  else
    LOOP(float, expf, logf, sqrtf, floorf);
  return CLG_OK;
}


static const clg_kernel_entry entries[] = {
    {&clg_op_Exp, {CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Log, {CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Sqrt, {CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Rsqrt, {CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Square, {CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Floor, {CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL}},
    {&clg_op_Neg, {CLG_KIND_HOST, clg_kernel_float_or_double, math_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_math, entries);
