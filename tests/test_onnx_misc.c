/* Issue 24's ONNX rules of src/import/onnx_ops_misc.c and the modes added to other families,
 * on models written here for what ONNX's node tests leave out, each against naive loops in
 * double: Det of 3x3 matrices (against Gaussian elimination with partial pivoting), DFT
 * onesided with dft_length padding and truncating, TopK smallest of int32 with the most negative
 * value and ties, integer Pow, Neg and Abs (numpy's wrap-around at INT32_MIN), Pad edge over
 * two axes, MaxUnpool with strides and pads, BatchNormalization in training mode on rank 3,
 * pools by strided slices (MaxPool dilated with its Indices and a tie, AveragePool 3-D with
 * pads left out of the count), and a node with no outputs beside one that has them.
 * Bad nodes get errors naming them. The device comes from CLG_ONNX_DEVICE (the gpu variant
 * places the model on a PoCL stand-in, soft placement on, as the suite's driver does). */
// ctest: default
// ctest: gpu CLG_ONNX_DEVICE=/device:GPU:0
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_testutil.h"
#include <clgraph/import.h>

static double urand(unsigned *s)
{
  *s = *s * 1103515245u + 12345u;
  return (double)((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* A one-node model: inputs in[0..nin) of types/shapes given, one output. */
typedef struct io {
  const char *name;
  int elem, rank;
  int64_t dims[6];
} io;

static clg_test_pb one_node(clg_test_pb *nd, int nin, const io *in, const io *out)
{
  clg_test_pb g = {0};
  clg_test_pb_msg(&g, 1, nd);
  for (int i = 0; i < nin; i++)
    clg_test_onnx_value_info(&g, 11, in[i].name, in[i].elem, in[i].rank, in[i].dims);
  clg_test_onnx_value_info(&g, 12, out->name, out->elem, out->rank, out->dims);
  return g;
}

/* The error of importing m, NULL when it imports. */
static char err_buf[1024];
static const char *import_error(const clg_test_pb *m)
{
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  clg_code code = clg_graph_import_memory(g, CLG_IMPORT_ONNX, m->p, m->n, NULL, &r);
  snprintf(err_buf, sizeof err_buf, "%s", code == CLG_OK ? "" : clg_graph_error(g));
  clg_import_result_free(r);
  clg_graph_free(g);
  return code == CLG_OK ? NULL : err_buf;
}

/* --- Det ---------------------------------------------------------------------------------- */

/* det by Gaussian elimination with partial pivoting, in double */
static double det_ref(const double *a0, int m)
{
  double a[9], d = 1;
  memcpy(a, a0, sizeof(double) * (size_t)(m * m));
  for (int k = 0; k < m; k++) {
    int p = k;
    for (int i = k + 1; i < m; i++)
      if (fabs(a[i * m + k]) > fabs(a[p * m + k]))
        p = i;
    if (a[p * m + k] == 0)
      return 0;
    if (p != k) {
      for (int j = 0; j < m; j++) {
        double t = a[k * m + j];
        a[k * m + j] = a[p * m + j];
        a[p * m + j] = t;
      }
      d = -d;
    }
    d *= a[k * m + k];
    for (int i = k + 1; i < m; i++) {
      double f = a[i * m + k] / a[k * m + k];
      for (int j = k; j < m; j++)
        a[i * m + j] -= f * a[k * m + j];
    }
  }
  return d;
}

static void test_det(void)
{
  for (int m = 1; m <= 3; m++) {
    io in = {"x", F32, 3, {4, m, m}}, out = {"y", F32, 1, {4}};
    clg_test_pb nd = clg_test_onnx_node("Det", (const char *const[]){"x", NULL, "y", NULL});
    clg_test_pb g = one_node(&nd, 1, &in, &out), mo = clg_test_onnx_model(&g);
    double v[36], want[4];
    unsigned seed = 7u + (unsigned)m;
    for (int i = 0; i < 4 * m * m; i++)
      v[i] = urand(&seed) * 2;
    for (int b = 0; b < 4; b++)
      want[b] = det_ref(v + b * m * m, m);
    clg_tensor *x = clg_test_onnx_tensor(CLG_FLOAT32, 3, in.dims, v), *y = NULL;
    CHECK_OK(clg_test_onnx_run(&mo, 1, &x, 1, &y));
    clg_test_onnx_check_close(m == 1   ? "Det 1x1"
                              : m == 2 ? "Det 2x2"
                                       : "Det 3x3",
                              y, CLG_FLOAT32, 1, out.dims, want);
    clg_tensor_free(x);
    clg_tensor_free(y);
    free(mo.p);
  }
  io in = {"x", F32, 2, {4, 4}}, out = {"y", F32, 0, {0}};
  clg_test_pb nd = clg_test_onnx_node("Det", (const char *const[]){"x", NULL, "y", NULL});
  clg_test_pb g = one_node(&nd, 1, &in, &out), mo = clg_test_onnx_model(&g);
  const char *e = import_error(&mo);
  CHECK(e != NULL);
  if (e)
    CHECK_CONTAINS(e, "Det of 4 x 4 matrices: only 1 x 1 to 3 x 3 are supported");
  free(mo.p);
}

/* --- DFT ---------------------------------------------------------------------------------- */

static void test_dft(void)
{
  /* real [2, 6, 3, 1] along axis 1, onesided, dft_length 8 (zero-padded) and 4 (truncated) */
  for (int t = 0; t < 2; t++) {
    int64_t len = t ? 4 : 8, cols = len / 2 + 1;
    io in = {"x", F32, 4, {2, 6, 3, 1}}, out = {"y", F32, 4, {2, cols, 3, 2}};
    clg_test_pb nd = clg_test_onnx_node("DFT", (const char *const[]){"x", "len", NULL, "y", NULL});
    clg_test_onnx_attr_i(&nd, "onesided", 1);
    clg_test_pb g = one_node(&nd, 1, &in, &out);
    double lv = (double)len;
    clg_test_onnx_init(&g, "len", I64, 0, NULL, 1, &lv);
    clg_test_pb mo = clg_test_onnx_model(&g);
    double v[36], want[2 * 5 * 3 * 2];
    unsigned seed = 11u + (unsigned)t;
    for (int i = 0; i < 36; i++)
      v[i] = urand(&seed);
    for (int b = 0; b < 2; b++)
      for (int64_t k = 0; k < cols; k++)
        for (int w = 0; w < 3; w++) {
          double re = 0, im = 0;
          for (int j = 0; j < 6 && j < len; j++) {
            double a = -2 * 3.14159265358979323846 * (double)(j * k) / (double)len;
            re += v[(b * 6 + j) * 3 + w] * cos(a);
            im += v[(b * 6 + j) * 3 + w] * sin(a);
          }
          want[((b * cols + k) * 3 + w) * 2] = re;
          want[((b * cols + k) * 3 + w) * 2 + 1] = im;
        }
    clg_tensor *x = clg_test_onnx_tensor(CLG_FLOAT32, 4, in.dims, v), *y = NULL;
    CHECK_OK(clg_test_onnx_run(&mo, 1, &x, 1, &y));
    clg_test_onnx_check_close(t ? "DFT truncated" : "DFT zero-padded", y, CLG_FLOAT32, 4, out.dims,
                              want);
    clg_tensor_free(x);
    clg_tensor_free(y);
    free(mo.p);
  }
}

/* --- TopK smallest, integer Pow, Neg, Abs --------------------------------------------------- */

static void test_topk_smallest_int(void)
{
  io in = {"x", I32, 2, {2, 6}}, out = {"v", I32, 2, {2, 3}};
  clg_test_pb nd =
      clg_test_onnx_node("TopK", (const char *const[]){"x", "k", NULL, "v", "i", NULL});
  clg_test_onnx_attr_i(&nd, "largest", 0);
  clg_test_pb g = one_node(&nd, 1, &in, &out);
  io oi = {"i", I64, 2, {2, 3}};
  clg_test_onnx_value_info(&g, 12, oi.name, oi.elem, oi.rank, oi.dims);
  double k = 3;
  clg_test_onnx_init(&g, "k", I64, 1, (const int64_t[]){1}, 1, &k);
  clg_test_pb mo = clg_test_onnx_model(&g);
  const double v[12] = {5, -2147483648.0, 7, 2147483647.0, -2147483648.0, 0, 3, 3, 1, 3, -1, 1};
  /* the smallest three of each row, ties by the lower index */
  double wv[6], wi[6];
  for (int r = 0; r < 2; r++) {
    bool used[6] = {0};
    for (int q = 0; q < 3; q++) {
      int best = -1;
      for (int j = 0; j < 6; j++)
        if (!used[j] && (best < 0 || v[r * 6 + j] < v[r * 6 + best]))
          best = j;
      used[best] = true;
      wv[r * 3 + q] = v[r * 6 + best];
      wi[r * 3 + q] = best;
    }
  }
  clg_tensor *x = clg_test_onnx_tensor(CLG_INT32, 2, in.dims, v), *y[2] = {NULL, NULL};
  CHECK_OK(clg_test_onnx_run(&mo, 1, &x, 2, y));
  clg_test_onnx_check_close("TopK smallest values", y[0], CLG_INT32, 2, out.dims, wv);
  clg_test_onnx_check_close("TopK smallest indices", y[1], CLG_INT64, 2, oi.dims, wi);
  clg_tensor_free(x);
  clg_tensor_free(y[0]);
  clg_tensor_free(y[1]);
  free(mo.p);
}

/* Integer Div truncates toward zero (C's /): q = Div(x, y) on int32 and on int8 (x and y cast
 * to int8, the quotient cast back to int32 for the check), every sign combination. */
static void test_int_div(void)
{
  io in[2] = {{"x", I32, 1, {8}}, {"y", I32, 1, {8}}};
  clg_test_pb g = {0};
  clg_test_pb nd = clg_test_onnx_node("Div", (const char *const[]){"x", "y", NULL, "q", NULL});
  clg_test_pb_msg(&g, 1, &nd);
  nd = clg_test_onnx_node("Cast", (const char *const[]){"x", NULL, "x8", NULL});
  clg_test_onnx_attr_i(&nd, "to", 3); /* INT8 */
  clg_test_pb_msg(&g, 1, &nd);
  nd = clg_test_onnx_node("Cast", (const char *const[]){"y", NULL, "y8", NULL});
  clg_test_onnx_attr_i(&nd, "to", 3);
  clg_test_pb_msg(&g, 1, &nd);
  nd = clg_test_onnx_node("Div", (const char *const[]){"x8", "y8", NULL, "q8", NULL});
  clg_test_pb_msg(&g, 1, &nd);
  nd = clg_test_onnx_node("Cast", (const char *const[]){"q8", NULL, "q32", NULL});
  clg_test_onnx_attr_i(&nd, "to", I32);
  clg_test_pb_msg(&g, 1, &nd);
  for (int i = 0; i < 2; i++)
    clg_test_onnx_value_info(&g, 11, in[i].name, in[i].elem, in[i].rank, in[i].dims);
  clg_test_onnx_value_info(&g, 12, "q", I32, 1, (const int64_t[]){8});
  clg_test_onnx_value_info(&g, 12, "q32", I32, 1, (const int64_t[]){8});
  clg_test_pb mo = clg_test_onnx_model(&g);
  const double xv[8] = {7, -7, 7, -7, 6, -6, 0, -128}, yv[8] = {2, 2, -2, -2, 3, -3, 5, 3};
  double qw[8];
  for (int i = 0; i < 8; i++)
    qw[i] = (double)((int)xv[i] / (int)yv[i]);
  clg_tensor *t[2] = {clg_test_onnx_tensor(CLG_INT32, 1, in[0].dims, xv),
                      clg_test_onnx_tensor(CLG_INT32, 1, in[1].dims, yv)};
  clg_tensor *y[2] = {NULL, NULL};
  CHECK_OK(clg_test_onnx_run(&mo, 2, t, 2, y));
  int64_t d8 = 8;
  clg_test_onnx_check_close("Div int32", y[0], CLG_INT32, 1, &d8, qw);
  clg_test_onnx_check_close("Div int8", y[1], CLG_INT32, 1, &d8, qw);
  for (int i = 0; i < 2; i++) {
    clg_tensor_free(t[i]);
    clg_tensor_free(y[i]);
  }
  free(mo.p);
}

static void test_int_pow_neg_abs(void)
{
  /* z = Pow(x, e) (int64 ^ int32), n = Neg(a), m = Abs(a) (int32) */
  io in[3] = {{"x", I64, 1, {5}}, {"e", I32, 1, {5}}, {"a", I32, 1, {4}}};
  clg_test_pb g = {0};
  clg_test_pb nd = clg_test_onnx_node("Pow", (const char *const[]){"x", "e", NULL, "z", NULL});
  clg_test_pb_msg(&g, 1, &nd);
  nd = clg_test_onnx_node("Neg", (const char *const[]){"a", NULL, "n", NULL});
  clg_test_pb_msg(&g, 1, &nd);
  nd = clg_test_onnx_node("Abs", (const char *const[]){"a", NULL, "m", NULL});
  clg_test_pb_msg(&g, 1, &nd);
  for (int i = 0; i < 3; i++)
    clg_test_onnx_value_info(&g, 11, in[i].name, in[i].elem, in[i].rank, in[i].dims);
  clg_test_onnx_value_info(&g, 12, "z", I64, 1, (const int64_t[]){5});
  clg_test_onnx_value_info(&g, 12, "n", I32, 1, (const int64_t[]){4});
  clg_test_onnx_value_info(&g, 12, "m", I32, 1, (const int64_t[]){4});
  clg_test_pb mo = clg_test_onnx_model(&g);
  const double xv[5] = {3, -7, 2, 0, 12345}, ev[5] = {13, 5, 52, 0, 3}, av[4] = {5, -9, 0, 0};
  double zw[5], nw[4], mw[4];
  for (int i = 0; i < 5; i++) {
    int64_t p = 1;
    for (int k = 0; k < (int)ev[i]; k++)
      p *= (int64_t)xv[i];
    zw[i] = (double)p;
  }
  clg_tensor *t[3] = {clg_test_onnx_tensor(CLG_INT64, 1, in[0].dims, xv),
                      clg_test_onnx_tensor(CLG_INT32, 1, in[1].dims, ev),
                      clg_test_onnx_tensor(CLG_INT32, 1, in[2].dims, av)};
  ((int32_t *)clg_tensor_data(t[2]))[3] = INT32_MIN;
  for (int i = 0; i < 4; i++) {
    int32_t a = ((int32_t *)clg_tensor_data(t[2]))[i];
    /* numpy's wrap-around: -INT32_MIN and |INT32_MIN| are INT32_MIN */
    nw[i] = a == INT32_MIN ? (double)INT32_MIN : -(double)a;
    mw[i] = a == INT32_MIN ? (double)INT32_MIN : fabs((double)a);
  }
  clg_tensor *y[3] = {NULL, NULL, NULL};
  CHECK_OK(clg_test_onnx_run(&mo, 3, t, 3, y));
  int64_t d5 = 5, d4 = 4;
  clg_test_onnx_check_close("Pow int64 ^ int32", y[0], CLG_INT64, 1, &d5, zw);
  clg_test_onnx_check_close("Neg int32", y[1], CLG_INT32, 1, &d4, nw);
  clg_test_onnx_check_close("Abs int32", y[2], CLG_INT32, 1, &d4, mw);
  for (int i = 0; i < 3; i++) {
    clg_tensor_free(t[i]);
    clg_tensor_free(y[i]);
  }
  free(mo.p);
}

/* --- Pad edge, MaxUnpool, BatchNormalization training ---------------------------------------- */

static void test_pad_edge(void)
{
  io in = {"x", F32, 3, {2, 3, 4}}, out = {"y", F32, 3, {2, 6, 5}};
  clg_test_pb nd = clg_test_onnx_node("Pad", (const char *const[]){"x", "p", NULL, "y", NULL});
  clg_test_pb a = {0};
  clg_test_pb_str(&a, 1, "mode");
  clg_test_pb_str(&a, 4, "edge");
  clg_test_pb_int(&a, 20, 3);
  clg_test_pb_msg(&nd, 5, &a);
  clg_test_pb g = one_node(&nd, 1, &in, &out);
  const double pads[6] = {0, 2, 0, 0, 1, 1}; /* axis 1: 2 before, 1 after; axis 2: 1 after */
  clg_test_onnx_init(&g, "p", I64, 1, (const int64_t[]){6}, 6, pads);
  clg_test_pb mo = clg_test_onnx_model(&g);
  double v[24], want[60];
  unsigned seed = 3;
  for (int i = 0; i < 24; i++)
    v[i] = urand(&seed);
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 5; j++) {
        int si = i - 2 < 0 ? 0 : i - 2 > 2 ? 2 : i - 2, sj = j > 3 ? 3 : j;
        want[(b * 6 + i) * 5 + j] = v[(b * 3 + si) * 4 + sj];
      }
  clg_tensor *x = clg_test_onnx_tensor(CLG_FLOAT32, 3, in.dims, v), *y = NULL;
  CHECK_OK(clg_test_onnx_run(&mo, 1, &x, 1, &y));
  clg_test_onnx_check_close("Pad edge", y, CLG_FLOAT32, 3, out.dims, want);
  clg_tensor_free(x);
  clg_tensor_free(y);
  free(mo.p);
}

static void test_max_unpool(void)
{
  /* X [1, 2, 2, 2] unpooled with kernel 3, stride 2, pads 1/0: (2 - 1) * 2 + 3 - 1 = 4 */
  io in[2] = {{"x", F32, 4, {1, 2, 2, 2}}, {"i", I64, 4, {1, 2, 2, 2}}},
     out = {"y", F32, 4, {1, 2, 4, 4}};
  clg_test_pb nd =
      clg_test_onnx_node("MaxUnpool", (const char *const[]){"x", "i", NULL, "y", NULL});
  clg_test_onnx_attr_ints(&nd, "kernel_shape", 2, (const int64_t[]){3, 3});
  clg_test_onnx_attr_ints(&nd, "strides", 2, (const int64_t[]){2, 2});
  clg_test_onnx_attr_ints(&nd, "pads", 4, (const int64_t[]){1, 1, 0, 0});
  clg_test_pb g = one_node(&nd, 2, in, &out), mo = clg_test_onnx_model(&g);
  const double xv[8] = {1.5, -2, 3, 4, 5, 6.25, -7, 8};
  const double iv[8] = {0, 3, 9, 15, 17, 18, 24, 31}; /* flat over [1, 2, 4, 4] */
  double want[32] = {0};
  for (int k = 0; k < 8; k++)
    want[(int)iv[k]] = xv[k];
  clg_tensor *t[2] = {clg_test_onnx_tensor(CLG_FLOAT32, 4, in[0].dims, xv),
                      clg_test_onnx_tensor(CLG_INT64, 4, in[1].dims, iv)},
             *y = NULL;
  CHECK_OK(clg_test_onnx_run(&mo, 2, t, 1, &y));
  clg_test_onnx_check_close("MaxUnpool", y, CLG_FLOAT32, 4, out.dims, want);
  clg_tensor_free(t[0]);
  clg_tensor_free(t[1]);
  clg_tensor_free(y);
  free(mo.p);
}

static void test_batchnorm_training(void)
{
  /* x [3, 2, 5]: statistics over axes 0 and 2 per channel */
  io in = {"x", F32, 3, {3, 2, 5}}, out = {"y", F32, 3, {3, 2, 5}};
  clg_test_pb nd =
      clg_test_onnx_node("BatchNormalization", (const char *const[]){"x", "s", "b", "m", "v", NULL,
                                                                     "y", "rm", "rv", NULL});
  clg_test_onnx_attr_i(&nd, "training_mode", 1);
  clg_test_onnx_attr_f(&nd, "momentum", 0.75f);
  clg_test_onnx_attr_f(&nd, "epsilon", 0.01f);
  clg_test_pb g = one_node(&nd, 1, &in, &out);
  clg_test_onnx_value_info(&g, 12, "rm", F32, 1, (const int64_t[]){2});
  clg_test_onnx_value_info(&g, 12, "rv", F32, 1, (const int64_t[]){2});
  const double sv[2] = {1.5, -0.5}, bv[2] = {0.25, 2}, mv[2] = {0.1, -0.3}, vv[2] = {1, 2};
  clg_test_onnx_init(&g, "s", F32, 1, (const int64_t[]){2}, 2, sv);
  clg_test_onnx_init(&g, "b", F32, 1, (const int64_t[]){2}, 2, bv);
  clg_test_onnx_init(&g, "m", F32, 1, (const int64_t[]){2}, 2, mv);
  clg_test_onnx_init(&g, "v", F32, 1, (const int64_t[]){2}, 2, vv);
  clg_test_pb mo = clg_test_onnx_model(&g);
  double x[30], want[30], rm[2], rv[2];
  unsigned seed = 5;
  for (int i = 0; i < 30; i++)
    x[i] = urand(&seed) * 3;
  for (int ch = 0; ch < 2; ch++) {
    double s = 0, q = 0;
    for (int b = 0; b < 3; b++)
      for (int k = 0; k < 5; k++)
        s += x[(b * 2 + ch) * 5 + k];
    double mean = s / 15;
    for (int b = 0; b < 3; b++)
      for (int k = 0; k < 5; k++)
        q += (x[(b * 2 + ch) * 5 + k] - mean) * (x[(b * 2 + ch) * 5 + k] - mean);
    double var = q / 15;
    for (int b = 0; b < 3; b++)
      for (int k = 0; k < 5; k++) {
        int i = (b * 2 + ch) * 5 + k;
        want[i] = (x[i] - mean) / sqrt(var + (double)0.01f) * sv[ch] + bv[ch];
      }
    rm[ch] = mv[ch] * 0.75 + mean * 0.25;
    rv[ch] = vv[ch] * 0.75 + var * 0.25;
  }
  clg_tensor *t = clg_test_onnx_tensor(CLG_FLOAT32, 3, in.dims, x), *y[3] = {NULL, NULL, NULL};
  CHECK_OK(clg_test_onnx_run(&mo, 1, &t, 3, y));
  int64_t two = 2;
  clg_test_onnx_check_close("BatchNormalization training y", y[0], CLG_FLOAT32, 3, out.dims, want);
  clg_test_onnx_check_close("BatchNormalization running mean", y[1], CLG_FLOAT32, 1, &two, rm);
  clg_test_onnx_check_close("BatchNormalization running var", y[2], CLG_FLOAT32, 1, &two, rv);
  clg_tensor_free(t);
  for (int i = 0; i < 3; i++)
    clg_tensor_free(y[i]);
  free(mo.p);
}

/* --- pools by strided slices --------------------------------------------------------------- */

static void test_pool_slices(void)
{
  /* MaxPool 3x3, dilation 2 (a span of 5), pads H 2/1, W 1/0, with Indices, on [1, 2, 5, 6]:
   * out H 5 + 3 - 5 + 1 = 4, W 6 + 1 - 5 + 1 = 3 */
  {
    io in = {"x", F32, 4, {1, 2, 5, 6}}, out = {"y", F32, 4, {1, 2, 4, 3}};
    clg_test_pb nd =
        clg_test_onnx_node("MaxPool", (const char *const[]){"x", NULL, "y", "i", NULL});
    clg_test_onnx_attr_ints(&nd, "kernel_shape", 2, (const int64_t[]){3, 3});
    clg_test_onnx_attr_ints(&nd, "dilations", 2, (const int64_t[]){2, 2});
    clg_test_onnx_attr_ints(&nd, "pads", 4, (const int64_t[]){2, 1, 1, 0});
    clg_test_pb g = one_node(&nd, 1, &in, &out);
    clg_test_onnx_value_info(&g, 12, "i", I64, 4, out.dims);
    clg_test_pb mo = clg_test_onnx_model(&g);
    double v[60], want[24], wi[24];
    unsigned seed = 9;
    for (int i = 0; i < 60; i++)
      v[i] = urand(&seed);
    v[8] = v[6] = 2; /* a tie in one window: the first in the window's order wins */
    for (int ch = 0; ch < 2; ch++)
      for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++) {
          double best = -INFINITY;
          int bi = -1;
          for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++) {
              int h = a + 2 * p - 2, w = b + 2 * q - 1;
              if (h < 0 || h >= 5 || w < 0 || w >= 6)
                continue;
              if (v[(ch * 5 + h) * 6 + w] > best) {
                best = v[(ch * 5 + h) * 6 + w];
                bi = (ch * 5 + h) * 6 + w;
              }
            }
          want[(ch * 4 + a) * 3 + b] = best;
          wi[(ch * 4 + a) * 3 + b] = bi;
        }
    clg_tensor *x = clg_test_onnx_tensor(CLG_FLOAT32, 4, in.dims, v), *y[2] = {NULL, NULL};
    CHECK_OK(clg_test_onnx_run(&mo, 1, &x, 2, y));
    clg_test_onnx_check_close("MaxPool dilated", y[0], CLG_FLOAT32, 4, out.dims, want);
    clg_test_onnx_check_close("MaxPool dilated indices", y[1], CLG_INT64, 4, out.dims, wi);
    clg_tensor_free(x);
    clg_tensor_free(y[0]);
    clg_tensor_free(y[1]);
    free(mo.p);
  }
  /* AveragePool 3-D, kernel 2, stride 2, pads 1 each side, count_include_pad 0, [1, 1, 3, 3, 4] */
  {
    io in = {"x", F32, 5, {1, 1, 3, 3, 4}}, out = {"y", F32, 5, {1, 1, 2, 2, 3}};
    clg_test_pb nd = clg_test_onnx_node("AveragePool", (const char *const[]){"x", NULL, "y", NULL});
    clg_test_onnx_attr_ints(&nd, "kernel_shape", 3, (const int64_t[]){2, 2, 2});
    clg_test_onnx_attr_ints(&nd, "strides", 3, (const int64_t[]){2, 2, 2});
    clg_test_onnx_attr_ints(&nd, "pads", 6, (const int64_t[]){1, 1, 1, 0, 0, 1});
    clg_test_pb g = one_node(&nd, 1, &in, &out), mo = clg_test_onnx_model(&g);
    double v[36], want[12];
    unsigned seed = 13;
    for (int i = 0; i < 36; i++)
      v[i] = urand(&seed);
    const int pbg[3] = {1, 1, 1}, dims[3] = {3, 3, 4};
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++)
        for (int e = 0; e < 3; e++) {
          double sum = 0;
          int cnt = 0;
          for (int p = 0; p < 2; p++)
            for (int q = 0; q < 2; q++)
              for (int r = 0; r < 2; r++) {
                int z = a * 2 + p - pbg[0], h = b * 2 + q - pbg[1], w = e * 2 + r - pbg[2];
                if (z < 0 || z >= dims[0] || h < 0 || h >= dims[1] || w < 0 || w >= dims[2])
                  continue;
                sum += v[(z * 3 + h) * 4 + w];
                cnt++;
              }
          want[(a * 2 + b) * 3 + e] = sum / cnt;
        }
    clg_tensor *x = clg_test_onnx_tensor(CLG_FLOAT32, 5, in.dims, v), *y = NULL;
    CHECK_OK(clg_test_onnx_run(&mo, 1, &x, 1, &y));
    clg_test_onnx_check_close("AveragePool 3-D", y, CLG_FLOAT32, 5, out.dims, want);
    clg_tensor_free(x);
    clg_tensor_free(y);
    free(mo.p);
  }
}

/* --- a node whose outputs are all left out ----------------------------------------------- */

/* ONNX lets a node omit outputs; one with none at all adds nothing and must not fail the import
 * (it once did, with an empty message: fuzz_onnx). */
static void test_outputless_node(void)
{
  io in = {"x", F32, 2, {2, 3}}, out = {"y", F32, 2, {2, 3}};
  clg_test_pb quiet = clg_test_onnx_node("Identity", (const char *const[]){"x", NULL, NULL});
  clg_test_pb nd = clg_test_onnx_node("Relu", (const char *const[]){"x", NULL, "y", NULL});
  clg_test_pb g = one_node(&nd, 1, &in, &out);
  clg_test_pb_msg(&g, 1, &quiet);
  clg_test_pb mo = clg_test_onnx_model(&g);
  double v[6] = {-2, -1, 0, 1, 2, 3}, want[6] = {0, 0, 0, 1, 2, 3};
  clg_tensor *x = clg_test_onnx_tensor(CLG_FLOAT32, 2, in.dims, v), *y = NULL;
  CHECK_OK(clg_test_onnx_run(&mo, 1, &x, 1, &y));
  clg_test_onnx_check_close("Relu beside an outputless Identity", y, CLG_FLOAT32, 2, out.dims,
                            want);
  clg_tensor_free(x);
  clg_tensor_free(y);
  free(mo.p);
}

int main(void)
{
  test_outputless_node();
  test_det();
  test_dft();
  test_topk_smallest_int();
  test_int_pow_neg_abs();
  test_int_div();
  test_pad_edge();
  test_max_unpool();
  test_batchnorm_training();
  test_pool_slices();
  return clg_test_summary("test_onnx_misc");
}
