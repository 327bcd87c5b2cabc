/* cifar10.inference and cifar10.loss, layer by layer as the tutorial's table gives them:
 * conv1, pool1, norm1, conv2, norm2, pool2, local3, local4, softmax_linear, and the loss
 * mean(cross entropy) + 0.004 * (L2Loss(local3/weights) + L2Loss(local4/weights)). */
#include <stdio.h>
#include <string.h>

#include "cifar10_model.h"

/* tf.get_variable(name, shape, initializer) on the variables' device. */
static clg_node *variable(clg_graph *g, const char *device, const char *name, int rank,
                          const int64_t *dims, clg_initializer init)
{
  if (device)
    clg_graph_push_device(g, device);
  clg_node *v = clg_get_variable(g, name, CLG_FLOAT32, rank, dims, &init);
  if (device)
    clg_graph_pop_device(g);
  return v;
}

/* Conv2D 5x5 SAME stride 1, BiasAdd, Relu under scope `name`. */
static clg_node *conv(clg_graph *g, const char *device, clg_reuse reuse, const char *name,
                      clg_node *x, int64_t cin, int64_t cout, double bias, clg_node **w,
                      clg_node **b)
{
  static const int64_t strides[4] = {1, 1, 1, 1};
  clg_graph_push_variable_scope(g, name, reuse);
  *w = variable(g, device, "weights", 4, (int64_t[]){5, 5, cin, cout},
                clg_init_truncated_normal(0, 5e-2, 0));
  *b = variable(g, device, "biases", 1, (int64_t[]){cout}, clg_init_constant(bias));
  clg_graph_pop_variable_scope(g);
  clg_graph_push_name_scope(g, name);
  clg_node *y = clg_relu(
      g, name, clg_bias_add(g, NULL, clg_conv2d(g, NULL, x, *w, strides, "SAME", NULL), *b));
  clg_graph_pop_name_scope(g);
  return y;
}

/* MatMul, bias, and Relu unless it is the last layer. */
static clg_node *local(clg_graph *g, const char *device, clg_reuse reuse, const char *name,
                       clg_node *x, int64_t in, int64_t out, double stddev, double bias, bool relu,
                       clg_node **w, clg_node **b)
{
  clg_graph_push_variable_scope(g, name, reuse);
  *w = variable(g, device, "weights", 2, (int64_t[]){in, out},
                clg_init_truncated_normal(0, stddev, 0));
  *b = variable(g, device, "biases", 1, (int64_t[]){out}, clg_init_constant(bias));
  clg_graph_pop_variable_scope(g);
  clg_graph_push_name_scope(g, name);
  clg_node *y = clg_add(g, NULL, clg_matmul(g, NULL, x, *w, false, false), *b);
  if (relu)
    y = clg_relu(g, name, y);
  clg_graph_pop_name_scope(g);
  return y;
}

static int64_t pooled(int64_t n) { return (n + 1) / 2; } /* 3x3 stride 2 SAME */

clg_code cifar10_build(clg_graph *g, clg_node *images, clg_node *labels, int64_t batch, int size,
                       int channels, const char *variables_device, cifar10_model *out)
{
  return cifar10_build_tower(g, images, labels, batch, size, channels, variables_device, false,
                             out);
}

clg_code cifar10_build_tower(clg_graph *g, clg_node *images, clg_node *labels, int64_t batch,
                             int size, int channels, const char *variables_device, bool reuse,
                             cifar10_model *out)
{
  const clg_reuse r = reuse ? CLG_REUSE_TRUE : CLG_REUSE_INHERIT;
  static const int64_t ksize[4] = {1, 3, 3, 1}, stride2[4] = {1, 2, 2, 1};
  const char *dev = variables_device;
  memset(out, 0, sizeof *out);
  clg_node **v = out->vars;
  clg_node *x = conv(g, dev, r, "conv1", images, channels, 64, 0.0, &v[0], &v[1]);
  x = clg_max_pool(g, "pool1", x, ksize, stride2, "SAME");
  x = clg_lrn(g, "norm1", x, 4, 1.0, 0.001 / 9.0, 0.75);
  x = conv(g, dev, r, "conv2", x, 64, 64, 0.1, &v[2], &v[3]);
  x = clg_lrn(g, "norm2", x, 4, 1.0, 0.001 / 9.0, 0.75);
  x = clg_max_pool(g, "pool2", x, ksize, stride2, "SAME");
  int64_t side = pooled(pooled(size)), flat = side * side * 64;
  x = clg_reshape(g, NULL, x, 2, (int64_t[]){batch, flat});
  x = local(g, dev, r, "local3", x, flat, 384, 0.04, 0.1, true, &v[4], &v[5]);
  x = local(g, dev, r, "local4", x, 384, 192, 0.04, 0.1, true, &v[6], &v[7]);
  out->logits =
      local(g, dev, r, "softmax_linear", x, 192, 10, 1.0 / 192.0, 0.0, false, &v[8], &v[9]);
  /* The loss: cross entropy averaged over the batch, plus weight decay on local3/4. */
  clg_node *xent = clg_sparse_softmax_cross_entropy_with_logits(g, "cross_entropy_per_example",
                                                                out->logits, labels);
  clg_node *mean = clg_mean(g, "cross_entropy", xent, 1, (int64_t[]){0}, false);
  float wd = 0.004f;
  clg_node *decay = clg_const_f32(g, "weight_decay", 0, NULL, &wd);
  clg_node *terms[3] = {mean, clg_mul(g, NULL, clg_l2_loss(g, NULL, v[4]), decay),
                        clg_mul(g, NULL, clg_l2_loss(g, NULL, v[6]), decay)};
  out->loss = clg_add_n(g, "total_loss", 3, terms);
  return clg_graph_status(g);
}

double cifar10_forward_macs(int size, int channels)
{
  double s1 = size, s2 = (double)pooled(size), s3 = (double)pooled(pooled(size));
  return s1 * s1 * 64 * 25 * channels + s2 * s2 * 64 * 25 * 64 + s3 * s3 * 64 * 384 + 384.0 * 192 +
         192.0 * 10;
}
