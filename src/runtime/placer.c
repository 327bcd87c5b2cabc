/* The placer: a pure function from (graph, devices, soft placement) to a device per node,
 * following TensorFlow's rules (tf-semantics.md section 2):
 *  - an explicit spec is honoured: the first matching device with a kernel, GPUs first;
 *  - an unspecified node goes to the lowest-id GPU with a kernel, else CPU:0;
 *  - an unspecified Identity follows its input (TensorFlow's heuristic B);
 *  - generators (no inputs: Const, Placeholder) are placed last and follow their
 *    consumers when all consumers share one device that can hold them;
 *  - with soft placement, a spec that no device with a kernel matches falls back to the
 *    spec without type and id, then to the default rule;
 *  - variables are placed first, by their own spec; ops that update a variable (reference
 *    edges) go where it is, and an Identity reading one follows it (TensorFlow's
 *    colocation of reference edges).
 * Every decision keeps a reason, so a user can ask why a node is where it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "runtime/runtime.h"

typedef struct placer {
  const clg_graph *g;
  const clg_devices *devs;
  clg_devname *names; /* parsed full name of each device */
  int *order;         /* device indices by priority: GPUs by id, then CPU:0 */
  bool soft;
  clg_placement *out;
  int task; /* cluster: a spec naming no task means this task's devices; -1 outside one */
} placer;

static bool node_is_generator(const clg_node *n)
{
  return n->num_inputs == 0 && !(n->def->flags & CLG_OP_VARIABLE);
}

static const char *short_type(const clg_device_info *d) { return d->type; }

static bool supported(const placer *p, const clg_node *n, int dev)
{
  return clg_backend_find_kernel(n, &p->devs->devs[dev]) != NULL;
}

/* Cluster: a node whose spec names no task runs on every task, each its own copy, so it
 * may only go to this task's devices. Always true outside a cluster. */
static bool own_task(const placer *p, const clg_devname *spec, int dev)
{
  return p->task < 0 || (spec && spec->has_task) || p->names[dev].task == p->task;
}

/* The first device by priority that matches spec (NULL: any) and has a kernel. With
 * any_match, reports whether some device matched the spec regardless of kernels. */
static int first_candidate(const placer *p, const clg_node *n, const clg_devname *spec,
                           bool *any_match)
{
  if (any_match)
    *any_match = false;
  for (int k = 0; k < p->devs->count; k++) {
    int d = p->order[k];
    if (spec && !clg_devname_matches(spec, &p->names[d]))
      continue;
    if (!own_task(p, spec, d)) /* --- cluster hook */
      continue;
    if (any_match)
      *any_match = true;
    if (supported(p, n, d))
      return d;
  }
  return -1;
}

static bool is_candidate(const placer *p, const clg_node *n, int dev)
{
  if (!supported(p, n, dev) || !own_task(p, &n->requested, dev)) /* --- cluster hook */
    return false;
  return clg_devname_is_empty(&n->requested) || clg_devname_matches(&n->requested, &p->names[dev]);
}

static void set_place(placer *p, const clg_node *n, int dev, const char *fmt, ...) CLG_PRINTF(4, 5);

static void set_place(placer *p, const clg_node *n, int dev, const char *fmt, ...)
{
  va_list ap;
  clg_placement *pl = &p->out[n->index];
  pl->device = dev;
  va_start(ap, fmt);
  vsnprintf(pl->reason, sizeof pl->reason, fmt, ap);
  va_end(ap);
}

/* The same for the common reasons, "<a><b><c>" without printf: placing 100,000 nodes formats
 * 100,000 reasons. */
static void set_place3(placer *p, const clg_node *n, int dev, const char *a, const char *b,
                       const char *c)
{
  clg_placement *pl = &p->out[n->index];
  pl->device = dev;
  size_t used = 0, cap = sizeof pl->reason - 1;
  const char *parts[3] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    size_t len = strlen(parts[i]);
    if (len > cap - used)
      len = cap - used;
    memcpy(pl->reason + used, parts[i], len);
    used += len;
  }
  pl->reason[used] = '\0';
}

static clg_code explain_failure(const placer *p, const clg_node *n, bool any_match)
{
  char *def = clg_node_def_string(n);
  clg_code code;
  if (!any_match) {
    clg_strbuf avail;
    clg_strbuf_init(&avail);
    for (int d = 0; d < p->devs->count; d++)
      clg_strbuf_printf(&avail, "%s%s", d ? ", " : "", p->devs->devs[d].info.full_name);
    code = clg_error(CLG_INVALID_ARGUMENT,
                     "Cannot assign a device to node '%s': Could not satisfy explicit device "
                     "specification '%s' because no devices matching that specification are "
                     "registered in this process; available devices: %s\n\t [[Node: %s]]",
                     n->name, n->requested_text, avail.buf ? avail.buf : "", def ? def : n->name);
    clg_strbuf_free(&avail);
  } else {
    const char *type = n->requested.has_type ? n->requested.type : "requested";
    code = clg_error(CLG_INVALID_ARGUMENT,
                     "Cannot assign a device to node '%s': Could not satisfy explicit device "
                     "specification '%s' because no supported kernel for %s devices is "
                     "available (op %s, dtype %s)\n\t [[Node: %s]]",
                     n->name, n->requested_text, type, n->op, clg_dtype_name(n->outs[0].dtype),
                     def ? def : n->name);
  }
  free(def);
  return code;
}

static clg_code place_default(placer *p, const clg_node *n, const char *why)
{
  int d = first_candidate(p, n, NULL, NULL);
  if (d < 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "Node had no OpKernel registered to support this operation: Operation was "
                     "%s and inputs were [%s]\n\t [[Node: %s]]",
                     n->op, n->num_outputs ? clg_dtype_name(n->outs[0].dtype) : "", n->name);
  const clg_device_info *info = &p->devs->devs[d].info;
  if (strcmp(short_type(info), "GPU") == 0)
    set_place3(p, n, d, why, "default: lowest-id GPU with a kernel for ", n->op);
  else
    set_place(p, n, d, "%sdefault: no GPU has a kernel for %s (%s); CPU:0", why, n->op,
              n->num_outputs ? clg_dtype_name(n->outs[0].dtype) : "");
  return CLG_OK;
}

/* Places a node by its own spec (no consumer or input heuristics). */
static clg_code place_by_spec(placer *p, const clg_node *n)
{
  if (clg_devname_is_empty(&n->requested))
    return place_default(p, n, "");
  bool any_match;
  int d = first_candidate(p, n, &n->requested, &any_match);
  if (d >= 0) {
    set_place3(p, n, d, "explicit device specification '", n->requested_text, "'");
    return CLG_OK;
  }
  if (!p->soft)
    return explain_failure(p, n, any_match);
  /* Soft placement: keep job/replica/task, drop type and id. */
  clg_devname relaxed = n->requested;
  relaxed.has_type = relaxed.has_id = false;
  char why[120];
  if (any_match)
    snprintf(why, sizeof why, "soft placement: no kernel for %s on '%s'; ", n->op,
             n->requested_text);
  else
    snprintf(why, sizeof why, "soft placement: no device matches '%s'; ", n->requested_text);
  d = first_candidate(p, n, &relaxed, NULL);
  if (d < 0)
    return explain_failure(p, n, any_match);
  const clg_device_info *info = &p->devs->devs[d].info;
  set_place(p, n, d, "%s%s", why,
            strcmp(info->type, "GPU") == 0 ? "lowest-id GPU with a kernel" : "CPU:0");
  clg_log(CLG_LOG_INFO, "Soft placement: node '%s' (%s) requested '%s'; placed on %s instead",
          n->name, n->op, n->requested_text, info->full_name);
  return CLG_OK;
}

/* An update op goes to its variable's device (all its variables must share one). */
static clg_code place_colocated(placer *p, const clg_node *n)
{
  const clg_node *var = clg_node_ref_variable(n, 0);
  int d = p->out[var->index].device;
  const clg_device_info *info = &p->devs->devs[d].info;
  for (int j = 1; j < n->num_inputs && j < 32; j++) {
    const clg_node *other = (n->def->ref_inputs >> j & 1u) ? clg_node_ref_variable(n, j) : NULL;
    if (other && p->out[other->index].device != d)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "Cannot colocate nodes {{colocation_node %s}} and {{colocation_node %s}}: "
                       "node '%s' (%s) updates both, but they are on %s and %s",
                       var->name, other->name, n->name, n->op, info->full_name,
                       p->devs->devs[p->out[other->index].device].info.full_name);
  }
  if (!supported(p, n, d)) {
    char *def = clg_node_def_string(n);
    clg_code code = clg_error(
        CLG_INVALID_ARGUMENT,
        "Cannot assign a device to node '%s': it updates variable '%s' on %s, but no supported "
        "kernel for %s is available there (op %s, dtype %s)\n\t [[Node: %s]]",
        n->name, var->name, info->full_name, info->type, n->op, clg_dtype_name(n->outs[0].dtype),
        def ? def : n->name);
    free(def);
    return code;
  }
  if (!clg_devname_is_empty(&n->requested) && !clg_devname_matches(&n->requested, &p->names[d])) {
    if (!p->soft)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "Cannot colocate nodes {{colocation_node %s}} and {{colocation_node %s}}: "
                       "Cannot merge devices with incompatible specifications: '%s' and '%s' "
                       "(%s updates the variable in place, so it runs on the variable's device)",
                       n->name, var->name, n->requested_text, info->full_name, n->op);
    clg_log(CLG_LOG_INFO,
            "Ignoring device specification %s for node '%s' because the input edge from '%s' "
            "is a reference connection and already has a device field set to %s",
            n->requested_text, n->name, var->name, info->full_name);
  }
  set_place3(p, n, d, "colocated with variable '", var->name,
             "' (it updates the variable in place: reference edge)");
  return CLG_OK;
}

/* Consumers of each node in CSR form: users[start[i] .. start[i+1]) are node indices. */
typedef struct consumers {
  int *start;
  int *users;
} consumers;

static clg_code place_generator(placer *p, const clg_node *n, const consumers *cs)
{
  /* Every consumer on one device that can hold this node: follow them. */
  int common = -2, count = 0;
  const clg_node *first = NULL;
  for (int k = cs->start[n->index]; k < cs->start[n->index + 1]; k++) {
    const clg_node *user = clg_graph_node(p->g, cs->users[k]);
    int d = p->out[user->index].device;
    if (!first)
      first = user;
    count++;
    common = common == -2 ? d : (common == d ? d : -1);
  }
  if (common >= 0 && is_candidate(p, n, common)) {
    if (count == 1)
      set_place3(p, n, common, "follows its consumer '", first->name, "'");
    else
      set_place(p, n, common, "follows its %d consumers ('%s', ...), all on one device", count,
                first->name);
    return CLG_OK;
  }
  return place_by_spec(p, n);
}

/* Consumers counted over data and control edges: roots are nodes nothing consumes. */
void clg_placement_order(const clg_graph *g, int n, int *order)
{
  /* Walk back from each root (in graph order), inputs in reverse order, control inputs
   * after data inputs, each node listed after its inputs (post-order): for the guide's S7
   * this is Const_3, Const_2, MatMul_1, Const_1, Const, MatMul, AddN. Iterative, so a
   * chain of 200,000 nodes needs no deep recursion. */
  int k = 0;
  char *state = calloc((size_t)(n > 0 ? n : 1), 1); /* 0 new, 1 on the stack, 2 listed */
  bool *consumed = calloc((size_t)(n > 0 ? n : 1), sizeof *consumed);
  int *stack = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  int *next = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)); /* edges still to visit */
  if (!state || !consumed || !stack || !next) {
    for (int i = 0; i < n; i++) /* out of memory: graph order still lists every node */
      order[i] = i;
    goto done;
  }
  for (int i = 0; i < n; i++) {
    const clg_node *node = clg_graph_node(g, i);
    for (int j = 0; j < node->num_inputs; j++)
      if (node->inputs[j].node->index < n)
        consumed[node->inputs[j].node->index] = true;
    for (int j = 0; j < node->num_control; j++)
      if (node->control[j]->index < n)
        consumed[node->control[j]->index] = true;
  }
  for (int pass = 0; pass < 2; pass++) {
    /* Roots first; a second pass lists what only cycles through unplaced nodes could hide
     * (nothing, in a well-formed graph, but every node must appear exactly once). */
    for (int r = 0; r < n; r++) {
      if (state[r] || (pass == 0 && consumed[r]))
        continue;
      int top = 0;
      stack[top] = r;
      next[top] = 0;
      state[r] = 1;
      top++;
      while (top > 0) {
        const clg_node *node = clg_graph_node(g, stack[top - 1]);
        int edges = node->num_inputs + node->num_control;
        int e = next[top - 1]++;
        if (e < edges) {
          /* Data inputs last to first, then control inputs last to first. */
          const clg_node *in = e < node->num_inputs ? node->inputs[node->num_inputs - 1 - e].node
                                                    : node->control[edges - 1 - e];
          if (in->index < n && !state[in->index]) {
            state[in->index] = 1;
            stack[top] = in->index;
            next[top] = 0;
            top++;
          }
          continue;
        }
        state[node->index] = 2;
        order[k++] = node->index;
        top--;
      }
    }
  }
done:
  free(state);
  free(consumed);
  free(stack);
  free(next);
}

/* Without soft placement, an explicit spec that cannot be satisfied is an error; report
 * the first in placement order. */
static clg_code check_explicit(placer *p, int nn)
{
  int *order = malloc(sizeof(int) * (size_t)(nn > 0 ? nn : 1));
  if (!order)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
  clg_placement_order(p->g, nn, order);
  clg_code code = CLG_OK;
  for (int k = 0; k < nn && code == CLG_OK; k++) {
    const clg_node *n = clg_graph_node(p->g, order[k]);
    bool any_match;
    if (!clg_devname_is_empty(&n->requested) &&
        first_candidate(p, n, &n->requested, &any_match) < 0)
      code = explain_failure(p, n, any_match);
  }
  free(order);
  return code;
}

static clg_code place_view(const clg_graph *g, const clg_devices *devs, bool allow_soft_placement,
                           int task, clg_placement *out)
{
  int nn = clg_graph_num_nodes(g);
  placer p = {g, devs, NULL, NULL, allow_soft_placement, out, task};
  clg_code code = CLG_OK;
  p.names = calloc((size_t)devs->count, sizeof *p.names);
  p.order = calloc((size_t)devs->count, sizeof *p.order);
  consumers cs = {calloc((size_t)nn + 1, sizeof(int)), NULL};
  size_t edges = 0;
  for (int i = 0; i < nn; i++)
    edges += (size_t)clg_graph_node(g, i)->num_inputs;
  cs.users = malloc(sizeof(int) * (edges ? edges : 1));
  if (!p.names || !p.order || !cs.start || !cs.users) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
    goto done;
  }
  /* GPUs by index, then the CPUs (one, outside a cluster; one per task in one). */
  int k = 0;
  for (int d = 0; d < devs->count; d++)
    if (strcmp(devs->devs[d].info.type, "CPU") != 0)
      p.order[k++] = d;
  for (int d = 0; d < devs->count; d++)
    if (strcmp(devs->devs[d].info.type, "CPU") == 0)
      p.order[k++] = d;
  for (int d = 0; d < devs->count; d++)
    if ((code = clg_devname_parse(devs->devs[d].info.full_name, &p.names[d])) != CLG_OK)
      goto done;
  for (int i = 0; i < nn; i++) {
    const clg_node *n = clg_graph_node(g, i);
    for (int j = 0; j < n->num_inputs; j++)
      cs.start[n->inputs[j].node->index + 1]++;
  }
  for (int i = 0; i < nn; i++)
    cs.start[i + 1] += cs.start[i];
  {
    int *fill = calloc((size_t)nn + 1, sizeof(int));
    if (!fill) {
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
      goto done;
    }
    for (int i = 0; i < nn; i++) {
      const clg_node *n = clg_graph_node(g, i);
      for (int j = 0; j < n->num_inputs; j++) {
        int src = n->inputs[j].node->index;
        cs.users[cs.start[src] + fill[src]++] = i;
      }
    }
    free(fill);
  }
  if (!allow_soft_placement && (code = check_explicit(&p, nn)) != CLG_OK)
    goto done;
  for (int i = 0; i < nn; i++) {
    out[i].device = -1;
    out[i].reason[0] = '\0';
  }
  /* Variables first, by their own spec: what updates or reads them follows. */
  for (int i = 0; i < nn && code == CLG_OK; i++) {
    const clg_node *n = clg_graph_node(g, i);
    if (n->def->flags & CLG_OP_VARIABLE)
      code = place_by_spec(&p, n);
  }
  for (int i = 0; i < nn && code == CLG_OK; i++) {
    const clg_node *n = clg_graph_node(g, i);
    if (node_is_generator(n) || (n->def->flags & CLG_OP_VARIABLE))
      continue;
    if (n->def->ref_inputs && clg_node_ref_variable(n, 0)) {
      code = place_colocated(&p, n);
      continue;
    }
    if ((n->def->flags & CLG_OP_FOLLOWS_INPUT) && clg_devname_is_empty(&n->requested)) {
      const clg_node *in = n->inputs[0].node;
      int d = out[in->index].device;
      if (d >= 0 && supported(&p, n, d)) {
        if (in->def->flags & CLG_OP_VARIABLE)
          set_place3(&p, n, d, "colocated with variable '", in->name, "' (reads it)");
        else
          set_place3(&p, n, d, "follows its input '", in->name, "'");
        continue;
      }
      /* The input is a generator placed later: place by the default rule. */
    }
    code = place_by_spec(&p, n);
  }
  for (int i = nn - 1; i >= 0 && code == CLG_OK; i--) {
    const clg_node *n = clg_graph_node(g, i);
    if (node_is_generator(n))
      code = place_generator(&p, n, &cs);
  }
done:
  free(p.names);
  free(p.order);
  free(cs.start);
  free(cs.users);
  return code;
}

/* Placement, with the task of every node in a cluster: a node lands on the same task in the
 * views of two different tasks exactly when it is pinned there (its spec, or what it follows,
 * names the task); otherwise each task runs its own copy (task -1). */
clg_code clg_place(const clg_graph *g, const clg_devices *devs, bool allow_soft_placement,
                   clg_placement *out)
{
  int nn = clg_graph_num_nodes(g);
  clg_code code = place_view(g, devs, allow_soft_placement, devs->local_task, out);
  int tasks = 1;
  for (int d = 0; d < devs->count; d++)
    if (devs->devs[d].info.task >= tasks)
      tasks = devs->devs[d].info.task + 1;
  for (int i = 0; i < nn && code == CLG_OK; i++)
    out[i].task = devs->devs[out[i].device].info.task;
  if (code != CLG_OK || devs->local_task < 0 || tasks < 2)
    return code;
  /* --- cluster: the view of another task */
  clg_placement *other = malloc(sizeof *other * (size_t)(nn > 0 ? nn : 1));
  if (!other)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory placing %d nodes", nn);
  code = place_view(g, devs, allow_soft_placement, (devs->local_task + 1) % tasks, other);
  for (int i = 0; i < nn && code == CLG_OK; i++)
    if (devs->devs[other[i].device].info.task != out[i].task)
      out[i].task = -1;
  free(other);
  return code;
}
