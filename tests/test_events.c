/* Events across device kinds (device.h): each kind's events carry their kind's table, and a
 * device's chain makes its later work wait for any kind's event. Checked here by what the
 * chained work reads:
 *  - host -> OpenCL -> host: a host thread fills a buffer and signals a host event; GPU:0's
 *    chain waits for it, then uploads the buffer and copies it on its queue; the host's chain
 *    waits for the copy's OpenCL event, and the result is the thread's data;
 *  - a failed host event: every chain and wait returns its code and message;
 *  - OpenCL queue -> another OpenCL device: a large copy on GPU:0, GPU:1 chained after its
 *    event (a barrier on GPU:1's queue), then GPU:1 copies the copy's destination; what GPU:1
 *    read is the new data, never the old, and its copy started after GPU:0's ended;
 *  - the runner: an update of a variable on one GPU waits for the copy another GPU is still
 *    making of it (a large variable, so that the copy is still running). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "testutil.h"

enum { N = 8 << 20, ROUNDS = 3 }; /* 32 MiB of floats: a copy takes milliseconds on PoCL */

/* Element i of pattern k (exact in float). */
static float pattern(int k, size_t i) { return (float)(k * 1000 + (int)(i % 997)); }

static void fill(float *p, int k)
{
  for (size_t i = 0; i < N; i++)
    p[i] = pattern(k, i);
}

/* The first element that is not pattern k's, or N. */
static size_t mismatch(const float *p, int k)
{
  for (size_t i = 0; i < N; i++)
    if (p[i] != pattern(k, i))
      return i;
  return N;
}

static void sleep_ms(unsigned ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

typedef struct producer {
  float *data;
  clg_event *done;
  unsigned ms;
  clg_code code;
  uint64_t signalled_ns;
} producer;

/* Host work beside the test's thread: fills data after a while, then signals its event. */
static void *produce(void *arg)
{
  producer *p = arg;
  sleep_ms(p->ms);
  if (p->code == CLG_OK)
    fill(p->data, 1);
  p->signalled_ns = clg_now_ns();
  clg_host_event_signal(p->done, p->code, "the producer stopped");
  return NULL;
}

typedef struct env {
  clg_device *host, *g0, *g1;
  const clg_device_ops *hops, *ops0, *ops1;
  clg_block a, b, c; /* a, b on GPU:0, c on GPU:1 */
  float *buf;
} env;

static void host_opencl_host(env *e)
{
  clg_event *he = NULL;
  CHECK_OK(clg_host_event_new(&he));
  if (!he)
    return;
  CHECK(clg_event_is(he, e->hops->events) && !clg_event_done(he));
  memset(e->buf, 0, sizeof(float) * N);
  producer p = {e->buf, he, 150, CLG_OK, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, produce, &p) == 0);
  /* Across kinds GPU:0 waits on the host: chain returns once the thread has signalled. */
  CHECK_OK(e->ops0->chain(e->g0, 1, &he));
  uint64_t back = clg_now_ns();
  CHECK(clg_event_done(he));
  CHECK_OK(e->ops0->upload(e->g0, &e->a, e->buf, sizeof(float) * N));
  clg_event *copied = NULL;
  /* A done host event in a copy's wait list is waited for on the host, at once. */
  CHECK_OK(e->ops0->copy_from_peer(e->g0, &e->b, e->g0, &e->a, sizeof(float) * N, 1, &he, &copied));
  pthread_join(t, NULL);
  CHECK_MSG(back >= p.signalled_ns, "GPU:0's chain returned %.3f ms before the host event",
            (double)(p.signalled_ns - back) / 1e6);
  CHECK(copied && clg_event_is(copied, e->ops0->events) && clg_cl_event_of(copied));
  /* OpenCL -> host: the host's chain returns after the copy has completed. */
  CHECK_OK(e->hops->chain(e->host, 1, &copied));
  CHECK(clg_event_done(copied));
  uint64_t s = 0, en = 0;
  CHECK_OK(clg_event_times(copied, &s, &en));
  CHECK(en >= s && s > 0);
  CHECK_CODE(clg_event_times(he, &s, &en), CLG_FAILED_PRECONDITION);
  memset(e->buf, 0, sizeof(float) * N);
  CHECK_OK(e->ops0->download(e->g0, &e->b, e->buf, sizeof(float) * N));
  size_t at = mismatch(e->buf, 1);
  CHECK_MSG(at == N, "host -> GPU:0 -> host: element %zu is %g, want %g", at,
            at < N ? (double)e->buf[at] : 0.0, at < N ? (double)pattern(1, at) : 0.0);
  /* Retained events outlive their first holder. */
  clg_event *again = clg_event_retain(copied);
  clg_event_release(copied);
  CHECK(clg_event_done(again));
  clg_event_release(again);
  clg_event_release(he);
}

static void failed_host_event(env *e)
{
  clg_event *he = NULL;
  CHECK_OK(clg_host_event_new(&he));
  if (!he)
    return;
  producer p = {e->buf, he, 20, CLG_ABORTED, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, produce, &p) == 0);
  clg_event *list[3] = {NULL, he, NULL};
  CHECK_CODE(e->ops0->chain(e->g0, 3, list), CLG_ABORTED);
  CHECK_CONTAINS(clg_last_error(), "waiting for an event (host) before work on ");
  CHECK_CONTAINS(clg_last_error(), e->g0->info.name);
  CHECK_CONTAINS(clg_last_error(), "the producer stopped");
  pthread_join(t, NULL);
  CHECK_CODE(e->hops->chain(e->host, 1, &he), CLG_ABORTED);
  CHECK_CODE(clg_event_wait(3, list), CLG_ABORTED);
  CHECK_STR(clg_last_error(), "the producer stopped");
  clg_event *copied = NULL;
  CHECK_CODE(e->ops1->copy_from_peer(e->g1, &e->c, e->g0, &e->b, 64, 1, &he, &copied), CLG_ABORTED);
  CHECK(copied == NULL);
  /* Signalled once; only host events are signalled. */
  CHECK_CODE(clg_host_event_signal(he, CLG_OK, NULL), CLG_FAILED_PRECONDITION);
  CHECK_CODE(clg_host_event_signal(NULL, CLG_OK, NULL), CLG_INVALID_ARGUMENT);
  clg_event *marker = NULL;
  CHECK_OK(e->ops0->marker(e->g0, &marker));
  CHECK_CODE(clg_host_event_signal(marker, CLG_OK, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "signalling OpenCL: not a host event");
  clg_event_release(marker);
  clg_event_release(he);
  /* Nothing to wait for: NULL entries and an empty list. */
  CHECK_OK(e->ops1->chain(e->g1, 0, NULL));
  CHECK_OK(e->hops->chain(e->host, 3, (clg_event *[3]){NULL, NULL, NULL}));
}

/* GPU:0's queue -> GPU:1's queue, ROUNDS times with a new pattern each. */
static void opencl_to_opencl(env *e)
{
  int64_t off0 = 0, off1 = 0;
  uint64_t err0 = 0, err1 = 0;
  CHECK_OK(e->ops0->clock_offset(e->g0, &off0, &err0));
  CHECK_OK(e->ops1->clock_offset(e->g1, &off1, &err1));
  for (int r = 0; r < ROUNDS; r++) {
    int k = 2 + r;
    fill(e->buf, k);
    CHECK_OK(e->ops0->upload(e->g0, &e->a, e->buf, sizeof(float) * N));
    /* b holds the previous round's pattern until GPU:0's copy has written it. */
    clg_event *e0 = NULL, *e1 = NULL;
    CHECK_OK(e->ops0->copy_from_peer(e->g0, &e->b, e->g0, &e->a, sizeof(float) * N, 0, NULL, &e0));
    /* More than a stack's worth of entries, most of them NULL. */
    clg_event *list[12] = {NULL};
    list[7] = e0;
    CHECK_OK(e->ops1->chain(e->g1, 12, list));
    CHECK_OK(e->ops1->copy_from_peer(e->g1, &e->c, e->g0, &e->b, sizeof(float) * N, 0, NULL, &e1));
    memset(e->buf, 0, sizeof(float) * N);
    CHECK_OK(e->ops1->download(e->g1, &e->c, e->buf, sizeof(float) * N));
    size_t at = mismatch(e->buf, k);
    CHECK_MSG(at == N, "round %d: GPU:1 read element %zu of GPU:0's copy as %g, want %g", r, at,
              at < N ? (double)e->buf[at] : 0.0, at < N ? (double)pattern(k, at) : 0.0);
    CHECK(clg_event_done(e0) && clg_event_done(e1));
    uint64_t s0 = 0, end0 = 0, s1 = 0, end1 = 0;
    CHECK_OK(clg_event_times(e0, &s0, &end0));
    CHECK_OK(clg_event_times(e1, &s1, &end1));
    /* On the host's clock, within the offsets' errors. */
    double ended = (double)end0 + (double)off0, started = (double)s1 + (double)off1;
    CHECK_MSG(started + (double)(err0 + err1) >= ended,
              "round %d: GPU:1's copy started %.3f ms before GPU:0's ended (error %.3f ms)", r,
              (ended - started) / 1e6, (double)(err0 + err1) / 1e6);
    clg_event_release(e0);
    clg_event_release(e1);
  }
}

/* v (N floats) on GPU:0, read on GPU:1 (a copy on GPU:1's queue), then AssignAdd on GPU:0
 * after the read (a control input): the read sees the old values every run. */
static void runner_update_after_copy(void)
{
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {N};
  clg_initializer z = clg_init_zeros(), o = clg_init_ones();
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:0"));
  clg_node *v = clg_get_variable(g, "v", CLG_FLOAT32, 1, dims, &z);
  clg_node *ones = clg_initializer_op(g, "ones", &o, CLG_FLOAT32, 1, dims);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
  clg_node *before = clg_identity(g, "before", v);
  int64_t axis = 0;
  clg_node *sum = clg_sum(g, "sum", before, 1, &axis, false);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:0"));
  clg_node *upd = clg_assign_add(g, "upd", v, ones);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_node_add_control_input(upd, before));
  CHECK_OK(clg_graph_status(g));
  clg_session_options opt;
  clg_session_options_init(&opt);
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  if (!s) {
    clg_graph_free(g);
    return;
  }
  clg_node *init = clg_global_variables_initializer(g, NULL);
  CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &init));
  for (int r = 0; r < 4; r++) {
    clg_output f[1] = {clg_out(sum, 0)};
    clg_tensor *t[1] = {NULL};
    CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 1, f, t, 1, &upd));
    if (t[0]) {
      double want = (double)r * N, got = ((const float *)clg_tensor_const_data(t[0]))[0];
      CHECK_MSG(got == want, "run %d: GPU:1 read a sum of %.0f, want %.0f", r, got, want);
    }
    clg_tensor_free(t[0]);
  }
  clg_session_free(s);
  clg_graph_free(g);
}

int main(void)
{
  if (!clg_test_require_gpus(2))
    return clg_test_summary("test_events");
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_devices *set = NULL;
  CHECK_OK(clg_devices_new(&cfg, &set));
  if (!set)
    return clg_test_summary("test_events");
  env e;
  memset(&e, 0, sizeof e);
  e.host = clg_devices_at(set, 0);
  e.g0 = clg_devices_at(set, 1);
  e.g1 = clg_devices_at(set, 2);
  e.hops = clg_device_ops_of(e.host);
  e.ops0 = clg_device_ops_of(e.g0);
  e.ops1 = clg_device_ops_of(e.g1);
  CHECK(e.hops->events == &clg_host_event_ops && e.ops0->events == &clg_cl_event_ops);
  /* The stand-ins share one context: GPU:1's queue can wait for GPU:0's events. */
  CHECK(clg_cl_context(e.g0) == clg_cl_context(e.g1));
  clg_memory_options mo;
  memset(&mo, 0, sizeof mo);
  mo.allow_growth = 1;
  clg_allocator *al0 = NULL, *al1 = NULL;
  CHECK_OK(clg_allocator_new(e.g0, &mo, &al0));
  CHECK_OK(clg_allocator_new(e.g1, &mo, &al1));
  e.buf = malloc(sizeof(float) * N);
  if (al0 && al1 && e.buf && clg_allocator_alloc(al0, sizeof(float) * N, &e.a) == CLG_OK &&
      clg_allocator_alloc(al0, sizeof(float) * N, &e.b) == CLG_OK &&
      clg_allocator_alloc(al1, sizeof(float) * N, &e.c) == CLG_OK) {
    host_opencl_host(&e);
    failed_host_event(&e);
    opencl_to_opencl(&e);
    clg_allocator_free(al0, &e.a, NULL);
    clg_allocator_free(al0, &e.b, NULL);
    clg_allocator_free(al1, &e.c, NULL);
  } else {
    CHECK_MSG(false, "no room for the test's blocks: %s", clg_last_error());
  }
  free(e.buf);
  clg_allocator_destroy(al0);
  clg_allocator_destroy(al1);
  clg_devices_free(set);
  runner_update_after_copy();
  return clg_test_summary("test_events");
}
