/* Bad input that no other test covers (tests/BAD_INPUT.md lists them all): session options,
 * the session's queries and statistics, tensors, status and log names, device lookups, and a
 * bad CLGRAPH_LOG_LEVEL. Each gets its documented error, never a crash. */
// ctest: default
// ctest: bad_log_level CLGRAPH_LOG_LEVEL=loud
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "testutil.h"

static const int64_t d23[2] = {2, 3};
static const float v6[6] = {1, 2, 3, 4, 5, 6};

/* A bad CLGRAPH_LOG_LEVEL: a message on stderr naming the value, and the default level. Runs
 * before anything else reads the variable. */
static void log_level_env(void)
{
  const char *v = getenv("CLGRAPH_LOG_LEVEL");
  if (!v || strcmp(v, "loud") != 0)
    return;
  fflush(stderr);
  int saved = dup(2);
  FILE *tmp = tmpfile();
  CHECK(tmp != NULL && saved >= 0);
  if (!tmp || saved < 0)
    return;
  dup2(fileno(tmp), 2);
  clg_log_level level = clg_log_get_level();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char text[512] = "";
  rewind(tmp);
  size_t n = fread(text, 1, sizeof text - 1, tmp);
  text[n] = '\0';
  fclose(tmp);
  CHECK_CONTAINS(text, "CLGRAPH_LOG_LEVEL=\"loud\" is not one of");
  CHECK(level == CLG_LOG_INFO);
  clg_log_set_level(CLG_LOG_WARNING);
}

static void session_options(clg_graph *g)
{
  static const double bad_fractions[] = {-0.5, 1.5, NAN, INFINITY, -INFINITY};
  clg_session *s = (clg_session *)&s;
  clg_session_options opt;
  for (size_t i = 0; i < sizeof bad_fractions / sizeof bad_fractions[0]; i++) {
    clg_session_options_init(&opt);
    opt.gpu_options.per_process_gpu_memory_fraction = bad_fractions[i];
    CHECK_CODE(clg_session_new(g, &opt, &s), CLG_INVALID_ARGUMENT);
    CHECK_CONTAINS(clg_last_error(), "per_process_gpu_memory_fraction must be in [0, 1]");
    CHECK(s == NULL);
  }
  /* Just above 1: the message shows the digits that make it so, not "got 1". */
  clg_session_options_init(&opt);
  opt.gpu_options.per_process_gpu_memory_fraction = nextafter(1.0, 2.0);
  CHECK_CODE(clg_session_new(g, &opt, &s), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "got 1.0000000000000002");
  opt.gpu_options.per_process_gpu_memory_fraction = -0.25;
  CHECK_CODE(clg_session_new(g, &opt, &s), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "got -0.25");
  clg_virtual_devices vd = {1, {64}};
  clg_session_options_init(&opt);
  opt.gpu_options.per_process_gpu_memory_fraction = 0.5;
  opt.num_virtual = 1;
  opt.virtual_devices = &vd;
  CHECK_CODE(clg_session_new(g, &opt, &s), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "per_process_gpu_memory_fraction when virtual_devices is set");
  clg_session_options_init(&opt);
  opt.num_virtual = -1;
  CHECK_CODE(clg_session_new(g, &opt, &s), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "num_virtual is -1");
  opt.num_virtual = 2; /* virtual_devices NULL */
  CHECK_CODE(clg_session_new(g, &opt, &s), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "num_virtual is 2 but virtual_devices is NULL");
  clg_session_options_init(NULL); /* no crash */
}

static void session_queries(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_const_f32(g, "a", 2, d23, v6);
  clg_graph *other = clg_graph_new();
  clg_node *far = clg_const_f32(other, "far", 2, d23, v6);
  session_options(g);

  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, NULL, &s));
  if (!s) {
    clg_graph_free(other);
    clg_graph_free(g);
    return;
  }
  clg_memory_stats st;
  CHECK_CODE(clg_session_memory_stats(s, "/device:GPU:9", &st), CLG_NOT_FOUND);
  CHECK_CONTAINS(clg_last_error(), "'/device:GPU:9'");
  CHECK_CODE(clg_session_memory_stats(s, "garbage//", &st), CLG_NOT_FOUND);
  CHECK_CODE(clg_session_memory_stats(s, NULL, &st), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_memory_stats(s, "/device:GPU:0", NULL), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_memory_stats(NULL, "/device:GPU:0", &st), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_reset_memory_stats(s, "/device:TPU:0"), CLG_NOT_FOUND);
  CHECK_CODE(clg_session_reset_memory_stats(NULL, "/cpu:0"), CLG_INVALID_ARGUMENT);
  CHECK(clg_session_memory_dump(s, "/device:GPU:42", 0) == NULL);
  CHECK(clg_last_code() == CLG_NOT_FOUND);
  CHECK(clg_session_memory_dump(NULL, "/cpu:0", 1) == NULL);
  CHECK(clg_session_memory_dump(s, NULL, 1) == NULL);

  CHECK(clg_session_node_device(s, NULL) == NULL);
  CHECK(clg_session_node_device(s, far) == NULL); /* a node of another graph */
  CHECK(clg_session_node_device(NULL, a) == NULL);
  CHECK(clg_session_node_reason(s, far) == NULL);
  clg_node *late = clg_identity(g, "late", a); /* not placed until the next run */
  CHECK(clg_session_node_device(s, late) == NULL);
  CHECK(clg_session_node_reason(s, late) == NULL);
  CHECK(clg_session_devices(NULL) == NULL);

  clg_tensor *out[1] = {NULL};
  CHECK_CODE(clg_session_run(s, -1, NULL, NULL, 1, &a, out), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, -2, &a, out), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, NULL, out), CLG_INVALID_ARGUMENT);
  CHECK(out[0] == NULL);
  /* The graph grew: the new node is placed at the next run and can be fetched. */
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &late, out));
  CHECK(clg_session_node_device(s, late) != NULL);
  clg_tensor_free(out[0]);
  out[0] = NULL;
  /* A builder error after the session was made: runs fail with the graph's error. */
  CHECK(clg_matmul(g, "bad", a, a, false, false) == NULL);
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &a, out), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "the graph has a builder error: MatMul 'bad'");
  CHECK(out[0] == NULL);
  clg_session_free(s);
  /* A session on a graph with a builder error is refused with that error. */
  s = (clg_session *)&s;
  CHECK_CODE(clg_session_new(g, NULL, &s), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "inner dimensions differ");
  CHECK(s == NULL);
  clg_graph_free(other);
  clg_graph_free(g);
}

static void tensors(void)
{
  int64_t neg[2] = {2, -1}, huge[3] = {INT64_MAX / 2, 4, 4};
  CHECK(clg_tensor_new((clg_dtype)0, 1, d23, NULL) == NULL);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
  CHECK(clg_tensor_new((clg_dtype)7, 1, d23, NULL) == NULL);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
  CHECK(clg_tensor_new(CLG_FLOAT32, -1, d23, NULL) == NULL);
  CHECK_CONTAINS(clg_last_error(), "rank -1 is out of range");
  CHECK(clg_tensor_new(CLG_FLOAT32, CLG_MAX_RANK + 1, d23, NULL) == NULL);
  CHECK_CONTAINS(clg_last_error(), "rank 9 is out of range");
  CHECK(clg_tensor_new(CLG_FLOAT32, 2, NULL, NULL) == NULL);
  CHECK_CONTAINS(clg_last_error(), "dims is NULL but rank is 2");
  CHECK(clg_tensor_new(CLG_FLOAT32, 2, neg, NULL) == NULL);
  CHECK_CONTAINS(clg_last_error(), "dims[1] is -1");
  CHECK(clg_tensor_new(CLG_FLOAT64, 3, huge, NULL) == NULL);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT || clg_last_code() == CLG_RESOURCE_EXHAUSTED);
  clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 2, d23, v6);
  CHECK(clg_tensor_dim(t, -1) == -1);
  CHECK(clg_tensor_dim(t, 2) == -1);
  CHECK(clg_tensor_dim(t, 1000000) == -1);
  char small[3];
  CHECK_STR(clg_tensor_shape_string(t, small, sizeof small), "[2"); /* cut, NUL-terminated */
  clg_tensor_free(t);
  clg_tensor_free(NULL);
  CHECK(clg_dtype_size((clg_dtype)7) == 0);  /* DT_STRING: not a clgraph dtype */
  CHECK(clg_dtype_size((clg_dtype)14) == 0); /* DT_BFLOAT16 */
  CHECK_STR(clg_dtype_name((clg_dtype)-3), "invalid");
}

static void names(void)
{
  CHECK_STR(clg_code_name((clg_code)-1), "UNKNOWN_CODE");
  CHECK_STR(clg_code_name((clg_code)16), "UNKNOWN_CODE");
  CHECK_STR(clg_code_error_class((clg_code)99), "UnknownError");
  CHECK(clg_code_title((clg_code)99) != NULL);
  CHECK_STR(clg_log_level_name((clg_log_level)17), "OFF");
}

static void devices(void)
{
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(&cfg, &devs));
  CHECK(clg_devices_get(devs, -1) == NULL);
  CHECK(clg_devices_get(devs, clg_devices_count(devs)) == NULL);
  CHECK(clg_devices_get(NULL, 0) == NULL);
  CHECK(clg_devices_count(NULL) == 0);
  CHECK(clg_devices_find(devs, NULL) == NULL);
  CHECK(clg_devices_find(devs, "/device:GPU:99") == NULL);
  CHECK(clg_devices_find(devs, "not a device") == NULL);
  CHECK(clg_devices_find(devs, "/job:worker/device:GPU:0") == NULL);
  CHECK(clg_devices_find(NULL, "/cpu:0") == NULL);
  clg_devices_free(devs);
  clg_devices_free(NULL);
  clg_device_config_init(NULL); /* no crash */
}

int main(void)
{
  log_level_env();
  names();
  tensors();
  if (clg_test_require_gpus(1)) {
    session_queries();
    devices();
  }
  clg_session_free(NULL);
  clg_graph_free(NULL);
  return clg_test_summary("test_bad_input");
}
