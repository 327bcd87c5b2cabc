/* MatMul: [m,k] x [k,n] (after the optional transposes) for rank-2 inputs of one dtype.
 * Host: CBLAS or the portable GEMM (half through float). OpenCL: CLBlast, with the host
 * path on the device's data when CLBlast cannot serve the device (no fp64/fp16, a
 * compiler error), warned once per device and reason. */
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph.h"
#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "memory/memory.h"

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

/* op(a) is [m,k], op(b) is [k,n]. */
static void dims_of(const clg_node *n, size_t *m, size_t *nn, size_t *k)
{
  const clg_out_desc *a = clg_node_in(n, 0), *b = clg_node_in(n, 1);
  bool ta = n->attrs[A_TRANSPOSE_A].b, tb = n->attrs[A_TRANSPOSE_B].b;
  *m = (size_t)(ta ? a->dims[1] : a->dims[0]);
  *k = (size_t)(ta ? a->dims[0] : a->dims[1]);
  *nn = (size_t)(tb ? b->dims[0] : b->dims[1]);
}

static clg_code host_gemm(const clg_node *n, const void *a, const void *b, void *c)
{
  size_t m, nn, k;
  dims_of(n, &m, &nn, &k);
  bool ta = n->attrs[A_TRANSPOSE_A].b, tb = n->attrs[A_TRANSPOSE_B].b;
  if (n->outs[0].dtype == CLG_FLOAT16) {
    if (clg_host_matmul_half(ta, tb, m, nn, k, a, b, c) != CLG_OK)
      return clg_error_prefix("MatMul '%s': ", n->name);
    return CLG_OK;
  }
  clg_host_matmul(n->outs[0].dtype, ta, tb, m, nn, k, a, b, c);
  return CLG_OK;
}

static clg_code host_run(const clg_kernel_ctx *c)
{
  return host_gemm(c->node, c->in[0].host, c->in[1].host, c->out[0].host);
}

/* The host path for a device CLBlast cannot serve: inputs down, result up. */
static clg_code cl_on_host(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t ab = clg_node_out_bytes(n->inputs[0].node, n->inputs[0].index);
  size_t bb = clg_node_out_bytes(n->inputs[1].node, n->inputs[1].index);
  size_t cb = clg_node_out_bytes(n, 0);
  void *a = malloc(ab ? ab : 1), *b = malloc(bb ? bb : 1), *out = malloc(cb ? cb : 1);
  clg_code code = CLG_OK;
  if (!a || !b || !out)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the host fallback of '%s'",
                     n->name);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, c->in[0].mem, c->in[0].offset, a, ab);
  if (code == CLG_OK)
    code = clg_device_download(c->dev, c->in[1].mem, c->in[1].offset, b, bb);
  if (code == CLG_OK)
    code = host_gemm(n, a, b, out);
  if (code == CLG_OK)
    code = clg_device_upload(c->dev, c->out[0].mem, c->out[0].offset, out, cb);
  free(a);
  free(b);
  free(out);
  return code;
}

static clg_code cl_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t m, nn, k;
  dims_of(n, &m, &nn, &k);
  const char *why = NULL;
  clg_code code =
      clg_cl_matmul(c->dev, c->alloc, c->scratch, n->outs[0].dtype, n->attrs[A_TRANSPOSE_A].b,
                    n->attrs[A_TRANSPOSE_B].b, m, nn, k, &c->in[0], &c->in[1], &c->out[0], &why);
  if (code != CLG_UNIMPLEMENTED)
    return code;
  char msg[1024];
  snprintf(msg, sizeof msg, "MatMul on %s runs on the host instead: %s", c->dev->info.full_name,
           clg_last_error());
  /* Keyed on the reason, not on which routine met it: a device without fp16 refuses both
   * the direct Hgemm and the indirect HgemmWithTempBuffer. */
  if (c->warn_once)
    c->warn_once(c->warn_ctx, c->device_index, why ? why : clg_last_error(), msg);
  return cl_on_host(c);
}

/* CLBlast decides at run time (no fp64/fp16, a compiler error); when it cannot, the host
 * path runs with the device's data. Refusing here instead would hide such devices from the
 * placer for a case the fallback covers. */
static bool host_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  return clg_node_all_dtype(n, CLG_FLOAT32) || clg_node_all_dtype(n, CLG_FLOAT64) ||
         clg_node_all_dtype(n, CLG_FLOAT16);
}

static bool cl_supports(const clg_node *n, const clg_device *dev)
{
  return host_supports(n, dev) && clg_kernels_have_clblast();
}

static clg_code cl_warm(const clg_node *n, clg_device *dev)
{
  clg_code code = clg_cl_warm_matmul(dev, n->outs[0].dtype);
  return code == CLG_UNIMPLEMENTED ? CLG_OK : code; /* the host fallback needs no warming */
}

static clg_code cl_scratch(const clg_node *n, clg_device *dev, size_t *bytes)
{
  size_t m, nn, k;
  dims_of(n, &m, &nn, &k);
  return clg_cl_matmul_scratch(dev, n->outs[0].dtype, n->attrs[A_TRANSPOSE_A].b,
                               n->attrs[A_TRANSPOSE_B].b, m, nn, k, bytes);
}

static const clg_kernel_def kernels[] = {
    {CLG_KIND_HOST, host_supports, host_run, NULL, NULL},
    {CLG_KIND_OPENCL, cl_supports, cl_run, cl_scratch, cl_warm}};

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
    .kernels = kernels,
    .num_kernels = 2,
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
