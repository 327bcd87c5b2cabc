/* The graph module's door: the node and graph structures the runtime reads. Graph
 * building knows nothing of OpenCL; device specs are kept as parsed names. */
#ifndef CLG_GRAPH_H
#define CLG_GRAPH_H

#include "clgraph/graph.h"
#include "core/core.h"
#include "device/device.h"

struct clg_node {
  clg_graph *graph;
  int index;               /* position in graph->nodes (a topological order) */
  char *name;
  const char *op;          /* static string: "Const", "Placeholder", "MatMul", "Add", "Sub",
                              "Mul", "AddN", "Identity" */
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
  int num_inputs;
  clg_node **inputs;
  bool transpose_a, transpose_b; /* MatMul */
  clg_tensor *value;       /* Const: the value (owned) */
  clg_devname requested;   /* merged scope spec */
  char *requested_text;    /* its text ("" if none) */
};

/* Number of elements of a node's output. */
size_t clg_node_count(const clg_node *n);
/* "[2,3]" into buf. */
char *clg_node_shape_string(const clg_node *n, char *buf, size_t size);

#endif
