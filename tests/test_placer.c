/* Placement rules, tested on the pure placer (graph + devices -> a device per node):
 * explicit specs, the default rule, generators following consumers, Identity following
 * its input, nested scopes, soft placement, and TensorFlow's error texts. */
#include <stdlib.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "ops/ops.h"
#include "runtime/runtime.h"
#include "testutil.h"

static clg_devices *devs;
static const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d22[2] = {2, 2};
static const float v6[6] = {1, 2, 3, 4, 5, 6};

/* Places g; returns the placements (caller frees) or NULL with the error recorded. */
static clg_placement *place(clg_graph *g, bool soft)
{
  int n = clg_graph_num_nodes(g);
  clg_placement *pl = calloc((size_t)n + 1, sizeof *pl);
  if (clg_place(g, devs, soft, pl) != CLG_OK) {
    free(pl);
    return NULL;
  }
  return pl;
}

static const char *dev_name(const clg_placement *pl, clg_node *n)
{
  return clg_devices_get(devs, pl[n->index].device)->name;
}

static void test_default_prefers_gpu0(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_const_f32(g, "a", 2, d23, v6);
  clg_node *b = clg_const_f32(g, "b", 2, d32, v6);
  clg_node *c = clg_matmul(g, NULL, a, b, false, false);
  clg_placement *pl = place(g, false);
  CHECK(pl != NULL);
  if (pl) {
#ifdef CLG_HAVE_CLBLAST
    CHECK_STR(dev_name(pl, c), "/device:GPU:0");
    CHECK_STR(dev_name(pl, a), "/device:GPU:0");
    CHECK_STR(pl[c->index].reason, "default: lowest-id GPU with a kernel for MatMul");
#else /* no OpenCL MatMul: the default rule falls to CPU:0 and the inputs follow */
    CHECK_STR(dev_name(pl, c), "/device:CPU:0");
    CHECK_STR(dev_name(pl, a), "/device:CPU:0");
    CHECK_STR(pl[c->index].reason, "default: no GPU has a kernel for MatMul (float); CPU:0");
#endif
    CHECK_STR(pl[b->index].reason, "follows its consumer 'MatMul'");
  }
  free(pl);
  clg_graph_free(g);
}

static void test_explicit_and_nested(void)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/job:localhost/replica:0"));
  CHECK_OK(clg_graph_push_device(g, "/gpu:3"));
  clg_node *a = clg_const_f32(g, "a", 2, d22, v6);
  CHECK_OK(clg_graph_push_device(g, "/device:CPU:0"));
  clg_node *b = clg_const_f32(g, "b", 2, d22, v6);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *s = clg_add(g, "s", a, b);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *t = clg_mul(g, "t", s, s);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_STR(clg_node_requested_device(s), "/job:localhost/replica:0/device:GPU:3");
  clg_placement *pl = place(g, false);
  CHECK(pl != NULL);
  if (pl) {
    CHECK_STR(dev_name(pl, a), "/device:GPU:3");
    CHECK_STR(dev_name(pl, b), "/device:CPU:0");
    CHECK_STR(dev_name(pl, s), "/device:GPU:3");
    CHECK_STR(pl[s->index].reason,
              "explicit device specification '/job:localhost/replica:0/device:GPU:3'");
    CHECK_STR(dev_name(pl, t), "/device:GPU:0");
  }
  free(pl);
  clg_graph_free(g);
}

static void test_generator_rules(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *x = clg_const_f32(g, "x", 2, d22, v6);
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
  clg_node *u = clg_identity(g, "u", x);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:2"));
  clg_node *v = clg_identity(g, "v", x);
  CHECK_OK(clg_graph_pop_device(g));
  /* A generator whose consumers disagree takes the default rule. */
  clg_node *y = clg_const_f32(g, "y", 2, d22, v6);
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
  clg_node *w = clg_add(g, "w", y, y);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *id = clg_identity(g, "id", w); /* follows its input */
  clg_node *lonely = clg_const_f32(g, "lonely", 2, d22, v6);
  clg_placement *pl = place(g, false);
  CHECK(pl != NULL);
  if (pl) {
    CHECK_STR(dev_name(pl, u), "/device:GPU:1");
    CHECK_STR(dev_name(pl, v), "/device:GPU:2");
    CHECK_STR(dev_name(pl, x), "/device:GPU:0");
    CHECK_STR(pl[x->index].reason, "default: lowest-id GPU with a kernel for Const");
    CHECK_STR(dev_name(pl, y), "/device:GPU:1");
    CHECK_STR(pl[y->index].reason, "follows its 2 consumers ('w', ...), all on one device");
    CHECK_STR(dev_name(pl, id), "/device:GPU:1");
    CHECK_STR(pl[id->index].reason, "follows its input 'w'");
    CHECK_STR(dev_name(pl, lonely), "/device:GPU:0");
  }
  free(pl);
  clg_graph_free(g);
}

static void test_missing_device(void)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:9"));
  clg_node *a = clg_const_f32(g, "a", 2, d22, v6);
  clg_node *n = clg_identity(g, NULL, a);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK(place(g, false) == NULL);
  CHECK_CODE(clg_last_code(), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(),
                 "Cannot assign a device to node 'a': Could not satisfy explicit device "
                 "specification '/device:GPU:9' because no devices matching that specification "
                 "are registered in this process; available devices: "
                 "/job:localhost/replica:0/task:0/device:CPU:0, "
                 "/job:localhost/replica:0/task:0/device:GPU:0, ");
  clg_test_log_capture_start(CLG_LOG_INFO);
  clg_placement *pl = place(g, true);
  const char *log = clg_test_log_capture_stop();
  CHECK(pl != NULL);
  if (pl) {
    CHECK_STR(dev_name(pl, n), "/device:GPU:0");
    CHECK_STR(pl[n->index].reason,
              "soft placement: no device matches '/device:GPU:9'; lowest-id GPU with a kernel");
  }
  CHECK_CONTAINS(log, "Soft placement: node 'Identity' (Identity) requested '/device:GPU:9'");
  free(pl);
  clg_graph_free(g);

  /* A job that is not ours never matches, soft placement or not. */
  g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/job:worker/device:GPU:0"));
  clg_const_f32(g, "a", 2, d22, v6);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK(place(g, true) == NULL);
  CHECK_CONTAINS(clg_last_error(), "'/job:worker/device:GPU:0'");
  clg_graph_free(g);
}

static void test_cpu_spec_variants(void)
{
  const char *specs[] = {"/cpu:0",
                         "/CPU:0",
                         "/device:CPU:0",
                         "/device:cpu:0",
                         "/job:localhost/replica:0/task:0/cpu:0",
                         "/device:CPU:*",
                         "/cpu:*"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    clg_graph *g = clg_graph_new();
    CHECK_OK(clg_graph_push_device(g, specs[i]));
    clg_node *a = clg_const_f32(g, "a", 2, d22, v6);
    CHECK_OK(clg_graph_pop_device(g));
    clg_placement *pl = place(g, false);
    CHECK_MSG(pl && strcmp(dev_name(pl, a), "/device:CPU:0") == 0, "spec %s: %s", specs[i],
              pl ? dev_name(pl, a) : clg_last_error());
    free(pl);
    clg_graph_free(g);
  }
  /* "/device:GPU:*" takes the lowest-id GPU. */
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:*"));
  clg_node *a = clg_const_f32(g, "a", 2, d22, v6);
  clg_node *b = clg_add(g, "b", a, a);
  CHECK_OK(clg_graph_pop_device(g));
  clg_placement *pl = place(g, false);
  CHECK(pl && strcmp(dev_name(pl, b), "/device:GPU:0") == 0);
  free(pl);
  clg_graph_free(g);
}

/* An op with no kernel on the requested device type: float16 Add has no kernel anywhere
 * (element-wise ops are float and double only); on the GPU it is TensorFlow's "no
 * supported kernel" error, and soft placement finds no device either. */
static void test_no_kernel(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_placeholder(g, "a", CLG_FLOAT16, 2, d22);
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:0"));
  clg_node *m = clg_add(g, "m", a, a);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_MSG(m != NULL, "float16 Add could not be built: %s", clg_graph_error(g));
  CHECK(!clg_backend_supported("Add", CLG_FLOAT16, clg_devices_at(devs, 1)));
  CHECK(place(g, false) == NULL);
  CHECK_CONTAINS(clg_last_error(),
                 "Cannot assign a device to node 'm': Could not satisfy explicit device "
                 "specification '/device:GPU:0' because no supported kernel for GPU devices "
                 "is available (op Add, dtype half)");
  CHECK(place(g, true) == NULL);
  CHECK_CONTAINS(clg_last_error(), "no supported kernel for GPU devices");
  clg_graph_free(g);

  /* An unspecified node with no kernel anywhere. */
  g = clg_graph_new();
  a = clg_placeholder(g, "a", CLG_FLOAT16, 2, d22);
  clg_sub(g, "s", a, a);
  CHECK(place(g, false) == NULL);
  CHECK_CONTAINS(clg_last_error(), "Node had no OpKernel registered to support this operation: "
                                   "Operation was Sub and inputs were [half]");
  clg_graph_free(g);
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_placer");
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  CHECK_OK(clg_devices_new(&cfg, &devs));
  test_default_prefers_gpu0();
  test_explicit_and_nested();
  test_generator_rules();
  test_missing_device();
  test_cpu_spec_variants();
  test_no_kernel();
  clg_devices_free(devs);
  return clg_test_summary("test_placer");
}
