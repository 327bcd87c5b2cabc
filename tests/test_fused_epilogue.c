/* The planner's fused epilogues (runtime/fuse.c, backends/host/epilogue.c): Conv2D (1x1, 3x3,
 * strided, explicit pads), DepthwiseConv2dNative and MatMul followed by BiasAdd, Relu, Relu6,
 * a clip (Maximum then Minimum with scalars), a residual Add, a scalar or vector AddV2, run
 * fused (the plan says how many steps it fused) and unfused (CLGRAPH_FUSE=0): the two results
 * must be bit-identical, and both must match a double reference computed here from the
 * definitions. Chains that must not fuse (an intermediate read twice, an operand computed
 * after the head) run unfused at that op and stay exact; on a stand-in GPU nothing fuses. */
// ctest: native
// ctest: avx2 CLGRAPH_HOST_GEMM_ISA=avx2
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "testutil.h"

static clg_session_options opt;

enum head { CONV, DEPTHWISE, MATMUL };

/* A head: x and f's shapes (MatMul: a [x0,x1], b [f0,f1]), stride, padding ("SAME", "VALID"
 * or "EXPLICIT" with pads top, bottom, left, right). */
typedef struct head_case {
  enum head kind;
  int64_t x[4], f[4], s;
  const char *pad;
  int64_t pads[4];
} head_case;

/* The chain's ops. CLIP is two graph ops (Maximum, Minimum); LATE is a residual Add whose
 * operand is computed after the head in graph order (must not fuse). */
enum epi { BIAS, RELU, RELU6, CLIP, RES, SCALAR, VEC, LATE, END };

typedef struct chain {
  enum epi ops[5];
  int fused;  /* graph ops the plan fuses on CPU:0 */
  bool twice; /* the first op's output has a second reader (nothing after it fuses) */
} chain;

static float *rand_floats(size_t n, double lo, double hi)
{
  float *p = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++)
    p[i] = (float)clg_test_uniform(lo, hi);
  return p;
}

/* TensorFlow's output size and padding before for SAME/VALID, or the explicit pads. */
static void out_dim(int64_t in, int64_t k, int64_t s, const char *pad, int64_t before,
                    int64_t after, int64_t *out, int64_t *pb)
{
  if (strcmp(pad, "SAME") == 0) {
    *out = (in + s - 1) / s;
    int64_t total = (*out - 1) * s + k - in;
    *pb = total > 0 ? total / 2 : 0;
  } else if (strcmp(pad, "VALID") == 0) {
    *out = (in - k) / s + 1;
    *pb = 0;
  } else {
    *out = (in + before + after - k) / s + 1;
    *pb = before;
  }
}

/* The head in double (ref) and the sum of its products' magnitudes (mag); out dims in y. */
static void head_reference(const head_case *c, const float *x, const float *f, double *ref,
                           double *mag, int64_t *y, int *rank)
{
  if (c->kind == MATMUL) {
    int64_t m = c->x[0], k = c->x[1], n = c->f[1];
    *rank = 2, y[0] = m, y[1] = n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t q = 0; q < k; q++) {
          double p = (double)x[i * k + q] * (double)f[q * n + j];
          ref[i * n + j] += p, mag[i * n + j] += fabs(p);
        }
    return;
  }
  int64_t oh, ow, pt, pl, C = c->x[3], M = c->f[3];
  out_dim(c->x[1], c->f[0], c->s, c->pad, c->pads[0], c->pads[1], &oh, &pt);
  out_dim(c->x[2], c->f[1], c->s, c->pad, c->pads[2], c->pads[3], &ow, &pl);
  int64_t co = c->kind == DEPTHWISE ? C * M : M;
  *rank = 4, y[0] = c->x[0], y[1] = oh, y[2] = ow, y[3] = co;
  for (int64_t b = 0; b < y[0]; b++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++)
        for (int64_t a = 0; a < c->f[0]; a++)
          for (int64_t e = 0; e < c->f[1]; e++) {
            int64_t ih = i * c->s - pt + a, iw = j * c->s - pl + e;
            if (ih < 0 || ih >= c->x[1] || iw < 0 || iw >= c->x[2])
              continue;
            size_t y0 = (size_t)(((b * oh + i) * ow + j) * co);
            const float *xp = x + ((b * c->x[1] + ih) * c->x[2] + iw) * C;
            const float *fp = f + (a * c->f[1] + e) * C * M;
            for (int64_t ch = 0; ch < C; ch++)
              for (int64_t m = 0; m < M; m++) {
                size_t yi = y0 + (size_t)(c->kind == DEPTHWISE ? ch * M + m : m);
                double p = (double)xp[ch] * (double)fp[ch * M + m];
                ref[yi] += p, mag[yi] += fabs(p);
              }
          }
}

/* The head's node. EXPLICIT goes through the generic builder (explicit_paddings). */
static clg_node *head_node(clg_graph *g, const head_case *c, clg_node *xn, clg_node *fn)
{
  int64_t st[4] = {1, c->s, c->s, 1};
  if (c->kind == MATMUL)
    return clg_matmul(g, "head", xn, fn, false, false);
  bool explicit = strcmp(c->pad, "EXPLICIT") == 0;
  if (c->kind == DEPTHWISE && !explicit)
    return clg_depthwise_conv2d(g, "head", xn, fn, st, c->pad, NULL);
  if (!explicit)
    return clg_conv2d(g, "head", xn, fn, st, c->pad, NULL);
  int64_t ep[8] = {0, 0, c->pads[0], c->pads[1], c->pads[2], c->pads[3], 0, 0};
  clg_attr at[3] = {clg_attr_int_list("strides", 4, st), clg_attr_string("padding", "EXPLICIT"),
                    clg_attr_int_list("explicit_paddings", 8, ep)};
  clg_output in[2] = {{xn, 0}, {fn, 0}};
  return clg_op(g, c->kind == DEPTHWISE ? "DepthwiseConv2dNative" : "Conv2D", "head", 2, in, 3, at);
}

/* The operands of a chain, shared by the graph and the reference. */
typedef struct operands {
  float *bias, *res, *late, *vec;
  float scalar, lo, hi;
} operands;

/* Builds head -> chain -> Neg (the Neg is fetched, so that the chain's last op is in place
 * too) on dev; *first: a Neg of the first op's output when twice, else NULL. */
static clg_node *build(clg_graph *g, const char *dev, const head_case *c, const chain *ch,
                       const float *x, const float *f, const operands *o, int rank,
                       const int64_t *y, clg_node **first)
{
  clg_graph_push_device(g, dev);
  int64_t cols = y[rank - 1];
  clg_node *xn = clg_const_f32(g, "x", c->kind == MATMUL ? 2 : 4, c->x, x);
  clg_node *fn = clg_const_f32(g, "f", c->kind == MATMUL ? 2 : 4, c->f, f);
  clg_node *bn = clg_const_f32(g, "bias", 1, &cols, o->bias);
  clg_node *rn = clg_const_f32(g, "res", rank, y, o->res);
  clg_node *vn = clg_const_f32(g, "vec", 1, &cols, o->vec);
  clg_node *sn = clg_const_f32(g, "scalar", 0, NULL, &o->scalar);
  clg_node *lo = clg_const_f32(g, "lo", 0, NULL, &o->lo);
  clg_node *hi = clg_const_f32(g, "hi", 0, NULL, &o->hi);
  clg_node *v = head_node(g, c, xn, fn);
  *first = NULL;
  for (int k = 0; ch->ops[k] != END; k++) {
    switch (ch->ops[k]) {
    case BIAS:
      v = clg_bias_add(g, NULL, v, bn);
      break;
    case RELU:
      v = clg_relu(g, NULL, v);
      break;
    case RELU6:
      v = clg_relu6(g, NULL, v);
      break;
    case CLIP:
      v = clg_minimum(g, NULL, clg_maximum(g, NULL, v, lo), hi);
      break;
    case RES:
      v = clg_add(g, NULL, v, rn);
      break;
    case SCALAR:
      v = clg_add_v2(g, NULL, v, sn);
      break;
    case VEC:
      v = clg_add_v2(g, NULL, v, vn);
      break;
    case LATE: /* its operand is a node after the head (Neg of a Const) */
      v = clg_add(g, NULL, v, clg_neg(g, "late", clg_const_f32(g, "l", rank, y, o->late)));
      break;
    case END:
      break;
    }
    if (k == 0)
      *first = v;
  }
  clg_node *out = clg_neg(g, "out", v);
  if (ch->twice) /* a second reader of the first op's output */
    *first = clg_neg(g, "first", *first);
  clg_graph_pop_device(g);
  return out;
}

/* The chain on the reference, element i of cols columns; first: after the first op. */
static double chain_ref(const chain *ch, const operands *o, double v, size_t i, size_t cols,
                        double *first)
{
  for (int k = 0; ch->ops[k] != END; k++) {
    switch (ch->ops[k]) {
    case BIAS:
      v += o->bias[i % cols];
      break;
    case RELU:
      v = v > 0 ? v : 0;
      break;
    case RELU6:
      v = v < 0 ? 0 : v > 6 ? 6 : v;
      break;
    case CLIP:
      v = v < o->lo ? o->lo : v > o->hi ? o->hi : v;
      break;
    case RES:
      v += o->res[i];
      break;
    case SCALAR:
      v += o->scalar;
      break;
    case VEC:
      v += o->vec[i % cols];
      break;
    case LATE:
      v -= o->late[i];
      break;
    case END:
      break;
    }
    if (k == 0)
      *first = v;
  }
  return v;
}

/* Runs the graph on dev with fusion on (fuse) or off; the results and the steps fused. */
static clg_code run(const char *dev, bool fuse, const head_case *c, const chain *ch, const float *x,
                    const float *f, const operands *o, int rank, const int64_t *y, clg_tensor **res,
                    int *fused)
{
  if (fuse)
    unsetenv("CLGRAPH_FUSE");
  else
    setenv("CLGRAPH_FUSE", "0", 1);
  clg_graph *g = clg_graph_new();
  clg_node *first = NULL, *out = build(g, dev, c, ch, x, f, o, rank, y, &first);
  clg_session *s = NULL;
  clg_code code = clg_graph_status(g);
  if (code == CLG_OK)
    code = clg_session_new(g, &opt, &s);
  clg_output fetch[2] = {{out, 0}, {first, 0}};
  if (code == CLG_OK)
    code = clg_session_run_outputs(s, 0, NULL, NULL, ch->twice ? 2 : 1, fetch, res, 0, NULL);
  clg_plan_stats ps = {0};
  if (code == CLG_OK)
    code = clg_session_plan_stats(s, &ps);
  *fused = ps.num_fused;
  clg_session_free(s);
  clg_graph_free(g);
  unsetenv("CLGRAPH_FUSE");
  return code;
}

static const char *epi_name[] = {
    "BiasAdd",       "Relu",          "Relu6",         "Clip",
    "Add(residual)", "AddV2(scalar)", "AddV2(vector)", "Add(late operand)"};

static void describe(const head_case *c, const chain *ch, char *what, size_t size)
{
  int at = snprintf(what, size, "%s x [%lld,%lld,%lld,%lld] f [%lld,%lld,%lld,%lld] s %lld %s",
                    c->kind == CONV        ? "Conv2D"
                    : c->kind == DEPTHWISE ? "Depthwise"
                                           : "MatMul",
                    (long long)c->x[0], (long long)c->x[1], (long long)c->x[2], (long long)c->x[3],
                    (long long)c->f[0], (long long)c->f[1], (long long)c->f[2], (long long)c->f[3],
                    (long long)c->s, c->kind == MATMUL ? "" : c->pad);
  for (int k = 0; ch->ops[k] != END && at > 0 && (size_t)at < size; k++)
    at += snprintf(what + at, size - (size_t)at, " -> %s", epi_name[ch->ops[k]]);
  if (ch->twice && at > 0 && (size_t)at < size)
    snprintf(what + at, size - (size_t)at, " (first op read twice)");
}

/* Checks one fetched tensor against the reference within float rounding of the products. */
static void check_ref(const clg_tensor *t, const double *want, const double *tol, size_t ny,
                      const char *what, const char *dev, const char *which)
{
  size_t bad = ny;
  for (size_t i = 0; i < ny && bad == ny; i++)
    if (!(fabs(clg_test_elem(t, i) - want[i]) <= tol[i]))
      bad = i;
  CHECK_MSG(bad == ny, "%s on %s (%s): element %zu is %.9g, want %.9g", what, dev, which, bad,
            bad < ny ? clg_test_elem(t, bad) : 0.0, bad < ny ? want[bad] : 0.0);
}

static void check_case(const head_case *c, const chain *ch, bool gpu)
{
  size_t nx = (size_t)(c->x[0] * c->x[1] * (c->kind == MATMUL ? 1 : c->x[2] * c->x[3]));
  size_t nf = (size_t)(c->f[0] * c->f[1] * (c->kind == MATMUL ? 1 : c->f[2] * c->f[3]));
  float *x = rand_floats(nx, -1, 1), *f = rand_floats(nf, -1, 1);
  int64_t y[4] = {0};
  int rank = 0;
  size_t cap = 1 << 20;
  double *ref = calloc(cap, sizeof(double)), *mag = calloc(cap, sizeof(double));
  head_reference(c, x, f, ref, mag, y, &rank);
  size_t ny = clg_test_count(rank, y), cols = (size_t)y[rank - 1];
  /* Operands of the activations' scale, so that every branch of each is taken. */
  operands o = {rand_floats(cols, -1, 1),
                rand_floats(ny, -1, 1),
                rand_floats(ny, -1, 1),
                rand_floats(cols, -1, 1),
                0.25f,
                -0.5f,
                0.75f};
  double *want = malloc(ny * sizeof(double)), *want1 = malloc(ny * sizeof(double));
  double *tol = malloc(ny * sizeof(double));
  for (size_t i = 0; i < ny; i++) {
    want[i] = -chain_ref(ch, &o, ref[i], i, cols, &want1[i]);
    want1[i] = -want1[i];
    /* float products summed in float, then a few float adds: the ops after are 1-Lipschitz */
    tol[i] = 2e-6 * (mag[i] + 4) + 1e-6;
  }
  char what[256];
  describe(c, ch, what, sizeof what);
  clg_tensor *fused[2] = {NULL, NULL}, *plain[2] = {NULL, NULL};
  int nfused = -1, nplain = -1;
  clg_code code = run("/cpu:0", true, c, ch, x, f, &o, rank, y, fused, &nfused);
  CHECK_MSG(code == CLG_OK, "%s fused: %s", what, code == CLG_OK ? "" : clg_last_error());
  clg_code code2 = run("/cpu:0", false, c, ch, x, f, &o, rank, y, plain, &nplain);
  CHECK_MSG(code2 == CLG_OK, "%s unfused: %s", what, code2 == CLG_OK ? "" : clg_last_error());
  if (code == CLG_OK && code2 == CLG_OK) {
    CHECK_MSG(nfused == ch->fused, "%s: %d steps fused, want %d", what, nfused, ch->fused);
    CHECK_MSG(nplain == 0, "%s: %d steps fused with CLGRAPH_FUSE=0", what, nplain);
    for (int t = 0; t < (ch->twice ? 2 : 1); t++) {
      bool same = clg_tensor_bytes(fused[t]) == ny * sizeof(float) &&
                  clg_tensor_bytes(plain[t]) == ny * sizeof(float) &&
                  memcmp(clg_tensor_const_data(fused[t]), clg_tensor_const_data(plain[t]),
                         ny * sizeof(float)) == 0;
      CHECK_MSG(same, "%s: fused and unfused results differ (fetch %d)", what, t);
      check_ref(fused[t], t ? want1 : want, tol, ny, what, "CPU:0", t ? "first op" : "chain");
    }
  }
  if (gpu) { /* the stand-in runs the unfused steps: nothing fuses, the result is the same */
    clg_tensor *dev[2] = {NULL, NULL};
    int ndev = -1;
    code = run("/gpu:0", true, c, ch, x, f, &o, rank, y, dev, &ndev);
    CHECK_MSG(code == CLG_OK, "%s on GPU:0: %s", what, code == CLG_OK ? "" : clg_last_error());
    if (code == CLG_OK) {
      CHECK_MSG(ndev == 0, "%s on GPU:0: %d steps fused", what, ndev);
      check_ref(dev[0], want, tol, ny, what, "GPU:0", "chain");
    }
    clg_tensor_free(dev[0]), clg_tensor_free(dev[1]);
  }
  for (int t = 0; t < 2; t++)
    clg_tensor_free(fused[t]), clg_tensor_free(plain[t]);
  free(x), free(f), free(ref), free(mag), free(want), free(want1), free(tol);
  free(o.bias), free(o.res), free(o.late), free(o.vec);
}

/* Every chain on every head: 1x1 (one GEMM on the input), 3x3 SAME (im2col chunks), 3x3
 * stride 2 VALID, explicit asymmetric pads, a first layer of 3 channels, depthwise SAME and
 * strided, depthwise EXPLICIT (ONNX's symmetric pads, asymmetric ones) and wide rows, MatMul
 * thin and square. */
static const head_case heads[] = {
    {CONV, {1, 7, 6, 16}, {1, 1, 16, 24}, 1, "VALID", {0}},
    {CONV, {2, 9, 8, 8}, {3, 3, 8, 20}, 1, "SAME", {0}},
    {CONV, {1, 11, 10, 6}, {3, 3, 6, 33}, 2, "VALID", {0}},
    {CONV, {1, 8, 9, 5}, {3, 3, 5, 17}, 1, "EXPLICIT", {1, 2, 0, 3}},
    {CONV, {1, 16, 16, 3}, {3, 3, 3, 32}, 2, "EXPLICIT", {1, 1, 1, 1}},
    /* wide outputs: the GEMM and its epilogue in blocks of 48 and 72 rows, one task and two */
    {CONV, {1, 10, 11, 8}, {1, 1, 8, 1100}, 1, "VALID", {0}},
    {CONV, {2, 12, 12, 16}, {1, 1, 16, 700}, 1, "VALID", {0}},
    {DEPTHWISE, {1, 9, 9, 24}, {3, 3, 24, 1}, 1, "SAME", {0}},
    {DEPTHWISE, {2, 10, 7, 19}, {3, 3, 19, 1}, 2, "SAME", {0}},
    {DEPTHWISE, {2, 10, 7, 19}, {3, 3, 19, 1}, 2, "EXPLICIT", {1, 1, 1, 1}},
    {DEPTHWISE, {1, 9, 12, 40}, {3, 3, 40, 1}, 1, "EXPLICIT", {0, 2, 1, 0}},
    /* rows wide enough for the 3-wide kernel's 8-pixel tiles and each remainder (4, 2, 1) */
    {DEPTHWISE, {2, 5, 31, 17}, {3, 3, 17, 1}, 1, "SAME", {0}},
    {DEPTHWISE, {1, 6, 37, 3}, {3, 3, 3, 1}, 2, "EXPLICIT", {1, 1, 1, 1}},
    {MATMUL, {5, 40, 0, 0}, {40, 9, 0, 0}, 1, "", {0}},
    {MATMUL, {33, 64, 0, 0}, {64, 70, 0, 0}, 1, "", {0}},
};

static const chain chains[] = {
    {{BIAS, END}, 1, false},
    {{BIAS, RELU, END}, 2, false},
    {{BIAS, RELU6, END}, 2, false},
    {{BIAS, CLIP, END}, 3, false},
    {{BIAS, RES, RELU, END}, 3, false},
    {{RES, END}, 1, false},
    {{SCALAR, RELU, END}, 2, false},
    {{VEC, RELU6, END}, 2, false},
    {{RELU, BIAS, RELU6, RES, END}, 4, false},
    /* must not fuse past: the first op's output read twice; an operand computed later */
    {{BIAS, RELU, END}, 1, true},
    {{BIAS, LATE, RELU, END}, 1, false},
};

int main(void)
{
  clg_test_seed(20261202);
  clg_session_options_init(&opt);
  bool gpu = clg_test_require_gpus(1);
  for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
    for (size_t k = 0; k < sizeof chains / sizeof chains[0]; k++)
      check_case(&heads[h], &chains[k], gpu && k < 2 && heads[h].kind == CONV);
  return clg_test_summary("test_fused_epilogue");
}
