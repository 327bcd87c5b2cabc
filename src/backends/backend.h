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

/* The kernel that runs n on dev, or NULL when none does. */
const clg_kernel_def *clg_backend_find_kernel(const clg_node *n, const clg_device *dev);
/* Whether some kernel runs op `name` with every input and output of `dtype` on dev (its
 * attributes at their defaults), for listings and tests. */
bool clg_backend_supported(const char *name, clg_dtype dtype, const clg_device *dev);

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
  CLG_BINOP_PRELU          /* Prelu (tfjs): x < 0 ? y * x : x, y the slope alpha */
} clg_binop;

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

/* Rows of one scratch chunk for a patch row of kdim elements of es bytes. */
size_t clg_conv_chunk_rows(bool opencl, size_t kdim, size_t es, size_t rows);

/* The element count of the map (the product of its dims). */
size_t clg_strided_count(const clg_strided *m);

#endif
