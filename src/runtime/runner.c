/* The runner: runs a plan. It holds the plan's arenas, binds every value to its block,
 * enqueues each step's copies and kernel, fetches the results and waits for the copies.
 *
 * Work on OpenCL devices is enqueued without waiting, so devices run at the same time (the
 * towers of the guide's S7 overlap). A value that crosses devices is copied once per
 * destination: directly inside one OpenCL context, after a marker on the source's queue
 * (a wait list, never a host wait), staged through host memory otherwise. A value copied
 * to another device keeps its buffer to the end of the run, and the run waits for its
 * copies before returning, so that no queue overwrites what another still reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

void clg_runner_release(clg_executor *x)
{
  for (int d = 0; x->arenas && d < x->devs->count; d++)
    if (x->arenas[d].size) {
      clg_exec_ops(x, d)->finish(clg_exec_device(x, d));
      clg_allocator_free(x->alloc[d], &x->arenas[d], NULL);
      memset(&x->arenas[d], 0, sizeof x->arenas[d]);
    }
  x->active = NULL;
}

static const pval *largest_on(const plan *p, int d)
{
  const pval *best = NULL;
  for (int i = 0; i < p->npv; i++)
    if (p->pv[i].in_arena && p->pv[i].dev == d && (!best || p->pv[i].bytes > best->bytes))
      best = &p->pv[i];
  return best;
}

/* Names the arena of device d for memory maps: how many tensors share it, and the largest. */
static void arena_label(clg_executor *x, const plan *p, int d)
{
  int count = 0;
  for (int i = 0; i < p->npv; i++)
    count += p->pv[i].in_arena && p->pv[i].dev == d && p->pv[i].alias < 0;
  const pval *v = largest_on(p, d);
  const clg_node *n = clg_exec_node(x, v->node);
  char shape[96], what[200];
  snprintf(what, sizeof what, "arena of a run: %d tensors, largest %s (%s) %s", count, n->name,
           n->op, clg_out_shape_string(&n->outs[v->out], shape, sizeof shape));
  clg_allocator_label(x->alloc[d], &x->arenas[d], what);
}

clg_code clg_runner_activate(clg_executor *x, plan *p)
{
  if (x->active == p)
    return CLG_OK;
  clg_runner_release(x);
  int nd = x->devs->count;
  for (int d = 0; d < nd; d++) {
    if (!p->arena[d])
      continue;
    clg_code code = clg_allocator_alloc(x->alloc[d], p->arena[d], &x->arenas[d]);
    if (code != CLG_OK) {
      const pval *v = largest_on(p, d);
      const clg_node *n = clg_exec_node(x, v->node);
      char shape[96];
      /* TensorFlow's text, naming the largest tensor the run needs there, then the
       * allocator's figures ("GPU_0_bfc: in use ..."). */
      const char *detail = strstr(clg_last_error(), "by allocator ");
      char *why = clg_strdup(detail ? detail + strlen("by allocator ") : clg_last_error());
      code = clg_error(code,
                       "node '%s' (%s): %s when allocating tensor with shape%s and type %s on %s "
                       "by allocator %s (the run needs %llu bytes there)",
                       n->name, n->op, code == CLG_RESOURCE_EXHAUSTED ? "OOM" : "failure",
                       clg_out_shape_string(&n->outs[v->out], shape, sizeof shape),
                       clg_dtype_name(n->outs[v->out].dtype), clg_exec_device(x, d)->info.full_name,
                       why ? why : "", (unsigned long long)p->arena[d]);
      free(why);
      memset(&x->arenas[d], 0, sizeof x->arenas[d]);
      clg_runner_release(x);
      return code;
    }
    arena_label(x, p, d);
  }
  free(x->blk);
  free(x->ready);
  free(x->copied);
  free(x->outs);
  free(x->dead);
  x->dead = NULL;
  size_t n1 = (size_t)(p->npv ? p->npv : 1);
  x->blk = calloc(n1, sizeof *x->blk);
  x->ready = calloc(n1, sizeof *x->ready);
  x->copied = calloc(n1, sizeof *x->copied);
  x->outs = calloc(n1, sizeof *x->outs);
  if (p->control)
    x->dead = calloc(n1, sizeof *x->dead);
  if (!x->blk || !x->ready || !x->copied || !x->outs || (p->control && !x->dead)) {
    clg_runner_release(x);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a run");
  }
  x->active = p;
  return CLG_OK;
}

/* A block of the arena of d at offset, bytes long. */
static clg_block arena_block(clg_executor *x, int d, size_t offset, size_t bytes)
{
  clg_block b = x->arenas[d];
  b.offset += offset;
  b.size = bytes;
  if (b.host)
    b.host = (char *)b.host + offset;
  return b;
}

/* Const v's block on its device, uploaded on first use and kept for the session. Its size
 * comes from the plan, not from the graph. */
static clg_code const_block(clg_executor *x, const pval *v)
{
  const clg_node *n = clg_exec_node(x, v->node);
  int d = v->dev;
  if (x->const_ready[n->index])
    return CLG_OK;
  size_t bytes = v->bytes;
  clg_code code = clg_allocator_alloc(x->alloc[d], bytes ? bytes : 1, &x->consts[n->index]);
  if (code == CLG_OK) {
    char shape[96], what[200];
    snprintf(what, sizeof what, "%s (%s) %s", n->name, n->op,
             clg_node_shape_string(n, shape, sizeof shape));
    clg_allocator_label(x->alloc[d], &x->consts[n->index], what); /* for memory maps */
    code = clg_exec_ops(x, d)->upload(clg_exec_device(x, d), &x->consts[n->index],
                                      clg_tensor_const_data(clg_node_value(n)), bytes);
  }
  if (code != CLG_OK) {
    if (x->consts[n->index].size)
      clg_allocator_free(x->alloc[d], &x->consts[n->index], NULL);
    memset(&x->consts[n->index], 0, sizeof x->consts[n->index]);
    return clg_error_prefix("node '%s' (Const) on %s: ", n->name,
                            clg_exec_device(x, d)->info.full_name);
  }
  x->const_ready[n->index] = true;
  return CLG_OK;
}

/* Makes copy c of its source value on its device. */
static clg_code make_copy_now(clg_executor *x, const plan *p, int c);

/* Makes copy c, timed when tracing: the copy's own event where it has one (a direct copy),
 * else the host's clock around the blocking calls. */
static clg_code make_copy(clg_executor *x, const plan *p, int c)
{
  if (x->cluster && clg_cluster_hook_received(p, c)) /* --- cluster hook */
    return CLG_OK;
  trace *t = x->ctraces ? &x->ctraces[c] : NULL;
  if (t)
    t->start_ns = clg_now_ns();
  clg_code code = make_copy_now(x, p, c);
  if (t && code == CLG_OK) {
    t->ran = true;
    t->end_ns = clg_now_ns();
    t->after = clg_event_retain(x->copied[c]);
  }
  return code;
}

static clg_code make_copy_now(clg_executor *x, const plan *p, int c)
{
  const pval *v = &p->pv[c], *s = &p->pv[v->src];
  const clg_device_ops *src = clg_exec_ops(x, s->dev), *dst = clg_exec_ops(x, v->dev);
  clg_code code = CLG_OK;
  if (s->kind == PV_VAR && x->ready[v->src]) { /* updates since the last marker: a new one */
    clg_event_release(x->ready[v->src]);
    x->ready[v->src] = NULL;
  }
  if (!src->host_memory && !dst->host_memory && !x->ready[v->src])
    code = src->marker(clg_exec_device(x, s->dev), &x->ready[v->src]);
  if (code == CLG_OK)
    code = dst->copy_from_peer(clg_exec_device(x, v->dev), &x->blk[c], clg_exec_device(x, s->dev),
                               &x->blk[v->src], v->bytes, 1, &x->ready[v->src], &x->copied[c]);
  if (code == CLG_UNIMPLEMENTED) {
    /* No direct path: through host memory. */
    if (src->host_memory) {
      code = dst->upload(clg_exec_device(x, v->dev), &x->blk[c], x->blk[v->src].host, v->bytes);
      x->h2d += dst->host_memory ? 0 : v->bytes;
    } else if (dst->host_memory) {
      code = src->download(clg_exec_device(x, s->dev), &x->blk[v->src], x->blk[c].host, v->bytes);
      x->d2h += v->bytes;
    } else {
      x->h2d += v->bytes;
      x->d2h += v->bytes;
      void *tmp = malloc(v->bytes ? v->bytes : 1);
      code = tmp ? src->download(clg_exec_device(x, s->dev), &x->blk[v->src], tmp, v->bytes)
                 : clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory staging a copy");
      if (code == CLG_OK)
        code = dst->upload(clg_exec_device(x, v->dev), &x->blk[c], tmp, v->bytes);
      free(tmp);
    }
  }
  if (code != CLG_OK)
    return clg_error_prefix("copying '%s' from %s to %s: ", clg_exec_node(x, v->node)->name,
                            clg_exec_device(x, s->dev)->info.name,
                            clg_exec_device(x, v->dev)->info.name);
  return CLG_OK;
}

static void warn_once(void *ctx, int device, const char *reason, const char *message)
{
  clg_process_warn_once(ctx, device, reason, message);
}

/* The variable a value is (through copies), or NULL. */
static const clg_node *variable_of(clg_executor *x, const plan *p, int v)
{
  while (p->pv[v].kind == PV_COPY)
    v = p->pv[v].src;
  return p->pv[v].kind == PV_VAR ? clg_exec_node(x, p->pv[v].node) : NULL;
}

/* Before a step: what it reads of variables is initialized (an Assign's target need not
 * be), and before it updates a variable, copies of it that other queues are still making
 * have finished: the step's device chains their events (on its queue where it can, so the
 * host does not wait). */
static clg_code check_variables(clg_executor *x, const plan *p, const step *st, const clg_node *n)
{
  for (int j = 0; j < n->num_inputs; j++) {
    const clg_node *var = variable_of(x, p, st->in[j]);
    if (var && !(j == 0 && (n->def->flags & CLG_OP_ASSIGNS)) &&
        !clg_var_store_initialized(x->vars, var))
      return clg_var_uninitialized(var, n);
  }
  if (!n->def->ref_inputs)
    return CLG_OK;
  for (int j = 0; j < n->num_inputs && j < 32; j++) {
    if (!(n->def->ref_inputs >> j & 1u))
      continue;
    for (int c = 0; c < p->npv; c++)
      if (p->pv[c].kind == PV_COPY && p->pv[c].src == st->in[j] && x->copied[c]) {
        clg_code code =
            clg_exec_ops(x, st->dev)->chain(clg_exec_device(x, st->dev), 1, &x->copied[c]);
        if (code != CLG_OK)
          return code;
      }
  }
  return CLG_OK;
}

/* The blocks of step st's outputs: the variable itself for an update, a new host tensor for
 * a fetched host result (computed in place), else the value's place in the arena. */
static clg_code bind_outputs(clg_executor *x, const plan *p, const step *st, const clg_node *n,
                             clg_block *out)
{
  for (int o = 0; o < n->num_outputs; o++) {
    int v = st->out[o];
    const pval *pv = &p->pv[v];
    if (pv->kind == PV_VAR) { /* an update's output: the variable itself */
      out[o] = x->blk[v];
      continue;
    }
    if (pv->fetched_host) {
      clg_tensor *t = clg_tensor_new_uninit(n->outs[o].dtype, n->outs[o].rank, n->outs[o].dims);
      if (!t)
        return clg_error_prefix("node '%s' (%s): ", n->name, n->op);
      x->outs[v] = t;
      x->blk[v] = (clg_block){.host = clg_tensor_data(t), .size = pv->bytes};
    } else {
      x->blk[v] = arena_block(x, st->dev, pv->offset, pv->bytes);
    }
    out[o] = x->blk[v];
  }
  return CLG_OK;
}

/* Runs st's kernel on in and out (timed when tracing), then sends its outputs to the tasks
 * that read them. */
static clg_code launch(clg_executor *x, const plan *p, const step *st, const clg_node *n,
                       clg_block *in, clg_block *out, unsigned *dead)
{
  clg_code code = CLG_OK;
  if (x->traces)
    code = clg_run_trace_step_begin(x, st);
  clg_kernel_ctx ctx = {clg_exec_device(x, st->dev),
                        st->dev,
                        n,
                        in,
                        out,
                        x->alloc[st->dev],
                        st->scratch >= 0 ? &x->blk[st->scratch] : NULL,
                        warn_once,
                        x->proc,
                        x->cluster,
                        dead,
                        NULL};
  clg_epilogue epi = {0};
  if (st->nepi) { /* fuse.c's ops, on their operands' blocks (heads have rank >= 1) */
    epi.nops = st->nepi;
    epi.cols = (size_t)n->outs[0].dims[n->outs[0].rank - 1];
    for (int k = 0; k < st->nepi; k++) {
      epi.op[k] = st->epi_op[k];
      epi.arg[k] = st->epi_pv[k] >= 0 ? x->blk[st->epi_pv[k]].host : NULL;
    }
    ctx.epilogue = &epi;
  }
  if (code == CLG_OK)
    code = st->kernel->run(&ctx);
  if (code == CLG_OK && (n->def->flags & CLG_OP_ASSIGNS))
    clg_var_store_set_initialized(x->vars, clg_exec_node(x, p->pv[st->in[0]].node));
  if (x->traces)
    code = clg_run_trace_step_end(x, p, st, code);
  if (code != CLG_OK)
    clg_error_prefix("node '%s' (%s) on %s: ", n->name, n->op,
                     clg_exec_device(x, st->dev)->info.full_name);
  else if (st->nsend) /* --- cluster hook */
    code = clg_cluster_hook_step(x, p, st, true);
  return code;
}

/* tf.cond (plans with a Switch): whether step st is dead, its outputs then marked dead; else
 * *dead gets its dead inputs (a Merge runs with one live input). */
static bool step_dead(clg_executor *x, const step *st, const clg_node *n, unsigned *dead)
{
  for (int j = 0; j < n->num_inputs; j++)
    if (x->dead[st->in[j]])
      *dead |= 1u << (j < 32 ? j : 31);
  bool merge = n->def == &clg_op_Merge;
  if (!*dead || (merge && *dead != (n->num_inputs == 32 ? ~0u : (1u << n->num_inputs) - 1)))
    return false;
  for (int o = 0; o < n->num_outputs; o++)
    x->dead[st->out[o]] = true;
  return true;
}

static clg_code run_step(clg_executor *x, const plan *p, const step *st)
{
  const clg_node *n = clg_exec_node(x, st->node);
  if (st->remote) /* --- cluster hook */
    return clg_cluster_hook_step(x, p, st, false);
  clg_code code = check_variables(x, p, st, n);
  for (int c = 0; c < st->ncopies && code == CLG_OK; c++) {
    if (p->control && x->dead[p->pv[st->copies[c]].src]) { /* a dead value's copy is dead */
      x->dead[st->copies[c]] = true;
      continue;
    }
    code = make_copy(x, p, st->copies[c]);
  }
  if (code != CLG_OK)
    return code;
  unsigned dead = 0;
  if (p->control && step_dead(x, st, n, &dead))
    return CLG_OK;
  clg_block in_stack[16], out_stack[4];
  clg_block *in = n->num_inputs <= 16 ? in_stack : malloc(sizeof *in * (size_t)n->num_inputs);
  clg_block *out = n->num_outputs <= 4 ? out_stack : malloc(sizeof *out * (size_t)n->num_outputs);
  if (!in || !out)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", n->name);
  for (int j = 0; code == CLG_OK && j < n->num_inputs; j++)
    in[j] = x->blk[st->in[j]];
  if (code == CLG_OK)
    code = bind_outputs(x, p, st, n, out);
  /* a fused step's op ran in its head's kernel (fuse.c) */
  if (code == CLG_OK && !st->fused_by)
    code = launch(x, p, st, n, in, out, &dead);
  if (code == CLG_OK && n->def == &clg_op_Switch) /* the output not taken is dead */
    for (int o = 0; o < 2; o++)
      x->dead[st->out[o]] = dead >> o & 1u;
  if (in != in_stack)
    free(in);
  if (out != out_stack)
    free(out);
  return code;
}

static clg_code fetch_one(clg_executor *x, const plan *p, int i, clg_tensor *const *feeds,
                          clg_tensor **out)
{
  int v = p->fetch_pv[i];
  const pval *pv = &p->pv[v];
  if (p->control && x->dead[v]) /* TensorFlow's "Retval does not have value" */
    return clg_error(CLG_INVALID_ARGUMENT,
                     "fetching '%s:%d': the tensor is dead this run (Retval does not have value): "
                     "it lies on a branch of a tf.cond (Switch) not taken",
                     clg_exec_node(x, pv->node)->name, pv->out);
  const clg_out_desc *d = &clg_exec_node(x, pv->node)->outs[pv->out];
  const clg_node *var = variable_of(x, p, v);
  if (var && !clg_var_store_initialized(x->vars, var))
    return clg_var_uninitialized(var, var);
  if (x->outs[v]) { /* computed in place; a second fetch of it gets a copy */
    *out = x->outs[v];
    x->outs[v] = NULL;
    return CLG_OK;
  }
  const void *host = pv->kind == PV_FEED ? clg_tensor_const_data(feeds[pv->feed]) : NULL;
  clg_tensor *t = clg_tensor_new_uninit(d->dtype, d->rank, d->dims);
  if (!t)
    return clg_last_code();
  clg_code code = CLG_OK;
  if (host && pv->bytes)
    memcpy(clg_tensor_data(t), host, pv->bytes);
  else if (!host) { /* a host result fetched twice reads the first one's tensor */
    code = clg_exec_ops(x, pv->dev)
               ->download(clg_exec_device(x, pv->dev), &x->blk[v], clg_tensor_data(t), pv->bytes);
    x->d2h += clg_exec_ops(x, pv->dev)->host_memory ? 0 : pv->bytes;
  }
  if (code != CLG_OK) {
    clg_tensor_free(t);
    return clg_error_prefix("fetching '%s': ", clg_exec_node(x, pv->node)->name);
  }
  *out = t;
  return CLG_OK;
}

/* Where every value lives in this run. */
static clg_code bind_values(clg_executor *x, const plan *p, clg_tensor *const *feeds)
{
  clg_code code = CLG_OK;
  for (int i = 0; i < p->npv && code == CLG_OK; i++) {
    const pval *v = &p->pv[i];
    x->ready[i] = x->copied[i] = NULL;
    x->outs[i] = NULL;
    if (v->kind == PV_CONST) {
      if ((code = const_block(x, v)) == CLG_OK)
        x->blk[i] = x->consts[v->node];
    } else if (v->kind == PV_VAR) {
      code = clg_var_store_block(x->vars, clg_exec_node(x, v->node), v->dev, &x->blk[i]);
    } else if (v->kind == PV_FEED && !v->in_arena) {
      x->blk[i] =
          (clg_block){.host = (void *)clg_tensor_const_data(feeds[v->feed]), .size = v->bytes};
    } else if (v->in_arena) {
      x->blk[i] = arena_block(x, v->dev, v->offset, v->bytes);
    }
  }
  return code;
}

static clg_code upload_feeds(clg_executor *x, const plan *p, clg_tensor *const *feeds)
{
  clg_code code = CLG_OK;
  for (int i = 0; i < p->nupload && code == CLG_OK; i++) {
    const pval *v = &p->pv[p->upload[i]];
    code = clg_exec_ops(x, v->dev)->upload(clg_exec_device(x, v->dev), &x->blk[p->upload[i]],
                                           clg_tensor_const_data(feeds[v->feed]), v->bytes);
    x->h2d += v->bytes;
    if (code != CLG_OK)
      clg_error_prefix("feeding '%s': ", clg_exec_node(x, v->node)->name);
  }
  return code;
}

/* No queue may still read a buffer when the next run reuses it. */
static clg_code wait_copies(clg_executor *x, const plan *p, clg_code code)
{
  for (int i = 0; i < p->npv; i++)
    if (x->copied[i]) {
      clg_code c = clg_event_wait(1, &x->copied[i]);
      if (code == CLG_OK && c != CLG_OK)
        code = c;
    }
  return code;
}

static void release_events(clg_executor *x, const plan *p)
{
  for (int i = 0; i < p->npv; i++) {
    clg_event_release(x->ready[i]);
    clg_event_release(x->copied[i]);
    x->ready[i] = x->copied[i] = NULL;
    clg_tensor_free(x->outs[i]); /* not handed out: the run failed */
    x->outs[i] = NULL;
  }
}

clg_code clg_runner_run(clg_executor *x, const plan *p, clg_tensor *const *feeds, int num_fetches,
                        clg_tensor **outputs)
{
  x->h2d = x->d2h = 0;
  if (p->control)
    memset(x->dead, 0, sizeof *x->dead * (size_t)(p->npv ? p->npv : 1));
  clg_code code = bind_values(x, p, feeds);
  if (code == CLG_OK)
    code = upload_feeds(x, p, feeds);
  for (int i = 0; i < p->nsteps && code == CLG_OK; i++)
    code = run_step(x, p, &p->steps[i]);

  /* Results go to the caller's outputs only when every fetch succeeded. */
  clg_tensor *stack[8];
  clg_tensor **got = num_fetches <= 8 ? stack : calloc((size_t)num_fetches, sizeof *got);
  if (!got && code == CLG_OK)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory fetching %d tensors", num_fetches);
  int fetched = 0;
  for (; fetched < num_fetches && code == CLG_OK; fetched++)
    if ((code = fetch_one(x, p, fetched, feeds, &got[fetched])) != CLG_OK)
      break;
  code = wait_copies(x, p, code);
  if (code == CLG_OK) {
    for (int i = 0; i < num_fetches; i++)
      outputs[i] = got[i];
  } else {
    for (int i = 0; i < fetched; i++)
      clg_tensor_free(got[i]);
    /* Drain every queue before the buffers are used again. */
    for (int d = 0; d < x->devs->count; d++)
      clg_exec_ops(x, d)->finish(clg_exec_device(x, d));
  }
  if (got != stack)
    free(got);
  release_events(x, p);
  return code;
}
