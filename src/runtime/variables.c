/* The values of a session's variables: one buffer per VariableV2 node, on the device the
 * node is placed on, from that device's allocator (so limits and statistics count it). The
 * store belongs to the session, not to an executor: a session rebuilds its executor when
 * the graph grows, and the values must survive that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

typedef struct slot {
  bool allocated, initialized;
  int dev;
  size_t bytes; /* the variable's bytes, kept so that a run does not ask graph and ops again */
  clg_block blk;
} slot;

struct clg_var_store {
  clg_process *proc;
  slot *slots; /* by node index */
  int cap;
};

clg_code clg_var_store_new(clg_process *p, clg_var_store **out)
{
  clg_var_store *s = calloc(1, sizeof *s);
  if (!s)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a session's variables");
  s->proc = p;
  *out = s;
  return CLG_OK;
}

static void slot_release(clg_var_store *s, slot *v)
{
  if (!v->allocated)
    return;
  clg_devices *devs = clg_process_devices(s->proc);
  clg_device *dev = clg_devices_at(devs, v->dev);
  clg_allocator *a;
  clg_device_ops_of(dev)->finish(dev);
  if (clg_process_allocator(s->proc, v->dev, &a) == CLG_OK)
    clg_allocator_free(a, &v->blk, NULL);
  memset(v, 0, sizeof *v);
}

void clg_var_store_free(clg_var_store *s)
{
  if (!s)
    return;
  for (int i = 0; i < s->cap; i++)
    slot_release(s, &s->slots[i]);
  free(s->slots);
  free(s);
}

static slot *slot_of(clg_var_store *s, int index)
{
  if (index >= s->cap) {
    int cap = s->cap ? s->cap : 16;
    while (cap <= index)
      cap *= 2;
    slot *grown = realloc(s->slots, sizeof *grown * (size_t)cap);
    if (!grown)
      return NULL;
    memset(grown + s->cap, 0, sizeof *grown * (size_t)(cap - s->cap));
    s->slots = grown;
    s->cap = cap;
  }
  return &s->slots[index];
}

clg_code clg_var_store_block(clg_var_store *s, const clg_node *n, int dev, clg_block *out)
{
  slot *v = slot_of(s, n->index);
  if (!v)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for variable '%s'", n->name);
  if (v->allocated && v->dev != dev) /* placed elsewhere now: its value does not follow */
    slot_release(s, v);
  if (!v->allocated) {
    clg_allocator *a;
    size_t bytes = clg_node_out_bytes(n, 0);
    clg_code code = clg_process_allocator(s->proc, dev, &a);
    if (code == CLG_OK)
      code = clg_allocator_alloc(a, bytes ? bytes : 1, &v->blk);
    if (code != CLG_OK) {
      char shape[96];
      return clg_error_prefix("variable '%s' (shape %s, %s): ", n->name,
                              clg_node_shape_string(n, shape, sizeof shape),
                              clg_dtype_name(n->outs[0].dtype));
    }
    v->allocated = true;
    v->initialized = false;
    v->dev = dev;
    v->bytes = bytes;
    char shape[96], what[200];
    snprintf(what, sizeof what, "%s (%s) %s", n->name, n->op,
             clg_node_shape_string(n, shape, sizeof shape));
    clg_allocator_label(a, &v->blk, what); /* for memory maps; a failure only loses the name */
  }
  *out = v->blk;
  out->size = v->bytes;
  return CLG_OK;
}

bool clg_var_store_initialized(const clg_var_store *s, const clg_node *n)
{
  return n->index < s->cap && s->slots[n->index].allocated && s->slots[n->index].initialized;
}

void clg_var_store_set_initialized(clg_var_store *s, const clg_node *n)
{
  if (n->index < s->cap && s->slots[n->index].allocated)
    s->slots[n->index].initialized = true;
}

clg_code clg_var_uninitialized(const clg_node *var, const clg_node *reader)
{
  /* TensorFlow's text first: programs match on it. */
  return clg_error(CLG_FAILED_PRECONDITION,
                   "Attempting to use uninitialized value %s\n\t [[Node: %s = %s(...)]]", var->name,
                   reader ? reader->name : var->name, reader ? reader->op : var->op);
}
