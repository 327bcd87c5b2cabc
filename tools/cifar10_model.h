/* The CIFAR-10 model of TensorFlow's tutorial (cifar10.inference and cifar10.loss), built
 * from clgraph's public API only: the file to read beside the tutorial. */
#ifndef CLG_CIFAR10_MODEL_H
#define CLG_CIFAR10_MODEL_H

#include "clgraph.h"

/* The model's trainable variables, in the tutorial's order and names. */
enum { CIFAR10_NUM_VARS = 10 };

typedef struct cifar10_model {
  clg_node *vars[CIFAR10_NUM_VARS]; /* conv1/weights, conv1/biases, ..., softmax_linear/biases */
  clg_node *logits;                 /* [batch, 10] */
  clg_node *loss;                   /* cross entropy + weight decay, a scalar */
} cifar10_model;

/* Builds inference and loss for images [batch, size, size, channels] (24x24x3 for CIFAR-10,
 * 8x8x1 for the digits) and int32 labels [batch]. Variables are made with
 * clg_get_variable under the variable scope open at the call (reuse them for towers) and
 * the device scope variables_device (the tutorial's /cpu:0; NULL: the current scope). Ops
 * go in the current device and name scopes. Returns the graph's status. */
clg_code cifar10_build(clg_graph *g, clg_node *images, clg_node *labels, int64_t batch, int size,
                       int channels, const char *variables_device, cifar10_model *out);

/* The same for tower i of several sharing one set of variables: reuse (towers after the
 * first) makes every clg_get_variable share the existing variable, as the tutorial's
 * tf.get_variable_scope().reuse_variables(). */
clg_code cifar10_build_tower(clg_graph *g, clg_node *images, clg_node *labels, int64_t batch,
                             int size, int channels, const char *variables_device, bool reuse,
                             cifar10_model *out);

/* Multiply-adds of one forward pass over one image of size x size x channels. */
double cifar10_forward_macs(int size, int channels);

#endif
