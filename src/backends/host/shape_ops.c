/* Reshape and Transpose on the host, for any dtype: Reshape copies unless its output reuses
 * the input's buffer; Transpose gathers through its strided map, or by tiles where the input's
 * contiguous dim is not the output's last. */
#include <stdint.h>
#include <string.h>

#include "backends/host/host.h"

static clg_code reshape_host(const clg_kernel_ctx *c)
{
  size_t bytes = clg_node_out_bytes(c->node, 0);
  if (bytes && c->out[0].host != c->in[0].host)
    memcpy(c->out[0].host, c->in[0].host, bytes);
  return CLG_OK;
}

/* A Transpose whose last two merged output dims [P, Q] read input strides [1, s] (NCHW to
 * NHWC at a model's edge: [C, H*W] to [H*W, C]) in tiles of TP x TQ, which keep both the rows
 * read and the rows written in cache, instead of the gather's element walk with an inner loop
 * of Q strided elements; tiles of P are split across the cores. */
#define TP 64
#define TQ 16

typedef struct tile_job {
  size_t es;
  const char *x;
  char *y;
  const clg_strided *m;
  size_t P, Q, s, ptiles;
} tile_job;

#define TILE(T)                                                                                    \
  do {                                                                                             \
    const T *xs = (const T *)j->x + xo;                                                            \
    T *ys = (T *)j->y + yo;                                                                        \
    for (size_t q0 = 0; q0 < j->Q; q0 += TQ) {                                                     \
      size_t q1 = q0 + TQ < j->Q ? q0 + TQ : j->Q;                                                 \
      for (size_t q = q0; q < q1; q++)                                                             \
        for (size_t p = p0; p < p1; p++)                                                           \
          ys[p * j->Q + q] = xs[q * j->s + p];                                                     \
    }                                                                                              \
  } while (0)

static void tile_range(void *ctx, size_t u0, size_t u1)
{
  const tile_job *j = ctx;
  for (size_t u = u0; u < u1; u++) {
    size_t outer = u / j->ptiles, p0 = u % j->ptiles * TP;
    size_t p1 = p0 + TP < j->P ? p0 + TP : j->P;
    size_t yo = outer * j->P * j->Q, xo = clg_strided_offset(j->m, yo);
    if (j->es == 4)
      TILE(uint32_t);
    else if (j->es == 8)
      TILE(uint64_t);
    else if (j->es == 2)
      TILE(uint16_t);
    else
      TILE(uint8_t);
  }
}

static clg_code transpose_host(const clg_kernel_ctx *c)
{
  clg_strided m;
  clg_transpose_map(c->node, &m);
  size_t es = clg_dtype_size(c->node->outs[0].dtype);
  int r = m.rank;
  if (r < 2 || m.sa[r - 2] != 1 || m.sa[r - 1] == 1 || clg_strided_count(&m) == 0) {
    clg_host_gather(es, c->in[0].host, c->out[0].host, &m);
    return CLG_OK;
  }
  tile_job j = {es,
                c->in[0].host,
                c->out[0].host,
                &m,
                m.dims[r - 2],
                m.dims[r - 1],
                m.sa[r - 1],
                (m.dims[r - 2] + TP - 1) / TP};
  size_t units = clg_strided_count(&m) / (j.P * j.Q) * j.ptiles;
  /* Tiles of some 32 KiB a range at least. */
  size_t grain = ((size_t)32 << 10) / (TP * j.Q * es) + 1;
  clg_host_parallel_for(units, grain, tile_range, &j);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Reshape, {CLG_KIND_HOST, NULL, reshape_host, NULL, NULL}},
    {&clg_op_Transpose, {CLG_KIND_HOST, NULL, transpose_host, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_shape_ops, entries);
