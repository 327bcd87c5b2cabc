/* Issue 24's ONNX index and recurrent translations (src/import/onnx_ops_index.c, onnx_ops_rnn.c).
 * Two references: ONNX's own node tests (Debian's libonnx-testdata: model, inputs and the
 * outputs ONNX's reference computed), replayed exactly (dtype, shape, every value within
 * ONNX's rtol 1e-3 / atol 1e-7); and models written here for what the suite leaves out
 * (bidirectional LSTM with peepholes, GRU with sequence_lens masked at run time, a reverse RNN
 * with clip and Relu, index tensors as int32 graph inputs, Einsum's matmul, implicit output
 * and diagonal), each against naive loops in double. Bad nodes get errors naming them. The
 * device comes from CLG_ONNX_DEVICE (the gpu variant places the whole model on a PoCL
 * stand-in, soft placement on, as the suite's driver does). */
// ctest: default
// ctest: gpu CLG_ONNX_DEVICE=/device:GPU:0
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_testutil.h"
#include <clgraph/import.h>

#define NODE_DIR "/usr/share/libonnx-testdata/data/node/"

/* --- ONNX's node tests ----------------------------------------------------------------------- */

static const char *const node_tests[] = {
    /* index family */
    "test_gather_elements_0", "test_gather_elements_1", "test_gather_elements_negative_indices",
    "test_scatter_elements_with_axis", "test_scatter_elements_with_duplicate_indices",
    "test_scatter_elements_with_negative_indices", "test_scatter_elements_without_axis",
    "test_scatter_with_axis", "test_scatter_without_axis", "test_scatternd", "test_scatternd_add",
    "test_scatternd_multiply", "test_gathernd_example_float32", "test_gathernd_example_int32",
    "test_gathernd_example_int32_batch_dim1", "test_onehot_negative_indices",
    "test_onehot_with_axis", "test_onehot_with_negative_axis", "test_onehot_without_axis",
    "test_cumsum_1d", "test_cumsum_1d_exclusive", "test_cumsum_1d_reverse",
    "test_cumsum_1d_reverse_exclusive", "test_cumsum_2d_axis_0", "test_cumsum_2d_axis_1",
    "test_cumsum_2d_negative_axis", "test_reversesequence_batch", "test_reversesequence_time",
    "test_einsum_batch_diagonal", "test_einsum_batch_matmul", "test_einsum_inner_prod",
    "test_einsum_sum", "test_einsum_transpose",
    /* rnn family */
    "test_simple_rnn_defaults", "test_simple_rnn_with_initial_bias", "test_simple_rnn_batchwise",
    "test_rnn_seq_length", "test_gru_defaults", "test_gru_with_initial_bias", "test_gru_seq_length",
    "test_gru_batchwise", "test_lstm_defaults", "test_lstm_with_initial_bias",
    "test_lstm_with_peepholes", "test_lstm_batchwise"};

/* One node test: every output's dtype, shape and values as ONNX's reference wrote them. */
static void node_test(const char *name)
{
  char p[512];
  snprintf(p, sizeof p, NODE_DIR "%s/model.onnx", name);
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  clg_session *s = NULL;
  clg_tensor *in[8] = {0}, *out[8] = {0}, *want[8] = {0};
  CHECK_OK(clg_graph_push_device(g, clg_test_onnx_device()));
  clg_code code = clg_graph_import(g, p, NULL, &r);
  CHECK_MSG(code == CLG_OK, "%s: import: %s (install libonnx-testdata)", name, clg_last_error());
  int ni = r ? clg_import_num_inputs(r) : 0, no = r ? clg_import_num_outputs(r) : 0;
  CHECK(ni <= 8 && no <= 8 && (code != CLG_OK || no >= 1));
  clg_output at[8], fe[8];
  for (int i = 0; code == CLG_OK && i < ni; i++) {
    snprintf(p, sizeof p, NODE_DIR "%s/test_data_set_0/input_%d.pb", name, i);
    CHECK_OK(code = clg_import_load_tensor(p, &in[i]));
    at[i] = clg_import_input(r, i)->value;
  }
  for (int i = 0; code == CLG_OK && i < no; i++) {
    snprintf(p, sizeof p, NODE_DIR "%s/test_data_set_0/output_%d.pb", name, i);
    CHECK_OK(code = clg_import_load_tensor(p, &want[i]));
    fe[i] = clg_import_output(r, i)->value;
  }
  clg_session_options o = clg_test_onnx_opts();
  if (code == CLG_OK)
    CHECK_OK(code = clg_session_new(g, &o, &s));
  if (code == CLG_OK) {
    code = clg_session_run_outputs(s, ni, at, in, no, fe, out, 0, NULL);
    CHECK_MSG(code == CLG_OK, "%s: run: %s", name, clg_last_error());
  }
  for (int i = 0; code == CLG_OK && i < no; i++) {
    int64_t dims[CLG_MAX_RANK];
    size_t n = clg_tensor_count(want[i]);
    double *v = malloc(sizeof *v * (n ? n : 1));
    for (int d = 0; d < clg_tensor_rank(want[i]); d++)
      dims[d] = clg_tensor_dim(want[i], d);
    for (size_t k = 0; k < n; k++)
      v[k] = clg_test_elem(want[i], k);
    snprintf(p, sizeof p, "%s output %d", name, i);
    clg_test_onnx_check_close(p, out[i], clg_tensor_dtype(want[i]), clg_tensor_rank(want[i]), dims,
                              v);
    free(v);
  }
  for (int i = 0; i < 8; i++) {
    clg_tensor_free(in[i]);
    clg_tensor_free(out[i]);
    clg_tensor_free(want[i]);
  }
  clg_session_free(s);
  clg_import_result_free(r);
  clg_graph_free(g);
}

static void test_node_suite(void)
{
  for (size_t i = 0; i < sizeof node_tests / sizeof node_tests[0]; i++)
    node_test(node_tests[i]);
}

/* --- recurrent models against loops ---------------------------------------------------------- */

static double sigm(double x) { return 1 / (1 + exp(-x)); }

/* Deterministic values in [-0.5, 0.5). */
static void fill(double *v, int n, unsigned seed)
{
  for (int i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (double)((seed >> 8) % 1000) / 1000.0 - 0.5;
  }
}

enum { S = 3, BT = 2, IN = 3, HD = 2 };

/* Bidirectional LSTM, peepholes, initial states and biases; Y, Y_h and Y_c. */
static void test_lstm_bidirectional(void)
{
  double x[S * BT * IN], w[2 * 4 * HD * IN], r[2 * 4 * HD * HD], b[2 * 8 * HD], p[2 * 3 * HD],
      h0[2 * BT * HD], c0[2 * BT * HD];
  fill(x, S * BT * IN, 1), fill(w, 2 * 4 * HD * IN, 2), fill(r, 2 * 4 * HD * HD, 3);
  fill(b, 2 * 8 * HD, 4), fill(p, 2 * 3 * HD, 5), fill(h0, 2 * BT * HD, 6),
      fill(c0, 2 * BT * HD, 7);
  double y[S * 2 * BT * HD], yh[2 * BT * HD], yc[2 * BT * HD];
  for (int d = 0; d < 2; d++) { /* ONNX's equations: gates i, o, f, c; P = [Pi, Po, Pf] */
    double h[BT][HD], c[BT][HD];
    for (int q = 0; q < BT; q++)
      for (int j = 0; j < HD; j++)
        h[q][j] = h0[(d * BT + q) * HD + j], c[q][j] = c0[(d * BT + q) * HD + j];
    for (int k = 0; k < S; k++) {
      int t = d ? S - 1 - k : k;
      double hn[BT][HD], cn[BT][HD];
      for (int q = 0; q < BT; q++) {
        double gsum[4][HD];
        for (int gi = 0; gi < 4; gi++)
          for (int j = 0; j < HD; j++) {
            int row = gi * HD + j;
            double a = b[d * 8 * HD + row] + b[d * 8 * HD + 4 * HD + row];
            for (int e = 0; e < IN; e++)
              a += x[(t * BT + q) * IN + e] * w[(d * 4 * HD + row) * IN + e];
            for (int e = 0; e < HD; e++)
              a += h[q][e] * r[(d * 4 * HD + row) * HD + e];
            gsum[gi][j] = a;
          }
        for (int j = 0; j < HD; j++) {
          const double *pp = p + d * 3 * HD;
          double it = sigm(gsum[0][j] + pp[j] * c[q][j]);
          double ft = sigm(gsum[2][j] + pp[2 * HD + j] * c[q][j]);
          double ct = tanh(gsum[3][j]);
          cn[q][j] = ft * c[q][j] + it * ct;
          double ot = sigm(gsum[1][j] + pp[HD + j] * cn[q][j]);
          hn[q][j] = ot * tanh(cn[q][j]);
        }
      }
      for (int q = 0; q < BT; q++)
        for (int j = 0; j < HD; j++) {
          h[q][j] = hn[q][j], c[q][j] = cn[q][j];
          y[((t * 2 + d) * BT + q) * HD + j] = hn[q][j];
        }
    }
    for (int q = 0; q < BT; q++)
      for (int j = 0; j < HD; j++)
        yh[(d * BT + q) * HD + j] = h[q][j], yc[(d * BT + q) * HD + j] = c[q][j];
  }
  clg_test_pb g = {0};
  static const char *const io[] = {"X", "W",  "R", "B",  "",   "h0", "c0",
                                   "P", NULL, "Y", "Yh", "Yc", NULL};
  clg_test_pb nd = clg_test_onnx_node("LSTM", io);
  clg_test_onnx_attr_s(&nd, "direction", "bidirectional");
  clg_test_onnx_attr_i(&nd, "hidden_size", HD);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_init(&g, "W", F32, 3, (int64_t[]){2, 4 * HD, IN}, 2 * 4 * HD * IN, w);
  clg_test_onnx_init(&g, "R", F32, 3, (int64_t[]){2, 4 * HD, HD}, 2 * 4 * HD * HD, r);
  clg_test_onnx_init(&g, "B", F32, 2, (int64_t[]){2, 8 * HD}, 2 * 8 * HD, b);
  clg_test_onnx_init(&g, "P", F32, 2, (int64_t[]){2, 3 * HD}, 2 * 3 * HD, p);
  clg_test_onnx_init(&g, "h0", F32, 3, (int64_t[]){2, BT, HD}, 2 * BT * HD, h0);
  clg_test_onnx_init(&g, "c0", F32, 3, (int64_t[]){2, BT, HD}, 2 * BT * HD, c0);
  clg_test_onnx_value_info(&g, 11, "X", F32, 3, (int64_t[]){S, BT, IN});
  clg_test_onnx_value_info(&g, 12, "Y", F32, 4, (int64_t[]){S, 2, BT, HD});
  clg_test_onnx_value_info(&g, 12, "Yh", F32, 3, (int64_t[]){2, BT, HD});
  clg_test_onnx_value_info(&g, 12, "Yc", F32, 3, (int64_t[]){2, BT, HD});
  clg_test_pb m = clg_test_onnx_model(&g);
  clg_tensor *in = clg_test_onnx_tensor(CLG_FLOAT32, 3, (int64_t[]){S, BT, IN}, x), *out[3] = {0};
  CHECK_OK(clg_test_onnx_run(&m, 1, &in, 3, out));
  clg_test_onnx_check_close("LSTM Y", out[0], CLG_FLOAT32, 4, (int64_t[]){S, 2, BT, HD}, y);
  clg_test_onnx_check_close("LSTM Y_h", out[1], CLG_FLOAT32, 3, (int64_t[]){2, BT, HD}, yh);
  clg_test_onnx_check_close("LSTM Y_c", out[2], CLG_FLOAT32, 3, (int64_t[]){2, BT, HD}, yc);
  for (int i = 0; i < 3; i++)
    clg_tensor_free(out[i]);
  clg_tensor_free(in);
  free(m.p);
}

/* GRU with linear_before_reset and sequence_lens fed at run time ({3, 1}): past a length the
 * state stays and Y is zero. A second run with other lengths reuses the session's plan. */
static void test_gru_sequence_lens(void)
{
  double x[S * BT * IN], w[3 * HD * IN], r[3 * HD * HD], b[6 * HD];
  fill(x, S * BT * IN, 11), fill(w, 3 * HD * IN, 12), fill(r, 3 * HD * HD, 13), fill(b, 6 * HD, 14);
  static const double lens[BT] = {3, 1};
  double y[S * BT * HD] = {0}, yh[BT * HD];
  for (int q = 0; q < BT; q++) {
    double h[HD] = {0};
    for (int t = 0; t < (int)lens[q]; t++) {
      double z[HD], rr[HD], hh[HD];
      for (int j = 0; j < HD; j++) {
        double a[3], hr[3];
        for (int gi = 0; gi < 3; gi++) {
          int row = gi * HD + j;
          a[gi] = b[row];
          hr[gi] = b[3 * HD + row];
          for (int e = 0; e < IN; e++)
            a[gi] += x[(t * BT + q) * IN + e] * w[row * IN + e];
          for (int e = 0; e < HD; e++)
            hr[gi] += h[e] * r[row * HD + e];
        }
        z[j] = sigm(a[0] + hr[0]);
        rr[j] = sigm(a[1] + hr[1]);
        hh[j] = tanh(a[2] + rr[j] * hr[2]); /* linear_before_reset: r * (H Rh^T + Rbh) */
      }
      for (int j = 0; j < HD; j++) {
        h[j] = (1 - z[j]) * hh[j] + z[j] * h[j];
        y[(t * BT + q) * HD + j] = h[j];
      }
    }
    for (int j = 0; j < HD; j++)
      yh[q * HD + j] = h[j];
  }
  clg_test_pb g = {0};
  static const char *const io[] = {"X", "W", "R", "B", "L", NULL, "Y", "Yh", NULL};
  clg_test_pb nd = clg_test_onnx_node("GRU", io);
  clg_test_onnx_attr_i(&nd, "linear_before_reset", 1);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_init(&g, "W", F32, 3, (int64_t[]){1, 3 * HD, IN}, 3 * HD * IN, w);
  clg_test_onnx_init(&g, "R", F32, 3, (int64_t[]){1, 3 * HD, HD}, 3 * HD * HD, r);
  clg_test_onnx_init(&g, "B", F32, 2, (int64_t[]){1, 6 * HD}, 6 * HD, b);
  clg_test_onnx_value_info(&g, 11, "X", F32, 3, (int64_t[]){S, BT, IN});
  clg_test_onnx_value_info(&g, 11, "L", I32, 1, (int64_t[]){BT});
  clg_test_onnx_value_info(&g, 12, "Y", F32, 4, (int64_t[]){S, 1, BT, HD});
  clg_test_onnx_value_info(&g, 12, "Yh", F32, 3, (int64_t[]){1, BT, HD});
  clg_test_pb m = clg_test_onnx_model(&g);
  clg_tensor *in[2] = {clg_test_onnx_tensor(CLG_FLOAT32, 3, (int64_t[]){S, BT, IN}, x),
                       clg_test_onnx_tensor(CLG_INT32, 1, (int64_t[]){BT}, lens)},
             *out[2] = {0};
  CHECK_OK(clg_test_onnx_run(&m, 2, in, 2, out));
  clg_test_onnx_check_close("GRU Y", out[0], CLG_FLOAT32, 4, (int64_t[]){S, 1, BT, HD}, y);
  clg_test_onnx_check_close("GRU Y_h", out[1], CLG_FLOAT32, 3, (int64_t[]){1, BT, HD}, yh);
  for (int i = 0; i < 2; i++) {
    clg_tensor_free(out[i]);
    clg_tensor_free(in[i]);
  }
  free(m.p);
}

/* RNN in reverse with Relu and clip 0.3 (the pre-activation clipped), layout 1. */
static void test_rnn_reverse_clip(void)
{
  double x[BT * S * IN], w[HD * IN], r[HD * HD];
  fill(x, BT * S * IN, 21), fill(w, HD * IN, 22), fill(r, HD * HD, 23);
  for (int i = 0; i < HD * IN; i++)
    w[i] *= 3; /* pre-activations beyond the clip */
  double y[BT * S * HD], yh[BT * HD];
  for (int q = 0; q < BT; q++) {
    double h[HD] = {0};
    for (int t = S - 1; t >= 0; t--) {
      double hn[HD];
      for (int j = 0; j < HD; j++) {
        double a = 0;
        for (int e = 0; e < IN; e++)
          a += x[(q * S + t) * IN + e] * w[j * IN + e];
        for (int e = 0; e < HD; e++)
          a += h[e] * r[j * HD + e];
        a = a > 0.3 ? 0.3 : a < -0.3 ? -0.3 : a;
        hn[j] = a > 0 ? a : 0;
      }
      for (int j = 0; j < HD; j++)
        h[j] = y[(q * S + t) * HD + j] = hn[j];
    }
    for (int j = 0; j < HD; j++)
      yh[q * HD + j] = h[j];
  }
  clg_test_pb g = {0};
  static const char *const io[] = {"X", "W", "R", NULL, "Y", "Yh", NULL};
  static const char *const acts[] = {"Relu"};
  clg_test_pb nd = clg_test_onnx_node("RNN", io);
  clg_test_onnx_attr_s(&nd, "direction", "reverse");
  clg_test_onnx_attr_i(&nd, "layout", 1);
  clg_test_onnx_attr_f(&nd, "clip", 0.3f);
  clg_test_onnx_attr_strs(&nd, "activations", 1, acts);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_init(&g, "W", F32, 3, (int64_t[]){1, HD, IN}, HD * IN, w);
  clg_test_onnx_init(&g, "R", F32, 3, (int64_t[]){1, HD, HD}, HD * HD, r);
  clg_test_onnx_value_info(&g, 11, "X", F32, 3, (int64_t[]){BT, S, IN});
  clg_test_onnx_value_info(&g, 12, "Y", F32, 4, (int64_t[]){BT, S, 1, HD});
  clg_test_onnx_value_info(&g, 12, "Yh", F32, 3, (int64_t[]){BT, 1, HD});
  clg_test_pb m = clg_test_onnx_model(&g);
  clg_tensor *in = clg_test_onnx_tensor(CLG_FLOAT32, 3, (int64_t[]){BT, S, IN}, x), *out[2] = {0};
  CHECK_OK(clg_test_onnx_run(&m, 1, &in, 2, out));
  clg_test_onnx_check_close("RNN Y", out[0], CLG_FLOAT32, 4, (int64_t[]){BT, S, 1, HD}, y);
  clg_test_onnx_check_close("RNN Y_h", out[1], CLG_FLOAT32, 3, (int64_t[]){BT, 1, HD}, yh);
  for (int i = 0; i < 2; i++)
    clg_tensor_free(out[i]);
  clg_tensor_free(in);
  free(m.p);
}

/* --- index models against loops -------------------------------------------------------------- */

/* GatherElements on axis 1 of a [2, 3, 2] input with int32 indices [2, 2, 2] fed at run time
 * (negatives count from the end). */
static void test_gather_elements_int32(void)
{
  double data[12], idx[8] = {0, -1, 2, 1, -3, 0, 1, 2}, want[8];
  fill(data, 12, 31);
  for (int a = 0; a < 2; a++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 2; k++) {
        int v = (int)idx[(a * 2 + j) * 2 + k];
        v = v < 0 ? v + 3 : v;
        want[(a * 2 + j) * 2 + k] = (float)data[(a * 3 + v) * 2 + k];
      }
  clg_test_pb g = {0};
  static const char *const io[] = {"D", "I", NULL, "Y", NULL};
  clg_test_pb nd = clg_test_onnx_node("GatherElements", io);
  clg_test_onnx_attr_i(&nd, "axis", 1);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_value_info(&g, 11, "D", F32, 3, (int64_t[]){2, 3, 2});
  clg_test_onnx_value_info(&g, 11, "I", I32, 3, (int64_t[]){2, 2, 2});
  clg_test_onnx_value_info(&g, 12, "Y", F32, 3, (int64_t[]){2, 2, 2});
  clg_test_pb m = clg_test_onnx_model(&g);
  clg_tensor *in[2] = {clg_test_onnx_tensor(CLG_FLOAT32, 3, (int64_t[]){2, 3, 2}, data),
                       clg_test_onnx_tensor(CLG_INT32, 3, (int64_t[]){2, 2, 2}, idx)},
             *out = NULL;
  CHECK_OK(clg_test_onnx_run(&m, 2, in, 1, &out));
  clg_test_onnx_check_close("GatherElements", out, CLG_FLOAT32, 3, (int64_t[]){2, 2, 2}, want);
  clg_tensor_free(out);
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
  free(m.p);
}

/* ScatterND with constant indices (the linear indices fold at import) over a repeated index,
 * into data [3, 2, 2] at rows (k = 2) of 2 elements: reduction add on int64, mul on float32. */
static void test_scatternd_const(void)
{
  for (int mul = 0; mul < 2; mul++) {
    double data[12], idx[6] = {2, 1, 0, 0, 2, 1}, upd[6] = {10, 20, 30, 40, -0.5, 0.25}, want[12];
    for (int i = 0; i < 12; i++)
      data[i] = want[i] = i * 3 - 7;
    if (!mul)
      upd[4] = 50, upd[5] = 60;
    for (int u = 0; u < 3; u++)
      for (int e = 0; e < 2; e++) {
        double *w = &want[((int)idx[u * 2] * 2 + (int)idx[u * 2 + 1]) * 2 + e];
        *w = mul ? *w * upd[u * 2 + e] : *w + upd[u * 2 + e];
      }
    clg_test_pb g = {0};
    static const char *const io[] = {"D", "I", "U", NULL, "Y", NULL};
    clg_test_pb nd = clg_test_onnx_node("ScatterND", io);
    clg_test_onnx_attr_s(&nd, "reduction", mul ? "mul" : "add");
    clg_test_pb_msg(&g, 1, &nd);
    clg_test_onnx_init(&g, "I", I64, 2, (int64_t[]){3, 2}, 6, idx);
    int et = mul ? F32 : I64;
    clg_dtype dt = mul ? CLG_FLOAT32 : CLG_INT64;
    clg_test_onnx_value_info(&g, 11, "D", et, 3, (int64_t[]){3, 2, 2});
    clg_test_onnx_value_info(&g, 11, "U", et, 2, (int64_t[]){3, 2});
    clg_test_onnx_value_info(&g, 12, "Y", et, 3, (int64_t[]){3, 2, 2});
    clg_test_pb m = clg_test_onnx_model(&g);
    clg_tensor *in[2] = {clg_test_onnx_tensor(dt, 3, (int64_t[]){3, 2, 2}, data),
                         clg_test_onnx_tensor(dt, 2, (int64_t[]){3, 2}, upd)},
               *out = NULL;
    CHECK_OK(clg_test_onnx_run(&m, 2, in, 1, &out));
    clg_test_onnx_check_close(mul ? "ScatterND mul" : "ScatterND add", out, dt, 3,
                              (int64_t[]){3, 2, 2}, want);
    clg_tensor_free(out);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
    free(m.p);
  }
}

/* Einsum: "ij,jk->ik", the implicit "ij,jk" (the same), "ii->i" and "bij,bkj->bik". */
static void test_einsum_forms(void)
{
  double a[2 * 3 * 4], b[2 * 5 * 4], want[2 * 3 * 5];
  fill(a, 24, 41), fill(b, 40, 42);
  static const char *const eqs[] = {"ij,jk->ik", "ij,jk", "ii->i", "bij,bkj->bik"};
  for (int f = 0; f < 4; f++) {
    int64_t da[3], db[3], dy[3];
    int ra, rb = 2, ry;
    if (f < 2) { /* [3, 4] x [4, 5] */
      ra = 2, da[0] = 3, da[1] = 4, db[0] = 4, db[1] = 5, ry = 2, dy[0] = 3, dy[1] = 5;
      for (int i = 0; i < 3; i++)
        for (int k = 0; k < 5; k++) {
          double s = 0;
          for (int j = 0; j < 4; j++)
            s += (double)(float)a[i * 4 + j] * (double)(float)b[j * 5 + k];
          want[i * 5 + k] = s;
        }
    } else if (f == 2) { /* the diagonal of [4, 4] */
      ra = 2, da[0] = da[1] = 4, ry = 1, dy[0] = 4, rb = 0;
      for (int i = 0; i < 4; i++)
        want[i] = (float)a[i * 4 + i];
    } else { /* [2, 3, 4] x [2, 5, 4] */
      ra = 3, da[0] = 2, da[1] = 3, da[2] = 4, rb = 3, db[0] = 2, db[1] = 5, db[2] = 4;
      ry = 3, dy[0] = 2, dy[1] = 3, dy[2] = 5;
      for (int q = 0; q < 2; q++)
        for (int i = 0; i < 3; i++)
          for (int k = 0; k < 5; k++) {
            double s = 0;
            for (int j = 0; j < 4; j++)
              s += (double)(float)a[(q * 3 + i) * 4 + j] * (double)(float)b[(q * 5 + k) * 4 + j];
            want[(q * 3 + i) * 5 + k] = s;
          }
    }
    clg_test_pb g = {0};
    static const char *const io2[] = {"A", "B", NULL, "Y", NULL}, *const io1[] = {"A", NULL, "Y",
                                                                                  NULL};
    clg_test_pb nd = clg_test_onnx_node("Einsum", rb ? io2 : io1);
    clg_test_onnx_attr_s(&nd, "equation", eqs[f]);
    clg_test_pb_msg(&g, 1, &nd);
    clg_test_onnx_value_info(&g, 11, "A", F32, ra, da);
    if (rb)
      clg_test_onnx_value_info(&g, 11, "B", F32, rb, db);
    clg_test_onnx_value_info(&g, 12, "Y", F32, ry, dy);
    clg_test_pb m = clg_test_onnx_model(&g);
    clg_tensor *in[2] = {clg_test_onnx_tensor(CLG_FLOAT32, ra, da, a),
                         rb ? clg_test_onnx_tensor(CLG_FLOAT32, rb, db, b) : NULL},
               *out = NULL;
    CHECK_OK(clg_test_onnx_run(&m, rb ? 2 : 1, in, 1, &out));
    clg_test_onnx_check_close(eqs[f], out, CLG_FLOAT32, ry, dy, want);
    clg_tensor_free(out);
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
    free(m.p);
  }
}

/* CumSum of int32 [2, 4] along a constant axis 1, exclusive and reverse; OneHot of int64
 * indices with a constant depth 3 (-1 is the last class, 3 and -4 are outside: all off). */
static void test_cumsum_onehot(void)
{
  double x[8] = {1, -2, 3, 4, 5, 6, -7, 8}, want[8];
  for (int q = 0; q < 2; q++)
    for (int j = 0; j < 4; j++) {
      double s = 0;
      for (int k = j + 1; k < 4; k++)
        s += x[q * 4 + k];
      want[q * 4 + j] = s;
    }
  clg_test_pb g = {0};
  static const char *const io[] = {"X", "A", NULL, "Y", NULL};
  clg_test_pb nd = clg_test_onnx_node("CumSum", io);
  clg_test_onnx_attr_i(&nd, "exclusive", 1);
  clg_test_onnx_attr_i(&nd, "reverse", 1);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_init(&g, "A", I64, 0, NULL, 1, (double[]){-1});
  clg_test_onnx_value_info(&g, 11, "X", I32, 2, (int64_t[]){2, 4});
  clg_test_onnx_value_info(&g, 12, "Y", I32, 2, (int64_t[]){2, 4});
  clg_test_pb m = clg_test_onnx_model(&g);
  clg_tensor *in = clg_test_onnx_tensor(CLG_INT32, 2, (int64_t[]){2, 4}, x), *out = NULL;
  CHECK_OK(clg_test_onnx_run(&m, 1, &in, 1, &out));
  clg_test_onnx_check_close("CumSum", out, CLG_INT32, 2, (int64_t[]){2, 4}, want);
  clg_tensor_free(out);
  clg_tensor_free(in);
  free(m.p);

  double idx[4] = {0, -1, 3, -4}, oh[12];
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 3; k++) {
      int v = (int)idx[i];
      v = v < 0 ? v + 3 : v;
      oh[i * 3 + k] = v == k ? 5 : -2;
    }
  g = (clg_test_pb){0};
  static const char *const io2[] = {"I", "D", "V", NULL, "Y", NULL};
  nd = clg_test_onnx_node("OneHot", io2);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_init(&g, "D", F32, 0, NULL, 1, (double[]){3});
  clg_test_onnx_init(&g, "V", F32, 1, (int64_t[]){2}, 2, (double[]){-2, 5});
  clg_test_onnx_value_info(&g, 11, "I", I64, 1, (int64_t[]){4});
  clg_test_onnx_value_info(&g, 12, "Y", F32, 2, (int64_t[]){4, 3});
  m = clg_test_onnx_model(&g);
  in = clg_test_onnx_tensor(CLG_INT64, 1, (int64_t[]){4}, idx);
  CHECK_OK(clg_test_onnx_run(&m, 1, &in, 1, &out));
  clg_test_onnx_check_close("OneHot", out, CLG_FLOAT32, 2, (int64_t[]){4, 3}, oh);
  clg_tensor_free(out);
  clg_tensor_free(in);
  free(m.p);
}

/* Compress with a constant condition along axis 0, NonZero of a constant. */
static void test_constant_only(void)
{
  double x[6] = {1, 2, 3, 4, 5, 6};
  clg_test_pb g = {0};
  static const char *const io[] = {"X", "C", NULL, "Y", NULL};
  clg_test_pb nd = clg_test_onnx_node("Compress", io);
  clg_test_onnx_attr_i(&nd, "axis", 0);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_init(&g, "C", I64, 1, (int64_t[]){2}, 2,
                     (double[]){0, 1}); /* shorter than the dim */
  clg_test_onnx_value_info(&g, 11, "X", F32, 2, (int64_t[]){3, 2});
  clg_test_onnx_value_info(&g, 12, "Y", F32, 2, (int64_t[]){1, 2});
  clg_test_pb m = clg_test_onnx_model(&g);
  clg_tensor *in = clg_test_onnx_tensor(CLG_FLOAT32, 2, (int64_t[]){3, 2}, x), *out = NULL;
  CHECK_OK(clg_test_onnx_run(&m, 1, &in, 1, &out));
  clg_test_onnx_check_close("Compress", out, CLG_FLOAT32, 2, (int64_t[]){1, 2}, (double[]){3, 4});
  clg_tensor_free(out);
  clg_tensor_free(in);
  free(m.p);

  g = (clg_test_pb){0};
  static const char *const io2[] = {"K", NULL, "Y", NULL};
  nd = clg_test_onnx_node("NonZero", io2);
  clg_test_pb_msg(&g, 1, &nd);
  clg_test_onnx_init(&g, "K", F32, 2, (int64_t[]){2, 3}, 6, (double[]){0, 1, 0, 2, 0, 3});
  clg_test_onnx_value_info(&g, 12, "Y", I64, 2, (int64_t[]){2, 3});
  m = clg_test_onnx_model(&g);
  CHECK_OK(clg_test_onnx_run(&m, 0, NULL, 1, &out));
  clg_test_onnx_check_close("NonZero", out, CLG_INT64, 2, (int64_t[]){2, 3},
                            (double[]){0, 1, 1, 1, 0, 2});
  clg_tensor_free(out);
  free(m.p);
}

/* --- errors ---------------------------------------------------------------------------------- */

/* The import error of a one-node model (inputs fed as graph inputs of the given shapes). */
static void expect_error(const char *op, const char *const *io, const char *akey, const char *aval,
                         int nin, const int64_t (*dims)[5], clg_code want, const char *text)
{
  clg_test_pb g = {0};
  clg_test_pb nd = clg_test_onnx_node(op, io);
  if (akey)
    clg_test_onnx_attr_s(&nd, akey, aval);
  clg_test_pb_msg(&g, 1, &nd);
  for (int i = 0; i < nin; i++)
    if (io[i][0])
      clg_test_onnx_value_info(&g, 11, io[i], strcmp(io[i], "L") == 0 ? I32 : F32, (int)dims[i][0],
                               dims[i] + 1);
  clg_test_pb m = clg_test_onnx_model(&g);
  clg_graph *gr = clg_graph_new();
  CHECK_CODE(clg_graph_import_memory(gr, CLG_IMPORT_ONNX, m.p, m.n, NULL, NULL), want);
  CHECK_CONTAINS(clg_last_error(), text);
  CHECK_CONTAINS(clg_last_error(), op);
  clg_graph_free(gr);
  free(m.p);
}

static void test_errors(void)
{
  static const char *const oh[] = {"I", "D", "V", NULL, "Y", NULL};
  static const int64_t ohd[3][5] = {{1, 4}, {0}, {1, 2}};
  expect_error("OneHot", oh, NULL, NULL, 3, ohd, CLG_INVALID_ARGUMENT, "depth must be a constant");
  static const char *const cp[] = {"X", "C", NULL, "Y", NULL};
  static const int64_t cpd[3][5] = {{1, 3}, {1, 3}};
  expect_error("Compress", cp, NULL, NULL, 2, cpd, CLG_UNIMPLEMENTED,
               "the condition must be a constant");
  static const char *const es[] = {"A", "B", NULL, "Y", NULL};
  static const int64_t esd[3][5] = {{2, 2, 3}, {2, 3, 4}};
  expect_error("Einsum", es, "equation", "ij,jk,kl->il", 2, esd, CLG_INVALID_ARGUMENT,
               "does not have 2 operands");
  expect_error("Einsum", es, "equation", "i.j..,jk->ik", 2, esd, CLG_INVALID_ARGUMENT,
               "term 0 of equation 'i.j..,jk->ik' does not fit a rank-2 input");
  expect_error("Einsum", es, "equation", "ij,ik->jk", 2, esd, CLG_INVALID_ARGUMENT,
               "label 'i' is 2 in one operand and 3");
  static const char *const gr[] = {"X", "W", "R", NULL, "Y", NULL};
  static const int64_t grd[3][5] = {{2, 2, 3}, {2, 6, 3}, {2, 6, 2}}; /* rank 2, not 3 */
  expect_error("GRU", gr, NULL, NULL, 3, grd, CLG_INVALID_ARGUMENT, "X has rank 2, not 3");
  static const int64_t grd2[3][5] = {{3, 1, 2, 3}, {3, 1, 5, 3}, {3, 1, 6, 2}};
  expect_error("GRU", gr, NULL, NULL, 3, grd2, CLG_INVALID_ARGUMENT, "W must be [1, 6, 3]");
  static const char *const ls[] = {"X", "W", "R", "", "L", NULL, "Y", NULL};
  static const int64_t lsd[5][5] = {{3, 1, 2, 3}, {3, 1, 8, 3}, {3, 1, 8, 2}, {0}, {1, 2}};
  expect_error("LSTM", ls, "direction", "reverse", 5, lsd, CLG_UNIMPLEMENTED,
               "the reverse direction takes sequence_lens only when it is constant");
  static const char *const rv[] = {"X", "W", "R", NULL, "Y", NULL};
  static const int64_t rvd[3][5] = {{3, 1, 2, 3}, {3, 1, 2, 3}, {3, 1, 2, 2}};
  expect_error("RNN", rv, "direction", "sideways", 3, rvd, CLG_INVALID_ARGUMENT,
               "direction 'sideways'");
  expect_error("RNN", rv, "activations", "Tanh", 3, rvd, CLG_INVALID_ARGUMENT,
               "activations must name 1 functions");
}

int main(void)
{
  test_node_suite();
  test_lstm_bidirectional();
  test_gru_sequence_lens();
  test_rnn_reverse_clip();
  test_gather_elements_int32();
  test_scatternd_const();
  test_einsum_forms();
  test_cumsum_onehot();
  test_constant_only();
  test_errors();
  return clg_test_summary("test_onnx_index_rnn");
}
