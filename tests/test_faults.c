/* Fault injection: every OpenCL and CLBlast call a scenario makes is made to fail, one at a
 * time (tests/faultinject.c interposes them). For each failure the test checks that
 *  - the call returns a clear error that names the failing call (or, for the documented
 *    fallback, that a CLBlast failure the host can serve still gives the right values);
 *  - no output is handed back on failure, and the caller's output array is not touched;
 *  - the session stays usable: with the fault gone, a retry gives the right values (or,
 *    when the session could not be created, a new one does);
 *  - nothing leaks (ci/sanitize.sh runs this test under ASan/LSan).
 * Scenarios, on four PoCL devices: the guide's S3 and S7 graphs, an element-wise graph
 * with feeds and a GPU-to-GPU copy, MatMul warm-up, the reserve-all allocator, a float64
 * MatMul, and the per-device allocator alone (growth regions); then a failed build of the
 * programs kept as binaries. */
#include <CL/cl.h> /* the OpenCL errors it injects (device.h no longer includes it) */
#include <stdlib.h>

#include "faultinject.h"
#include "memory/memory.h"
#include "testutil.h"

#ifdef CLG_HAVE_CLBLAST
#include <clblast_c.h>
#endif

static int verbose;

/* CLBlast's names of the two statuses injected here (clgraph prints them in errors). */
static const char *clg_clblast_status_name_for_test(int status)
{
  return status == -11 ? "CLBlastOpenCLBuildProgramFailure" : "CLBlastOpenCLOutOfResources";
}

/* --- scenarios ------------------------------------------------------------------------------ */

/* What a scenario reports about its first attempt. */
typedef struct outcome {
  clg_code code;
  char message[4096];
  bool values_ok;    /* on success: the values were right */
  bool outputs_kept; /* on failure: the output array was left alone */
  bool retry_ok;     /* with the fault gone: the retry ran and gave the right values */
  char log[4096];    /* warnings logged during the first attempt */
} outcome;

typedef struct graph_case {
  clg_graph *g;
  clg_node *fetch[2];
  int num_fetches;
  clg_node *feed;
  clg_tensor *feed_value;
  const float *want[2];
  const double *want64;
  size_t count[2];
} graph_case;

static const int64_t dims_a[2] = {2, 3}, dims_b[2] = {3, 2};
static const float values[6] = {1, 2, 3, 4, 5, 6};
static const float s3_want[4] = {22, 28, 49, 64};
static const float s7_want[4] = {44, 56, 98, 128};

static void build_s3(graph_case *c)
{
  c->g = clg_graph_new();
  clg_graph_push_device(c->g, "/cpu:0");
  clg_node *a = clg_const_f32(c->g, "a", 2, dims_a, values);
  clg_node *b = clg_const_f32(c->g, "b", 2, dims_b, values);
  clg_graph_pop_device(c->g);
  c->fetch[0] = clg_matmul(c->g, NULL, a, b, false, false);
  c->num_fetches = 1;
  c->want[0] = s3_want;
  c->count[0] = 4;
}

static void build_s7(graph_case *c)
{
  c->g = clg_graph_new();
  clg_node *mm[2];
  const char *gpus[2] = {"/device:GPU:2", "/device:GPU:3"};
  for (int i = 0; i < 2; i++) {
    clg_graph_push_device(c->g, gpus[i]);
    clg_node *a = clg_const_f32(c->g, NULL, 2, dims_a, values);
    clg_node *b = clg_const_f32(c->g, NULL, 2, dims_b, values);
    mm[i] = clg_matmul(c->g, NULL, a, b, false, false);
    clg_graph_pop_device(c->g);
  }
  clg_graph_push_device(c->g, "/cpu:0");
  c->fetch[0] = clg_add_n(c->g, NULL, 2, mm);
  clg_graph_pop_device(c->g);
  c->num_fetches = 1;
  c->want[0] = s7_want;
  c->count[0] = 4;
}

/* x (fed) + c on GPU:0; then on GPU:1 (a device-to-device copy): y*y, AddN(z, z, y),
 * Identity, minus a scalar. */
static float ew_want_z[6], ew_want_out[6];

static void build_elementwise(graph_case *c)
{
  static const float cv[6] = {1, -1, 2, -2, 3, -3}, xv[6] = {0, 1, 2, 3, 4, 5};
  c->g = clg_graph_new();
  clg_graph_push_device(c->g, "/device:GPU:0");
  c->feed = clg_placeholder(c->g, "x", CLG_FLOAT32, 2, dims_a);
  clg_node *k = clg_const_f32(c->g, "c", 2, dims_a, cv);
  clg_node *y = clg_add(c->g, "y", c->feed, k);
  clg_graph_pop_device(c->g);
  clg_graph_push_device(c->g, "/device:GPU:1");
  clg_node *z = clg_mul(c->g, "z", y, y);
  clg_node *in[3] = {z, z, y};
  clg_node *s = clg_add_n(c->g, "s", 3, in);
  clg_node *id = clg_identity(c->g, "id", s);
  float one = 1;
  clg_node *scalar = clg_const_f32(c->g, "one", 0, NULL, &one);
  clg_node *out = clg_sub(c->g, "out", id, scalar);
  clg_graph_pop_device(c->g);
  c->feed_value = clg_tensor_new(CLG_FLOAT32, 2, dims_a, xv);
  for (int i = 0; i < 6; i++) {
    float yv = xv[i] + cv[i];
    ew_want_z[i] = yv * yv;
    ew_want_out[i] = ew_want_z[i] + ew_want_z[i] + yv - 1;
  }
  c->fetch[0] = z;
  c->fetch[1] = out;
  c->num_fetches = 2;
  c->want[0] = ew_want_z;
  c->want[1] = ew_want_out;
  c->count[0] = c->count[1] = 6;
}

/* A float64 MatMul [5,4] x [4,3] on GPU:3 with the first operand transposed. */
static double f64_want[15];

static void build_f64(graph_case *c)
{
  static double av[20], bv[12];
  const int64_t da[2] = {4, 5}, db[2] = {4, 3};
  for (int i = 0; i < 20; i++)
    av[i] = i % 7 - 3;
  for (int i = 0; i < 12; i++)
    bv[i] = i % 5 - 2;
  for (int m = 0; m < 5; m++)
    for (int n = 0; n < 3; n++) {
      double s = 0;
      for (int k = 0; k < 4; k++)
        s += av[k * 5 + m] * bv[k * 3 + n];
      f64_want[m * 3 + n] = s;
    }
  c->g = clg_graph_new();
  clg_graph_push_device(c->g, "/device:GPU:3");
  clg_node *a = clg_const_f64(c->g, NULL, 2, da, av);
  clg_node *b = clg_const_f64(c->g, NULL, 2, db, bv);
  c->fetch[0] = clg_matmul(c->g, NULL, a, b, true, false);
  clg_graph_pop_device(c->g);
  c->num_fetches = 1;
  c->want64 = f64_want;
  c->count[0] = 15;
}

static void free_case(graph_case *c)
{
  clg_tensor_free(c->feed_value);
  clg_graph_free(c->g);
  memset(c, 0, sizeof *c);
}

static bool values_right(const graph_case *c, clg_tensor *const *out)
{
  for (int k = 0; k < c->num_fetches; k++) {
    if (!out[k] || clg_tensor_count(out[k]) != c->count[k])
      return false;
    for (size_t i = 0; i < c->count[k]; i++) {
      double got = c->want64 ? ((const double *)clg_tensor_const_data(out[k]))[i]
                             : ((const float *)clg_tensor_const_data(out[k]))[i];
      double want = c->want64 ? c->want64[i] : c->want[k][i];
      if (got != want)
        return false;
    }
  }
  return true;
}

/* One run; *values_ok tells whether the values were right. Outputs are freed. */
static clg_code run_once(clg_session *s, const graph_case *c, bool *values_ok, bool *kept)
{
  clg_tensor *out[2] = {NULL, NULL};
  clg_code code =
      clg_session_run(s, c->feed ? 1 : 0, &c->feed, &c->feed_value, c->num_fetches, c->fetch, out);
  *values_ok = code == CLG_OK && values_right(c, out);
  if (kept)
    *kept = code == CLG_OK || (out[0] == NULL && out[1] == NULL);
  for (int k = 0; k < 2; k++)
    clg_tensor_free(out[k]);
  return code;
}

static void record_failure(outcome *o, clg_code code)
{
  o->code = code;
  if (code != CLG_OK)
    snprintf(o->message, sizeof o->message, "%s", clg_last_error());
}

/* Session + run with opt, then the retry with the fault disarmed. */
static void run_graph_case(void (*build)(graph_case *), const clg_session_options *opt, outcome *o)
{
  graph_case c;
  memset(&c, 0, sizeof c);
  build(&c);
  memset(o, 0, sizeof *o);
  o->outputs_kept = true;
  clg_session *s = NULL;
  clg_code code = clg_session_new(c.g, opt, &s);
  if (code == CLG_OK)
    code = run_once(s, &c, &o->values_ok, &o->outputs_kept);
  record_failure(o, code);

  clg_fault_disarm();
  if (!s) {
    /* Creation failed: the process state must have been released cleanly, so a new
     * session starts from scratch. */
    if (clg_session_new(c.g, opt, &s) != CLG_OK) {
      snprintf(o->message + strlen(o->message), sizeof o->message - strlen(o->message),
               " | retry: new session: %s", clg_last_error());
      free_case(&c);
      return;
    }
  }
  bool retry_values = false;
  code = run_once(s, &c, &retry_values, NULL);
  o->retry_ok = code == CLG_OK && retry_values;
  if (!o->retry_ok)
    snprintf(o->message + strlen(o->message), sizeof o->message - strlen(o->message),
             " | retry: %s %s", clg_code_name(code), code != CLG_OK ? clg_last_error() : "");
  /* A second run of the same session must also be right (cached Consts, reused blocks). */
  if (o->retry_ok) {
    code = run_once(s, &c, &retry_values, NULL);
    o->retry_ok = code == CLG_OK && retry_values;
  }
  clg_session_free(s);
  free_case(&c);
}

static clg_session_options growth_options(void)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.allow_growth = 1;
  return opt;
}

static void scenario_s3(outcome *o)
{
  clg_session_options opt = growth_options();
  run_graph_case(build_s3, &opt, o);
}

static void scenario_s7(outcome *o)
{
  clg_session_options opt = growth_options();
  run_graph_case(build_s7, &opt, o);
}

static void scenario_elementwise(outcome *o)
{
  clg_session_options opt = growth_options();
  run_graph_case(build_elementwise, &opt, o);
}

static void scenario_f64(outcome *o)
{
  clg_session_options opt = growth_options();
  run_graph_case(build_f64, &opt, o);
}

/* S3 with MatMul compiled at session creation. */
static void scenario_warm(outcome *o)
{
  clg_session_options opt = growth_options();
  opt.warm_matmul = 1;
  run_graph_case(build_s3, &opt, o);
}

/* The default (reserve-all) allocator, limited to 1% of the device (about 20 MiB), its
 * regions filled at creation as a GPU's are (CLGRAPH_TOUCH_REGIONS=1: PoCL's CPU devices
 * skip the fill by default), so that the fill's failures are swept too. */
static void scenario_reserve(outcome *o)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.gpu_options.per_process_gpu_memory_fraction = 0.01;
  setenv("CLGRAPH_TOUCH_REGIONS", "1", 1);
  run_graph_case(build_s3, &opt, o);
  unsetenv("CLGRAPH_TOUCH_REGIONS");
}

/* The allocator of GPU:0 alone, growing: 2 MiB, then 4 MiB and 8 MiB regions. */
static void scenario_allocator(outcome *o)
{
  memset(o, 0, sizeof *o);
  o->outputs_kept = o->values_ok = true;
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *devs = NULL;
  clg_allocator *a = NULL;
  clg_code code = clg_devices_new(&cfg, &devs);
  clg_memory_options mo = {1, 0, 0};
  if (code == CLG_OK && clg_devices_count(devs) < 2) {
    code = clg_error(CLG_UNAVAILABLE, "no OpenCL device found");
    clg_devices_free(devs);
    devs = NULL;
  }
  if (code == CLG_OK)
    code = clg_allocator_new(clg_devices_at(devs, 1), &mo, &a);
  clg_block b[3];
  int got = 0;
  const size_t sizes[3] = {1536 << 10, 3 << 20, 5 << 20};
  while (code == CLG_OK && got < 3) {
    code = clg_allocator_alloc(a, sizes[got], &b[got]);
    if (code == CLG_OK)
      got++;
  }
  record_failure(o, code);
  clg_fault_disarm();
  if (!devs && (clg_devices_new(&cfg, &devs) != CLG_OK || clg_devices_count(devs) < 2)) {
    clg_devices_free(devs);
    return;
  }
  if (!a && clg_allocator_new(clg_devices_at(devs, 1), &mo, &a) != CLG_OK) {
    clg_devices_free(devs);
    return;
  }
  /* Usable after the failure: the missing blocks can be had now, and every invariant
   * holds. */
  bool ok = clg_allocator_validate(a) == CLG_OK;
  clg_memory_stats st;
  clg_allocator_stats(a, &st);
  ok = ok && st.live_allocs == (uint64_t)got;
  for (int i = got; i < 3 && ok; i++)
    ok = clg_allocator_alloc(a, sizes[i], &b[i]) == CLG_OK;
  if (!ok)
    snprintf(o->message + strlen(o->message), sizeof o->message - strlen(o->message),
             " | retry: %s", clg_last_error());
  for (int i = 0; i < (ok ? 3 : got); i++)
    clg_allocator_free(a, &b[i], NULL);
  clg_allocator_stats(a, &st);
  o->retry_ok = ok && clg_allocator_validate(a) == CLG_OK && st.bytes_in_use == 0;
  clg_allocator_destroy(a);
  clg_devices_free(devs);
}

/* --- the sweep ---------------------------------------------------------------------------- */

typedef struct scenario {
  const char *name;
  void (*run)(outcome *o);
  /* NULL: every interposed call; else only these (the scenario's own calls). */
  const char *const *only;
} scenario;

static const char *const reserve_calls[] = {"clCreateBuffer", "clEnqueueFillBuffer",
                                            "clWaitForEvents", "clGetEventInfo", NULL};

static const scenario scenarios[] = {
    {"S3", scenario_s3, NULL},
    {"S7", scenario_s7, NULL},
    {"elementwise", scenario_elementwise, NULL},
    {"f64_matmul", scenario_f64, NULL},
    {"warm_matmul", scenario_warm, NULL},
    {"reserve_all", scenario_reserve, reserve_calls},
    {"allocator", scenario_allocator, NULL},
};

static int error_for(const char *call)
{
  if (strcmp(call, "clCreateBuffer") == 0 || strcmp(call, "clCreateSubBuffer") == 0)
    return CL_MEM_OBJECT_ALLOCATION_FAILURE;
  if (strcmp(call, "clBuildProgram") == 0)
    return CL_BUILD_PROGRAM_FAILURE;
  if (strcmp(call, "clCreateContext") == 0)
    return CL_OUT_OF_HOST_MEMORY;
  return CL_OUT_OF_RESOURCES; /* also CLBlastOpenCLOutOfResources */
}

static bool listed(const char *const *only, const char *call)
{
  if (!only)
    return true;
  for (; *only; only++)
    if (strcmp(*only, call) == 0)
      return true;
  return false;
}

/* Calls whose counts depend on timing (polling); a count that is not reached is fine. */
static bool timing_dependent(const char *call)
{
  return strcmp(call, "clGetEventInfo") == 0 || strcmp(call, "clWaitForEvents") == 0;
}

static long total_injected, total_errors, total_fallbacks, total_absorbed, total_degraded;

/* The name clgraph prints for an injected error code. */
static const char *error_name(const char *call, int error)
{
  if (strncmp(call, "CLBlast", 7) == 0)
    return clg_clblast_status_name_for_test(error);
  switch (error) {
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
  case CL_BUILD_PROGRAM_FAILURE:
    return "CL_BUILD_PROGRAM_FAILURE";
  case CL_OUT_OF_HOST_MEMORY:
    return "CL_OUT_OF_HOST_MEMORY";
  default:
    return "CL_OUT_OF_RESOURCES";
  }
}

/* Fails the nth call of `call` in scenario sc with error; checks the outcome. */
static void inject(const scenario *sc, const char *call, long nth, int error, bool fallback_ok)
{
  outcome o;
  clg_test_log_capture_start(CLG_LOG_WARNING);
  clg_fault_arm(call, nth, error);
  sc->run(&o);
  bool fired = clg_fault_fired();
  clg_fault_disarm();
  snprintf(o.log, sizeof o.log, "%s", clg_test_log_capture_stop());
  if (!fired) {
    CHECK_MSG(timing_dependent(call), "%s: call %ld of %s was never made", sc->name, nth, call);
    return;
  }
  total_injected++;
  if (verbose)
    fprintf(stderr, "%s: %s #%ld -> %s%s%s\n", sc->name, call, nth, clg_code_name(o.code),
            o.code ? ": " : "", o.code ? o.message : "");
  if (o.code == CLG_OK) {
    /* Absorbed: a documented fallback (CLBlast -> host MatMul) or a call whose failure
     * clgraph tolerates (a query with a default, a wait it retries): the values must be
     * right all the same. */
    CHECK_MSG(o.values_ok, "%s: %s #%ld failed but the run succeeded with wrong values", sc->name,
              call, nth);
    if (strncmp(call, "CLBlast", 7) == 0)
      total_fallbacks++;
    else
      total_absorbed++;
    if (strncmp(call, "CLBlast", 7) == 0 && !fallback_ok)
      CHECK_MSG(false, "%s: %s #%ld failed with CLBlastOpenCLOutOfResources and was ignored",
                sc->name, call, nth);
  } else if (strstr(o.message, call) || strstr(o.message, error_name(call, error))) {
    total_errors++;
  } else {
    /* A documented degradation: the failing platform or device is skipped with a warning
     * that names the call, and the error then follows from its absence. */
    total_degraded++;
    CHECK_MSG(strstr(o.log, call) != NULL,
              "%s: %s #%ld failed: neither the error nor a warning names the call or %s: %s: %s",
              sc->name, call, nth, error_name(call, error), clg_code_name(o.code), o.message);
  }
  if (o.code != CLG_OK) {
    CHECK_MSG(o.outputs_kept, "%s: %s #%ld: a failed run handed out outputs", sc->name, call, nth);
  }
  CHECK_MSG(o.retry_ok, "%s: after %s #%ld failed, the retry did not succeed: %s", sc->name, call,
            nth, o.message);
}

static void sweep(const scenario *sc)
{
  int ncalls;
  const char *const *calls = clg_fault_calls(&ncalls);
  outcome o;
  /* A run without faults: right, and it gives the counts of calls its first attempt makes
   * (counting stops when the scenario disarms, before its retry). */
  clg_fault_reset();
  sc->run(&o);
  CHECK_MSG(o.code == CLG_OK && o.values_ok && o.retry_ok, "%s without faults: %s %s", sc->name,
            clg_code_name(o.code), o.message);
  long counts[64] = {0};
  for (int i = 0; i < ncalls && i < 64; i++)
    counts[i] = clg_fault_count(calls[i]);
  clg_fault_reset();
  long before = total_injected;
  for (int i = 0; i < ncalls && i < 64; i++) {
    if (!listed(sc->only, calls[i]))
      continue;
    for (long n = 1; n <= counts[i]; n++) {
      inject(sc, calls[i], n, error_for(calls[i]), false);
#ifdef CLG_HAVE_CLBLAST
      /* A CLBlast failure the host can serve: the documented fallback, right values. */
      if (strncmp(calls[i], "CLBlast", 7) == 0)
        inject(sc, calls[i], n, CLBlastOpenCLBuildProgramFailure, true);
#endif
    }
  }
  printf("%s: %ld faults injected\n", sc->name, total_injected - before);
  fflush(stdout);
}

/* A failed fetch must leave the caller's output array alone ("On failure no output is
 * set"): the read of the fetched value fails, and outputs[0] holds the caller's pointer. */
static void fetch_failure_keeps_outputs(void)
{
  graph_case c;
  memset(&c, 0, sizeof c);
  build_s3(&c);
  clg_session_options opt = growth_options();
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(c.g, &opt, &s));
  clg_fault_reset();
  clg_tensor *mine = clg_tensor_new(CLG_FLOAT32, 0, NULL, NULL);
  clg_tensor *out[1] = {mine};
  /* The only clEnqueueReadBuffer of this run is the fetch of MatMul from GPU:0. */
  clg_fault_arm("clEnqueueReadBuffer", 1, CL_OUT_OF_RESOURCES);
  clg_code code = clg_session_run(s, 0, NULL, NULL, 1, c.fetch, out);
  CHECK(clg_fault_fired());
  clg_fault_disarm();
  CHECK_CODE(code, CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "clEnqueueReadBuffer");
  CHECK_MSG(out[0] == mine,
            "a failed fetch replaced the caller's outputs[0] (%p, was %p): the "
            "executor freed a pointer it did not set",
            (void *)out[0], (void *)mine);
  if (out[0] == mine)
    clg_tensor_free(mine); /* else the library already freed it */
  clg_session_free(s);
  free_case(&c);
}

/* A device that gives less than the default limit: its fourth region (of four 512 MiB
 * ones) is refused once, the retry at 0.9x is made, and the allocator stops there, says
 * so once, and serves allocations from what it holds. */
static void reserve_short_device(void)
{
  clg_devices *devs = NULL;
  CHECK_OK(clg_devices_new(NULL, &devs));
  clg_device *gpu = devs ? clg_devices_at(devs, 1) : NULL;
  clg_allocator *a = NULL;
  clg_memory_options o = {0};
  if (gpu)
    CHECK_OK(clg_allocator_new(gpu, &o, &a));
  if (!a) {
    clg_devices_free(devs);
    return;
  }
  uint64_t limit = gpu->info.global_mem, region = gpu->info.max_alloc;
  CHECK(limit == 4 * region); /* PoCL: max alloc is a quarter of the memory */
  clg_fault_arm("clCreateBuffer", 4, CL_MEM_OBJECT_ALLOCATION_FAILURE);
  clg_test_log_capture_start(CLG_LOG_WARNING);
  clg_block b;
  CHECK_OK(clg_allocator_alloc(a, 1000, &b));
  const char *log = clg_test_log_capture_stop();
  CHECK(clg_fault_fired());
  clg_fault_disarm();
  clg_memory_stats st;
  clg_allocator_stats(a, &st);
  uint64_t smaller = (uint64_t)((double)region * 0.9) & ~(uint64_t)255;
  CHECK(st.bytes_limit == limit && st.num_regions == 4);
  CHECK(st.bytes_reserved == 3 * region + smaller);
  char want[400];
  snprintf(
      want, sizeof want,
      "GPU_0_bfc could reserve only %llu of its %llu-byte limit on "
      "/job:localhost/replica:0/task:0/device:GPU:0 (creating a region of %llu bytes failed: "
      "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4) in clCreateBuffer); allocations beyond that fail.",
      (unsigned long long)st.bytes_reserved, (unsigned long long)limit, (unsigned long long)region);
  CHECK_CONTAINS(log, want);
  clg_block c;
  CHECK_OK(clg_allocator_alloc(a, (size_t)region, &c));
  clg_allocator_free(a, &c, NULL);
  clg_allocator_free(a, &b, NULL);
  CHECK_OK(clg_allocator_validate(a));
  clg_allocator_destroy(a);
  clg_devices_free(devs);
}

/* Programs made from the binaries an earlier session's build kept (program.c): a later
 * session builds none from the source, and when the build of the binaries fails, the source
 * is built instead, with the right values. */
static void kept_binaries_fallback(void)
{
  unsetenv("CLGRAPH_CL_PROGRAM_BINARIES");
  outcome o;
  scenario_elementwise(&o); /* builds from the source and keeps the binaries */
  CHECK_MSG(o.code == CLG_OK && o.values_ok && o.retry_ok, "kept binaries: %s", o.message);
  clg_fault_reset();
  scenario_elementwise(&o);
  CHECK(o.code == CLG_OK && o.values_ok && o.retry_ok);
  long builds = clg_fault_count("clBuildProgram");
  CHECK_MSG(builds > 0 && clg_fault_count("clCreateProgramWithSource") == 0,
            "a later session made %ld programs from the source (%ld builds)",
            clg_fault_count("clCreateProgramWithSource"), builds);
  for (long n = 1; n <= builds; n++) {
    clg_fault_arm("clBuildProgram", n, CL_BUILD_PROGRAM_FAILURE);
    scenario_elementwise(&o);
    bool fired = clg_fault_fired();
    long sources = clg_fault_count("clCreateProgramWithSource");
    clg_fault_disarm();
    CHECK(fired);
    CHECK_MSG(o.code == CLG_OK && o.values_ok && o.retry_ok && sources == 1,
              "kept binaries: build %ld failed: %s %s (%ld from the source)", n,
              clg_code_name(o.code), o.message, sources);
  }
  clg_fault_reset();
  setenv("CLGRAPH_CL_PROGRAM_BINARIES", "0", 1);
  printf("kept binaries: each of %ld builds failed in turn, the source built instead\n", builds);
  fflush(stdout);
}

int main(void)
{
  verbose = getenv("CLG_FAULTS_VERBOSE") != NULL;
  /* A sweep counts the calls of a run without faults, then fails each in turn: the programs
   * are built from the source in every run (not from binaries the first run kept), so that
   * each run makes the same calls. kept_binaries_fallback checks the binaries' path. */
  setenv("CLGRAPH_CL_PROGRAM_BINARIES", "0", 1);
  /* CLBlast prints "CLBlast: Run-time error" for each failure it returns: expected here. */
  clg_log_set_level(CLG_LOG_ERROR);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_faults");
  fetch_failure_keeps_outputs();
  reserve_short_device();
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    sweep(&scenarios[i]);
  kept_binaries_fallback();
  printf("faults: %ld injected: %ld clear errors, %ld skipped devices with a warning, %ld "
         "CLBlast fallbacks to the host, %ld absorbed with right values\n",
         total_injected, total_errors, total_degraded, total_fallbacks, total_absorbed);
  return clg_test_summary("test_faults");
}
