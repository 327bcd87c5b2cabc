/* The backends module's door: kernels per device kind, and what every kind shares.
 *
 * An op (src/ops/) says what it computes; a device kind says how, in its own folder:
 * src/backends/host/ (CPU:0, plain pointers) and src/backends/opencl/ (OpenCL devices, cl_mem
 * blocks and in-order queues). Each kind registers its kernels in its folder's kernel_list.h,
 * one CLG_KERNELS(family) line per file of kernels; a file defines
 * clg_<kind>_kernels_<family>, a set of (op, kernel) entries. clg_backend_find_kernel picks
 * the first entry of the device's kind for the node's op whose predicate accepts the node.
 *
 * The types below are the computations' shared vocabulary (element maps for broadcasting,
 * window geometry); each kind's door declares its own computations on them. */
#ifndef CLG_BACKEND_H
#define CLG_BACKEND_H

#include "core/core.h"
#include "device/device.h"
#include "graph/graph.h"
#include "memory/memory.h"
#include "ops/ops.h"

struct clg_cluster;

/* --- kernels --------------------------------------------------------------------------- */

/* What a kernel gets to run one node. in[i] and out[i] are blocks of the device: host
 * pointers in .host for the host kind, (cl_mem, offset) for OpenCL. An output may be the
 * same block as the input the op allows in place (clg_op_def.inplace). */
typedef struct clg_kernel_ctx {
  clg_device *dev;
  int device_index;
  const clg_node *node;
  const clg_block *in;
  const clg_block *out;
  clg_allocator *alloc;     /* the device's allocator, for scratch not planned */
  const clg_block *scratch; /* the plan's scratch for this node (kernel's scratch()) */
  /* Logs a warning once per (device, reason) for the life of the process state. */
  void (*warn_once)(void *warn_ctx, int device, const char *reason, const char *message);
  void *warn_ctx;
  struct clg_cluster *cluster; /* the run's cluster (collective ops), or NULL: one task */
  /* Switch and Merge only (the runner's dead tensors): bit i is input i dead (Merge reads
   * it) or output i dead (Switch sets it). */
  unsigned *dead;
  /* The element-wise ops the planner fused into this step (runtime/fuse.c), applied to the
   * output as it is stored, or NULL: only where the kernel def's .epilogue is set. */
  const struct clg_epilogue *epilogue;
} clg_kernel_ctx;

typedef struct clg_kernel_def {
  clg_device_kind kind;
  /* Whether this kernel serves node n (its dtypes and attributes) on dev; NULL: always. n has
   * every input, output and attribute its op declares (a variadic op: num_inputs >= 1), on a
   * built node as on clg_backend_supported's stand-in, so a predicate may read any of them. */
  bool (*supports)(const clg_node *n, const clg_device *dev);
  clg_code (*run)(const clg_kernel_ctx *ctx);
  /* Optional: bytes of scratch the kernel wants for n on dev; the plan holds them in the
   * device's arena for the node's step (ctx->scratch), so no run allocates them. */
  clg_code (*scratch)(const clg_node *n, clg_device *dev, size_t *bytes);
  /* Optional: compiles what the first run would (a session's warm option). */
  clg_code (*warm)(const clg_node *n, clg_device *dev);
} clg_kernel_def;

/* --- fused epilogues ------------------------------------------------------------------ */

/* An op of an epilogue on output element (r, c) of a [rows, cols] float32 output y, in the
 * arithmetic of the unfused kernel (so the fused result is bit-identical). */
typedef enum clg_epi_op {
  CLG_EPI_BIAS,   /* BiasAdd, or Add of a [cols] vector: y += arg[c] */
  CLG_EPI_ADD,    /* Add of a same-shaped value (a residual): y += arg[r * cols + c] */
  CLG_EPI_SCALAR, /* Add of one element: y += arg[0] */
  CLG_EPI_RELU,   /* Relu: !(y <= 0) ? y : 0 (NaN kept) */
  CLG_EPI_RELU6,  /* Relu6: y < 0 ? 0 : y > 6 ? 6 : y */
  CLG_EPI_MAX,    /* Maximum with one element: y < arg[0] ? arg[0] : y */
  CLG_EPI_MIN     /* Minimum with one element: arg[0] < y ? arg[0] : y */
} clg_epi_op;

enum { CLG_EPI_MAX_OPS = 6 };

/* The ops in order, each with its operand's host data (NULL for Relu, Relu6). */
typedef struct clg_epilogue {
  int nops;
  size_t cols;
  clg_epi_op op[CLG_EPI_MAX_OPS];
  const float *arg[CLG_EPI_MAX_OPS];
} clg_epilogue;

/* Whether kernel k applies ctx->epilogue when it runs n (float32 output rows of its last
 * dim's columns), so that the planner may fuse the element-wise ops after n into it: the
 * host's Conv2D, MatMul and DepthwiseConv2dNative. */
bool clg_backend_takes_epilogue(const clg_kernel_def *k, const clg_node *n);

/* --- kernel registration ------------------------------------------------------------- */

/* One kernel of a device kind for one op (kernel.kind is the kind of its folder). */
typedef struct clg_kernel_entry {
  const clg_op_def *op;
  clg_kernel_def kernel;
} clg_kernel_entry;

/* The kernels of one file. */
typedef struct clg_kernel_set {
  int count;
  const clg_kernel_entry *entries;
} clg_kernel_set;

/* Defines the set `name` over the array `entries` (in a kernel file, once). */
#define CLG_KERNEL_SET(name, entries)                                                              \
  const clg_kernel_set name = {(int)(sizeof(entries) / sizeof((entries)[0])), (entries)}

/* The kernel that runs n on dev, or NULL when none does (on OpenCL devices, none for a node
 * with a host-only dtype: int8, int16, uint8..uint64). */
const clg_kernel_def *clg_backend_find_kernel(const clg_node *n, const clg_device *dev);
/* Whether an input or output of n has a dtype only host kernels take. */
bool clg_node_has_host_only_dtype(const clg_node *n);
/* Whether some kernel runs op `name` with every input and output of `dtype` on dev (its
 * attributes at their defaults), for listings and tests. */
bool clg_backend_supported(const char *name, clg_dtype dtype, const clg_device *dev);

/* --- strided copies (issue 23's data movement: StridedSlice, Pack, Tile, ...) -------- */

enum { CLG_COPY_MAX_RANK = 16 };

/* For every index (i_0, ..., i_{rank-1}) < dims, in row-major order:
 * dst[dst0 + sum i_k ds_k] = src[src0 + sum i_k ss_k], offsets in elements, strides signed
 * (a negative stride walks backwards). Writes go to distinct elements. */
typedef struct clg_copy_map {
  int rank;
  int64_t dims[CLG_COPY_MAX_RANK];
  int64_t ss[CLG_COPY_MAX_RANK];
  int64_t ds[CLG_COPY_MAX_RANK];
  int64_t src0, dst0;
} clg_copy_map;

/* Drops dims of one element and merges dims whose strides continue each other on both
 * sides; rank >= 1 after it. */
void clg_copy_map_merge(clg_copy_map *m);
size_t clg_copy_map_count(const clg_copy_map *m);
/* The maps of the ops (their inputs checked at build; copy_map.c), merged. */
/* StridedSlice's map; StridedSliceGrad's is its mirror (dy into the slice's elements). */
void clg_copy_map_strided_slice(const clg_node *n, clg_copy_map *m);
void clg_copy_map_tile(const clg_node *n, clg_copy_map *m);
void clg_copy_map_depth_to_space(const clg_node *n, clg_copy_map *m);
/* SpaceToBatchND's copy for block offset `block` (row-major over block_shape, 0 to
 * s->blocks - 1): the input elements that land in that block's batches; BatchToSpaceND's is
 * its mirror (those batches' elements that survive the crops into the output). */
void clg_copy_map_space_batch(const clg_node *n, const clg_space_batch_spec *s, int64_t block,
                              clg_copy_map *m);
/* A part of `whole` along axis, [at, at + len): from the dense part into the whole (into
 * true: Pack) or from the whole into the dense part (Unpack, Split). */
void clg_copy_map_part(const clg_out_desc *whole, int axis, int64_t at, int64_t len, bool into,
                       clg_copy_map *m);

/* --- what every kind computes on ----------------------------------------------------- */

typedef enum clg_binop {
  CLG_BINOP_ADD,
  CLG_BINOP_SUB,
  CLG_BINOP_MUL,
  CLG_BINOP_DIV,           /* RealDiv */
  CLG_BINOP_MAX,           /* Maximum: x < y ? y : x (a NaN in x wins, as Eigen's max) */
  CLG_BINOP_EQUAL,         /* Equal: a bool output */
  CLG_BINOP_GREATER_EQUAL, /* GreaterEqual: x >= y, a bool output (false with a NaN) */
  CLG_BINOP_MIN,           /* Minimum: y < x ? y : x (a NaN in x wins, as Eigen's min) */
  CLG_BINOP_PRELU,         /* Prelu (tfjs): x < 0 ? y * x : x, y the slope alpha */
  CLG_BINOP_FLOORDIV,      /* FloorDiv: floor(x / y) */
  CLG_BINOP_FLOORMOD,      /* FloorMod: x - floor(x / y) * y, the sign of y (Python's %) */
  CLG_BINOP_LESS,          /* Less, Greater, LessEqual, NotEqual: bool outputs (false with a */
  CLG_BINOP_GREATER,       /* NaN, but NotEqual: true) */
  CLG_BINOP_LESS_EQUAL,
  CLG_BINOP_NOT_EQUAL,
  CLG_BINOP_POW,   /* Pow: pow(x, y) (a negative x with an integer y has the sign of x^y) */
  CLG_BINOP_ATAN2, /* Atan2(y, x): atan2(y, x), inputs in TensorFlow's order */
  CLG_BINOP_AND,   /* LogicalAnd, LogicalOr: on bool */
  CLG_BINOP_OR,
  CLG_BINOP_SQDIFF, /* SquaredDifference: (x - y) * (x - y) in T (integers wrap) */
  CLG_BINOP_LSHIFT, /* LeftShift, RightShift: integers; a shift outside [0, bits) gives 0 */
  CLG_BINOP_RSHIFT  /* (-1 for a negative x shifted right) */
} clg_binop;

/* Exp, Log, Sqrt, Rsqrt, Square, Floor, Neg: element-wise math (ops/math.c); Erf to Selu:
 * ops/math_tf.c. */
typedef enum clg_unop {
  CLG_UNOP_EXP,
  CLG_UNOP_LOG,
  CLG_UNOP_SQRT,
  CLG_UNOP_RSQRT,
  CLG_UNOP_SQUARE,
  CLG_UNOP_FLOOR,
  CLG_UNOP_NEG,
  CLG_UNOP_ERF,
  CLG_UNOP_CEIL,
  CLG_UNOP_ROUND, /* half to even */
  CLG_UNOP_RECIPROCAL,
  CLG_UNOP_SIN,
  CLG_UNOP_COS,
  CLG_UNOP_TAN,
  CLG_UNOP_ASIN,
  CLG_UNOP_ACOS,
  CLG_UNOP_ATAN,
  CLG_UNOP_SINH,
  CLG_UNOP_COSH,
  CLG_UNOP_ASINH,
  CLG_UNOP_ACOSH,
  CLG_UNOP_ATANH,
  CLG_UNOP_SOFTPLUS,
  CLG_UNOP_SOFTSIGN,
  CLG_UNOP_ELU,
  CLG_UNOP_SELU,
  CLG_UNOP_COUNT
} clg_unop;

/* An output of `rank` dims (merged where the inputs allow) and, per dim, the strides in
 * elements of up to two inputs (0 where an input is broadcast): numpy broadcasting, and
 * Transpose (input a's strides permuted). rank >= 1 (a scalar is [1]). */
typedef struct clg_strided {
  int rank;
  size_t dims[CLG_MAX_RANK];
  size_t sa[CLG_MAX_RANK];
  size_t sb[CLG_MAX_RANK];
} clg_strided;

/* The map of out = a op b with numpy broadcasting (shapes already checked compatible). */
void clg_strided_broadcast(clg_strided *m, int ra, const int64_t *da, int rb, const int64_t *db,
                           int ro, const int64_t *dout);

/* Input a's offset of element i. */
size_t clg_strided_offset(const clg_strided *m, size_t i);

/* Merges adjacent dims whose strides continue each other in every input. */
void clg_strided_merge(clg_strided *m);

/* Whether the input itself is the patch matrix (1x1, stride 1, no padding). */
bool clg_conv_is_direct(const clg_window *g);

/* What both kinds' kernels of reductions, Transpose and the float-only NN ops read off a
 * node (node_maps.c). */
/* Whether dtype t is float, or double on a device that has it (the host; OpenCL with fp64). */
bool clg_kernel_float_dtype(clg_dtype t, const clg_device *dev);

/* Sum, Mean, Max, L2Loss, Min, Prod: the reduction, numbered as cl/reduce.cl's clg_reduce
 * takes it. */
typedef enum clg_reduction {
  CLG_REDUCTION_SUM,
  CLG_REDUCTION_MEAN,
  CLG_REDUCTION_MAX,
  CLG_REDUCTION_L2,
  CLG_REDUCTION_MIN,
  CLG_REDUCTION_PROD
} clg_reduction;

clg_reduction clg_reduction_of(const clg_node *n);

/* The maps of the kept dims (nout outputs) and the reduced dims (nred elements each) over
 * input 0 of a reduction or ArgMax (whose reduced map stays one dim). */
void clg_reduce_maps(const clg_node *n, clg_strided *keep, clg_strided *red, size_t *nout,
                     size_t *nred);

/* Transpose's gather: output element i reads input 0 at clg_strided_offset(m, i). */
void clg_transpose_map(const clg_node *n, clg_strided *m);

/* Slice's gather: output element i reads input 0 at element *base + clg_strided_offset(m, i).
 * Slice's begin/size errors (clg_slice_begin) name the node. */
clg_code clg_slice_map(const clg_node *n, clg_strided *m, size_t *base);

/* Rows of one scratch chunk for a patch row of kdim elements of es bytes. */
size_t clg_conv_chunk_rows(bool opencl, size_t kdim, size_t es, size_t rows);

/* The element count of the map (the product of its dims). */
size_t clg_strided_count(const clg_strided *m);

/* --- what both kinds' element-wise kernels read off a node (elementwise.c) ------------ */

/* The unop of a node of Exp, Log, Sqrt, Rsqrt, Square, Floor, Neg or an op of ops/math_tf.c. */
clg_unop clg_unop_of(const clg_node *n);
/* The ops clg_unop_of maps, X(Name) each, comma-separated: both kinds' math kernels
 * register this one list. */
#define CLG_UNOP_OPS(X)                                                                            \
  X(Exp), X(Log), X(Sqrt), X(Rsqrt), X(Square), X(Floor), X(Neg), X(Erf), X(Ceil), X(Round),       \
      X(Reciprocal), X(Sin), X(Cos), X(Tan), X(Asin), X(Acos), X(Atan), X(Sinh), X(Cosh),          \
      X(Asinh), X(Acosh), X(Atanh), X(Softplus), X(Softsign), X(Elu), X(Selu)

/* The binop of a node of Add, Sub, Mul, RealDiv, Maximum, Equal, GreaterEqual, Less, Greater,
 * LessEqual, NotEqual, Pow, Atan2, LogicalAnd or LogicalOr. */
clg_binop clg_binop_of(const clg_node *n);

/* Whether n takes the flat kernels (add, sub, mul of equal shapes, or a scalar against a
 * tensor), with its inputs' element counts into *na and *nb. */
bool clg_binop_flat(const clg_node *n, size_t *na, size_t *nb);

/* The broadcast map of n's two inputs onto its output. */
void clg_binop_map(const clg_node *n, clg_strided *m);

/* Equal, GreaterEqual, Less, Greater, LessEqual, NotEqual: inputs float, double (with fp64 on
 * OpenCL), int32 or int64 (Equal and NotEqual also bool); a bool output. */
bool clg_binop_compare_supports(const clg_node *n, const clg_device *dev);
/* Float (double with fp64) anywhere, int32 and int64 on the host: Add, Sub, Mul, AddV2,
 * Maximum, Minimum, FloorDiv, FloorMod. */
bool clg_binop_int_supports(const clg_node *n, const clg_device *dev);

/* LogicalAnd, LogicalOr, LogicalNot: every input and output bool. */
bool clg_logical_supports(const clg_node *n, const clg_device *dev);
/* IsNan, IsInf: a float input (double with fp64 on OpenCL), a bool output. */
bool clg_float_test_supports(const clg_node *n, const clg_device *dev);

/* SelectV2's map: per output dim (merged where all three allow), its size and the strides in
 * elements of the condition, t and e (0 where broadcast); rank >= 1. */
typedef struct clg_select_map {
  int rank;
  size_t dims[CLG_MAX_RANK];
  size_t s[3][CLG_MAX_RANK];
} clg_select_map;
void clg_select_v2_map(const clg_node *n, clg_select_map *m);

/* Select: output elements per condition element (1: one shape, all: a scalar, or a row). */
size_t clg_select_span(const clg_node *n);

/* Select: elements of 1, 2, 4 or 8 bytes (every dtype). */
bool clg_select_supports(const clg_node *n, const clg_device *dev);

/* One element of value 0 or 1 (one) in dtype t into buf (8 bytes, the rest zero):
 * ZerosLike, OnesLike. */
void clg_fill_element(clg_dtype t, bool one, void *buf);

#endif
