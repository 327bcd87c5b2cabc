/* clgraph: building graphs.
 *
 * A graph holds nodes; each node has an op, inputs, a dtype, a static shape and a
 * requested device (from the device scopes open when it was built). Builders infer shape
 * and dtype at once. Errors are sticky, as in cairo: the first failing builder records
 * its error on the graph, returns NULL, and every later builder returns NULL too. Check
 * once, at the end:
 *
 *   clg_graph *g = clg_graph_new();
 *   int64_t da[2] = {2, 3}, db[2] = {3, 2};
 *   float v[6] = {1, 2, 3, 4, 5, 6};
 *   clg_graph_push_device(g, "/cpu:0");             // with tf.device('/cpu:0'):
 *   clg_node *a = clg_const_f32(g, "a", 2, da, v);
 *   clg_node *b = clg_const_f32(g, "b", 2, db, v);
 *   clg_graph_pop_device(g);
 *   clg_node *c = clg_matmul(g, NULL, a, b, false, false);   // named "MatMul"
 *   if (clg_graph_status(g) != CLG_OK)
 *     fprintf(stderr, "%s\n", clg_graph_error(g));
 *
 * Default names follow TensorFlow: the op type, then "_1", "_2", ... ("Const",
 * "Const_1", "MatMul", "AddN"). A given name that is already taken is INVALID_ARGUMENT.
 * Nodes belong to their graph and are freed with it.
 */
#ifndef CLGRAPH_GRAPH_H
#define CLGRAPH_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "clgraph/status.h"
#include "clgraph/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_graph clg_graph;
typedef struct clg_node clg_node;

/* One end of an edge: output `index` of `node`, which TensorFlow writes "name:index"
 * ("MatMul" is "MatMul:0"). Builders that take clg_node * use its output 0. */
typedef struct clg_output {
  clg_node *node;
  int index;
} clg_output;

/* Output i of n, as a value (n may be NULL: builders then report the NULL input). */
static inline clg_output clg_out(clg_node *n, int i)
{
  clg_output o = {n, i};
  return o;
}

/* The types of op attributes (TensorFlow's AttrValue, in miniature). */
typedef enum clg_attr_type {
  CLG_ATTR_INT = 1,  /* v.i */
  CLG_ATTR_FLOAT,    /* v.f */
  CLG_ATTR_BOOL,     /* v.b */
  CLG_ATTR_STRING,   /* v.s (copied) */
  CLG_ATTR_DTYPE,    /* v.dtype */
  CLG_ATTR_INT_LIST, /* v.list: n values (copied) */
  CLG_ATTR_SHAPE,    /* v.list: n = rank, the dims (copied) */
  CLG_ATTR_TENSOR    /* v.tensor (copied) */
} clg_attr_type;

/* A named attribute value, as given to clg_op. */
typedef struct clg_attr {
  const char *name;
  clg_attr_type type;
  union {
    int64_t i;
    double f;
    int b;
    const char *s;
    clg_dtype dtype;
    struct {
      int n;
      const int64_t *v;
    } list;
    const clg_tensor *tensor;
  } v;
} clg_attr;

static inline clg_attr clg_attr_int(const char *name, int64_t v)
{
  clg_attr a = {name, CLG_ATTR_INT, {.i = v}};
  return a;
}
static inline clg_attr clg_attr_float(const char *name, double v)
{
  clg_attr a = {name, CLG_ATTR_FLOAT, {.f = v}};
  return a;
}
static inline clg_attr clg_attr_bool(const char *name, int v)
{
  clg_attr a = {name, CLG_ATTR_BOOL, {.b = v != 0}};
  return a;
}
static inline clg_attr clg_attr_string(const char *name, const char *v)
{
  clg_attr a = {name, CLG_ATTR_STRING, {.s = v}};
  return a;
}
static inline clg_attr clg_attr_dtype(const char *name, clg_dtype v)
{
  clg_attr a = {name, CLG_ATTR_DTYPE, {.dtype = v}};
  return a;
}
static inline clg_attr clg_attr_int_list(const char *name, int n, const int64_t *v)
{
  clg_attr a = {name, CLG_ATTR_INT_LIST, {.list = {n, v}}};
  return a;
}
static inline clg_attr clg_attr_shape(const char *name, int rank, const int64_t *dims)
{
  clg_attr a = {name, CLG_ATTR_SHAPE, {.list = {rank, dims}}};
  return a;
}
static inline clg_attr clg_attr_tensor(const char *name, const clg_tensor *v)
{
  clg_attr a = {name, CLG_ATTR_TENSOR, {.tensor = v}};
  return a;
}

/* NULL only when host memory runs out. */
clg_graph *clg_graph_new(void);
/* Frees the graph and its nodes. Sessions on the graph must be freed first. */
void clg_graph_free(clg_graph *g);

/* CLG_OK, or the code of the first builder error (sticky). */
clg_code clg_graph_status(const clg_graph *g);
/* The first builder error's message, naming the node ("" if none). */
const char *clg_graph_error(const clg_graph *g);

/* Opens a device scope, as `with tf.device(spec):`. The spec is merged over the enclosing
 * scope (inner fields win). spec NULL or "" resets to no device (tf.device(None)). A
 * malformed spec is INVALID_ARGUMENT naming it (and sticky). Scopes nest. */
clg_code clg_graph_push_device(clg_graph *g, const char *spec);
/* Closes the innermost scope; FAILED_PRECONDITION if none is open. */
clg_code clg_graph_pop_device(clg_graph *g);

/* Opens a name scope, as `with tf.name_scope(scope):`: nodes built inside are named
 * "scope/name", or "scope/Op", "scope/Op_1", ... by default. Scopes nest ("a/b/MatMul").
 * An invalid name is INVALID_ARGUMENT (sticky). */
clg_code clg_graph_push_name_scope(clg_graph *g, const char *scope);
/* Closes the innermost name scope; FAILED_PRECONDITION if none is open. */
clg_code clg_graph_pop_name_scope(clg_graph *g);

/* Builders. name NULL gives the default name. Inputs must be nodes of the same graph. The
 * int64 dims, axes, perms and k the typed builders take become a Const input: int32, or
 * int64 when a value does not fit in int32 (as TensorFlow converts Python ints). */
clg_node *clg_const(clg_graph *g, const char *name, const clg_tensor *value);
clg_node *clg_const_f32(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const float *values);
clg_node *clg_const_f64(clg_graph *g, const char *name, int rank, const int64_t *dims,
                        const double *values);
/* A value fed at run time; its shape is fixed here. */
clg_node *clg_placeholder(clg_graph *g, const char *name, clg_dtype dtype, int rank,
                          const int64_t *dims);
/* [m,k] x [k,n] (after the optional transposes) for rank-2 inputs of one dtype. */
clg_node *clg_matmul(clg_graph *g, const char *name, clg_node *a, clg_node *b, bool transpose_a,
                     bool transpose_b);
/* Element-wise with numpy broadcasting (shapes aligned at the right, each dim equal or 1);
 * others are INVALID_ARGUMENT "Incompatible shapes: [2,3] vs. [4]". Float, and double where
 * the device has it. Maximum is x < y ? y : x; Equal also takes int32 and int64 and gives
 * bool. On the host Add, Sub, Mul, Maximum and the comparisons also take every integer dtype
 * (int8..int64, uint8..uint64; wrapping as TensorFlow's); no OpenCL kernel takes int8, int16
 * or the unsigned ones, so soft placement runs their nodes on CPU:0. */
clg_node *clg_add(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_sub(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_mul(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_real_div(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_maximum(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b);
/* a >= b as bool, broadcast as above (false where either is NaN); float, double, the integers. */
clg_node *clg_greater_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b);
/* tf.where(condition, t, e) of TensorFlow 1.x (op Select): t where condition is true, else e.
 * t and e have one dtype (any) and shape; condition is bool, of t's shape, a scalar, or a
 * vector along t's first dimension (choosing whole rows). */
clg_node *clg_select(clg_graph *g, const char *name, clg_node *condition, clg_node *t, clg_node *e);
/* The sum of n >= 1 inputs of one shape and dtype (tf.add_n). */
clg_node *clg_add_n(clg_graph *g, const char *name, int n, clg_node *const *inputs);
clg_node *clg_identity(clg_graph *g, const char *name, clg_node *x);
/* Element-wise max(x, 0), -x and x * x (float everywhere, double where the device has it). */
clg_node *clg_relu(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_neg(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_square(clg_graph *g, const char *name, clg_node *x);
/* Relu's gradient: gradients where features > 0, else 0 (features: the Relu's output). */
clg_node *clg_relu_grad(clg_graph *g, const char *name, clg_node *gradients, clg_node *features);
/* Element-wise exp, natural log (clg_log_e: clg_log is the logger), sqrt and 1/sqrt (IEEE at
 * the edges: log(0) = -inf, NaN below 0). */
clg_node *clg_exp(clg_graph *g, const char *name, clg_node *x);
/* The largest integer not above x, element-wise (tf.floor; no gradient, as in TensorFlow). */
clg_node *clg_floor(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_log_e(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_sqrt(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_rsqrt(clg_graph *g, const char *name, clg_node *x);
/* x converted to dtype (float, double, half, any integer dtype, bool): float to integer
 * truncates toward zero and saturates to the destination's range (NaN gives 0), integer to
 * integer keeps the low bits (wraps), anything to bool is x != 0 (tf.cast). */
clg_node *clg_cast(clg_graph *g, const char *name, clg_node *x, clg_dtype dtype);
/* A tensor of shape dims with every element the scalar value (tf.fill); the dims become a
 * Const. ZerosLike and OnesLike: x's shape and dtype, filled with 0 or 1. */
clg_node *clg_fill(clg_graph *g, const char *name, int rank, const int64_t *dims, clg_node *value);
clg_node *clg_zeros_like(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_ones_like(clg_graph *g, const char *name, clg_node *x);
/* x with a new shape of the same element count; one dim may be -1 (inferred). The shape
 * becomes a Const (with clg_op, input 1 must be a Const of int32 or int64). */
clg_node *clg_reshape(clg_graph *g, const char *name, clg_node *x, int rank, const int64_t *shape);
/* x with its dims permuted: output dim k is x's dim perm[k] (n = x's rank). */
clg_node *clg_transpose(clg_graph *g, const char *name, clg_node *x, int n, const int64_t *perm);
/* TensorFlow graphs, 2 (issue 23). tf.strided_slice: begin, end and strides of n entries
 * (Consts) with TensorFlow's masks (bit i applies to entry i; masks NULL: all 0). Any dtype. */
typedef struct clg_strided_slice_masks {
  int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
} clg_strided_slice_masks;
clg_node *clg_strided_slice(clg_graph *g, const char *name, clg_node *x, int n,
                            const int64_t *begin, const int64_t *end, const int64_t *strides,
                            const clg_strided_slice_masks *masks);
/* tf.stack: n values of one shape and dtype along a new axis (negative: from the end). */
clg_node *clg_pack(clg_graph *g, const char *name, int n, const clg_output *values, int64_t axis);
/* tf.shape: x's dims as a vector of out_type (int32 or int64). */
clg_node *clg_shape(clg_graph *g, const char *name, clg_node *x, clg_dtype out_type);
/* tfjs's Prelu: x < 0 ? alpha * x : x, numpy broadcasting of x and alpha (the output has
 * the broadcast shape), as tfjs's kernels. Float, and double where the device has it. */
clg_node *clg_prelu(clg_graph *g, const char *name, clg_node *x, clg_node *alpha);
/* tf.nn.depth_to_space, NHWC, TensorFlow's DCR order. Any dtype. */
clg_node *clg_depth_to_space(clg_graph *g, const char *name, clg_node *x, int64_t block_size);
/* tf.space_to_batch_nd: x [batch] + spatial + rest, block_shape [M] and paddings [M, 2] Consts
 * (int32 or int64); the output is [batch * prod(block_shape)] + (padded spatial / block_shape)
 * + rest, zeros where padded. tf.batch_to_space_nd is its inverse with crops [M, 2] for
 * paddings. Any dtype; each is the other's gradient. */
clg_node *clg_space_to_batch_nd(clg_graph *g, const char *name, clg_node *x, clg_node *block_shape,
                                clg_node *paddings);
clg_node *clg_batch_to_space_nd(clg_graph *g, const char *name, clg_node *x, clg_node *block_shape,
                                clg_node *crops);
/* tf.cond's parts (TensorFlow's dead tensors): Switch forwards data to output 1 if the bool
 * scalar pred is true, else to output 0; the other output is dead, and so is every node that
 * reads a dead tensor, except Merge, which forwards its first live input (output 0, inputs of
 * one dtype and shape, at most 32) and its index (output 1, int32). Fetching a dead tensor is
 * INVALID_ARGUMENT naming it. */
clg_node *clg_switch(clg_graph *g, const char *name, clg_node *data, clg_node *pred);
clg_node *clg_merge(clg_graph *g, const char *name, int n, const clg_output *inputs);
/* tf.gather (GatherV2, batch_dims 0): params' slices along axis picked by indices (int32 or
 * int64); the axis becomes a Const. Any dtype of params. */
clg_node *clg_gather(clg_graph *g, const char *name, clg_node *params, clg_node *indices,
                     int64_t axis);
/* tf.range(start, limit, delta) of dtype (float32, float64, int32, int64), from Consts. */
clg_node *clg_range(clg_graph *g, const char *name, clg_dtype dtype, double start, double limit,
                    double delta);
/* tf.tile: x repeated multiples[k] times along dim k (multiples a Const of x's rank). */
clg_node *clg_tile(clg_graph *g, const char *name, clg_node *x, int n, const int64_t *multiples);
/* tf.unstack: num outputs, x's slices along axis (x's dim there must be num). */
clg_node *clg_unpack(clg_graph *g, const char *name, clg_node *x, int64_t num, int64_t axis);
/* tf.split: num_split equal parts along axis (Split), or parts of the n sizes given (SplitV;
 * one size may be -1: the rest). */
clg_node *clg_split(clg_graph *g, const char *name, clg_node *x, int64_t axis, int64_t num_split);
clg_node *clg_split_v(clg_graph *g, const char *name, clg_node *x, int n, const int64_t *sizes,
                      int64_t axis);
/* Sum, mean and max over the given axes (negative counts from the end; the axes become a
 * Const); keep_dims keeps them as dims of 1 (tf.reduce_sum, ...). Float, double where the
 * device has it. */
clg_node *clg_sum(clg_graph *g, const char *name, clg_node *x, int naxes, const int64_t *axes,
                  bool keep_dims);
clg_node *clg_mean(clg_graph *g, const char *name, clg_node *x, int naxes, const int64_t *axes,
                   bool keep_dims);
clg_node *clg_max(clg_graph *g, const char *name, clg_node *x, int naxes, const int64_t *axes,
                  bool keep_dims);
/* sum(t^2) / 2, a scalar (tf.nn.l2_loss). */
clg_node *clg_l2_loss(clg_graph *g, const char *name, clg_node *t);
/* The index (int64) of the first largest value along axis (tf.argmax). */
clg_node *clg_argmax(clg_graph *g, const char *name, clg_node *x, int axis);
/* Softmax and log-softmax over the last axis. */
clg_node *clg_softmax(clg_graph *g, const char *name, clg_node *logits);
clg_node *clg_log_softmax(clg_graph *g, const char *name, clg_node *logits);
/* logits [B,K], labels [B] (int32 or int64): output 0 is the loss [B] (logsumexp - logit of
 * the label), output 1 the backprop [B,K] (softmax - onehot). A label outside [0, K) fails
 * the run with TensorFlow's INVALID_ARGUMENT "Received a label value of L which is outside
 * the valid range of [0, K)". */
clg_node *clg_sparse_softmax_cross_entropy_with_logits(clg_graph *g, const char *name,
                                                       clg_node *logits, clg_node *labels);
/* Whether targets[b] is among the k largest of predictions[b] (ties count for the target;
 * false for a target out of range or a non-finite prediction in the row): bool [B]. */
clg_node *clg_in_top_k(clg_graph *g, const char *name, clg_node *predictions, clg_node *targets,
                       int64_t k);
/* NHWC convolution (cross-correlation): input [N,H,W,Cin], filter [KH,KW,Cin,Cout], strides
 * [1,sh,sw,1], padding "SAME" or "VALID", dilations [1,dh,dw,1] (NULL: all 1). Float, and
 * double where the device has it. */
clg_node *clg_conv2d(clg_graph *g, const char *name, clg_node *input, clg_node *filter,
                     const int64_t strides[4], const char *padding, const int64_t *dilations);
/* value [..., C] + bias [C] along the last axis. */
clg_node *clg_bias_add(clg_graph *g, const char *name, clg_node *value, clg_node *bias);
/* NHWC pooling with windows ksize [1,kh,kw,1] and strides [1,sh,sw,1]; SAME padding never
 * wins a max and is not counted in an average. */
clg_node *clg_max_pool(clg_graph *g, const char *name, clg_node *x, const int64_t ksize[4],
                       const int64_t strides[4], const char *padding);
clg_node *clg_avg_pool(clg_graph *g, const char *name, clg_node *x, const int64_t ksize[4],
                       const int64_t strides[4], const char *padding);
/* Local response normalization over the channels of an NHWC input:
 * x / (bias + alpha * sum over |c' - c| <= depth_radius of x[c']^2)^beta. */
clg_node *clg_lrn(clg_graph *g, const char *name, clg_node *x, int64_t depth_radius, double bias,
                  double alpha, double beta);
/* AllReduce: the sum ("sum") or mean ("mean") of x over all tasks of the session's cluster,
 * on every task (data-parallel gradients); outside a cluster, x itself. reduction NULL:
 * "sum". float32, float64, int32, int64. Give it no task in its device spec: every task runs
 * its own copy, and all must run the same AllReduce nodes in the same order. */
clg_node *clg_all_reduce(clg_graph *g, const char *name, clg_node *x, const char *reduction);

/* --- TensorFlow graphs' ops (issue 23) ---------------------------------------------------
 * Element-wise 1 / (1 + exp(-x)), tanh(x), min(max(x, 0), 6), |x| and sign(x) (-1, 0 or 1;
 * NaN stays NaN); leaky_relu: x where x > 0, else alpha * x (TensorFlow's default alpha is
 * 0.2). Float, and double where the device has it. */
clg_node *clg_sigmoid(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_tanh(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_relu6(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_abs(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_sign(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_leaky_relu(clg_graph *g, const char *name, clg_node *x, double alpha);
/* a + b (op AddV2, as TensorFlow 2 builds tf.add) and min(a, b) (y < x ? y : x), broadcast as
 * clg_add. */
clg_node *clg_add_v2(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_minimum(clg_graph *g, const char *name, clg_node *a, clg_node *b);
/* floor(a / b) (op FloorDiv) and a - floor(a / b) * b, with b's sign (op FloorMod, Python's %),
 * broadcast as clg_add; float, and every integer dtype on the host (integer division by zero
 * is INVALID_ARGUMENT). */
clg_node *clg_floor_div(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_floor_mod(clg_graph *g, const char *name, clg_node *a, clg_node *b);
/* (x - y) * (x - y) (op SquaredDifference), broadcast as clg_add; float, int32 and int64. */
clg_node *clg_squared_difference(clg_graph *g, const char *name, clg_node *x, clg_node *y);
/* Array ops of any dtype. squeeze: x without the dims of size 1 listed in dims (ndims 0: all
 * of them; negative counts from the end). expand_dims: a dim of 1 inserted at axis (in
 * [-rank-1, rank]). slice: size[k] elements from begin[k] along each dim (-1: to the end).
 * pad: before[k] and after[k] elements around dim k, of constant_value (a scalar node of x's
 * dtype: op PadV2) or 0 (NULL: op Pad). concat: the n >= 2 values joined along axis (op
 * ConcatV2; negative counts from the end). The index arguments become Consts. */
clg_node *clg_squeeze(clg_graph *g, const char *name, clg_node *x, int ndims, const int64_t *dims);
clg_node *clg_expand_dims(clg_graph *g, const char *name, clg_node *x, int64_t axis);
clg_node *clg_slice(clg_graph *g, const char *name, clg_node *x, int rank, const int64_t *begin,
                    const int64_t *size);
clg_node *clg_pad(clg_graph *g, const char *name, clg_node *x, int rank, const int64_t *before,
                  const int64_t *after, clg_node *constant_value);
clg_node *clg_concat(clg_graph *g, const char *name, int n, clg_node *const *values, int64_t axis);
/* pad with x's own values mirrored at each edge: mode "REFLECT" (the edge not repeated; each
 * padding at most dim - 1) or "SYMMETRIC" (repeated; at most dim). Op MirrorPad. */
clg_node *clg_mirror_pad(clg_graph *g, const char *name, clg_node *x, int rank,
                         const int64_t *before, const int64_t *after, const char *mode);
/* NHWC depthwise convolution (op DepthwiseConv2dNative): input [N,H,W,C], filter [KH,KW,C,M],
 * output [N,OH,OW,C*M] (channel c*M+m: input channel c with filter[:,:,c,m]); strides,
 * padding and dilations as clg_conv2d's. Float, and double where the device has it. */
clg_node *clg_depthwise_conv2d(clg_graph *g, const char *name, clg_node *input, clg_node *filter,
                               const int64_t strides[4], const char *padding,
                               const int64_t *dilations);
/* Bilinear resize of NHWC images (float or double) to [N,height,width,C] float, as TensorFlow
 * 1.x's tf.image.resize_bilinear (op ResizeBilinear) with align_corners and
 * half_pixel_centers (not both). */
clg_node *clg_resize_bilinear(clg_graph *g, const char *name, clg_node *images, int64_t height,
                              int64_t width, bool align_corners, bool half_pixel_centers);

/* --- ONNX import's and tfjs graphs' ops (issues 23, 24) ----------------------------------
 * a < b, a > b, a <= b, a != b as bool, broadcast as clg_add (NaN compares false, but != is
 * true); float, double, int32, int64, and bool for not_equal (and clg_equal). pow(a, b) (op Pow; a
 * negative a with an integral b has the sign of a^b, else NaN) and atan2(y, x) (op Atan2), float
 * only, broadcast likewise. */
clg_node *clg_less(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_greater(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_less_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_not_equal(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_pow(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_atan2(clg_graph *g, const char *name, clg_node *y, clg_node *x);
/* Bool and, or (broadcast as clg_add) and not; is_nan and is_inf: a float x's NaN elements and
 * infinite ones (either sign) as bool. */
clg_node *clg_logical_and(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_logical_or(clg_graph *g, const char *name, clg_node *a, clg_node *b);
clg_node *clg_logical_not(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_is_nan(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_is_inf(clg_graph *g, const char *name, clg_node *x);
/* Element-wise math of tf.math and tf.nn, float and double where the device has it: erf, ceil,
 * round (half to even: 2.5 -> 2, -0.5 -> -0), 1 / x, the trigonometric and hyperbolic functions
 * and their inverses (NaN outside their domains), softplus log(1 + e^x), softsign x / (1 + |x|),
 * elu (x > 0 ? x : e^x - 1) and selu (TensorFlow's scale and alpha). */
clg_node *clg_erf(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_ceil(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_round(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_reciprocal(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_sin(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_cos(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_tan(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_asin(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_acos(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_atan(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_sinh(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_cosh(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_asinh(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_acosh(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_atanh(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_softplus(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_softsign(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_elu(clg_graph *g, const char *name, clg_node *x);
clg_node *clg_selu(clg_graph *g, const char *name, clg_node *x);
/* tf.where of TensorFlow 2 (op SelectV2, ONNX's Where): t where condition (bool) is true, else
 * e, the three broadcast against each other as clg_add's operands; t and e of one dtype (any).
 * broadcast_to: x repeated to shape (n dims; x's dims aligned at the right, each equal or 1;
 * op BroadcastTo, the shape a Const). */
clg_node *clg_select_v2(clg_graph *g, const char *name, clg_node *condition, clg_node *t,
                        clg_node *e);
clg_node *clg_broadcast_to(clg_graph *g, const char *name, clg_node *x, int n,
                           const int64_t *shape);

/* The generic builder, as TensorFlow's raw ops: any registered op by its type name, with
 * inputs as (node, output) pairs and attributes as a typed list (any order). Attributes
 * the op can infer from its inputs (such as T or N) may be omitted; given ones must agree.
 * An unknown op, a missing, unknown, repeated or mistyped attribute, or a wrong number of
 * inputs is INVALID_ARGUMENT naming the node (and sticky, as every builder error).
 *
 *   clg_output in[1] = {clg_out(x, 0)};
 *   clg_node *r = clg_op(g, "Relu", NULL, 1, in, 0, NULL);
 *   clg_attr at[2] = {clg_attr_bool("transpose_a", 1), clg_attr_bool("transpose_b", 0)};
 *   clg_node *m = clg_op(g, "MatMul", "m", 2, (clg_output[]){{a, 0}, {b, 0}}, 2, at);
 */
clg_node *clg_op(clg_graph *g, const char *op, const char *name, int num_inputs,
                 const clg_output *inputs, int num_attrs, const clg_attr *attrs);

/* Control dependency: n runs only after `before` has run (in every run that runs n), as
 * tf.control_dependencies. Both must belong to the same graph and `before` must have been
 * built before n (graphs stay acyclic). Errors are sticky. Adding an edge to a graph that
 * a session has already placed takes effect at that session's next run. */
clg_code clg_node_add_control_input(clg_node *n, clg_node *before);

/* --- gradients --------------------------------------------------------------------------- */

typedef struct clg_gradients_options {
  /* Build each gradient node with its forward node's requested device (TensorFlow's
   * colocate_gradients_with_ops, as the multi-tower code uses) instead of the device scope
   * open when clg_gradients is called. */
  int colocate_gradients_with_ops;
} clg_gradients_options;

/* Defaults: everything off. */
void clg_gradients_options_init(clg_gradients_options *opt);

/* tf.gradients: adds to g the nodes computing d(sum of ys)/d(xs), each y weighted by
 * grad_ys[i] when given (grad_ys may be NULL, or hold {NULL, 0} entries: ones). out[i] gets
 * the gradient of xs[i], or {NULL, 0} when no y depends on it (TensorFlow's None). Paths
 * that meet are summed with AddN. Nodes are named "gradients/<node>_grad/<Op>". An op on a
 * path without a gradient is INVALID_ARGUMENT "No gradient defined for operation '<name>'
 * (op type: <Op>)". opt may be NULL. */
clg_code clg_gradients(clg_graph *g, int num_ys, const clg_output *ys, const clg_output *grad_ys,
                       int num_xs, const clg_output *xs, const clg_gradients_options *opt,
                       clg_output *out);

/* Queries. */
int clg_graph_num_nodes(const clg_graph *g);
clg_node *clg_graph_node(const clg_graph *g, int i);
clg_node *clg_graph_find(const clg_graph *g, const char *name);
const char *clg_node_name(const clg_node *n);
const char *clg_node_op(const clg_node *n);
clg_dtype clg_node_dtype(const clg_node *n);
int clg_node_rank(const clg_node *n);
int64_t clg_node_dim(const clg_node *n, int i);
int clg_node_num_inputs(const clg_node *n);
clg_node *clg_node_input(const clg_node *n, int i);
/* The producer of input i and which of its outputs it is. */
int clg_node_input_index(const clg_node *n, int i);
int clg_node_num_control_inputs(const clg_node *n);
clg_node *clg_node_control_input(const clg_node *n, int i);
/* Outputs: their number, and each output's dtype and shape (clg_node_dtype, _rank and _dim
 * describe output 0). */
int clg_node_num_outputs(const clg_node *n);
clg_dtype clg_node_output_dtype(const clg_node *n, int i);
int clg_node_output_rank(const clg_node *n, int i);
int64_t clg_node_output_dim(const clg_node *n, int i, int d);
/* "name" or "name:i" (TensorFlow's tensor names) to an output. NOT_FOUND for an unknown node,
 * INVALID_ARGUMENT for a bad index. */
clg_code clg_graph_find_output(const clg_graph *g, const char *tensor_name, clg_output *out);
/* The merged device spec the node was built under, e.g. "/device:GPU:2" ("" if none). */
const char *clg_node_requested_device(const clg_node *n);

#ifdef __cplusplus
}
#endif
#endif
