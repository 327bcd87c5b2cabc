/* clgraph: run dataflow graphs on the OpenCL devices of a machine, with TensorFlow 1.x's
 * device model ("Using GPUs"). This umbrella header is the whole public API.
 *
 * Example (the guide's multi-tower scenario):
 *
 *   clg_graph *g = clg_graph_new();
 *   int64_t da[2] = {2, 3}, db[2] = {3, 2};
 *   float v[6] = {1, 2, 3, 4, 5, 6};
 *   clg_node *c[2];
 *   const char *gpus[2] = {"/device:GPU:2", "/device:GPU:3"};
 *   for (int i = 0; i < 2; i++) {
 *     clg_graph_push_device(g, gpus[i]);
 *     clg_node *a = clg_const_f32(g, NULL, 2, da, v);
 *     clg_node *b = clg_const_f32(g, NULL, 2, db, v);
 *     c[i] = clg_matmul(g, NULL, a, b, false, false);
 *     clg_graph_pop_device(g);
 *   }
 *   clg_graph_push_device(g, "/cpu:0");
 *   clg_node *sum = clg_add_n(g, NULL, 2, c);
 *   clg_graph_pop_device(g);
 *   clg_session_options opt;
 *   clg_session_options_init(&opt);
 *   opt.log_device_placement = 1;
 *   clg_session *s;
 *   clg_tensor *out;
 *   if (clg_session_new(g, &opt, &s) == CLG_OK &&
 *       clg_session_run(s, 0, NULL, NULL, 1, &sum, &out) == CLG_OK) {
 *     char *text = clg_tensor_to_string(out);   // "[[  44.   56.]\n [  98.  128.]]"
 *     puts(text);
 *     free(text);
 *     clg_tensor_free(out);
 *   }
 */
#ifndef CLGRAPH_H
#define CLGRAPH_H

#include "clgraph/checkpoint.h"
#include "clgraph/device.h"
#include "clgraph/export.h"
#include "clgraph/graph.h"
#include "clgraph/import.h"
#include "clgraph/log.h"
#include "clgraph/memory.h"
#include "clgraph/session.h"
#include "clgraph/status.h"
#include "clgraph/tensor.h"
#include "clgraph/train.h"
#include "clgraph/variables.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
const char *clg_version(void);

#ifdef __cplusplus
}
#endif
#endif
