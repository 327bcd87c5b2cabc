/* The schema module's door: what an op is, as the graph validates a node against it.
 *
 * An op definition (clg_op_def) is data: its TensorFlow type name, inputs and outputs, typed
 * attributes with defaults, flags, and the hooks the layers above fill in (its shape and
 * dtype inference, its gradient; the kernels a backend registers). The graph (src/graph/)
 * builds and checks nodes against a definition it is given and knows no op by name; the op
 * files (src/ops/) define the ops, their inference, gradients and typed builders on top of
 * it, and keep the registry. This module sits below both so that neither includes the
 * other's header to know what an op is (issue 22: the graph/ops module cycle). It sees
 * only the public API and core. */
#ifndef CLG_SCHEMA_H
#define CLG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clgraph/graph.h"
#include "core/core.h"

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

/* --- outputs --------------------------------------------------------------------------- */

/* An output's dtype and static shape. */
typedef struct clg_out_desc {
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
} clg_out_desc;

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
  /* The input whose buffer output 0 may reuse (same byte size, last use), or -1. */
  int inplace;
  unsigned flags;
  clg_grad_fn grad;
  /* Bit i: input i is a variable (a reference edge) updated in place by the kernel, which
   * gets the variable's buffer as in[i]; output 0 is then the variable of input 0 (out[0]
   * is that same buffer). Such nodes are placed on their variable's device. */
  unsigned ref_inputs;
};

/* --- shape arithmetic ------------------------------------------------------------------ */

/* Checked shape arithmetic (operands >= 0): false when the result passes INT64_MAX. The
 * product of n dims is 0 when one of them is, whatever the others. */
bool clg_checked_mul(int64_t a, int64_t b, int64_t *r);
bool clg_dims_product(int n, const int64_t *dims, int64_t *count);
/* Elements of a descriptor (1 for a scalar). */
size_t clg_out_count(const clg_out_desc *d);
/* "[2,3]" into buf. */
char *clg_out_shape_string(const clg_out_desc *d, char *buf, size_t size);

#endif
