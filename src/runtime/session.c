/* Sessions: options, placement, the placement log, runs and memory statistics. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "cluster/cluster.h"
#include "runtime/runtime.h"

/* Every distinct reason a node has been given, kept until the session is freed: a string
 * returned by clg_session_node_reason stays valid that long, though a later run re-places a
 * grown graph. A node keeps its reason when others are added, so this holds about one
 * string per node rather than every placement ever made. */
typedef struct reason {
  struct reason *next;
  char text[];
} reason;

struct clg_session {
  clg_graph *graph;
  clg_session_options opt;
  clg_process *proc;
  pthread_mutex_t lock;       /* serialises runs */
  pthread_mutex_t place_lock; /* guards placed and placement for readers */
  int placed;                 /* nodes placed (the graph may grow after creation) */
  uint64_t version;           /* the graph version placed */
  bool tracing;
  clg_placement *placement;
  reason **reasons;    /* per node: the reasons it has had, its current one first */
  int nreasons;        /* nodes in reasons (placed or more) */
  size_t reason_bytes; /* held by them */
  clg_executor *exec;
  clg_var_store *vars; /* outlives executors: the graph may grow between runs */
  /* Pictures (drawn by tracing.c): the traces of the last trace_keep runs, oldest first,
   * and where an OOM writes its memory map (NULL: the default path; "": nowhere). */
  int trace_keep, nruns;
  clg_run_trace **runs;
  uint64_t run_count;
  char *oom_map;
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

/* Makes each node's reason in pl its current one (under place_lock): the reason of the
 * node's list with that text, moved to the front, else a new one. The new ones are made
 * first, at the back of the lists, so that running out of memory changes no current one. */
static clg_code keep_reasons(clg_session *s, const clg_placement *pl, int nn)
{
  if (nn > s->nreasons) {
    reason **grown = realloc(s->reasons, sizeof *grown * (size_t)nn);
    if (!grown)
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
    memset(grown + s->nreasons, 0, sizeof *grown * (size_t)(nn - s->nreasons));
    s->reasons = grown;
    s->nreasons = nn;
  }
  for (int i = 0; i < nn; i++) {
    reason **at = &s->reasons[i];
    while (*at && strcmp((*at)->text, pl[i].reason) != 0)
      at = &(*at)->next;
    if (*at)
      continue;
    size_t len = strlen(pl[i].reason) + 1;
    if (!(*at = malloc(sizeof **at + len)))
      return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
    (*at)->next = NULL;
    memcpy((*at)->text, pl[i].reason, len);
    s->reason_bytes += sizeof **at + len;
  }
  for (int i = 0; i < nn; i++) {
    reason **at = &s->reasons[i];
    while (strcmp((*at)->text, pl[i].reason) != 0)
      at = &(*at)->next;
    reason *r = *at;
    *at = r->next;
    r->next = s->reasons[i];
    s->reasons[i] = r;
  }
  return CLG_OK;
}

/* Places every node (again, when the graph has grown) and rebuilds the executor. */
static clg_code session_place(clg_session *s)
{
  int nn = clg_graph_num_nodes(s->graph);
  if (clg_graph_version(s->graph) == s->version && s->exec)
    return CLG_OK;
  clg_placement *pl = malloc(sizeof *pl * (size_t)(nn > 0 ? nn : 1));
  if (!pl)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
  clg_code code =
      clg_place(s->graph, clg_process_devices(s->proc), s->opt.allow_soft_placement, pl);
  clg_executor *x = NULL;
  if (code == CLG_OK)
    code = clg_executor_new(s->proc, s->graph, pl, s->vars, &x);
  if (code != CLG_OK) {
    free(pl);
    return code;
  }
  if ((s->tracing || s->trace_keep > 0) && (code = clg_executor_set_tracing(x, true)) != CLG_OK) {
    clg_executor_free(x);
    free(pl);
    return code;
  }
  int from = s->placed;
  pthread_mutex_lock(&s->place_lock);
  code = keep_reasons(s, pl, nn);
  if (code != CLG_OK) { /* the nodes placed so far keep their reasons */
    pthread_mutex_unlock(&s->place_lock);
    clg_executor_free(x);
    free(pl);
    return code;
  }
  free(s->placement); /* readers hold only reasons */
  s->placement = pl;
  s->placed = nn;
  s->version = clg_graph_version(s->graph);
  pthread_mutex_unlock(&s->place_lock);
  clg_executor_free(s->exec);
  s->exec = x;
  if (s->opt.log_device_placement)
    log_placement(s, from);
  return CLG_OK;
}

/* Compiles what the first run would compile (CLBlast's GEMM, for one). */
static clg_code warm_kernels(clg_session *s)
{
  clg_devices *devs = clg_process_devices(s->proc);
  for (int i = 0; i < s->placed; i++) {
    const clg_node *n = clg_graph_node(s->graph, i);
    clg_device *dev = clg_devices_at(devs, s->placement[i].device);
    const clg_kernel_def *k = clg_backend_find_kernel(n, dev);
    if (k && k->warm && k->warm(n, dev) != CLG_OK)
      return clg_error_prefix("warming %s on %s: ", n->op, dev->info.name);
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
  s->opt.cluster = NULL;
  s->opt.oom_memory_map = NULL;
  s->trace_keep = opt && opt->trace_runs > 0 ? opt->trace_runs : 0;
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->place_lock, NULL);
  clg_code code = CLG_OK;
  if (opt && opt->oom_memory_map && !(s->oom_map = clg_strdup(opt->oom_memory_map)))
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating a session");
  if (code == CLG_OK)
    code = clg_process_acquire(opt ? opt : &defaults, &s->proc);
  if (code == CLG_OK)
    code = clg_var_store_new(s->proc, &s->vars);
  if (code == CLG_OK)
    code = session_place(s);
  if (code == CLG_OK && s->opt.warm_matmul)
    code = warm_kernels(s);
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
  clg_var_store_free(s->vars);
  free(s->placement);
  for (int i = 0; i < s->nreasons; i++)
    for (reason *r = s->reasons[i], *next; r; r = next) {
      next = r->next;
      free(r);
    }
  free(s->reasons);
  for (int i = 0; i < s->nruns; i++)
    clg_run_trace_free(s->runs[i]);
  free(s->runs);
  free(s->oom_map);
  if (s->proc)
    clg_process_release(s->proc);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->place_lock);
  free(s);
}

/* --- pictures (the drawing is in tracing.c) ------------------------------------------------ */

/* Keeps the trace of the run that just ended, dropping the oldest beyond trace_keep. */
static void session_keep_trace(clg_session *s)
{
  clg_run_trace *r = clg_executor_take_trace(s->exec);
  if (!r)
    return;
  r->run = ++s->run_count;
  if (s->trace_keep <= 0) {
    clg_run_trace_free(r);
    return;
  }
  if (!s->runs && !(s->runs = calloc((size_t)s->trace_keep, sizeof *s->runs))) {
    clg_run_trace_free(r);
    return;
  }
  if (s->nruns == s->trace_keep) {
    clg_run_trace_free(s->runs[0]);
    memmove(s->runs, s->runs + 1, sizeof *s->runs * (size_t)(s->nruns - 1));
    s->nruns--;
  }
  s->runs[s->nruns++] = r;
}

/* After an out-of-memory error: the memory map of the device named in the message, written
 * where the options say; the message then names the file. */
static void session_oom_map(clg_session *s)
{
  if (s->oom_map && !s->oom_map[0])
    return;
  const clg_devices *devs = clg_process_devices(s->proc);
  char *msg = clg_strdup(clg_last_error());
  int dev = -1;
  for (int d = 0; msg && d < devs->count && dev < 0; d++) {
    char needle[256];
    snprintf(needle, sizeof needle, "%s by allocator", devs->devs[d].info.full_name);
    if (strstr(msg, needle))
      dev = d;
  }
  if (dev < 0) {
    free(msg);
    return;
  }
  char path[4096];
  if (s->oom_map) {
    snprintf(path, sizeof path, "%s", s->oom_map);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/clgraph-oom-%ld.svg", tmp && tmp[0] ? tmp : "/tmp",
             (long)getpid());
  }
  const clg_run_trace *last = s->nruns ? s->runs[s->nruns - 1] : NULL;
  char when[400];
  snprintf(when, sizeof when, "After a run ran out of memory: %.340s", msg);
  clg_code wrote = clg_runs_write_memory_map(s->proc, dev, last, when, path);
  if (wrote == CLG_OK)
    clg_error(CLG_RESOURCE_EXHAUSTED, "%s; memory map of %s: %s", msg,
              devs->devs[dev].info.full_name, path);
  else
    clg_error(CLG_RESOURCE_EXHAUSTED, "%s", msg); /* the map's own error is not the run's */
  free(msg);
}

clg_code clg_session_set_trace(clg_session *s, int last_n_runs)
{
  if (!s)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_set_trace: session is NULL");
  if (last_n_runs < 0)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_set_trace: last_n_runs is %d, want >= 0",
                     last_n_runs);
  pthread_mutex_lock(&s->lock);
  clg_code code = clg_executor_set_tracing(s->exec, s->tracing || last_n_runs > 0);
  if (code == CLG_OK) {
    for (int i = 0; i < s->nruns; i++)
      clg_run_trace_free(s->runs[i]);
    free(s->runs);
    s->runs = NULL;
    s->nruns = 0;
    s->trace_keep = last_n_runs;
  }
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_write_trace(clg_session *s, const char *path)
{
  if (!s || !path)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_write_trace: a NULL argument");
  pthread_mutex_lock(&s->lock);
  clg_code code =
      s->nruns
          ? clg_runs_write_trace(s->graph, clg_process_devices(s->proc), s->runs, s->nruns, path)
          : clg_error(CLG_FAILED_PRECONDITION,
                      "no traced run to write to '%s': call clg_session_set_trace before "
                      "running",
                      path);
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_profile(clg_session *s, clg_op_profile **rows, int *num_rows)
{
  if (!s || !rows || !num_rows)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_profile: a NULL argument");
  *rows = NULL;
  *num_rows = 0;
  pthread_mutex_lock(&s->lock);
  clg_code code =
      s->nruns ? clg_runs_profile(s->graph, clg_process_devices(s->proc), s->runs, s->nruns, rows,
                                  num_rows)
               : clg_error(CLG_FAILED_PRECONDITION,
                           "no traced run to profile: call clg_session_set_trace before running");
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_print_profile(clg_session *s, FILE *f)
{
  if (!f)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_print_profile: f is NULL");
  clg_op_profile *rows;
  int n;
  clg_code code = clg_session_profile(s, &rows, &n);
  if (code != CLG_OK)
    return code;
  pthread_mutex_lock(&s->lock);
  uint64_t wall = 0;
  for (int i = 0; i < s->nruns; i++)
    wall += s->runs[i]->end_ns - s->runs[i]->start_ns;
  int runs = s->nruns;
  pthread_mutex_unlock(&s->lock);
  clg_runs_print_profile(f, rows, n, runs, wall);
  free(rows);
  return CLG_OK;
}

clg_code clg_session_write_memory_map(clg_session *s, const char *device, const char *path)
{
  if (!s || !path)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_write_memory_map: a NULL argument");
  const clg_devices *devs = clg_process_devices(s->proc);
  int dev = -1;
  if (device) {
    const clg_device_info *d = clg_devices_find((clg_devices *)devs, device);
    if (!d)
      return clg_error(CLG_NOT_FOUND, "memory map: no device '%s' in this session", device);
    dev = d->index;
  }
  pthread_mutex_lock(&s->lock);
  clg_code code = CLG_OK;
  if (dev < 0) { /* the device with the most bytes in use */
    uint64_t most = 0;
    for (int d = 0; d < devs->count && code == CLG_OK; d++) {
      clg_allocator *a;
      clg_memory_stats st;
      if ((code = clg_process_allocator(s->proc, d, &a)) != CLG_OK)
        break;
      clg_allocator_stats(a, &st);
      if (dev < 0 || st.bytes_in_use > most) {
        dev = d;
        most = st.bytes_in_use;
      }
    }
  }
  char when[64];
  snprintf(when, sizeof when, "after run %llu of the session", (unsigned long long)s->run_count);
  if (code == CLG_OK)
    code = clg_runs_write_memory_map(s->proc, dev, s->nruns ? s->runs[s->nruns - 1] : NULL,
                                     s->run_count ? when : "before the first run", path);
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_run_outputs(clg_session *s, int num_feeds, const clg_output *feeds_at,
                                 clg_tensor *const *feeds, int num_fetches,
                                 const clg_output *fetches, clg_tensor **outputs, int num_targets,
                                 clg_node *const *targets)
{
  if (!s)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_run: session is NULL");
  pthread_mutex_lock(&s->lock);
  clg_code code = clg_graph_status(s->graph);
  if (code != CLG_OK)
    code = clg_error(code, "the graph has a builder error: %s", clg_graph_error(s->graph));
  if (code == CLG_OK)
    code = session_place(s);
  if (code == CLG_OK) {
    code = clg_executor_run(s->exec, num_feeds, feeds_at, feeds, num_fetches, fetches, outputs,
                            num_targets, targets);
    session_keep_trace(s);
    if (code == CLG_RESOURCE_EXHAUSTED)
      session_oom_map(s);
  }
  pthread_mutex_unlock(&s->lock);
  return code;
}

/* Nodes as their output 0; NULL lists stay NULL (the executor names the bad argument). */
static clg_output *as_outputs(int n, clg_node *const *nodes, clg_output *stack, int cap)
{
  if (n <= 0 || !nodes)
    return NULL;
  clg_output *o = n <= cap ? stack : malloc(sizeof *o * (size_t)n);
  for (int i = 0; o && i < n; i++)
    o[i] = clg_out(nodes[i], 0);
  return o;
}

clg_code clg_session_run(clg_session *s, int num_feeds, clg_node *const *feed_nodes,
                         clg_tensor *const *feeds, int num_fetches, clg_node *const *fetches,
                         clg_tensor **outputs)
{
  clg_output fs[8], ts[8];
  clg_output *f = as_outputs(num_feeds, feed_nodes, fs, 8);
  clg_output *t = as_outputs(num_fetches, fetches, ts, 8);
  clg_code code;
  if ((num_feeds > 8 && feed_nodes && !f) || (num_fetches > 8 && fetches && !t))
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a run's arguments");
  else
    code = clg_session_run_outputs(s, num_feeds, f, feeds, num_fetches, t, outputs, 0, NULL);
  if (f != fs)
    free(f);
  if (t != ts)
    free(t);
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
  pthread_mutex_lock(&s->lock);
  clg_code code =
      n->graph != s->graph || n->index >= s->placed
          ? clg_error(CLG_INVALID_ARGUMENT, "node '%s' is not placed in this session", n->name)
          : clg_executor_node_times(s->exec, n, start_ns, end_ns);
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_plan_stats(clg_session *s, clg_plan_stats *out)
{
  if (!s || !out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_plan_stats: a NULL argument");
  pthread_mutex_lock(&s->lock);
  clg_code code = s->exec ? clg_executor_plan_stats(s->exec, out)
                          : clg_error(CLG_FAILED_PRECONDITION, "no run has been planned");
  pthread_mutex_unlock(&s->lock);
  return code;
}

clg_code clg_session_lock_variables(clg_session *s, clg_session_vars *out)
{
  if (!s || !out)
    return clg_error(CLG_INVALID_ARGUMENT, "session is NULL");
  pthread_mutex_lock(&s->lock);
  clg_code code = clg_graph_status(s->graph);
  if (code != CLG_OK)
    code = clg_error(code, "the graph has a builder error: %s", clg_graph_error(s->graph));
  if (code == CLG_OK)
    code = session_place(s);
  if (code != CLG_OK) {
    pthread_mutex_unlock(&s->lock);
    return code;
  }
  out->graph = s->graph;
  out->proc = s->proc;
  out->vars = s->vars;
  out->placement = s->placement;
  return CLG_OK;
}

void clg_session_unlock_variables(clg_session *s) { pthread_mutex_unlock(&s->lock); }

size_t clg_session_placement_bytes(clg_session *s)
{
  pthread_mutex_lock(&s->place_lock);
  size_t n = (sizeof *s->placement + sizeof *s->reasons) * (size_t)s->placed + s->reason_bytes;
  pthread_mutex_unlock(&s->place_lock);
  return n;
}

/* --- cluster (issue 17) */
clg_cluster *clg_session_cluster(const clg_session *s)
{
  return s ? clg_process_cluster(s->proc) : NULL;
}

void clg_session_task(const clg_session *s, int *task, int *num_tasks)
{
  clg_cluster *c = clg_session_cluster(s);
  if (task)
    *task = clg_cluster_task(c);
  if (num_tasks)
    *num_tasks = clg_cluster_num_tasks(c);
}

int clg_session_is_chief(const clg_session *s)
{
  int task;
  clg_session_task(s, &task, NULL);
  return task == 0;
}

const clg_devices *clg_session_devices(const clg_session *s)
{
  return s ? clg_process_devices(s->proc) : NULL;
}

/* Reads n's device index and reason under the placement lock (runs may re-place
 * concurrently and free the placement array; the reasons stay). false: n is not placed. */
static bool placement_of(const clg_session *s, const clg_node *n, int *device, const char **why)
{
  if (!s || !n || n->graph != s->graph)
    return false;
  clg_session *ms = (clg_session *)s;
  pthread_mutex_lock(&ms->place_lock);
  bool placed = n->index < s->placed;
  if (placed) {
    *device = s->placement[n->index].device;
    *why = s->reasons[n->index]->text;
  }
  pthread_mutex_unlock(&ms->place_lock);
  return placed;
}

const char *clg_session_node_device(const clg_session *s, const clg_node *n)
{
  int d;
  const char *why;
  return placement_of(s, n, &d, &why) ? clg_devices_get(clg_process_devices(s->proc), d)->full_name
                                      : NULL;
}

const char *clg_session_node_reason(const clg_session *s, const clg_node *n)
{
  int d;
  const char *why;
  return placement_of(s, n, &d, &why) ? why : NULL;
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
