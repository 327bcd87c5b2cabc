/* Sessions: options, placement, the placement log, runs and memory statistics. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "runtime/runtime.h"

struct clg_session {
  clg_graph *graph;
  clg_session_options opt;
  clg_process *proc;
  pthread_mutex_t lock; /* serialises runs */
  int placed;           /* nodes placed (the graph may grow after creation) */
  bool tracing;
  clg_placement *placement;
  clg_executor *exec;
};

void clg_session_options_init(clg_session_options *opt)
{
  if (opt)
    memset(opt, 0, sizeof *opt);
}

/* The placement log in the guide's form: the device mapping, then "name: device" per node
 * in graph order (TensorFlow's order is an accident of its internals). Reasons follow at
 * debug level. */
static void log_placement(clg_session *s, int from)
{
  clg_devices *devs = clg_process_devices(s->proc);
  if (from == 0) {
    char *mapping = clg_devices_mapping_string(devs);
    if (mapping) {
      size_t len = strlen(mapping);
      if (len && mapping[len - 1] == '\n')
        mapping[len - 1] = '\0';
      clg_log(CLG_LOG_INFO, "%s", mapping);
      free(mapping);
    }
  }
  int *order = malloc(sizeof(int) * (size_t)(s->placed > 0 ? s->placed : 1));
  if (!order)
    return;
  clg_placement_order(s->graph, s->placed, order);
  for (int k = 0; k < s->placed; k++) {
    int i = order[k];
    if (i < from)
      continue;
    const clg_node *n = clg_graph_node(s->graph, i);
    const clg_device_info *d = clg_devices_get(devs, s->placement[i].device);
    clg_log(CLG_LOG_INFO, "%s: %s", n->name, d->full_name);
    clg_log(CLG_LOG_DEBUG, "%s: %s (%s)", n->name, d->full_name, s->placement[i].reason);
  }
  free(order);
}

/* Places every node (again, when the graph has grown) and rebuilds the executor. */
static clg_code session_place(clg_session *s)
{
  int nn = clg_graph_num_nodes(s->graph);
  if (nn == s->placed && s->exec)
    return CLG_OK;
  clg_placement *pl = malloc(sizeof *pl * (size_t)(nn > 0 ? nn : 1));
  if (!pl)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
  clg_code code =
      clg_place(s->graph, clg_process_devices(s->proc), s->opt.allow_soft_placement, pl);
  clg_executor *x = NULL;
  if (code == CLG_OK)
    code = clg_executor_new(s->proc, s->graph, pl, &x);
  if (code != CLG_OK) {
    free(pl);
    return code;
  }
  if (s->tracing && (code = clg_executor_set_tracing(x, true)) != CLG_OK) {
    clg_executor_free(x);
    free(pl);
    return code;
  }
  clg_executor_free(s->exec);
  free(s->placement);
  int from = s->placed;
  s->exec = x;
  s->placement = pl;
  s->placed = nn;
  if (s->opt.log_device_placement)
    log_placement(s, from);
  return CLG_OK;
}

static clg_code warm_matmul(clg_session *s)
{
  clg_devices *devs = clg_process_devices(s->proc);
  for (int i = 0; i < s->placed; i++) {
    const clg_node *n = clg_graph_node(s->graph, i);
    clg_device *dev = clg_devices_at(devs, s->placement[i].device);
    if (strcmp(n->op, "MatMul") != 0 || dev->is_host)
      continue;
    clg_code code = clg_cl_warm_matmul(dev, n->dtype);
    if (code != CLG_OK && code != CLG_UNIMPLEMENTED)
      return clg_error_prefix("warming MatMul on %s: ", dev->info.name);
  }
  return CLG_OK;
}

clg_code clg_session_new(clg_graph *g, const clg_session_options *opt, clg_session **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_new: out is NULL");
  *out = NULL;
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_new: graph is NULL");
  if (clg_graph_status(g) != CLG_OK)
    return clg_error(clg_graph_status(g), "the graph has a builder error: %s", clg_graph_error(g));
  clg_session_options defaults;
  clg_session_options_init(&defaults);
  clg_session *s = calloc(1, sizeof *s);
  if (!s)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating a session");
  s->graph = g;
  s->opt = opt ? *opt : defaults;
  /* The session keeps no pointers into the caller's options. */
  s->opt.visible_device_list = NULL;
  s->opt.virtual_devices = NULL;
  pthread_mutex_init(&s->lock, NULL);
  clg_code code = clg_process_acquire(opt ? opt : &defaults, &s->proc);
  if (code == CLG_OK)
    code = session_place(s);
  if (code == CLG_OK && s->opt.warm_matmul)
    code = warm_matmul(s);
  if (code != CLG_OK) {
    clg_session_free(s);
    return code;
  }
  *out = s;
  return CLG_OK;
}

void clg_session_free(clg_session *s)
{
  if (!s)
    return;
  clg_executor_free(s->exec);
  free(s->placement);
  clg_process_release(s->proc);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

clg_code clg_session_run(clg_session *s, int num_feeds, clg_node *const *feed_nodes,
                         clg_tensor *const *feeds, int num_fetches, clg_node *const *fetches,
                         clg_tensor **outputs)
{
  if (!s)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_run: session is NULL");
  pthread_mutex_lock(&s->lock);
  clg_code code = clg_graph_status(s->graph);
  if (code != CLG_OK)
    code = clg_error(code, "the graph has a builder error: %s", clg_graph_error(s->graph));
  if (code == CLG_OK)
    code = session_place(s);
  if (code == CLG_OK)
    code = clg_executor_run(s->exec, num_feeds, feed_nodes, feeds, num_fetches, fetches, outputs);
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_set_tracing(clg_session *s, int on)
{
  if (!s)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_set_tracing: session is NULL");
  pthread_mutex_lock(&s->lock);
  clg_code code = clg_executor_set_tracing(s->exec, on != 0);
  if (code == CLG_OK)
    s->tracing = on != 0;
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_node_times(clg_session *s, const clg_node *n, uint64_t *start_ns,
                                uint64_t *end_ns)
{
  if (!s || !n || !start_ns || !end_ns)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_node_times: a NULL argument");
  if (n->graph != s->graph || n->index >= s->placed)
    return clg_error(CLG_INVALID_ARGUMENT, "node '%s' is not placed in this session", n->name);
  pthread_mutex_lock(&s->lock);
  clg_code code = clg_executor_node_times(s->exec, n, start_ns, end_ns);
  pthread_mutex_unlock(&s->lock);
  return code;
}

const clg_devices *clg_session_devices(const clg_session *s)
{
  return s ? clg_process_devices(s->proc) : NULL;
}

static const clg_placement *placement_of(const clg_session *s, const clg_node *n)
{
  if (!s || !n || n->graph != s->graph || n->index >= s->placed)
    return NULL;
  return &s->placement[n->index];
}

const char *clg_session_node_device(const clg_session *s, const clg_node *n)
{
  const clg_placement *p = placement_of(s, n);
  return p ? clg_devices_get(clg_process_devices(s->proc), p->device)->full_name : NULL;
}

const char *clg_session_node_reason(const clg_session *s, const clg_node *n)
{
  const clg_placement *p = placement_of(s, n);
  return p ? p->reason : NULL;
}

static clg_code find_allocator(clg_session *s, const char *device, clg_allocator **out)
{
  if (!s || !device)
    return clg_error(CLG_INVALID_ARGUMENT, "session or device name is NULL");
  clg_devices *devs = clg_process_devices(s->proc);
  const clg_device_info *d = clg_devices_find(devs, device);
  if (!d)
    return clg_error(CLG_NOT_FOUND, "Allocator stats not available for device '%s': no such device",
                     device);
  return clg_process_allocator(s->proc, d->index, out);
}

clg_code clg_session_memory_stats(clg_session *s, const char *device, clg_memory_stats *out)
{
  clg_allocator *a;
  clg_code code = find_allocator(s, device, &a);
  if (code != CLG_OK)
    return code;
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_memory_stats: out is NULL");
  clg_allocator_stats(a, out);
  return CLG_OK;
}

clg_code clg_session_reset_memory_stats(clg_session *s, const char *device)
{
  clg_allocator *a;
  clg_code code = find_allocator(s, device, &a);
  if (code == CLG_OK)
    clg_allocator_reset_peak(a);
  return code;
}

char *clg_session_memory_dump(clg_session *s, const char *device, int json)
{
  clg_allocator *a;
  if (find_allocator(s, device, &a) != CLG_OK)
    return NULL;
  return clg_allocator_dump(a, json != 0);
}
