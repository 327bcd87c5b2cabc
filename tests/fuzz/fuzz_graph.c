/* libFuzzer target: graphs built from a random sequence of public API calls, then placed
 * and run on CPU:0 and PoCL devices through the session API.
 *
 * The input is a byte code: each opcode byte (see fg_step) adds a node (random op, dtype,
 * shape, inputs, name), opens or closes a device scope (valid and invalid specs), misuses
 * the API (NULL graph or input, a node of another graph, bad rank/dims/dtype/values), or
 * runs the graph with random session options (invalid ones included), feeds (wrong shape,
 * dtype, NULL, twice) and fetches. Alongside, a model of the graph predicts every result:
 *  - a builder fails exactly when the model says the call is invalid, and the error is
 *    sticky with the first code; a built node has the model's dtype and shape; names are
 *    unique;
 *  - session creation fails exactly on invalid options or a builder error; without device
 *    scopes (or with soft placement) a float/double graph is always placed;
 *  - a run fails with INVALID_ARGUMENT exactly on a bad feed/fetch or a missing feed, and
 *    otherwise returns the model's values (exactly, while every intermediate is an integer
 *    the dtype represents exactly);
 *  - after each input, no device block is left in use.
 * Sessions share the process-wide device state, which an anchor session (created once)
 * keeps alive, so that inputs do not re-create OpenCL contexts. Also compiled into
 * tests/test_fuzz_replay.c, which replays the committed corpus. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph.h"
#include "device/device.h"

#ifndef FUZZ_GRAPH_ENTRY
#define FUZZ_GRAPH_ENTRY LLVMFuzzerTestOneInput
#define FUZZ_GRAPH_INIT LLVMFuzzerInitialize
#endif

#define FG_ASSERT(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "fuzz_graph: %s:%d: %s: ", __FILE__, __LINE__, #cond);                       \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, " (last error: %s)\n", clg_last_error());                                    \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#define FG_MAX_NODES 48
#define FG_MAX_RUNS 6
#define FG_MAX_FEED_ELEMS 4096
#define FG_NAME_MAX 24

/* The model of one node. */
typedef struct fg_node {
  clg_node *node;
  const char *op;
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
  size_t count; /* elements; SIZE_MAX when too many to feed */
  int num_inputs;
  int inputs[8];
  bool ta, tb;
  double *value; /* Const values */
} fg_node;

typedef struct fg_state {
  const uint8_t *p, *end;
  clg_graph *g, *other; /* other: a second graph, for "node of another graph" misuse */
  clg_node *foreign;
  fg_node nodes[FG_MAX_NODES];
  int num_nodes;
  bool failed;          /* the model says the graph has a sticky error */
  clg_code failed_code; /* its code */
  int scopes;
  bool scoped; /* some node was built under a device spec */
  bool remote; /* ... naming a job, replica or task this process does not have */
  bool has_half;
  char name[FG_NAME_MAX + 1];
  bool named;
  clg_session *s;
  bool s_soft;
  int runs;
} fg_state;

static clg_session *fg_anchor;
static clg_graph *fg_anchor_graph;

/* Outcome counts, printed at exit when FUZZ_GRAPH_STATS is set (how much really ran). */
static bool fg_trace; /* FUZZ_GRAPH_TRACE: print each run's outcome (to debug seeds) */
static unsigned long fg_stat_nodes, fg_stat_sessions, fg_stat_runs_ok, fg_stat_runs_failed,
    fg_stat_checked, fg_stat_on_gpu;

static void fg_print_stats(void)
{
  fprintf(stderr,
          "fuzz_graph: %lu nodes built, %lu sessions, %lu runs OK (%lu outputs compared with the "
          "model, %lu nodes placed on a GPU), %lu runs failed as predicted\n",
          fg_stat_nodes, fg_stat_sessions, fg_stat_runs_ok, fg_stat_checked, fg_stat_on_gpu,
          fg_stat_runs_failed);
}

static void fg_log_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  (void)user;
  (void)message; /* formatting ran; the text is not needed */
}

int FUZZ_GRAPH_INIT(int *argc, char ***argv);

int FUZZ_GRAPH_INIT(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  /* The test environment: four PoCL devices standing in as GPUs. */
  setenv("POCL_DEVICES", "pthread pthread pthread pthread", 0);
  setenv("CLGRAPH_DEVICE_TYPES", "all", 0);
  setenv("POCL_ENABLE_UNINIT", "1", 0);
  clg_log_set_sink(fg_log_sink, NULL);
  clg_log_set_level(CLG_LOG_DEBUG);
  clg_graph *g = fg_anchor_graph = clg_graph_new();
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1; /* small regions: many inputs, little memory */
  clg_code code = clg_session_new(g, &opt, &fg_anchor);
  if (code != CLG_OK || clg_devices_count(clg_session_devices(fg_anchor)) < 2) {
    fprintf(stderr, "fuzz_graph: no OpenCL device standing in as a GPU (%s)\n", clg_last_error());
    abort();
  }
  fg_trace = getenv("FUZZ_GRAPH_TRACE") != NULL;
  if (getenv("FUZZ_GRAPH_STATS"))
    atexit(fg_print_stats);
  /* g stays alive with the anchor for the life of the process. */
  return 0;
}

static unsigned fg_byte(fg_state *s) { return s->p < s->end ? *s->p++ : 0; }

/* A small dimension, sometimes a bigger one (MatMul through CLBlast's indirect path). */
static int64_t fg_dim(fg_state *s)
{
  unsigned b = fg_byte(s);
  return b < 192 ? (int64_t)(b % 5) : (int64_t)(b - 192); /* 0..63 */
}

static double fg_small_value(fg_state *s) { return (double)((int)(fg_byte(s) % 5) - 2); }

static size_t fg_count(int rank, const int64_t *dims)
{
  size_t c = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return SIZE_MAX;
    if (dims[i] > 0 && c > FG_MAX_FEED_ELEMS / (size_t)dims[i])
      c = SIZE_MAX / 2; /* keep scanning: a later 0 still makes it empty */
    else
      c *= (size_t)dims[i];
  }
  return c > FG_MAX_FEED_ELEMS ? SIZE_MAX : c;
}

static bool fg_same_shape(const fg_node *a, const fg_node *b)
{
  return a->rank == b->rank && memcmp(a->dims, b->dims, sizeof a->dims[0] * (size_t)a->rank) == 0;
}

/* An inferred shape with more than INT64_MAX / 8 elements is refused at build (the one
 * checked path for every op's output). */
static bool fg_elements_ok(const fg_node *m)
{
  double total = 1;
  for (int i = 0; i < m->rank; i++) {
    if (m->dims[i] == 0)
      return true;
    total *= (double)m->dims[i];
  }
  return total <= (double)(INT64_MAX / 8);
}

/* numpy broadcasting of a and b into out's rank and dims (Add, Sub, Mul): dimensions are
 * matched from the right; equal, or one of them 1. */
static bool fg_broadcast(const fg_node *a, const fg_node *b, fg_node *out)
{
  int rank = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < rank; i++) {
    int64_t da = i < a->rank ? a->dims[a->rank - 1 - i] : 1;
    int64_t db = i < b->rank ? b->dims[b->rank - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return false;
    out->dims[rank - 1 - i] = da == 1 ? db : da;
  }
  out->rank = rank;
  return true;
}

/* The element of input `in` that output element e of `out` reads under broadcasting. */
static size_t fg_broadcast_index(const fg_node *in, const fg_node *out, size_t e)
{
  size_t index = 0, stride = 1;
  for (int i = 0; i < in->rank; i++) {
    int d_in = in->rank - 1 - i, d_out = out->rank - 1 - i;
    size_t coord = (size_t)(e % (size_t)out->dims[d_out]);
    e /= (size_t)out->dims[d_out];
    if (in->dims[d_in] != 1)
      index += coord * stride;
    stride *= (size_t)in->dims[d_in];
  }
  return index;
}

/* A node index from one byte: one of the model's nodes. */
static int fg_pick(fg_state *s)
{
  return s->num_nodes ? (int)(fg_byte(s) % (unsigned)s->num_nodes) : -1;
}

static const char *fg_take_name(fg_state *s)
{
  if (!s->named)
    return NULL;
  s->named = false;
  return s->name;
}

/* TensorFlow's node-name rule, [A-Za-z0-9.][A-Za-z0-9_.\-/]*, written out again. */
static bool fg_name_valid(const char *name)
{
  if (!name)
    return true;
  if (!name[0] || !(isalnum((unsigned char)name[0]) || name[0] == '.'))
    return false;
  for (const char *c = name + 1; *c; c++)
    if (!(isalnum((unsigned char)*c) || strchr("_.-/", *c)))
      return false;
  return true;
}

/* Records the outcome of one builder call against the model. */
static void fg_check_built(fg_state *s, clg_node *got, bool valid, const char *name, fg_node *m)
{
  if (s->failed) {
    FG_ASSERT(!got, "a builder succeeded after a sticky error");
    FG_ASSERT(clg_graph_status(s->g) == s->failed_code, "sticky code changed to %s",
              clg_code_name(clg_graph_status(s->g)));
    free(m->value);
    return;
  }
  if (name && valid)
    for (int i = 0; i < s->num_nodes; i++)
      if (strcmp(clg_node_name(s->nodes[i].node), name) == 0)
        valid = false; /* duplicate name */
  if (!valid) {
    FG_ASSERT(!got, "builder %s succeeded on invalid input", m->op);
    FG_ASSERT(clg_graph_status(s->g) == CLG_INVALID_ARGUMENT, "builder error code %s",
              clg_code_name(clg_graph_status(s->g)));
    FG_ASSERT(clg_graph_error(s->g)[0] != '\0', "empty builder error");
    s->failed = true;
    s->failed_code = CLG_INVALID_ARGUMENT;
    free(m->value);
    return;
  }
  FG_ASSERT(got, "builder %s failed on valid input: %s", m->op, clg_graph_error(s->g));
  FG_ASSERT(strcmp(clg_node_op(got), m->op) == 0, "op %s, want %s", clg_node_op(got), m->op);
  FG_ASSERT(clg_node_dtype(got) == m->dtype && clg_node_rank(got) == m->rank,
            "%s: dtype %d rank %d, model %d %d", m->op, (int)clg_node_dtype(got),
            clg_node_rank(got), (int)m->dtype, m->rank);
  for (int i = 0; i < m->rank; i++)
    FG_ASSERT(clg_node_dim(got, i) == m->dims[i], "%s dim %d: %lld, model %lld", m->op, i,
              (long long)clg_node_dim(got, i), (long long)m->dims[i]);
  if (name)
    FG_ASSERT(strcmp(clg_node_name(got), name) == 0, "name '%s', asked '%s'", clg_node_name(got),
              name);
  for (int i = 0; i < s->num_nodes; i++)
    FG_ASSERT(strcmp(clg_node_name(s->nodes[i].node), clg_node_name(got)) != 0,
              "duplicate default name '%s'", clg_node_name(got));
  FG_ASSERT(clg_graph_find(s->g, clg_node_name(got)) == got, "find('%s')", clg_node_name(got));
  m->node = got;
  fg_stat_nodes++;
  m->count = fg_count(m->rank, m->dims);
  if (clg_node_requested_device(got)[0]) {
    s->scoped = true;
    /* Soft placement drops type and id, never job, replica or task (TensorFlow's rule). */
    clg_devname spec;
    FG_ASSERT(clg_devname_parse(clg_node_requested_device(got), &spec) == CLG_OK,
              "requested device '%s' does not parse", clg_node_requested_device(got));
    if ((spec.has_job && strcmp(spec.job, "localhost") != 0) ||
        (spec.has_replica && spec.replica != 0) || (spec.has_task && spec.task != 0))
      s->remote = true;
  }
  if (m->dtype == CLG_FLOAT16)
    s->has_half = true;
  s->nodes[s->num_nodes++] = *m;
}

static void fg_build_const(fg_state *s, bool f64)
{
  fg_node m = {.op = "Const", .dtype = f64 ? CLG_FLOAT64 : CLG_FLOAT32};
  m.rank = (int)(fg_byte(s) % 3);
  for (int i = 0; i < m.rank; i++)
    m.dims[i] = fg_dim(s);
  size_t count = fg_count(m.rank, m.dims);
  m.value = malloc(sizeof(double) * (count ? count : 1));
  void *raw = malloc((f64 ? 8 : 4) * (count ? count : 1));
  if (!m.value || !raw)
    abort();
  for (size_t i = 0; i < count; i++) {
    m.value[i] = fg_small_value(s);
    if (f64)
      ((double *)raw)[i] = m.value[i];
    else
      ((float *)raw)[i] = (float)m.value[i];
  }
  const char *name = fg_take_name(s);
  clg_node *n;
  if (fg_byte(s) % 4 == 0) { /* through clg_const and a host tensor */
    clg_tensor *t = clg_tensor_new(m.dtype, m.rank, m.dims, raw);
    FG_ASSERT(t, "clg_tensor_new");
    n = clg_const(s->g, name, t);
    clg_tensor_free(t);
  } else {
    n = f64 ? clg_const_f64(s->g, name, m.rank, m.dims, raw)
            : clg_const_f32(s->g, name, m.rank, m.dims, raw);
  }
  free(raw);
  fg_check_built(s, n, fg_name_valid(name), name, &m);
}

static void fg_build_placeholder(fg_state *s)
{
  static const clg_dtype dtypes[] = {CLG_FLOAT32, CLG_FLOAT64,  CLG_FLOAT32,
                                     CLG_FLOAT16, (clg_dtype)0, (clg_dtype)7};
  fg_node m = {.op = "Placeholder", .dtype = dtypes[fg_byte(s) % 6]};
  unsigned r = fg_byte(s);
  m.rank = r < 240 ? (int)(r % 3) : (int)(r % 12) - 2; /* sometimes -2..9 */
  bool valid = m.rank >= 0 && m.rank <= CLG_MAX_RANK && clg_dtype_size(m.dtype) != 0;
  int64_t dims[12] = {0};
  for (int i = 0; i < m.rank && i < 12; i++) {
    unsigned b = fg_byte(s);
    dims[i] = b == 255 ? -1 : b == 254 ? INT64_MAX / 2 : fg_dim(s);
    valid = valid && dims[i] >= 0;
  }
  if (valid) { /* more than INT64_MAX / 8 elements is too many */
    double total = 1;
    bool empty = false;
    for (int i = 0; i < m.rank; i++) {
      total *= (double)dims[i];
      empty |= dims[i] == 0;
    }
    valid = empty || total <= (double)(INT64_MAX / 8);
  }
  for (int i = 0; i < m.rank && i < CLG_MAX_RANK; i++)
    m.dims[i] = dims[i];
  const char *name = fg_take_name(s);
  bool null_dims = m.rank > 0 && fg_byte(s) == 253;
  clg_node *n = clg_placeholder(s->g, name, m.dtype, m.rank, null_dims ? NULL : dims);
  fg_check_built(s, n, valid && !null_dims && fg_name_valid(name), name, &m);
}

static void fg_build_matmul(fg_state *s)
{
  int a = fg_pick(s), b = fg_pick(s);
  unsigned t = fg_byte(s);
  if (a < 0)
    return;
  const fg_node *na = &s->nodes[a], *nb = &s->nodes[b];
  fg_node m = {.op = "MatMul", .num_inputs = 2, .inputs = {a, b}, .ta = t & 1, .tb = t & 2};
  bool valid = na->rank == 2 && nb->rank == 2 && na->dtype == nb->dtype;
  if (valid)
    valid = na->dims[m.ta ? 0 : 1] == nb->dims[m.tb ? 1 : 0];
  if (valid) {
    m.dtype = na->dtype;
    m.rank = 2;
    m.dims[0] = na->dims[m.ta ? 1 : 0];
    m.dims[1] = nb->dims[m.tb ? 0 : 1];
    valid = fg_elements_ok(&m);
  }
  const char *name = fg_take_name(s);
  clg_node *n = clg_matmul(s->g, name, na->node, nb->node, m.ta, m.tb);
  fg_check_built(s, n, valid && fg_name_valid(name), name, &m);
}

static void fg_build_binary(fg_state *s, int which)
{
  static const char *const ops[3] = {"Add", "Sub", "Mul"};
  int a = fg_pick(s), b = fg_pick(s);
  if (a < 0)
    return;
  const fg_node *na = &s->nodes[a], *nb = &s->nodes[b];
  fg_node m = {.op = ops[which], .num_inputs = 2, .inputs = {a, b}};
  bool valid = na->dtype == nb->dtype && fg_broadcast(na, nb, &m) && fg_elements_ok(&m);
  if (valid)
    m.dtype = na->dtype;
  const char *name = fg_take_name(s);
  clg_node *n = which == 0   ? clg_add(s->g, name, na->node, nb->node)
                : which == 1 ? clg_sub(s->g, name, na->node, nb->node)
                             : clg_mul(s->g, name, na->node, nb->node);
  fg_check_built(s, n, valid && fg_name_valid(name), name, &m);
}

static void fg_build_addn(fg_state *s)
{
  int k = (int)(fg_byte(s) % 9); /* 0 is invalid */
  if (s->num_nodes == 0)
    return;
  fg_node m = {.op = "AddN", .num_inputs = k};
  clg_node *in[8];
  bool valid = k >= 1;
  for (int i = 0; i < k; i++) {
    m.inputs[i] = fg_pick(s);
    in[i] = s->nodes[m.inputs[i]].node;
    const fg_node *first = &s->nodes[m.inputs[0]], *x = &s->nodes[m.inputs[i]];
    valid = valid && x->dtype == first->dtype && fg_same_shape(x, first);
  }
  if (valid) {
    const fg_node *first = &s->nodes[m.inputs[0]];
    m.dtype = first->dtype;
    m.rank = first->rank;
    memcpy(m.dims, first->dims, sizeof m.dims);
  }
  const char *name = fg_take_name(s);
  clg_node *n = clg_add_n(s->g, name, k, k ? in : NULL);
  fg_check_built(s, n, valid && fg_name_valid(name), name, &m);
}

static void fg_build_identity(fg_state *s)
{
  int a = fg_pick(s);
  if (a < 0)
    return;
  const fg_node *na = &s->nodes[a];
  fg_node m = {
      .op = "Identity", .num_inputs = 1, .inputs = {a}, .dtype = na->dtype, .rank = na->rank};
  memcpy(m.dims, na->dims, sizeof m.dims);
  const char *name = fg_take_name(s);
  clg_node *n = clg_identity(s->g, name, na->node);
  fg_check_built(s, n, fg_name_valid(name), name, &m);
}

static void fg_push_device(fg_state *s)
{
  static const char *const specs[] = {"/cpu:0",
                                      "/device:GPU:0",
                                      "/device:GPU:1",
                                      "/gpu:3",
                                      "/device:GPU:7",
                                      "GPU:2",
                                      "gpu:1",
                                      "/job:localhost/replica:0/task:0/device:GPU:2",
                                      "/job:worker",
                                      "/device:CPU:1",
                                      "/device:TPU:0",
                                      "",
                                      NULL,
                                      "/device:GPU:*",
                                      "/replica:1",
                                      "//",
                                      "/device:",
                                      "cpu:x",
                                      "/job:localhost/device:cpu:0",
                                      "/GPU:0/cpu:0"};
  unsigned b = fg_byte(s);
  char raw[FG_NAME_MAX + 1];
  const char *spec;
  if (b < 200) {
    spec = specs[b % (sizeof specs / sizeof specs[0])];
  } else { /* raw bytes */
    size_t len = fg_byte(s) % FG_NAME_MAX;
    for (size_t i = 0; i < len; i++)
      raw[i] = (char)(fg_byte(s) | 1); /* no NUL inside */
    raw[len] = '\0';
    spec = raw;
  }
  clg_devname parsed;
  bool valid = !spec || !spec[0] || clg_devname_parse_scope(spec, &parsed) == CLG_OK;
  clg_code code = clg_graph_push_device(s->g, spec);
  if (s->failed) {
    FG_ASSERT(code == s->failed_code, "push after a sticky error: %s", clg_code_name(code));
  } else if (!valid) {
    FG_ASSERT(code == CLG_INVALID_ARGUMENT && clg_graph_status(s->g) == CLG_INVALID_ARGUMENT,
              "push of bad spec '%s': %s", spec, clg_code_name(code));
    s->failed = true;
    s->failed_code = CLG_INVALID_ARGUMENT;
  } else {
    FG_ASSERT(code == CLG_OK, "push of '%s': %s", spec ? spec : "(null)", clg_code_name(code));
    s->scopes++;
  }
}

static void fg_pop_device(fg_state *s)
{
  clg_code code = clg_graph_pop_device(s->g);
  if (s->failed) {
    FG_ASSERT(code == s->failed_code, "pop after a sticky error: %s", clg_code_name(code));
  } else if (s->scopes == 0) {
    FG_ASSERT(code == CLG_FAILED_PRECONDITION, "pop with no scope: %s", clg_code_name(code));
    s->failed = true;
    s->failed_code = CLG_FAILED_PRECONDITION;
  } else {
    FG_ASSERT(code == CLG_OK, "pop: %s", clg_code_name(code));
    s->scopes--;
  }
}

static void fg_set_name(fg_state *s)
{
  static const char *const names[] = {"a",          "b",  "Const",         "MatMul", "Const_1",
                                      "x/y",        ".z", "_bad",          "-bad",   "",
                                      "with space", "A",  "tower_0/MatMul"};
  unsigned b = fg_byte(s);
  if (b < 200) {
    snprintf(s->name, sizeof s->name, "%s", names[b % (sizeof names / sizeof names[0])]);
  } else {
    size_t len = fg_byte(s) % FG_NAME_MAX;
    for (size_t i = 0; i < len; i++)
      s->name[i] = (char)(fg_byte(s) | 1);
    s->name[len] = '\0';
  }
  s->named = true;
}

/* API misuse that must be INVALID_ARGUMENT (and sticky when it reaches the graph). */
static void fg_misuse(fg_state *s)
{
  unsigned b = fg_byte(s);
  int a = fg_pick(s);
  clg_node *x = a >= 0 ? s->nodes[a].node : NULL;
  int64_t dims[2] = {2, -3};
  float v[4] = {0};
  fg_node m = {.op = "Const"};
  clg_node *n = NULL;
  switch (b % 8) {
  case 0: /* NULL graph: no graph to record on */
    FG_ASSERT(!clg_add(NULL, NULL, x, x) && clg_last_code() == CLG_INVALID_ARGUMENT, "NULL graph");
    FG_ASSERT(clg_graph_push_device(NULL, "/cpu:0") == CLG_INVALID_ARGUMENT, "push on NULL");
    FG_ASSERT(clg_graph_status(NULL) == CLG_INVALID_ARGUMENT, "status of NULL");
    return;
  case 1:
    m.op = "Add";
    n = clg_add(s->g, NULL, x, NULL);
    break;
  case 2:
    m.op = "MatMul";
    n = clg_matmul(s->g, NULL, s->foreign, x, false, false);
    break;
  case 3:
    n = clg_const_f32(s->g, NULL, 2, dims, v); /* negative dim */
    break;
  case 4:
    n = clg_const_f32(s->g, NULL, 9, dims, v); /* rank above CLG_MAX_RANK */
    break;
  case 5:
    n = clg_const_f32(s->g, NULL, 1, dims, NULL); /* values NULL for 2 elements */
    break;
  case 6:
    n = clg_const(s->g, NULL, NULL);
    break;
  default:
    m.op = "AddN";
    n = clg_add_n(s->g, NULL, -1, &x);
    break;
  }
  fg_check_built(s, n, false, NULL, &m);
}

/* --- running ---------------------------------------------------------------------------- */

typedef struct fg_value {
  bool done, ok, exact;
  double *v;
} fg_value;

/* Rounds to the node's dtype and keeps track of exactness (integers the dtype holds). */
static double fg_round(const fg_node *m, double x, bool *exact)
{
  double limit = m->dtype == CLG_FLOAT64 ? 9007199254740992.0 : 16777216.0;
  if (!(fabs(x) <= limit))
    *exact = false;
  return m->dtype == CLG_FLOAT32 ? (double)(float)x : x;
}

static bool fg_eval(fg_state *s, int i, fg_value *vals, const double *const *fed)
{
  fg_value *r = &vals[i];
  if (r->done)
    return r->ok;
  r->done = true;
  const fg_node *m = &s->nodes[i];
  size_t count = m->count;
  r->exact = true;
  if (m->dtype == CLG_FLOAT16 || count == SIZE_MAX)
    return r->ok = false;
  r->v = calloc(count ? count : 1, sizeof(double));
  if (!r->v)
    abort();
  if (fed[i]) {
    memcpy(r->v, fed[i], sizeof(double) * count);
    return r->ok = true;
  }
  if (strcmp(m->op, "Const") == 0) {
    memcpy(r->v, m->value, sizeof(double) * count);
    return r->ok = true;
  }
  if (strcmp(m->op, "Placeholder") == 0)
    return r->ok = false;
  for (int k = 0; k < m->num_inputs; k++) {
    if (!fg_eval(s, m->inputs[k], vals, fed))
      return r->ok = false;
    r->exact = r->exact && vals[m->inputs[k]].exact;
  }
  const fg_value *a = &vals[m->inputs[0]], *b = m->num_inputs > 1 ? &vals[m->inputs[1]] : NULL;
  if (strcmp(m->op, "MatMul") == 0) {
    const fg_node *na = &s->nodes[m->inputs[0]];
    size_t rows = (size_t)m->dims[0], cols = (size_t)m->dims[1];
    size_t kk = (size_t)na->dims[m->ta ? 0 : 1];
    size_t lda = (size_t)na->dims[1], ldb = (size_t)s->nodes[m->inputs[1]].dims[1];
    for (size_t x = 0; x < rows; x++)
      for (size_t y = 0; y < cols; y++) {
        double sum = 0, mag = 0;
        for (size_t k = 0; k < kk; k++) {
          double av = m->ta ? a->v[k * lda + x] : a->v[x * lda + k];
          double bv = m->tb ? b->v[y * ldb + k] : b->v[k * ldb + y];
          sum += av * bv;
          mag += fabs(av * bv);
        }
        fg_round(m, mag, &r->exact); /* every partial sum stays below mag */
        r->v[x * cols + y] = fg_round(m, sum, &r->exact);
      }
  } else if (strcmp(m->op, "AddN") == 0) {
    for (size_t e = 0; e < count; e++) {
      double sum = 0;
      for (int k = 0; k < m->num_inputs; k++)
        sum = fg_round(m, sum + vals[m->inputs[k]].v[e], &r->exact);
      r->v[e] = sum;
    }
  } else if (strcmp(m->op, "Identity") == 0) {
    memcpy(r->v, a->v, sizeof(double) * count);
  } else {
    const fg_node *ia = &s->nodes[m->inputs[0]], *ib = &s->nodes[m->inputs[1]];
    for (size_t e = 0; e < count; e++) {
      double x = a->v[fg_broadcast_index(ia, m, e)], y = b->v[fg_broadcast_index(ib, m, e)];
      double z = m->op[0] == 'A' ? x + y : m->op[0] == 'S' ? x - y : x * y;
      r->v[e] = fg_round(m, z, &r->exact);
    }
  }
  return r->ok = true;
}

static void fg_check_output(fg_state *s, int i, const clg_tensor *t, const fg_value *r)
{
  const fg_node *m = &s->nodes[i];
  FG_ASSERT(t, "fetch %d is NULL after a successful run", i);
  FG_ASSERT(clg_tensor_dtype(t) == m->dtype && clg_tensor_rank(t) == m->rank, "fetch '%s' type",
            clg_node_name(m->node));
  for (int d = 0; d < m->rank; d++)
    FG_ASSERT(clg_tensor_dim(t, d) == m->dims[d], "fetch '%s' dim %d", clg_node_name(m->node), d);
  if (!r->exact)
    return;
  const void *data = clg_tensor_const_data(t);
  for (size_t e = 0; e < m->count; e++) {
    double got =
        m->dtype == CLG_FLOAT64 ? ((const double *)data)[e] : (double)((const float *)data)[e];
    FG_ASSERT(got == r->v[e], "'%s' (%s) element %zu: %g, model %g", clg_node_name(m->node), m->op,
              e, got, r->v[e]);
  }
}

static clg_tensor *fg_make_feed(fg_state *s, const fg_node *m, double *model)
{
  clg_tensor *t = clg_tensor_new(m->dtype, m->rank, m->dims, NULL);
  FG_ASSERT(t, "clg_tensor_new for a feed");
  void *data = clg_tensor_data(t);
  for (size_t e = 0; e < m->count; e++) {
    double v = fg_small_value(s);
    if (model)
      model[e] = v;
    if (m->dtype == CLG_FLOAT64)
      ((double *)data)[e] = v;
    else if (m->dtype == CLG_FLOAT32)
      ((float *)data)[e] = (float)v;
    else
      ((uint16_t *)data)[e] = v == 0 ? 0 : 0x3C00; /* half: 0 or 1 */
  }
  return t;
}

/* Placement always succeeds for float and double nodes without device specs, and with soft
 * placement unless a spec names another job, replica or task. */
static bool fg_placement_may_fail(const fg_state *s, bool soft)
{
  return s->has_half || (s->scoped && (!soft || s->remote));
}

static void fg_free_session(fg_state *s)
{
  clg_session_free(s->s);
  s->s = NULL;
}

static clg_code fg_new_session(fg_state *s, clg_graph *g, clg_session **out, bool *soft)
{
  static const double fractions[] = {0, 0, 0.5, 1, -0.25, 1.5, NAN, INFINITY};
  static const char *const visible[] = {NULL, "", "0", "1,0", "bogus", "0,0", "9", "3,2,1,0"};
  clg_session_options opt;
  clg_session_options_init(&opt);
  unsigned b = fg_byte(s), c = fg_byte(s);
  opt.allow_soft_placement = b & 1;
  opt.log_device_placement = (b >> 1) & 1;
  opt.gpu_options.allow_growth = (b >> 2) & 1;
  opt.warm_matmul = (b >> 3) & (b >> 4) & 1;
  opt.gpu_options.per_process_gpu_memory_fraction = fractions[c % 8];
  opt.visible_device_list = visible[(c >> 3) % 8];
  clg_virtual_devices virt = {2, {64, 64}};
  switch (b >> 5) {
  case 1:
    opt.num_virtual = -1;
    break;
  case 2:
    opt.num_virtual = 1; /* virtual_devices NULL */
    break;
  case 3:
    opt.num_virtual = 1;
    opt.virtual_devices = &virt;
    break;
  default:
    break;
  }
  double f = opt.gpu_options.per_process_gpu_memory_fraction;
  bool valid = !isnan(f) && f >= 0 && f <= 1 && opt.num_virtual >= 0 &&
               (opt.num_virtual == 0 || (opt.virtual_devices && f == 0));
  *soft = opt.allow_soft_placement;
  clg_session *sess = (clg_session *)&virt; /* must be reset to NULL on failure */
  clg_code code = clg_session_new(g, &opt, &sess);
  if (fg_trace)
    fprintf(stderr, "fuzz_graph: session (soft %d, fraction %g, num_virtual %d): %s %s\n",
            opt.allow_soft_placement, f, opt.num_virtual, clg_code_name(code),
            code ? clg_last_error() : "");
  if (code == CLG_OK) {
    fg_stat_sessions++;
    FG_ASSERT(valid, "invalid options accepted (fraction %g, num_virtual %d)", f, opt.num_virtual);
    FG_ASSERT(!s->failed, "a session on a graph with a builder error");
  } else {
    FG_ASSERT(!sess, "output not reset on failure");
    FG_ASSERT(code == CLG_INVALID_ARGUMENT || (s->failed && code == s->failed_code),
              "clg_session_new: %s", clg_code_name(code));
    if (valid && !s->failed)
      FG_ASSERT(fg_placement_may_fail(s, opt.allow_soft_placement),
                "placement failed on a graph without device scopes or with soft placement");
  }
  *out = code == CLG_OK ? sess : NULL;
  return code;
}

/* Runs the current graph: feeds, fetches and misuse from the input; checks the outcome. */
static void fg_run(fg_state *s, clg_session *sess, bool soft)
{
  int nn = s->num_nodes;
  clg_node *feed_nodes[FG_MAX_NODES + 2], *fetches[6];
  clg_tensor *feeds[FG_MAX_NODES + 2], *outputs[6];
  const double *fed[FG_MAX_NODES] = {0};
  double *fed_values[FG_MAX_NODES] = {0};
  int num_feeds = 0;
  bool misuse = false;
  for (int i = 0; i < nn; i++) {
    const fg_node *m = &s->nodes[i];
    unsigned b = fg_byte(s);
    bool placeholder = strcmp(m->op, "Placeholder") == 0;
    if (m->count == SIZE_MAX || !(placeholder ? b % 8 != 0 : b % 16 == 0))
      continue;
    fed_values[i] = malloc(sizeof(double) * (m->count ? m->count : 1));
    feed_nodes[num_feeds] = m->node;
    feeds[num_feeds++] = fg_make_feed(s, m, fed_values[i]);
    fed[i] = fed_values[i];
  }
  unsigned bad = fg_byte(s);
  if (bad % 4 == 0) { /* one bad feed */
    misuse = true;
    int64_t dims[1] = {3};
    switch ((bad >> 2) % 5) {
    case 0:
      feed_nodes[num_feeds] = s->foreign;
      feeds[num_feeds++] = clg_tensor_new(CLG_FLOAT32, 0, NULL, NULL);
      break;
    case 1:
      feed_nodes[num_feeds] = NULL;
      feeds[num_feeds++] = clg_tensor_new(CLG_FLOAT32, 0, NULL, NULL);
      break;
    case 2: /* wrong dtype or shape for a node */
      feed_nodes[num_feeds] = s->nodes[bad % (unsigned)nn].node;
      feeds[num_feeds++] = clg_tensor_new(
          s->nodes[bad % (unsigned)nn].dtype == CLG_FLOAT32 ? CLG_FLOAT64 : CLG_FLOAT32, 1, dims,
          NULL);
      break;
    case 3:
      feed_nodes[num_feeds] = s->nodes[bad % (unsigned)nn].node;
      feeds[num_feeds++] = NULL;
      break;
    default:
      if (num_feeds == 0) {
        misuse = false;
        break;
      }
      feed_nodes[num_feeds] = feed_nodes[0]; /* fed twice */
      feeds[num_feeds] = feeds[0];
      num_feeds++;
      break;
    }
  }
  int num_fetches = (int)(fg_byte(s) % 5) + 1;
  for (int k = 0; k < num_fetches; k++)
    fetches[k] = s->nodes[fg_byte(s) % (unsigned)nn].node;
  if (fg_byte(s) % 16 == 0) {
    misuse = true;
    fetches[num_fetches - 1] = fg_byte(s) & 1 ? NULL : s->foreign;
  }
  for (int k = 0; k < 6; k++)
    outputs[k] = (clg_tensor *)&outputs; /* must stay untouched on failure */

  fg_value vals[FG_MAX_NODES];
  memset(vals, 0, sizeof vals);
  bool computable = !misuse;
  int fetch_index[6];
  for (int k = 0; k < num_fetches && computable; k++) {
    fetch_index[k] = -1;
    for (int i = 0; i < nn; i++)
      if (s->nodes[i].node == fetches[k])
        fetch_index[k] = i;
    computable = fg_eval(s, fetch_index[k], vals, fed);
  }
  bool half = s->has_half;

  clg_code code =
      clg_session_run(sess, num_feeds, feed_nodes, feeds, num_fetches, fetches, outputs);
  if (fg_trace)
    fprintf(stderr, "fuzz_graph: run of %d nodes, %d feeds, %d fetches%s: %s %s\n", nn, num_feeds,
            num_fetches, misuse ? " (misuse)" : "", clg_code_name(code),
            code ? clg_last_error() : "");
  if (code == CLG_OK) {
    FG_ASSERT(!misuse, "a run with a bad feed or fetch succeeded");
    fg_stat_runs_ok++;
    for (int i = 0; i < nn; i++) {
      const char *dev = clg_session_node_device(sess, s->nodes[i].node);
      FG_ASSERT(dev && clg_session_node_reason(sess, s->nodes[i].node), "node %d not placed", i);
      fg_stat_on_gpu += strstr(dev, "GPU") != NULL;
    }
    for (int k = 0; k < num_fetches; k++) {
      if (computable) {
        fg_check_output(s, fetch_index[k], outputs[k], &vals[fetch_index[k]]);
        fg_stat_checked += vals[fetch_index[k]].exact;
      }
      clg_tensor_free(outputs[k]);
    }
  } else {
    FG_ASSERT(clg_last_error()[0] != '\0', "a failed run left no message");
    fg_stat_runs_failed++;
    /* The graph may have grown since the session was created: placed again at run time. */
    bool placement = strncmp(clg_last_error(), "Cannot assign a device", 22) == 0;
    if (placement)
      FG_ASSERT(fg_placement_may_fail(s, soft), "placement failed at run time");
    FG_ASSERT(!computable || half || placement, "a valid run failed: %s", clg_code_name(code));
    FG_ASSERT(code == CLG_INVALID_ARGUMENT || half, "run failed with %s", clg_code_name(code));
    for (int k = 0; k < num_fetches; k++)
      FG_ASSERT(outputs[k] == (clg_tensor *)&outputs || outputs[k] == NULL,
                "output %d changed by a failed run", k);
  }
  for (int i = 0; i < nn; i++) {
    free(vals[i].v);
    free(fed_values[i]);
  }
  for (int k = 0; k < num_feeds; k++)
    if (k == 0 || feeds[k] != feeds[0])
      clg_tensor_free(feeds[k]);
}

static void fg_step_run(fg_state *s)
{
  if (s->runs >= FG_MAX_RUNS)
    return;
  s->runs++;
  if (!s->s) {
    if (fg_new_session(s, s->g, &s->s, &s->s_soft) != CLG_OK)
      return;
  }
  if (s->failed) {
    clg_tensor *out = NULL;
    clg_node *any = s->num_nodes ? s->nodes[0].node : NULL;
    clg_code code = clg_session_run(s->s, 0, NULL, NULL, any ? 1 : 0, &any, &out);
    FG_ASSERT(code == s->failed_code, "run after a builder error: %s", clg_code_name(code));
    return;
  }
  if (s->num_nodes == 0)
    return;
  fg_run(s, s->s, s->s_soft);
}

/* A second session on the same graph, alive alongside the first for one run. */
static void fg_step_second_session(fg_state *s)
{
  if (s->runs >= FG_MAX_RUNS || s->failed || s->num_nodes == 0)
    return;
  s->runs++;
  clg_session *other;
  bool soft;
  if (fg_new_session(s, s->g, &other, &soft) != CLG_OK)
    return;
  fg_run(s, other, soft);
  clg_session_free(other);
}

/* Device enumeration with a random configuration (a second device set beside the
 * process-wide one). */
static void fg_step_devices(fg_state *s)
{
  static const char *const visible[] = {NULL, "",   "0",       "1,0",  "x", "0,0",
                                        "4",  "-1", "3,2,1,0", "0,,1", " 1"};
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  unsigned b = fg_byte(s);
  cfg.types = b % 9;
  cfg.visible_device_list = visible[fg_byte(s) % 11];
  clg_virtual_devices virt[2] = {{(int)(fg_byte(s) % 4), {16, -1, 0}}, {1, {NAN}}};
  cfg.num_virtual = (int)(b >> 4) % 4 - 1;
  cfg.virtual_devices = fg_byte(s) & 1 ? virt : NULL;
  clg_devices *devs = (clg_devices *)&cfg;
  clg_code code = clg_devices_new(&cfg, &devs);
  if (code == CLG_OK) {
    int n = clg_devices_count(devs);
    FG_ASSERT(n >= 1, "no CPU:0");
    for (int i = 0; i < n; i++)
      for (int j = 0; j < i; j++)
        FG_ASSERT(strcmp(clg_devices_get(devs, i)->name, clg_devices_get(devs, j)->name) != 0,
                  "two devices named %s", clg_devices_get(devs, i)->name);
    char *map = clg_devices_mapping_string(devs);
    FG_ASSERT(map && strncmp(map, "Device mapping:", 15) == 0, "mapping string");
    free(map);
    clg_devices_free(devs);
  } else {
    FG_ASSERT(code == CLG_INVALID_ARGUMENT, "clg_devices_new: %s", clg_code_name(code));
    FG_ASSERT(!devs, "device set not reset on failure");
  }
  char text[12];
  size_t len = fg_byte(s) % 11;
  for (size_t i = 0; i < len; i++)
    text[i] = "gpu,accelerator cpuALL"[fg_byte(s) % 22];
  text[len] = '\0';
  unsigned mask = 12345;
  code = clg_device_types_parse(text, &mask);
  FG_ASSERT(code == CLG_OK || code == CLG_INVALID_ARGUMENT, "types_parse('%s'): %s", text,
            clg_code_name(code));
}

static void fg_reset_graph(fg_state *s)
{
  fg_free_session(s);
  clg_graph_free(s->g);
  for (int i = 0; i < s->num_nodes; i++)
    free(s->nodes[i].value);
  s->g = clg_graph_new();
  FG_ASSERT(s->g, "clg_graph_new");
  s->num_nodes = 0;
  s->failed = false;
  s->scopes = 0;
  s->scoped = s->remote = s->has_half = s->named = false;
}

static void fg_step(fg_state *s)
{
  unsigned op = fg_byte(s);
  if (s->num_nodes >= FG_MAX_NODES && op % 20 < 11)
    op = 15; /* full: run instead */
  switch (op % 20) {
  case 0:
  case 1:
    fg_build_const(s, op % 20 == 1);
    break;
  case 2:
    fg_build_placeholder(s);
    break;
  case 3:
  case 4:
    fg_build_matmul(s);
    break;
  case 5:
  case 6:
  case 7:
    fg_build_binary(s, (int)(op % 20) - 5);
    break;
  case 8:
    fg_build_addn(s);
    break;
  case 9:
    fg_build_identity(s);
    break;
  case 10:
    fg_misuse(s);
    break;
  case 11:
  case 12:
    fg_push_device(s);
    break;
  case 13:
    fg_pop_device(s);
    break;
  case 14:
    fg_set_name(s);
    break;
  case 15:
  case 16:
    fg_step_run(s);
    break;
  case 17:
    fg_step_second_session(s);
    break;
  case 18:
    if (op == 18)
      fg_step_devices(s);
    break;
  default:
    fg_reset_graph(s); /* a fresh graph */
    break;
  }
}

static void fg_check_no_blocks(void)
{
  const clg_devices *devs = clg_session_devices(fg_anchor);
  for (int i = 0; i < clg_devices_count(devs); i++) {
    clg_memory_stats st;
    const char *name = clg_devices_get(devs, i)->name;
    FG_ASSERT(clg_session_memory_stats(fg_anchor, name, &st) == CLG_OK, "stats of %s", name);
    FG_ASSERT(st.live_allocs == 0 && st.bytes_in_use == 0,
              "%s: %llu blocks (%llu bytes) still in use after every session was freed", name,
              (unsigned long long)st.live_allocs, (unsigned long long)st.bytes_in_use);
  }
}

int FUZZ_GRAPH_ENTRY(const uint8_t *data, size_t size);

int FUZZ_GRAPH_ENTRY(const uint8_t *data, size_t size)
{
  static fg_state s;
  memset(&s, 0, sizeof s);
  s.p = data;
  s.end = data + size;
  s.other = clg_graph_new();
  FG_ASSERT(s.other, "clg_graph_new");
  float one = 1;
  s.foreign = clg_const_f32(s.other, "foreign", 0, NULL, &one);
  FG_ASSERT(s.foreign, "foreign node");
  fg_reset_graph(&s);
  while (s.p < s.end)
    fg_step(&s);
  fg_step_run(&s);
  fg_free_session(&s);
  clg_graph_free(s.g);
  for (int i = 0; i < s.num_nodes; i++)
    free(s.nodes[i].value);
  clg_graph_free(s.other);
  fg_check_no_blocks();
  return 0;
}
