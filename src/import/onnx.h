/* The ONNX build's state and the helpers its op translators use, inside src/import only (the
 * module's doors stay clgraph/import.h and import_internal.h).
 *
 * Layout: ONNX is NCHW, clgraph's convolutions, pools and normalisations are NHWC. A value
 * keeps up to two forms: `canon` (the ONNX tensor as it is) and `nhwc` (for a rank-4 value, the
 * same tensor transposed to NHWC). Layout-bound ops read and write the nhwc form; elementwise
 * ops keep whichever form their inputs have; every other op reads canon. A form is made from
 * the other by one Transpose, once per value, where a reader needs it: a CNN gets transposes
 * at its edges only, never a pair per layer. */
#ifndef CLG_IMPORT_ONNX_H
#define CLG_IMPORT_ONNX_H

#include "import/build.h"

typedef struct clg_onnx_value {
  const char *name; /* the model's (owned by the model) */
  clg_output canon; /* node NULL: not made yet */
  clg_output nhwc;  /* node NULL: none */
} clg_onnx_value;

typedef struct clg_onnx {
  clg_graph *g;
  const clg_import_options *o;
  clg_imp_model *m;
  clg_import_result *r;
  clg_onnx_value *vals;
  int num_vals, cap_vals;
  int *hash; /* open addressing over vals, -1 empty */
  size_t hash_size;
  bool *done;          /* per model node: translated already (folded into another: BN into Conv) */
  bool *shape_used;    /* per input_shapes entry */
  bool *map_used;      /* per input_map entry */
  clg_graph *anchor_g; /* holds the device state across folds */
  clg_session *anchor;
  bool no_fold;
  /* readers of each name (node inputs and graph outputs), counted once per build: open
   * addressing, name NULL empty */
  struct clg_onnx_readers *readers;
  size_t readers_size;
} clg_onnx;

struct clg_onnx_rule;
typedef clg_code (*clg_onnx_fn)(clg_onnx *c, const clg_imp_node *n, const struct clg_onnx_rule *r);

/* What an ONNX op type becomes: fn translates a node of it (opset `since` and later, up to the
 * next rule of the same op); ops that share a translation have a small fn each (rules never
 * compare op-name strings); tf names the clgraph op it builds (the node is
 * unsupported while it is not registered), NULL when it builds only ops clgraph always has. */
typedef struct clg_onnx_rule {
  const char *op;
  int since;
  clg_onnx_fn fn;
  const char *tf;
} clg_onnx_rule;

/* The rule tables, one per file (onnx_op_list.h names them). */
typedef struct clg_onnx_rule_set {
  const clg_onnx_rule *rules;
  int num;
} clg_onnx_rule_set;
#define CLG_ONNX_RULES(family) extern const clg_onnx_rule_set clg_onnx_rules_##family;
#include "import/onnx_op_list.h"
#undef CLG_ONNX_RULES
#define CLG_ONNX_RULE_SET(name, ...)                                                               \
  static const clg_onnx_rule name##_v[] = {__VA_ARGS__};                                           \
  const clg_onnx_rule_set name = {name##_v, (int)(sizeof name##_v / sizeof name##_v[0])}

/* Value `name` set to x (canonical layout only), for a rule that runs another on a node of
 * its own: names starting with a control character are never the model's. */
clg_code clg_onnx_set_value(clg_onnx *c, char *name, clg_output x);
/* MaxPool of an 8- or 16-bit integer x (onnx_ops_quant.c): the float MaxPool's, cast back. */
clg_code clg_onnx_int_max_pool(clg_onnx *c, const clg_imp_node *n);
/* The rule for op type `op` at opset (NULL: none). */
const clg_onnx_rule *clg_onnx_rule_find(const char *op, int opset);

/* --- errors ---------------------------------------------------------------------------------- */
/* "FILE: node 'NAME' (op OP): ..." as the graph's error; returns code. */
clg_code clg_onnx_fail(clg_onnx *c, const clg_imp_node *n, clg_code code, const char *fmt, ...)
    CLG_PRINTF(4, 5);

/* --- inputs ---------------------------------------------------------------------------------- */
/* Whether input i is given (ONNX writes "" for a skipped optional input). */
bool clg_onnx_has(const clg_imp_node *n, int i);
/* Input i in canonical (ONNX) layout; INVALID_ARGUMENT when it is absent. */
clg_code clg_onnx_in(clg_onnx *c, const clg_imp_node *n, int i, clg_output *out);
/* Input i (rank 4, NCHW) in NHWC. */
clg_code clg_onnx_in_nhwc(clg_onnx *c, const clg_imp_node *n, int i, clg_output *out);
/* Whether input i is held in NHWC and not (yet) in canonical layout. */
bool clg_onnx_in_is_nhwc(clg_onnx *c, const clg_imp_node *n, int i);
/* The value of input i when it is a constant (folded or an initializer), else NULL. */
const clg_tensor *clg_onnx_in_const(clg_onnx *c, const clg_imp_node *n, int i);
/* The canonical rank and dims of input i (from the graph's static shapes). */
int clg_onnx_in_rank(clg_onnx *c, const clg_imp_node *n, int i);
int64_t clg_onnx_in_dim(clg_onnx *c, const clg_imp_node *n, int i, int d);
clg_dtype clg_onnx_in_dtype(clg_onnx *c, const clg_imp_node *n, int i);
/* The values of constant integer input i as int64 (at most max): INVALID_ARGUMENT naming the
 * input when it is not a constant (clgraph's shapes are static). */
clg_code clg_onnx_in_ints(clg_onnx *c, const clg_imp_node *n, int i, int64_t *v, int max,
                          int *count);
/* The values of constant float input i (a scalar: *v). */
clg_code clg_onnx_in_scalar(clg_onnx *c, const clg_imp_node *n, int i, double *v);

/* --- outputs --------------------------------------------------------------------------------- */
/* Output i of the node is canon (ONNX layout) or nhwc (rank 4 NHWC form of an NCHW result). */
clg_code clg_onnx_out(clg_onnx *c, const clg_imp_node *n, int i, clg_output canon);
clg_code clg_onnx_out_nhwc(clg_onnx *c, const clg_imp_node *n, int i, clg_output nhwc);
/* Output i reads the same value (both forms) as input j: Identity, Dropout. */
clg_code clg_onnx_out_alias(clg_onnx *c, const clg_imp_node *n, int i, int j);

/* --- building -------------------------------------------------------------------------------- */
/* Op `op` on ins with attrs, named under the node's scope; folded into Consts on the host when
 * every input is a Const. *out receives output 0 (outs, when not NULL, every output). */
clg_code clg_onnx_op(clg_onnx *c, const char *op, int nin, const clg_output *ins, int na,
                     const clg_attr *attrs, clg_output *out);
clg_code clg_onnx_op_n(clg_onnx *c, const char *op, int nin, const clg_output *ins, int na,
                       const clg_attr *attrs, int nout, clg_output *outs);
/* A Const of t, of an int32 vector, of a scalar of dtype. */
clg_code clg_onnx_const(clg_onnx *c, const clg_tensor *t, clg_output *out);
clg_code clg_onnx_const_i32(clg_onnx *c, int n, const int64_t *v, clg_output *out);
clg_code clg_onnx_const_scalar(clg_onnx *c, clg_dtype dt, double v, clg_output *out);
/* y = op(x, v) for a constant scalar v of x's dtype. */
clg_code clg_onnx_scalar_op(clg_onnx *c, const char *op, clg_output x, double v, clg_output *y);
/* y = op(a, b) for a two-input op without attributes (Add, Mul, Less, ...). */
clg_code clg_onnx_binop(clg_onnx *c, const char *op, clg_output a, clg_output b, clg_output *y);
/* y = x sliced to [lo, lo + len) along axis (a Slice with Const bounds). */
clg_code clg_onnx_slice_axis(clg_onnx *c, clg_output x, int axis, int64_t lo, int64_t len,
                             clg_output *y);
/* A Const of dtype dt (float32 or float64) of rank dims from the doubles v. */
clg_code clg_onnx_const_f(clg_onnx *c, clg_dtype dt, int rank, const int64_t *dims, const double *v,
                          clg_output *out);
/* The dtypes clg_onnx_const_f writes. */
static inline bool clg_onnx_is_float(clg_dtype dt)
{
  return dt == CLG_FLOAT32 || dt == CLG_FLOAT64;
}
/* Input 0 and whether it is worked on in NHWC (rank 4, held so); output 0 in that same form. */
clg_code clg_onnx_in_either(clg_onnx *c, const clg_imp_node *n, clg_output *x, bool *nhwc);
clg_code clg_onnx_out_either(clg_onnx *c, const clg_imp_node *n, bool nhwc, clg_output y);
/* Transpose x by perm; Reshape x to dims. */
clg_code clg_onnx_transpose(clg_onnx *c, clg_output x, int rank, const int64_t *perm,
                            clg_output *out);
clg_code clg_onnx_reshape(clg_onnx *c, clg_output x, int rank, const int64_t *dims,
                          clg_output *out);

/* A 1-D Conv, MaxPool or AveragePool node (rank-3 input) through its 2-D rule r as H = 1: the
 * input (and Conv's weights) reshaped to rank 4, the attributes widened, the result back. */
clg_code clg_onnx_as_2d(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r);

/* MaxPool or AveragePool of any rank by strided slices (onnx_ops_misc.c): where MaxPool and
 * AvgPool do not reach (3-D, dilations, MaxPool's Indices). */
clg_code clg_onnx_pool_slices(clg_onnx *c, const clg_imp_node *n, bool is_max);

/* How many node inputs and graph outputs read the value named name. */
int clg_onnx_readers(const clg_onnx *c, const char *name);

/* --- attributes ------------------------------------------------------------------------------ */
const clg_imp_attr *clg_onnx_attr(const clg_imp_node *n, const char *name);
int64_t clg_onnx_attr_i(const clg_imp_node *n, const char *name, int64_t def);
double clg_onnx_attr_f(const clg_imp_node *n, const char *name, double def);
const char *clg_onnx_attr_s(const clg_imp_node *n, const char *name, const char *def);
/* The ints of a list attribute (at most max) into v: the count, -1 when the node lacks it. */
int clg_onnx_attr_ints(const clg_imp_node *n, const char *name, int64_t *v, int max);

/* --- shapes of outputs (from clg_output) --------------------------------------------------------
 */
static inline int clg_onnx_rank(clg_output x) { return clg_node_output_rank(x.node, x.index); }
static inline int64_t clg_onnx_dim(clg_output x, int d)
{
  return clg_node_output_dim(x.node, x.index, d);
}
static inline int64_t clg_onnx_count(clg_output x)
{
  int64_t k = 1;
  for (int d = 0; d < clg_onnx_rank(x); d++)
    k *= clg_onnx_dim(x, d);
  return k;
}
static inline clg_dtype clg_onnx_dtype(clg_output x)
{
  return clg_node_output_dtype(x.node, x.index);
}

/* TF DataType number of an ONNX elem type to clg_dtype: false when clgraph lacks it. */
bool clg_onnx_dtype_of(int64_t onnx, clg_dtype *out);

#endif
