/* The executor: runs the nodes a fetch needs, in graph order, each on its device.
 *
 * OpenCL work is enqueued without waiting, so devices run at the same time (the towers of
 * the guide's S7 overlap); host work runs in the calling thread. A tensor that crosses
 * devices is copied once per destination: directly inside one OpenCL context (ordered by
 * an event on the source's queue), staged through host memory otherwise. Each tensor is
 * freed once its last consumer has been enqueued; a block another queue may still read is
 * handed to the allocator with that read's event, so it is not reused too early. Const
 * values are uploaded once per session and kept. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

/* A copy of a value on another device. */
typedef struct copy {
  int dev;
  clg_block block;
  cl_event ready; /* the copy's event on the destination queue, or NULL */
  struct copy *next;
} copy;

typedef struct value {
  bool live;
  bool borrowed; /* block owned elsewhere (a cached Const or a host feed) */
  int dev;
  clg_block block;
  cl_event ready; /* marker on the producer's queue, made when a peer copy needs it */
  int uses;
  copy *copies;
} value;

/* When a node ran, for tracing: markers around its work on an OpenCL queue (CLBlast's own
 * event covers only its last kernel), or the host clock. */
typedef struct trace {
  bool ran;
  cl_event before, after;
  uint64_t start_ns, end_ns;
} trace;

struct clg_executor {
  clg_process *proc;
  clg_devices *devs;
  const clg_graph *g;
  int nn;
  int *dev_of;
  clg_block *consts; /* per node: the cached Const block on its device */
  bool *const_ready;
  value *vals;
  bool *needed;
  int *fed;          /* feed index + 1, 0 when not fed */
  bool *fetched;     /* fetched in this run */
  clg_tensor **outs; /* a fetched host node's output, computed in place */
  trace *traces;     /* NULL unless tracing */
};

static clg_device *device(clg_executor *x, int d) { return clg_devices_at(x->devs, d); }

static const clg_devops *ops(clg_executor *x, int d) { return clg_devops_of(device(x, d)); }

static size_t node_bytes(const clg_node *n) { return clg_node_count(n) * clg_dtype_size(n->dtype); }

static clg_code alloc_on(clg_executor *x, int d, const clg_node *n, size_t bytes, clg_block *out)
{
  clg_allocator *a = NULL;
  clg_code code = clg_process_allocator(x->proc, d, &a);
  if (code == CLG_OK)
    code = clg_allocator_alloc(a, bytes ? bytes : 1, out);
  if (code != CLG_OK) {
    char shape[96];
    clg_error_prefix("node '%s' (%s): %s when allocating tensor with shape%s and type %s on "
                     "%s: ",
                     n->name, n->op, code == CLG_RESOURCE_EXHAUSTED ? "OOM" : "failure",
                     clg_node_shape_string(n, shape, sizeof shape), clg_dtype_name(n->dtype),
                     device(x, d)->info.full_name);
  }
  return code;
}

static void free_on(clg_executor *x, int d, const clg_block *b, cl_event pending)
{
  clg_allocator *a = NULL;
  if (clg_process_allocator(x->proc, d, &a) == CLG_OK && a)
    clg_allocator_free(a, b, pending);
}

static void value_release(clg_executor *x, value *v)
{
  if (!v->live)
    return;
  cl_event pending = NULL;
  int foreign = 0;
  for (copy *c = v->copies; c; c = c->next)
    if (c->ready)
      foreign++;
  for (copy *c = v->copies, *next; c; c = next) {
    next = c->next;
    if (c->ready) {
      if (foreign == 1)
        pending = c->ready; /* the source block waits for this read */
      else
        clWaitForEvents(1, &c->ready);
    }
    free_on(x, c->dev, &c->block, NULL);
    if (c->ready && c->ready != pending)
      clReleaseEvent(c->ready);
    free(c);
  }
  if (!v->borrowed)
    free_on(x, v->dev, &v->block, pending);
  if (pending)
    clReleaseEvent(pending);
  if (v->ready)
    clReleaseEvent(v->ready);
  memset(v, 0, sizeof *v);
}

static void value_use_done(clg_executor *x, value *v)
{
  if (v->live && --v->uses <= 0)
    value_release(x, v);
}

/* The block holding value v (of node n) on device d, copying it there if needed. */
static clg_code value_on(clg_executor *x, const clg_node *n, value *v, int d, clg_block *out)
{
  if (v->dev == d) {
    *out = v->block;
    return CLG_OK;
  }
  for (copy *c = v->copies; c; c = c->next)
    if (c->dev == d) {
      *out = c->block;
      return CLG_OK;
    }
  size_t bytes = node_bytes(n);
  copy *c = calloc(1, sizeof *c);
  if (!c)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory copying '%s'", n->name);
  c->dev = d;
  clg_code code = alloc_on(x, d, n, bytes, &c->block);
  if (code != CLG_OK) {
    free(c);
    return code;
  }
  const clg_devops *src = ops(x, v->dev), *dst = ops(x, d);
  if (!src->host_memory && !dst->host_memory && !v->ready)
    code = src->ready_event(device(x, v->dev), &v->ready);
  if (code == CLG_OK)
    code = dst->copy(device(x, d), &c->block, device(x, v->dev), &v->block, bytes, v->ready,
                     &c->ready);
  if (code == CLG_UNIMPLEMENTED) {
    /* No direct path: through host memory. */
    if (src->host_memory) {
      code = dst->upload(device(x, d), &c->block, v->block.host, bytes);
    } else if (dst->host_memory) {
      code = src->download(device(x, v->dev), &v->block, c->block.host, bytes);
    } else {
      void *tmp = malloc(bytes ? bytes : 1);
      code = tmp ? src->download(device(x, v->dev), &v->block, tmp, bytes)
                 : clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory staging '%s'", n->name);
      if (code == CLG_OK)
        code = dst->upload(device(x, d), &c->block, tmp, bytes);
      free(tmp);
    }
  }
  if (code != CLG_OK) {
    free_on(x, d, &c->block, NULL);
    free(c);
    return clg_error_prefix("copying '%s' from %s to %s: ", n->name, device(x, v->dev)->info.name,
                            device(x, d)->info.name);
  }
  c->next = v->copies;
  v->copies = c;
  *out = c->block;
  return CLG_OK;
}

clg_code clg_executor_new(clg_process *p, const clg_graph *g, const clg_placement *placement,
                          clg_executor **out)
{
  clg_executor *x = calloc(1, sizeof *x);
  int nn = clg_graph_num_nodes(g);
  size_t n1 = (size_t)(nn > 0 ? nn : 1);
  if (!x)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an executor");
  x->proc = p;
  x->devs = clg_process_devices(p);
  x->g = g;
  x->nn = nn;
  x->dev_of = malloc(sizeof *x->dev_of * n1);
  x->consts = calloc(n1, sizeof *x->consts);
  x->const_ready = calloc(n1, sizeof *x->const_ready);
  x->vals = calloc(n1, sizeof *x->vals);
  x->needed = calloc(n1, sizeof *x->needed);
  x->fed = calloc(n1, sizeof *x->fed);
  x->fetched = calloc(n1, sizeof *x->fetched);
  x->outs = calloc(n1, sizeof *x->outs);
  if (!x->dev_of || !x->consts || !x->const_ready || !x->vals || !x->needed || !x->fed ||
      !x->fetched || !x->outs) {
    clg_executor_free(x);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory creating an executor");
  }
  for (int i = 0; i < nn; i++)
    x->dev_of[i] = placement[i].device;
  *out = x;
  return CLG_OK;
}

static void traces_reset(clg_executor *x)
{
  if (!x->traces)
    return;
  for (int i = 0; i < x->nn; i++) {
    if (x->traces[i].before)
      clReleaseEvent(x->traces[i].before);
    if (x->traces[i].after)
      clReleaseEvent(x->traces[i].after);
  }
  memset(x->traces, 0, sizeof *x->traces * (size_t)x->nn);
}

/* Turns the markers of the last run into times on the device clock. */
static void traces_resolve(clg_executor *x)
{
  for (int i = 0; x->traces && i < x->nn; i++) {
    trace *t = &x->traces[i];
    uint64_t s0, e0, s1, e1;
    if (t->before && t->after && clWaitForEvents(1, &t->after) == CL_SUCCESS &&
        clg_device_event_times(t->before, &s0, &e0) == CLG_OK &&
        clg_device_event_times(t->after, &s1, &e1) == CLG_OK) {
      t->start_ns = e0;
      t->end_ns = e1;
    }
  }
}

clg_code clg_executor_set_tracing(clg_executor *x, bool on)
{
  traces_reset(x);
  if (!on) {
    free(x->traces);
    x->traces = NULL;
    return CLG_OK;
  }
  if (!x->traces && !(x->traces = calloc((size_t)(x->nn > 0 ? x->nn : 1), sizeof *x->traces)))
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for tracing");
  return CLG_OK;
}

clg_code clg_executor_node_times(const clg_executor *x, const clg_node *n, uint64_t *start_ns,
                                 uint64_t *end_ns)
{
  if (!x->traces)
    return clg_error(CLG_FAILED_PRECONDITION, "tracing is off for this session");
  const trace *t = &x->traces[n->index];
  if (!t->ran)
    return clg_error(CLG_NOT_FOUND, "node '%s' did not run in the last traced run", n->name);
  *start_ns = t->start_ns;
  *end_ns = t->end_ns;
  return CLG_OK;
}

void clg_executor_free(clg_executor *x)
{
  if (!x)
    return;
  if (x->traces)
    clg_executor_set_tracing(x, false);
  if (x->const_ready)
    for (int i = 0; i < x->nn; i++)
      if (x->const_ready[i]) {
        ops(x, x->dev_of[i])->finish(device(x, x->dev_of[i]));
        free_on(x, x->dev_of[i], &x->consts[i], NULL);
      }
  free(x->dev_of);
  free(x->consts);
  free(x->const_ready);
  free(x->vals);
  free(x->needed);
  free(x->fed);
  free(x->fetched);
  free(x->outs);
  free(x);
}

static clg_code check_node(clg_executor *x, const clg_node *n, const char *what, int i)
{
  if (!n)
    return clg_error(CLG_INVALID_ARGUMENT, "%s[%d] is NULL", what, i);
  if (n->graph != x->g || n->index >= x->nn)
    return clg_error(CLG_INVALID_ARGUMENT, "%s[%d] ('%s') is not a node of this session's graph",
                     what, i, n->name);
  return CLG_OK;
}

static clg_code check_args(clg_executor *x, int num_feeds, clg_node *const *feed_nodes,
                           clg_tensor *const *feeds, int num_fetches, clg_node *const *fetches,
                           clg_tensor **outputs)
{
  if (num_feeds < 0 || (num_feeds > 0 && (!feed_nodes || !feeds)))
    return clg_error(CLG_INVALID_ARGUMENT, "num_feeds is %d but feed_nodes or feeds is NULL",
                     num_feeds);
  if (num_fetches < 0 || (num_fetches > 0 && (!fetches || !outputs)))
    return clg_error(CLG_INVALID_ARGUMENT, "num_fetches is %d but fetches or outputs is NULL",
                     num_fetches);
  for (int i = 0; i < num_fetches; i++) {
    clg_code code = check_node(x, fetches[i], "fetches", i);
    if (code != CLG_OK)
      return code;
  }
  for (int i = 0; i < num_feeds; i++) {
    clg_code code = check_node(x, feed_nodes[i], "feed_nodes", i);
    if (code != CLG_OK)
      return code;
    const clg_node *n = feed_nodes[i];
    const clg_tensor *t = feeds[i];
    char want[96], got[96];
    if (!t)
      return clg_error(CLG_INVALID_ARGUMENT, "feeds[%d] (for '%s') is NULL", i, n->name);
    if (clg_tensor_dtype(t) != n->dtype)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "Cannot feed value of type %s for '%s', which has type %s",
                       clg_dtype_name(clg_tensor_dtype(t)), n->name, clg_dtype_name(n->dtype));
    bool same = clg_tensor_rank(t) == n->rank;
    for (int d = 0; same && d < n->rank; d++)
      same = clg_tensor_dim(t, d) == n->dims[d];
    if (!same)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "Cannot feed value of shape %s for '%s', which has shape %s",
                       clg_tensor_shape_string(t, got, sizeof got), n->name,
                       clg_node_shape_string(n, want, sizeof want));
    if (x->fed[n->index])
      return clg_error(CLG_INVALID_ARGUMENT, "'%s' is fed twice (feeds %d and %d)", n->name,
                       x->fed[n->index] - 1, i);
    x->fed[n->index] = i + 1;
  }
  return CLG_OK;
}

/* Produces the value of node n (not fed, not Const). */
static clg_code run_node(clg_executor *x, const clg_node *n, int d)
{
  clg_block stack[16];
  clg_block *in = n->num_inputs <= 16 ? stack : malloc(sizeof *in * (size_t)n->num_inputs);
  if (!in)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", n->name);
  clg_code code = CLG_OK;
  for (int i = 0; i < n->num_inputs && code == CLG_OK; i++) {
    const clg_node *src = n->inputs[i];
    code = value_on(x, src, &x->vals[src->index], d, &in[i]);
  }
  value *v = &x->vals[n->index];
  if (code == CLG_OK && x->fetched[n->index] && ops(x, d)->host_memory) {
    /* A fetched host result is computed straight into the tensor returned. */
    clg_tensor *t = clg_tensor_new_uninit(n->dtype, n->rank, n->dims);
    if (!t) {
      code = clg_error_prefix("node '%s' (%s): ", n->name, n->op);
    } else {
      x->outs[n->index] = t;
      v->block = (clg_block){.host = clg_tensor_data(t), .size = node_bytes(n)};
      v->borrowed = true;
    }
  } else if (code == CLG_OK) {
    code = alloc_on(x, d, n, node_bytes(n), &v->block);
  }
  if (code == CLG_OK) {
    v->live = true;
    v->dev = d;
    trace *t = x->traces ? &x->traces[n->index] : NULL;
    if (t) {
      t->ran = true;
      t->start_ns = clg_now_ns();
      code = ops(x, d)->ready_event(device(x, d), &t->before);
    }
    if (code == CLG_OK)
      code = ops(x, d)->run(x->proc, d, n, in, &v->block);
    if (t && code == CLG_OK) {
      t->end_ns = clg_now_ns();
      code = ops(x, d)->ready_event(device(x, d), &t->after);
    }
    if (code != CLG_OK)
      clg_error_prefix("node '%s' (%s) on %s: ", n->name, n->op, device(x, d)->info.full_name);
  }
  for (int i = 0; i < n->num_inputs && code == CLG_OK; i++)
    value_use_done(x, &x->vals[n->inputs[i]->index]);
  if (in != stack)
    free(in);
  return code;
}

static clg_code produce(clg_executor *x, const clg_node *n, clg_tensor *const *feeds)
{
  int d = x->dev_of[n->index];
  value *v = &x->vals[n->index];
  if (x->fed[n->index]) {
    const clg_tensor *t = feeds[x->fed[n->index] - 1];
    if (ops(x, d)->host_memory) {
      v->block.host = (void *)clg_tensor_const_data(t);
      v->borrowed = true;
    } else {
      clg_code code = alloc_on(x, d, n, node_bytes(n), &v->block);
      if (code == CLG_OK)
        code = ops(x, d)->upload(device(x, d), &v->block, clg_tensor_const_data(t), node_bytes(n));
      if (code != CLG_OK) {
        if (v->block.size)
          free_on(x, d, &v->block, NULL);
        memset(&v->block, 0, sizeof v->block);
        return clg_error_prefix("feeding '%s': ", n->name);
      }
    }
    v->live = true;
    v->dev = d;
    return CLG_OK;
  }
  if (strcmp(n->op, "Const") == 0) {
    if (!x->const_ready[n->index]) {
      clg_code code = alloc_on(x, d, n, node_bytes(n), &x->consts[n->index]);
      if (code == CLG_OK)
        code = ops(x, d)->upload(device(x, d), &x->consts[n->index],
                                 clg_tensor_const_data(n->value), node_bytes(n));
      if (code != CLG_OK) {
        if (x->consts[n->index].size)
          free_on(x, d, &x->consts[n->index], NULL);
        return clg_error_prefix("node '%s' (Const): ", n->name);
      }
      x->const_ready[n->index] = true;
    }
    v->block = x->consts[n->index];
    v->borrowed = true;
    v->live = true;
    v->dev = d;
    return CLG_OK;
  }
  if (strcmp(n->op, "Placeholder") == 0) {
    char shape[96];
    return clg_error(CLG_INVALID_ARGUMENT,
                     "You must feed a value for placeholder tensor '%s' with dtype %s and shape %s",
                     n->name, clg_dtype_name(n->dtype),
                     clg_node_shape_string(n, shape, sizeof shape));
  }
  return run_node(x, n, d);
}

static clg_code fetch(clg_executor *x, const clg_node *n, clg_tensor **out)
{
  value *v = &x->vals[n->index];
  if (x->outs[n->index]) {
    *out = x->outs[n->index];
    x->outs[n->index] = NULL;
    return CLG_OK;
  }
  clg_tensor *t = clg_tensor_new_uninit(n->dtype, n->rank, n->dims);
  if (!t)
    return clg_last_code();
  clg_code code =
      ops(x, v->dev)->download(device(x, v->dev), &v->block, clg_tensor_data(t), node_bytes(n));
  if (code != CLG_OK) {
    clg_tensor_free(t);
    return clg_error_prefix("fetching '%s': ", n->name);
  }
  *out = t;
  return CLG_OK;
}

clg_code clg_executor_run(clg_executor *x, int num_feeds, clg_node *const *feed_nodes,
                          clg_tensor *const *feeds, int num_fetches, clg_node *const *fetches,
                          clg_tensor **outputs)
{
  memset(x->fed, 0, sizeof *x->fed * (size_t)x->nn);
  memset(x->needed, 0, sizeof *x->needed * (size_t)x->nn);
  memset(x->fetched, 0, sizeof *x->fetched * (size_t)x->nn);
  traces_reset(x);
  clg_code code = check_args(x, num_feeds, feed_nodes, feeds, num_fetches, fetches, outputs);
  if (code != CLG_OK)
    return code;

  /* What the fetches need, stopping at fed nodes; and how often each value is used. */
  for (int i = 0; i < num_fetches; i++) {
    x->needed[fetches[i]->index] = true;
    x->fetched[fetches[i]->index] = true;
    x->vals[fetches[i]->index].uses++;
  }
  for (int i = x->nn - 1; i >= 0; i--) {
    const clg_node *n = clg_graph_node(x->g, i);
    if (!x->needed[i] || x->fed[i])
      continue;
    for (int j = 0; j < n->num_inputs; j++) {
      x->needed[n->inputs[j]->index] = true;
      x->vals[n->inputs[j]->index].uses++;
    }
  }

  for (int i = 0; i < x->nn && code == CLG_OK; i++)
    if (x->needed[i])
      code = produce(x, clg_graph_node(x->g, i), feeds);

  /* Results go to the caller's outputs only when every fetch succeeded. */
  clg_tensor *stack[8];
  clg_tensor **got = num_fetches <= 8 ? stack : calloc((size_t)num_fetches, sizeof *got);
  if (!got && code == CLG_OK)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory fetching %d tensors", num_fetches);
  int fetched = 0;
  for (; fetched < num_fetches && code == CLG_OK; fetched++)
    if ((code = fetch(x, fetches[fetched], &got[fetched])) != CLG_OK)
      break;
  if (code == CLG_OK) {
    for (int i = 0; i < num_fetches; i++)
      outputs[i] = got[i];
  } else {
    for (int i = 0; i < fetched; i++)
      clg_tensor_free(got[i]);
    /* Drain every queue before freeing blocks that work may still use. */
    for (int d = 0; d < x->devs->count; d++)
      ops(x, d)->finish(device(x, d));
  }
  if (got != stack)
    free(got);
  for (int i = 0; i < x->nn; i++) {
    if (x->vals[i].live)
      value_release(x, &x->vals[i]);
    x->vals[i].uses = 0;
    clg_tensor_free(x->outs[i]); /* not handed out: the run failed */
    x->outs[i] = NULL;
  }
  traces_resolve(x);
  return code;
}
