/* Kernel lookup: which kernel of a device's kind runs a node (the kinds' kernel_list.h files
 * name their kernel sets), and the stand-in node that asks it for an op and a dtype. */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "graph/graph.h"

#define CLG_KERNELS(family) extern const clg_kernel_set clg_host_kernels_##family;
#include "backends/host/kernel_list.h"
#undef CLG_KERNELS
#define CLG_KERNELS(family) extern const clg_kernel_set clg_opencl_kernels_##family;
#include "backends/opencl/kernel_list.h"
#undef CLG_KERNELS

#define CLG_KERNELS(family) &clg_host_kernels_##family,
static const clg_kernel_set *const host_sets[] = {
#include "backends/host/kernel_list.h"
};
#undef CLG_KERNELS
#define CLG_KERNELS(family) &clg_opencl_kernels_##family,
static const clg_kernel_set *const opencl_sets[] = {
#include "backends/opencl/kernel_list.h"
};
#undef CLG_KERNELS

static const clg_kernel_set *const *kernel_sets(clg_device_kind kind, int *count)
{
  if (kind == CLG_KIND_OPENCL) {
    *count = (int)(sizeof opencl_sets / sizeof opencl_sets[0]);
    return opencl_sets;
  }
  *count = (int)(sizeof host_sets / sizeof host_sets[0]);
  return host_sets;
}

static clg_device_kind kind_of(const clg_device *dev) { return clg_device_ops_of(dev)->kind; }

/* int8, int16, the unsigned integers: host kernels only (no OpenCL kernel is built for them),
 * so soft placement puts their nodes on CPU:0, as TensorFlow 1.x does for an op without a GPU
 * kernel. */
static bool host_only_dtype(clg_dtype t)
{
  return t == CLG_INT8 || t == CLG_INT16 || clg_dtype_is_unsigned(t);
}

bool clg_node_has_host_only_dtype(const clg_node *n)
{
  for (int i = 0; i < n->num_inputs; i++) {
    const clg_out_desc *d = clg_node_in(n, i);
    if (d && host_only_dtype(d->dtype))
      return true;
  }
  for (int i = 0; i < n->num_outputs; i++)
    if (host_only_dtype(n->outs[i].dtype))
      return true;
  return false;
}

const clg_kernel_def *clg_backend_find_kernel(const clg_node *n, const clg_device *dev)
{
  if (!n || !dev)
    return NULL;
  clg_device_kind kind = kind_of(dev);
  int num_sets = 0;
  if (kind == CLG_KIND_OPENCL && clg_node_has_host_only_dtype(n))
    return NULL;
  const clg_kernel_set *const *sets = kernel_sets(kind, &num_sets);
  for (int s = 0; s < num_sets; s++)
    for (int i = 0; i < sets[s]->count; i++) {
      const clg_kernel_entry *e = &sets[s]->entries[i];
      if (e->op == n->def && (!e->kernel.supports || e->kernel.supports(n, dev)))
        return &e->kernel;
    }
  return NULL;
}

bool clg_backend_supported(const char *name, clg_dtype dtype, const clg_device *dev)
{
  const clg_op_def *def = clg_op_find(name);
  if (!def || !dev || clg_dtype_size(dtype) == 0)
    return false;
  /* A stand-in node whose every input and output has this dtype, with as many inputs,
   * outputs and attributes as the op declares (a predicate may read any of them), the
   * attributes at their defaults and every dtype attribute this dtype. */
  int num_inputs = def->num_inputs == CLG_OP_VARIADIC ? 2 : def->num_inputs;
  int num_outputs = def->num_outputs == CLG_OP_VARIADIC ? 2 : def->num_outputs;
  clg_out_desc desc = {dtype, 0, {0}};
  clg_node src;
  memset(&src, 0, sizeof src);
  src.num_outputs = 1;
  src.outs = &desc;
  clg_output *in = calloc((size_t)num_inputs + 1, sizeof *in);
  clg_out_desc *outs = calloc((size_t)num_outputs + 1, sizeof *outs);
  clg_attr_value *attrs = calloc((size_t)def->num_attrs + 1, sizeof *attrs);
  bool found = false;
  if (in && outs && attrs) {
    for (int i = 0; i < num_inputs; i++)
      in[i] = (clg_output){&src, 0};
    for (int i = 0; i < num_outputs; i++)
      outs[i] = desc;
    for (int i = 0; i < def->num_attrs; i++) {
      const clg_attr_def *d = &def->attrs[i];
      attrs[i] = (clg_attr_value){.set = d->has_default || d->type == CLG_ATTR_DTYPE,
                                  .type = d->type,
                                  .i = d->def_i,
                                  .f = d->def_f,
                                  .b = d->def_i != 0,
                                  .s = (char *)d->def_s,
                                  .dtype = dtype};
    }
    clg_node fake;
    memset(&fake, 0, sizeof fake);
    fake.def = def;
    fake.op = def->name;
    fake.name = (char *)def->name;
    fake.num_inputs = num_inputs;
    fake.inputs = in;
    fake.num_outputs = num_outputs;
    fake.outs = outs;
    fake.attrs = attrs;
    found = clg_backend_find_kernel(&fake, dev) != NULL;
  }
  free(in);
  free(outs);
  free(attrs);
  return found;
}

bool clg_backend_takes_epilogue(const clg_kernel_def *k, const clg_node *n)
{
  /* The host kernels of these ops apply it (backends/host/epilogue.c); no other does. */
  const clg_op_def *d = n->def;
  return k && k->kind == CLG_KIND_HOST &&
         (d == &clg_op_Conv2D || d == &clg_op_MatMul || d == &clg_op_DepthwiseConv2dNative);
}
