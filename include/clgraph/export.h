/* clgraph: exporting a graph as a frozen TensorFlow GraphDef (tf.compat.v1.graph_util's
 * convert_variables_to_constants, then SerializeToString).
 *
 *   clg_output logits = clg_out(m.logits, 0);
 *   if (clg_session_export_graphdef(s, 1, &logits, "model.pb") != CLG_OK)
 *     fprintf(stderr, "%s\n", clg_last_error());
 *
 * What is written is the subgraph the outputs need (their inputs and control inputs,
 * transitively), in the graph's order: one NodeDef per node with its name, op type, inputs
 * ("node", "node:1", "^control"), requested device and every attribute (TensorFlow's names
 * and types), and each variable (VariableV2) replaced by a Const of the same name holding
 * the value it has in the session now. The result is a binary tensorflow.GraphDef that
 * clg_graph_import (and TensorFlow's tf.import_graph_def) reads. */
#ifndef CLGRAPH_EXPORT_H
#define CLGRAPH_EXPORT_H

#include <stddef.h>

#include "clgraph/graph.h"
#include "clgraph/session.h"
#include "clgraph/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the frozen GraphDef of the outputs (nodes of the session's graph) to path,
 * atomically as every file clgraph writes. Errors: INVALID_ARGUMENT for no outputs, an output
 * of another graph or a bad index, and for a node in the subgraph that updates a variable
 * (Assign and the like: a frozen graph holds no state), naming it; FAILED_PRECONDITION for a
 * variable not initialized in the session (from the run that reads it); the atomic writer's
 * errors naming the file. */
clg_code clg_session_export_graphdef(clg_session *s, int num_outputs, const clg_output *outputs,
                                     const char *path);
/* The same into memory: *bytes (malloc'd; the caller frees it) and *len. */
clg_code clg_session_export_graphdef_memory(clg_session *s, int num_outputs,
                                            const clg_output *outputs, void **bytes, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
