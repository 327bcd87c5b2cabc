/* Importing TensorFlow graphs (issue 23): GraphDefs written here byte by byte with a small
 * protobuf writer (independent of the reader), and tfjs models written here as model.json and
 * .bin shards, imported and run, checked exactly against hand computation: MatMul + BiasAdd +
 * Relu plain and fused, Reshape fed by a folded Shape and Cast, device fields as scopes,
 * prefix, input_map, input_shapes, control inputs, TensorProto's typed fields and TF's
 * repeat-the-last rule, tfjs's quantized weights dequantized as tfjs does; every bad file of
 * the issue with its code and a word of its message; inspect's op census.
 *
 * Real models: with CLGRAPH_MODELS_DIR set (a folder of tfjs graph models, as ci/get-models.sh
 * leaves them), the census of several models against a count made here from their JSON, and
 * two models run against TensorFlow.js's outputs; set but missing is a failure. Unset, those
 * checks do not run (and the summary says so). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clgraph/import.h"
#include "core/core.h"
#include "graph/graph.h"
#include "import/import_internal.h"
#include "testutil.h"

/* --- a protobuf writer (wire format only) ---------------------------------------------------- */

typedef struct pbuf {
  uint8_t *p;
  size_t n, cap;
} pbuf;

static void pb_raw(pbuf *b, const void *d, size_t n)
{
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
  }
  if (n)
    memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void pb_varint(pbuf *b, uint64_t v)
{
  do {
    uint8_t c = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v)
      c |= 0x80;
    pb_raw(b, &c, 1);
  } while (v);
}

static void pb_tag(pbuf *b, int field, int wire)
{
  pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

static void pb_bytes(pbuf *b, int field, const void *d, size_t n)
{
  pb_tag(b, field, 2);
  pb_varint(b, n);
  pb_raw(b, d, n);
}

static void pb_str(pbuf *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

static void pb_vint(pbuf *b, int field, int64_t v)
{
  pb_tag(b, field, 0);
  pb_varint(b, (uint64_t)v);
}

/* Appends sub as a nested message and frees it. */
static void pb_msg(pbuf *b, int field, pbuf *sub)
{
  pb_bytes(b, field, sub->p, sub->n);
  free(sub->p);
  memset(sub, 0, sizeof *sub);
}

static void pb_free(pbuf *b) { free(b->p); }

/* TensorShapeProto with dims (rank -1: unknown_rank). */
static void shape_msg(pbuf *out, int rank, const int64_t *dims)
{
  if (rank < 0) {
    pb_vint(out, 3, 1);
    return;
  }
  for (int i = 0; i < rank; i++) {
    pbuf d = {0};
    pb_vint(&d, 1, dims[i]);
    pb_msg(out, 2, &d);
  }
}

/* AttrValue entries of a NodeDef (field 5: key 1, value 2). */
static void attr_entry(pbuf *node, const char *key, pbuf *value)
{
  pbuf e = {0};
  pb_str(&e, 1, key);
  pb_msg(&e, 2, value);
  pb_msg(node, 5, &e);
}

static void attr_type(pbuf *node, const char *key, int dt)
{
  pbuf v = {0};
  pb_vint(&v, 6, dt);
  attr_entry(node, key, &v);
}

static void attr_b(pbuf *node, const char *key, int b)
{
  pbuf v = {0};
  pb_vint(&v, 5, b);
  attr_entry(node, key, &v);
}

static void attr_s(pbuf *node, const char *key, const char *s)
{
  pbuf v = {0};
  pb_str(&v, 2, s);
  attr_entry(node, key, &v);
}

static void attr_shape(pbuf *node, const char *key, int rank, const int64_t *dims)
{
  pbuf v = {0}, s = {0};
  shape_msg(&s, rank, dims);
  pb_msg(&v, 7, &s);
  attr_entry(node, key, &v);
}

static void attr_list_s(pbuf *node, const char *key, int n, const char *const *s)
{
  pbuf v = {0}, l = {0};
  for (int i = 0; i < n; i++)
    pb_str(&l, 2, s[i]);
  pb_msg(&v, 1, &l);
  attr_entry(node, key, &v);
}

/* A TensorProto as attr "value": float32 from tensor_content (content true) or float_val. */
static void attr_tensor_f32(pbuf *node, int rank, const int64_t *dims, int n, const float *v,
                            bool content)
{
  pbuf val = {0}, t = {0}, s = {0};
  pb_vint(&t, 1, 1);
  shape_msg(&s, rank, dims);
  pb_msg(&t, 2, &s);
  if (content)
    pb_bytes(&t, 4, v, sizeof *v * (size_t)n);
  else {
    pb_tag(&t, 5, 2); /* packed float_val */
    pb_varint(&t, 4 * (uint64_t)n);
    pb_raw(&t, v, 4 * (size_t)n);
  }
  pb_msg(&val, 8, &t);
  attr_entry(node, "value", &val);
}

/* A NodeDef: name, op, inputs (NULL-terminated), device (NULL: none), then attrs into *node
 * (appended by the caller) and finished with node_end. */
static void node_begin(pbuf *node, const char *name, const char *op, const char *const *inputs,
                       const char *device)
{
  memset(node, 0, sizeof *node);
  pb_str(node, 1, name);
  pb_str(node, 2, op);
  for (int i = 0; inputs && inputs[i]; i++)
    pb_str(node, 3, inputs[i]);
  if (device)
    pb_str(node, 4, device);
}

static void node_end(pbuf *graph, pbuf *node) { pb_msg(graph, 1, node); }

static void placeholder(pbuf *g, const char *name, int rank, const int64_t *dims)
{
  pbuf n;
  node_begin(&n, name, "Placeholder", NULL, NULL);
  attr_type(&n, "dtype", 1);
  attr_shape(&n, "shape", rank, dims);
  node_end(g, &n);
}

static void const_f32(pbuf *g, const char *name, int rank, const int64_t *dims, int n,
                      const float *v, bool content)
{
  pbuf nd;
  node_begin(&nd, name, "Const", NULL, NULL);
  attr_type(&nd, "dtype", 1);
  attr_tensor_f32(&nd, rank, dims, n, v, content);
  node_end(g, &nd);
}

static void op2(pbuf *g, const char *name, const char *op, const char *a, const char *b,
                const char *device)
{
  const char *in[3] = {a, b, NULL};
  pbuf n;
  node_begin(&n, name, op, in, device);
  attr_type(&n, "T", 1);
  node_end(g, &n);
}

/* --- helpers ------------------------------------------------------------------------------- */

/* Every session of the test grows its device memory (the first one's options hold for the
 * process: a session kept open by main). */
static clg_session_options growth_options(void)
{
  clg_session_options so;
  clg_session_options_init(&so);
  so.gpu_options.allow_growth = 1;
  return so;
}

static clg_tensor *run1(clg_graph *g, clg_output feed_at, clg_tensor *feed, clg_output fetch)
{
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  clg_session_options so = growth_options();
  if (clg_session_new(g, &so, &s) != CLG_OK) {
    CHECK_MSG(0, "session: %s", clg_last_error());
    return NULL;
  }
  clg_code code =
      clg_session_run_outputs(s, feed ? 1 : 0, &feed_at, &feed, 1, &fetch, &out, 0, NULL);
  CHECK_MSG(code == CLG_OK, "run: %s", clg_last_error());
  clg_session_free(s);
  return out;
}

static clg_code import_pb(clg_graph *g, const pbuf *b, const clg_import_options *o,
                          clg_import_result **r)
{
  return clg_graph_import_memory(g, CLG_IMPORT_AUTO, b->p, b->n, o, r);
}

/* The error of importing b into a fresh graph: code checked, message returned (static). */
static const char *import_error(const pbuf *b, const clg_import_options *o, clg_code want)
{
  static char msg[2048];
  clg_graph *g = clg_graph_new();
  clg_import_result *r = (clg_import_result *)1;
  clg_code code = import_pb(g, b, o, &r);
  CHECK_MSG(code == want, "import returned %s, want %s (%s)", clg_code_name(code),
            clg_code_name(want), clg_graph_error(g));
  CHECK(r == NULL);
  CHECK(clg_graph_status(g) == code);
  snprintf(msg, sizeof msg, "%s", clg_graph_error(g));
  clg_graph_free(g);
  return msg;
}

/* x [2,3] (model shape [-1,3]), w [3,2] from tensor_content, b [2] from float_val:
 * r = Relu(BiasAdd(MatMul(x, w), b)), the nodes in reverse order (consumers first). */
static const float W[6] = {1, -2, 0.5f, 3, -1, 2}, B[2] = {0.5f, -4};

static void write_mlp(pbuf *g, bool fused)
{
  int64_t wd[2] = {3, 2}, bd[1] = {2}, xd[2] = {-1, 3};
  if (fused) {
    const char *in[4] = {"x", "w", "b", NULL};
    const char *ops[2] = {"BiasAdd", "Relu"};
    pbuf n;
    node_begin(&n, "f", "_FusedMatMul", in, NULL);
    attr_type(&n, "T", 1);
    attr_b(&n, "transpose_a", 0);
    attr_b(&n, "transpose_b", 0);
    attr_list_s(&n, "fused_ops", 2, ops);
    pbuf v = {0};
    pb_vint(&v, 3, 1);
    attr_entry(&n, "num_args", &v);
    node_end(g, &n);
  } else {
    const char *in[2] = {"ba", NULL};
    pbuf n;
    node_begin(&n, "r", "Relu", in, NULL);
    attr_type(&n, "T", 1);
    node_end(g, &n);
    op2(g, "ba", "BiasAdd", "mm", "b", NULL);
    node_begin(&n, "mm", "MatMul", (const char *const[]){"x", "w", NULL}, NULL);
    attr_type(&n, "T", 1);
    attr_b(&n, "transpose_a", 0);
    attr_b(&n, "transpose_b", 0);
    node_end(g, &n);
  }
  const_f32(g, "b", 1, bd, 2, B, false);
  const_f32(g, "w", 2, wd, 6, W, true);
  placeholder(g, "x", 2, xd);
}

static void check_mlp_values(const clg_tensor *x, const clg_tensor *out)
{
  CHECK(out && clg_tensor_rank(out) == 2 && clg_tensor_dim(out, 0) == 2 &&
        clg_tensor_dim(out, 1) == 2);
  if (!out)
    return;
  const float *xv = clg_tensor_const_data(x), *ov = clg_tensor_const_data(out);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      double acc = B[j];
      for (int k = 0; k < 3; k++)
        acc += (double)xv[i * 3 + k] * W[k * 2 + j];
      double want = acc > 0 ? acc : 0;
      CHECK_MSG(ov[i * 2 + j] == (float)want, "out[%d][%d] = %g, want %g", i, j, ov[i * 2 + j],
                want);
    }
}

static clg_tensor *mlp_input(void)
{
  int64_t d[2] = {2, 3};
  float v[6] = {1, 2, 3, -1, 0.5f, 4};
  return clg_tensor_new(CLG_FLOAT32, 2, d, v);
}

/* --- tests ------------------------------------------------------------------------------- */

static void test_mlp(bool fused)
{
  pbuf b = {0};
  write_mlp(&b, fused);
  clg_graph *g = clg_graph_new();
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_shape s = {"x:0", 2, {2, 3}};
  o.input_shapes = &s;
  o.num_input_shapes = 1;
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, &o, &r));
  CHECK_STR(clg_import_format_name(r), "graphdef");
  CHECK(clg_import_num_model_nodes(r) == (fused ? 4 : 6));
  CHECK(clg_import_num_inputs(r) == 1);
  CHECK(clg_import_num_outputs(r) == 1);
  const clg_import_tensor *in = clg_import_input(r, 0), *out = clg_import_output(r, 0);
  CHECK(in && strcmp(in->name, "x") == 0 && in->dtype == CLG_FLOAT32 && in->rank == 2 &&
        in->dims[0] == 2 && in->dims[1] == 3);
  CHECK(out && strcmp(out->name, fused ? "f" : "r") == 0 && out->rank == 2 && out->dims[0] == 2 &&
        out->dims[1] == 2);
  clg_output found;
  CHECK_OK(clg_import_find(r, fused ? "f:0" : "mm", &found));
  CHECK_STR(clg_node_op(found.node), fused ? "Relu" : "MatMul");
  CHECK_CODE(clg_import_find(r, "nosuch", &found), CLG_NOT_FOUND);
  CHECK_CODE(clg_import_find(r, "w:1", &found), CLG_NOT_FOUND);
  if (fused) {
    /* The fused node as separate nodes: MatMul, BiasAdd, and the epilogue under its name. */
    CHECK(clg_graph_find(g, "f/MatMul") &&
          strcmp(clg_node_op(clg_graph_find(g, "f/MatMul")), "MatMul") == 0);
    CHECK(clg_graph_find(g, "f/BiasAdd") != NULL);
  }
  clg_tensor *x = mlp_input();
  clg_tensor *res = run1(g, in->value, x, out->value);
  check_mlp_values(x, res);
  clg_tensor_free(res);
  clg_tensor_free(x);
  clg_import_result_free(r);
  clg_graph_free(g);
  pb_free(&b);
}

/* Reshape of x [2,3,4] to Cast(Shape(y), int64) with y [4,6]: Shape and Cast fold into Consts
 * that Reshape reads; a shape fed by a placeholder cannot fold and is an error naming the node. */
static void test_folding(void)
{
  pbuf b = {0}, n;
  int64_t xd[3] = {2, 3, 4}, yd[2] = {4, 6};
  node_begin(&n, "out", "Reshape", (const char *const[]){"x", "s64", NULL}, NULL);
  attr_type(&n, "T", 1);
  attr_type(&n, "Tshape", 9);
  node_end(&b, &n);
  node_begin(&n, "s64", "Cast", (const char *const[]){"s", NULL}, NULL);
  attr_type(&n, "SrcT", 3);
  attr_type(&n, "DstT", 9);
  node_end(&b, &n);
  node_begin(&n, "s", "Shape", (const char *const[]){"y", NULL}, NULL);
  attr_type(&n, "T", 1);
  attr_type(&n, "out_type", 3);
  node_end(&b, &n);
  placeholder(&b, "x", 3, xd);
  placeholder(&b, "y", 2, yd);
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, NULL, &r));
  clg_output s, s64, out;
  CHECK_OK(clg_import_find(r, "s", &s));
  CHECK_OK(clg_import_find(r, "s64", &s64));
  CHECK_OK(clg_import_find(r, "out", &out));
  CHECK_STR(clg_node_op(s.node), "Const");
  CHECK_STR(clg_node_op(s64.node), "Const");
  CHECK_STR(clg_node_name(s64.node), "s64");
  CHECK(clg_node_output_dtype(s64.node, 0) == CLG_INT64);
  CHECK(clg_node_output_rank(out.node, 0) == 2 && clg_node_output_dim(out.node, 0, 0) == 4 &&
        clg_node_output_dim(out.node, 0, 1) == 6);
  CHECK(clg_import_num_inputs(r) == 2);
  clg_output xo;
  CHECK_OK(clg_import_find(r, "x", &xo));
  float xv[24];
  for (int i = 0; i < 24; i++)
    xv[i] = (float)(i * 3 - 7);
  clg_tensor *x = clg_tensor_new(CLG_FLOAT32, 3, xd, xv);
  clg_tensor *res = run1(g, xo, x, out);
  CHECK(res && clg_tensor_count(res) == 24 &&
        memcmp(clg_tensor_const_data(res), xv, sizeof xv) == 0);
  clg_tensor_free(res);
  clg_tensor_free(x);
  clg_import_result_free(r);
  clg_graph_free(g);
  pb_free(&b);

  /* The shape from a placeholder: Reshape's shape must be constant. */
  memset(&b, 0, sizeof b);
  node_begin(&n, "bad_reshape", "Reshape", (const char *const[]){"x", "sp", NULL}, NULL);
  node_end(&b, &n);
  placeholder(&b, "x", 3, xd);
  pbuf p;
  node_begin(&p, "sp", "Placeholder", NULL, NULL);
  attr_type(&p, "dtype", 3);
  attr_shape(&p, "shape", 1, (const int64_t[]){2});
  node_end(&b, &p);
  const char *msg = import_error(&b, NULL, CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(msg, "bad_reshape");
  pb_free(&b);
}

/* A Const of int32 values (int_val, packed) as a node of the GraphDef. */
static void const_i32(pbuf *g, const char *name, int rank, const int64_t *dims, int n,
                      const int32_t *v)
{
  pbuf nd, val = {0}, t = {0}, sh = {0}, packed = {0};
  node_begin(&nd, name, "Const", NULL, NULL);
  pb_vint(&t, 1, 3);
  shape_msg(&sh, rank, dims);
  pb_msg(&t, 2, &sh);
  for (int i = 0; i < n; i++)
    pb_varint(&packed, (uint64_t)(int64_t)v[i]);
  pb_msg(&t, 7, &packed);
  pb_msg(&val, 8, &t);
  attr_entry(&nd, "value", &val);
  node_end(g, &nd);
}

/* Folding is bounded: a Fill of 2^21 elements stays a Fill (computed at run time), one of 6
 * folds into a Const of the same values. */
static void test_fold_bound(void)
{
  pbuf b = {0};
  const_i32(&b, "big_dims", 1, (const int64_t[]){2}, 2, (const int32_t[]){2048, 1024});
  const_i32(&b, "small_dims", 1, (const int64_t[]){2}, 2, (const int32_t[]){2, 3});
  const_f32(&b, "v", 0, NULL, 1, (const float[]){2.5f}, false);
  op2(&b, "big", "Fill", "big_dims", "v", NULL);
  op2(&b, "small", "Fill", "small_dims", "v", NULL);
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, NULL, &r));
  clg_output big, small;
  CHECK_OK(clg_import_find(r, "big", &big));
  CHECK_OK(clg_import_find(r, "small", &small));
  CHECK_STR(clg_node_op(big.node), "Fill");
  CHECK_STR(clg_node_op(small.node), "Const");
  const clg_tensor *t = clg_node_value(small.node);
  CHECK(t && clg_tensor_count(t) == 6 && clg_tensor_dim(t, 0) == 2 && clg_tensor_dim(t, 1) == 3);
  for (int i = 0; t && i < 6; i++)
    CHECK(((const float *)clg_tensor_const_data(t))[i] == 2.5f);
  clg_import_result_free(r);
  clg_graph_free(g);
  pb_free(&b);
}

/* A node of two inputs with T set to dtype dt (TF number). */
static void op2_t(pbuf *g, const char *name, const char *op, const char *a, const char *b, int dt)
{
  pbuf n;
  node_begin(&n, name, op, (const char *const[]){a, b, NULL}, NULL);
  attr_type(&n, "T", dt);
  node_end(g, &n);
}

/* Shape arithmetic on int32 folds (efficientpose's Conv2DBackpropInput sizes are Shape *
 * 2 packed; movenet's resize sizes Shape * 2): Mul, Add, FloorDiv and FloorMod of a Shape and
 * Consts become Consts of TensorFlow's values. Equal's incompatible_shape_error is accepted at
 * either value; shapes that do not broadcast are an error at import. */
static void test_fold_shape_arith(void)
{
  pbuf b = {0}, n;
  int64_t xd[3] = {2, 3, 7};
  placeholder(&b, "x", 3, xd);
  node_begin(&n, "s", "Shape", (const char *const[]){"x", NULL}, NULL);
  attr_type(&n, "T", 1);
  attr_type(&n, "out_type", 3);
  node_end(&b, &n);
  const_i32(&b, "two", 0, NULL, 1, (const int32_t[]){2});
  const_i32(&b, "m3", 1, (const int64_t[]){3}, 3, (const int32_t[]){-2, 2, -4});
  op2_t(&b, "mul", "Mul", "s", "two", 3);
  op2_t(&b, "add", "AddV2", "s", "m3", 3);
  op2_t(&b, "fdiv", "FloorDiv", "s", "m3", 3);
  op2_t(&b, "fmod", "FloorMod", "s", "m3", 3);
  for (int k = 0; k < 2; k++) {
    node_begin(&n, k ? "eq_false" : "eq_true", "Equal", (const char *const[]){"x", "x", NULL},
               NULL);
    attr_type(&n, "T", 1);
    attr_b(&n, "incompatible_shape_error", k == 0);
    node_end(&b, &n);
  }
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, NULL, &r));
  /* Shape [2,3,7]: * 2, + [-2,2,-4], // and % [-2,2,-4] (Python's). */
  const char *names[4] = {"mul", "add", "fdiv", "fmod"};
  const int32_t want[4][3] = {{4, 6, 14}, {0, 5, 3}, {-1, 1, -2}, {0, 1, -1}};
  for (int i = 0; i < 4; i++) {
    clg_output o;
    CHECK_OK(clg_import_find(r, names[i], &o));
    CHECK_MSG(o.node && strcmp(clg_node_op(o.node), "Const") == 0, "%s not folded", names[i]);
    const clg_tensor *t = o.node ? clg_node_value(o.node) : NULL;
    CHECK_MSG(t && clg_tensor_dtype(t) == CLG_INT32 && clg_tensor_count(t) == 3 &&
                  memcmp(clg_tensor_const_data(t), want[i], sizeof want[i]) == 0,
              "%s: wrong folded value", names[i]);
  }
  clg_output eq;
  CHECK_OK(clg_import_find(r, "eq_false", &eq));
  CHECK_STR(clg_node_op(eq.node), "Equal");
  clg_import_result_free(r);
  clg_graph_free(g);
  pb_free(&b);

  memset(&b, 0, sizeof b);
  placeholder(&b, "x", 3, xd);
  placeholder(&b, "y", 1, (const int64_t[]){4});
  node_begin(&n, "eq", "Equal", (const char *const[]){"x", "y", NULL}, NULL);
  attr_type(&n, "T", 1);
  attr_b(&n, "incompatible_shape_error", 0);
  node_end(&b, &n);
  CHECK_CONTAINS(import_error(&b, NULL, CLG_INVALID_ARGUMENT), "Incompatible shapes");
  pb_free(&b);
}

/* _FusedConv2D: Conv2D, BiasAdd and Relu as nodes; relu(x * 2 - 3) for a 1x1 filter of 2.
 * An epilogue clgraph lacks and args that do not match the fused ops are errors. */
/* Issue 24's ops import by their TensorFlow names with TensorFlow's attributes (T, Tidx,
 * NotEqual's incompatible_shape_error): out = SelectV2(x < c, x, Elu(x)) + BroadcastTo(c, [2,3])
 * and x != c against a reference computed here; Ceil of a Const folds to a Const. */
static void test_import_issue24_ops(void)
{
  pbuf b = {0}, n;
  placeholder(&b, "x", 2, (const int64_t[]){2, 3});
  const float c[3] = {0, 1, -1};
  const_f32(&b, "c", 1, (const int64_t[]){3}, 3, c, false);
  const_f32(&b, "half", 0, NULL, 1, (const float[]){2.5f}, false);
  const_i32(&b, "shape", 1, (const int64_t[]){2}, 2, (const int32_t[]){2, 3});
  op2_t(&b, "lt", "Less", "x", "c", 1);
  node_begin(&n, "ne", "NotEqual", (const char *const[]){"x", "c", NULL}, NULL);
  attr_type(&n, "T", 1);
  attr_b(&n, "incompatible_shape_error", 1);
  node_end(&b, &n);
  const char *unary[2][3] = {{"elu", "Elu", "x"}, {"ceil", "Ceil", "half"}};
  for (int i = 0; i < 2; i++) {
    node_begin(&n, unary[i][0], unary[i][1], (const char *const[]){unary[i][2], NULL}, NULL);
    attr_type(&n, "T", 1);
    node_end(&b, &n);
  }
  node_begin(&n, "w", "SelectV2", (const char *const[]){"lt", "x", "elu", NULL}, NULL);
  attr_type(&n, "T", 1);
  node_end(&b, &n);
  node_begin(&n, "bt", "BroadcastTo", (const char *const[]){"c", "shape", NULL}, NULL);
  attr_type(&n, "T", 1);
  attr_type(&n, "Tidx", 3);
  node_end(&b, &n);
  op2_t(&b, "out", "AddV2", "w", "bt", 1);
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, NULL, &r));
  clg_output x, out, ne, ceil;
  CHECK_OK(clg_import_find(r, "x", &x));
  CHECK_OK(clg_import_find(r, "out", &out));
  CHECK_OK(clg_import_find(r, "ne", &ne));
  CHECK_OK(clg_import_find(r, "ceil", &ceil));
  CHECK_STR(ceil.node ? clg_node_op(ceil.node) : NULL, "Const");
  const clg_tensor *cv = ceil.node ? clg_node_value(ceil.node) : NULL;
  CHECK(cv && clg_tensor_count(cv) == 1 && ((const float *)clg_tensor_const_data(cv))[0] == 3);
  const float xs[6] = {-1, 1, 0, 2, 0.5f, -3};
  clg_tensor *xt = clg_tensor_new(CLG_FLOAT32, 2, (const int64_t[]){2, 3}, xs);
  clg_tensor *o = out.node ? run1(g, x, xt, out) : NULL;
  clg_tensor *e = ne.node ? run1(g, x, xt, ne) : NULL;
  for (int i = 0; o && e && i < 6; i++) {
    double xv = xs[i], cj = c[i % 3];
    double want = (xv < cj ? xv : (xv > 0 ? xv : expm1(xv))) + cj;
    double got = ((const float *)clg_tensor_const_data(o))[i];
    CHECK_MSG(fabs(got - want) <= 1e-6, "out[%d] = %g, want %g", i, got, want);
    CHECK_MSG(((const uint8_t *)clg_tensor_const_data(e))[i] == (xv != cj), "ne[%d]", i);
  }
  CHECK(o && e);
  clg_tensor_free(o);
  clg_tensor_free(e);
  clg_tensor_free(xt);
  clg_import_result_free(r);
  clg_graph_free(g);
  pb_free(&b);
}

static void test_fused_conv(void)
{
  const char *ops[2] = {"BiasAdd", "Relu"};
  for (int variant = 0; variant < 3; variant++) {
    pbuf b = {0}, n;
    placeholder(&b, "x", 4, (const int64_t[]){1, 2, 2, 1});
    const_f32(&b, "k", 4, (const int64_t[]){1, 1, 1, 1}, 1, (const float[]){2}, true);
    const_f32(&b, "bias", 1, (const int64_t[]){1}, 1, (const float[]){-3}, true);
    const char *in[4] = {"x", "k", variant == 2 ? NULL : "bias", NULL};
    node_begin(&n, "conv", "_FusedConv2D", in, NULL);
    attr_type(&n, "T", 1);
    pbuf v = {0}, l = {0}, packed = {0};
    for (int i = 0; i < 4; i++)
      pb_varint(&packed, 1);
    pb_msg(&l, 3, &packed);
    pb_msg(&v, 1, &l);
    attr_entry(&n, "strides", &v);
    attr_s(&n, "padding", "VALID");
    attr_s(&n, "data_format", "NHWC");
    attr_b(&n, "use_cudnn_on_gpu", 1);
    const char *bad_ops[2] = {"BiasAdd", "NoSuchEpilogue"};
    attr_list_s(&n, "fused_ops", 2, variant == 1 ? bad_ops : ops);
    node_end(&b, &n);
    if (variant == 1) {
      CHECK_CONTAINS(import_error(&b, NULL, CLG_UNIMPLEMENTED), "fuses NoSuchEpilogue");
    } else if (variant == 2) {
      CHECK_CONTAINS(import_error(&b, NULL, CLG_INVALID_ARGUMENT), "its fused ops take 2 + 1");
    } else {
      clg_graph *g = clg_graph_new();
      clg_import_result *r = NULL;
      CHECK_OK(import_pb(g, &b, NULL, &r));
      CHECK(clg_graph_find(g, "conv/Conv2D") && clg_graph_find(g, "conv/BiasAdd"));
      clg_output out, x;
      CHECK_OK(clg_import_find(r, "conv", &out));
      CHECK_OK(clg_import_find(r, "x", &x));
      CHECK_STR(clg_node_op(out.node), "Relu");
      float xv[4] = {0, 1, 2, 3.5f};
      clg_tensor *xt = clg_tensor_new(CLG_FLOAT32, 4, (const int64_t[]){1, 2, 2, 1}, xv);
      clg_tensor *res = run1(g, x, xt, out);
      for (int i = 0; res && i < 4; i++) {
        float want = xv[i] * 2 - 3 > 0 ? xv[i] * 2 - 3 : 0;
        CHECK(((const float *)clg_tensor_const_data(res))[i] == want);
      }
      clg_tensor_free(res);
      clg_tensor_free(xt);
      clg_import_result_free(r);
      clg_graph_free(g);
    }
    pb_free(&b);
  }
}

/* Device fields as device scopes (merged over the caller's), the prefix as a name scope. */
static void test_devices_and_prefix(void)
{
  pbuf b = {0};
  int64_t xd[2] = {2, 2};
  float v[4] = {1, 2, 3, 4};
  const_f32(&b, "c", 2, xd, 4, v, true);
  op2(&b, "on_cpu", "Add", "c", "c", "/device:CPU:0");
  op2(&b, "on_gpu1", "Mul", "on_cpu", "c", "/device:GPU:1");
  op2(&b, "plain", "Sub", "on_gpu1", "c", NULL);
  clg_graph *g = clg_graph_new();
  clg_import_options o;
  clg_import_options_init(&o);
  o.prefix = "net";
  clg_graph_push_device(g, "/device:GPU:0");
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, &o, &r));
  clg_graph_pop_device(g);
  clg_node *cpu = clg_graph_find(g, "net/on_cpu"), *gpu1 = clg_graph_find(g, "net/on_gpu1"),
           *plain = clg_graph_find(g, "net/plain");
  CHECK(cpu && gpu1 && plain);
  CHECK(clg_graph_find(g, "on_cpu") == NULL);
  if (cpu && gpu1 && plain) {
    CHECK_STR(clg_node_requested_device(cpu), "/device:CPU:0");
    CHECK_STR(clg_node_requested_device(gpu1), "/device:GPU:1");
    CHECK_STR(clg_node_requested_device(plain), "/device:GPU:0");
  }
  clg_output p;
  CHECK_OK(clg_import_find(r, "plain", &p));
  CHECK(p.node == plain);
  /* Placed where asked (four PoCL stand-in GPUs in the tests), and the values right. */
  clg_session_options so = growth_options();
  so.log_device_placement = 1;
  clg_session *s = NULL;
  clg_test_log_capture_start(CLG_LOG_INFO);
  CHECK_OK(clg_session_new(g, &so, &s));
  clg_tensor *out = NULL;
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &plain, &out));
  const char *log = clg_test_log_capture_stop();
  CHECK_CONTAINS(log, "net/on_gpu1: /job:localhost/replica:0/task:0/device:GPU:1");
  CHECK_CONTAINS(log, "net/on_cpu: /job:localhost/replica:0/task:0/device:CPU:0");
  if (out) {
    const float *ov = clg_tensor_const_data(out);
    for (int i = 0; i < 4; i++)
      CHECK(ov[i] == (v[i] + v[i]) * v[i] - v[i]);
  }
  clg_tensor_free(out);
  clg_session_free(s);
  clg_import_result_free(r);
  /* The same model again under the same prefix: its names are taken. */
  CHECK_CODE(import_pb(g, &b, &o, NULL), CLG_INVALID_ARGUMENT);
  clg_graph_free(g);
  pb_free(&b);
}

/* input_map feeds the placeholder from a graph tensor; control inputs become control edges
 * whatever the file's order. */
static void test_input_map_and_control(void)
{
  pbuf b = {0}, n;
  write_mlp(&b, false);
  node_begin(&n, "after", "Identity", (const char *const[]){"r", "^first", NULL}, NULL);
  attr_type(&n, "T", 1);
  node_end(&b, &n);
  node_begin(&n, "first", "NoOp", NULL, NULL);
  node_end(&b, &n);
  clg_graph *g = clg_graph_new();
  clg_tensor *x = mlp_input();
  clg_node *feed = clg_const(g, "feed", x);
  clg_import_map map = {"x:0", clg_out(feed, 0)};
  clg_import_options o;
  clg_import_options_init(&o);
  o.input_map = &map;
  o.num_input_map = 1;
  o.prefix = "m";
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, &o, &r));
  CHECK(clg_import_num_inputs(r) == 0);
  CHECK(clg_graph_find(g, "m/x") == NULL);
  clg_output xo;
  CHECK_OK(clg_import_find(r, "x", &xo));
  CHECK(xo.node == feed);
  clg_node *after = clg_graph_find(g, "m/after"), *first = clg_graph_find(g, "m/first");
  CHECK(after && first && clg_node_num_control_inputs(after) == 1 &&
        clg_node_control_input(after, 0) == first);
  CHECK(clg_import_num_outputs(r) == 1 && strcmp(clg_import_output(r, 0)->name, "after") == 0);
  clg_tensor *res = run1(g, clg_out(NULL, 0), NULL, clg_out(after, 0));
  check_mlp_values(x, res);
  clg_tensor_free(res);
  clg_import_result_free(r);
  /* A map naming no tensor of the model. */
  clg_import_map nomap = {"nothere", clg_out(feed, 0)};
  o.input_map = &nomap;
  o.prefix = "m2";
  CHECK_CODE(import_pb(g, &b, &o, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_graph_error(g), "nothere");
  clg_graph_free(g);
  clg_tensor_free(x);
  pb_free(&b);
}

static void test_input_shapes(void)
{
  pbuf b = {0};
  write_mlp(&b, false);
  clg_import_options o;
  clg_import_options_init(&o);
  /* Unbound: x is [-1,3]. */
  CHECK_CONTAINS(import_error(&b, &o, CLG_INVALID_ARGUMENT), "input 'x' has shape [-1,3]");
  clg_import_shape s = {"x", 3, {2, 3, 1}};
  o.input_shapes = &s;
  o.num_input_shapes = 1;
  CHECK_CONTAINS(import_error(&b, &o, CLG_INVALID_ARGUMENT), "rank 3");
  s = (clg_import_shape){"x", 2, {2, 4}};
  CHECK_CONTAINS(import_error(&b, &o, CLG_INVALID_ARGUMENT), "fixes it at 3");
  s = (clg_import_shape){"y", 2, {2, 3}};
  CHECK_CONTAINS(import_error(&b, &o, CLG_INVALID_ARGUMENT), "input 'x' has shape");
  clg_import_shape two[2] = {{"x", 2, {5, 3}}, {"nobody", 1, {1}}};
  o.input_shapes = two;
  o.num_input_shapes = 2;
  CHECK_CONTAINS(import_error(&b, &o, CLG_INVALID_ARGUMENT), "'nobody' names no placeholder");
  o.num_input_shapes = 1;
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, &o, &r));
  CHECK(clg_import_input(r, 0)->dims[0] == 5);
  clg_import_result_free(r);
  clg_graph_free(g);
  pb_free(&b);
}

/* TensorProto's typed fields: fewer values than the shape repeat the last (TF's rule). */
static void test_tensor_fields(void)
{
  pbuf b = {0}, n, v, t, s;
  /* float_val {1, 2} over [4]: 1 2 2 2 */
  const_f32(&b, "f", 1, (const int64_t[]){4}, 2, (const float[]){1, 2}, false);
  /* int_val (not packed) {7} over [3]: int32 7 7 7 */
  node_begin(&n, "i", "Const", NULL, NULL);
  memset(&v, 0, sizeof v);
  memset(&t, 0, sizeof t);
  memset(&s, 0, sizeof s);
  pb_vint(&t, 1, 3);
  shape_msg(&s, 1, (const int64_t[]){3});
  pb_msg(&t, 2, &s);
  pb_vint(&t, 7, 7);
  pb_msg(&v, 8, &t);
  attr_entry(&n, "value", &v);
  node_end(&b, &n);
  /* half_val {0x3c00 (1.0), 0xc000 (-2.0)} over [2] */
  node_begin(&n, "h", "Const", NULL, NULL);
  pb_vint(&t, 1, 19);
  shape_msg(&s, 1, (const int64_t[]){2});
  pb_msg(&t, 2, &s);
  pb_vint(&t, 13, 0x3c00);
  pb_vint(&t, 13, 0xc000);
  pb_msg(&v, 8, &t);
  attr_entry(&n, "value", &v);
  node_end(&b, &n);
  /* int64_val {-5} scalar, bool_val {true, false} [2] */
  node_begin(&n, "l", "Const", NULL, NULL);
  pb_vint(&t, 1, 9);
  pb_vint(&t, 10, -5);
  pb_msg(&v, 8, &t);
  attr_entry(&n, "value", &v);
  node_end(&b, &n);
  node_begin(&n, "bo", "Const", NULL, NULL);
  pb_vint(&t, 1, 10);
  shape_msg(&s, 1, (const int64_t[]){2});
  pb_msg(&t, 2, &s);
  pb_vint(&t, 11, 1);
  pb_vint(&t, 11, 0);
  pb_msg(&v, 8, &t);
  attr_entry(&n, "value", &v);
  node_end(&b, &n);
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(import_pb(g, &b, NULL, &r));
  clg_output o;
  CHECK_OK(clg_import_find(r, "f", &o));
  const float *fv = clg_tensor_const_data(clg_node_value(o.node));
  CHECK(fv[0] == 1 && fv[1] == 2 && fv[2] == 2 && fv[3] == 2);
  CHECK_OK(clg_import_find(r, "i", &o));
  const int32_t *iv = clg_tensor_const_data(clg_node_value(o.node));
  CHECK(clg_node_dtype(o.node) == CLG_INT32 && iv[0] == 7 && iv[1] == 7 && iv[2] == 7);
  CHECK_OK(clg_import_find(r, "h", &o));
  const uint16_t *hv = clg_tensor_const_data(clg_node_value(o.node));
  CHECK(clg_node_dtype(o.node) == CLG_FLOAT16 && hv[0] == 0x3c00 && hv[1] == 0xc000);
  CHECK_OK(clg_import_find(r, "l", &o));
  CHECK(clg_node_dtype(o.node) == CLG_INT64 && clg_node_rank(o.node) == 0 &&
        *(const int64_t *)clg_tensor_const_data(clg_node_value(o.node)) == -5);
  CHECK_OK(clg_import_find(r, "bo", &o));
  const uint8_t *bv = clg_tensor_const_data(clg_node_value(o.node));
  CHECK(clg_node_dtype(o.node) == CLG_BOOL && bv[0] == 1 && bv[1] == 0);
  /* Nothing consumes them: each is an output, in the file's order. */
  CHECK(clg_import_num_outputs(r) == 5 && strcmp(clg_import_output(r, 4)->name, "bo") == 0);
  clg_import_result_free(r);
  clg_graph_free(g);
  pb_free(&b);
}

/* --- bad GraphDefs ------------------------------------------------------------------------ */

static void test_bad_graphdefs(void)
{
  pbuf good = {0};
  write_mlp(&good, false);
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_shape s = {"x", 2, {2, 3}};
  o.input_shapes = &s;
  o.num_input_shapes = 1;

  /* Truncated: every cut of the file short of its end fails cleanly (or, cut at a node's end,
   * is a smaller graph that fails for its missing inputs); never a crash. */
  int refused = 0;
  for (size_t cut = 1; cut < good.n; cut++) {
    clg_graph *g = clg_graph_new();
    clg_code code = clg_graph_import_memory(g, CLG_IMPORT_GRAPHDEF, good.p, cut, &o, NULL);
    refused += code != CLG_OK;
    clg_graph_free(g);
  }
  CHECK(refused == (int)good.n - 1);
  pbuf cut = {0};
  pb_raw(&cut, good.p, good.n - 3);
  CHECK_CONTAINS(import_error(&cut, &o, CLG_INVALID_ARGUMENT), "runs past the end");
  pb_free(&cut);

  /* Oversized: a length of 2^40. */
  pbuf big = {0};
  pb_tag(&big, 1, 2);
  pb_varint(&big, 1ull << 40);
  pb_raw(&big, "abc", 3);
  CHECK_CONTAINS(import_error(&big, &o, CLG_INVALID_ARGUMENT), "GraphDef field 1");
  pb_free(&big);
  /* An 11-byte varint. */
  pbuf longv = {0};
  pb_tag(&longv, 3, 0);
  pb_raw(&longv, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  CHECK_CONTAINS(import_error(&longv, &o, CLG_INVALID_ARGUMENT), "overlong varint");
  pb_free(&longv);

  /* Wrong wire types: GraphDef.node as a varint; NodeDef.name as a 32-bit value; a group. */
  pbuf w = {0};
  write_mlp(&w, false);
  pb_vint(&w, 1, 5);
  CHECK_CONTAINS(import_error(&w, &o, CLG_INVALID_ARGUMENT), "GraphDef.node (field 1)");
  pb_free(&w);
  pbuf nd = {0}, gd = {0};
  pb_tag(&nd, 1, 5);
  pb_raw(&nd, "abcd", 4);
  pb_msg(&gd, 1, &nd);
  CHECK_CONTAINS(import_error(&gd, &o, CLG_INVALID_ARGUMENT), "NodeDef.name (field 1)");
  pb_free(&gd);
  pbuf grp = {0};
  pb_tag(&grp, 1, 3);
  CHECK_CONTAINS(import_error(&grp, &o, CLG_INVALID_ARGUMENT), "wire type 3");
  pb_free(&grp);

  /* Unknown dtype in a TensorProto; content not matching the shape (bytes and typed values). */
  pbuf ud = {0}, n, v, t, sh;
  node_begin(&n, "k", "Const", NULL, NULL);
  memset(&v, 0, sizeof v);
  memset(&t, 0, sizeof t);
  memset(&sh, 0, sizeof sh);
  pb_vint(&t, 1, 77);
  pb_msg(&v, 8, &t);
  attr_entry(&n, "value", &v);
  node_end(&ud, &n);
  CHECK_CONTAINS(import_error(&ud, &o, CLG_INVALID_ARGUMENT), "unknown dtype DT_<77>");
  pb_free(&ud);
  pbuf cm = {0};
  node_begin(&n, "k", "Const", NULL, NULL);
  pb_vint(&t, 1, 1);
  shape_msg(&sh, 1, (const int64_t[]){3});
  pb_msg(&t, 2, &sh);
  pb_bytes(&t, 4, "12345678", 8);
  pb_msg(&v, 8, &t);
  attr_entry(&n, "value", &v);
  node_end(&cm, &n);
  const char *msg = import_error(&cm, &o, CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(msg, "does not match the shape");
  CHECK_CONTAINS(msg, "node 'k'");
  pb_free(&cm);
  pbuf tv = {0};
  const_f32(&tv, "k", 2, (const int64_t[]){2, 2}, 5, (const float[]){1, 2, 3, 4, 5}, false);
  CHECK_CONTAINS(import_error(&tv, &o, CLG_INVALID_ARGUMENT), "float_val holds 5 values");
  pb_free(&tv);
  /* A typed field of another dtype. */
  pbuf of = {0};
  node_begin(&n, "k", "Const", NULL, NULL);
  pb_vint(&t, 1, 1);
  pb_vint(&t, 7, 3);
  pb_msg(&v, 8, &t);
  attr_entry(&n, "value", &v);
  node_end(&of, &n);
  CHECK_CONTAINS(import_error(&of, &o, CLG_INVALID_ARGUMENT), "holds int_val");
  pb_free(&of);
  /* A shape of rank 9. */
  pbuf r9 = {0};
  placeholder(&r9, "p", 9, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
  CHECK_CONTAINS(import_error(&r9, &o, CLG_INVALID_ARGUMENT), "more than 8 dims");
  pb_free(&r9);
  /* Huge expansion of one value: refused, not allocated. */
  pbuf hx = {0};
  const_f32(&hx, "k", 2, (const int64_t[]){1 << 20, 1 << 20}, 1, (const float[]){1}, false);
  CHECK_CONTAINS(import_error(&hx, &o, CLG_INVALID_ARGUMENT), "repeat-the-last rule");
  pb_free(&hx);

  /* An input naming no node; a cycle; two nodes of one name; an op type clgraph lacks. */
  pbuf ni = {0};
  write_mlp(&ni, false);
  op2(&ni, "z", "Add", "r", "ghost:1", NULL);
  msg = import_error(&ni, &o, CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(msg, "input 'ghost:1' names no node");
  CHECK_CONTAINS(msg, "node 'z'");
  pb_free(&ni);
  pbuf cy = {0};
  write_mlp(&cy, false);
  op2(&cy, "c1", "Add", "r", "c2", NULL);
  op2(&cy, "c2", "Add", "c1", "r", NULL);
  msg = import_error(&cy, &o, CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(msg, "cycle");
  CHECK_CONTAINS(msg, "'c1'");
  pb_free(&cy);
  pbuf self = {0};
  op2(&self, "s", "Add", "s", "s", NULL);
  CHECK_CONTAINS(import_error(&self, &o, CLG_INVALID_ARGUMENT), "cycle");
  pb_free(&self);
  pbuf dup = {0};
  write_mlp(&dup, false);
  placeholder(&dup, "x", 2, (const int64_t[]){2, 3});
  CHECK_CONTAINS(import_error(&dup, &o, CLG_INVALID_ARGUMENT), "two nodes are named 'x'");
  pb_free(&dup);
  pbuf uo = {0};
  write_mlp(&uo, false);
  op2(&uo, "lc", "LoopCond", "r", NULL, NULL);
  msg = import_error(&uo, &o, CLG_UNIMPLEMENTED);
  CHECK_CONTAINS(msg, "op type LoopCond (node 'lc') is not supported");
  CHECK_CONTAINS(msg, "(memory)");
  pb_free(&uo);
  /* An attribute clgraph's op does not have, and one of the wrong kind. */
  pbuf ua = {0};
  write_mlp(&ua, false);
  node_begin(&n, "rr", "Relu", (const char *const[]){"r", NULL}, NULL);
  attr_s(&n, "data_format", "NCHW");
  node_end(&ua, &n);
  CHECK_CONTAINS(import_error(&ua, &o, CLG_UNIMPLEMENTED), "attribute 'data_format'");
  pb_free(&ua);
  pbuf wk = {0};
  write_mlp(&wk, false);
  node_begin(&n, "mm2", "MatMul", (const char *const[]){"r", "r", NULL}, NULL);
  attr_s(&n, "transpose_a", "yes");
  node_end(&wk, &n);
  CHECK_CONTAINS(import_error(&wk, &o, CLG_INVALID_ARGUMENT), "'transpose_a' is a string");
  pb_free(&wk);
  /* A dtype clgraph does not have, an ONNX file without a graph, an empty file (an empty graph is
   * fine). */
  pbuf bf = {0};
  node_begin(&n, "u", "Placeholder", NULL, NULL);
  attr_type(&n, "dtype", 14);
  attr_shape(&n, "shape", 0, NULL);
  node_end(&bf, &n);
  CHECK_CONTAINS(import_error(&bf, &o, CLG_UNIMPLEMENTED), "DT_BFLOAT16");
  pb_free(&bf);
  pbuf onnx = {0}; /* recognised as ONNX by its first field (test_onnx tests the rest) */
  pb_vint(&onnx, 1, 7);
  CHECK_CONTAINS(import_error(&onnx, &o, CLG_INVALID_ARGUMENT), "ModelProto has no graph");
  pb_free(&onnx);
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(clg_graph_import_memory(g, CLG_IMPORT_GRAPHDEF, "", 0, NULL, &r));
  CHECK(clg_import_num_model_nodes(r) == 0 && clg_graph_num_nodes(g) == 0);
  clg_import_result_free(r);
  /* A graph already failed keeps its first error. */
  clg_placeholder(g, "bad name!", CLG_FLOAT32, 0, NULL);
  CHECK_CODE(clg_graph_import_memory(g, CLG_IMPORT_GRAPHDEF, good.p, good.n, &o, NULL),
             CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_graph_error(g), "bad name!");
  clg_graph_free(g);
  CHECK_CODE(clg_graph_import(NULL, "x", NULL, NULL), CLG_INVALID_ARGUMENT);
  pb_free(&good);
}

/* --- tfjs ---------------------------------------------------------------------------------- */

static char dir[256];

static const char *path_in(const char *name)
{
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%.255s/%.250s", dir, name);
  return p;
}

static void write_file(const char *name, const void *data, size_t n)
{
  FILE *f = fopen(path_in(name), "wb");
  CHECK(f != NULL);
  if (f) {
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
  }
}

/* A tfjs model: y = Add(MatMul(x, w), q8) + q16 + h, w float32 [2,2], q8 uint8-quantized [2],
 * q16 uint16-quantized [2] in a second shard of the same group, h float16-quantized [2] in a
 * second group; i an int32 weight, bo a bool weight (nothing consumes them). */
static const char *TOPOLOGY =
    "{\"node\": ["
    "{\"name\": \"y\", \"op\": \"AddV2\", \"input\": [\"s2\", \"h\"], \"attr\": {\"T\": {\"type\": "
    "\"DT_FLOAT\"}}},"
    "{\"name\": \"s2\", \"op\": \"AddV2\", \"input\": [\"s1\", \"q16\"], \"attr\": {\"T\": "
    "{\"type\": \"DT_FLOAT\"}}},"
    "{\"name\": \"s1\", \"op\": \"AddV2\", \"input\": [\"mm\", \"q8\"]},"
    "{\"name\": \"mm\", \"op\": \"MatMul\", \"input\": [\"x\", \"w\"], \"attr\": {\"transpose_a\": "
    "{\"b\": false}, \"transpose_b\": {\"b\": true}, \"T\": {\"type\": \"DT_FLOAT\"}}},"
    "{\"name\": \"x\", \"op\": \"Placeholder\", \"attr\": {\"dtype\": {\"type\": \"DT_FLOAT\"}, "
    "\"shape\": {\"shape\": {\"dim\": [{\"size\": \"-1\"}, {\"size\": \"2\"}]}}}},"
    "{\"name\": \"w\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_FLOAT\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}, {\"size\": \"2\"}]}}}, "
    "\"dtype\": {\"type\": \"DT_FLOAT\"}}},"
    "{\"name\": \"q8\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_FLOAT\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}}}, \"dtype\": {\"type\": "
    "\"DT_FLOAT\"}}},"
    "{\"name\": \"q16\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_FLOAT\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}}}, \"dtype\": {\"type\": "
    "\"DT_FLOAT\"}}},"
    "{\"name\": \"h\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_FLOAT\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}}}, \"dtype\": {\"type\": "
    "\"DT_FLOAT\"}}},"
    "{\"name\": \"i\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_INT32\", \"tensorShape\": {\"dim\": [{\"size\": \"3\"}]}}}, \"dtype\": {\"type\": "
    "\"DT_INT32\"}}},"
    "{\"name\": \"bo\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_BOOL\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}}}, \"dtype\": {\"type\": "
    "\"DT_BOOL\"}}},"
    "{\"name\": \"pad_s\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_INT32\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}, \"intVal\": [4, \"5\"]}}}}"
    "], \"versions\": {\"producer\": 27}}";

static const float TW[4] = {1, 2, -3, 0.25f};
static const uint8_t TQ8[2] = {0, 200};
static const uint16_t TQ16[2] = {7, 65535};
static const uint16_t TH[2] = {0x3800, 0xbc00}; /* 0.5, -1 */
static const double SCALE8 = 0.125, MIN8 = -3, SCALE16 = 0.001, MIN16 = 1.5;

static char *manifest(const char *group0_paths, const char *group1_paths)
{
  char *m = malloc(4096);
  snprintf(m, 4096,
           "[{\"paths\": %s, \"weights\": ["
           "{\"name\": \"w\", \"shape\": [2, 2], \"dtype\": \"float32\"},"
           "{\"name\": \"q8\", \"shape\": [2], \"dtype\": \"float32\", \"quantization\": "
           "{\"dtype\": \"uint8\", \"scale\": 0.125, \"min\": -3}},"
           "{\"name\": \"q16\", \"shape\": [2], \"dtype\": \"float32\", \"quantization\": "
           "{\"dtype\": \"uint16\", \"scale\": 0.001, \"min\": 1.5}}]},"
           "{\"paths\": %s, \"weights\": ["
           "{\"name\": \"h\", \"shape\": [2], \"dtype\": \"float32\", \"quantization\": "
           "{\"dtype\": \"float16\"}},"
           "{\"name\": \"i\", \"shape\": [3], \"dtype\": \"int32\"},"
           "{\"name\": \"bo\", \"shape\": [2], \"dtype\": \"bool\"},"
           "{\"name\": \"unused\", \"shape\": [1], \"dtype\": \"float32\"}]}]",
           group0_paths, group1_paths);
  return m;
}

static void write_model(const char *name, const char *topology, const char *man, const char *extra)
{
  size_t n = strlen(topology) + strlen(man) + strlen(extra) + 256;
  char *json = malloc(n);
  snprintf(json, n,
           "{\"format\": \"graph-model\", \"generatedBy\": \"test\", \"convertedBy\": "
           "\"hand\", %s\"modelTopology\": %s, \"weightsManifest\": %s}",
           extra, topology, man);
  write_file(name, json, strlen(json));
  free(json);
}

static void write_shards(void)
{
  /* group 0: a.bin holds w and the first byte of q8; b.bin the rest (q8's second, q16). */
  uint8_t g0[16 + 2 + 4];
  memcpy(g0, TW, 16);
  memcpy(g0 + 16, TQ8, 2);
  memcpy(g0 + 18, TQ16, 4);
  write_file("a.bin", g0, 17);
  write_file("b.bin", g0 + 17, sizeof g0 - 17);
  uint8_t g1[4 + 12 + 2 + 4];
  int32_t iv[3] = {-1, 0, 123456};
  float unused = 9;
  memcpy(g1, TH, 4);
  memcpy(g1 + 4, iv, 12);
  g1[16] = 1;
  g1[17] = 0;
  memcpy(g1 + 18, &unused, 4);
  write_file("c.bin", g1, sizeof g1);
}

static void test_tfjs(void)
{
  write_shards();
  char *man = manifest("[\"a.bin\", \"b.bin\"]", "[\"c.bin\"]");
  write_model("model.json", TOPOLOGY, man,
              "\"signature\": {\"inputs\": {\"x:0\": {\"name\": \"x:0\", \"dtype\": "
              "\"DT_FLOAT\"}}, \"outputs\": {\"y:0\": {\"name\": \"y:0\"}}}, ");
  clg_graph *g = clg_graph_new();
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_shape s = {"x", 2, {1, 2}};
  o.input_shapes = &s;
  o.num_input_shapes = 1;
  clg_import_result *r = NULL;
  CHECK_OK(clg_graph_import(g, path_in("model.json"), &o, &r));
  CHECK_STR(clg_import_format_name(r), "tfjs");
  CHECK_STR(clg_import_producer(r), "test; hand");
  CHECK(clg_import_num_model_nodes(r) == 12);
  CHECK(clg_import_num_inputs(r) == 1 && strcmp(clg_import_input(r, 0)->name, "x:0") == 0);
  CHECK(clg_import_num_outputs(r) == 1 && strcmp(clg_import_output(r, 0)->name, "y:0") == 0);
  /* Weights dequantized as tfjs does: float32(q * scale + min), float16 widened. */
  clg_output q8, q16, h, iw, bo, ps;
  CHECK_OK(clg_import_find(r, "q8", &q8));
  CHECK_OK(clg_import_find(r, "q16", &q16));
  CHECK_OK(clg_import_find(r, "h", &h));
  CHECK_OK(clg_import_find(r, "i", &iw));
  CHECK_OK(clg_import_find(r, "bo", &bo));
  CHECK_OK(clg_import_find(r, "pad_s", &ps));
  const float *q8v = clg_tensor_const_data(clg_node_value(q8.node));
  const float *q16v = clg_tensor_const_data(clg_node_value(q16.node));
  const float *hv = clg_tensor_const_data(clg_node_value(h.node));
  for (int i = 0; i < 2; i++) {
    CHECK(q8v[i] == (float)(TQ8[i] * SCALE8 + MIN8));
    CHECK(q16v[i] == (float)(TQ16[i] * SCALE16 + MIN16));
  }
  CHECK(hv[0] == 0.5f && hv[1] == -1.0f);
  const int32_t *iv = clg_tensor_const_data(clg_node_value(iw.node));
  CHECK(iv[0] == -1 && iv[1] == 0 && iv[2] == 123456);
  const uint8_t *bv = clg_tensor_const_data(clg_node_value(bo.node));
  CHECK(clg_node_dtype(bo.node) == CLG_BOOL && bv[0] == 1 && bv[1] == 0);
  const int32_t *pv = clg_tensor_const_data(clg_node_value(ps.node));
  CHECK(pv[0] == 4 && pv[1] == 5);
  /* AddV2 became Add; the value is exact against the hand computation. */
  clg_output y;
  CHECK_OK(clg_import_find(r, "y", &y));
  CHECK_STR(clg_node_op(y.node), "Add");
  int64_t xd[2] = {1, 2};
  float xv[2] = {2, -1};
  clg_tensor *x = clg_tensor_new(CLG_FLOAT32, 2, xd, xv);
  clg_tensor *res = run1(g, clg_import_input(r, 0)->value, x, y);
  if (res)
    for (int j = 0; j < 2; j++) {
      float mm = xv[0] * TW[j * 2] + xv[1] * TW[j * 2 + 1]; /* transpose_b */
      float want = ((mm + q8v[j]) + q16v[j]) + hv[j];
      CHECK_MSG(((const float *)clg_tensor_const_data(res))[j] == want, "y[%d] = %g, want %g", j,
                ((const float *)clg_tensor_const_data(res))[j], want);
    }
  clg_tensor_free(res);
  clg_tensor_free(x);
  clg_import_result_free(r);
  clg_graph_free(g);

  /* From memory, with base_dir. */
  uint8_t *bytes;
  size_t len;
  CHECK_OK(clg_imp_read_file(path_in("model.json"), &bytes, &len));
  g = clg_graph_new();
  o.base_dir = dir;
  CHECK_OK(clg_graph_import_memory(g, CLG_IMPORT_AUTO, bytes, len, &o, NULL));
  clg_graph_free(g);
  o.base_dir = NULL;
  free(bytes);
  free(man);

  /* inspect: no weights read, op census in first-appearance order. */
  r = NULL;
  char err[256];
  CHECK_OK(clg_import_inspect(path_in("model.json"), NULL, &r, err, sizeof err));
  CHECK(clg_import_num_op_types(r) == 4);
  const clg_import_op_type *t0 = clg_import_op_type_at(r, 0), *t2 = clg_import_op_type_at(r, 2);
  CHECK(t0 && strcmp(t0->op, "AddV2") == 0 && t0->count == 3 && t0->supported &&
        strcmp(t0->example_node, "y") == 0);
  CHECK(t2 && strcmp(t2->op, "Placeholder") == 0 && t2->count == 1);
  CHECK(clg_import_op_type_at(r, 3) && clg_import_op_type_at(r, 3)->count == 7);
  CHECK(clg_import_num_inputs(r) == 1 && clg_import_input(r, 0)->dtype == CLG_FLOAT32 &&
        clg_import_input(r, 0)->rank == -1 && clg_import_input(r, 0)->value.node == NULL);
  clg_import_result_free(r);
}

/* Every float16 weight value (all 65536 bit patterns, in one shard) widens to the float of the
 * same value: the reference computed here from IEEE 754's definition with ldexp (zero,
 * subnormals m * 2^-24, normals (1024 + m) * 2^(e - 25), infinities), NaNs staying NaN with
 * their mantissa; a float32 weight after it in the same shard is read at the right offset. */
static void test_tfjs_float16_all(void)
{
  enum { N = 65536 };
  uint8_t *shard = malloc(2 * N + 8);
  CHECK(shard != NULL);
  if (!shard)
    return;
  for (int i = 0; i < N; i++) {
    shard[2 * i] = (uint8_t)(i & 0xff);
    shard[2 * i + 1] = (uint8_t)(i >> 8);
  }
  const float tail[2] = {-2.5f, 1e-3f};
  memcpy(shard + 2 * N, tail, sizeof tail);
  write_file("h16.bin", shard, 2 * N + 8);
  free(shard);
  const char *topo =
      "{\"node\": ["
      "{\"name\": \"h\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
      "\"DT_FLOAT\", \"tensorShape\": {\"dim\": [{\"size\": \"65536\"}]}}}, \"dtype\": "
      "{\"type\": \"DT_FLOAT\"}}},"
      "{\"name\": \"f\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
      "\"DT_FLOAT\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}}}, \"dtype\": {\"type\": "
      "\"DT_FLOAT\"}}}], \"versions\": {\"producer\": 27}}";
  const char *man = "[{\"paths\": [\"h16.bin\"], \"weights\": ["
                    "{\"name\": \"h\", \"shape\": [65536], \"dtype\": \"float32\", "
                    "\"quantization\": {\"dtype\": \"float16\"}},"
                    "{\"name\": \"f\", \"shape\": [2], \"dtype\": \"float32\"}]}]";
  write_model("h16.json", topo, man, "");
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(clg_graph_import(g, path_in("h16.json"), NULL, &r));
  clg_output h = {0}, f = {0};
  CHECK_OK(clg_import_find(r, "h", &h));
  CHECK_OK(clg_import_find(r, "f", &f));
  const float *hv = h.node ? clg_tensor_const_data(clg_node_value(h.node)) : NULL;
  const float *fv = f.node ? clg_tensor_const_data(clg_node_value(f.node)) : NULL;
  CHECK(hv && fv);
  int bad = 0;
  for (int i = 0; hv && i < N; i++) {
    int sign = i >> 15, e = (i >> 10) & 31, m = i & 1023;
    double want = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    if (sign)
      want = -want;
    uint32_t bits;
    memcpy(&bits, &hv[i], 4);
    bool ok = isnan(want) ? isnan(hv[i]) && ((bits >> 13) & 1023) == (uint32_t)m &&
                                (bits >> 31) == (uint32_t)sign
                          : (double)hv[i] == want && !signbit(hv[i]) == !signbit(want);
    if (!ok && bad++ < 5)
      CHECK_MSG(0, "float16 0x%04x became %a (bits 0x%08x), want %a", i, (double)hv[i],
                (unsigned)bits, want);
  }
  CHECK(bad == 0);
  CHECK(fv && fv[0] == tail[0] && fv[1] == tail[1]);
  clg_import_result_free(r);
  clg_graph_free(g);
}

static void expect_tfjs_error(const char *name, clg_code want, const char *word)
{
  clg_graph *g = clg_graph_new();
  clg_import_options o;
  clg_import_options_init(&o);
  clg_import_shape s = {"x", 2, {1, 2}};
  o.input_shapes = &s;
  o.num_input_shapes = 1;
  CHECK_CODE(clg_graph_import(g, path_in(name), &o, NULL), want);
  CHECK_CONTAINS(clg_graph_error(g), word);
  CHECK_CONTAINS(clg_graph_error(g), name);
  clg_graph_free(g);
}

static void test_bad_tfjs(void)
{
  write_shards();
  char *m;
  /* A missing shard; a short one; one named twice; a group with weights and no file. */
  m = manifest("[\"a.bin\", \"gone.bin\"]", "[\"c.bin\"]");
  write_model("missing.json", TOPOLOGY, m, "");
  free(m);
  expect_tfjs_error("missing.json", CLG_NOT_FOUND, "gone.bin");
  m = manifest("[\"a.bin\"]", "[\"c.bin\"]");
  write_model("short.json", TOPOLOGY, m, "");
  free(m);
  expect_tfjs_error("short.json", CLG_INVALID_ARGUMENT, "short or missing shard data");
  m = manifest("[\"a.bin\", \"b.bin\"]", "[\"b.bin\"]");
  write_model("overlap.json", TOPOLOGY, m, "");
  free(m);
  expect_tfjs_error("overlap.json", CLG_INVALID_ARGUMENT, "shards overlap");
  m = manifest("[\"a.bin\", \"b.bin\"]", "[]");
  write_model("nofile.json", TOPOLOGY, m, "");
  free(m);
  expect_tfjs_error("nofile.json", CLG_INVALID_ARGUMENT, "names no file");
  /* JSON of the wrong shape. */
  write_model("topo.json", "[1, 2]", "[]", "");
  expect_tfjs_error("topo.json", CLG_INVALID_ARGUMENT, "modelTopology is not an object");
  write_model("nodes.json", "{\"node\": {}}", "[]", "");
  expect_tfjs_error("nodes.json", CLG_INVALID_ARGUMENT, "modelTopology.node is not an array");
  write_model("attr.json",
              "{\"node\": [{\"name\": \"c\", \"op\": \"Const\", \"attr\": {\"value\": "
              "{\"list\": {\"i\": {}}}}}]}",
              "[]", "");
  expect_tfjs_error("attr.json", CLG_INVALID_ARGUMENT, "attr 'value''s list.i is not an array");
  write_model("dtype.json",
              "{\"node\": [{\"name\": \"c\", \"op\": \"Const\", \"attr\": {\"value\": "
              "{\"tensor\": {\"dtype\": \"DT_NOPE\"}}}}]}",
              "[]", "");
  expect_tfjs_error("dtype.json", CLG_INVALID_ARGUMENT, "tensor dtype is not a DataType");
  write_model("int.json",
              "{\"node\": [{\"name\": \"c\", \"op\": \"Const\", \"attr\": {\"value\": "
              "{\"tensor\": {\"dtype\": \"DT_INT32\", \"intVal\": [\"12x\"]}}}}]}",
              "[]", "");
  expect_tfjs_error("int.json", CLG_INVALID_ARGUMENT, "intVal[0] is not an integer");
  write_model("wmanifest.json", TOPOLOGY, "{\"paths\": 1}", "");
  expect_tfjs_error("wmanifest.json", CLG_INVALID_ARGUMENT, "weightsManifest is not an array");
  write_model("wdtype.json", TOPOLOGY,
              "[{\"paths\": [\"a.bin\"], \"weights\": [{\"name\": \"w\", \"shape\": [2, 2], "
              "\"dtype\": \"complex\"}]}]",
              "");
  expect_tfjs_error("wdtype.json", CLG_INVALID_ARGUMENT, "weight 'w''s dtype");
  write_model("noweight.json", TOPOLOGY, "[]", "");
  expect_tfjs_error("noweight.json", CLG_INVALID_ARGUMENT, "holds no value");
  write_file("notjson.json", "{\"modelTopology\": ", 18);
  expect_tfjs_error("notjson.json", CLG_INVALID_ARGUMENT, "not JSON");
  write_file("layers.json", "{\"format\": \"layers-model\", \"modelTopology\": {}}", 47);
  expect_tfjs_error("layers.json", CLG_UNIMPLEMENTED, "layers-model");
  /* inspect reports an unreadable file in err. */
  clg_import_result *r = (clg_import_result *)1;
  char err[512];
  CHECK_CODE(clg_import_inspect(path_in("notjson.json"), NULL, &r, err, sizeof err),
             CLG_INVALID_ARGUMENT);
  CHECK(r == NULL);
  CHECK_CONTAINS(err, "not JSON");
  CHECK_CODE(clg_import_inspect(path_in("nothere.json"), NULL, &r, err, sizeof err), CLG_NOT_FOUND);
}

/* --- tfjs's narrowed int64 and float64 weights ------------------------------------------------ */

/* A Const node of model.json: its dtype attr (NULL: none) and its value tensor's dtype. */
static void json_const(char *buf, size_t cap, const char *name, const char *attr_dtype,
                       const char *value_dtype, const char *dims)
{
  char da[64] = "";
  if (attr_dtype)
    snprintf(da, sizeof da, ", \"dtype\": {\"type\": \"%s\"}", attr_dtype);
  size_t k = strlen(buf);
  snprintf(buf + k, cap - k,
           "%s{\"name\": \"%s\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
           "\"%s\", \"tensorShape\": {\"dim\": [%s]}}}%s}}",
           k > 10 ? ", " : "", name, value_dtype, dims, da);
}

static void json_node(char *buf, size_t cap, const char *text)
{
  size_t k = strlen(buf);
  snprintf(buf + k, cap - k, "%s%s", k > 10 ? ", " : "", text);
}

static void wide_error(const char *name, const char *want)
{
  clg_graph *g = clg_graph_new();
  CHECK_CODE(clg_graph_import(g, path_in(name), NULL, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_graph_error(g), want);
  clg_graph_free(g);
}

/* tfjs's converter stores a DT_INT64 Const's weight as int32 and a DT_DOUBLE one's as float32
 * (tfjs has neither dtype) and keeps the node's dtype: the import widens them back exactly,
 * after any dequantization, where the Const declares the wider dtype; others keep theirs. */
static void test_tfjs_wide(void)
{
  static char topo[8192];
  snprintf(topo, sizeof topo, "{\"node\": [");
  json_node(topo, sizeof topo,
            "{\"name\": \"xd\", \"op\": \"Placeholder\", \"attr\": {\"dtype\": {\"type\": "
            "\"DT_DOUBLE\"}, \"shape\": {\"shape\": {\"dim\": [{\"size\": \"2\"}]}}}}");
  json_const(topo, sizeof topo, "l", "DT_INT64", "DT_INT64", "{\"size\": \"3\"}");
  json_const(topo, sizeof topo, "d", "DT_DOUBLE", "DT_DOUBLE", "{\"size\": \"2\"}");
  json_const(topo, sizeof topo, "h", "DT_DOUBLE", "DT_DOUBLE", "{\"size\": \"1\"}");
  json_const(topo, sizeof topo, "q", "DT_INT64", "DT_INT64", "{\"size\": \"2\"}");
  json_const(topo, sizeof topo, "lv", NULL, "DT_INT64", "{\"size\": \"1\"}");
  json_const(topo, sizeof topo, "i", "DT_INT32", "DT_INT32", "{\"size\": \"1\"}");
  json_const(topo, sizeof topo, "f", "DT_FLOAT", "DT_FLOAT", "{\"size\": \"1\"}");
  json_node(topo, sizeof topo,
            "{\"name\": \"sl\", \"op\": \"Cast\", \"input\": [\"l\"], \"attr\": {\"SrcT\": "
            "{\"type\": \"DT_INT64\"}, \"DstT\": {\"type\": \"DT_DOUBLE\"}}}");
  json_node(topo, sizeof topo,
            "{\"name\": \"sd\", \"op\": \"AddV2\", \"input\": [\"xd\", \"d\"], \"attr\": {\"T\": "
            "{\"type\": \"DT_DOUBLE\"}}}");
  size_t k = strlen(topo);
  snprintf(topo + k, sizeof topo - k, "]}");
  static const char *man =
      "[{\"paths\": [\"wide.bin\"], \"weights\": ["
      "{\"name\": \"l\", \"shape\": [3], \"dtype\": \"int32\"},"
      "{\"name\": \"d\", \"shape\": [2], \"dtype\": \"float32\"},"
      "{\"name\": \"h\", \"shape\": [1], \"dtype\": \"float32\", \"quantization\": "
      "{\"dtype\": \"float16\", \"original_dtype\": \"float32\"}},"
      "{\"name\": \"q\", \"shape\": [2], \"dtype\": \"int32\", \"quantization\": "
      "{\"dtype\": \"uint8\", \"scale\": 1, \"min\": -100}},"
      "{\"name\": \"lv\", \"shape\": [1], \"dtype\": \"int32\"},"
      "{\"name\": \"i\", \"shape\": [1], \"dtype\": \"int32\"},"
      "{\"name\": \"f\", \"shape\": [1], \"dtype\": \"float32\"}]}]";
  const int32_t lw[3] = {-5, 7, 2147483647}, lvw = -2147483647 - 1, iw = -9;
  const float dw[2] = {0.1f, -3.5f}, fw = 0.1f;
  const uint16_t hw = 0x3555; /* 0.333251953125 */
  const uint8_t qw[2] = {0, 250};
  uint8_t bin[12 + 8 + 2 + 2 + 4 + 4 + 4];
  memcpy(bin, lw, 12);
  memcpy(bin + 12, dw, 8);
  memcpy(bin + 20, &hw, 2);
  memcpy(bin + 22, qw, 2);
  memcpy(bin + 24, &lvw, 4);
  memcpy(bin + 28, &iw, 4);
  memcpy(bin + 32, &fw, 4);
  write_file("wide.bin", bin, sizeof bin);
  write_model("wide.json", topo, man, "");

  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_MSG(clg_graph_import(g, path_in("wide.json"), NULL, &r) == CLG_OK, "%s",
            clg_graph_error(g));
  clg_output l = {0}, d = {0}, h = {0}, q = {0}, lv = {0}, i = {0}, f = {0}, sl = {0}, sd = {0};
  if (r) {
    CHECK_OK(clg_import_find(r, "l", &l));
    CHECK_OK(clg_import_find(r, "d", &d));
    CHECK_OK(clg_import_find(r, "h", &h));
    CHECK_OK(clg_import_find(r, "q", &q));
    CHECK_OK(clg_import_find(r, "lv", &lv));
    CHECK_OK(clg_import_find(r, "i", &i));
    CHECK_OK(clg_import_find(r, "f", &f));
    CHECK_OK(clg_import_find(r, "sl", &sl));
    CHECK_OK(clg_import_find(r, "sd", &sd));
  }
  if (l.node && d.node && h.node && q.node && lv.node && i.node && f.node) {
    CHECK(clg_node_dtype(l.node) == CLG_INT64 && clg_node_dtype(d.node) == CLG_FLOAT64 &&
          clg_node_dtype(h.node) == CLG_FLOAT64 && clg_node_dtype(q.node) == CLG_INT64 &&
          clg_node_dtype(lv.node) == CLG_INT64 && clg_node_dtype(i.node) == CLG_INT32 &&
          clg_node_dtype(f.node) == CLG_FLOAT32);
    const int64_t *lval = clg_tensor_const_data(clg_node_value(l.node));
    const double *dval = clg_tensor_const_data(clg_node_value(d.node));
    const double *hval = clg_tensor_const_data(clg_node_value(h.node));
    const int64_t *qval = clg_tensor_const_data(clg_node_value(q.node));
    const int64_t *lvval = clg_tensor_const_data(clg_node_value(lv.node));
    CHECK(lval[0] == -5 && lval[1] == 7 && lval[2] == 2147483647);
    CHECK(dval[0] == 0.100000001490116119384765625 && dval[1] == -3.5);
    CHECK(hval[0] == 0.333251953125);
    CHECK(qval[0] == -100 && qval[1] == 150); /* Math.round(q * 1 - 100) */
    CHECK(lvval[0] == -2147483648ll);         /* the value's dtype decides without a dtype attr */
    CHECK(((const int32_t *)clg_tensor_const_data(clg_node_value(i.node)))[0] == -9);
    CHECK(((const float *)clg_tensor_const_data(clg_node_value(f.node)))[0] == 0.1f);
  }
  /* Their consumers get the dtype the graph was made with: a Cast whose SrcT is int64 (which
   * refuses an int32 input), an Add of doubles (1e-12 + float32(0.1) needs double). */
  if (sl.node && sd.node) {
    int64_t d2 = 2;
    double xdv[2] = {1e-12, 2};
    clg_tensor *xd = clg_tensor_new(CLG_FLOAT64, 1, &d2, xdv);
    clg_tensor *rl = run1(g, (clg_output){NULL, 0}, NULL, sl);
    clg_tensor *rd = run1(g, clg_import_input(r, 0)->value, xd, sd);
    CHECK(rl && clg_tensor_dtype(rl) == CLG_FLOAT64 && rd && clg_tensor_dtype(rd) == CLG_FLOAT64);
    if (rl && rd) {
      const double *a = clg_tensor_const_data(rl), *b = clg_tensor_const_data(rd);
      CHECK(a[0] == -5 && a[1] == 7 && a[2] == 2147483647);
      CHECK(b[0] == 1e-12 + (double)0.1f && b[1] == 2 - 3.5);
    }
    clg_tensor_free(rl);
    clg_tensor_free(rd);
    clg_tensor_free(xd);
  }
  clg_import_result_free(r);
  clg_graph_free(g);

  /* Not widened: float32 into int64 (not what the converter does), and a Const whose dtype attr
   * says int64 while its value says int32 (tools/tfjs_to_pb.py refuses it too). */
  snprintf(topo, sizeof topo, "{\"node\": [");
  json_const(topo, sizeof topo, "l", "DT_INT64", "DT_INT64", "{\"size\": \"1\"}");
  k = strlen(topo);
  snprintf(topo + k, sizeof topo - k, "]}");
  write_model("wide_f.json", topo,
              "[{\"paths\": [\"wide.bin\"], \"weights\": [{\"name\": \"l\", \"shape\": [1], "
              "\"dtype\": \"float32\"}]}]",
              "");
  wide_error("wide_f.json", "Const 'l': dtype int64 differs from the value's dtype float");
  snprintf(topo, sizeof topo, "{\"node\": [");
  json_const(topo, sizeof topo, "l", "DT_INT64", "DT_INT32", "{\"size\": \"1\"}");
  k = strlen(topo);
  snprintf(topo + k, sizeof topo - k, "]}");
  write_model("wide_n.json", topo,
              "[{\"paths\": [\"wide.bin\"], \"weights\": [{\"name\": \"l\", \"shape\": [1], "
              "\"dtype\": \"int32\"}]}]",
              "");
  wide_error("wide_n.json", "Const 'l': dtype int64 differs from the value's dtype int32");

  /* tests/data/tfjs/converter, which tests/check_tfjs_to_pb.py checks tools/tfjs_to_pb.py on:
   * the reader gives its d and l the values the converter's test works out by hand. */
  const char *src = getenv("CLG_SOURCE_DIR");
  CHECK_MSG(src != NULL, "CLG_SOURCE_DIR is not set");
  if (!src)
    return;
  char path[1100], base[1024];
  snprintf(base, sizeof base, "%.900s/tests/data/tfjs/converter", src);
  snprintf(path, sizeof path, "%s/model.json", base);
  uint8_t *bytes = NULL;
  size_t len = 0;
  CHECK_OK(clg_imp_read_file(path, &bytes, &len));
  clg_imp_model *m = NULL;
  if (bytes)
    CHECK_OK(clg_imp_read_tfjs((const char *)bytes, len, path, base, &m));
  free(bytes);
  int found = 0;
  for (int n = 0; m && n < m->num_nodes; n++) {
    const clg_imp_attr *v = clg_imp_node_attr(&m->nodes[n], "value");
    const clg_tensor *t = v && v->kind == CLG_IMP_TENSOR ? v->tensor.value : NULL;
    if (strcmp(m->nodes[n].name, "d") == 0) {
      found++;
      CHECK(t && clg_tensor_dtype(t) == CLG_FLOAT64 && clg_tensor_count(t) == 1 &&
            ((const double *)clg_tensor_const_data(t))[0] == 0.100000001490116119384765625);
    } else if (strcmp(m->nodes[n].name, "l") == 0) {
      found++;
      CHECK(t && clg_tensor_dtype(t) == CLG_INT64 && clg_tensor_count(t) == 2 &&
            ((const int64_t *)clg_tensor_const_data(t))[0] == -3 &&
            ((const int64_t *)clg_tensor_const_data(t))[1] == 2147483647);
    }
  }
  CHECK(found == 2);
  clg_imp_model_free(m);
}

/* Folding in waves: the nodes whose inputs are all Consts wait until a node reads one, then one
 * run computes them all. A node of the wave without a host kernel (Relu of int32) does not
 * keep the others from folding (the wave is split until it is alone, then built as is); a long
 * chain folds wave after wave; a wide wave and a folded node with a control input fold too. */
static void test_fold_waves(void)
{
  static char topo[1 << 17];
  snprintf(topo, sizeof topo, "{\"node\": [");
  json_node(topo, sizeof topo,
            "{\"name\": \"m\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
            "\"DT_INT32\", \"tensorShape\": {\"dim\": [{\"size\": \"1\"}, {\"size\": \"2\"}]}, "
            "\"intVal\": [1, 2]}}}}");
  json_node(topo, sizeof topo,
            "{\"name\": \"mm\", \"op\": \"Relu\", \"input\": [\"m\"], \"attr\": {\"T\": "
            "{\"type\": \"DT_INT32\"}}}");
  json_node(
      topo, sizeof topo,
      "{\"name\": \"k\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
      "\"DT_INT32\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}, \"intVal\": [5, 6]}}}}");
  json_node(
      topo, sizeof topo,
      "{\"name\": \"f\", \"op\": \"Cast\", \"input\": [\"k\"], \"attr\": {\"SrcT\": {\"type\": "
      "\"DT_INT32\"}, \"DstT\": {\"type\": \"DT_FLOAT\"}}}");
  json_node(topo, sizeof topo,
            "{\"name\": \"g2\", \"op\": \"Cast\", \"input\": [\"k\", \"^f\"], \"device\": "
            "\"/device:CPU:0\", \"attr\": {\"DstT\": {\"type\": \"DT_INT64\"}}}");
  char node[512];
  for (int i = 0; i < 60; i++) {
    snprintf(node, sizeof node,
             "{\"name\": \"i%d\", \"op\": \"Identity\", \"input\": [\"%s\"], \"attr\": {\"T\": "
             "{\"type\": \"DT_FLOAT\"}}}",
             i, i ? "i" : "f");
    if (i) /* "i<i-1>" */
      snprintf(node, sizeof node,
               "{\"name\": \"i%d\", \"op\": \"Identity\", \"input\": [\"i%d\"], \"attr\": {\"T\": "
               "{\"type\": \"DT_FLOAT\"}}}",
               i, i - 1);
    json_node(topo, sizeof topo, node);
  }
  json_node(topo, sizeof topo,
            "{\"name\": \"h\", \"op\": \"AddV2\", \"input\": [\"i59\", \"f\"], \"attr\": {\"T\": "
            "{\"type\": \"DT_FLOAT\"}}}");
  for (int i = 0; i < 300; i++) {
    snprintf(
        node, sizeof node,
        "{\"name\": \"w%d\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
        "\"DT_INT32\", \"tensorShape\": {\"dim\": [{\"size\": \"1\"}]}, \"intVal\": [%d]}}}}",
        i, 3 * i - 100);
    json_node(topo, sizeof topo, node);
    snprintf(node, sizeof node,
             "{\"name\": \"wc%d\", \"op\": \"Cast\", \"input\": [\"w%d\"], \"attr\": {\"DstT\": "
             "{\"type\": \"DT_DOUBLE\"}}}",
             i, i);
    json_node(topo, sizeof topo, node);
  }
  size_t k = strlen(topo);
  snprintf(topo + k, sizeof topo - k, "]}");
  write_model("waves.json", topo, "[]", "");
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_MSG(clg_graph_import(g, path_in("waves.json"), NULL, &r) == CLG_OK, "%s",
            clg_graph_error(g));
  clg_output o = {0};
  if (r && clg_import_find(r, "mm", &o) == CLG_OK)
    CHECK_STR(clg_node_op(o.node), "Relu");
  const char *folded[] = {"f", "g2", "i0", "i59", "h", "wc0", "wc299"};
  for (size_t i = 0; r && i < sizeof folded / sizeof folded[0]; i++) {
    CHECK_OK(clg_import_find(r, folded[i], &o));
    CHECK_MSG(o.node && strcmp(clg_node_op(o.node), "Const") == 0, "%s is %s", folded[i],
              o.node ? clg_node_op(o.node) : "missing");
  }
  if (r && clg_import_find(r, "h", &o) == CLG_OK && o.node && clg_node_value(o.node)) {
    const float *hv = clg_tensor_const_data(clg_node_value(o.node));
    CHECK(hv[0] == 10 && hv[1] == 12);
  }
  if (r && clg_import_find(r, "g2", &o) == CLG_OK && o.node && clg_node_value(o.node)) {
    const int64_t *gv = clg_tensor_const_data(clg_node_value(o.node));
    CHECK(clg_node_dtype(o.node) == CLG_INT64 && gv[0] == 5 && gv[1] == 6);
    CHECK(clg_node_num_control_inputs(o.node) == 1);
  }
  for (int i = 0; r && i < 300; i++) {
    char name[32];
    snprintf(name, sizeof name, "wc%d", i);
    CHECK_OK(clg_import_find(r, name, &o));
    const clg_tensor *t = o.node ? clg_node_value(o.node) : NULL;
    CHECK_MSG(t && clg_tensor_dtype(t) == CLG_FLOAT64 &&
                  ((const double *)clg_tensor_const_data(t))[0] == 3 * i - 100,
              "%s", name);
  }
  clg_import_result_free(r);
  clg_graph_free(g);
}

/* --- real models (CLGRAPH_MODELS_DIR) --------------------------------------------------------- */

static int real_checks;
static clg_graph *keep_graphs[8];
static int num_keep;

/* The census from the JSON, counted here: nodes and the count of one op type. */
static void json_census(const char *path, int *nodes, const char *op, int *count)
{
  json_error_t e;
  json_t *root = json_load_file(path, 0, &e);
  *nodes = *count = -1;
  CHECK_MSG(root != NULL, "%s: %s", path, e.text);
  if (!root)
    return;
  json_t *arr = json_object_get(json_object_get(root, "modelTopology"), "node");
  *nodes = (int)json_array_size(arr);
  *count = 0;
  size_t i;
  json_t *n;
  json_array_foreach(arr, i, n) *count +=
      strcmp(json_string_value(json_object_get(n, "op")), op) == 0;
  json_decref(root);
}

static void check_census(const char *models, const char *model, const char *op, bool supported)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.json", models, model);
  int nodes, count;
  json_census(path, &nodes, op, &count);
  clg_import_result *r = NULL;
  char err[512];
  CHECK_MSG(clg_import_inspect(path, NULL, &r, err, sizeof err) == CLG_OK, "%s: %s", path, err);
  if (!r)
    return;
  CHECK_MSG(clg_import_num_model_nodes(r) == nodes, "%s: %d nodes, the JSON has %d", model,
            clg_import_num_model_nodes(r), nodes);
  int total = 0, found = 0;
  for (int i = 0; i < clg_import_num_op_types(r); i++) {
    const clg_import_op_type *t = clg_import_op_type_at(r, i);
    total += t->count;
    if (strcmp(t->op, op) == 0) {
      found = 1;
      CHECK_MSG(t->count == count && t->supported == supported, "%s: %s x%d supported %d", model,
                op, t->count, t->supported);
    }
  }
  CHECK_MSG(found && total == nodes, "%s: %s found %d, total %d", model, op, found, total);
  clg_import_result_free(r);
  real_checks++;
}

/* A real model's Consts that declare DT_INT64 or DT_DOUBLE: the reader's values against the
 * manifest's bytes decoded here (int32 raw, float32 raw, float16 by clg_half_to_double, uint8
 * and uint16 as q * scale + min, Math.round for int32), widened. want_consts counts them. */
static void check_wide_real(const char *models, const char *model, int want_consts)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.json", models, model);
  json_error_t e;
  json_t *root = json_load_file(path, 0, &e);
  CHECK_MSG(root != NULL, "%s: %s", path, e.text);
  uint8_t *bytes = NULL;
  size_t len = 0;
  clg_imp_model *m = NULL;
  CHECK_OK(clg_imp_read_file(path, &bytes, &len));
  if (bytes)
    CHECK_MSG(clg_imp_read_tfjs((const char *)bytes, len, path, models, &m) == CLG_OK, "%s: %s",
              path, clg_last_error());
  free(bytes);
  if (!root || !m) {
    json_decref(root);
    clg_imp_model_free(m);
    return;
  }
  json_t *topo = json_object_get(json_object_get(root, "modelTopology"), "node");
  int consts = 0;
  size_t gi, wi, ni;
  json_t *group, *w, *nj;
  json_array_foreach(json_object_get(root, "weightsManifest"), gi, group)
  {
    /* The group's shards, concatenated. */
    uint8_t *data = NULL;
    size_t n = 0, used = 0, pi;
    json_t *pj;
    json_array_foreach(json_object_get(group, "paths"), pi, pj)
    {
      char sp[1200];
      snprintf(sp, sizeof sp, "%s/%s", models, json_string_value(pj));
      FILE *f = fopen(sp, "rb");
      CHECK_MSG(f != NULL, "%s", sp);
      if (!f)
        continue;
      fseek(f, 0, SEEK_END);
      long sz = ftell(f);
      fseek(f, 0, SEEK_SET);
      data = realloc(data, n + (size_t)sz);
      CHECK(fread(data + n, 1, (size_t)sz, f) == (size_t)sz);
      n += (size_t)sz;
      fclose(f);
    }
    json_array_foreach(json_object_get(group, "weights"), wi, w)
    {
      const char *name = json_string_value(json_object_get(w, "name"));
      const char *dt = json_string_value(json_object_get(w, "dtype"));
      const json_t *q = json_object_get(w, "quantization");
      const char *qdt = q ? json_string_value(json_object_get(q, "dtype")) : NULL;
      size_t count = 1, dk;
      json_t *dj;
      json_array_foreach(json_object_get(w, "shape"), dk, dj) count *=
          (size_t)json_integer_value(dj);
      size_t es = !qdt ? 4 : strcmp(qdt, "uint8") == 0 ? 1 : 2;
      if (strcmp(dt, "bool") == 0 || strcmp(dt, "uint8") == 0)
        es = 1;
      const uint8_t *p = data + used;
      used += count * es;
      CHECK(used <= n);
      /* The node's declared dtype, from the JSON. */
      const char *declared = NULL;
      json_array_foreach(topo, ni,
                         nj) if (strcmp(json_string_value(json_object_get(nj, "name")), name) == 0)
          declared = json_string_value(
              json_object_get(json_object_get(json_object_get(nj, "attr"), "dtype"), "type"));
      bool l64 = declared && strcmp(declared, "DT_INT64") == 0;
      bool d64 = declared && strcmp(declared, "DT_DOUBLE") == 0;
      if (!l64 && !d64)
        continue;
      consts++;
      const clg_tensor *t = NULL;
      for (int k = 0; k < m->num_nodes; k++)
        if (strcmp(m->nodes[k].name, name) == 0) {
          const clg_imp_attr *v = clg_imp_node_attr(&m->nodes[k], "value");
          t = v && v->kind == CLG_IMP_TENSOR ? v->tensor.value : NULL;
        }
      CHECK_MSG(t && clg_tensor_dtype(t) == (l64 ? CLG_INT64 : CLG_FLOAT64) &&
                    clg_tensor_count(t) == count,
                "%s: Const %s is not %s [%zu]", model, name, declared, count);
      if (!t || clg_tensor_dtype(t) != (l64 ? CLG_INT64 : CLG_FLOAT64) ||
          clg_tensor_count(t) != count)
        continue;
      double scale = q ? json_number_value(json_object_get(q, "scale")) : 1;
      double min = q ? json_number_value(json_object_get(q, "min")) : 0;
      for (size_t i = 0; i < count; i++) {
        double want;
        if (qdt && strcmp(qdt, "float16") == 0)
          want = clg_half_to_double((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        else if (qdt) {
          double v = (es == 1 ? p[i] : (p[2 * i] | p[2 * i + 1] << 8)) * scale + min;
          want = strcmp(dt, "int32") == 0 ? floor(v + 0.5) : (double)(float)v;
        } else if (strcmp(dt, "int32") == 0) {
          int32_t v;
          memcpy(&v, p + 4 * i, 4);
          want = v;
        } else {
          float v;
          memcpy(&v, p + 4 * i, 4);
          want = v;
        }
        double got = l64 ? (double)((const int64_t *)clg_tensor_const_data(t))[i]
                         : ((const double *)clg_tensor_const_data(t))[i];
        CHECK_MSG(got == want, "%s: %s[%zu] = %.17g, want %.17g", model, name, i, got, want);
      }
    }
    free(data);
  }
  CHECK_MSG(consts == want_consts, "%s: %d Consts of int64 or double, want %d", model, consts,
            want_consts);
  json_decref(root);
  clg_imp_model_free(m);
  real_checks++;
}

/* --- a tfjs model written back as a frozen GraphDef, by this test's own writer --------------- */

static int b64(char c)
{
  const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const char *p = strchr(abc, c);
  return c && p ? (int)(p - abc) : -1;
}

static void b64_field(pbuf *out, int field, const char *text)
{
  uint8_t buf[1024];
  size_t n = 0;
  unsigned acc = 0;
  int bits = 0;
  for (const char *p = text; *p && *p != '=' && n < sizeof buf; p++) {
    acc = acc << 6 | (unsigned)b64(*p);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf[n++] = (uint8_t)(acc >> bits);
    }
  }
  pb_bytes(out, field, buf, n);
}

static int64_t json_i(const json_t *v)
{
  return json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : json_integer_value(v);
}

static int dt_number(const char *name)
{
  static const struct {
    const char *name;
    int v;
  } map[] = {{"DT_FLOAT", 1}, {"DT_DOUBLE", 2}, {"DT_INT32", 3},
             {"DT_INT64", 9}, {"DT_BOOL", 10},  {"DT_HALF", 19}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i].name, name) == 0)
      return map[i].v;
  CHECK_MSG(0, "dtype %s", name);
  return 0;
}

static void json_shape(pbuf *out, const json_t *shape)
{
  if (json_is_true(json_object_get(shape, "unknownRank"))) {
    pb_vint(out, 3, 1);
    return;
  }
  size_t i;
  json_t *d;
  json_array_foreach(json_object_get(shape, "dim"), i, d)
  {
    pbuf dim = {0};
    pb_vint(&dim, 1, json_i(json_object_get(d, "size")));
    pb_msg(out, 2, &dim);
  }
}

/* An AttrValue of protobuf's JSON mapping in the wire format. */
static void json_attr(pbuf *out, const char *key, const json_t *v)
{
  const json_t *x;
  size_t i;
  json_t *e;
  if ((x = json_object_get(v, "s")))
    b64_field(out, 2, json_string_value(x));
  else if ((x = json_object_get(v, "i")))
    pb_vint(out, 3, json_i(x));
  else if ((x = json_object_get(v, "f"))) {
    float f = (float)json_number_value(x);
    pb_tag(out, 4, 5);
    pb_raw(out, &f, 4);
  } else if ((x = json_object_get(v, "b")))
    pb_vint(out, 5, json_is_true(x));
  else if ((x = json_object_get(v, "type")))
    pb_vint(out, 6, dt_number(json_string_value(x)));
  else if ((x = json_object_get(v, "shape"))) {
    pbuf sh = {0};
    json_shape(&sh, x);
    pb_msg(out, 7, &sh);
  } else if ((x = json_object_get(v, "list"))) {
    pbuf l = {0}, packed = {0};
    json_array_foreach(json_object_get(x, "s"), i, e) b64_field(&l, 2, json_string_value(e));
    json_array_foreach(json_object_get(x, "i"), i, e) pb_varint(&packed, (uint64_t)json_i(e));
    if (packed.n)
      pb_msg(&l, 3, &packed);
    json_array_foreach(json_object_get(x, "f"), i, e)
    {
      float f = (float)json_number_value(e);
      pb_raw(&packed, &f, 4);
    }
    if (packed.n)
      pb_msg(&l, 4, &packed);
    json_array_foreach(json_object_get(x, "type"), i, e)
        pb_varint(&packed, (uint64_t)dt_number(json_string_value(e)));
    if (packed.n)
      pb_msg(&l, 6, &packed);
    pb_msg(out, 1, &l);
  } else
    CHECK_MSG(0, "attribute '%s' of a kind this converter does not write", key);
}

/* model.json's topology as a GraphDef, each Const's value the one the tfjs import gave it
 * (its weights dequantized), as tensor_content. */
static bool tfjs_to_graphdef(const char *json_path, const clg_import_result *r, pbuf *out)
{
  json_error_t err;
  json_t *root = json_load_file(json_path, 0, &err);
  CHECK_MSG(root != NULL, "%s: %s", json_path, err.text);
  if (!root)
    return false;
  size_t i;
  json_t *n;
  json_array_foreach(json_object_get(json_object_get(root, "modelTopology"), "node"), i, n)
  {
    const char *name = json_string_value(json_object_get(n, "name"));
    const char *op = json_string_value(json_object_get(n, "op"));
    const json_t *dev = json_object_get(n, "device");
    pbuf nd;
    node_begin(&nd, name, op, NULL, dev ? json_string_value(dev) : NULL);
    size_t k;
    json_t *in;
    json_array_foreach(json_object_get(n, "input"), k, in) pb_str(&nd, 3, json_string_value(in));
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(n, "attr"), key, v)
    {
      pbuf val = {0};
      if (strcmp(op, "Const") == 0 && strcmp(key, "value") == 0) {
        clg_output c;
        CHECK_OK(clg_import_find(r, name, &c));
        const clg_tensor *t = c.node ? clg_node_value(c.node) : NULL;
        CHECK(t != NULL);
        if (!t)
          continue;
        pbuf tp = {0}, sh = {0};
        pb_vint(&tp, 1, clg_tensor_dtype(t)); /* clg_dtype numbers are TF's DataType */
        int64_t dims[CLG_MAX_RANK];
        for (int d = 0; d < clg_tensor_rank(t); d++)
          dims[d] = clg_tensor_dim(t, d);
        shape_msg(&sh, clg_tensor_rank(t), dims);
        pb_msg(&tp, 2, &sh);
        pb_bytes(&tp, 4, clg_tensor_const_data(t), clg_tensor_bytes(t));
        pb_msg(&val, 8, &tp);
      } else
        json_attr(&val, key, v);
      attr_entry(&nd, key, &val);
    }
    node_end(out, &nd);
  }
  json_decref(root);
  return true;
}

/* Imports a real model at batch 1 (from its model.json, then from the GraphDef this test
 * writes of it) and runs it on input[i] = ((i * 7919) % 256) / 255, against TensorFlow.js's
 * outputs on the same input (tests/import_tfjs_reference.js printed them: @tensorflow/tfjs
 * 4.22, CPU backend), within rtol 1e-3 and atol 1e-4. */
static void check_run_path(const char *path, const char *model, int n_out, const char *const *names,
                           const int *sizes, const float *const *want, clg_import_result **keep)
{
  clg_import_result *ins = NULL;
  char err[512];
  CHECK_MSG(clg_import_inspect(path, NULL, &ins, err, sizeof err) == CLG_OK, "%s", err);
  if (!ins)
    return;
  const clg_import_tensor *it = clg_import_input(ins, 0);
  clg_import_shape s = {it->name, it->rank, {0}};
  for (int i = 0; i < it->rank; i++)
    s.dims[i] = it->dims[i] < 0 ? 1 : it->dims[i];
  clg_import_options o;
  clg_import_options_init(&o);
  o.input_shapes = &s;
  o.num_input_shapes = 1;
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_MSG(clg_graph_import(g, path, &o, &r) == CLG_OK, "%s: %s", path, clg_graph_error(g));
  if (r) {
    const clg_import_tensor *in = clg_import_input(r, 0);
    clg_tensor *x = clg_tensor_new(CLG_FLOAT32, in->rank, in->dims, NULL);
    float *xv = clg_tensor_data(x);
    for (size_t i = 0; i < clg_tensor_count(x); i++)
      xv[i] = (float)((i * 7919) % 256) / 255.0f;
    for (int k = 0; k < n_out; k++) {
      clg_output out;
      CHECK_OK(clg_import_find(r, names[k], &out));
      clg_tensor *res = run1(g, in->value, x, out);
      CHECK(res && (int)clg_tensor_count(res) == sizes[k]);
      for (int i = 0; res && i < sizes[k]; i++) {
        float got = ((const float *)clg_tensor_const_data(res))[i];
        CHECK_MSG(fabsf(got - want[k][i]) <= 1e-4f + 1e-3f * fabsf(want[k][i]),
                  "%s %s[%d] = %.7g, tfjs %.7g", model, names[k], i, got, want[k][i]);
      }
      clg_tensor_free(res);
    }
    clg_tensor_free(x);
  }
  clg_import_result_free(ins);
  if (keep) /* the graph stays alive with the result: its nodes hold the values */
    *keep = r, r = NULL;
  clg_import_result_free(r);
  if (!keep)
    clg_graph_free(g);
  else
    keep_graphs[num_keep++] = g;
  real_checks++;
}

static void check_run(const char *models, const char *model, int n_out, const char *const *names,
                      const int *sizes, const float *const *want)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.json", models, model);
  clg_import_result *r = NULL;
  check_run_path(path, model, n_out, names, sizes, want, &r);
  if (!r)
    return;
  pbuf gd = {0};
  char name[300];
  snprintf(name, sizeof name, "%s.pb", model);
  if (tfjs_to_graphdef(path, r, &gd)) {
    write_file(name, gd.p, gd.n);
    check_run_path(path_in(name), model, n_out, names, sizes, want, NULL);
    /* inspect reads both files to the same census. */
    clg_import_result *a = NULL, *b = NULL;
    char err[512];
    CHECK_OK(clg_import_inspect(path, NULL, &a, err, sizeof err));
    CHECK_OK(clg_import_inspect(path_in(name), NULL, &b, err, sizeof err));
    if (a && b) {
      CHECK_STR(clg_import_format_name(b), "graphdef");
      CHECK(clg_import_num_model_nodes(a) == clg_import_num_model_nodes(b));
      CHECK(clg_import_num_op_types(a) == clg_import_num_op_types(b));
      for (int i = 0; i < clg_import_num_op_types(a) && i < clg_import_num_op_types(b); i++) {
        const clg_import_op_type *ta = clg_import_op_type_at(a, i),
                                 *tb = clg_import_op_type_at(b, i);
        CHECK(strcmp(ta->op, tb->op) == 0 && ta->count == tb->count &&
              ta->supported == tb->supported);
      }
    }
    clg_import_result_free(a);
    clg_import_result_free(b);
  }
  pb_free(&gd);
  clg_import_result_free(r);
}

static void test_real_models(void)
{
  const char *models = getenv("CLGRAPH_MODELS_DIR");
  if (!models || !models[0]) {
    printf("test_import: CLGRAPH_MODELS_DIR is not set: the real-model checks did not run\n");
    return;
  }
  struct stat st;
  CHECK_MSG(stat(models, &st) == 0 && S_ISDIR(st.st_mode),
            "CLGRAPH_MODELS_DIR=%s is not a folder (run ci/get-models.sh)", models);
  /* Control flow, which clgraph does not run, counted exactly; and ops it runs. */
  check_census(models, "faceboxes", "LoopCond", false);
  check_census(models, "faceboxes", "TensorArrayV3", false);
  check_census(models, "handtrack", "Enter", false);
  check_census(models, "emotion", "MaxPool", true);
  check_census(models, "gear", "_FusedMatMul", true);
  check_census(models, "rvm", "Switch", false);
  /* Two models clgraph runs with the ops it has, against TensorFlow.js. */
  static const float gear2[5] = {0.991564274f, 0.000231379046f, 8.86714872e-7f, 0.00811235327f,
                                 0.0000910827293f};
  static const float gear1[2] = {0.984778464f, 0.0152215008f};
  static const float gear0[7] = {0.959774196f,   0.000263688446f, 0.00873055402f, 0.00756006967f,
                                 0.00120009074f, 0.0222154800f,   0.000255849212f};
  check_run(models, "gear", 3, (const char *const[]){"Identity_2", "Identity_1", "Identity"},
            (const int[]){5, 2, 7}, (const float *const[]){gear2, gear1, gear0});
  static const float live[2] = {0.808140576f, 0.191859469f};
  check_run(models, "liveness", 1, (const char *const[]){"Identity"}, (const int[]){2},
            (const float *const[]){live});
  /* tfjs's narrowed Consts widened back: nanodet's 26 int64 ones (its import then goes past
   * them, to an op clgraph lacks or to the end) and faceboxes's 2 double ones. */
  check_wide_real(models, "nanodet", 26);
  check_wide_real(models, "faceboxes", 2);
  {
    char path[1024];
    snprintf(path, sizeof path, "%s/nanodet.json", models);
    clg_graph *g = clg_graph_new();
    clg_code code = clg_graph_import(g, path, NULL, NULL);
    CHECK_MSG(code == CLG_OK || (code == CLG_UNIMPLEMENTED &&
                                 strstr(clg_graph_error(g), "is not supported by clgraph")),
              "nanodet: %s", clg_graph_error(g));
    clg_graph_free(g);
    real_checks++;
  }
  for (int i = 0; i < num_keep; i++)
    clg_graph_free(keep_graphs[i]);
  printf("test_import: %d real-model checks in %s\n", real_checks, models);
}

int main(void)
{
  snprintf(dir, sizeof dir, "/tmp/clg_test_import.XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  clg_graph *keep_graph = clg_graph_new();
  clg_session *keep = NULL;
  clg_session_options so = growth_options();
  CHECK_OK(clg_session_new(keep_graph, &so, &keep)); /* keeps the device state across tests */
  test_mlp(false);
  test_mlp(true);
  test_folding();
  test_fold_bound();
  test_fold_shape_arith();
  test_import_issue24_ops();
  test_fused_conv();
  if (clg_test_require_gpus(2))
    test_devices_and_prefix();
  test_input_map_and_control();
  test_input_shapes();
  test_tensor_fields();
  test_bad_graphdefs();
  test_tfjs();
  test_tfjs_float16_all();
  test_bad_tfjs();
  test_tfjs_wide();
  test_fold_waves();
  test_real_models();
  clg_session_free(keep);
  clg_graph_free(keep_graph);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  return clg_test_summary("test_import");
}
