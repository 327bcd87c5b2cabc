/* Assign, AssignAdd, AssignSub, ApplyGradientDescent and ApplyMomentum on the host: in
 * place on the variable's buffer (in[0], and ApplyMomentum's accum in[1]). AssignAdd also
 * counts in int32 and int64 (tf.train's global step). */
#include <string.h>

#include "backends/host/host.h"


static size_t count_of(const clg_kernel_ctx *c) { return clg_out_count(&c->node->outs[0]); }

static clg_code assign_run(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes && c->in[0].host != c->in[1].host)
    memmove(c->in[0].host, c->in[1].host, bytes);
  return CLG_OK;
}

#define LOOP(T, body)                                                                              \
  do {                                                                                             \
    T *v = c->in[0].host;                                                                          \
    for (size_t i = 0; i < count; i++)                                                             \
      body;                                                                                        \
  } while (0)

static clg_code assign_add_run(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  if (c->node->outs[0].dtype == CLG_INT64) /* a global step */
    LOOP(int64_t, v[i] += ((const int64_t *)c->in[1].host)[i]);
  else if (c->node->outs[0].dtype == CLG_INT32)
    LOOP(int32_t, v[i] += ((const int32_t *)c->in[1].host)[i]);
  else if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double, v[i] += ((const double *)c->in[1].host)[i]);
  else
    LOOP(float, v[i] += ((const float *)c->in[1].host)[i]);
  return CLG_OK;
}

static clg_code assign_sub_run(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    LOOP(double, v[i] -= ((const double *)c->in[1].host)[i]);
  else
    LOOP(float, v[i] -= ((const float *)c->in[1].host)[i]);
  return CLG_OK;
}

#define GD(T)                                                                                      \
  do {                                                                                             \
    T a = *(const T *)c->in[1].host;                                                               \
    const T *d = c->in[2].host;                                                                    \
    LOOP(T, v[i] -= a * d[i]);                                                                     \
  } while (0)

static clg_code apply_gd_run(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    GD(double);
  else
    GD(float);
  return CLG_OK;
}

#define MOMENTUM(T)                                                                                \
  do {                                                                                             \
    T *acc = c->in[1].host;                                                                        \
    T lr = *(const T *)c->in[2].host, m = *(const T *)c->in[4].host;                               \
    const T *g = c->in[3].host;                                                                    \
    if (nesterov)                                                                                  \
      LOOP(T, (acc[i] = acc[i] * m + g[i], v[i] -= g[i] * lr + acc[i] * m * lr));                  \
    else                                                                                           \
      LOOP(T, (acc[i] = acc[i] * m + g[i], v[i] -= lr * acc[i]));                                  \
  } while (0)

static clg_code apply_momentum_run(const clg_kernel_ctx *c)
{
  size_t count = count_of(c);
  bool nesterov = c->node->attrs[2].b;
  if (c->node->outs[0].dtype == CLG_FLOAT64)
    MOMENTUM(double);
  else
    MOMENTUM(float);
  return CLG_OK;
}

/* AssignAdd also counts in int32 and int64 on the host (tf.train's global step). */
static bool add_supports(const clg_node *n, const clg_device *dev)
{
  return clg_kernel_float_or_double(n, dev) ||
         ((n->outs[0].dtype == CLG_INT64 || n->outs[0].dtype == CLG_INT32) &&
          clg_node_all_dtype(n, n->outs[0].dtype) && n->def == &clg_op_AssignAdd);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Assign, {CLG_KIND_HOST, NULL, assign_run, NULL, NULL}},
    {&clg_op_AssignAdd, {CLG_KIND_HOST, add_supports, assign_add_run, NULL, NULL}},
    {&clg_op_AssignSub, {CLG_KIND_HOST, add_supports, assign_sub_run, NULL, NULL}},
    {&clg_op_ApplyGradientDescent, {CLG_KIND_HOST, add_supports, apply_gd_run, NULL, NULL}},
    {&clg_op_ApplyMomentum, {CLG_KIND_HOST, add_supports, apply_momentum_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_assign, entries);
