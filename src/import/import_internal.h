/* The import module's door: model readers (protobuf wire format, GraphDef, tfjs) turn a file
 * into a neutral model (clg_imp_model: nodes with op type, inputs, attributes and device, in
 * the file's order); import.c builds that model into a graph through the generic builder, so
 * that the op registry validates imported and hand-built graphs alike.
 *
 * Readers report errors through this thread's last error (clg_error), naming the file and the
 * field; they never build graph nodes. */
#ifndef CLG_IMPORT_INTERNAL_H
#define CLG_IMPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clgraph/import.h"
#include "core/core.h"

/* --- protobuf wire format (pb.c) --------------------------------------------------------- *
 * A wire-format reader rather than protobuf-c: it needs no generated code and no .proto files
 * at build time, reads straight from the file's bytes (no copy into generated structs), and
 * the GraphDef and ONNX readers (issue 24) share it. Every read is bounds-checked: a
 * truncated or oversized field and a wrong wire type are INVALID_ARGUMENT naming the field. */

enum { CLG_PB_VARINT = 0, CLG_PB_FIXED64 = 1, CLG_PB_BYTES = 2, CLG_PB_FIXED32 = 5 };

typedef struct clg_pb {
  const uint8_t *base; /* the start of the whole file, for offsets in messages */
  const uint8_t *p, *end;
  const char *what; /* the message being read ("NodeDef"), for errors */
  const char *file; /* the file's name, for errors */
} clg_pb;

typedef struct clg_pb_field {
  uint32_t number;
  int wire;
  uint64_t v;          /* VARINT, FIXED64, FIXED32 */
  const uint8_t *data; /* BYTES */
  size_t len;
  size_t offset; /* of the field's tag in the file */
} clg_pb_field;

void clg_pb_init(clg_pb *r, const uint8_t *base, const uint8_t *data, size_t len, const char *what,
                 const char *file);
/* A reader over a BYTES field (a nested message). */
void clg_pb_sub(clg_pb *sub, const clg_pb *parent, const clg_pb_field *f, const char *what);
/* The next field: 1, 0 at the end, -1 on a malformed field (error set). */
int clg_pb_next(clg_pb *r, clg_pb_field *f);
/* INVALID_ARGUMENT "FILE: Msg.name (field N) at byte B has wire type W, expected E" unless f has
 * the wire type. */
clg_code clg_pb_want(const clg_pb *r, const clg_pb_field *f, int wire, const char *name);
/* The values of a repeated scalar field, packed (BYTES) or not: calls each(ctx, value) for
 * every value; elem_wire is VARINT, FIXED32 or FIXED64. */
clg_code clg_pb_repeated(const clg_pb *r, const clg_pb_field *f, int elem_wire, const char *name,
                         clg_code (*each)(void *ctx, uint64_t v), void *ctx);
/* "FILE: " for error texts ("" when file is NULL). */
const char *clg_pb_file(const clg_pb *r);

/* --- the neutral model ------------------------------------------------------------------- */

typedef enum clg_imp_attr_kind {
  CLG_IMP_NONE = 0,
  CLG_IMP_S,
  CLG_IMP_I,
  CLG_IMP_F,
  CLG_IMP_B,
  CLG_IMP_TYPE,
  CLG_IMP_SHAPE,
  CLG_IMP_TENSOR,
  CLG_IMP_LIST, /* list.s/i/f/b/type/shape/tensor: one kind per list (elem) */
  CLG_IMP_FUNC  /* a function or placeholder: kept by name only */
} clg_imp_attr_kind;

typedef struct clg_imp_shape {
  int rank; /* -1: unknown rank */
  int64_t dims[CLG_MAX_RANK];
} clg_imp_shape;

/* A tensor as the file holds it: TF DataType (raw number), shape, and the host tensor when the
 * dtype is one clgraph has (else NULL: converted at build time to an error naming the node). */
typedef struct clg_imp_tensor {
  int tf_dtype;
  clg_imp_shape shape;
  clg_tensor *value;
} clg_imp_tensor;

typedef struct clg_imp_attr {
  char *name;
  clg_imp_attr_kind kind;
  clg_imp_attr_kind elem; /* for LIST */
  int n;                  /* list length */
  char *s;                /* S (NUL-terminated; len bytes) */
  size_t len;
  int64_t i; /* I, B (0/1), TYPE (TF number) */
  double f;
  clg_imp_shape shape;
  clg_imp_tensor tensor;
  /* lists: ints for I/B/TYPE, floats for F, strs for S, shapes for SHAPE, tensors */
  int64_t *ints;
  double *floats;
  char **strs;
  clg_imp_shape *shapes;
  clg_imp_tensor *tensors;
} clg_imp_attr;

typedef struct clg_imp_node {
  char *name, *op, *device;
  int num_inputs;
  char **inputs; /* "node", "node:1", "^ctrl"; ONNX: tensor names, "" for an absent input */
  int num_attrs;
  clg_imp_attr *attrs;
  /* ONNX only: the node's output tensor names ("" absent) and its domain ("" the default). */
  int num_outputs;
  char **outputs;
  char *domain;
} clg_imp_node;

/* An ONNX initializer: a named constant tensor of the graph. */
typedef struct clg_imp_init {
  char *name;
  clg_imp_tensor t;
} clg_imp_init;

typedef struct clg_imp_model {
  const char *format; /* "graphdef", "tfjs" */
  char *producer;
  char *file; /* the file's name, for errors ("" from memory) */
  int num_nodes, cap_nodes;
  clg_imp_node *nodes;
  /* The signature's inputs and outputs (tfjs), model tensor names; 0 when none. */
  int num_sig_inputs, num_sig_outputs;
  struct clg_imp_sig *sig_inputs, *sig_outputs;
  /* ONNX: the default domain's opset and the initializers (graph inputs that are initializers
   * are not in sig_inputs). */
  int opset;
  int num_inits;
  clg_imp_init *inits;
} clg_imp_model;

/* A signature entry: tensor name, DataType (0: not given) and shape (rank -1: not given). */
typedef struct clg_imp_sig {
  char *name;
  int tf_dtype;
  clg_imp_shape shape;
} clg_imp_sig;

clg_imp_model *clg_imp_model_new(const char *format, const char *file);
void clg_imp_model_free(clg_imp_model *m);
/* A new zeroed node at the end (NULL when memory runs out, error set). */
clg_imp_node *clg_imp_model_add(clg_imp_model *m);
/* The attribute named name, or NULL. */
const clg_imp_attr *clg_imp_node_attr(const clg_imp_node *n, const char *name);
void clg_imp_attr_clear(clg_imp_attr *a);
void clg_imp_tensor_clear(clg_imp_tensor *t);

/* TF DataType number to clg_dtype: true when clgraph has it. clg_imp_tf_dtype_name gives
 * "DT_FLOAT", ... ("DT_<n>" unknown, in buf). clg_imp_tf_dtype_known: a DataType TensorFlow
 * defines (a number outside is an unknown dtype). clg_imp_tf_dtype_size: bytes of one element
 * (0 for strings, variants, unknown). */
bool clg_imp_dtype(int tf, clg_dtype *out);
const char *clg_imp_tf_dtype_name(int tf, char buf[24]);
bool clg_imp_tf_dtype_known(int tf);
size_t clg_imp_tf_dtype_size(int tf);
/* "DT_FLOAT" to its number; -1 when unknown. */
int clg_imp_tf_dtype_parse(const char *name);

/* --- readers ----------------------------------------------------------------------------- */

/* A binary GraphDef into a new model (graphdef.c). file names the input in errors. */
clg_code clg_imp_read_graphdef(const uint8_t *bytes, size_t len, const char *file,
                               clg_imp_model **out);
/* Parses one TensorProto (graphdef.c; tfjs's weights reuse the dtype rules). */
clg_code clg_imp_read_tensor(const clg_pb *r, clg_imp_tensor *t, const char *where);
/* Builds the host tensor of t->value from raw little-endian bytes or typed values: checks the
 * shape and the byte count; where names it in errors. */
clg_code clg_imp_tensor_from_raw(clg_imp_tensor *t, const void *raw, size_t len, const char *where);
/* The same checks, then t->value allocated and left unwritten for the caller to fill: *data
 * its len bytes (NULL, and no error, when clgraph lacks the dtype). Readers that decode
 * (dequantize, widen) write into it directly rather than into a buffer copied after. */
clg_code clg_imp_tensor_alloc(clg_imp_tensor *t, size_t len, const char *where, void **data);

/* TF's rule for typed values: count values (each at the dtype's element size) fill t's shape,
 * fewer repeating the last, none giving zeros, more being INVALID_ARGUMENT naming field and
 * where. Expanding a few values over a larger shape is bounded (CLG_IMP_MAX_FILLED elements,
 * past any shape constant a graph holds), so that a few bytes cannot ask for gigabytes. */
#define CLG_IMP_MAX_FILLED (1u << 24)
clg_code clg_imp_tensor_from_values(clg_imp_tensor *t, const void *vals, size_t count,
                                    const char *field, const char *where);
/* A whole regular file (through clg_file_open_read), NUL-terminated; errors name the path. */
clg_code clg_imp_read_file(const char *path, uint8_t **bytes, size_t *len);

/* An ONNX ModelProto (onnx_read.c): external data files are read from base_dir (NULL: ".")
 * and must lie inside it; weights false skips the initializers' contents (inspect). */
clg_code clg_imp_read_onnx(const uint8_t *bytes, size_t len, const char *file, const char *base_dir,
                           bool weights, clg_imp_model **out);
/* ONNX TensorProto element type to TF DataType number (0: none). */
int clg_imp_onnx_dtype_to_tf(int64_t onnx);
/* One ONNX TensorProto message (onnx_read.c); base_dir for external data (NULL: refused). */
clg_code clg_imp_read_onnx_tensor(const clg_pb *r, clg_imp_tensor *t, char **name,
                                  const char *base_dir, const char *where);
/* Builds an ONNX model into g (onnx_build.c), as clg_graph_import does. */
clg_code clg_imp_build_onnx(clg_graph *g, clg_imp_model *m, const clg_import_options *o,
                            clg_import_result **result);
/* Whether clgraph can run ONNX node n at opset (onnx_ops*.c): for inspect. */
bool clg_imp_onnx_supported(const clg_imp_node *n, int opset);

/* A tfjs model.json (tfjs.c): weights read from base_dir (NULL: "."), shards concatenated in
 * manifest order and dequantized; file names model.json in errors. */
clg_code clg_imp_read_tfjs(const char *json, size_t len, const char *file, const char *base_dir,
                           clg_imp_model **out);
/* The same for clg_import_inspect: weights are not read (shapes and dtypes only). */
clg_code clg_imp_read_tfjs_topology(const char *json, size_t len, const char *file,
                                    clg_imp_model **out);

/* --- op rules (rules.c) ------------------------------------------------------------------ */

/* What the importer does with a TF op type before the registry sees it: the one table of
 * per-op import rules. */
typedef enum clg_imp_rule_kind {
  CLG_IMP_RULE_NONE = 0, /* the registry's op of the same name */
  CLG_IMP_RULE_ALIAS,    /* the registry's op named `target` (AddV2 -> Add) */
  CLG_IMP_RULE_FUSED,    /* _FusedConv2D/_FusedMatMul: target + BiasAdd + epilogue nodes */
  CLG_IMP_RULE_SHAPE,    /* Shape: a Const of the input's static shape (target "Size": its
                          * element count, a scalar) */
  CLG_IMP_RULE_NOFOLD    /* stateful or random: never folded */
} clg_imp_rule_kind;

typedef struct clg_imp_rule {
  const char *tf;
  clg_imp_rule_kind kind;
  const char *target;
} clg_imp_rule;

/* The rule for a TF op type, or NULL (the registry's op of that name). */
const clg_imp_rule *clg_imp_rule_find(const char *tf_op);
/* Whether an undeclared TF attribute may be ignored: '_'-prefixed ones and those that do not
 * change the result (value-checked where the value matters: data_format NHWC, dilations 1). */
bool clg_imp_attr_ignorable(const clg_imp_attr *a);
/* How many of a fused node's args an epilogue step takes (BiasAdd, Prelu: 1). */
int clg_imp_fused_step_args(const char *step);
/* The fused node's attribute that gives a step's attribute step_attr (LeakyRelu's alpha:
 * leakyrelu_alpha), or NULL. */
const char *clg_imp_fused_step_attr(const char *step_attr);
/* Whether clgraph can run a model op (aliases and fused forms counted): for inspect. */
bool clg_imp_op_supported(const clg_imp_node *n);

#endif
