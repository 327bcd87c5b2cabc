/* The ops module's door: the op registry.
 *
 * An op is a record (clg_op_def): its TensorFlow type name, inputs and outputs, typed
 * attributes with defaults, shape and dtype inference, its kernels per device kind (each
 * with a predicate saying which nodes and devices it serves), whether an output may reuse
 * an input's buffer, and a slot for its gradient. One file per op (or small family) under
 * src/ops/ defines it; registry.c lists them. Graph building, the placer, the executor and
 * error texts ask this module; nothing else compares op names.
 *
 * This header sees no OpenCL: devices, blocks and allocators are opaque here. */
#ifndef CLG_OPS_H
#define CLG_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "clgraph/graph.h"
#include "core/core.h"

struct clg_device;
struct clg_block;
struct clg_allocator;

/* --- attributes ------------------------------------------------------------------------ */

/* A node's attribute value (owned by the node: strings, lists and tensors are copies). */
typedef struct clg_attr_value {
  bool set;
  clg_attr_type type;
  int64_t i;
  double f;
  bool b;
  char *s;
  clg_dtype dtype;
  int n;      /* list length (INT_LIST), rank (SHAPE) */
  int64_t *v; /* list values or dims */
  clg_tensor *tensor;
} clg_attr_value;

/* How an attribute is declared by its op. Listed in TensorFlow's printing order (sorted by
 * name, upper case first), which is also the order of a node's attrs[]. */
typedef struct clg_attr_def {
  const char *name;
  clg_attr_type type;
  /* Without a default: required, unless the op infers it (inferred is then true). */
  bool has_default;
  bool inferred;
  int64_t def_i; /* default of INT and BOOL */
  double def_f;
  const char *def_s;
} clg_attr_def;

/* --- nodes as the ops see them ----------------------------------------------------------- */

/* An output's dtype and static shape. */
typedef struct clg_out_desc {
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
} clg_out_desc;

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

/* --- op definitions ---------------------------------------------------------------------- */

enum {
  CLG_OP_VARIADIC = -1, /* num_inputs: one or more */
};

/* Flags of an op. */
enum {
  CLG_OP_CONST = 1u << 0,         /* its value is attribute "value": cached per session */
  CLG_OP_MUST_FEED = 1u << 1,     /* a Placeholder: running it unfed is an error */
  CLG_OP_FOLLOWS_INPUT = 1u << 2, /* placed with its input when unconstrained (Identity) */
  /* State: a VariableV2. Its value lives in the session (one per session), on its device;
   * it is not a step of a run and its consumers read the stored buffer. */
  CLG_OP_VARIABLE = 1u << 3,
  /* Input 0 is overwritten whole, so it need not be initialized (Assign). */
  CLG_OP_ASSIGNS = 1u << 4
};

typedef struct clg_op_def clg_op_def;

/* An op's gradient: given n and the gradients of its outputs (grad_outputs[i].node NULL
 * where output i has none), adds the nodes that compute the gradients of its inputs into
 * grad_inputs (left {NULL, 0} for an input that gets none, as TensorFlow's None). Called by
 * clg_gradients inside the name scope "gradients/<node>_grad" and the device scope the
 * caller chose; errors are the graph's sticky error. */
typedef clg_code (*clg_grad_fn)(clg_graph *g, clg_node *n, const clg_output *grad_outputs,
                                clg_output *grad_inputs);

struct clg_op_def {
  const char *name;
  int num_inputs; /* or CLG_OP_VARIADIC */
  int num_outputs;
  int num_attrs;
  const clg_attr_def *attrs;
  /* Checks the inputs and attributes, fills inferred attributes and sets every output with
   * clg_node_set_output. Errors with clg_node_error, naming the node. */
  clg_code (*infer)(clg_node *n);
  const clg_kernel_def *kernels;
  int num_kernels;
  /* The input whose buffer output 0 may reuse (same byte size, last use), or -1. */
  int inplace;
  unsigned flags;
  clg_grad_fn grad;
  /* Bit i: input i is a variable (a reference edge) updated in place by the kernel, which
   * gets the variable's buffer as in[i]; output 0 is then the variable of input 0 (out[0]
   * is that same buffer). Such nodes are placed on their variable's device. */
  unsigned ref_inputs;
};

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

/* Records "<Op> '<name>': <message>" as this thread's error and returns code. */
clg_code clg_node_error(const clg_node *n, clg_code code, const char *fmt, ...) CLG_PRINTF(3, 4);
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
/* Checked shape arithmetic (operands >= 0): false when the result passes INT64_MAX. The
 * product of n dims is 0 when one of them is, whatever the others. */
bool clg_checked_mul(int64_t a, int64_t b, int64_t *r);
bool clg_dims_product(int n, const int64_t *dims, int64_t *count);
/* Elements of a descriptor (1 for a scalar). */
size_t clg_out_count(const clg_out_desc *d);
/* "[2,3]" into buf. */
char *clg_out_shape_string(const clg_out_desc *d, char *buf, size_t size);
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
/* Element i of a host tensor of any dtype, as a double. */
double clg_tensor_element_double(const clg_tensor *t, size_t i);

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
extern const clg_op_def clg_op_Const, clg_op_Placeholder, clg_op_MatMul, clg_op_Add, clg_op_Sub,
    clg_op_Mul, clg_op_AddN, clg_op_Identity, clg_op_Relu, clg_op_Neg, clg_op_Square,
    clg_op_ReluGrad, clg_op_RealDiv, clg_op_Maximum, clg_op_Equal, clg_op_Exp, clg_op_Log,
    clg_op_Sqrt, clg_op_Rsqrt, clg_op_Cast, clg_op_Fill, clg_op_ZerosLike, clg_op_OnesLike,
    clg_op_Reshape, clg_op_Transpose, clg_op_Sum, clg_op_Mean, clg_op_Max, clg_op_L2Loss,
    clg_op_ArgMax, clg_op_Softmax, clg_op_LogSoftmax, clg_op_SparseSoftmaxCrossEntropyWithLogits,
    clg_op_InTopKV2, clg_op_BiasAdd, clg_op_MaxPool, clg_op_AvgPool, clg_op_LRN, clg_op_Conv2D,
    clg_op_Conv2DBackpropInput, clg_op_Conv2DBackpropFilter, clg_op_MaxPoolGrad, clg_op_AvgPoolGrad,
    clg_op_LRNGrad, clg_op_BiasAddGrad;
/* Maximum's gradient selects with these (binary.c, select.c). */
extern const clg_op_def clg_op_GreaterEqual, clg_op_Select;
/* Gradient functions that live beside their gradient ops (conv2d_grad.c, nn_grad.c). */
clg_code clg_grad_conv2d(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_pool(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_lrn(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);
clg_code clg_grad_bias_add(clg_graph *g, clg_node *n, const clg_output *dy, clg_output *dx);

/* Whether attribute i of n, as its op's inference left it, is the value the caller gave:
 * INVALID_ARGUMENT "attribute T is int32 but the inputs make it float" naming the node
 * otherwise. The builder asks it of every given attribute the op infers (graph.h: given
 * ones must agree). */
clg_code clg_node_attr_agrees(const clg_node *n, int i, const clg_attr *given);
/* TensorFlow's node summary for errors: "b = Const[dtype=DT_FLOAT, value=Tensor<type: float
 * shape: [3,2] values: 1 2 3...>, _device=\"/device:GPU:2\"]()", attributes in the op's
 * order. malloc'd; NULL when memory runs out. */
char *clg_node_def_string(const clg_node *n);

/* TensorFlow graphs (issue 23): the ops real graphs use. */
extern const clg_op_def clg_op_Sigmoid, clg_op_Tanh, clg_op_Relu6, clg_op_LeakyRelu, clg_op_Abs,
    clg_op_Sign, clg_op_SigmoidGrad, clg_op_TanhGrad, clg_op_Relu6Grad, clg_op_LeakyReluGrad,
    clg_op_AddV2, clg_op_Minimum, clg_op_Squeeze, clg_op_ExpandDims, clg_op_Slice, clg_op_Pad,
    clg_op_PadV2, clg_op_ConcatV2;
/* Their constant index inputs, checked (array_tf.c): Slice's begin and size (-1 resolved),
 * Pad's paddings, ConcatV2's axis (non-negative). */
clg_code clg_slice_begin(const clg_node *n, int64_t *begin, int64_t *size);
clg_code clg_pad_paddings(const clg_node *n, int64_t *before, int64_t *after);
clg_code clg_concat_axis(const clg_node *n, int *axis);
extern const clg_op_def clg_op_Pack, clg_op_Shape, clg_op_DepthToSpace, clg_op_Prelu;
/* Pack's axis, non-negative (checked at build). */
int clg_pack_axis(const clg_node *n);
extern const clg_op_def clg_op_MirrorPad, clg_op_MirrorPadGrad;
/* Whether a MirrorPad(Grad)'s mode is SYMMETRIC (else REFLECT). */
bool clg_mirror_symmetric(const clg_node *n);
extern const clg_op_def clg_op_DepthwiseConv2dNative, clg_op_DepthwiseConv2dNativeBackpropInput,
    clg_op_DepthwiseConv2dNativeBackpropFilter;
/* The geometry of a depthwise op (depthwise.c): input [n,h,w,c], filter [kh,kw,c,*mult],
 * cout = c * mult output channels; checked. */
clg_code clg_depthwise_geometry(const clg_node *n, clg_window *g, int64_t *mult);
extern const clg_op_def clg_op_ResizeBilinear, clg_op_ResizeBilinearGrad;
/* ResizeBilinear's geometry (resize.c): images [n,h,w,c] resized to [n,oh,ow,c] with
 * TensorFlow's float scales; the layout matches clg_rs in backends/opencl/resize.c. */
typedef struct clg_resize {
  int64_t n, h, w, c, oh, ow;
  float hs, ws;
  bool half_pixel;
} clg_resize;
void clg_resize_geometry(const clg_node *n, clg_resize *r);
/* StridedSlice's spec (strided_slice.c), checked: per input dim the canonical begin, stride
 * and size (TensorFlow's processing shape), and the output's dims. */
extern const clg_op_def clg_op_StridedSlice;
typedef struct clg_slice_spec {
  int rank;
  int64_t begin[CLG_MAX_RANK], stride[CLG_MAX_RANK], size[CLG_MAX_RANK];
  int out_rank;
  int64_t out_dims[CLG_MAX_RANK];
} clg_slice_spec;
clg_code clg_strided_slice_spec(const clg_node *n, clg_slice_spec *s);

#endif
