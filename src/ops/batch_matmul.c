/* BatchMatMulV2: x [..., m, k] times y [..., k, n] (adj_x, adj_y: each matrix transposed;
 * real dtypes, so the adjoint is the transpose) for every batch of the broadcast batch dims
 * (numpy's rules over all dims but the last two), as tf.linalg.matmul. Float, double and
 * half, as MatMul; the gradient is TensorFlow's. Kernels: backends/host/batch_matmul.c and
 * backends/opencl/batch_matmul.c, each batch one GEMM of MatMul's path. */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_ADJ_X, A_ADJ_Y };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "adj_x", .type = CLG_ATTR_BOOL, .has_default = true},
    {.name = "adj_y", .type = CLG_ATTR_BOOL, .has_default = true},
};

/* The batch dims of input i padded on the left to rank r with ones. */
static void batch_dims(const clg_out_desc *d, int r, int64_t *dims)
{
  int pad = r - (d->rank - 2);
  for (int k = 0; k < r; k++)
    dims[k] = k < pad ? 1 : d->dims[k - pad];
}

static clg_code infer(clg_node *n)
{
  const clg_out_desc *x = clg_node_in(n, 0), *y = clg_node_in(n, 1);
  char sa[192], sb[192];
  for (int i = 0; i < 2; i++)
    if (clg_node_in(n, i)->rank < 2)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "In[%d] ndims must be >= 2: %d", i,
                            clg_node_in(n, i)->rank);
  if (x->dtype != y->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                          clg_dtype_name(x->dtype), clg_dtype_name(y->dtype));
  if (x->dtype != CLG_FLOAT32 && x->dtype != CLG_FLOAT64 && x->dtype != CLG_FLOAT16)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "BatchMatMulV2 takes float, double or half, not %s",
                          clg_dtype_name(x->dtype));
  clg_code code = clg_infer_dtype_attr(n, A_T, x->dtype, true);
  if (code != CLG_OK)
    return code;
  bool ta = n->attrs[A_ADJ_X].b, tb = n->attrs[A_ADJ_Y].b;
  int64_t m = x->dims[x->rank - (ta ? 1 : 2)], kx = x->dims[x->rank - (ta ? 2 : 1)];
  int64_t ky = y->dims[y->rank - (tb ? 1 : 2)], nn = y->dims[y->rank - (tb ? 2 : 1)];
  if (kx != ky)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Matrix size-incompatible: In[0]: %s%s, In[1]: %s%s",
                          clg_out_shape_string(x, sa, sizeof sa), ta ? " (adjoint)" : "",
                          clg_out_shape_string(y, sb, sizeof sb), tb ? " (adjoint)" : "");
  int r = (x->rank > y->rank ? x->rank : y->rank) - 2;
  int64_t bx[CLG_MAX_RANK], by[CLG_MAX_RANK], dims[CLG_MAX_RANK];
  batch_dims(x, r, bx);
  batch_dims(y, r, by);
  for (int k = 0; k < r; k++) {
    if (bx[k] != by[k] && bx[k] != 1 && by[k] != 1)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "In[0] and In[1] must have compatible batch dimensions: %s vs. %s",
                            clg_out_shape_string(x, sa, sizeof sa),
                            clg_out_shape_string(y, sb, sizeof sb));
    dims[k] = bx[k] == 1 ? by[k] : bx[k];
  }
  dims[r] = m;
  dims[r + 1] = nn;
  return clg_node_set_output(n, 0, x->dtype, r + 2, dims);
}

void clg_batch_matmul_geometry(const clg_node *n, clg_batch_matmul *g)
{
  const clg_out_desc *x = clg_node_in(n, 0), *y = clg_node_in(n, 1), *o = &n->outs[0];
  memset(g, 0, sizeof *g);
  g->ta = n->attrs[A_ADJ_X].b;
  g->tb = n->attrs[A_ADJ_Y].b;
  g->m = (size_t)o->dims[o->rank - 2];
  g->n = (size_t)o->dims[o->rank - 1];
  g->k = (size_t)x->dims[x->rank - (g->ta ? 2 : 1)];
  g->rank = o->rank - 2;
  int64_t bx[CLG_MAX_RANK], by[CLG_MAX_RANK];
  batch_dims(x, g->rank, bx);
  batch_dims(y, g->rank, by);
  /* Strides in matrices; a broadcast dim has stride 0. */
  size_t sx = 1, sy = 1;
  g->batches = 1;
  for (int k = g->rank - 1; k >= 0; k--) {
    g->dims[k] = (size_t)o->dims[k];
    g->sx[k] = bx[k] == 1 ? 0 : sx;
    g->sy[k] = by[k] == 1 ? 0 : sy;
    sx *= (size_t)bx[k];
    sy *= (size_t)by[k];
    g->batches *= g->dims[k];
  }
}

void clg_batch_matmul_batch(const clg_batch_matmul *g, size_t b, size_t *bx, size_t *by)
{
  *bx = *by = 0;
  for (int k = g->rank - 1; k >= 0; k--) {
    size_t i = b % g->dims[k];
    b /= g->dims[k];
    *bx += i * g->sx[k];
    *by += i * g->sy[k];
  }
}

static clg_output bmm(clg_graph *g, clg_output a, clg_output b, bool ax, bool ay)
{
  clg_attr at[2] = {clg_attr_bool("adj_x", ax), clg_attr_bool("adj_y", ay)};
  return clg_grad_build(g, &clg_op_BatchMatMulV2, 2, (clg_output[]){a, b}, 2, at);
}

/* d (the output's batch dims, then x's matrix dims) summed over the batch dims that x was
 * broadcast along and reshaped to x's shape. */
static clg_output unbroadcast(clg_graph *g, clg_output d, const clg_out_desc *x,
                              const clg_out_desc *out)
{
  int r = out->rank - 2;
  int64_t bx[CLG_MAX_RANK], axes[CLG_MAX_RANK];
  int naxes = 0;
  batch_dims(x, r, bx);
  for (int k = 0; k < r; k++)
    if (bx[k] != out->dims[k])
      axes[naxes++] = k;
  if (naxes)
    d = clg_grad_build(g, &clg_op_Sum, 2,
                       (clg_output[]){d, clg_out(clg_const_ints(g, naxes, axes), 0)}, 0, NULL);
  return clg_grad_build(g, &clg_op_Reshape, 2,
                        (clg_output[]){d, clg_out(clg_const_ints(g, x->rank, x->dims), 0)}, 0,
                        NULL);
}

/* TensorFlow's _BatchMatMulV2Grad: the products by the adjoint flags, then each summed over
 * the batch dims its input was broadcast along. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  bool ax = n->attrs[A_ADJ_X].b, ay = n->attrs[A_ADJ_Y].b;
  clg_output x = n->inputs[0], y = n->inputs[1], d = dy[0], gx, gy;
  if (!ax && !ay) {
    gx = bmm(g, d, y, false, true);
    gy = bmm(g, x, d, true, false);
  } else if (!ax) {
    gx = bmm(g, d, y, false, false);
    gy = bmm(g, d, x, true, false);
  } else if (!ay) {
    gx = bmm(g, y, d, false, true);
    gy = bmm(g, x, d, false, false);
  } else {
    gx = bmm(g, y, d, true, true);
    gy = bmm(g, d, x, true, true);
  }
  dx[0] = unbroadcast(g, gx, clg_node_in(n, 0), &n->outs[0]);
  dx[1] = unbroadcast(g, gy, clg_node_in(n, 1), &n->outs[0]);
  return clg_graph_status(g);
}

const clg_op_def clg_op_BatchMatMulV2 = {
    .name = "BatchMatMulV2",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .grad = grad,
};
