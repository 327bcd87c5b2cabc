/* What an import costs before the first run (issue 23's import-cost goal), where it can be
 * checked exactly rather than timed: the library's own host work (constant folding's helper
 * sessions) starts no OpenCL driver, PoCL's library is loaded only by OpenCL's start-up (begun
 * beside an import, finished before it returns), and the device set a session gets is the one
 * clg_devices_new enumerates, whatever state the helpers made before. Values are checked
 * against hand computation. PoCL's library in /proc/self/maps is the witness of its start-up:
 * the ICD loader opens it at the first clGetPlatformIDs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/import.h"
#include "clgraph/session.h"
#include "device/device.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "testutil.h"

static bool pocl_loaded(void)
{
  FILE *f = fopen("/proc/self/maps", "r");
  CHECK(f != NULL);
  if (!f)
    return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof line, f))
    found = strstr(line, "libpocl") != NULL;
  fclose(f);
  return found;
}

/* The devices' names, one string (for comparing two sets). */
static char *names_of(const clg_devices *devs)
{
  size_t cap = 64;
  char *s = calloc(cap, 1);
  for (int i = 0; s && i < clg_devices_count(devs); i++) {
    const char *n = clg_devices_get(devs, i)->full_name;
    size_t need = strlen(s) + strlen(n) + 2;
    if (need > cap) {
      char *grown = realloc(s, cap = 2 * need);
      if (!grown) {
        free(s);
        return NULL;
      }
      s = grown;
    }
    strcat(s, n);
    strcat(s, ";");
  }
  return s;
}

/* a + b on the host through a helper session: [1,2,3] + [10,20,30]. */
static void check_helper_run(int want_devices)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/device:CPU:0"));
  int64_t d[1] = {3};
  float av[3] = {1, 2, 3}, bv[3] = {10, 20, 30};
  clg_tensor *ta = clg_tensor_new(CLG_FLOAT32, 1, d, av),
             *tb = clg_tensor_new(CLG_FLOAT32, 1, d, bv);
  clg_output ins[2] = {clg_out(clg_const(g, "a", ta), 0), clg_out(clg_const(g, "b", tb), 0)};
  clg_node *sum = clg_op(g, "Add", "sum", 2, ins, 0, NULL);
  CHECK(sum != NULL);
  clg_session *s = NULL;
  CHECK_OK(clg_process_helper_session(g, &s));
  if (s) {
    CHECK_MSG(clg_devices_count(clg_session_devices(s)) == want_devices,
              "the helper's state has %d devices, want %d",
              clg_devices_count(clg_session_devices(s)), want_devices);
    clg_output f = clg_out(sum, 0);
    clg_tensor *out = NULL;
    CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 1, &f, &out, 0, NULL));
    const float *o = out ? clg_tensor_const_data(out) : NULL;
    CHECK(o && o[0] == 11 && o[1] == 22 && o[2] == 33);
    clg_tensor_free(out);
  }
  clg_session_free(s);
  clg_tensor_free(ta);
  clg_tensor_free(tb);
  clg_graph_free(g);
}

/* A tfjs model without weights whose Add of two Consts folds at import: [4,5] + [1,2]. */
static const char MODEL[] =
    "{\"format\": \"graph-model\", \"modelTopology\": {\"node\": ["
    "{\"name\": \"c1\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_INT32\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}, \"intVal\": [4, 5]}}, "
    "\"dtype\": {\"type\": \"DT_INT32\"}}},"
    "{\"name\": \"c2\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": "
    "\"DT_INT32\", \"tensorShape\": {\"dim\": [{\"size\": \"2\"}]}, \"intVal\": [1, 2]}}, "
    "\"dtype\": {\"type\": \"DT_INT32\"}}},"
    "{\"name\": \"y\", \"op\": \"AddV2\", \"input\": [\"c1\", \"c2\"], \"attr\": {\"T\": "
    "{\"type\": \"DT_INT32\"}}}], \"versions\": {\"producer\": 27}}, \"weightsManifest\": []}";

int main(void)
{
  /* Nothing has started OpenCL yet (the test links the ICD loader, which opens no driver). */
  CHECK(!pocl_loaded());

  /* The host alone, without an OpenCL call. */
  clg_devices *host = NULL;
  CHECK_OK(clg_devices_new_host(&host));
  CHECK(host && clg_devices_count(host) == 1);
  if (host) {
    CHECK_STR(clg_devices_get(host, 0)->name, "/device:CPU:0");
    CHECK_STR(clg_devices_get(host, 0)->type, "CPU");
  }
  clg_devices_free(host);
  CHECK(!pocl_loaded());

  /* Helper sessions with no session's state: the host alone, and still no driver. */
  check_helper_run(1);
  check_helper_run(1);
  CHECK_MSG(!pocl_loaded(), "a helper session started OpenCL");

  /* An import that folds: the Add became a Const of the hand-computed sum; OpenCL's start-up
   * ran beside it and is over. */
  clg_graph *g = clg_graph_new();
  clg_import_result *r = NULL;
  CHECK_OK(clg_graph_import_memory(g, CLG_IMPORT_TFJS, MODEL, strlen(MODEL), NULL, &r));
  clg_output y = {0};
  CHECK_OK(clg_import_find(r, "y", &y));
  if (y.node) {
    CHECK_STR(clg_node_op(y.node), "Const");
    const int32_t *v = clg_tensor_const_data(clg_node_value(y.node));
    CHECK(v && v[0] == 5 && v[1] == 7);
  }
  CHECK_MSG(pocl_loaded(), "the import did not start OpenCL (the test environment has PoCL)");

  /* A session's devices are clg_devices_new's, and with its state held a helper gets them too. */
  clg_devices *ref = NULL;
  CHECK_OK(clg_devices_new(NULL, &ref));
  char *want = ref ? names_of(ref) : NULL;
  int count = clg_devices_count(ref);
  CHECK_MSG(count > 1, "the test environment has %d devices, want GPUs too", count);
  clg_session_options so;
  clg_session_options_init(&so);
  so.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &so, &s));
  char *got = s ? names_of(clg_session_devices(s)) : NULL;
  CHECK(want && got && strcmp(want, got) == 0);
  check_helper_run(count);
  /* A session created while a helper's host state is held still gets every device. */
  clg_session_free(s);
  s = NULL;
  clg_graph *hg = clg_graph_new();
  clg_session *h = NULL;
  CHECK_OK(clg_process_helper_session(hg, &h));
  CHECK(h && clg_devices_count(clg_session_devices(h)) == 1);
  CHECK_OK(clg_session_new(g, &so, &s));
  free(got);
  got = s ? names_of(clg_session_devices(s)) : NULL;
  CHECK(want && got && strcmp(want, got) == 0);
  if (s) {
    clg_tensor *out = NULL;
    CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 1, &y, &out, 0, NULL));
    const int32_t *o = out ? clg_tensor_const_data(out) : NULL;
    CHECK(o && o[0] == 5 && o[1] == 7);
    clg_tensor_free(out);
  }
  clg_session_free(h);
  clg_session_free(s);
  clg_graph_free(hg);
  check_helper_run(1); /* every state released: the helpers' is the host's again */
  free(want);
  free(got);
  clg_devices_free(ref);
  clg_import_result_free(r);
  clg_graph_free(g);
  return clg_test_summary("test_import_cost");
}
