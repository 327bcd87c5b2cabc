/* onnx_suite: ONNX's backend conformance tests (Debian's libonnx-testdata) through clgraph.
 *
 * Every subfolder of a suite folder that holds a model.onnx is one test: the model is
 * imported, test_data_set_0/input_N.pb feed its inputs in the model's order, the whole model
 * runs in a device scope (soft placement allowed), and every output is compared with
 * output_N.pb by ONNX's rule. Each test runs in a forked child under a timeout, so a crash or
 * a hang is one test's error, never the suite's end. A committed list of the tests expected
 * to pass turns the suite into a regression test. --help says how to use it. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "clgraph.h"

#define SUITE_MAX_FOLDERS 16
#define SUITE_MAX_TENSORS 64 /* inputs or outputs of one test */
#define SUITE_MSG 1024       /* the message a child sends back */
#define SUITE_ERR_TAIL 32768 /* the last bytes of a child's stderr kept */

static void usage(FILE *f)
{
  fprintf(f,
          "usage: onnx_suite [options] FOLDER...\n"
          "Runs every test of ONNX's backend test folders (Debian's libonnx-testdata:\n"
          "/usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}).\n"
          "A test is a subfolder holding model.onnx and test_data_set_0/input_N.pb, output_N.pb\n"
          "(TensorProtos). Each test, in a child process under a timeout:\n"
          "  1. reads the inputs with clg_import_load_tensor and binds the model's input shapes\n"
          "     to theirs (inputs in the model's order: its graph inputs that are not\n"
          "     initializers);\n"
          "  2. imports model.onnx inside the device scope --device; where that fails and the\n"
          "     model has integer inputs   (a Reshape's shape, a Slice's starts, which clgraph\n"
          "     needs as constants), imports once more with those inputs bound to Consts of\n"
          "     their values through input_map (then, that failing too, every input after\n"
          "     the first: Resize's float scales), and says \"const-bound\" when one runs;\n"
          "  3. runs it in a session with soft placement allowed and compares every output with\n"
          "     output_N.pb: dtype and shape exactly, bool and integers exactly, floats within\n"
          "     ONNX's tolerance |got - want| <= atol + rtol * |want| (NaN equals NaN).\n"
          "Each test prints one line: PASS, FAILED (wrong values: how many, and the worst\n"
          "element) or ERROR (the import's, session's or run's message; a crash, a hang past\n"
          "the timeout). Then counts per folder: passed/failed/errors/total.\n"
          "With --expected, every test listed that does not pass is named (EXPECTED PASS\n"
          "LOST) and the exit status is 1; a pass not listed prints \"NEW PASS name\" and is\n"
          "no failure (add its line to the list). A child killed by a signal or ending with a\n"
          "nonzero status (a sanitizer's report: its stderr is printed) is named (CRASH) and\n"
          "fails the run whether or not its test is listed: no input may crash clgraph.\n"
          "A test that failed for the machine's state runs once more, and says \"run twice\":\n"
          "LeakSanitizer's tracer crashing at exit (no report; ci/sanitize.sh's rule), or\n"
          "RESOURCE_EXHAUSTED (the stand-ins' memory is the host's, which other processes may\n"
          "hold for a while).\n"
          "\n"
          "options:\n"
          "  --device DEV           the device scope around the model (default /device:CPU:0;\n"
          "                         /device:GPU:0 for a GPU or a PoCL stand-in); a test whose\n"
          "                         session lacks DEV is an error\n"
          "  --no-soft-placement    fail where a node cannot run on DEV (default: fall back)\n"
          "  -j N                   run up to N tests at once (default 1)\n"
          "  --timeout S            seconds one test may take (default 60)\n"
          "  --rtol X, --atol X     the tolerances (default ONNX's: 1e-3 and 1e-7)\n"
          "  --expected FILE        the tests expected to pass, one name a line (sorted); the\n"
          "                         k-th --expected goes with the k-th FOLDER\n"
          "  --write-expected FILE  writes the tests that passed in the k-th FOLDER to FILE,\n"
          "                         sorted (regenerates a list after the importer grew)\n"
          "  --only NAME            runs only the test NAME (repeatable)\n"
          "  -v                     prints a child's stderr when its test did not pass\n"
          "  --crash-test NAME, --hang-test NAME\n"
          "                         makes the child of test NAME crash (SIGSEGV) or hang\n"
          "                         (the driver's own check that both are counted as errors)\n"
          "  -h, --help             this text\n"
          "Exit status: 0; 1 when an expected test did not pass, a test crashed or a folder\n"
          "cannot be read; 2 for bad options.\n"
          "  onnx_suite -j 2 --device /device:GPU:0 \\\n"
          "    --expected tests/data/onnx/expected_node_gpu.txt \\\n"
          "    /usr/share/libonnx-testdata/data/node\n");
}

/* --- the run's settings ---------------------------------------------------------------- */

typedef struct suite_opts {
  const char *device;
  bool soft, verbose;
  int jobs;
  double timeout_s, rtol, atol;
  const char *only[64];
  int num_only;
  const char *crash_test, *hang_test;
} suite_opts;

/* --- messages built in fixed buffers ---------------------------------------------------- */

static void msg_set(char *m, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, SUITE_MSG, fmt, ap);
  va_end(ap);
}

/* One line: newlines and tabs of a library message become spaces. */
static void one_line(char *s)
{
  for (; *s; s++)
    if (*s == '\n' || *s == '\t' || *s == '\r')
      *s = ' ';
}

static const char *graph_msg(clg_graph *g)
{
  const char *e = g ? clg_graph_error(g) : "";
  return e && e[0] ? e : clg_last_error();
}

/* --- comparing an output with ONNX's reference ------------------------------------------ */

/* IEEE half to double (clgraph's CLG_FLOAT16 holds the bit patterns). */
static double half_value(uint16_t h)
{
  const int e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0)
    v = ldexp(m, -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double float_at(const clg_tensor *t, size_t i)
{
  const void *p = clg_tensor_const_data(t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT32:
    return ((const float *)p)[i];
  case CLG_FLOAT64:
    return ((const double *)p)[i];
  case CLG_FLOAT16:
    return half_value(((const uint16_t *)p)[i]);
  default:
    return 0;
  }
}

static int64_t int_at(const clg_tensor *t, size_t i)
{
  const void *p = clg_tensor_const_data(t);
  switch (clg_tensor_dtype(t)) {
  case CLG_INT32:
    return ((const int32_t *)p)[i];
  case CLG_INT64:
    return ((const int64_t *)p)[i];
  case CLG_BOOL:
  case CLG_UINT8:
    return ((const uint8_t *)p)[i];
  case CLG_INT8:
    return ((const int8_t *)p)[i];
  case CLG_INT16:
    return ((const int16_t *)p)[i];
  case CLG_UINT16:
    return ((const uint16_t *)p)[i];
  case CLG_UINT32:
    return ((const uint32_t *)p)[i];
  case CLG_UINT64: /* the bit pattern: equal exactly when the values are */
    return (int64_t)((const uint64_t *)p)[i];
  default:
    return 0;
  }
}

static bool is_float(clg_dtype d)
{
  return d == CLG_FLOAT32 || d == CLG_FLOAT64 || d == CLG_FLOAT16;
}

/* "[1,2,3]" for flat index i of t's shape. */
static void index_text(const clg_tensor *t, size_t i, char *buf, size_t size)
{
  const int rank = clg_tensor_rank(t);
  int64_t idx[CLG_MAX_RANK];
  for (int d = rank - 1; d >= 0; d--) {
    const int64_t n = clg_tensor_dim(t, d);
    idx[d] = n > 0 ? (int64_t)(i % (size_t)n) : 0;
    i = n > 0 ? i / (size_t)n : 0;
  }
  size_t len = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < rank && len < size; d++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (len < size)
    snprintf(buf + len, size - len, "]");
}

/* 1 when got equals want by ONNX's rule, else 0 with the reason in msg. */
static int compare_output(const clg_tensor *got, const clg_tensor *want, const suite_opts *so,
                          const char *what, char *msg)
{
  char gs[128], ws[128];
  if (clg_tensor_dtype(got) != clg_tensor_dtype(want)) {
    msg_set(msg, "%s: dtype %s, want %s", what, clg_dtype_name(clg_tensor_dtype(got)),
            clg_dtype_name(clg_tensor_dtype(want)));
    return 0;
  }
  bool same_shape = clg_tensor_rank(got) == clg_tensor_rank(want);
  for (int d = 0; same_shape && d < clg_tensor_rank(got); d++)
    same_shape = clg_tensor_dim(got, d) == clg_tensor_dim(want, d);
  if (!same_shape) {
    msg_set(msg, "%s: shape %s, want %s", what, clg_tensor_shape_string(got, gs, sizeof gs),
            clg_tensor_shape_string(want, ws, sizeof ws));
    return 0;
  }
  const size_t n = clg_tensor_count(want);
  const bool fl = is_float(clg_tensor_dtype(want));
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < n; i++) {
    double excess;
    if (fl) {
      const double a = float_at(got, i), b = float_at(want, i);
      if (a == b || (isnan(a) && isnan(b)))
        continue;
      const double diff = fabs(a - b), tol = so->atol + so->rtol * fabs(b);
      if (diff <= tol)
        continue;
      excess = isnan(diff) ? INFINITY : diff - tol;
    } else {
      const int64_t a = int_at(got, i), b = int_at(want, i);
      if (a == b)
        continue;
      excess = fabs((double)a - (double)b);
    }
    if (bad++ == 0 || excess > worst_excess)
      worst = i, worst_excess = excess;
  }
  if (!bad)
    return 1;
  char at[160];
  index_text(want, worst, at, sizeof at);
  if (fl) {
    const double a = float_at(got, worst), b = float_at(want, worst);
    if (isnan(a) || isnan(b))
      msg_set(msg,
              "%s: %zu of %zu elements differ; worst at %s: got %.9g, want %.9g (NaN on one "
              "side only)",
              what, bad, n, at, a, b);
    else
      msg_set(msg,
              "%s: %zu of %zu elements differ; worst at %s: got %.9g, want %.9g (|diff| %.3g > "
              "%.3g)",
              what, bad, n, at, a, b, fabs(a - b), so->atol + so->rtol * fabs(b));
  } else {
    msg_set(msg, "%s: %zu of %zu elements differ; worst at %s: got %lld, want %lld", what, bad, n,
            at, (long long)int_at(got, worst), (long long)int_at(want, worst));
  }
  return 0;
}

/* --- one test, in the child ------------------------------------------------------------- */

enum { RES_PASS = 'P', RES_FAIL = 'F', RES_ERROR = 'E' };

/* What one test holds; freed by test_free. */
typedef struct test_run {
  char dir[4096];
  clg_tensor *in[SUITE_MAX_TENSORS], *want[SUITE_MAX_TENSORS], *got[SUITE_MAX_TENSORS];
  int num_in, num_want;
  char *in_names[SUITE_MAX_TENSORS]; /* the model's graph inputs that are not initializers */
  int num_names;
  clg_graph *g;
  clg_import_result *r;
  clg_session *s;
  int on_device, nodes; /* nodes placed on --device, nodes placed */
} test_run;

static void test_reset_graph(test_run *t)
{
  for (int i = 0; i < SUITE_MAX_TENSORS; i++) {
    clg_tensor_free(t->got[i]);
    t->got[i] = NULL;
  }
  clg_session_free(t->s);
  clg_import_result_free(t->r);
  clg_graph_free(t->g);
  t->s = NULL, t->r = NULL, t->g = NULL;
}

static void test_free(test_run *t)
{
  test_reset_graph(t);
  for (int i = 0; i < SUITE_MAX_TENSORS; i++) {
    clg_tensor_free(t->in[i]);
    clg_tensor_free(t->want[i]);
  }
  for (int i = 0; i < t->num_names; i++)
    free(t->in_names[i]);
}

static bool file_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* test_data_set_0/<stem>_0.pb, _1.pb, ... into ts; the count, or -1 after a message. */
static int load_tensors(test_run *t, const char *stem, clg_tensor **ts, char *msg)
{
  int n = 0;
  for (;; n++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", t->dir, stem, n);
    if (!file_exists(path))
      return n;
    if (n == SUITE_MAX_TENSORS) {
      msg_set(msg, "more than %d %s files", SUITE_MAX_TENSORS, stem);
      return -1;
    }
    const clg_code c = clg_import_load_tensor(path, &ts[n]);
    if (c != CLG_OK) {
      msg_set(msg, "%s_%d.pb: %s: %s", stem, n, clg_code_name(c), clg_last_error());
      return -1;
    }
  }
}

static bool is_int(clg_dtype d)
{
  return d == CLG_INT32 || d == CLG_INT64 || d == CLG_INT8 || d == CLG_INT16 || d == CLG_UINT8 ||
         d == CLG_UINT16 || d == CLG_UINT32 || d == CLG_UINT64;
}

/* Imports the model into a new graph inside the device scope: input shapes bound to the test
 * data's, and with const_bound the integer inputs bound to Consts of their values. */
/* bind: 0 every input a placeholder; BIND_INTS the integer inputs as Consts; BIND_REST every
 * input after the first (float scales and roi too: Resize's). */
enum { BIND_NONE, BIND_INTS, BIND_REST };

static clg_code import_model(test_run *t, const suite_opts *so, int bind, char *msg)
{
  char model[4200];
  snprintf(model, sizeof model, "%s/model.onnx", t->dir);
  if (!(t->g = clg_graph_new())) {
    msg_set(msg, "import: out of memory");
    return CLG_RESOURCE_EXHAUSTED;
  }
  clg_import_shape shapes[SUITE_MAX_TENSORS];
  clg_import_map map[SUITE_MAX_TENSORS];
  char const_names[SUITE_MAX_TENSORS][48];
  int num_shapes = 0, num_map = 0;
  if (clg_graph_push_device(t->g, so->device) != CLG_OK) {
    msg_set(msg, "--device %s: %s", so->device, clg_graph_error(t->g));
    return CLG_INVALID_ARGUMENT;
  }
  for (int i = 0; i < t->num_in; i++) {
    const char *name = t->in_names[i];
    if ((bind == BIND_INTS && is_int(clg_tensor_dtype(t->in[i]))) || (bind == BIND_REST && i > 0)) {
      snprintf(const_names[i], sizeof const_names[i], "onnx_suite_input_%d", i);
      map[num_map].name = name;
      map[num_map++].value = clg_out(clg_const(t->g, const_names[i], t->in[i]), 0);
      continue;
    }
    shapes[num_shapes].name = name;
    shapes[num_shapes].rank = clg_tensor_rank(t->in[i]);
    for (int d = 0; d < clg_tensor_rank(t->in[i]); d++)
      shapes[num_shapes].dims[d] = clg_tensor_dim(t->in[i], d);
    num_shapes++;
  }
  if (clg_graph_status(t->g) != CLG_OK) {
    msg_set(msg, "binding the inputs as constants: %s", clg_graph_error(t->g));
    return clg_graph_status(t->g);
  }
  clg_import_options o;
  clg_import_options_init(&o);
  o.format = CLG_IMPORT_ONNX;
  o.input_shapes = shapes;
  o.num_input_shapes = num_shapes;
  o.input_map = num_map ? map : NULL;
  o.num_input_map = num_map;
  const clg_code c = clg_graph_import(t->g, model, &o, &t->r);
  if (c != CLG_OK) {
    msg_set(msg, "import: %s: %s", clg_code_name(c), graph_msg(t->g));
    return c;
  }
  clg_graph_pop_device(t->g);
  return CLG_OK;
}

/* The test data's input for the imported input k (matched by the model's name). */
static int input_index(const test_run *t, int k)
{
  const char *name = clg_import_input(t->r, k)->name;
  for (int i = 0; i < t->num_in; i++)
    if (strcmp(t->in_names[i], name) == 0)
      return i;
  return -1;
}

/* The session and the run; the outputs into t->got. */
static bool run_model(test_run *t, const suite_opts *so, char *msg)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = so->soft;
  /* Not the whole device reserved and touched in every child: tests are small. */
  opt.gpu_options.allow_growth = 1;
  clg_code c = clg_session_new(t->g, &opt, &t->s);
  if (c != CLG_OK) {
    msg_set(msg, "session: %s: %s", clg_code_name(c), clg_last_error());
    return false;
  }
  const clg_device_info *dev = clg_devices_find(clg_session_devices(t->s), so->device);
  if (!dev) {
    msg_set(msg, "session: no device %s here", so->device);
    return false;
  }
  for (int i = 0; i < clg_graph_num_nodes(t->g); i++) {
    const char *d = clg_session_node_device(t->s, clg_graph_node(t->g, i));
    t->nodes += d != NULL;
    t->on_device += d && strcmp(d, dev->full_name) == 0;
  }
  const int num_in = clg_import_num_inputs(t->r), num_out = clg_import_num_outputs(t->r);
  if (num_in > t->num_in || num_out > t->num_want) {
    msg_set(msg, "the import has %d inputs and %d outputs, the test data %d and %d", num_in,
            num_out, t->num_in, t->num_want);
    return false;
  }
  clg_output feeds_at[SUITE_MAX_TENSORS], fetches[SUITE_MAX_TENSORS];
  clg_tensor *feeds[SUITE_MAX_TENSORS];
  for (int k = 0; k < num_in; k++) {
    const int i = input_index(t, k);
    if (i < 0) {
      msg_set(msg, "the imported input %s is none of the model's declared inputs",
              clg_import_input(t->r, k)->name);
      return false;
    }
    feeds_at[k] = clg_import_input(t->r, k)->value;
    feeds[k] = t->in[i];
  }
  for (int k = 0; k < num_out; k++)
    fetches[k] = clg_import_output(t->r, k)->value;
  c = clg_session_run_outputs(t->s, num_in, feeds_at, feeds, num_out, fetches, t->got, 0, NULL);
  if (c != CLG_OK) {
    msg_set(msg, "run: %s: %s", clg_code_name(c), clg_last_error());
    return false;
  }
  return true;
}

/* --- the model's inputs, read here (not by the importer under test) ---------------------
 * ModelProto.graph = 7; GraphProto.initializer = 5 (TensorProto.name = 8), input = 11
 * (ValueInfoProto.name = 1). A model of IR version 3 lists its initializers among its inputs
 * too; the test data holds only the others, in the order of graph.input. */

typedef struct pb_span {
  const uint8_t *p, *end;
} pb_span;

static bool pb_varint(pb_span *s, uint64_t *v)
{
  *v = 0;
  for (int shift = 0; shift < 64 && s->p < s->end; shift += 7) {
    const uint8_t b = *s->p++;
    *v |= (uint64_t)(b & 127) << shift;
    if (b < 128)
      return true;
  }
  return false;
}

/* The next field: its number, and for a length-delimited one its bytes in *sub; false at the
 * end, *bad on a malformed one. */
static bool pb_next(pb_span *s, int *field, pb_span *sub, bool *bad)
{
  uint64_t key, v;
  *bad = false;
  if (s->p >= s->end)
    return false;
  if (!pb_varint(s, &key))
    return *bad = true, false;
  *field = (int)(key >> 3);
  sub->p = sub->end = NULL;
  switch (key & 7) {
  case 0:
    *bad = !pb_varint(s, &v);
    break;
  case 1:
  case 5: {
    const size_t n = (key & 7) == 1 ? 8 : 4;
    *bad = (size_t)(s->end - s->p) < n;
    s->p += *bad ? 0 : n;
    break;
  }
  case 2:
    if (!pb_varint(s, &v) || v > (uint64_t)(s->end - s->p)) {
      *bad = true;
      break;
    }
    sub->p = s->p, sub->end = s->p + v;
    s->p += v;
    break;
  default:
    *bad = true;
  }
  return !*bad;
}

/* The string field `want` of the message m (NULL when absent); malloc'd. */
static char *pb_string(pb_span m, int want)
{
  int field;
  pb_span sub;
  bool bad;
  char *out = NULL;
  while (pb_next(&m, &field, &sub, &bad))
    if (field == want && sub.p) {
      free(out);
      out = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
    }
  return out;
}

/* The names of graph.input that no initializer has, into t; false after a message. */
static bool read_input_names(test_run *t, const char *model, char *msg)
{
  FILE *f = fopen(model, "rb");
  if (!f) {
    msg_set(msg, "model.onnx: %s", strerror(errno));
    return false;
  }
  uint8_t *bytes = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      uint8_t *grown = realloc(bytes, cap = cap ? 2 * cap : 1 << 16);
      if (!grown)
        break;
      bytes = grown;
    }
    const size_t r = fread(bytes + len, 1, cap - len, f);
    if (!r)
      break;
    len += r;
  }
  fclose(f);
  pb_span m = {bytes, bytes + len}, g = {NULL, NULL}, sub;
  int field, num_inits = 0, num_inputs = 0;
  bool bad = !bytes;
  while (pb_next(&m, &field, &sub, &bad))
    if (field == 7 && sub.p)
      g = sub;
  char *inputs[256], *inits[4096];
  for (pb_span it = g; !bad && g.p && pb_next(&it, &field, &sub, &bad);) {
    if (field == 11 && sub.p && num_inputs < 256)
      inputs[num_inputs++] = pb_string(sub, 1);
    else if (field == 5 && sub.p && num_inits < 4096)
      inits[num_inits++] = pb_string(sub, 8);
  }
  free(bytes);
  bool ok = !bad && g.p;
  if (!ok)
    msg_set(msg, "model.onnx: not a readable ModelProto with a graph (this driver's own reader)");
  for (int i = 0; i < num_inputs; i++) {
    bool init = false;
    for (int k = 0; k < num_inits && inputs[i] && !init; k++)
      init = inits[k] && strcmp(inits[k], inputs[i]) == 0;
    if (ok && !init && inputs[i] && t->num_names < SUITE_MAX_TENSORS)
      t->in_names[t->num_names++] = inputs[i], inputs[i] = NULL;
    free(inputs[i]);
  }
  for (int k = 0; k < num_inits; k++)
    free(inits[k]);
  return ok;
}

/* Reads the test data and the model's inputs. */
static bool read_test(test_run *t, char *msg)
{
  if ((t->num_in = load_tensors(t, "input", t->in, msg)) < 0 ||
      (t->num_want = load_tensors(t, "output", t->want, msg)) < 0)
    return false;
  char model[4200];
  snprintf(model, sizeof model, "%s/model.onnx", t->dir);
  if (!read_input_names(t, model, msg))
    return false;
  if (t->num_names != t->num_in) {
    msg_set(msg,
            "the model declares %d inputs (not initializers), test_data_set_0 has %d "
            "input_N.pb",
            t->num_names, t->num_in);
    return false;
  }
  return true;
}

/* Runs one test; the result letter, *const_bound, and the message. */
static int run_test(test_run *t, const suite_opts *so, bool *const_bound, char *msg)
{
  *const_bound = false;
  if (!read_test(t, msg))
    return RES_ERROR;
  if (import_model(t, so, BIND_NONE, msg) != CLG_OK) {
    bool ints = false;
    for (int i = 0; i < t->num_in; i++)
      ints = ints || is_int(clg_tensor_dtype(t->in[i]));
    if (!ints && t->num_in < 2)
      return RES_ERROR;
    /* The first failure is the one reported should the retries fail too. */
    char retry_msg[SUITE_MSG];
    test_reset_graph(t);
    bool bound = ints && import_model(t, so, BIND_INTS, retry_msg) == CLG_OK;
    if (!bound && t->num_in > 1) {
      test_reset_graph(t);
      bound = import_model(t, so, BIND_REST, retry_msg) == CLG_OK;
    }
    if (!bound)
      return RES_ERROR;
    *const_bound = true;
    msg[0] = '\0';
  }
  if (clg_import_num_outputs(t->r) != t->num_want) {
    msg_set(msg, "the model has %d outputs, test_data_set_0 has %d output_N.pb",
            clg_import_num_outputs(t->r), t->num_want);
    return RES_ERROR;
  }
  if (!run_model(t, so, msg))
    return RES_ERROR;
  for (int k = 0; k < t->num_want; k++) {
    char what[600];
    snprintf(what, sizeof what, "output %d (%s)", k, clg_import_output(t->r, k)->name);
    if (!compare_output(t->got[k], t->want[k], so, what, msg))
      return RES_FAIL;
  }
  return RES_PASS;
}

/* The child: runs the test and writes "R\tC\tON\tNODES\tmessage\n" to fd. */
static void child_main(const char *folder, const char *name, const suite_opts *so, int fd)
{
  if (so->crash_test && strcmp(so->crash_test, name) == 0) {
    signal(SIGSEGV, SIG_DFL); /* past a sanitizer's handler: a crash as a plain build has it */
    raise(SIGSEGV);
  }
  if (so->hang_test && strcmp(so->hang_test, name) == 0)
    for (;;)
      pause();
  static test_run t;
  memset(&t, 0, sizeof t);
  snprintf(t.dir, sizeof t.dir, "%s/%s", folder, name);
  char msg[SUITE_MSG] = "";
  bool const_bound = false;
  const int res = run_test(&t, so, &const_bound, msg);
  one_line(msg);
  char line[SUITE_MSG + 64];
  const int len = snprintf(line, sizeof line, "%c\t%d\t%d\t%d\t%s\n", res, const_bound ? 1 : 0,
                           t.on_device, t.nodes, msg);
  test_free(&t);
  const char *p = line;
  size_t left = (size_t)len < sizeof line ? (size_t)len : sizeof line - 1;
  while (left > 0) {
    const ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    p += w, left -= (size_t)w;
  }
  close(fd);
}

/* --- the parent: children, timeouts, the tally ------------------------------------------ */

typedef struct test_slot {
  pid_t pid;
  int out_fd, err_fd; /* the result pipe and the child's stderr */
  bool out_eof, err_eof;
  int test;
  double start, deadline;
  char out[SUITE_MSG + 64];
  size_t out_len;
  char err[SUITE_ERR_TAIL];
  size_t err_len;
} test_slot;

typedef struct test_result {
  int res;          /* RES_* */
  bool crashed;     /* killed by a signal, or a nonzero exit (a sanitizer's report) */
  bool lsan_tracer; /* LeakSanitizer's tracer itself crashed at exit: no report */
  bool retried;
  bool const_bound;
  int on_device, nodes;
  double seconds;
  char *msg;
} test_result;

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The test folders of folder (those with a model.onnx), sorted; NULL after a message. */
static char **list_tests(const char *folder, int *count)
{
  DIR *d = opendir(folder);
  if (!d) {
    fprintf(stderr,
            "onnx_suite: cannot read %s: %s (ONNX's tests come with Debian's libonnx-testdata: "
            "ci/install-deps.sh installs it)\n",
            folder, strerror(errno));
    return NULL;
  }
  char **names = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/model.onnx", folder, e->d_name);
    if (!file_exists(path))
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      char **grown = realloc(names, (size_t)cap * sizeof *names);
      if (!grown)
        break;
      names = grown;
    }
    if (!(names[n] = strdup(e->d_name)))
      break;
    n++;
  }
  closedir(d);
  if (n)
    qsort(names, (size_t)n, sizeof *names, cmp_str);
  *count = n;
  return names ? names : calloc(1, sizeof *names);
}

static void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* Forks the child of test i into slot; false after a message. */
static bool start_test(test_slot *slot, const char *folder, char **names, int i,
                       const suite_opts *so)
{
  int out[2], err[2];
  if (pipe(out) != 0)
    return perror("onnx_suite: pipe"), false;
  if (pipe(err) != 0) {
    close(out[0]), close(out[1]);
    return perror("onnx_suite: pipe"), false;
  }
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    perror("onnx_suite: fork");
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    return false;
  }
  if (pid == 0) {
    close(out[0]), close(err[0]);
    dup2(err[1], STDERR_FILENO);
    close(err[1]);
    child_main(folder, names[i], so, out[1]);
    exit(0); /* exit, not _exit: LeakSanitizer checks the child too */
  }
  close(out[1]), close(err[1]);
  set_nonblock(out[0]);
  set_nonblock(err[0]);
  memset(slot, 0, sizeof *slot);
  slot->pid = pid, slot->out_fd = out[0], slot->err_fd = err[0], slot->test = i;
  slot->start = now_s();
  slot->deadline = slot->start + so->timeout_s;
  return true;
}

/* Reads what is there; false at the end of the stream. */
static bool drain(int fd, char *buf, size_t size, size_t *len, bool keep_tail)
{
  char tmp[4096];
  for (;;) {
    const ssize_t r = read(fd, tmp, sizeof tmp);
    if (r == 0)
      return false;
    if (r < 0)
      return errno == EAGAIN || errno == EINTR;
    for (ssize_t k = 0; k < r; k++) {
      if (*len + 1 >= size) {
        if (!keep_tail)
          continue;
        memmove(buf, buf + size / 2, *len - size / 2);
        *len -= size / 2;
      }
      buf[(*len)++] = tmp[k];
    }
    buf[*len] = '\0';
  }
}

static char *dup_printf(const char *fmt, ...)
{
  char buf[SUITE_MSG + SUITE_ERR_TAIL + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return strdup(buf);
}

/* The last line of the child's stderr worth quoting (a sanitizer's summary, a crash). */
static void err_tail(const test_slot *slot, char *buf, size_t size)
{
  static const char *const telling[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                        "runtime error:", "has encountered a fatal error"};
  char copy[SUITE_ERR_TAIL];
  snprintf(copy, sizeof copy, "%s", slot->err);
  size_t n = strlen(copy);
  while (n && isspace((unsigned char)copy[n - 1]))
    copy[--n] = '\0';
  const char *line = strrchr(copy, '\n');
  line = line ? line + 1 : copy;
  for (size_t k = 0; k < sizeof telling / sizeof *telling; k++) {
    const char *at = strstr(copy, telling[k]);
    if (at) {
      while (at > copy && at[-1] != '\n')
        at--;
      line = at;
      break;
    }
  }
  snprintf(buf, size, "%s", line);
  char *nl = strchr(buf, '\n');
  if (nl)
    *nl = '\0';
  one_line(buf);
}

/* The child's end: its result line and exit status into res. */
static void finish_test(test_slot *slot, bool timed_out, const suite_opts *so, test_result *res)
{
  int status = 0;
  if (timed_out)
    kill(slot->pid, SIGKILL);
  while (waitpid(slot->pid, &status, 0) < 0 && errno == EINTR)
    ;
  drain(slot->out_fd, slot->out, sizeof slot->out, &slot->out_len, false);
  drain(slot->err_fd, slot->err, sizeof slot->err, &slot->err_len, true);
  close(slot->out_fd), close(slot->err_fd);
  char tail[600];
  err_tail(slot, tail, sizeof tail);
  char r = 0;
  int cb = 0, on = 0, nodes = 0, used = 0;
  const bool have = !timed_out &&
                    sscanf(slot->out, "%c\t%d\t%d\t%d\t%n", &r, &cb, &on, &nodes, &used) == 4 &&
                    used > 0;
  memset(res, 0, sizeof *res);
  res->res = RES_ERROR;
  if (timed_out) {
    res->msg = dup_printf("timed out after %g s (killed)", so->timeout_s);
  } else if (WIFSIGNALED(status)) {
    res->msg = dup_printf("crashed: signal %d (%s)%s%s", WTERMSIG(status),
                          strsignal(WTERMSIG(status)), tail[0] ? "; stderr: " : "", tail);
  } else if (!have) {
    res->msg = dup_printf("the child exited with status %d and no result%s%s", WEXITSTATUS(status),
                          tail[0] ? "; stderr: " : "", tail);
  } else {
    char *nl = strchr(slot->out + used, '\n');
    if (nl)
      *nl = '\0';
    res->res = r;
    res->const_bound = cb != 0;
    res->on_device = on, res->nodes = nodes;
    if (WEXITSTATUS(status) != 0) {
      /* A sanitizer's report after the result (a leak): the test does not pass. */
      res->res = RES_ERROR;
      res->msg = dup_printf("%s%sthe child exited with status %d after its result%s%s",
                            slot->out + used, slot->out[used] ? "; " : "", WEXITSTATUS(status),
                            tail[0] ? "; stderr: " : "", tail);
    } else {
      res->msg = strdup(slot->out + used);
    }
  }
  res->crashed = !timed_out && (WIFSIGNALED(status) || WEXITSTATUS(status) != 0);
  res->lsan_tracer = res->crashed && strstr(slot->err, "LeakSanitizer has encountered a fatal") &&
                     !strstr(slot->err, "ERROR: AddressSanitizer") &&
                     !strstr(slot->err, "ERROR: LeakSanitizer: detected") &&
                     !strstr(slot->err, "runtime error:");
  /* A dead child's stderr in full: a sanitizer's report must reach the log. */
  if (slot->err_len && (res->crashed || (so->verbose && res->res != RES_PASS)))
    fprintf(stdout, "--- stderr of the child of test %d ---\n%s\n---\n", slot->test, slot->err);
}

/* Runs every test of names with up to so->jobs children; the results into res. */
/* The parent's lists, reachable from here: a child exits (LeakSanitizer then checks it) with
 * them still allocated, and they are not the child's leaks. Volatile: never read, the stores
 * would be optimised away. */
static volatile struct {
  char **names;
  test_result *res;
  test_slot *slots;
  bool *busy;
  int *queue;
} suite_parent;

/* Whether to run the test once more: the machine's state, not the test, made it fail
 * (LeakSanitizer's tracer crashing at exit, as ci/sanitize.sh knows it; a session that found
 * no host memory to spare while other processes held it). */
static bool worth_retry(const test_result *r)
{
  return !r->retried && (r->lsan_tracer || (r->res == RES_ERROR && r->msg &&
                                            strstr(r->msg, ": RESOURCE_EXHAUSTED: ")));
}

static void run_all(const char *folder, char **names, int n, const suite_opts *so, test_result *res)
{
  test_slot *slots = calloc((size_t)so->jobs, sizeof *slots);
  bool *busy = calloc((size_t)so->jobs, sizeof *busy);
  int *queue = malloc(((size_t)n + 1) * 2 * sizeof *queue); /* each test, then the retries */
  suite_parent.slots = slots, suite_parent.busy = busy, suite_parent.queue = queue;
  if (!slots || !busy || !queue) {
    fprintf(stderr, "onnx_suite: out of memory\n");
    exit(1);
  }
  int next = 0, queued = n, running = 0, done = 0;
  for (int i = 0; i < n; i++)
    queue[i] = i;
  while (next < queued || running > 0) {
    for (int s = 0; s < so->jobs && next < queued; s++) {
      if (busy[s])
        continue;
      const int i = queue[next++];
      if (!start_test(&slots[s], folder, names, i, so)) {
        res[i].res = RES_ERROR;
        res[i].msg = strdup("could not start the child");
        done++;
        continue;
      }
      busy[s] = true, running++;
    }
    struct pollfd fds[2 * 64];
    int nf = 0;
    double wait_s = so->timeout_s;
    for (int s = 0; s < so->jobs; s++)
      if (busy[s]) {
        /* A stream at its end is not polled again (poll would return at once). */
        if (!slots[s].out_eof)
          fds[nf++] = (struct pollfd){slots[s].out_fd, POLLIN, 0};
        if (!slots[s].err_eof)
          fds[nf++] = (struct pollfd){slots[s].err_fd, POLLIN, 0};
        const double left = slots[s].deadline - now_s();
        wait_s = left < wait_s ? left : wait_s;
      }
    /* Both streams at their end and the child not yet reaped: wait a little for it. */
    poll(fds, (nfds_t)nf, nf ? (wait_s > 0 ? (int)(wait_s * 1000) + 1 : 0) : 10);
    for (int s = 0; s < so->jobs; s++) {
      if (!busy[s])
        continue;
      test_slot *sl = &slots[s];
      if (!sl->out_eof)
        sl->out_eof = !drain(sl->out_fd, sl->out, sizeof sl->out, &sl->out_len, false);
      if (!sl->err_eof)
        sl->err_eof = !drain(sl->err_fd, sl->err, sizeof sl->err, &sl->err_len, true);
      const bool timed_out = now_s() > sl->deadline;
      const bool open = !sl->out_eof || !sl->err_eof;
      if (open && !timed_out)
        continue;
      test_result *r = &res[sl->test];
      const bool retried = r->retried;
      free(r->msg);
      finish_test(sl, timed_out && open, so, r);
      r->retried = retried;
      busy[s] = false, running--;
      if (worth_retry(r)) {
        printf("[%d/%d] RETRY %s: %s\n", done, n, names[sl->test], r->msg);
        r->retried = true;
        queue[queued++] = sl->test;
        continue;
      }
      done++;
      r->seconds = now_s() - sl->start;
      char placed[300] = "";
      if (r->res == RES_PASS && r->on_device < r->nodes)
        snprintf(placed, sizeof placed, " (%d of %d nodes on %s)", r->on_device, r->nodes,
                 so->device);
      printf("[%d/%d] %s %s%s%s%s%s%s\n", done, n,
             r->res == RES_PASS   ? "PASS"
             : r->res == RES_FAIL ? "FAILED"
                                  : "ERROR",
             names[sl->test], r->const_bound ? " (const-bound)" : "",
             r->retried ? " (run twice)" : "", placed, r->msg[0] ? ": " : "", r->msg);
      fflush(stdout);
    }
  }
  free(slots);
  free(busy);
  free(queue);
}

/* --- expected lists ---------------------------------------------------------------------- */

/* The names in file, one a line (empty lines ignored); NULL after a message. */
static char **read_list(const char *file, int *count)
{
  FILE *f = fopen(file, "r");
  if (!f) {
    fprintf(stderr, "onnx_suite: --expected %s: %s\n", file, strerror(errno));
    return NULL;
  }
  char **names = calloc(1, sizeof *names);
  int n = 0;
  char line[1024];
  while (names && fgets(line, sizeof line, f)) {
    size_t len = strlen(line);
    while (len && isspace((unsigned char)line[len - 1]))
      line[--len] = '\0';
    if (!len)
      continue;
    char **grown = realloc(names, (size_t)(n + 2) * sizeof *names);
    if (!grown || !(grown[n] = strdup(line))) {
      names = grown;
      break;
    }
    names = grown, n++;
  }
  fclose(f);
  *count = n;
  return names;
}

static void free_list(char **names, int n)
{
  for (int i = 0; names && i < n; i++)
    free(names[i]);
  free(names);
}

static bool write_list(const char *file, char **names, const test_result *res, int n)
{
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", file, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "onnx_suite: --write-expected %s: %s\n", file, strerror(errno));
    return false;
  }
  for (int i = 0; i < n; i++)
    if (res[i].res == RES_PASS)
      fprintf(f, "%s\n", names[i]);
  if (fclose(f) != 0 || rename(tmp, file) != 0) {
    fprintf(stderr, "onnx_suite: --write-expected %s: %s\n", file, strerror(errno));
    remove(tmp);
    return false;
  }
  return true;
}

static int find_name(char **names, int n, const char *name)
{
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* Checks the results against the expected list; the number of expected tests that did not
 * pass. */
static int check_expected(const char *file, char **names, const test_result *res, int n,
                          bool subset)
{
  int num_exp = 0, lost = 0;
  char **exp = read_list(file, &num_exp);
  if (!exp)
    return 1;
  for (int k = 0; k < num_exp; k++) {
    if (k > 0 && strcmp(exp[k - 1], exp[k]) >= 0)
      fprintf(stderr, "onnx_suite: %s: '%s' after '%s': keep the list sorted and unique\n", file,
              exp[k], exp[k - 1]);
    const int i = find_name(names, n, exp[k]);
    if (i < 0) {
      if (!subset) {
        printf("EXPECTED PASS LOST %s: no such test in the folder\n", exp[k]);
        lost++;
      }
    } else if (res[i].res != RES_PASS) {
      printf("EXPECTED PASS LOST %s: %s %s\n", exp[k], res[i].res == RES_FAIL ? "FAILED" : "ERROR",
             res[i].msg);
      lost++;
    }
  }
  for (int i = 0; i < n; i++)
    if (res[i].res == RES_PASS && find_name(exp, num_exp, names[i]) < 0)
      printf("NEW PASS %s\n", names[i]);
  free_list(exp, num_exp);
  return lost;
}

/* --- the command line -------------------------------------------------------------------- */

static bool parse_num(const char *opt, const char *text, double lo, double *out)
{
  char *end = NULL;
  errno = 0;
  const double v = text ? strtod(text, &end) : NAN;
  if (!text || end == text || *end || errno || !(v >= lo) || !isfinite(v)) {
    fprintf(stderr, "onnx_suite: %s needs a number >= %g, got '%s'\n", opt, lo,
            text ? text : "(nothing)");
    return false;
  }
  *out = v;
  return true;
}

typedef struct suite_args {
  suite_opts so;
  const char *folders[SUITE_MAX_FOLDERS], *expected[SUITE_MAX_FOLDERS],
      *write_expected[SUITE_MAX_FOLDERS];
  int num_folders, num_expected, num_write;
} suite_args;

/* 0, or the exit status (2 after a message, 0 after --help). */
static int parse_args(int argc, char **argv, suite_args *a)
{
  memset(a, 0, sizeof *a);
  a->so = (suite_opts){.device = "/device:CPU:0",
                       .soft = true,
                       .jobs = 1,
                       .timeout_s = 60,
                       .rtol = 1e-3,
                       .atol = 1e-7};
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    double x = 0;
    const bool takes = !strcmp(o, "--device") || !strcmp(o, "-j") || !strcmp(o, "--timeout") ||
                       !strcmp(o, "--rtol") || !strcmp(o, "--atol") || !strcmp(o, "--expected") ||
                       !strcmp(o, "--write-expected") || !strcmp(o, "--only") ||
                       !strcmp(o, "--crash-test") || !strcmp(o, "--hang-test");
    if (takes && !v) {
      fprintf(stderr, "onnx_suite: %s needs a value\n", o);
      return 2;
    }
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(o, "--device")) {
      a->so.device = v;
    } else if (!strcmp(o, "--no-soft-placement")) {
      a->so.soft = false;
      continue;
    } else if (!strcmp(o, "-v")) {
      a->so.verbose = true;
      continue;
    } else if (!strcmp(o, "-j")) {
      if (!parse_num(o, v, 1, &x) || x > 64 || x != floor(x))
        return fprintf(stderr, "onnx_suite: -j takes 1 to 64\n"), 2;
      a->so.jobs = (int)x;
    } else if (!strcmp(o, "--timeout")) {
      if (!parse_num(o, v, 0.001, &a->so.timeout_s) || a->so.timeout_s > 86400)
        return 2;
    } else if (!strcmp(o, "--rtol")) {
      if (!parse_num(o, v, 0, &a->so.rtol))
        return 2;
    } else if (!strcmp(o, "--atol")) {
      if (!parse_num(o, v, 0, &a->so.atol))
        return 2;
    } else if (!strcmp(o, "--expected") || !strcmp(o, "--write-expected")) {
      const bool w = o[2] == 'w';
      int *num = w ? &a->num_write : &a->num_expected;
      if (*num == SUITE_MAX_FOLDERS)
        return fprintf(stderr, "onnx_suite: at most %d %s\n", SUITE_MAX_FOLDERS, o), 2;
      (w ? a->write_expected : a->expected)[(*num)++] = v;
    } else if (!strcmp(o, "--only")) {
      if (a->so.num_only == 64)
        return fprintf(stderr, "onnx_suite: at most 64 --only\n"), 2;
      a->so.only[a->so.num_only++] = v;
    } else if (!strcmp(o, "--crash-test")) {
      a->so.crash_test = v;
    } else if (!strcmp(o, "--hang-test")) {
      a->so.hang_test = v;
    } else if (o[0] == '-') {
      fprintf(stderr, "onnx_suite: unknown option %s (--help lists them)\n", o);
      return 2;
    } else {
      if (a->num_folders == SUITE_MAX_FOLDERS)
        return fprintf(stderr, "onnx_suite: at most %d folders\n", SUITE_MAX_FOLDERS), 2;
      a->folders[a->num_folders++] = o;
      continue;
    }
    i++;
  }
  if (!a->num_folders) {
    usage(stderr);
    return 2;
  }
  if (a->num_expected > a->num_folders || a->num_write > a->num_folders) {
    fprintf(stderr, "onnx_suite: %d folders but %d --expected and %d --write-expected\n",
            a->num_folders, a->num_expected, a->num_write);
    return 2;
  }
  return 0;
}

/* Keeps the --only tests of names; the new count. */
static int select_only(char **names, int n, const suite_opts *so)
{
  if (!so->num_only)
    return n;
  int kept = 0;
  for (int i = 0; i < n; i++) {
    bool want = false;
    for (int k = 0; k < so->num_only; k++)
      want = want || strcmp(names[i], so->only[k]) == 0;
    if (want)
      names[kept++] = names[i];
    else
      free(names[i]);
  }
  return kept;
}

/* Runs one folder; adds to *bad the expected tests lost (or 1 when it cannot be read). */
static void run_folder(const suite_args *a, int k, int *bad)
{
  const char *folder = a->folders[k];
  int n = 0;
  char **names = list_tests(folder, &n);
  if (!names) {
    (*bad)++;
    return;
  }
  const int total = n;
  n = select_only(names, n, &a->so);
  test_result *res = calloc((size_t)n + 1, sizeof *res);
  suite_parent.names = names, suite_parent.res = res;
  if (!res) {
    fprintf(stderr, "onnx_suite: out of memory\n");
    exit(1);
  }
  const double t0 = now_s();
  if (!n) {
    fprintf(stderr, "onnx_suite: %s holds no test (no subfolder with a model.onnx)\n", folder);
    (*bad)++;
  }
  run_all(folder, names, n, &a->so, res);
  int pass = 0, fail = 0, err = 0, cb = 0, slowest = 0;
  long on = 0, nodes = 0;
  for (int i = 0; i < n; i++) {
    slowest = res[i].seconds > res[slowest].seconds ? i : slowest;
    pass += res[i].res == RES_PASS, fail += res[i].res == RES_FAIL;
    err += res[i].res == RES_ERROR, cb += res[i].res == RES_PASS && res[i].const_bound;
    on += res[i].res == RES_PASS ? res[i].on_device : 0;
    nodes += res[i].res == RES_PASS ? res[i].nodes : 0;
  }
  for (int i = 0; i < n; i++)
    if (res[i].crashed) {
      printf("CRASH %s: %s\n", names[i], res[i].msg);
      (*bad)++;
    }
  if (k < a->num_expected)
    *bad += check_expected(a->expected[k], names, res, n, n != total);
  if (k < a->num_write && !write_list(a->write_expected[k], names, res, n))
    (*bad)++;
  const char *base = strrchr(folder, '/');
  base = base && base[1] ? base + 1 : folder;
  printf("onnx_suite: %s on %s: %d passed, %d failed, %d errors, %d total (%d passed "
         "const-bound; %ld of %ld nodes of the passes on %s) in %.1f s\n",
         base, a->so.device, pass, fail, err, n, cb, on, nodes, a->so.device, now_s() - t0);
  if (n)
    printf("onnx_suite: the slowest test of %s: %s, %.1f s\n", base, names[slowest],
           res[slowest].seconds);
  for (int i = 0; i < n; i++)
    free(res[i].msg);
  free(res);
  free_list(names, n);
}

int main(int argc, char **argv)
{
  suite_args a;
  const int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc < 0 ? 0 : rc;
  signal(SIGPIPE, SIG_IGN);
  int bad = 0;
  for (int k = 0; k < a.num_folders; k++)
    run_folder(&a, k, &bad);
  if (bad)
    printf("onnx_suite: %d expected test%s did not pass, crashed, or a folder could not be "
           "read\n",
           bad, bad == 1 ? "" : "s");
  return bad ? 1 : 0;
}
