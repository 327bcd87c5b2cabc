/* Issue 23's array ops for TensorFlow graphs, 2: StridedSlice (every mask), Pack, Shape,
 * Prelu, DepthToSpace, GatherV2, Range and Tile on CPU:0 and on the PoCL stand-in GPUs,
 * each against tables worked by hand from TensorFlow's documentation and its
 * strided_slice_op.cc rules (dtype, shape and every value), and bad attributes refused with
 * errors naming the node. */
// ctest: default CLGRAPH_LOG_LEVEL=warning
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"

static clg_session_options session_opt;

/* 0, 1, 2, ... */
static clg_tensor *iota(clg_dtype dt, int rank, const int64_t *dims)
{
  size_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= (size_t)dims[k];
  double *v = malloc(sizeof(double) * (n ? n : 1));
  for (size_t i = 0; i < n; i++)
    v[i] = (double)i;
  clg_tensor *t = clg_test_tensor(dt, rank, dims, v);
  free(v);
  return t;
}

/* An int32 Const vector. */
static clg_node *cints(clg_graph *g, int n, const int64_t *v)
{
  double d[8];
  for (int i = 0; i < n; i++)
    d[i] = (double)v[i];
  clg_tensor *t = clg_test_tensor(CLG_INT32, 1, (int64_t[]){n}, d);
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

/* An int32 scalar Const 0. */
static clg_node *const_zero(clg_graph *g)
{
  clg_tensor *t = clg_test_tensor(CLG_INT32, 0, NULL, (const double[]){0});
  clg_node *c = clg_const(g, NULL, t);
  clg_tensor_free(t);
  return c;
}

typedef clg_test_build_fn build_fn;

/* The expected output: dtype, shape and values. */
typedef struct want {
  clg_dtype dtype;
  int rank;
  int64_t dims[8];
  const double *v;
  double tol;
  int index; /* the output fetched */
} want;

static void check_out(const clg_tensor *t, const want *w, const char *what, const char *dev)
{
  clg_test_check_values(t, w->dtype, w->rank, w->dims, w->v, w->tol, 0, false, what, dev);
}

/* Builds fn's node on CPU:0 and on a stand-in GPU from placeholders fed `in`, runs both in
 * one session and checks both outputs against w. */
static void run_case(const char *what, int nin, clg_tensor *const *in, build_fn fn, const void *ctx,
                     const want *w)
{
  clg_tensor *out[2];
  char err[1024];
  clg_code code = clg_test_run_both(&session_opt, nin, in, fn, ctx, w->index, out, err, sizeof err);
  CHECK_MSG(code == CLG_OK, "%s: %s", what, err);
  if (code == CLG_OK) {
    check_out(out[0], w, what, "CPU:0");
    check_out(out[1], w, what, "GPU");
  }
  clg_tensor_free(out[0]);
  clg_tensor_free(out[1]);
}

#define EXPECT_ERROR(g, node, text) clg_test_expect_error(g, node, text, __LINE__)

/* --- StridedSlice ------------------------------------------------------------------------- */

typedef struct slice_case {
  int n;
  int64_t b[8], e[8], s[8];
  clg_strided_slice_masks m;
} slice_case;

static clg_node *build_slice(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const slice_case *c = ctx;
  return clg_strided_slice(g, NULL, in[0], c->n, c->b, c->e, c->s, &c->m);
}

static void test_strided_slice(void)
{
  /* TensorFlow's documented example: t = [[[1,1,1],[2,2,2]], [[3,3,3],[4,4,4]],
   * [[5,5,5],[6,6,6]]] of shape [3,2,3]. */
  const double tv[18] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6};
  clg_tensor *t = clg_test_tensor(CLG_FLOAT32, 3, (int64_t[]){3, 2, 3}, tv);
  {
    slice_case c = {3, {1, 0, 0}, {2, 1, 3}, {1, 1, 1}, {0}};
    want w = {CLG_FLOAT32, 3, {1, 1, 3}, (const double[]){3, 3, 3}, 0, 0};
    run_case("t[1:2, 0:1, 0:3]", 1, &t, build_slice, &c, &w);
  }
  {
    slice_case c = {3, {1, 0, 0}, {2, 2, 3}, {1, 1, 1}, {0}};
    want w = {CLG_FLOAT32, 3, {1, 2, 3}, (const double[]){3, 3, 3, 4, 4, 4}, 0, 0};
    run_case("t[1:2, 0:2, 0:3]", 1, &t, build_slice, &c, &w);
  }
  {
    slice_case c = {3, {1, -1, 0}, {2, -3, 3}, {1, -1, 1}, {0}};
    want w = {CLG_FLOAT32, 3, {1, 2, 3}, (const double[]){4, 4, 4, 3, 3, 3}, 0, 0};
    run_case("t[1:2, -1:-3:-1, 0:3]", 1, &t, build_slice, &c, &w);
  }
  clg_tensor_free(t);

  /* x = 0..23 as [2,3,4]: x[a,b,c] = 12a + 4b + c. */
  clg_dtype dts[4] = {CLG_FLOAT32, CLG_INT32, CLG_FLOAT64, CLG_INT64};
  for (int d = 0; d < 4; d++) {
    clg_tensor *x = iota(dts[d], 3, (int64_t[]){2, 3, 4});
    {
      /* x[..., 1]: the ellipsis covers dims 0 and 1, dim 2 shrinks at 1. */
      slice_case c = {2, {0, 1}, {0, 2}, {1, 1}, {.ellipsis_mask = 1, .shrink_axis_mask = 2}};
      want w = {dts[d], 2, {2, 3}, (const double[]){1, 5, 9, 13, 17, 21}, 0, 0};
      run_case("x[..., 1]", 1, &x, build_slice, &c, &w);
    }
    {
      /* x[:, tf.newaxis, ::-2] (dim 2 taken whole): b = 2, 0. */
      slice_case c = {3,
                      {0, 0, 0},
                      {0, 0, 0},
                      {1, 1, -2},
                      {.begin_mask = 5, .end_mask = 5, .new_axis_mask = 2}};
      want w = {dts[d],
                4,
                {2, 1, 2, 4},
                (const double[]){8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15},
                0,
                0};
      run_case("x[:, newaxis, ::-2]", 1, &x, build_slice, &c, &w);
    }
    {
      /* x[1, -1:0:-1, 1:3] */
      slice_case c = {3, {1, -1, 1}, {2, 0, 3}, {1, -1, 1}, {.shrink_axis_mask = 1}};
      want w = {dts[d], 2, {2, 2}, (const double[]){21, 22, 17, 18}, 0, 0};
      run_case("x[1, -1:0:-1, 1:3]", 1, &x, build_slice, &c, &w);
    }
    {
      /* x[0, ..., ::3]: the ellipsis in the middle covers dim 1 alone. */
      slice_case c = {3,
                      {0, 0, 0},
                      {1, 0, 0},
                      {1, 1, 3},
                      {.begin_mask = 4, .end_mask = 4, .ellipsis_mask = 2, .shrink_axis_mask = 1}};
      want w = {dts[d], 2, {3, 2}, (const double[]){0, 3, 4, 7, 8, 11}, 0, 0};
      run_case("x[0, ..., ::3]", 1, &x, build_slice, &c, &w);
    }
    {
      /* x[-1]: a negative shrink index counts from the end; the rest is implicit. */
      slice_case c = {1, {-1}, {0}, {1}, {.shrink_axis_mask = 1}};
      double v[12];
      for (int i = 0; i < 12; i++)
        v[i] = 12 + i;
      want w = {dts[d], 2, {3, 4}, v, 0, 0};
      run_case("x[-1]", 1, &x, build_slice, &c, &w);
    }
    {
      /* x[-100:100, 5:1]: begin and end clamp to [0, dim]; dim 1 is empty. */
      slice_case c = {2, {-100, 5}, {100, 1}, {1, 1}, {0}};
      want w = {dts[d], 3, {2, 0, 4}, NULL, 0, 0};
      run_case("x[-100:100, 5:1]", 1, &x, build_slice, &c, &w);
    }
    {
      /* x[::-1, 100:-100:-2, -1] : clamped to [-1, dim - 1] backwards: b = 2, 0. */
      slice_case c = {3,
                      {0, 100, -1},
                      {0, -100, 0},
                      {-1, -2, 1},
                      {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 4}};
      want w = {dts[d], 2, {2, 2}, (const double[]){23, 15, 11, 3}, 0, 0};
      run_case("x[::-1, 100:-100:-2, -1]", 1, &x, build_slice, &c, &w);
    }
    clg_tensor_free(x);
  }
  {
    /* bool (1-byte elements): x[1::2] of [1,0,0,1,1] */
    clg_tensor *x = clg_test_tensor(CLG_BOOL, 1, (int64_t[]){5}, (const double[]){1, 0, 0, 1, 1});
    slice_case c = {1, {1}, {0}, {2}, {.end_mask = 1}};
    want w = {CLG_BOOL, 1, {2}, (const double[]){0, 1}, 0, 0};
    run_case("bool x[1::2]", 1, &x, build_slice, &c, &w);
    clg_tensor_free(x);
  }

  /* Refused, naming the node. */
  struct {
    slice_case c;
    const char *text;
  } bad[] = {
      {{1, {0}, {1}, {0}, {0}}, "strides[0] must be non-zero"},
      {{1, {5}, {6}, {1}, {.shrink_axis_mask = 1}}, "slice index 5 of dimension 0 out of bounds."},
      {{1, {-4}, {0}, {1}, {.shrink_axis_mask = 1}},
       "slice index -2 of dimension 0 out of bounds."},
      {{2, {0, 0}, {1, 1}, {1, 1}, {.ellipsis_mask = 3}},
       "Multiple ellipses in slice spec not allowed"},
      {{4, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}, {0}},
       "Index out of range using input dim 3; input has only 3 dims"},
      {{1, {0}, {1}, {-1}, {.shrink_axis_mask = 1}},
       "only stride 1 allowed on non-range indexing."},
      {{1, {0}, {1}, {1}, {.begin_mask = -1}}, "begin_mask is -1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 3, (int64_t[]){2, 3, 4});
    clg_strided_slice(g, "ss", x, bad[i].c.n, bad[i].c.b, bad[i].c.e, bad[i].c.s, &bad[i].c.m);
    EXPECT_ERROR(g, "StridedSlice 'ss'", bad[i].text);
  }
  {
    /* begin, end and strides of different lengths */
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){4});
    clg_output in[4] = {{x, 0},
                        {cints(g, 1, (int64_t[]){0}), 0},
                        {cints(g, 2, (int64_t[]){1, 1}), 0},
                        {cints(g, 1, (int64_t[]){1}), 0}};
    clg_op(g, "StridedSlice", "ss", 4, in, 0, NULL);
    EXPECT_ERROR(g, "StridedSlice 'ss'",
                 "Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                 "[1], [2], and [1] instead.");
  }
  {
    /* begin from a placeholder: shapes are static */
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){4});
    clg_node *b = clg_placeholder(g, "b", CLG_INT32, 1, (int64_t[]){1});
    clg_output in[4] = {
        {x, 0}, {b, 0}, {cints(g, 1, (int64_t[]){1}), 0}, {cints(g, 1, (int64_t[]){1}), 0}};
    clg_op(g, "StridedSlice", "ss", 4, in, 0, NULL);
    EXPECT_ERROR(g, "StridedSlice 'ss'", "begin (input 1) must be a constant");
  }
}

/* --- Pack, Shape, Prelu, DepthToSpace ----------------------------------------------------- */

static clg_node *build_pack(clg_graph *g, clg_node *const *in, const void *ctx)
{
  clg_output v[3] = {{in[0], 0}, {in[1], 0}, {in[2], 0}};
  return clg_pack(g, NULL, 3, v, *(const int64_t *)ctx);
}

static clg_node *build_shape(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_shape(g, NULL, in[0], *(const clg_dtype *)ctx);
}

static clg_node *build_prelu(clg_graph *g, clg_node *const *in, const void *ctx)
{
  (void)ctx;
  return clg_prelu(g, NULL, in[0], in[1]);
}

static clg_node *build_d2s(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_depth_to_space(g, NULL, in[0], *(const int64_t *)ctx);
}

static void test_pack_shape_prelu_d2s(void)
{
  /* tf.stack's documented example: x = [1, 4], y = [2, 5], z = [3, 6]. */
  clg_dtype dts[3] = {CLG_FLOAT32, CLG_INT64, CLG_BOOL};
  for (int d = 0; d < 3; d++) {
    double b = dts[d] == CLG_BOOL ? 0 : 1; /* bools: 1 4 -> 1 1, 2 5 -> 0 1, ... */
    clg_tensor *in[3] = {clg_test_tensor(dts[d], 1, (int64_t[]){2}, (const double[]){1, 4}),
                         clg_test_tensor(dts[d], 1, (int64_t[]){2}, (const double[]){2 * b, 5}),
                         clg_test_tensor(dts[d], 1, (int64_t[]){2}, (const double[]){3, 6 * b})};
    double a0[6] = {1, 4, 2 * b, 5, 3, 6 * b}, a1[6] = {1, 2 * b, 3, 4, 5, 6 * b};
    if (dts[d] == CLG_BOOL)
      for (int i = 0; i < 6; i++)
        a0[i] = a0[i] != 0, a1[i] = a1[i] != 0;
    int64_t axes[4] = {0, 1, -1, -2};
    for (int k = 0; k < 4; k++) {
      bool first = axes[k] == 0 || axes[k] == -2;
      want w = {dts[d], 2, {first ? 3 : 2, first ? 2 : 3}, first ? a0 : a1, 0, 0};
      run_case("Pack", 3, in, build_pack, &axes[k], &w);
    }
    for (int i = 0; i < 3; i++)
      clg_tensor_free(in[i]);
  }
  {
    /* scalars into a vector */
    clg_tensor *in[3] = {clg_test_tensor(CLG_FLOAT64, 0, NULL, (const double[]){7}),
                         clg_test_tensor(CLG_FLOAT64, 0, NULL, (const double[]){8}),
                         clg_test_tensor(CLG_FLOAT64, 0, NULL, (const double[]){9})};
    int64_t axis = 0;
    want w = {CLG_FLOAT64, 1, {3}, (const double[]){7, 8, 9}, 0, 0};
    run_case("Pack of scalars", 3, in, build_pack, &axis, &w);
    for (int i = 0; i < 3; i++)
      clg_tensor_free(in[i]);
  }
  {
    clg_graph *g = clg_graph_new();
    clg_node *a = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){2});
    clg_node *b = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_pack(g, "p", 2, (clg_output[]){{a, 0}, {b, 0}}, 0);
    EXPECT_ERROR(g, "Pack 'p'", "Shapes of all inputs must match");
    g = clg_graph_new();
    a = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){2});
    clg_pack(g, "p", 2, (clg_output[]){{a, 0}, {a, 0}}, 2);
    EXPECT_ERROR(g, "Pack 'p'", "axis = 2 not in [-2, 2)");
  }

  /* Shape */
  {
    clg_tensor *x = iota(CLG_FLOAT32, 3, (int64_t[]){2, 3, 5});
    clg_dtype o32 = CLG_INT32, o64 = CLG_INT64;
    want w32 = {CLG_INT32, 1, {3}, (const double[]){2, 3, 5}, 0, 0};
    want w64 = {CLG_INT64, 1, {3}, (const double[]){2, 3, 5}, 0, 0};
    run_case("Shape int32", 1, &x, build_shape, &o32, &w32);
    run_case("Shape int64", 1, &x, build_shape, &o64, &w64);
    clg_tensor_free(x);
    clg_graph *g = clg_graph_new();
    clg_node *p = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){2});
    clg_shape(g, "sh", p, CLG_FLOAT32);
    EXPECT_ERROR(g, "Shape 'sh'", "out_type must be int32 or int64, not float");
    /* out_type defaults to int32, as TensorFlow's */
    g = clg_graph_new();
    p = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){2, 7});
    clg_node *s = clg_op(g, "Shape", NULL, 1, (clg_output[]){{p, 0}}, 0, NULL);
    CHECK(s && clg_node_dtype(s) == CLG_INT32 && clg_node_dim(s, 0) == 2);
    clg_graph_free(g);
  }

  /* Prelu: x < 0 ? alpha * x : x, alpha [3] broadcast over the rows. */
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = d ? CLG_FLOAT64 : CLG_FLOAT32;
    clg_tensor *in[2] = {
        clg_test_tensor(dt, 2, (int64_t[]){2, 3}, (const double[]){-2, -1, 0, 1, 2, -3}),
        clg_test_tensor(dt, 1, (int64_t[]){3}, (const double[]){0.5, 0.25, 2})};
    want w = {dt, 2, {2, 3}, (const double[]){-1, -0.25, 0, 1, 2, -6}, 0, 0};
    run_case("Prelu", 2, in, build_prelu, NULL, &w);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
    /* x broadcast too (tfjs's Prelu kernels are broadcasting binary ops): x [3], alpha [2,1]
     * gives [2,3], row r with alpha[r]. */
    clg_tensor *bin[2] = {clg_test_tensor(dt, 1, (int64_t[]){3}, (const double[]){-2, 1, -4}),
                          clg_test_tensor(dt, 2, (int64_t[]){2, 1}, (const double[]){0.5, 3})};
    want wb = {dt, 2, {2, 3}, (const double[]){-1, 1, -2, -6, 1, -12}, 0, 0};
    run_case("Prelu broadcasting x", 2, bin, build_prelu, NULL, &wb);
    clg_tensor_free(bin[0]);
    clg_tensor_free(bin[1]);
  }
  {
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){2, 3});
    clg_node *a = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){4, 3});
    clg_prelu(g, "pr", x, a);
    EXPECT_ERROR(g, "Prelu 'pr'", "Incompatible shapes");
    g = clg_graph_new();
    x = clg_placeholder(g, NULL, CLG_INT32, 1, (int64_t[]){3});
    clg_prelu(g, "pr", x, x);
    EXPECT_ERROR(g, "Prelu 'pr'", "Prelu takes float32 or float64, not int32");
  }

  /* DepthToSpace: TensorFlow's three documented examples. */
  {
    int64_t b = 2;
    clg_tensor *x =
        clg_test_tensor(CLG_FLOAT32, 4, (int64_t[]){1, 1, 1, 4}, (const double[]){1, 2, 3, 4});
    want w = {CLG_FLOAT32, 4, {1, 2, 2, 1}, (const double[]){1, 2, 3, 4}, 0, 0};
    run_case("DepthToSpace [1,1,1,4]", 1, &x, build_d2s, &b, &w);
    clg_tensor_free(x);
    x = clg_test_tensor(CLG_INT32, 4, (int64_t[]){1, 1, 1, 12},
                        (const double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    want w2 = {CLG_INT32, 4, {1, 2, 2, 3}, (const double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
               0,         0};
    run_case("DepthToSpace [1,1,1,12]", 1, &x, build_d2s, &b, &w2);
    clg_tensor_free(x);
    x = clg_test_tensor(CLG_FLOAT64, 4, (int64_t[]){1, 2, 2, 4},
                        (const double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    want w3 = {CLG_FLOAT64,
               4,
               {1, 4, 4, 1},
               (const double[]){1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16},
               0,
               0};
    run_case("DepthToSpace [1,2,2,4]", 1, &x, build_d2s, &b, &w3);
    clg_tensor_free(x);
    /* block 3 over a batch of 2: y[n, 3h+i, 3w+j, c] = x[n, h, w, (3i+j)*2 + c] */
    int64_t b3 = 3;
    x = iota(CLG_FLOAT32, 4, (int64_t[]){2, 1, 2, 18});
    double v[72];
    for (int n = 0; n < 2; n++)
      for (int yy = 0; yy < 3; yy++)
        for (int xx = 0; xx < 6; xx++)
          for (int c = 0; c < 2; c++)
            v[((n * 3 + yy) * 6 + xx) * 2 + c] =
                (double)(((n * 1 + 0) * 2 + xx / 3) * 18 + ((yy % 3) * 3 + xx % 3) * 2 + c);
    want w4 = {CLG_FLOAT32, 4, {2, 3, 6, 2}, v, 0, 0};
    run_case("DepthToSpace block 3", 1, &x, build_d2s, &b3, &w4);
    clg_tensor_free(x);
  }
  {
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 4, (int64_t[]){1, 1, 1, 6});
    clg_depth_to_space(g, "d2s", x, 2);
    EXPECT_ERROR(g, "DepthToSpace 'd2s'", "Input depth dimension 6 should be divisible by: 4");
    g = clg_graph_new();
    x = clg_placeholder(g, NULL, CLG_FLOAT32, 4, (int64_t[]){1, 1, 1, 4});
    clg_depth_to_space(g, "d2s", x, 1);
    EXPECT_ERROR(g, "DepthToSpace 'd2s'",
                 "Value for attr 'block_size' of 1 must be at least minimum 2");
    g = clg_graph_new();
    x = clg_placeholder(g, NULL, CLG_FLOAT32, 4, (int64_t[]){1, 4, 1, 1});
    clg_attr at[2] = {clg_attr_int("block_size", 2), clg_attr_string("data_format", "NCHW")};
    clg_op(g, "DepthToSpace", "d2s", 1, (clg_output[]){{x, 0}}, 2, at);
    EXPECT_ERROR(g, "DepthToSpace 'd2s'", "data_format \"NCHW\" is not supported");
  }
}

/* --- GatherV2, Range, Tile ---------------------------------------------------------------- */

static clg_node *build_gather(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_gather(g, NULL, in[0], in[1], *(const int64_t *)ctx);
}

typedef struct range_case {
  clg_dtype dt;
  double start, limit, delta;
} range_case;

static clg_node *build_range(clg_graph *g, clg_node *const *in, const void *ctx)
{
  (void)in;
  const range_case *c = ctx;
  return clg_range(g, NULL, c->dt, c->start, c->limit, c->delta);
}

typedef struct tile_case {
  int64_t m[4];
} tile_case;

static clg_node *build_tile(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_tile(g, NULL, in[0], 2, ((const tile_case *)ctx)->m);
}

static void test_gather_range_tile(void)
{
  /* params [[1,2,3],[4,5,6],[7,8,9]] */
  const double pv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  clg_dtype dts[3] = {CLG_FLOAT32, CLG_INT64, CLG_FLOAT64};
  for (int d = 0; d < 3; d++)
    for (int it = 0; it < 2; it++) {
      clg_dtype idt = it ? CLG_INT64 : CLG_INT32;
      clg_tensor *in[2] = {clg_test_tensor(dts[d], 2, (int64_t[]){3, 3}, pv),
                           clg_test_tensor(idt, 1, (int64_t[]){2}, (const double[]){2, 0})};
      int64_t a0 = 0, a1 = 1, am1 = -1;
      want w0 = {dts[d], 2, {2, 3}, (const double[]){7, 8, 9, 1, 2, 3}, 0, 0};
      want w1 = {dts[d], 2, {3, 2}, (const double[]){3, 1, 6, 4, 9, 7}, 0, 0};
      run_case("GatherV2 axis 0", 2, in, build_gather, &a0, &w0);
      run_case("GatherV2 axis 1", 2, in, build_gather, &a1, &w1);
      run_case("GatherV2 axis -1", 2, in, build_gather, &am1, &w1);
      clg_tensor_free(in[1]);
      /* scalar and [2,2] indices: the indices' shape replaces the axis */
      in[1] = clg_test_tensor(idt, 0, NULL, (const double[]){1});
      want ws = {dts[d], 1, {3}, (const double[]){2, 5, 8}, 0, 0};
      run_case("GatherV2 scalar index", 2, in, build_gather, &a1, &ws);
      clg_tensor_free(in[1]);
      in[1] = clg_test_tensor(idt, 2, (int64_t[]){2, 2}, (const double[]){0, 2, 1, 1});
      want w22 = {dts[d], 3, {2, 2, 3}, (const double[]){1, 2, 3, 7, 8, 9, 4, 5, 6, 4, 5, 6}, 0, 0};
      run_case("GatherV2 [2,2] indices", 2, in, build_gather, &a0, &w22);
      clg_tensor_free(in[0]);
      clg_tensor_free(in[1]);
    }
  {
    /* a Const index out of range is refused at build; a fed one fails the CPU run */
    clg_graph *g = clg_graph_new();
    clg_node *p = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_gather(g, "ga", p, cints(g, 2, (int64_t[]){1, 3}), 0);
    EXPECT_ERROR(g, "GatherV2 'ga'", "indices[1] = 3 is not in [0, 3)");
    g = clg_graph_new();
    p = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_gather(g, "ga", p, cints(g, 1, (int64_t[]){1}), 1);
    EXPECT_ERROR(g, "GatherV2 'ga'", "Expected axis in the range [-1, 1), but got 1");
    g = clg_graph_new();
    p = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){3, 3});
    clg_node *ix = clg_placeholder(g, NULL, CLG_INT32, 1, (int64_t[]){3});
    clg_attr bd = clg_attr_int("batch_dims", 1);
    clg_op(g, "GatherV2", "ga", 3, (clg_output[]){{p, 0}, {ix, 0}, {const_zero(g), 0}}, 1, &bd);
    EXPECT_ERROR(g, "GatherV2 'ga'", "batch_dims 1 is not supported");

    g = clg_graph_new();
    p = clg_placeholder(g, "p", CLG_FLOAT32, 1, (int64_t[]){3});
    ix = clg_placeholder(g, "ix", CLG_INT32, 1, (int64_t[]){2});
    clg_graph_push_device(g, "/cpu:0");
    clg_node *ga = clg_gather(g, "ga", p, ix, 0);
    clg_graph_pop_device(g);
    clg_session *s = NULL;
    CHECK_OK(clg_session_new(g, &session_opt, &s));
    clg_tensor *in[2] = {clg_test_tensor(CLG_FLOAT32, 1, (int64_t[]){3}, pv),
                         clg_test_tensor(CLG_INT32, 1, (int64_t[]){2}, (const double[]){0, -1})};
    clg_tensor *out = NULL;
    CHECK_CODE(clg_session_run_outputs(s, 2, (clg_output[]){{p, 0}, {ix, 0}}, in, 1,
                                       (clg_output[]){{ga, 0}}, &out, 0, NULL),
               CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "GatherV2 'ga'");
    CHECK_CONTAINS(clg_last_error(), "indices[1] = -1 is not in [0, 3)");
    clg_tensor_free(out);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
    clg_session_free(s);
    clg_graph_free(g);
  }

  /* Range: TensorFlow's sizes, integers and floats. */
  {
    range_case c1 = {CLG_INT32, 0, 10, 3};
    want w1 = {CLG_INT32, 1, {4}, (const double[]){0, 3, 6, 9}, 0, 0};
    run_case("Range int32", 0, NULL, build_range, &c1, &w1);
    range_case c2 = {CLG_FLOAT32, 10, 0, -3.5};
    want w2 = {CLG_FLOAT32, 1, {3}, (const double[]){10, 6.5, 3}, 0, 0};
    run_case("Range float32 down", 0, NULL, build_range, &c2, &w2);
    range_case c3 = {CLG_INT64, -2, 3, 1};
    want w3 = {CLG_INT64, 1, {5}, (const double[]){-2, -1, 0, 1, 2}, 0, 0};
    run_case("Range int64", 0, NULL, build_range, &c3, &w3);
    range_case c4 = {CLG_FLOAT64, 0, 1, 0.25};
    want w4 = {CLG_FLOAT64, 1, {4}, (const double[]){0, 0.25, 0.5, 0.75}, 0, 0};
    run_case("Range float64", 0, NULL, build_range, &c4, &w4);
    range_case c5 = {CLG_INT32, 4, 4, 1};
    want w5 = {CLG_INT32, 1, {0}, NULL, 0, 0};
    run_case("Range empty", 0, NULL, build_range, &c5, &w5);
    clg_graph *g = clg_graph_new();
    clg_range(g, "r", CLG_INT32, 0, 5, 0);
    EXPECT_ERROR(g, "Range 'r'", "Requires delta != 0");
    g = clg_graph_new();
    clg_range(g, "r", CLG_FLOAT32, 5, 0, 1);
    EXPECT_ERROR(g, "Range 'r'", "Requires start <= limit when delta > 0: 5/0");
    g = clg_graph_new();
    clg_range(g, "r", CLG_INT64, 0, 5, -1);
    EXPECT_ERROR(g, "Range 'r'", "Requires start >= limit when delta < 0: 0/5");
  }

  /* Tile: tf.tile's documented example a = [[1,2,3],[4,5,6]]. */
  {
    clg_dtype tdt[2] = {CLG_INT32, CLG_FLOAT64};
    for (int d = 0; d < 2; d++) {
      clg_tensor *a =
          clg_test_tensor(tdt[d], 2, (int64_t[]){2, 3}, (const double[]){1, 2, 3, 4, 5, 6});
      tile_case c12 = {{1, 2}}, c21 = {{2, 1}}, c22 = {{2, 2}}, c03 = {{0, 3}};
      want w12 = {tdt[d], 2, {2, 6}, (const double[]){1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}, 0, 0};
      want w21 = {tdt[d], 2, {4, 3}, (const double[]){1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, 0, 0};
      want w22 = {
          tdt[d],
          2,
          {4, 6},
          (const double[]){1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6},
          0,
          0};
      want w03 = {tdt[d], 2, {0, 9}, NULL, 0, 0};
      run_case("Tile [1,2]", 1, &a, build_tile, &c12, &w12);
      run_case("Tile [2,1]", 1, &a, build_tile, &c21, &w21);
      run_case("Tile [2,2]", 1, &a, build_tile, &c22, &w22);
      run_case("Tile [0,3]", 1, &a, build_tile, &c03, &w03);
      clg_tensor_free(a);
    }
    clg_graph *g = clg_graph_new();
    clg_node *x = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){2, 3});
    clg_tile(g, "ti", x, 2, (int64_t[]){1, -1});
    EXPECT_ERROR(g, "Tile 'ti'", "Expected multiples[1] >= 0, but got -1");
    g = clg_graph_new();
    x = clg_placeholder(g, NULL, CLG_FLOAT32, 2, (int64_t[]){2, 3});
    clg_tile(g, "ti", x, 1, (int64_t[]){2});
    EXPECT_ERROR(g, "Tile 'ti'",
                 "Expected multiples argument to be a vector of length 2 but got length 1");
  }
}

/* --- Unpack, Split, SplitV, StridedSliceGrad and the gradients ---------------------------- */

typedef struct split_case {
  int kind; /* 0 Unpack, 1 Split, 2 SplitV */
  int64_t num, axis;
  int n;
  int64_t sizes[4];
} split_case;

static clg_node *build_split(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const split_case *c = ctx;
  if (c->kind == 0)
    return clg_unpack(g, NULL, in[0], c->num, c->axis);
  if (c->kind == 1)
    return clg_split(g, NULL, in[0], c->axis, c->num);
  return clg_split_v(g, NULL, in[0], c->n, c->sizes, c->axis);
}

static clg_node *build_slice_grad(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const slice_case *c = ctx;
  clg_output io[5] = {{cints(g, 3, (int64_t[]){2, 3, 4}), 0},
                      {cints(g, c->n, c->b), 0},
                      {cints(g, c->n, c->e), 0},
                      {cints(g, c->n, c->s), 0},
                      {in[0], 0}};
  clg_attr a[5] = {clg_attr_int("begin_mask", c->m.begin_mask),
                   clg_attr_int("end_mask", c->m.end_mask),
                   clg_attr_int("ellipsis_mask", c->m.ellipsis_mask),
                   clg_attr_int("new_axis_mask", c->m.new_axis_mask),
                   clg_attr_int("shrink_axis_mask", c->m.shrink_axis_mask)};
  return clg_op(g, "StridedSliceGrad", NULL, 5, io, 5, a);
}

/* dx of y = op(x) for the incoming gradient dy (fed), through clg_gradients. */
typedef struct grad_case {
  clg_node *(*forward)(clg_graph *g, clg_node *x);
  int64_t dy_dims[4];
  int dy_rank;
  const double *dy;
} grad_case;

static clg_node *fw_slice(clg_graph *g, clg_node *x)
{
  /* x[1, -1:0:-1, 1:3] */
  clg_strided_slice_masks m = {.shrink_axis_mask = 1};
  return clg_strided_slice(g, NULL, x, 3, (int64_t[]){1, -1, 1}, (int64_t[]){2, 0, 3},
                           (int64_t[]){1, -1, 1}, &m);
}

static clg_node *fw_unpack_pack(clg_graph *g, clg_node *x)
{
  /* unstack along 1, stack back along 0: [2,3,4] -> [3,2,4] */
  clg_node *u = clg_unpack(g, NULL, x, 3, 1);
  clg_output v[3] = {{u, 0}, {u, 1}, {u, 2}};
  return clg_pack(g, NULL, 3, v, 0);
}

static clg_node *fw_unpack_one(clg_graph *g, clg_node *x)
{
  /* only output 2 of the unstack is used: the others' gradients are zeros */
  clg_node *u = clg_unpack(g, NULL, x, 3, 1);
  return clg_op(g, "Identity", NULL, 1, (clg_output[]){{u, 2}}, 0, NULL);
}

static clg_node *build_grad(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const grad_case *c = ctx;
  clg_node *y = c->forward(g, in[0]);
  clg_output dx;
  clg_output ys = clg_out(y, 0), dys = clg_out(in[1], 0), xs = clg_out(in[0], 0);
  if (clg_gradients(g, 1, &ys, &dys, 1, &xs, NULL, &dx) != CLG_OK)
    return NULL;
  return dx.node ? clg_op(g, "Identity", NULL, 1, &dx, 0, NULL) : NULL;
}

static void test_split_and_gradients(void)
{
  /* x = 0..23 as [2,3,4]: x[a,b,c] = 12a + 4b + c */
  clg_tensor *x = iota(CLG_FLOAT32, 3, (int64_t[]){2, 3, 4});
  {
    /* Unpack along 1: output i is x[:, i, :] */
    split_case c = {0, 3, 1, 0, {0}};
    for (int i = 0; i < 3; i++) {
      double v[8];
      for (int a = 0; a < 2; a++)
        for (int k = 0; k < 4; k++)
          v[a * 4 + k] = 12 * a + 4 * i + k;
      want w = {CLG_FLOAT32, 2, {2, 4}, v, 0, i};
      run_case("Unpack axis 1", 1, &x, build_split, &c, &w);
    }
    /* Unpack along -1: output i is x[:, :, i] */
    split_case c2 = {0, 4, -1, 0, {0}};
    for (int i = 0; i < 4; i++) {
      double v[6];
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
          v[a * 3 + b] = 12 * a + 4 * b + i;
      want w = {CLG_FLOAT32, 2, {2, 3}, v, 0, i};
      run_case("Unpack axis -1", 1, &x, build_split, &c2, &w);
    }
  }
  {
    /* Split into 2 along 2: x[:, :, 0:2] and x[:, :, 2:4] */
    split_case c = {1, 2, 2, 0, {0}};
    for (int i = 0; i < 2; i++) {
      double v[12];
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
          for (int k = 0; k < 2; k++)
            v[(a * 3 + b) * 2 + k] = 12 * a + 4 * b + 2 * i + k;
      want w = {CLG_FLOAT32, 3, {2, 3, 2}, v, 0, i};
      run_case("Split", 1, &x, build_split, &c, &w);
    }
    /* SplitV along 1 into sizes 1, -1 (2), 0 */
    split_case cv = {2, 3, 1, 3, {1, -1, 0}};
    want w0 = {CLG_FLOAT32, 3, {2, 1, 4}, (const double[]){0, 1, 2, 3, 12, 13, 14, 15}, 0, 0};
    want w1 = {
        CLG_FLOAT32, 3,
        {2, 2, 4},   (const double[]){4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23},
        0,           1};
    want w2 = {CLG_FLOAT32, 3, {2, 0, 4}, NULL, 0, 2};
    run_case("SplitV 0", 1, &x, build_split, &cv, &w0);
    run_case("SplitV 1", 1, &x, build_split, &cv, &w1);
    run_case("SplitV 2", 1, &x, build_split, &cv, &w2);
  }
  {
    struct {
      split_case c;
      const char *node, *text;
    } bad[] = {
        {{0, 2, 1, 0, {0}}, "Unpack 'sp'", "num = 2 but the input's dim 1 (the axis) is 3"},
        {{0, 3, 3, 0, {0}}, "Unpack 'sp'", "axis = 3 not in [-3, 3)"},
        {{0, 0, 1, 0, {0}}, "Unpack 'sp'", "attribute num (the number of outputs) must be given"},
        {{1, 3, 2, 0, {0}},
         "Split 'sp'",
         "Number of ways to split should evenly divide the split dimension, but got split_dim 2 "
         "(size = 4) and num_split 3"},
        {{2, 3, 2, 3, {-1, -1, 1}},
         "SplitV 'sp'",
         "Only one dimensions can have a value of -1. Second one found at dimension 1"},
        {{2, 2, 2, 2, {1, 2}}, "SplitV 'sp'", "Determined shape must either match input shape"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      clg_graph *g = clg_graph_new();
      clg_node *p = clg_placeholder(g, NULL, CLG_FLOAT32, 3, (int64_t[]){2, 3, 4});
      const split_case *c = &bad[i].c;
      if (c->kind == 0)
        clg_unpack(g, "sp", p, c->num, c->axis);
      else if (c->kind == 1)
        clg_split(g, "sp", p, c->axis, c->num);
      else
        clg_split_v(g, "sp", p, c->n, c->sizes, c->axis);
      EXPECT_ERROR(g, bad[i].node, bad[i].text);
    }
  }
  clg_tensor_free(x);

  /* StridedSliceGrad of x[1, -1:0:-1, 1:3] ([2,2]) into zeros [2,3,4]: dy[0][0] goes to
   * x[1,2,1] (21), dy[0][1] to 22, dy[1][0] to x[1,1,1] (17), dy[1][1] to 18. */
  double gv[24] = {0};
  gv[21] = 1, gv[22] = 2, gv[17] = 3, gv[18] = 4;
  {
    clg_tensor *dy =
        clg_test_tensor(CLG_FLOAT32, 2, (int64_t[]){2, 2}, (const double[]){1, 2, 3, 4});
    slice_case c = {3, {1, -1, 1}, {2, 0, 3}, {1, -1, 1}, {.shrink_axis_mask = 1}};
    want w = {CLG_FLOAT32, 3, {2, 3, 4}, gv, 0, 0};
    run_case("StridedSliceGrad", 1, &dy, build_slice_grad, &c, &w);
    clg_tensor_free(dy);
    clg_graph *g = clg_graph_new();
    clg_node *p = clg_placeholder(g, NULL, CLG_FLOAT32, 1, (int64_t[]){3});
    clg_output io[5] = {{cints(g, 3, (int64_t[]){2, 3, 4}), 0},
                        {cints(g, 3, c.b), 0},
                        {cints(g, 3, c.e), 0},
                        {cints(g, 3, c.s), 0},
                        {p, 0}};
    clg_attr a = clg_attr_int("shrink_axis_mask", 1);
    clg_op(g, "StridedSliceGrad", "sg", 5, io, 1, &a);
    EXPECT_ERROR(g, "StridedSliceGrad 'sg'", "shape of dy was [3] instead of [2,2]");
  }
  /* The same through clg_gradients of StridedSlice; Pack's and Unpack's gradients. */
  {
    clg_tensor *in[2] = {
        iota(CLG_FLOAT32, 3, (int64_t[]){2, 3, 4}),
        clg_test_tensor(CLG_FLOAT32, 2, (int64_t[]){2, 2}, (const double[]){1, 2, 3, 4})};
    grad_case c = {fw_slice, {2, 2}, 2, NULL};
    want w = {CLG_FLOAT32, 3, {2, 3, 4}, gv, 0, 0};
    run_case("d StridedSlice", 2, in, build_grad, &c, &w);
    clg_tensor_free(in[1]);
    /* unstack along 1 then stack along 0: dx[a,b,c] = dy[b,a,c] */
    double dyv[24], dxv[24];
    for (int i = 0; i < 24; i++)
      dyv[i] = 100 + i;
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 3; b++)
        for (int k = 0; k < 4; k++)
          dxv[(a * 3 + b) * 4 + k] = dyv[(b * 2 + a) * 4 + k];
    in[1] = clg_test_tensor(CLG_FLOAT32, 3, (int64_t[]){3, 2, 4}, dyv);
    grad_case c2 = {fw_unpack_pack, {3, 2, 4}, 3, NULL};
    want w2 = {CLG_FLOAT32, 3, {2, 3, 4}, dxv, 0, 0};
    run_case("d Pack(Unpack)", 2, in, build_grad, &c2, &w2);
    clg_tensor_free(in[1]);
    /* only x[:, 2, :] used: dx is dy there, zeros elsewhere */
    double dyo[8], dxo[24] = {0};
    for (int i = 0; i < 8; i++)
      dyo[i] = i + 1;
    for (int a = 0; a < 2; a++)
      for (int k = 0; k < 4; k++)
        dxo[(a * 3 + 2) * 4 + k] = dyo[a * 4 + k];
    in[1] = clg_test_tensor(CLG_FLOAT32, 2, (int64_t[]){2, 4}, dyo);
    grad_case c3 = {fw_unpack_one, {2, 4}, 2, NULL};
    want w3 = {CLG_FLOAT32, 3, {2, 3, 4}, dxo, 0, 0};
    run_case("d Unpack, one output used", 2, in, build_grad, &c3, &w3);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
  }
}

int main(void)
{
  clg_test_seed(23);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_tf_ops2");
  clg_session_options_init(&session_opt);
  session_opt.gpu_options.allow_growth = 1;
  session_opt.allow_soft_placement = 0; /* a GPU node without an OpenCL kernel fails */
  test_strided_slice();
  test_pack_shape_prelu_d2s();
  test_gather_range_tile();
  test_split_and_gradients();
  return clg_test_summary("test_tf_ops2");
}
