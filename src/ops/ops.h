/* The ops module's door: the op registry.
 *
 * An op is a record (clg_op_def, declared below the graph in schema/schema.h): its
 * TensorFlow type name, inputs and outputs, typed attributes with defaults, shape and dtype
 * inference, its kernels per device kind (each with a predicate saying which nodes and
 * devices it serves), whether an output may reuse an input's buffer, and a slot for its
 * gradient. One file per op (or small family) under src/ops/ defines it, with its gradient
 * and typed builder; op_list.h lists them, registry.c finds them by name (clg_op, the
 * by-name builder, is here too), gradients.c walks a graph's gradients. This module sits
 * above the graph: it builds through graph/graph.h, and the graph never includes it. The
 * placer, the executor and error texts ask this module; nothing else compares op names.
 *
 * This header sees no OpenCL: devices, blocks and allocators are opaque here. */
#ifndef CLG_OPS_H
#define CLG_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "clgraph/graph.h"
#include "core/core.h"
#include "graph/graph.h"
#include "schema/schema.h"

struct clg_device;
struct clg_block;
struct clg_allocator;
struct clg_cluster;

/* --- kernels --------------------------------------------------------------------------- */

/* What a kernel gets to run one node. in[i] and out[i] are blocks of the device: host
 * pointers in .host for the host kind, (cl_mem, offset) for OpenCL. An output may be the
 * same block as the input the op allows in place (clg_op_def.inplace). */
typedef struct clg_kernel_ctx {
  struct clg_device *dev;
  int device_index;
  const clg_node *node;
  const struct clg_block *in;
  const struct clg_block *out;
  struct clg_allocator *alloc;     /* the device's allocator, for scratch not planned */
  const struct clg_block *scratch; /* the plan's scratch for this node (kernel's scratch()) */
  /* Logs a warning once per (device, reason) for the life of the process state. */
  void (*warn_once)(void *warn_ctx, int device, const char *reason, const char *message);
  void *warn_ctx;
  struct clg_cluster *cluster; /* the run's cluster (collective ops), or NULL: one task */
} clg_kernel_ctx;

typedef struct clg_kernel_def {
  clg_device_kind kind;
  /* Whether this kernel serves node n (its dtypes and attributes) on dev; NULL: always. n has
   * every input, output and attribute its op declares (a variadic op: num_inputs >= 1), on a
   * built node as on clg_backend_supported's stand-in, so a predicate may read any of them. */
  bool (*supports)(const clg_node *n, const struct clg_device *dev);
  clg_code (*run)(const clg_kernel_ctx *ctx);
  /* Optional: bytes of scratch the kernel wants for n on dev; the plan holds them in the
   * device's arena for the node's step (ctx->scratch), so no run allocates them. */
  clg_code (*scratch)(const clg_node *n, struct clg_device *dev, size_t *bytes);
  /* Optional: compiles what the first run would (a session's warm option). */
  clg_code (*warm)(const clg_node *n, struct clg_device *dev);
} clg_kernel_def;

/* --- the registry ---------------------------------------------------------------------- */

/* The op named `name`, or NULL. */
const clg_op_def *clg_op_find(const char *name);
/* Every registered op (for listings and tests). */
int clg_op_count(void);
const clg_op_def *clg_op_at(int i);

/* The VariableV2 node whose buffer input i of n refers to (following update ops, whose
 * output 0 is their variable), or NULL when input i is not a variable reference. */
const clg_node *clg_node_ref_variable(const clg_node *n, int i);

/* --- helpers for op files --------------------------------------------------------------- */

/* Sets output i's dtype and shape through the one checked path: rank in range, dims >= 0,
 * element count bounded so that byte sizes fit (INVALID_ARGUMENT naming the node). */
clg_code clg_node_set_output(clg_node *n, int i, clg_dtype dtype, int rank, const int64_t *dims);
/* Input i's descriptor (the producer's output). */
const clg_out_desc *clg_node_in(const clg_node *n, int i);
/* Output i's descriptor. */
const clg_out_desc *clg_node_out(const clg_node *n, int i);
/* Attribute i (in the def's order). */
const clg_attr_value *clg_node_attr(const clg_node *n, int i);
clg_attr_value *clg_node_attr_mut(clg_node *n, int i);
/* Predicates for kernels: every input and output has dtype float32 (or float32/float64 with
 * fp64 on dev). */
bool clg_node_all_dtype(const clg_node *n, clg_dtype dtype);
bool clg_kernel_float_or_double(const clg_node *n, const struct clg_device *dev);

/* The geometry of a window op over an NHWC input; the layout matches clg_window in
 * cl/nn.cl. Output (oh, ow) reads input rows oh*sh - pt + a*dh (a < kh), and so on. */
typedef struct clg_window {
  int64_t n, h, w, c; /* input */
  int64_t oh, ow;     /* output */
  int64_t kh, kw;     /* window or filter */
  int64_t sh, sw;     /* strides */
  int64_t dh, dw;     /* dilations */
  int64_t pt, pl;     /* padding before */
  int64_t cout, kdim; /* Conv2D: output channels, kh*kw*c */
} clg_window;

/* The values of input i when its producer is a Const of int32 or int64 holding a scalar or
 * a vector of at most max values (axes, shapes, perms): INVALID_ARGUMENT naming the node and
 * `what` otherwise (shapes are static here, so these inputs must be constants). */
clg_code clg_node_const_ints(const clg_node *n, int i, const char *what, int max, int64_t *vals,
                             int *count);
/* Window ops (Conv2D, pooling, their gradients): the one checked path for their geometry.
 * From g's input (h, w), window (kh, kw), strides and dilations (all checked: dims >= 0,
 * strides and dilations >= 1), sets the output size (oh, ow) and padding before (pt, pl)
 * with TensorFlow's SAME/VALID arithmetic on the effective window (k - 1) * d + 1, computed
 * exactly: VALID with a window larger than the input is TensorFlow's "Negative dimension
 * size caused by subtracting 3 from 2 ..."; under SAME a dilation whose window passes
 * INT64_MAX becomes a smaller one reaching the same input elements (only an odd filter's
 * centre tap can), so that every index a kernel computes fits in int64. Then kdim, the taps
 * per output kh * kw * c (Conv2D), checked the same way. Errors name the node. */
clg_code clg_window_geometry(const clg_node *n, bool same, clg_window *g);
clg_code clg_window_taps(const clg_node *n, clg_window *g);
/* A [1,h,w,1] list attribute; padding "SAME" or "VALID"; data_format "NHWC". */
clg_code clg_window_attrs(const clg_node *n, const clg_attr_value *list, const char *what,
                          int64_t *h, int64_t *w);
clg_code clg_padding_attr(const clg_node *n, const clg_attr_value *p, bool *same);
clg_code clg_nhwc_attr(const clg_node *n, const clg_attr_value *f);
/* A Const vector of n values (the typed builders' shapes, axes and perms), and a scalar one
 * (k): int32, or int64 when a value does not fit in int32, so that no value is cut. */
clg_node *clg_const_ints(clg_graph *g, int n, const int64_t *v);
clg_node *clg_const_int(clg_graph *g, int64_t v);

/* Inference of an element-wise op with one input: attribute 0 is T (clg_attrs_T), the
 * output has the input's dtype and shape. */
clg_code clg_infer_elementwise_unary(clg_node *n);
/* The numpy broadcast shape of a and b into rank/dims, or TensorFlow's INVALID_ARGUMENT
 * "Incompatible shapes: [2,3] vs. [4]" naming the node. */
clg_code clg_infer_broadcast(clg_node *n, const clg_out_desc *a, const clg_out_desc *b, int *rank,
                             int64_t *dims);
extern const clg_attr_def clg_attrs_T[1];
/* For gradient functions: a node of def on these inputs, named by default (inside the
 * caller's name scope), as an output (NULL node on error, which stays sticky). */
clg_output clg_grad_build(clg_graph *g, const clg_op_def *def, int num_inputs,
                          const clg_output *inputs, int num_attrs, const clg_attr *attrs);
/* A scalar Const of dtype holding value. */
clg_output clg_grad_scalar(clg_graph *g, clg_dtype dtype, double value);
/* Every op's definition, clg_op_<Name> (the list: op_list.h). */
#define CLG_OP(name) extern const clg_op_def clg_op_##name;
#include "ops/op_list.h"
#undef CLG_OP
/* Gradient functions that live beside their gradient ops (conv2d_grad.c, nn_grad.c). */
clg_code clg_grad_conv2d(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_pool(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_lrn(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_bias_add(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);

#endif
