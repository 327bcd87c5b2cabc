/* Einsum on OpenCL devices: the host's naive sum per output element (backends/host/einsum.c),
 * one work-item each, over the equation clg_einsum_spec resolves; the labels' sizes and each
 * operand's strides for them go to the kernel as two small tables (the output's labels and the
 * summed ones). */
#include <string.h>

#include "backends/opencl/opencl.h"

enum { LABELS_MAX = 16 }; /* distinct labels of two operands of at most 8 dims each */

typedef struct cl_labels {
  cl_long rank;
  cl_long dims[LABELS_MAX];
  cl_long s0[LABELS_MAX];
  cl_long s1[LABELS_MAX];
} cl_labels;

static const clg_cl_text source = {"einsum", NULL};

static void labels_of(const clg_einsum *e, size_t stride[2][CLG_EINSUM_LABELS], const int *lab,
                      int count, cl_labels *m)
{
  memset(m, 0, sizeof *m);
  m->rank = count;
  for (int k = 0; k < count; k++) {
    m->dims[k] = e->size[lab[k]];
    m->s0[k] = (cl_long)stride[0][lab[k]];
    m->s1[k] = (cl_long)stride[1][lab[k]];
  }
}

static clg_code einsum_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  clg_einsum e;
  clg_code code = clg_einsum_spec(n, &e);
  cl_ulong count = clg_out_count(&n->outs[0]);
  if (code != CLG_OK || count == 0)
    return code;
  if (e.sum_count > LABELS_MAX || e.out_rank > LABELS_MAX)
    return clg_node_error(n, CLG_INTERNAL, "Einsum with %d summed labels", e.sum_count);
  size_t stride[2][CLG_EINSUM_LABELS];
  memset(stride, 0, sizeof stride);
  for (int i = 0; i < e.nin; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    size_t s = 1;
    for (int k = x->rank - 1; k >= 0; k--) {
      int l = e.in_label[i][k];
      if (!(x->dims[k] == 1 && e.size[l] != 1)) /* a broadcast dim of 1 stays put */
        stride[i][l] += s;
      s *= (size_t)x->dims[k];
    }
  }
  cl_labels out, sum;
  labels_of(&e, stride, e.out_label, e.out_rank, &out);
  labels_of(&e, stride, e.sum_label, e.sum_count, &sum);
  cl_ulong nsum = 1;
  for (int k = 0; k < e.sum_count; k++)
    nsum *= (cl_ulong)e.size[e.sum_label[k]];
  clg_dtype dt = n->outs[0].dtype;
  size_t es = clg_dtype_size(dt);
  const clg_block *b1 = e.nin == 2 ? &c->in[1] : &c->in[0];
  cl_mem x0 = clg_cl_mem(&c->in[0]), x1 = clg_cl_mem(b1), ym = clg_cl_mem(&c->out[0]);
  cl_ulong xo0 = c->in[0].offset / es, xo1 = b1->offset / es, yo = c->out[0].offset / es;
  cl_uint two = e.nin == 2;
  clg_cl_arg args[] = {{sizeof x0, &x0},   {sizeof xo0, &xo0},    {sizeof x1, &x1},
                       {sizeof xo1, &xo1}, {sizeof ym, &ym},      {sizeof yo, &yo},
                       {sizeof out, &out}, {sizeof sum, &sum},    {sizeof nsum, &nsum},
                       {sizeof two, &two}, {sizeof count, &count}};
  return clg_cl_launch(c->dev, dt, &source, "clg_einsum", args, 11, (size_t)count);
}

static const clg_kernel_entry entries[] = {
    {&clg_op_Einsum, {CLG_KIND_OPENCL, clg_kernel_float_or_double, einsum_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_opencl_kernels_einsum, entries);
