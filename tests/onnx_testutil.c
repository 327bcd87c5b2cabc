/* The ONNX tests' harness (test_onnx_index_rnn.c, test_onnx_misc.c): a protobuf writer for
 * ModelProtos and running a model on the test's device; declared in onnx_testutil.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_testutil.h"
#include <clgraph/import.h>

/* --- a protobuf writer for ModelProtos ------------------------------------------------------- */

void clg_test_pb_raw(clg_test_pb *b, const void *d, size_t n)
{
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    if (!b->p)
      abort();
  }
  if (n)
    memcpy(b->p + b->n, d, n);
  b->n += n;
}

void clg_test_pb_varint(clg_test_pb *b, uint64_t v)
{
  uint8_t t[10];
  int k = 0;
  do {
    t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  clg_test_pb_raw(b, t, (size_t)k);
}

void clg_test_pb_tag(clg_test_pb *b, int field, int wire)
{
  clg_test_pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}
void clg_test_pb_int(clg_test_pb *b, int field, int64_t v)
{
  clg_test_pb_tag(b, field, 0);
  clg_test_pb_varint(b, (uint64_t)v);
}
void clg_test_pb_bytes(clg_test_pb *b, int field, const void *d, size_t n)
{
  clg_test_pb_tag(b, field, 2);
  clg_test_pb_varint(b, n);
  clg_test_pb_raw(b, d, n);
}
void clg_test_pb_str(clg_test_pb *b, int field, const char *s)
{
  clg_test_pb_bytes(b, field, s, strlen(s));
}
void clg_test_pb_msg(clg_test_pb *b, int field, clg_test_pb *sub)
{
  clg_test_pb_bytes(b, field, sub->p, sub->n);
  free(sub->p);
  *sub = (clg_test_pb){0};
}

/* A graph input (field 11) or output (12): name, ONNX elem type and shape. */
void clg_test_onnx_value_info(clg_test_pb *g, int field, const char *name, int elem, int rank,
                              const int64_t *dims)
{
  clg_test_pb shape = {0}, tt = {0}, type = {0}, vi = {0};
  for (int i = 0; i < rank; i++) {
    clg_test_pb dim = {0};
    clg_test_pb_int(&dim, 1, dims[i]);
    clg_test_pb_msg(&shape, 1, &dim);
  }
  clg_test_pb_int(&tt, 1, elem);
  clg_test_pb_msg(&tt, 2, &shape);
  clg_test_pb_msg(&type, 1, &tt);
  clg_test_pb_str(&vi, 1, name);
  clg_test_pb_msg(&vi, 2, &type);
  clg_test_pb_msg(g, field, &vi);
}

/* An initializer with raw_data of n elements of elem type (floats given as double). */
void clg_test_onnx_init(clg_test_pb *g, const char *name, int elem, int rank, const int64_t *dims,
                        int n, const double *v)
{
  clg_test_pb t = {0};
  for (int i = 0; i < rank; i++)
    clg_test_pb_int(&t, 1, dims[i]);
  clg_test_pb_int(&t, 2, elem);
  clg_test_pb_str(&t, 8, name);
  uint8_t *raw = malloc((size_t)n * 8 + 1);
  size_t es = elem == F32 || elem == I32 ? 4 : 8;
  for (int i = 0; i < n; i++) {
    float f = (float)v[i];
    int32_t i32 = (int32_t)v[i];
    int64_t i64 = (int64_t)v[i];
    memcpy(raw + i * es, elem == F32 ? (void *)&f : elem == I32 ? (void *)&i32 : (void *)&i64, es);
  }
  clg_test_pb_bytes(&t, 9, raw, (size_t)n * es);
  free(raw);
  clg_test_pb_msg(g, 5, &t);
}

void clg_test_onnx_attr_i(clg_test_pb *node, const char *name, int64_t v)
{
  clg_test_pb a = {0};
  clg_test_pb_str(&a, 1, name);
  clg_test_pb_int(&a, 3, v);
  clg_test_pb_int(&a, 20, 2);
  clg_test_pb_msg(node, 5, &a);
}

void clg_test_onnx_attr_f(clg_test_pb *node, const char *name, float v)
{
  clg_test_pb a = {0};
  clg_test_pb_str(&a, 1, name);
  clg_test_pb_tag(&a, 2, 5);
  clg_test_pb_raw(&a, &v, 4);
  clg_test_pb_int(&a, 20, 1);
  clg_test_pb_msg(node, 5, &a);
}

void clg_test_onnx_attr_s(clg_test_pb *node, const char *name, const char *s)
{
  clg_test_pb a = {0};
  clg_test_pb_str(&a, 1, name);
  clg_test_pb_str(&a, 4, s);
  clg_test_pb_int(&a, 20, 3);
  clg_test_pb_msg(node, 5, &a);
}

void clg_test_onnx_attr_strs(clg_test_pb *node, const char *name, int n, const char *const *s)
{
  clg_test_pb a = {0};
  clg_test_pb_str(&a, 1, name);
  for (int i = 0; i < n; i++)
    clg_test_pb_str(&a, 9, s[i]);
  clg_test_pb_int(&a, 20, 8);
  clg_test_pb_msg(node, 5, &a);
}

/* A node: inputs and outputs separated by a NULL ("" for an absent optional input). */
clg_test_pb clg_test_onnx_node(const char *op, const char *const *io)
{
  clg_test_pb nd = {0};
  int i = 0;
  for (; io[i]; i++)
    clg_test_pb_str(&nd, 1, io[i]);
  for (i++; io[i]; i++)
    clg_test_pb_str(&nd, 2, io[i]);
  clg_test_pb_str(&nd, 4, op);
  return nd;
}

clg_test_pb clg_test_onnx_model(clg_test_pb *graph)
{
  clg_test_pb m = {0}, op = {0};
  clg_test_pb_int(&m, 1, 8);
  clg_test_pb_str(&op, 1, "");
  clg_test_pb_int(&op, 2, 17);
  clg_test_pb_msg(&m, 8, &op);
  clg_test_pb_str(graph, 2, "g");
  clg_test_pb_msg(&m, 7, graph);
  return m;
}

/* --- running --------------------------------------------------------------------------------- */

const char *clg_test_onnx_device(void)
{
  const char *d = getenv("CLG_ONNX_DEVICE");
  return d && d[0] ? d : "/device:CPU:0";
}

clg_session_options clg_test_onnx_opts(void)
{
  clg_session_options o;
  clg_session_options_init(&o);
  o.allow_soft_placement = 1;
  o.gpu_options.allow_growth = 1;
  return o;
}

/* Imports model under the test's device, feeds the inputs in order, fetches every output. */
clg_code clg_test_onnx_run(const clg_test_pb *m, int nin, clg_tensor **in, int nout,
                           clg_tensor **out)
{
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  clg_session *s = NULL;
  CHECK_OK(clg_graph_push_device(g, clg_test_onnx_device()));
  clg_code code = clg_graph_import_memory(g, CLG_IMPORT_ONNX, m->p, m->n, NULL, &r);
  if (code == CLG_OK) {
    CHECK(clg_import_num_inputs(r) == nin && clg_import_num_outputs(r) == nout);
    clg_output at[8], fe[8];
    for (int i = 0; i < nin; i++)
      at[i] = clg_import_input(r, i)->value;
    for (int i = 0; i < nout; i++)
      fe[i] = clg_import_output(r, i)->value;
    clg_session_options o = clg_test_onnx_opts();
    CHECK_OK(clg_session_new(g, &o, &s));
    code = clg_session_run_outputs(s, nin, at, in, nout, fe, out, 0, NULL);
  }
  clg_session_free(s);
  clg_import_result_free(r);
  clg_graph_free(g);
  return code;
}

/* got against want (double), shape rank/dims and dtype exactly, values within ONNX's tolerance. */
void clg_test_onnx_check_close(const char *what, const clg_tensor *got, clg_dtype dt, int rank,
                               const int64_t *dims, const double *want)
{
  CHECK_MSG(got != NULL, "%s: no output", what);
  if (!got)
    return;
  CHECK_MSG(clg_tensor_dtype(got) == dt && clg_tensor_rank(got) == rank, "%s: %s rank %d", what,
            clg_dtype_name(clg_tensor_dtype(got)), clg_tensor_rank(got));
  if (clg_tensor_dtype(got) != dt || clg_tensor_rank(got) != rank)
    return;
  for (int d = 0; d < rank; d++)
    CHECK_MSG(clg_tensor_dim(got, d) == dims[d], "%s: dim %d is %lld, want %lld", what, d,
              (long long)clg_tensor_dim(got, d), (long long)dims[d]);
  size_t n = clg_tensor_count(got);
  for (size_t i = 0; i < n; i++) {
    double x = clg_test_elem(got, i), y = want[i];
    if (!(fabs(x - y) <= 1e-7 + 1e-3 * fabs(y))) {
      CHECK_MSG(0, "%s [%zu]: %.9g, want %.9g", what, i, x, y);
      return;
    }
  }
}

clg_tensor *clg_test_onnx_tensor(clg_dtype dt, int rank, const int64_t *dims, const double *v)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  void *d = clg_tensor_data(t);
  for (size_t i = 0; i < clg_tensor_count(t); i++) {
    if (dt == CLG_FLOAT32)
      ((float *)d)[i] = (float)v[i];
    else if (dt == CLG_FLOAT64)
      ((double *)d)[i] = v[i];
    else if (dt == CLG_INT32)
      ((int32_t *)d)[i] = (int32_t)v[i];
    else
      ((int64_t *)d)[i] = (int64_t)v[i];
  }
  return t;
}

void clg_test_onnx_attr_ints(clg_test_pb *node, const char *name, int n, const int64_t *v)
{
  clg_test_pb a = {0};
  clg_test_pb_str(&a, 1, name);
  for (int i = 0; i < n; i++)
    clg_test_pb_int(&a, 8, v[i]);
  clg_test_pb_int(&a, 20, 7);
  clg_test_pb_msg(node, 5, &a);
}
