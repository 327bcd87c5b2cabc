/* SpaceToBatchND and BatchToSpaceND (issue 23: rvm's dilated convolutions) on CPU:0 and on the
 * PoCL stand-in GPUs: TensorFlow's documented examples worked by hand, then random shapes
 * (1 to 3 block dims, padding, crops, trailing dims, several dtypes) against a naive
 * reference that reads each output element from the definition (an index formula per
 * element, not the kernels' per-block copies), the gradients of both against the adjoint of
 * that formula, and bad block_shape, paddings and crops refused with TensorFlow's errors. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static clg_session_options session_opt;

#define EXPECT_ERROR(g, node, text) clg_test_expect_error(g, node, text, __LINE__)

typedef struct sb_case {
  bool s2b;  /* SpaceToBatchND, else BatchToSpaceND */
  bool grad; /* the gradient of the op for x, fed dy as in[1] */
  int m;
  int64_t block[4];
  int64_t pad[8]; /* paddings or crops, [m, 2] */
  bool pad64;     /* paddings as int64 */
} sb_case;

static clg_node *ints_const(clg_graph *g, clg_dtype dt, int rank, const int64_t *dims, int n,
                            const int64_t *v)
{
  double d[16];
  for (int i = 0; i < n; i++)
    d[i] = (double)v[i];
  clg_tensor *t = clg_test_tensor(dt, rank, dims, d);
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

static clg_node *build_sb(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const sb_case *c = ctx;
  clg_node *bs = ints_const(g, CLG_INT32, 1, (int64_t[]){c->m}, c->m, c->block);
  clg_node *pd =
      ints_const(g, c->pad64 ? CLG_INT64 : CLG_INT32, 2, (int64_t[]){c->m, 2}, 2 * c->m, c->pad);
  clg_node *y = c->s2b ? clg_space_to_batch_nd(g, NULL, in[0], bs, pd)
                       : clg_batch_to_space_nd(g, NULL, in[0], bs, pd);
  if (!c->grad)
    return y;
  clg_output ys = {y, 0}, dy = {in[1], 0}, xs = {in[0], 0}, dx = {NULL, 0};
  if (clg_gradients(g, 1, &ys, &dy, 1, &xs, NULL, &dx) != CLG_OK)
    return NULL;
  return dx.node;
}

/* Row-major offset of idx in dims. */
static size_t offset_of(int rank, const int64_t *dims, const int64_t *idx)
{
  size_t o = 0;
  for (int k = 0; k < rank; k++)
    o = o * (size_t)dims[k] + (size_t)idx[k];
  return o;
}

static void unravel(size_t i, int rank, const int64_t *dims, int64_t *idx)
{
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = (int64_t)(i % (size_t)dims[k]);
    i /= (size_t)dims[k];
  }
}

/* The shape of the batch side ([batch * blocks, padded / block, rest]) from the space side's. */
static void batch_shape(const sb_case *c, int rank, const int64_t *space, int64_t *batch,
                        bool padded)
{
  int64_t blocks = 1;
  for (int k = 0; k < c->m; k++)
    blocks *= c->block[k];
  memcpy(batch, space, sizeof(int64_t) * (size_t)rank);
  batch[0] = space[0] * blocks;
  for (int k = 0; k < c->m; k++)
    batch[k + 1] = (space[k + 1] + (padded ? c->pad[2 * k] + c->pad[2 * k + 1] : 0)) / c->block[k];
}

/* For batch-side element bi (shape bdims) the space-side element it holds (shape sdims), or
 * -1 for padding (cropped away): TensorFlow's definition, position o * block + f - before. */
static long space_source(const sb_case *c, int rank, const int64_t *bdims, const int64_t *sdims,
                         size_t bi)
{
  int64_t idx[8], sidx[8];
  unravel(bi, rank, bdims, idx);
  int64_t blk = idx[0] / sdims[0], off[4];
  for (int k = c->m - 1; k >= 0; k--) {
    off[k] = blk % c->block[k];
    blk /= c->block[k];
  }
  memcpy(sidx, idx, sizeof sidx);
  sidx[0] = idx[0] % sdims[0];
  for (int k = 0; k < c->m; k++) {
    sidx[k + 1] = idx[k + 1] * c->block[k] + off[k] - c->pad[2 * k];
    if (sidx[k + 1] < 0 || sidx[k + 1] >= sdims[k + 1])
      return -1;
  }
  return (long)offset_of(rank, sdims, sidx);
}

/* Runs case c on x of dtype dt and shape dims (the op's input) and checks both devices against
 * the reference: forward, or (grad) the adjoint applied to a random dy. */
static void check_case(const char *what, const sb_case *c, clg_dtype dt, int rank,
                       const int64_t *dims)
{
  int64_t sdims[8], bdims[8];
  if (c->s2b) {
    memcpy(sdims, dims, sizeof(int64_t) * (size_t)rank);
    batch_shape(c, rank, sdims, bdims, true);
  } else {
    /* dims is the batch side; the space side is the cropped whole */
    memcpy(bdims, dims, sizeof(int64_t) * (size_t)rank);
    int64_t blocks = 1;
    for (int k = 0; k < c->m; k++)
      blocks *= c->block[k];
    memcpy(sdims, dims, sizeof(int64_t) * (size_t)rank);
    sdims[0] = dims[0] / blocks;
    for (int k = 0; k < c->m; k++)
      sdims[k + 1] = dims[k + 1] * c->block[k] - c->pad[2 * k] - c->pad[2 * k + 1];
  }
  const int64_t *ydims = c->s2b ? bdims : sdims;
  size_t nx = clg_test_count(rank, dims), ny = clg_test_count(rank, ydims);
  size_t nb = clg_test_count(rank, bdims);
  double *xv = malloc(sizeof(double) * nx), *dyv = malloc(sizeof(double) * (ny ? ny : 1));
  double *want = calloc(c->grad ? nx : ny, sizeof(double));
  for (size_t i = 0; i < nx; i++)
    xv[i] = (double)(clg_test_rand() % 200); /* uint8 too */
  for (size_t i = 0; i < ny; i++)
    dyv[i] = (double)(clg_test_rand() % 200) - 100;
  /* Every batch-side element and its space-side source: forward copies one way, the
   * gradient sums the other (each source is read at most once, so sums are exact). */
  for (size_t bi = 0; bi < nb; bi++) {
    long si = space_source(c, rank, bdims, sdims, bi);
    if (si < 0)
      continue;
    if (!c->grad)
      want[c->s2b ? bi : (size_t)si] = xv[c->s2b ? (size_t)si : bi];
    else
      want[c->s2b ? (size_t)si : bi] += dyv[c->s2b ? bi : (size_t)si];
  }
  clg_tensor *in[2] = {clg_test_tensor(dt, rank, dims, xv), clg_test_tensor(dt, rank, ydims, dyv)};
  clg_tensor *out[2] = {NULL, NULL};
  char err[1024];
  clg_code code =
      clg_test_run_both(&session_opt, c->grad ? 2 : 1, in, build_sb, c, 0, out, err, sizeof err);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
  if (code == CLG_OK)
    for (int d = 0; d < 2; d++)
      clg_test_check_values(out[d], dt, rank, c->grad ? dims : ydims, want, 0, 0, false, what,
                            d ? "GPU" : "CPU:0");
  clg_tensor_free(out[0]);
  clg_tensor_free(out[1]);
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
  free(xv);
  free(dyv);
  free(want);
}

/* One documented case, values given: x of shape xd, output of shape yd. */
static void doc_case(const char *what, const sb_case *c, const int64_t *xd, const double *xv,
                     const int64_t *yd, const double *yv)
{
  clg_tensor *x = clg_test_tensor(CLG_FLOAT32, 4, xd, xv);
  clg_tensor *out[2] = {NULL, NULL};
  char err[1024];
  clg_code code = clg_test_run_both(&session_opt, 1, &x, build_sb, c, 0, out, err, sizeof err);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
  if (code == CLG_OK)
    for (int d = 0; d < 2; d++)
      clg_test_check_values(out[d], CLG_FLOAT32, 4, yd, yv, 0, 0, false, what, d ? "GPU" : "CPU:0");
  clg_tensor_free(out[0]);
  clg_tensor_free(out[1]);
  clg_tensor_free(x);
}

/* TensorFlow's documented examples of tf.space_to_batch_nd (and, read backwards, of
 * tf.batch_to_space_nd). */
static void test_documented(void)
{
  sb_case s = {true, false, 2, {2, 2}, {0, 0, 0, 0}, false};
  sb_case b = s;
  b.s2b = false;
  double v16[16];
  for (int i = 0; i < 16; i++)
    v16[i] = i + 1;
  doc_case("S2B [1,2,2,1]", &s, (int64_t[]){1, 2, 2, 1}, v16, (int64_t[]){4, 1, 1, 1}, v16);
  doc_case("B2S [4,1,1,1]", &b, (int64_t[]){4, 1, 1, 1}, v16, (int64_t[]){1, 2, 2, 1}, v16);
  double y3[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  doc_case("S2B [1,2,2,3]", &s, (int64_t[]){1, 2, 2, 3}, y3, (int64_t[]){4, 1, 1, 3}, y3);
  const double y4[16] = {1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16};
  doc_case("S2B [1,4,4,1]", &s, (int64_t[]){1, 4, 4, 1}, v16, (int64_t[]){4, 2, 2, 1}, y4);
  doc_case("B2S [4,2,2,1]", &b, (int64_t[]){4, 2, 2, 1}, y4, (int64_t[]){1, 4, 4, 1}, v16);
  /* x [2,2,4,1], paddings [[0,0],[2,0]] */
  sb_case p = {true, false, 2, {2, 2}, {0, 0, 2, 0}, false};
  const double y5[24] = {0, 1, 3, 0, 9,  11, 0, 2, 4, 0, 10, 12,
                         0, 5, 7, 0, 13, 15, 0, 6, 8, 0, 14, 16};
  doc_case("S2B [2,2,4,1] padded", &p, (int64_t[]){2, 2, 4, 1}, v16, (int64_t[]){8, 1, 3, 1}, y5);
  p.s2b = false; /* and back, cropping the padding */
  doc_case("B2S [8,1,3,1] cropped", &p, (int64_t[]){8, 1, 3, 1}, y5, (int64_t[]){2, 2, 4, 1}, v16);
}

static void test_random(void)
{
  static const clg_dtype types[] = {CLG_FLOAT32, CLG_INT32, CLG_FLOAT64, CLG_INT64};
  char what[160];
  for (int t = 0; t < 24; t++) {
    sb_case c;
    memset(&c, 0, sizeof c);
    c.s2b = t % 2 == 0;
    c.grad = t >= 16;
    c.m = 1 + (int)(clg_test_rand() % 3);
    c.pad64 = t % 3 == 0;
    int rest = (int)(clg_test_rand() % 3), rank = 1 + c.m + rest;
    int64_t dims[8];
    dims[0] = 1 + (int64_t)(clg_test_rand() % 3);
    for (int k = 0; k < c.m; k++) {
      c.block[k] = 1 + (int64_t)(clg_test_rand() % 3);
      int64_t o = 1 + (int64_t)(clg_test_rand() % 3); /* batch-side size */
      int64_t extra = (int64_t)(clg_test_rand() % 4);
      c.pad[2 * k] = (int64_t)(clg_test_rand() % (uint64_t)(extra + 1));
      c.pad[2 * k + 1] = extra - c.pad[2 * k];
      if (c.s2b) {
        int64_t whole = o * c.block[k]; /* padded size */
        if (extra >= whole)
          c.pad[2 * k] = c.pad[2 * k + 1] = 0, extra = 0;
        dims[k + 1] = whole - extra;
      } else {
        if (extra > o * c.block[k])
          c.pad[2 * k] = c.pad[2 * k + 1] = 0;
        dims[k + 1] = o;
      }
    }
    if (!c.s2b) {
      int64_t blocks = 1;
      for (int k = 0; k < c.m; k++)
        blocks *= c.block[k];
      dims[0] *= blocks;
    }
    for (int k = 0; k < rest; k++)
      dims[1 + c.m + k] = 1 + (int64_t)(clg_test_rand() % 3);
    clg_dtype dt = c.grad ? (t % 4 == 0 ? CLG_FLOAT64 : CLG_FLOAT32) : types[t % 4];
    snprintf(what, sizeof what, "%s%s m=%d rank %d case %d", c.grad ? "gradient of " : "",
             c.s2b ? "SpaceToBatchND" : "BatchToSpaceND", c.m, rank, t);
    check_case(what, &c, dt, rank, dims);
  }
  /* rvm's: [1,16,16,C] with block [2,2] and paddings [[2,2],[2,2]] (dilation 2, SAME) */
  sb_case r = {true, false, 2, {2, 2}, {2, 2, 2, 2}, false};
  check_case("rvm's SpaceToBatchND", &r, CLG_FLOAT32, 4, (int64_t[]){1, 16, 16, 5});
  r.s2b = false;
  r.pad[0] = r.pad[2] = 0;
  r.pad[1] = r.pad[3] = 0;
  check_case("rvm's BatchToSpaceND", &r, CLG_FLOAT32, 4, (int64_t[]){4, 8, 8, 5});
}

/* A graph with x [2,5,4,3] and op applied on block_shape bs and paddings pd (shapes given). */
static void expect_bad(bool s2b, int bs_rank, const int64_t *bs_dims, const int64_t *bs,
                       const int64_t *pd_dims, const int64_t *pd, const char *text)
{
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 4, (int64_t[]){2, 5, 4, 3});
  size_t nb = clg_test_count(bs_rank, bs_dims), np = clg_test_count(2, pd_dims);
  clg_node *b = ints_const(g, CLG_INT32, bs_rank, bs_dims, (int)nb, bs);
  clg_node *p = ints_const(g, CLG_INT32, 2, pd_dims, (int)np, pd);
  if (s2b)
    clg_space_to_batch_nd(g, "op", x, b, p);
  else
    clg_batch_to_space_nd(g, "op", x, b, p);
  EXPECT_ERROR(g, s2b ? "SpaceToBatchND 'op'" : "BatchToSpaceND 'op'", text);
}

static void test_errors(void)
{
  int64_t one[1] = {1}, two[1] = {2}, m2[2] = {2, 2}, m12[2] = {1, 2};
  expect_bad(true, 0, NULL, (int64_t[]){2}, (int64_t[]){1, 2}, (int64_t[]){0, 0},
             "block_shape rank should be 1 instead of 0");
  expect_bad(true, 1, (int64_t[]){4}, (int64_t[]){1, 1, 1, 1}, (int64_t[]){4, 2},
             (int64_t[]){0, 0, 0, 0, 0, 0, 0, 0}, "input rank should be >= 5 instead of 4");
  expect_bad(true, 1, two, m2, m12, (int64_t[]){0, 0},
             "paddings should have shape [2, 2] instead of [1,2]");
  expect_bad(false, 1, two, m2, (int64_t[]){2, 1}, (int64_t[]){0, 0},
             "crops should have shape [2, 2] instead of [2,1]");
  expect_bad(true, 1, one, two, m12, (int64_t[]){-1, 0}, "Paddings must be non-negative");
  expect_bad(false, 1, one, two, m12, (int64_t[]){0, -1}, "Crops must be non-negative");
  expect_bad(true, 1, one, two, m12, (int64_t[]){0, 0},
             "padded_shape[0]=5 is not divisible by block_shape[0]=2");
  expect_bad(true, 1, one, (int64_t[]){0}, m12, (int64_t[]){0, 0},
             "All values in block_shape must be positive, got value, 0 at index 0.");
  expect_bad(false, 1, one, (int64_t[]){3}, m12, (int64_t[]){0, 0},
             "Input batch dimension (2) is not divisible by product of block sizes (3)");
  expect_bad(false, 1, one, two, m12, (int64_t[]){6, 5},
             "cropped_shape[0]=-1 must be non-negative");
  /* block_shape from a placeholder: shapes are static */
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 4, (int64_t[]){1, 4, 4, 1});
  clg_node *b = clg_placeholder(g, "bs", CLG_INT32, 1, (int64_t[]){2});
  clg_node *p = ints_const(g, CLG_INT32, 2, (int64_t[]){2, 2}, 4, (int64_t[]){0, 0, 0, 0});
  clg_space_to_batch_nd(g, "op", x, b, p);
  EXPECT_ERROR(g, "SpaceToBatchND 'op'",
               "block_shape (input 1) must be a constant: shapes are static, but 'bs' is a "
               "Placeholder");
  g = clg_graph_new();
  x = clg_placeholder(g, NULL, CLG_FLOAT32, 4, (int64_t[]){1, 4, 4, 1});
  b = ints_const(g, CLG_INT32, 1, (int64_t[]){2}, 2, m2);
  p = ints_const(g, CLG_FLOAT32, 2, (int64_t[]){2, 2}, 4, (int64_t[]){0, 0, 0, 0});
  clg_space_to_batch_nd(g, "op", x, b, p);
  EXPECT_ERROR(g, "SpaceToBatchND 'op'", "paddings (input 2) must be int32 or int64, not float");
}

int main(void)
{
  clg_test_seed(29);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_space_batch");
  clg_session_options_init(&session_opt);
  session_opt.gpu_options.allow_growth = 1;
  session_opt.allow_soft_placement = 0; /* a GPU node without an OpenCL kernel fails */
  test_documented();
  test_random();
  test_errors();
  return clg_test_summary("test_space_batch");
}
