/* MatMul: [m,k] x [k,n] (after the optional transposes) for rank-2 inputs of one dtype.
 * Float, double and half; int32 and int64 wrapping (index arithmetic in tfjs graphs). Kernels:
 * backends/host/matmul.c (CBLAS or the portable GEMM; a plain loop for integers),
 * backends/opencl/matmul_kernels.c (CLBlast, with the host path on the device's data where
 * CLBlast cannot serve the device; a plain kernel for integers). */
#include "graph/graph.h"
#include "ops/ops.h"

enum { A_T, A_TRANSPOSE_A, A_TRANSPOSE_B };

static const clg_attr_def attrs[] = {
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "transpose_a", .type = CLG_ATTR_BOOL, .has_default = true},
    {.name = "transpose_b", .type = CLG_ATTR_BOOL, .has_default = true},
};

static clg_code infer(clg_node *n)
{
  char sa[192], sb[192];
  for (int i = 0; i < 2; i++) {
    const clg_out_desc *in = clg_node_in(n, i);
    if (in->rank != 2)
      return clg_node_error(
          n, CLG_INVALID_ARGUMENT, "input '%s' is rank %d %s; MatMul needs rank 2",
          n->inputs[i].node->name, in->rank, clg_out_shape_string(in, sa, sizeof sa));
  }
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1);
  if (a->dtype != b->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "dtypes differ: %s vs %s",
                          clg_dtype_name(a->dtype), clg_dtype_name(b->dtype));
  clg_attr_value *t = &n->attrs[A_T];
  if (t->set && t->dtype != a->dtype)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute T is %s but the inputs are %s",
                          clg_dtype_name(t->dtype), clg_dtype_name(a->dtype));
  t->set = true;
  t->dtype = a->dtype;
  bool ta = n->attrs[A_TRANSPOSE_A].b, tb = n->attrs[A_TRANSPOSE_B].b;
  /* The shapes as stored; the transposes only choose which dimension is inner. */
  if (a->dims[ta ? 0 : 1] != b->dims[tb ? 1 : 0])
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "inner dimensions differ: %s%s x %s%s",
                          clg_out_shape_string(a, sa, sizeof sa), ta ? " (transposed)" : "",
                          clg_out_shape_string(b, sb, sizeof sb), tb ? " (transposed)" : "");
  int64_t dims[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
  /* The checked path: [2^32,0] x [0,2^32] has too many elements. */
  return clg_node_set_output(n, 0, a->dtype, 2, dims);
}

void clg_matmul_dims(const clg_node *n, bool *ta, bool *tb, size_t *m, size_t *nn, size_t *k)
{
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1);
  *ta = n->attrs[A_TRANSPOSE_A].b, *tb = n->attrs[A_TRANSPOSE_B].b;
  *m = (size_t)(*ta ? a->dims[1] : a->dims[0]);
  *k = (size_t)(*ta ? a->dims[0] : a->dims[1]);
  *nn = (size_t)(*tb ? b->dims[0] : b->dims[1]);
}

/* TensorFlow's _MatMulGrad: the transposes ride on the flags, never on copies. */
static clg_code grad(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx)
{
  bool ta = n->attrs[A_TRANSPOSE_A].b, tb = n->attrs[A_TRANSPOSE_B].b;
  clg_output a = n->inputs[0], b = n->inputs[1], d = dy[0];
  struct {
    clg_output x, y;
    bool tx, ty;
  } da, db;
  if (!ta && !tb) {
    da.x = d, da.y = b, da.tx = false, da.ty = true;
    db.x = a, db.y = d, db.tx = true, db.ty = false;
  } else if (!ta && tb) {
    da.x = d, da.y = b, da.tx = false, da.ty = false;
    db.x = d, db.y = a, db.tx = true, db.ty = false;
  } else if (ta && !tb) {
    da.x = b, da.y = d, da.tx = false, da.ty = true;
    db.x = a, db.y = d, db.tx = false, db.ty = false;
  } else {
    da.x = b, da.y = d, da.tx = true, da.ty = true;
    db.x = d, db.y = a, db.tx = true, db.ty = true;
  }
  clg_attr at[2] = {clg_attr_bool("transpose_a", da.tx), clg_attr_bool("transpose_b", da.ty)};
  dx[0] = clg_grad_build(g, &clg_op_MatMul, 2, (clg_output[]){da.x, da.y}, 2, at);
  clg_attr bt[2] = {clg_attr_bool("transpose_a", db.tx), clg_attr_bool("transpose_b", db.ty)};
  dx[1] = clg_grad_build(g, &clg_op_MatMul, 2, (clg_output[]){db.x, db.y}, 2, bt);
  return clg_graph_status(g);
}

const clg_op_def clg_op_MatMul = {
    .name = "MatMul",
    .num_inputs = 2,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
    .grad = grad,
};

clg_node *clg_matmul(clg_graph *g, const char *name, clg_node *a, clg_node *b, bool transpose_a,
                     bool transpose_b)
{
  clg_output in[2] = {{a, 0}, {b, 0}};
  clg_attr at[2] = {clg_attr_bool("transpose_a", transpose_a),
                    clg_attr_bool("transpose_b", transpose_b)};
  return clg_graph_build(g, &clg_op_MatMul, name, 2, in, 2, at);
}
