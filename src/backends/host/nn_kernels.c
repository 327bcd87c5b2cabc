/* BiasAdd, MaxPool, AvgPool and LRN on the host (the computations in nn.c). */
#include "backends/host/host.h"

/* --- BiasAdd ------------------------------------------------------------------------------ */

/* Rows split across the cores, each row plus the bias (a loop that vectorises; the output may
 * be the input: each element is read, then written, by one thread). */
typedef struct bias_job {
  const clg_kernel_ctx *c;
  size_t k;
} bias_job;

#define BIAS_ROWS(T)                                                                               \
  do {                                                                                             \
    const T *x = j->c->in[0].host, *b = j->c->in[1].host;                                          \
    T *y = j->c->out[0].host;                                                                      \
    for (size_t r = r0; r < r1; r++)                                                               \
      for (size_t i = 0; i < j->k; i++)                                                            \
        y[r * j->k + i] = x[r * j->k + i] + b[i];                                                  \
  } while (0)

static void bias_rows(void *ctx, size_t r0, size_t r1)
{
  const bias_job *j = ctx;
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    BIAS_ROWS(double);
  else
    BIAS_ROWS(float);
}

static clg_code bias_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  bias_job j = {c, (size_t)x->dims[x->rank - 1]};
  if (j.k == 0)
    return CLG_OK;
  size_t rows = clg_out_count(x) / j.k;
  clg_host_parallel_for(rows, ((size_t)1 << 14) / j.k + 1, bias_rows, &j);
  return CLG_OK;
}

/* --- MaxPool, AvgPool, LRN ------------------------------------------------------------------ */

static clg_code pool_host(const clg_kernel_ctx *c)
{
  clg_window g;
  clg_pool_geometry(c->node, &g);
  clg_host_pool(c->node->outs[0].dtype, c->node->def == &clg_op_AvgPool, c->in[0].host,
                c->out[0].host, &g);
  return CLG_OK;
}

static clg_code lrn_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  clg_lrn_params p = clg_lrn_params_of(c->node);
  clg_host_lrn(x->dtype, c->in[0].host, c->out[0].host, clg_out_count(x), x->dims[3],
               p.depth_radius, p.bias, p.alpha, p.beta);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_BiasAdd, {CLG_KIND_HOST, clg_kernel_float_or_double, bias_host, NULL, NULL}},
    {&clg_op_MaxPool, {CLG_KIND_HOST, clg_kernel_float_or_double, pool_host, NULL, NULL}},
    {&clg_op_AvgPool, {CLG_KIND_HOST, clg_kernel_float_or_double, pool_host, NULL, NULL}},
    {&clg_op_LRN, {CLG_KIND_HOST, clg_kernel_float_or_double, lrn_host, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_nn, entries);
