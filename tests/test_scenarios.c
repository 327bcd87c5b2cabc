/* The guide's scenarios S1-S7 end to end on PoCL devices standing in as GPUs, asserting
 * the exact log lines and values. With four devices: S1-S4 and S7; with one device (the
 * guide's single-GPU machine): S5 (the error, exactly) and S6 (soft placement). */
// ctest: four
// ctest: one POCL_DEVICES=pthread
// ctest: split4 POCL_DEVICES=pthread POCL_MEMORY_LIMIT=4 CLGRAPH_VIRTUAL_DEVICES=4x1024
#include <stdlib.h>

#include "testutil.h"

static const int64_t dims_a[2] = {2, 3}, dims_b[2] = {3, 2};
static const float values[6] = {1, 2, 3, 4, 5, 6};

static clg_session_options logged(void)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.log_device_placement = 1;
  return opt;
}

/* The "Device mapping:" block the guide prints, for this machine's devices. */
static char *expected_mapping(const clg_devices *devs)
{
  size_t cap = 4096, len = 0;
  char *s = malloc(cap);
  len += (size_t)snprintf(s + len, cap - len, "Device mapping:\n");
  for (int i = 1; i < clg_devices_count(devs); i++) {
    const clg_device_info *d = clg_devices_get(devs, i);
    len += (size_t)snprintf(s + len, cap - len, "%s -> device: %d, name: %s, pci bus id: %s\n",
                            d->full_name, d->physical_index, d->cl_name, d->pci_bus_id);
  }
  if (clg_devices_count(devs) == 1)
    snprintf(s, cap, "Device mapping: no known devices.\n");
  return s;
}

/* Runs one fetch with log capture; returns the log (owned by the harness). */
static const char *run_logged(clg_graph *g, clg_node *fetch, const char *want_value,
                              const clg_devices **devs_out, clg_session **keep)
{
  clg_session_options opt = logged();
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  clg_test_log_capture_start(CLG_LOG_INFO);
  clg_code code = clg_session_new(g, &opt, &s);
  if (code == CLG_OK)
    code = clg_session_run(s, 0, NULL, NULL, 1, &fetch, &out);
  const char *log = clg_test_log_capture_stop();
  CHECK_MSG(code == CLG_OK, "run failed: %s", clg_last_error());
  if (out) {
    char *text = clg_tensor_to_string(out);
    CHECK_STR(text, want_value);
    free(text);
    clg_tensor_free(out);
  }
  if (devs_out)
    *devs_out = s ? clg_session_devices(s) : NULL;
  if (keep)
    *keep = s;
  else
    clg_session_free(s);
  return log;
}

static void check_log(const char *log, const clg_devices *devs, const char *node_lines)
{
  char *mapping = expected_mapping(devs);
  size_t n = strlen(mapping) + strlen(node_lines) + 1;
  char *want = malloc(n);
  snprintf(want, n, "%s%s", mapping, node_lines);
  CHECK_STR(log, want);
  free(want);
  free(mapping);
}

#define GPU0 "/job:localhost/replica:0/task:0/device:GPU:0"
#define CPU0 "/job:localhost/replica:0/task:0/device:CPU:0"

/* Built without CLBlast, MatMul has no OpenCL kernel: unspecified MatMuls go to CPU:0 and
 * explicit GPU MatMuls are TensorFlow's "no supported kernel" error (issue: fallbacks). */
#ifdef CLG_HAVE_CLBLAST
#define MATMUL_DEV GPU0
#define MATMUL_REASON "default: lowest-id GPU with a kernel for MatMul"
#define SOFT_TARGET "lowest-id GPU with a kernel"
#else
#define MATMUL_DEV CPU0
#define MATMUL_REASON "default: no GPU has a kernel for MatMul (float); CPU:0"
#define SOFT_TARGET "CPU:0"
#endif

/* S1 + S2: automatic placement prefers the GPU; the placement log. */
static void scenario_s2(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_const_f32(g, "a", 2, dims_a, values);
  clg_node *b = clg_const_f32(g, "b", 2, dims_b, values);
  clg_node *c = clg_matmul(g, NULL, a, b, false, false);
  CHECK_OK(clg_graph_status(g));
  CHECK_STR(clg_node_name(c), "MatMul");
  const clg_devices *devs = NULL;
  clg_session *s = NULL;
  const char *log = run_logged(g, c, "[[ 22.  28.]\n [ 49.  64.]]", &devs, &s);
  if (s) {
    check_log(log, devs, "b: " MATMUL_DEV "\na: " MATMUL_DEV "\nMatMul: " MATMUL_DEV "\n");
    CHECK_STR(clg_session_node_reason(s, c), MATMUL_REASON);
    CHECK_STR(clg_session_node_reason(s, a), "follows its consumer 'MatMul'");
  }
  clg_session_free(s);
  clg_graph_free(g);
}

/* S3: a and b pinned to /cpu:0; MatMul still on the GPU, inputs copied automatically. */
static void scenario_s3(void)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *a = clg_const_f32(g, "a", 2, dims_a, values);
  clg_node *b = clg_const_f32(g, "b", 2, dims_b, values);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *c = clg_matmul(g, NULL, a, b, false, false);
  const clg_devices *devs = NULL;
  clg_session *s = NULL;
  const char *log = run_logged(g, c, "[[ 22.  28.]\n [ 49.  64.]]", &devs, &s);
  if (s) {
    check_log(log, devs, "b: " CPU0 "\na: " CPU0 "\nMatMul: " MATMUL_DEV "\n");
#ifdef CLG_HAVE_CLBLAST
    CHECK_STR(clg_session_node_reason(s, a), "explicit device specification '/device:CPU:0'");
#else /* MatMul is on CPU:0 too, which the spec allows */
    CHECK_STR(clg_session_node_reason(s, a), "follows its consumer 'MatMul'");
#endif
  }
  clg_session_free(s);
  clg_graph_free(g);
}

/* S7: two towers on GPU:2 and GPU:3, summed on the CPU. */
static void scenario_s7(void)
{
  clg_graph *g = clg_graph_new();
  const char *towers[2] = {"/device:GPU:2", "/device:GPU:3"};
  clg_node *c[2];
  for (int i = 0; i < 2; i++) {
    CHECK_OK(clg_graph_push_device(g, towers[i]));
    clg_node *a = clg_const_f32(g, NULL, 2, dims_a, values);
    clg_node *b = clg_const_f32(g, NULL, 2, dims_b, values);
    c[i] = clg_matmul(g, NULL, a, b, false, false);
    CHECK_OK(clg_graph_pop_device(g));
  }
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *sum = clg_add_n(g, NULL, 2, c);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_status(g));
#ifndef CLG_HAVE_CLBLAST
  clg_session *fail = NULL;
  CHECK_CODE(clg_session_new(g, NULL, &fail), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(),
                 "Cannot assign a device to node 'MatMul_1': Could not satisfy explicit device "
                 "specification '/device:GPU:3' because no supported kernel for GPU devices is "
                 "available (op MatMul, dtype float)");
  clg_graph_free(g);
  return;
#endif
  const clg_devices *devs = NULL;
  clg_session *s = NULL;
  const char *log = run_logged(g, sum, "[[  44.   56.]\n [  98.  128.]]", &devs, &s);
  if (s) {
#define GPU2 "/job:localhost/replica:0/task:0/device:GPU:2"
#define GPU3 "/job:localhost/replica:0/task:0/device:GPU:3"
    check_log(log, devs,
              "Const_3: " GPU3 "\nConst_2: " GPU3 "\nMatMul_1: " GPU3 "\nConst_1: " GPU2
              "\nConst: " GPU2 "\nMatMul: " GPU2 "\nAddN: " CPU0 "\n");
  }
  clg_session_free(s);
  clg_graph_free(g);
}

/* S4: memory options. The default reserves the whole limit at first use; growth starts
 * small. (Process-wide allocators: the first session's options win, so this scenario
 * checks the default here; the memory tests cover the other modes in their own
 * processes.) */
static void scenario_s4(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_const_f32(g, "a", 2, dims_a, values);
  clg_node *c = clg_add(g, NULL, a, a);
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.per_process_gpu_memory_fraction = 0.4;
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &c, &out));
  clg_memory_stats st;
  CHECK_OK(clg_session_memory_stats(s, "/device:GPU:0", &st));
  const clg_device_info *d = clg_devices_get(clg_session_devices(s), 1);
  uint64_t limit = (uint64_t)(0.4 * (double)d->global_mem);
  CHECK_MSG(st.bytes_limit <= limit && st.bytes_limit + 4096 >= limit,
            "limit %llu, want about %llu", (unsigned long long)st.bytes_limit,
            (unsigned long long)limit);
  CHECK(st.bytes_reserved == st.bytes_limit);
  /* The session keeps its Const block (256 bytes after rounding) and the run's arena (the
   * Add's output, 256 bytes), kept for the next run of the same signature. */
  CHECK_MSG(st.bytes_in_use == 512, "in use %llu", (unsigned long long)st.bytes_in_use);
  CHECK_MSG(st.peak_bytes_in_use == 512, "peak %llu", (unsigned long long)st.peak_bytes_in_use);
  clg_tensor_free(out);
  clg_session_free(s);
  clg_graph_free(g);
}

static clg_graph *s5_graph(clg_node **c)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:2"));
  clg_node *a = clg_const_f32(g, "a", 2, dims_a, values);
  clg_node *b = clg_const_f32(g, "b", 2, dims_b, values);
  *c = clg_matmul(g, NULL, a, b, false, false);
  CHECK_OK(clg_graph_pop_device(g));
  return g;
}

/* S5: a device that does not exist is an InvalidArgumentError, in TensorFlow's words. */
static void scenario_s5(void)
{
  clg_node *c;
  clg_graph *g = s5_graph(&c);
  clg_session *s = NULL;
  CHECK_CODE(clg_session_new(g, NULL, &s), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(),
            "Cannot assign a device to node 'b': Could not satisfy explicit device specification "
            "'/device:GPU:2' because no devices matching that specification are registered in "
            "this process; available devices: " CPU0 ", " GPU0 "\n\t [[Node: b = "
            "Const[dtype=DT_FLOAT, value=Tensor<type: float shape: [3,2] values: 1 2 3...>, "
            "_device=\"/device:GPU:2\"]()]]");
  CHECK(s == NULL);
  clg_graph_free(g);
}

/* S6: with allow_soft_placement the S5 graph runs on a device that exists. */
static void scenario_s6(void)
{
  clg_node *c;
  clg_graph *g = s5_graph(&c);
  clg_session_options opt = logged();
  opt.allow_soft_placement = 1;
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  clg_test_log_capture_start(CLG_LOG_INFO);
  CHECK_OK(clg_session_new(g, &opt, &s));
  const char *log = clg_test_log_capture_stop();
  CHECK_CONTAINS(log, "Soft placement: node 'MatMul' (MatMul) requested '/device:GPU:2'; placed "
                      "on " MATMUL_DEV " instead");
  CHECK_CONTAINS(log, "\nMatMul: " MATMUL_DEV "\n");
  CHECK_CONTAINS(log, "\nb: " GPU0 "\n");
  if (s) {
    CHECK_STR(clg_session_node_reason(s, c),
              "soft placement: no device matches '/device:GPU:2'; " SOFT_TARGET);
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &c, &out));
    char *text = out ? clg_tensor_to_string(out) : NULL;
    CHECK_STR(text, "[[ 22.  28.]\n [ 49.  64.]]");
    free(text);
  }
  clg_tensor_free(out);
  clg_session_free(s);
  clg_graph_free(g);
}

int main(void)
{
  if (!clg_test_require_gpus(1))
    return clg_test_summary("test_scenarios");
  clg_device_config cfg;
  clg_devices *devs = NULL;
  clg_device_config_init(&cfg);
  CHECK_OK(clg_devices_new(&cfg, &devs));
  int gpus = devs ? clg_devices_count(devs) - 1 : 0;
  clg_devices_free(devs);
  if (gpus >= 4) {
    scenario_s4(); /* first: its session configures the allocators */
    scenario_s2();
    scenario_s3();
    scenario_s7();
  } else {
    scenario_s2();
    scenario_s3();
    scenario_s5();
    scenario_s6();
  }
  return clg_test_summary("test_scenarios");
}
