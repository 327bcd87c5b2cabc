/* MaxPoolGrad, AvgPoolGrad, LRNGrad and BiasAddGrad on the host: pooling scatters each window
 * once; BiasAddGrad sums its rows in parts across the cores. */
#include <stdlib.h>

#include "backends/host/host.h"

/* Output 0 float or double, and inputs first..last of its dtype. */
static bool float_kernel(const clg_node *n, const clg_device *dev, int first, int last)
{
  clg_dtype t = n->outs[0].dtype;
  for (int i = first; i <= last; i++)
    if (clg_node_in(n, i)->dtype != t)
      return false;
  return clg_kernel_float_dtype(t, dev);
}

/* --- MaxPoolGrad, AvgPoolGrad -------------------------------------------------------------- */

static bool is_avg(const clg_node *n) { return n->def == &clg_op_AvgPoolGrad; }

static clg_code pool_host(const clg_kernel_ctx *c)
{
  clg_window g;
  clg_pool_grad_geometry(c->node, &g);
  bool avg = is_avg(c->node);
  clg_host_pool_grad(c->node->outs[0].dtype, avg, avg ? NULL : c->in[0].host,
                     c->in[avg ? 1 : 2].host, c->out[0].host, &g);
  return CLG_OK;
}

static bool pool_supports(const clg_node *n, const clg_device *dev)
{
  return is_avg(n) ? float_kernel(n, dev, 1, 1) : float_kernel(n, dev, 0, 2);
}

/* --- LRNGrad -------------------------------------------------------------------------------- */

static clg_code lrn_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  clg_lrn_params p = clg_lrn_params_of(c->node);
  clg_host_lrn_grad(x->dtype, c->in[0].host, c->in[1].host, c->in[2].host, c->out[0].host,
                    clg_out_count(x), x->dims[3], p.depth_radius, p.bias, p.alpha, p.beta);
  return CLG_OK;
}

/* --- BiasAddGrad ---------------------------------------------------------------------------- */

/* The rows split into parts (as many as the cores: each reads its own contiguous rows), each
 * summing its rows per channel in double, in row order; then the parts' sums added in part
 * order. The part count depends only on the thread count and the shape: the same result in
 * every run. */
typedef struct bias_job {
  const clg_kernel_ctx *c;
  size_t rows, k;
  int parts;
  double *part; /* [parts][k] */
} bias_job;

#define BIAS_LOOP(T)                                                                               \
  do {                                                                                             \
    const T *x = j->c->in[0].host;                                                                 \
    for (size_t r = r0; r < r1; r++) {                                                             \
      const T *row = x + r * j->k;                                                                 \
      for (size_t i = 0; i < j->k; i++)                                                            \
        acc[i] += row[i];                                                                          \
    }                                                                                              \
  } while (0)

static void bias_part(void *ctx, int t)
{
  const bias_job *j = ctx;
  size_t r0 = j->rows * (size_t)t / (size_t)j->parts;
  size_t r1 = j->rows * (size_t)(t + 1) / (size_t)j->parts;
  double *acc = j->part + (size_t)t * j->k;
  for (size_t i = 0; i < j->k; i++)
    acc[i] = 0;
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    BIAS_LOOP(double);
  else
    BIAS_LOOP(float);
}

static clg_code bias_host(const clg_kernel_ctx *c)
{
  const clg_out_desc *x = clg_node_in(c->node, 0);
  bias_job j = {c, 0, 0, 1, NULL};
  j.k = (size_t)x->dims[x->rank - 1];
  j.rows = j.k ? clg_out_count(x) / j.k : 0;
  if (j.k == 0)
    return CLG_OK;
  /* Split the rows only when they are many. */
  if (j.rows * j.k >= ((size_t)1 << 16))
    j.parts = clg_host_threads();
  if ((size_t)j.parts > j.rows)
    j.parts = j.rows > 0 ? (int)j.rows : 1;
  if (!(j.part = malloc(sizeof(double) * (size_t)j.parts * j.k)))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for BiasAddGrad's %d x %zu sums",
                     j.parts, j.k);
  clg_host_parallel(j.parts, bias_part, &j);
  bool f64 = c->node->outs[0].dtype == CLG_FLOAT64;
  for (size_t i = 0; i < j.k; i++) {
    double s = j.part[i];
    for (int t = 1; t < j.parts; t++)
      s += j.part[(size_t)t * j.k + i];
    if (f64)
      ((double *)c->out[0].host)[i] = s;
    else
      ((float *)c->out[0].host)[i] = (float)s;
  }
  free(j.part);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_MaxPoolGrad, {CLG_KIND_HOST, pool_supports, pool_host, NULL, NULL}},
    {&clg_op_AvgPoolGrad, {CLG_KIND_HOST, pool_supports, pool_host, NULL, NULL}},
    {&clg_op_LRNGrad, {CLG_KIND_HOST, clg_kernel_float_or_double, lrn_host, NULL, NULL}},
    {&clg_op_BiasAddGrad, {CLG_KIND_HOST, clg_kernel_float_or_double, bias_host, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_nn_grad, entries);
