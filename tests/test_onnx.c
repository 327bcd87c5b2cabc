/* The ONNX importer on models written here with the library's protobuf writer: a small CNN
 * (Conv, BatchNormalization folded into it, Relu, a depthwise Conv with asymmetric pads, a
 * broadcast Add, MaxPool with ceil_mode, GlobalAveragePool, Flatten, Gemm, Softmax) against a
 * naive double-precision NCHW reference, with the one transpose at the input that the layout
 * rule promises; external data; inspect; and the bad files the importer must refuse with an
 * error that names what is wrong. */
// ctest: cpu CLGRAPH_LOG_LEVEL=warning
// ctest: gpu CLG_TEST_DEVICE=/device:GPU:1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clgraph/import.h"
#include "clgraph/session.h"
#include "export/export.h"
#include "testutil.h"

/* --- writing ONNX ---------------------------------------------------------------------------- */

static void put_tensor(clg_pbw *b, int field, const char *name, int rank, const int64_t *dims,
                       const float *v, size_t raw_bytes)
{
  size_t m = clg_pbw_begin(b, field);
  clg_pbw_packed_ints(b, 1, rank, dims);
  clg_pbw_uint(b, 2, 1); /* FLOAT */
  clg_pbw_string(b, 8, name);
  clg_pbw_bytes(b, 9, v, raw_bytes);
  clg_pbw_end(b, m);
}

static size_t count_of(int rank, const int64_t *dims)
{
  size_t k = 1;
  for (int i = 0; i < rank; i++)
    k *= (size_t)dims[i];
  return k;
}

static void put_init(clg_pbw *g, const char *name, int rank, const int64_t *dims, const float *v)
{
  put_tensor(g, 5, name, rank, dims, v, count_of(rank, dims) * sizeof(float));
}

/* ValueInfoProto of a float tensor; a dim < 0 is the dim_param "N". */
static void put_value_info(clg_pbw *g, int field, const char *name, int rank, const int64_t *dims)
{
  size_t vi = clg_pbw_begin(g, field);
  clg_pbw_string(g, 1, name);
  size_t ty = clg_pbw_begin(g, 2);
  size_t tt = clg_pbw_begin(g, 1);
  clg_pbw_uint(g, 1, 1);
  size_t sh = clg_pbw_begin(g, 2);
  for (int i = 0; i < rank; i++) {
    size_t d = clg_pbw_begin(g, 1);
    if (dims[i] < 0)
      clg_pbw_string(g, 2, "N");
    else
      clg_pbw_uint(g, 1, (uint64_t)dims[i]);
    clg_pbw_end(g, d);
  }
  clg_pbw_end(g, sh);
  clg_pbw_end(g, tt);
  clg_pbw_end(g, ty);
  clg_pbw_end(g, vi);
}

typedef struct attr_spec {
  const char *name;
  int kind; /* 'i', 'f', 's', 'I' (ints) */
  int64_t i;
  double f;
  const char *s;
  int n;
  const int64_t *ints;
} attr_spec;

static void put_node(clg_pbw *g, const char *op, const char *domain, int nin, const char **ins,
                     const char *out, int na, const attr_spec *at)
{
  size_t m = clg_pbw_begin(g, 1);
  for (int i = 0; i < nin; i++)
    clg_pbw_string(g, 1, ins[i]);
  clg_pbw_string(g, 2, out);
  clg_pbw_string(g, 3, out); /* name the node after its output */
  clg_pbw_string(g, 4, op);
  for (int i = 0; i < na; i++) {
    size_t a = clg_pbw_begin(g, 5);
    clg_pbw_string(g, 1, at[i].name);
    if (at[i].kind == 'i')
      clg_pbw_int(g, 3, at[i].i);
    else if (at[i].kind == 'f')
      clg_pbw_float(g, 2, (float)at[i].f);
    else if (at[i].kind == 's')
      clg_pbw_string(g, 4, at[i].s);
    else
      clg_pbw_packed_ints(g, 8, at[i].n, at[i].ints);
    clg_pbw_end(g, a);
  }
  if (domain)
    clg_pbw_string(g, 7, domain);
  clg_pbw_end(g, m);
}

/* ModelProto around graph bytes g at opset. */
static void put_model(clg_pbw *m, const clg_pbw *g, int opset)
{
  clg_pbw_uint(m, 1, 8);
  clg_pbw_string(m, 2, "test_onnx");
  clg_pbw_bytes(m, 7, g->buf, g->len);
  size_t o = clg_pbw_begin(m, 8);
  clg_pbw_string(m, 1, "");
  clg_pbw_uint(m, 2, (uint64_t)opset);
  clg_pbw_end(m, o);
}

/* --- the CNN and its reference ---------------------------------------------------------------- */

enum { C0 = 3, H0 = 9, W0 = 9, C1 = 4, K = 3, NCLS = 5 };

static float w1[C1 * C0 * K * K], b1[C1], bn_s[C1], bn_b[C1], bn_m[C1], bn_v[C1];
static float w2[C1 * K * K], add_c[C1], fc_w[NCLS * C1], fc_b[NCLS], xin[2 * C0 * H0 * W0];

static float frand(unsigned *s)
{
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static void init_weights(void)
{
  unsigned s = 7;
  for (size_t i = 0; i < sizeof w1 / sizeof w1[0]; i++)
    w1[i] = frand(&s);
  for (int i = 0; i < C1; i++) {
    b1[i] = frand(&s);
    bn_s[i] = 1 + frand(&s);
    bn_b[i] = frand(&s);
    bn_m[i] = frand(&s);
    bn_v[i] = 0.5f + frand(&s) + 0.5f;
    add_c[i] = frand(&s);
  }
  for (size_t i = 0; i < sizeof w2 / sizeof w2[0]; i++)
    w2[i] = frand(&s);
  for (size_t i = 0; i < sizeof fc_w / sizeof fc_w[0]; i++)
    fc_w[i] = frand(&s);
  for (int i = 0; i < NCLS; i++)
    fc_b[i] = frand(&s);
  for (size_t i = 0; i < sizeof xin / sizeof xin[0]; i++)
    xin[i] = frand(&s) * 4;
}

/* The reference, batch n, in double: y[n][NCLS]. */
static void reference(int batch, double *y)
{
  for (int n = 0; n < batch; n++) {
    const float *x = xin + (size_t)n * C0 * H0 * W0;
    /* conv1 3x3 pad 1 stride 1 + BN + Relu */
    static double a[C1][H0][W0];
    for (int o = 0; o < C1; o++)
      for (int i = 0; i < H0; i++)
        for (int j = 0; j < W0; j++) {
          double s = b1[o];
          for (int c = 0; c < C0; c++)
            for (int u = 0; u < K; u++)
              for (int v = 0; v < K; v++) {
                int ii = i + u - 1, jj = j + v - 1;
                if (ii >= 0 && ii < H0 && jj >= 0 && jj < W0)
                  s += (double)w1[((o * C0 + c) * K + u) * K + v] * x[(c * H0 + ii) * W0 + jj];
              }
          s = (s - bn_m[o]) / sqrt((double)bn_v[o] + 1e-3) * bn_s[o] + bn_b[o];
          a[o][i][j] = s > 0 ? s : 0;
        }
    /* depthwise 3x3 stride 2, pads top 0 left 0 bottom 1 right 1: out (9+1-3)/2+1 = 4 */
    enum { H2 = 4 };
    double d[C1][H2][H2];
    for (int c = 0; c < C1; c++)
      for (int i = 0; i < H2; i++)
        for (int j = 0; j < H2; j++) {
          double s = 0;
          for (int u = 0; u < K; u++)
            for (int v = 0; v < K; v++) {
              int ii = 2 * i + u, jj = 2 * j + v;
              if (ii < H0 && jj < W0)
                s += (double)w2[(c * K + u) * K + v] * a[c][ii][jj];
            }
          d[c][i][j] = s + add_c[c];
        }
    /* MaxPool 3x3 stride 2 ceil_mode: out ceil((4-3)/2)+1 = 2; then the global mean */
    double g[C1];
    for (int c = 0; c < C1; c++) {
      double sum = 0;
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          double m = -INFINITY;
          for (int u = 0; u < 3; u++)
            for (int v = 0; v < 3; v++) {
              int ii = 2 * i + u, jj = 2 * j + v;
              if (ii < H2 && jj < H2 && d[c][ii][jj] > m)
                m = d[c][ii][jj];
            }
          sum += m;
        }
      g[c] = sum / 4;
    }
    /* Gemm transB + Softmax */
    double z[NCLS], mx = -INFINITY, tot = 0;
    for (int k = 0; k < NCLS; k++) {
      z[k] = fc_b[k];
      for (int c = 0; c < C1; c++)
        z[k] += (double)fc_w[k * C1 + c] * g[c];
      mx = z[k] > mx ? z[k] : mx;
    }
    for (int k = 0; k < NCLS; k++)
      tot += exp(z[k] - mx);
    for (int k = 0; k < NCLS; k++)
      y[n * NCLS + k] = exp(z[k] - mx) / tot;
  }
}

static void cnn_graph(clg_pbw *g)
{
  int64_t d_w1[4] = {C1, C0, K, K}, d_c[1] = {C1}, d_w2[4] = {C1, 1, K, K}, d_add[3] = {C1, 1, 1};
  int64_t d_fc[2] = {NCLS, C1}, d_fb[1] = {NCLS}, d_x[4] = {-1, C0, H0, W0}, d_y[2] = {-1, NCLS};
  clg_pbw_string(g, 2, "cnn");
  put_init(g, "w1", 4, d_w1, w1);
  put_init(g, "b1", 1, d_c, b1);
  put_init(g, "bn_s", 1, d_c, bn_s);
  put_init(g, "bn_b", 1, d_c, bn_b);
  put_init(g, "bn_m", 1, d_c, bn_m);
  put_init(g, "bn_v", 1, d_c, bn_v);
  put_init(g, "w2", 4, d_w2, w2);
  put_init(g, "add_c", 3, d_add, add_c);
  put_init(g, "fc_w", 2, d_fc, fc_w);
  put_init(g, "fc_b", 1, d_fb, fc_b);
  put_value_info(g, 11, "x", 4, d_x);
  put_value_info(g, 12, "prob", 2, d_y);
  static const int64_t one4[4] = {1, 1, 1, 1}, k3[2] = {3, 3}, s2[2] = {2, 2};
  static const int64_t asym[4] = {0, 0, 1, 1};
  attr_spec conv1[2] = {{.name = "pads", .kind = 'I', .n = 4, .ints = one4},
                        {.name = "kernel_shape", .kind = 'I', .n = 2, .ints = k3}};
  put_node(g, "Conv", NULL, 3, (const char *[]){"x", "w1", "b1"}, "c1", 2, conv1);
  attr_spec eps = {.name = "epsilon", .kind = 'f', .f = 1e-3};
  put_node(g, "BatchNormalization", NULL, 5, (const char *[]){"c1", "bn_s", "bn_b", "bn_m", "bn_v"},
           "bn", 1, &eps);
  put_node(g, "Relu", NULL, 1, (const char *[]){"bn"}, "r1", 0, NULL);
  attr_spec dw[3] = {{.name = "group", .kind = 'i', .i = C1},
                     {.name = "strides", .kind = 'I', .n = 2, .ints = s2},
                     {.name = "pads", .kind = 'I', .n = 4, .ints = asym}};
  put_node(g, "Conv", "", 2, (const char *[]){"r1", "w2"}, "c2", 3, dw);
  put_node(g, "Add", NULL, 2, (const char *[]){"c2", "add_c"}, "a2", 0, NULL);
  attr_spec mp[3] = {{.name = "kernel_shape", .kind = 'I', .n = 2, .ints = k3},
                     {.name = "strides", .kind = 'I', .n = 2, .ints = s2},
                     {.name = "ceil_mode", .kind = 'i', .i = 1}};
  put_node(g, "MaxPool", NULL, 1, (const char *[]){"a2"}, "p2", 3, mp);
  put_node(g, "GlobalAveragePool", NULL, 1, (const char *[]){"p2"}, "gap", 0, NULL);
  put_node(g, "Flatten", NULL, 1, (const char *[]){"gap"}, "flat", 0, NULL);
  attr_spec tb = {.name = "transB", .kind = 'i', .i = 1};
  put_node(g, "Gemm", NULL, 3, (const char *[]){"flat", "fc_w", "fc_b"}, "z", 1, &tb);
  attr_spec ax = {.name = "axis", .kind = 'i', .i = 1};
  put_node(g, "Softmax", NULL, 1, (const char *[]){"z"}, "prob", 1, &ax);
}

static char tmp_dir[64];

static const char *write_file(const char *name, const void *d, size_t n)
{
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    CHECK(fwrite(d, 1, n, f) == n);
    fclose(f);
  }
  return path;
}

static int count_op(const clg_graph *g, const char *op)
{
  int k = 0;
  for (int i = 0; i < clg_graph_num_nodes(g); i++)
    k += strcmp(clg_node_op(clg_graph_node(g, i)), op) == 0;
  return k;
}

static void test_cnn(void)
{
  init_weights();
  clg_pbw gb = {0}, mb = {0};
  cnn_graph(&gb);
  put_model(&mb, &gb, 13);
  CHECK(!gb.failed && !mb.failed);
  const char *path = write_file("cnn.onnx", mb.buf, mb.len);
  const char *dev = getenv("CLG_TEST_DEVICE");
  for (int batch = 1; batch <= 2; batch++) {
    clg_graph *g = clg_graph_new();
    if (dev)
      CHECK_OK(clg_graph_push_device(g, dev));
    clg_import_options o;
    clg_import_options_init(&o);
    clg_import_shape sh = {.name = "x", .rank = 4, .dims = {batch, C0, H0, W0}};
    o.input_shapes = &sh;
    o.num_input_shapes = 1;
    clg_import_result *r = NULL;
    CHECK_OK(clg_graph_import(g, path, &o, &r));
    if (!r) {
      clg_graph_free(g);
      continue;
    }
    CHECK_STR(clg_import_format_name(r), "onnx");
    CHECK(clg_import_opset(r) == 13);
    CHECK(clg_import_num_inputs(r) == 1 && clg_import_num_outputs(r) == 1);
    CHECK(clg_import_num_model_nodes(r) == 10);
    /* NHWC from the first conv to the pool: one Transpose (the input's), BN in the weights */
    CHECK_MSG(count_op(g, "Transpose") == 1, "%d Transposes", count_op(g, "Transpose"));
    CHECK(count_op(g, "Rsqrt") == 0 && count_op(g, "Conv2D") == 1);
    CHECK(count_op(g, "DepthwiseConv2dNative") == 1);
    clg_session *s = NULL;
    clg_session_options so;
    clg_session_options_init(&so);
    so.allow_soft_placement = 1;
    CHECK_OK(clg_session_new(g, &so, &s));
    if (dev && s) { /* the whole model where the device scope put it */
      for (int i = 0; i < clg_graph_num_nodes(g); i++) {
        const clg_node *nd = clg_graph_node(g, i);
        const char *on = clg_session_node_device(s, nd);
        if (strcmp(clg_node_op(nd), "Conv2D") == 0 || strcmp(clg_node_op(nd), "MaxPool") == 0)
          CHECK_MSG(on && strstr(on, dev + strlen("/device:")), "%s on %s", clg_node_op(nd), on);
      }
    }
    int64_t xd[4] = {batch, C0, H0, W0};
    clg_tensor *x = clg_tensor_new(CLG_FLOAT32, 4, xd, xin);
    clg_output in = clg_import_input(r, 0)->value, out = clg_import_output(r, 0)->value;
    clg_tensor *y = NULL;
    CHECK_OK(clg_session_run_outputs(s, 1, &in, &x, 1, &out, &y, 0, NULL));
    double ref[2 * NCLS];
    reference(batch, ref);
    if (y) {
      CHECK(clg_tensor_rank(y) == 2 && clg_tensor_dim(y, 0) == batch &&
            clg_tensor_dim(y, 1) == NCLS);
      const float *v = clg_tensor_data(y);
      for (int i = 0; i < batch * NCLS; i++)
        CHECK_MSG(fabs(v[i] - ref[i]) <= 1e-5 + 1e-4 * fabs(ref[i]), "prob[%d] %g vs %g", i, v[i],
                  ref[i]);
    }
    clg_tensor_free(x);
    clg_tensor_free(y);
    clg_session_free(s);
    clg_import_result_free(r);
    clg_graph_free(g);
  }
  /* inspect: the opset, the op types, and the dim_param left unknown */
  clg_import_result *ir = NULL;
  char err[256];
  CHECK_OK(clg_import_inspect(path, NULL, &ir, err, sizeof err));
  if (ir) {
    CHECK(clg_import_opset(ir) == 13);
    CHECK(clg_import_num_op_types(ir) == 9);
    for (int i = 0; i < clg_import_num_op_types(ir); i++)
      CHECK_MSG(clg_import_op_type_at(ir, i)->supported, "%s", clg_import_op_type_at(ir, i)->op);
    CHECK(clg_import_input(ir, 0)->rank == 4 && clg_import_input(ir, 0)->dims[0] == -1);
    clg_import_result_free(ir);
  }
  /* without input_shapes the unknown batch is an error naming the input */
  clg_graph *g = clg_graph_new();
  CHECK_CODE(clg_graph_import(g, path, NULL, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "input 'x' has unknown dim 0");
  clg_graph_free(g);
  /* the CLI: placed by --device, and too large for its share of GPU:1's memory */
  const char *bin = getenv("CLG_BINARY_DIR");
  if (dev && bin) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s/clgraph run %s --shape x=1,3,9,9 --device /device:GPU:1 "
             "--per-process-gpu-memory-fraction 0.000001 > %s/oom.txt 2>&1",
             bin, path, tmp_dir);
    int rc = system(cmd);
    CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "clgraph run exit %d", rc);
    char text[8192] = "";
    snprintf(cmd, sizeof cmd, "%s/oom.txt", tmp_dir);
    FILE *f = fopen(cmd, "r");
    if (f) {
      text[fread(text, 1, sizeof text - 1, f)] = 0;
      fclose(f);
    }
    CHECK_CONTAINS(text, "clgraph run: RESOURCE_EXHAUSTED: ");
    CHECK_CONTAINS(text, "on /job:localhost/replica:0/task:0/device:GPU:1");
  }
  clg_pbw_free(&gb);
  clg_pbw_free(&mb);
}

/* --- bad files ---------------------------------------------------------------------------------
 */

static clg_code import_bytes(const clg_pbw *m, const char *name)
{
  const char *path = write_file(name, m->buf, m->len);
  clg_graph *g = clg_graph_new();
  clg_code code = clg_graph_import(g, path, NULL, NULL);
  clg_graph_free(g);
  return code;
}

/* A one-node model y = Relu(x) with x [2] and an initializer "k". */
static void small_model(clg_pbw *m, int opset, const char *domain, size_t k_bytes)
{
  clg_pbw g = {0};
  int64_t d2[1] = {2};
  float k[2] = {1, 2};
  put_tensor(&g, 5, "k", 1, d2, k, k_bytes);
  put_value_info(&g, 11, "x", 1, d2);
  put_value_info(&g, 12, "y", 1, d2);
  put_node(&g, "Add", NULL, 2, (const char *[]){"x", "k"}, "s", 0, NULL);
  put_node(&g, "Relu", domain, 1, (const char *[]){"s"}, "y", 0, NULL);
  put_model(m, &g, opset);
  clg_pbw_free(&g);
}

static void test_bad_files(void)
{
  clg_pbw m = {0};
  small_model(&m, 13, NULL, 8);
  CHECK_OK(import_bytes(&m, "ok.onnx"));
  /* truncated: every cut inside the first bytes fails cleanly */
  for (size_t cut = 1; cut < m.len; cut += 7) {
    clg_pbw t = {.buf = m.buf, .len = cut};
    clg_code code = import_bytes(&t, "cut.onnx");
    CHECK_MSG(code == CLG_INVALID_ARGUMENT || code == CLG_UNIMPLEMENTED, "cut %zu: %s", cut,
              clg_code_name(code));
  }
  clg_pbw_free(&m);
  /* an opset beyond 17 */
  small_model(&m, 18, NULL, 8);
  CHECK_CODE(import_bytes(&m, "opset.onnx"), CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "opset 18");
  clg_pbw_free(&m);
  /* a node of another domain */
  small_model(&m, 13, "com.example", 8);
  CHECK_CODE(import_bytes(&m, "domain.onnx"), CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "domain 'com.example'");
  clg_pbw_free(&m);
  /* an initializer whose raw_data lies about its size */
  small_model(&m, 13, NULL, 4);
  CHECK_CODE(import_bytes(&m, "size.onnx"), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "does not match the shape");
  clg_pbw_free(&m);
  /* a wrong wire type: ir_version as bytes */
  clg_pbw_string(&m, 1, "eight");
  CHECK_CODE(import_bytes(&m, "wire.onnx"), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "ir_version");
  clg_pbw_free(&m);
  /* an unknown op type */
  clg_pbw g = {0};
  int64_t d2[1] = {2};
  put_value_info(&g, 11, "x", 1, d2);
  put_value_info(&g, 12, "y", 1, d2);
  put_node(&g, "NoSuchOp", NULL, 1, (const char *[]){"x"}, "y", 0, NULL);
  put_model(&m, &g, 13);
  CHECK_CODE(import_bytes(&m, "op.onnx"), CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(clg_last_error(), "NoSuchOp");
  clg_pbw_free(&m);
  clg_pbw_free(&g);
  /* an input no earlier node produces (nodes out of topological order) */
  put_value_info(&g, 11, "x", 1, d2);
  put_value_info(&g, 12, "y", 1, d2);
  put_node(&g, "Relu", NULL, 1, (const char *[]){"t"}, "y", 0, NULL);
  put_node(&g, "Relu", NULL, 1, (const char *[]){"x"}, "t", 0, NULL);
  put_model(&m, &g, 13);
  CHECK_CODE(import_bytes(&m, "order.onnx"), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "topological");
  clg_pbw_free(&m);
  clg_pbw_free(&g);
}

/* An initializer in a file beside the model: read, and refused when it points outside. */
static clg_code external_model(const char *location, const char *offset, const char *length,
                               float *got)
{
  clg_pbw g = {0}, m = {0};
  int64_t d2[1] = {2};
  size_t t = clg_pbw_begin(&g, 5);
  clg_pbw_packed_ints(&g, 1, 1, d2);
  clg_pbw_uint(&g, 2, 1);
  clg_pbw_string(&g, 8, "k");
  const char *kv[3][2] = {{"location", location}, {"offset", offset}, {"length", length}};
  for (int i = 0; i < (length ? 3 : 2); i++) {
    size_t e = clg_pbw_begin(&g, 13);
    clg_pbw_string(&g, 1, kv[i][0]);
    clg_pbw_string(&g, 2, kv[i][1]);
    clg_pbw_end(&g, e);
  }
  clg_pbw_uint(&g, 14, 1); /* EXTERNAL */
  clg_pbw_end(&g, t);
  put_value_info(&g, 12, "k", 1, d2);
  put_model(&m, &g, 13);
  const char *path = write_file("ext.onnx", m.buf, m.len);
  clg_graph *gr = clg_graph_new();
  clg_import_result *r = NULL;
  clg_code code = clg_graph_import(gr, path, NULL, &r);
  if (code == CLG_OK && r) {
    clg_session *s = NULL;
    clg_output o = clg_import_output(r, 0)->value;
    clg_tensor *v = NULL;
    CHECK_OK(clg_session_new(gr, NULL, &s));
    CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 1, &o, &v, 0, NULL));
    if (v)
      memcpy(got, clg_tensor_data(v), 2 * sizeof(float));
    clg_tensor_free(v);
    clg_session_free(s);
  }
  clg_import_result_free(r);
  clg_graph_free(gr);
  clg_pbw_free(&g);
  clg_pbw_free(&m);
  return code;
}

static void test_external_data(void)
{
  float data[4] = {9, 3.5f, -1.25f, 7};
  write_file("weights.bin", data, sizeof data);
  float got[2] = {0, 0};
  CHECK_OK(external_model("weights.bin", "4", "8", got));
  CHECK(got[0] == 3.5f && got[1] == -1.25f);
  CHECK_OK(external_model("weights.bin", "8", NULL, got)); /* no length: to the end */
  CHECK(got[0] == -1.25f && got[1] == 7);
  CHECK_CODE(external_model("../weights.bin", "0", "8", got), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "outside the model's folder");
  CHECK_CODE(external_model("/etc/passwd", "0", "8", got), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "outside the model's folder");
  CHECK_CODE(external_model("weights.bin", "4", NULL, got), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "does not match the shape");
  CHECK_CODE(external_model("weights.bin", "12", "8", got), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "of a 16-byte file");
  CHECK_CODE(external_model("weights.bin", "x", "8", got), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "not a byte count");
  CHECK_CODE(external_model("missing.bin", "0", "8", got), CLG_NOT_FOUND);
}

/* clg_import_load_tensor: typed int64 values and float raw data, and a bad dtype. */
static void test_load_tensor(void)
{
  clg_pbw b = {0};
  int64_t dims[2] = {2, 2}, vals[4] = {1, -2, 3, 1ll << 40};
  clg_pbw_packed_ints(&b, 1, 2, dims);
  clg_pbw_uint(&b, 2, 7); /* INT64 */
  clg_pbw_packed_ints(&b, 7, 4, vals);
  const char *p = write_file("t.pb", b.buf, b.len);
  clg_tensor *t = NULL;
  CHECK_OK(clg_import_load_tensor(p, &t));
  if (t) {
    CHECK(clg_tensor_dtype(t) == CLG_INT64 && clg_tensor_rank(t) == 2);
    CHECK(memcmp(clg_tensor_data(t), vals, sizeof vals) == 0);
    clg_tensor_free(t);
  }
  clg_pbw_free(&b);
  clg_pbw_packed_ints(&b, 1, 1, dims);
  clg_pbw_uint(&b, 2, 99);
  p = write_file("bad.pb", b.buf, b.len);
  CHECK_CODE(clg_import_load_tensor(p, &t), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "unknown data_type 99");
  clg_pbw_free(&b);
  clg_pbw_packed_ints(&b, 1, 1, dims);
  clg_pbw_uint(&b, 2, 8); /* STRING */
  clg_pbw_string(&b, 6, "a");
  p = write_file("str.pb", b.buf, b.len);
  CHECK_CODE(clg_import_load_tensor(p, &t), CLG_UNIMPLEMENTED);
  clg_pbw_free(&b);
}

int main(void)
{
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/clg_test_onnx_XXXXXX");
  CHECK(mkdtemp(tmp_dir) != NULL);
  test_cnn();
  test_bad_files();
  test_external_data();
  test_load_tensor();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
  CHECK(system(cmd) == 0);
  return clg_test_summary("test_onnx");
}
