/* LogicalAnd and LogicalOr (the broadcast walk on bytes), LogicalNot, IsNan and IsInf on the
 * host. */
#include <math.h>

#include "backends/host/host.h"

static clg_code logical_binary_run(const clg_kernel_ctx *c)
{
  clg_strided m;
  clg_binop_map(c->node, &m);
  clg_host_broadcast(clg_binop_of(c->node), CLG_BOOL, c->in[0].host, c->in[1].host, c->out[0].host,
                     &m);
  return CLG_OK;
}

#define TEST_LOOP(T, TEST)                                                                         \
  do {                                                                                             \
    const T *x = c->in[0].host;                                                                    \
    for (size_t i = 0; i < count; i++)                                                             \
      y[i] = TEST(x[i]) ? 1 : 0;                                                                   \
  } while (0)

static clg_code logical_unary_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t count = clg_out_count(&n->outs[0]);
  uint8_t *y = c->out[0].host;
  bool dbl = clg_node_in(n, 0)->dtype == CLG_FLOAT64;
  if (n->def == &clg_op_LogicalNot) {
    const uint8_t *x = c->in[0].host;
    for (size_t i = 0; i < count; i++)
      y[i] = !x[i];
  } else if (n->def == &clg_op_IsNan && dbl)
    TEST_LOOP(double, isnan);
  else if (n->def == &clg_op_IsNan)
    TEST_LOOP(float, isnan);
  else if (dbl)
    TEST_LOOP(double, isinf);
  else
    TEST_LOOP(float, isinf);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_LogicalAnd, {CLG_KIND_HOST, clg_logical_supports, logical_binary_run, NULL, NULL}},
    {&clg_op_LogicalOr, {CLG_KIND_HOST, clg_logical_supports, logical_binary_run, NULL, NULL}},
    {&clg_op_LogicalNot, {CLG_KIND_HOST, clg_logical_supports, logical_unary_run, NULL, NULL}},
    {&clg_op_IsNan, {CLG_KIND_HOST, clg_float_test_supports, logical_unary_run, NULL, NULL}},
    {&clg_op_IsInf, {CLG_KIND_HOST, clg_float_test_supports, logical_unary_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_logical, entries);
