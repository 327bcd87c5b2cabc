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
/* Input i's tensor when its producer is a Const of int32 or int64 (any shape), with the same
 * errors otherwise. */
clg_code clg_node_const_int_tensor(const clg_node *n, int i, const char *what,
                                   const clg_tensor **out);
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
/* Whether padding is "EXPLICIT" and then its pads (t, b, l, r into p) from explicit_paddings
 * e (TF 2's [0,0,t,b,l,r,0,0]): 8 values in [0, 2^31), zero in the batch and depth dims;
 * under SAME or VALID e must be empty or unset. Conv2D's and MaxPool's. */
clg_code clg_explicit_pads(const clg_node *n, const clg_attr_value *padding,
                           const clg_attr_value *e, bool *explicit, int64_t *p);
clg_code clg_nhwc_attr(const clg_node *n, const clg_attr_value *f);
/* A Const vector of n values (the typed builders' shapes, axes and perms), and a scalar one
 * (k): int32, or int64 when a value does not fit in int32, so that no value is cut. */
clg_node *clg_const_ints(clg_graph *g, int n, const int64_t *v);
clg_node *clg_const_int(clg_graph *g, int64_t v);
/* StridedSlice's spec resolved as TensorFlow resolves it (strided_slice.c): per input dim
 * the first index, the stride and the element count taken, and the output's dims (shrunk
 * dims gone, new axes in). Errors name the node. */
typedef struct clg_slice_spec {
  int rank;
  int64_t begin[CLG_MAX_RANK], stride[CLG_MAX_RANK], size[CLG_MAX_RANK];
  int out_rank;
  int64_t out_dims[CLG_MAX_RANK];
} clg_slice_spec;
clg_code clg_strided_slice_spec(const clg_node *n, clg_slice_spec *s);
/* GatherV2's axis in [0, rank) (array_tf2.c), and Range's start, delta and element count
 * from its Const inputs. Errors name the node. */
clg_code clg_gather_axis(const clg_node *n, int *axis);
clg_code clg_range_values(const clg_node *n, double *start, double *delta, int64_t *count);
/* The split axis of Unpack, Split and SplitV in [0, rank) of the split value. */
clg_code clg_split_axis(const clg_node *n, int *axis);

/* Sets dtype attribute `at` to dtype, the input's (inputs: the inputs', all of one dtype); one
 * given already must agree, else INVALID_ARGUMENT "attribute T is float32 but the input is
 * int32" ("the inputs are") naming the node. */
clg_code clg_infer_dtype_attr(clg_node *n, int at, clg_dtype dtype, bool inputs);
/* Inference of an element-wise op with one input: attribute 0 is T (clg_attrs_T), the
 * output has the input's dtype and shape. */
clg_code clg_infer_elementwise_unary(clg_node *n);
/* The numpy broadcast shape of a and b into rank/dims, or TensorFlow's INVALID_ARGUMENT
 * "Incompatible shapes: [2,3] vs. [4]" naming the node. */
clg_code clg_infer_broadcast(clg_node *n, const clg_out_desc *a, const clg_out_desc *b, int *rank,
                             int64_t *dims);
extern const clg_attr_def clg_attrs_T[1];
/* One op with one output, one line per op (the element-wise files define theirs so): NIN
 * inputs, NATTRS attributes ATTRS, inference INFER, output 0 may reuse input INPLACE (-1:
 * none), gradient GRAD (NULL: none). */
#define CLG_OP_DEF1(OP, NIN, NATTRS, ATTRS, INFER, INPLACE, GRAD)                                  \
  const clg_op_def clg_op_##OP = {                                                                 \
      .name = #OP,                                                                                 \
      .num_inputs = NIN,                                                                           \
      .num_outputs = 1,                                                                            \
      .num_attrs = NATTRS,                                                                         \
      .attrs = ATTRS,                                                                              \
      .infer = INFER,                                                                              \
      .inplace = INPLACE,                                                                          \
      .grad = GRAD,                                                                                \
  };
/* An element-wise op of one input over T; its output may reuse the input's buffer. */
#define CLG_UNARY_DEF(OP, GRAD)                                                                    \
  CLG_OP_DEF1(OP, 1, 1, clg_attrs_T, clg_infer_elementwise_unary, 0, GRAD)
/* An element-wise op of two inputs over T with numpy broadcasting (clg_infer_binary). */
#define CLG_BINARY_DEF(OP, INPLACE, GRAD)                                                          \
  CLG_OP_DEF1(OP, 2, 1, clg_attrs_T, clg_infer_binary, INPLACE, GRAD)
/* The binary ops' inference (binary.c): one dtype, attribute T, the broadcast shape; bool out
 * of the comparisons (Equal, GreaterEqual); Prelu float only. Errors name the node. */
clg_code clg_infer_binary(clg_node *n);
/* The typed builders' node of def on x (one input) or on a and b (two), named name. */
clg_node *clg_unary_build(clg_graph *g, const clg_op_def *def, const char *name, clg_node *x);
clg_node *clg_binary_build(clg_graph *g, const clg_op_def *def, const char *name, clg_node *a,
                           clg_node *b);
/* For gradient functions: a node of def on these inputs, named by default (inside the
 * caller's name scope), as an output (NULL node on error, which stays sticky). */
clg_output clg_grad_build(clg_graph *g, const clg_op_def *def, int num_inputs,
                          const clg_output *inputs, int num_attrs, const clg_attr *attrs);
/* A scalar Const of dtype holding value. */
clg_output clg_grad_scalar(clg_graph *g, clg_dtype dtype, double value);
/* d summed over the axes along which `input` was broadcast to `out`, reshaped to its shape
 * (TensorFlow's BroadcastGradientArgs, Sum and Reshape): a binary op's input gradient. */
clg_output clg_grad_unbroadcast(clg_graph *g, clg_output d, const clg_out_desc *input,
                                const clg_out_desc *out);
/* Every op's definition, clg_op_<Name> (the list: op_list.h). */
#define CLG_OP(name) extern const clg_op_def clg_op_##name;
#include "ops/op_list.h"
#undef CLG_OP
/* Gradient functions that live beside their gradient ops (conv2d_grad.c, nn_grad.c). */
clg_code clg_grad_conv2d(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_pool(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_lrn(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_bias_add(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);

/* What the kernels of these ops read off a node, defined in the op files (the op's
 * semantics: the backends' kernels compute with them; attributes checked at build). */
/* MatMul: the transposes, op(a) [m,k] and op(b) [k,n]. */
void clg_matmul_dims(const clg_node *n, bool *ta, bool *tb, size_t *m, size_t *nn, size_t *k);
/* Conv2D's geometry; Conv2DBackpropInput's and Conv2DBackpropFilter's (the forward
 * convolution's). */
clg_code clg_conv2d_geometry(const clg_node *n, clg_window *g);
clg_code clg_conv2d_grad_geometry(const clg_node *n, clg_window *g);
/* MaxPool's and AvgPool's geometry; MaxPoolGrad's and AvgPoolGrad's (the forward pooling's). */
clg_code clg_pool_geometry(const clg_node *n, clg_window *g);
clg_code clg_pool_grad_geometry(const clg_node *n, clg_window *g);
/* LRN's and LRNGrad's parameters. */
typedef struct clg_lrn_params {
  int64_t depth_radius;
  double bias, alpha, beta;
} clg_lrn_params;
clg_lrn_params clg_lrn_params_of(const clg_node *n);
/* RandomUniform, RandomStandardNormal, TruncatedNormal, ConstFill: the node's values (count
 * elements of its dtype) into out on the host; they depend on the seeds only, never on the
 * device (OpenCL kernels generate on the host and upload). */
void clg_random_generate(const clg_node *n, void *out);
/* SparseSoftmaxCrossEntropyWithLogits: TensorFlow's INVALID_ARGUMENT for the first of b labels
 * (of dtype t, int32 or int64) outside [0, k), naming the node. */
clg_code clg_xent_check_labels(const clg_node *n, const void *labels, clg_dtype t, size_t b,
                               size_t k);
/* InTopKV2's k (its Const input). */
int64_t clg_in_top_k_k(const clg_node *n);
/* Sum, Mean, Max, L2Loss, ArgMax: which axes of input 0 are reduced (red[CLG_MAX_RANK]). */
clg_code clg_reduce_axes(const clg_node *n, bool *red);

/* TensorFlow graphs (issue 23): the checked geometry of the ops real graphs use, shared by
 * their op files and their kernels (their definitions are listed in op_list.h). */
/* Slice's begin and size (-1 resolved), Pad's paddings, ConcatV2's axis (non-negative), and
 * whether a MirrorPad(Grad)'s mode is SYMMETRIC (array_tf.c). */
clg_code clg_slice_begin(const clg_node *n, int64_t *begin, int64_t *size);
clg_code clg_pad_paddings(const clg_node *n, int64_t *before, int64_t *after);
clg_code clg_concat_axis(const clg_node *n, int *axis);
bool clg_mirror_symmetric(const clg_node *n);
/* The geometry of a depthwise op (depthwise.c): input [n,h,w,c], filter [kh,kw,c,*mult],
 * cout = c * mult output channels. */
clg_code clg_depthwise_geometry(const clg_node *n, clg_window *g, int64_t *mult);
/* ResizeBilinear's geometry (resize.c): images [n,h,w,c] resized to [n,oh,ow,c] with
 * TensorFlow's float scales. */
typedef struct clg_resize {
  int64_t n, h, w, c, oh, ow;
  float hs, ws;
  bool half_pixel;
  bool align; /* align_corners (ResizeNearestNeighbor rounds with it) */
} clg_resize;
void clg_resize_geometry(const clg_node *n, clg_resize *r);

/* ONNX import and tfjs graphs, 4 (issues 23, 24). */
/* BatchMatMulV2 (batch_matmul.c): the transposes, each batch's op(x) [m,k] x op(y) [k,n],
 * the output's batch count and batch dims, and x's and y's strides over them in matrices
 * (0 where broadcast); clg_batch_matmul_batch gives output batch b's matrices of x and y. */
typedef struct clg_batch_matmul {
  bool ta, tb;
  size_t m, n, k, batches;
  int rank;
  size_t dims[CLG_MAX_RANK], sx[CLG_MAX_RANK], sy[CLG_MAX_RANK];
} clg_batch_matmul;
void clg_batch_matmul_geometry(const clg_node *n, clg_batch_matmul *g);
void clg_batch_matmul_batch(const clg_batch_matmul *g, size_t b, size_t *bx, size_t *by);
/* GatherNd's and ScatterNd's index tuples (array_tf3.c): q values each (the last dim of
 * indices), count of them, each addressing a slice of `slice` elements in the first q dims
 * (dims) of GatherNd's params or ScatterNd's output. */
typedef struct clg_nd_index {
  int q;
  size_t count, slice;
  int64_t dims[CLG_MAX_RANK];
} clg_nd_index;
void clg_nd_index_of(const clg_node *n, clg_nd_index *ix);
/* OneHot's axis in [0, rank(indices)]; ReverseV2's reversed dims (rev[CLG_MAX_RANK]);
 * Cumsum's axis in [0, rank) and its attributes; TopKV2's k. Errors name the node. */
int clg_one_hot_axis(const clg_node *n);
clg_code clg_reverse_axes(const clg_node *n, bool *rev);
clg_code clg_cumsum_params(const clg_node *n, int *axis, bool *exclusive, bool *reverse);
int64_t clg_top_k_k(const clg_node *n);
/* ResizeNearestNeighbor (resize.c, geometry from clg_resize_geometry): the source row (or
 * column) of output i along a dim of `in` elements at that dim's scale. The OpenCL kernel
 * computes the same in float. */
/* Einsum's equation resolved (einsum.c): labels 0..51 for the letters, 52 + j for the j-th
 * broadcast ("...") dim; each label's size, each input axis's label, the output's labels in
 * order and the summed ones. */
enum { CLG_EINSUM_LABELS = 52 + CLG_MAX_RANK };
typedef struct clg_einsum {
  int nin;
  int64_t size[CLG_EINSUM_LABELS]; /* -1: unused */
  int in_rank[2], in_label[2][CLG_MAX_RANK];
  int out_rank, out_label[CLG_MAX_RANK];
  int sum_count, sum_label[CLG_EINSUM_LABELS];
} clg_einsum;
clg_code clg_einsum_spec(const clg_node *n, clg_einsum *e);
int64_t clg_resize_nearest_source(const clg_resize *r, int64_t i, float scale, int64_t in);

/* tfjs graphs, 5 (issue 23). SparseToDense (array_tf4.c): the count of indices and the values
 * in each (num_dims), and each index's element offset in the output (offsets may be NULL:
 * checked only), with TensorFlow's INVALID_ARGUMENT for an index out of bounds and, under
 * validate_indices, one out of order or repeated, naming the node. */
void clg_sparse_to_dense_dims(const clg_node *n, size_t *num_elems, int *num_dims);
clg_code clg_sparse_to_dense_offsets(const clg_node *n, const void *indices, size_t *offsets);

/* SpaceToBatchND and BatchToSpaceND (space_batch.c): the m block dims, block_shape, the
 * paddings (crops) before and after each and the product of block_shape, from their Const
 * inputs, checked with TensorFlow's errors naming the node. */
typedef struct clg_space_batch_spec {
  int m;
  int64_t block[CLG_MAX_RANK], before[CLG_MAX_RANK], after[CLG_MAX_RANK];
  int64_t blocks;
} clg_space_batch_spec;
clg_code clg_space_batch_spec_of(const clg_node *n, clg_space_batch_spec *s);

/* Merge (control.c): its inputs' deadness travels as bits of an unsigned. */
enum { CLG_MERGE_MAX_INPUTS = 32 };

#endif
