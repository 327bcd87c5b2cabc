/* clgraph: importing models made elsewhere (tf.import_graph_def).
 *
 * A frozen TensorFlow GraphDef (.pb), a TensorFlow.js graph model (model.json with its .bin
 * weight shards) or, later, an ONNX model becomes ordinary nodes of a clg_graph: device
 * scopes, placement, sessions, gradients and tracing work on them as on nodes built by hand.
 *
 *   clg_import_options o;
 *   clg_import_options_init(&o);
 *   o.prefix = "net";                                  // every node named "net/..."
 *   clg_import_shape s = {"input", 4, {1, 224, 224, 3}};
 *   o.input_shapes = &s, o.num_input_shapes = 1;       // bind the unknown batch dimension
 *   clg_import_result *r = NULL;
 *   if (clg_graph_import(g, "model.json", &o, &r) != CLG_OK)
 *     fprintf(stderr, "%s\n", clg_graph_error(g));
 *   for (int i = 0; i < clg_import_num_inputs(r); i++) ... clg_import_input(r, i) ...
 *   clg_import_result_free(r);
 *
 * Errors are the graph's sticky error and name the file, the node and what was wrong; an op
 * type clgraph cannot run is UNIMPLEMENTED naming the op type, the node and the file. On an
 * error the graph keeps the nodes imported before it (as after any failed builder). */
#ifndef CLGRAPH_IMPORT_H
#define CLGRAPH_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "clgraph/graph.h"
#include "clgraph/status.h"
#include "clgraph/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum clg_import_format {
  CLG_IMPORT_AUTO = 0, /* from the content (and the file name where the content is JSON) */
  CLG_IMPORT_GRAPHDEF, /* a binary tensorflow.GraphDef */
  CLG_IMPORT_TFJS,     /* a tfjs graph model: model.json, weights beside it */
  CLG_IMPORT_ONNX      /* an onnx.ModelProto */
} clg_import_format;

/* Binds the unknown dimensions of an imported placeholder: `name` as the model names the
 * input (":0" optional); rank and dims replace the model's shape where it has -1 (a known
 * dimension that disagrees is INVALID_ARGUMENT naming the input). */
typedef struct clg_import_shape {
  const char *name;
  int rank;
  int64_t dims[CLG_MAX_RANK];
} clg_import_shape;

/* Feeds an imported placeholder (or any imported tensor "node:i") from an existing output of
 * the graph instead (tf.import_graph_def's input_map): its consumers read `value`. */
typedef struct clg_import_map {
  const char *name;
  clg_output value;
} clg_import_map;

typedef struct clg_import_options {
  clg_import_format format;
  /* A name scope around every imported node ("net" gives "net/conv1/Conv2D"); NULL or "":
   * the model's own names (a name already in the graph is INVALID_ARGUMENT). */
  const char *prefix;
  const clg_import_map *input_map;
  int num_input_map;
  const clg_import_shape *input_shapes;
  int num_input_shapes;
  /* For clg_graph_import_memory of a tfjs model: the folder its weight shards are read from
   * (NULL: the current folder). clg_graph_import uses the model file's folder. */
  const char *base_dir;
} clg_import_options;

void clg_import_options_init(clg_import_options *o);

/* An input or output of the imported model: its name as the model names it, the tensor in
 * the graph, dtype and shape (-1 for a dimension still unknown; rank -1: unknown rank). */
typedef struct clg_import_tensor {
  const char *name;
  clg_output value;
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
} clg_import_tensor;

typedef struct clg_import_result clg_import_result;

/* Imports the model at path into g; *result (may be NULL) receives what was imported. */
clg_code clg_graph_import(clg_graph *g, const char *path, const clg_import_options *o,
                          clg_import_result **result);
/* The same from memory (format CLG_IMPORT_AUTO allowed). */
clg_code clg_graph_import_memory(clg_graph *g, clg_import_format format, const void *bytes,
                                 size_t len, const clg_import_options *o,
                                 clg_import_result **result);

/* What was read: "graphdef", "tfjs" or "onnx", and the producer when the file names one
 * (tfjs's generatedBy/convertedBy, ONNX's producer_name) or "". */
const char *clg_import_format_name(const clg_import_result *r);
const char *clg_import_producer(const clg_import_result *r);
/* The model's inputs (placeholders not fed through input_map) and outputs (its signature's,
 * else the tensors nothing consumes), in the model's order. */
int clg_import_num_inputs(const clg_import_result *r);
const clg_import_tensor *clg_import_input(const clg_import_result *r, int i);
int clg_import_num_outputs(const clg_import_result *r);
const clg_import_tensor *clg_import_output(const clg_import_result *r, int i);
/* The graph tensor a model's tensor name ("node", "node:1") became, after the prefix and
 * any folding; NOT_FOUND naming it otherwise, INVALID_ARGUMENT for a dead tensor (on the
 * branch of a tf.cond whose predicate folded at import and does not take it). */
clg_code clg_import_find(const clg_import_result *r, const char *model_name, clg_output *out);
/* How many NodeDefs (or ONNX nodes) the file held. */
int clg_import_num_model_nodes(const clg_import_result *r);

/* Reads a model without building it (clgraph inspect): format, producer, inputs and outputs as
 * the model declares them (value {NULL, 0}), node count, and the op types with their counts.
 * An op type clgraph cannot run is listed, not an error; a file that cannot be read is. */
clg_code clg_import_inspect(const char *path, const clg_import_options *o,
                            clg_import_result **result, char *err, size_t err_size);
typedef struct clg_import_op_type {
  const char *op;           /* as the model names it ("_FusedConv2D", "Conv") */
  int count;                /* nodes of this type */
  const char *example_node; /* the first node of this type */
  int supported;            /* whether clgraph can run it */
} clg_import_op_type;
int clg_import_num_op_types(const clg_import_result *r);
const clg_import_op_type *clg_import_op_type_at(const clg_import_result *r, int i);
/* The ONNX default domain's opset (0 for TensorFlow formats). */
int clg_import_opset(const clg_import_result *r);
void clg_import_result_free(clg_import_result *r);

/* One serialized onnx.TensorProto file (an ONNX test's input_0.pb) as a host tensor: raw_data
 * or typed values, external data from the file's folder. INVALID_ARGUMENT names the file and
 * the field at fault; UNIMPLEMENTED a dtype clgraph lacks (strings, uint16, complex). */
clg_code clg_import_load_tensor(const char *path, clg_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
