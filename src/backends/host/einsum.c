/* Einsum on the host: for each output element, the sum in double over every value of the
 * summed labels of the product of the operands' elements, each operand's offset the sum of
 * its labels' values times its strides for them (a repeated label adds its axes' strides:
 * the diagonal; a broadcast dim of 1 has stride 0). */
#include <string.h>

#include "backends/host/host.h"

typedef struct einsum_job {
  const clg_kernel_ctx *c;
  clg_einsum e;
  size_t stride[2][CLG_EINSUM_LABELS]; /* per operand and label */
  size_t nsum;
} einsum_job;

/* Operand offsets of the labels' values in v (of labels lab[0..n)) from index i. */
static void add_offsets(const einsum_job *j, const int *lab, int n, size_t i, size_t *off)
{
  for (int k = n - 1; k >= 0; k--) {
    size_t d = (size_t)j->e.size[lab[k]], v = i % d;
    i /= d;
    for (int o = 0; o < j->e.nin; o++)
      off[o] += v * j->stride[o][lab[k]];
  }
}

#define EINSUM(T)                                                                                  \
  do {                                                                                             \
    const T *x0 = j->c->in[0].host;                                                                \
    const T *x1 = j->e.nin == 2 ? (const T *)j->c->in[1].host : NULL;                              \
    T *y = j->c->out[0].host;                                                                      \
    for (size_t o = begin; o < end; o++) {                                                         \
      size_t base[2] = {0, 0};                                                                     \
      add_offsets(j, j->e.out_label, j->e.out_rank, o, base);                                      \
      double acc = 0;                                                                              \
      for (size_t s = 0; s < j->nsum; s++) {                                                       \
        size_t off[2] = {base[0], base[1]};                                                        \
        add_offsets(j, j->e.sum_label, j->e.sum_count, s, off);                                    \
        acc += x1 ? (double)x0[off[0]] * (double)x1[off[1]] : (double)x0[off[0]];                  \
      }                                                                                            \
      y[o] = (T)acc;                                                                               \
    }                                                                                              \
  } while (0)

static void einsum_range(void *ctx, size_t begin, size_t end)
{
  const einsum_job *j = ctx;
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    EINSUM(double);
  else
    EINSUM(float);
}

static clg_code einsum_run(const clg_kernel_ctx *c)
{
  einsum_job j;
  j.c = c;
  clg_code code = clg_einsum_spec(c->node, &j.e);
  if (code != CLG_OK)
    return code;
  size_t nout = clg_out_count(&c->node->outs[0]);
  if (nout == 0)
    return CLG_OK;
  memset(j.stride, 0, sizeof j.stride);
  for (int i = 0; i < j.e.nin; i++) {
    const clg_out_desc *x = clg_node_in(c->node, i);
    size_t s = 1;
    for (int k = x->rank - 1; k >= 0; k--) {
      int l = j.e.in_label[i][k];
      if (!(x->dims[k] == 1 && j.e.size[l] != 1))
        j.stride[i][l] += s;
      s *= (size_t)x->dims[k];
    }
  }
  j.nsum = 1;
  for (int k = 0; k < j.e.sum_count; k++)
    j.nsum *= (size_t)j.e.size[j.e.sum_label[k]];
  clg_host_parallel_for(nout, j.nsum >= 4096 ? 1 : 4096 / (j.nsum + 1) + 1, einsum_range, &j);
  return CLG_OK;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Einsum, {CLG_KIND_HOST, NULL, einsum_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_einsum, entries);
