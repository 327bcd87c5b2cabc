/* Shared by clgraph train and clgraph eval: see cifar10_run.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "cifar10_run.h"

void cifar10_assigner_build(clg_graph *g, clg_node *const *vars, clg_node *const *shadows,
                            cifar10_assigner *a)
{
  memset(a, 0, sizeof *a);
  clg_graph_push_device(g, "/cpu:0");
  clg_graph_push_name_scope(g, "restore");
  clg_node *sets[2 * CIFAR10_NUM_VARS];
  int num_vars = 0, num_all = 0;
  for (int i = 0; i < CIFAR10_NUM_VARS && clg_graph_status(g) == CLG_OK; i++) {
    clg_node *v = vars[i];
    int64_t dims[CLG_MAX_RANK];
    for (int k = 0; k < clg_node_rank(v); k++)
      dims[k] = clg_node_dim(v, k);
    a->vars[i] = v;
    a->values[i] = clg_placeholder(g, NULL, clg_node_dtype(v), clg_node_rank(v), dims);
    sets[num_vars++] = clg_assign(g, NULL, v, a->values[i]);
  }
  num_all = num_vars;
  for (int i = 0; shadows && i < CIFAR10_NUM_VARS && clg_graph_status(g) == CLG_OK; i++)
    if (shadows[i])
      sets[num_all++] = clg_assign(g, NULL, shadows[i], a->values[i]);
  /* Control inputs must exist before the node that waits for them. */
  a->set_vars = clg_op(g, "NoOp", "set_variables", 0, NULL, 0, NULL);
  a->set_all = clg_op(g, "NoOp", "set_variables_and_averages", 0, NULL, 0, NULL);
  for (int i = 0; i < num_all && clg_graph_status(g) == CLG_OK; i++) {
    if (i < num_vars)
      clg_node_add_control_input(a->set_vars, sets[i]);
    clg_node_add_control_input(a->set_all, sets[i]);
  }
  clg_graph_pop_name_scope(g);
  clg_graph_pop_device(g);
}

static bool same_shape(const clg_checkpoint_tensor *t, const clg_node *v)
{
  if (t->rank != clg_node_rank(v))
    return false;
  for (int k = 0; k < t->rank; k++)
    if (t->dims[k] != clg_node_dim(v, k))
      return false;
  return true;
}

bool cifar10_assigner_run(cifar10_assigner *a, clg_session *s, const char *path,
                          cifar10_source from, bool with_shadows)
{
  clg_checkpoint *ck = NULL;
  if (clg_checkpoint_open(path, &ck) != CLG_OK) {
    snprintf(a->error, sizeof a->error, "%s", clg_last_error());
    return false;
  }
  clg_tensor *values[CIFAR10_NUM_VARS] = {0};
  clg_output at[CIFAR10_NUM_VARS];
  bool ok = true;
  for (int i = 0; i < CIFAR10_NUM_VARS && ok; i++) {
    char want[256];
    snprintf(want, sizeof want, "%s%s", clg_node_name(a->vars[i]),
             from == CIFAR10_FROM_AVERAGES ? "/ExponentialMovingAverage" : "");
    int found = -1;
    clg_checkpoint_tensor info;
    for (int k = 0; k < clg_checkpoint_num_tensors(ck) && found < 0; k++)
      if (clg_checkpoint_tensor_info(ck, k, &info) == CLG_OK && strcmp(info.name, want) == 0)
        found = k;
    if (found < 0) {
      snprintf(a->error, sizeof a->error, "%s has no tensor '%s'%s", path, want,
               from == CIFAR10_FROM_AVERAGES ? " (a checkpoint of clgraph train holds the moving "
                                               "averages; --raw reads the variables)"
                                             : "");
      ok = false;
    } else if (info.type != clg_node_dtype(a->vars[i]) || !same_shape(&info, a->vars[i])) {
      snprintf(a->error, sizeof a->error,
               "%s: tensor '%s' is %s of rank %d, not the model's "
               "float32 of rank %d and the same shape",
               path, want, info.dtype, info.rank, clg_node_rank(a->vars[i]));
      ok = false;
    } else if (clg_checkpoint_read(ck, found, &values[i]) != CLG_OK) {
      snprintf(a->error, sizeof a->error, "%s", clg_last_error());
      ok = false;
    }
    at[i] = clg_out(a->values[i], 0);
  }
  clg_checkpoint_close(ck);
  clg_node *target = with_shadows ? a->set_all : a->set_vars;
  if (ok && clg_session_run_outputs(s, CIFAR10_NUM_VARS, at, values, 0, NULL, NULL, 1, &target) !=
                CLG_OK) {
    snprintf(a->error, sizeof a->error, "%s", clg_last_error());
    ok = false;
  }
  for (int i = 0; i < CIFAR10_NUM_VARS; i++)
    clg_tensor_free(values[i]);
  return ok;
}

const char *cifar10_assigner_error(const cifar10_assigner *a) { return a->error; }

void cifar10_assigner_free(cifar10_assigner *a) { (void)a; /* the graph owns the nodes */ }

static int soft_placements;

/* Forwards everything but the soft-placement lines, which it counts: without a GPU every
 * tower node would print one. */
static void counting_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  (void)user;
  if (strncmp(message, "Soft placement:", 15) == 0)
    soft_placements++;
  else
    fprintf(stderr, "%s\n", message);
}

void cifar10_count_soft_placements(bool on)
{
  if (on)
    soft_placements = 0;
  clg_log_set_sink(on ? counting_sink : NULL, NULL);
}

int cifar10_soft_placements(void) { return soft_placements; }

void cifar10_timestamp(char *buf, size_t n)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf, n, "%s.%06ld", base, (long)tv.tv_usec);
}

void cifar10_print_mapping(FILE *f, clg_session *s, const cifar10_model *towers, int num_towers)
{
  char *map = clg_devices_mapping_string(clg_session_devices(s));
  if (map)
    fputs(map, f);
  free(map);
  for (int i = 0; i < num_towers; i++)
    fprintf(f, "tower_%d on %s\n", i, clg_session_node_device(s, towers[i].logits));
  fprintf(f, "variables on %s\n", clg_session_node_device(s, towers[0].vars[0]));
  if (soft_placements)
    fprintf(f,
            "soft placement moved %d nodes to another device (--log-device-placement "
            "lists them)\n",
            soft_placements);
}

bool cifar10_train_build(const cifar10_train_options *o, cifar10_train_graph *t)
{
  memset(t, 0, sizeof *t);
  clg_graph *g = t->g = clg_graph_new();
  if (!g || o->towers < 1 || o->towers > CIFAR10_MAX_TOWERS)
    return false;
  clg_graph_set_random_seed(g, o->seed);
  int64_t idims[4] = {o->batch, o->size, o->size, o->channels}, ldims[1] = {o->batch};

  /* global_step and the learning rate live with the variables. */
  clg_graph_push_device(g, "/cpu:0");
  t->global_step = clg_global_step(g);
  const int tasks = o->num_tasks > 1 ? o->num_tasks : 1;
  double batches_per_epoch = (double)o->num_examples / o->batch / o->towers / tasks;
  double epochs = o->epochs_per_decay > 0 ? o->epochs_per_decay : CIFAR10_EPOCHS_PER_DECAY;
  double decay_steps = floor(batches_per_epoch * epochs);
  t->lr =
      clg_exponential_decay(g, o->learning_rate, t->global_step, decay_steps < 1 ? 1 : decay_steps,
                            CIFAR10_LEARNING_RATE_DECAY_FACTOR, 1);
  clg_graph_pop_device(g);

  /* One tower per GPU: its batch, its loss, its gradients. Tower 0 creates the variables;
   * the others reuse them (tf.get_variable_scope().reuse_variables()). */
  clg_grad_var(*grads)[CIFAR10_NUM_VARS] = calloc((size_t)o->towers, sizeof *grads);
  if (!grads)
    return false;
  for (int i = 0; i < o->towers && clg_graph_status(g) == CLG_OK; i++) {
    char dev[32], scope[32];
    snprintf(dev, sizeof dev, "/device:GPU:%d", i);
    snprintf(scope, sizeof scope, "tower_%d", i);
    clg_graph_push_device(g, dev);
    clg_graph_push_name_scope(g, scope);
    t->images[i] = clg_placeholder(g, "images", CLG_FLOAT32, 4, idims);
    t->labels[i] = clg_placeholder(g, "labels", CLG_INT32, 1, ldims);
    cifar10_build_tower(g, t->images[i], t->labels[i], o->batch, o->size, o->channels, "/cpu:0",
                        i > 0, &t->towers[i]);
    if (clg_graph_status(g) == CLG_OK) {
      clg_gradients_options go;
      clg_gradients_options_init(&go);
      go.colocate_gradients_with_ops = 1;
      clg_compute_gradients(g, clg_out(t->towers[i].loss, 0), CIFAR10_NUM_VARS, t->towers[i].vars,
                            &go, grads[i]);
    }
    clg_graph_pop_name_scope(g);
    clg_graph_pop_device(g);
  }
  if (clg_graph_status(g) != CLG_OK) {
    free(grads);
    return false;
  }

  /* average_gradients on the CPU, one gradient-descent step, then the moving averages. */
  clg_graph_push_device(g, "/cpu:0");
  clg_grad_var avg[CIFAR10_NUM_VARS];
  clg_average_gradients(g, o->towers, CIFAR10_NUM_VARS, &grads[0][0], avg);
  free(grads);
  if (tasks > 1) {
    /* Data parallelism over tasks: every task applies the mean over all tasks' towers. */
    for (int i = 0; i < CIFAR10_NUM_VARS && clg_graph_status(g) == CLG_OK; i++) {
      clg_node *x = avg[i].grad.index == 0 ? avg[i].grad.node
                                           : clg_op(g, "Identity", NULL, 1, &avg[i].grad, 0, NULL);
      avg[i].grad = clg_out(clg_all_reduce(g, NULL, x, "mean"), 0);
    }
    clg_node *losses[CIFAR10_MAX_TOWERS];
    for (int i = 0; i < o->towers; i++)
      losses[i] = t->towers[i].loss;
    float inv = 1.0f / (float)o->towers;
    clg_node *local = clg_mul(g, NULL, clg_add_n(g, NULL, o->towers, losses),
                              clg_const_f32(g, NULL, 0, NULL, &inv));
    t->mean_loss = clg_all_reduce(g, "mean_loss", local, "mean");
  }
  clg_optimizer opt = {CLG_OPTIMIZER_GRADIENT_DESCENT, t->lr, 0, 0};
  clg_node *apply =
      clg_apply_gradients(g, &opt, CIFAR10_NUM_VARS, avg, t->global_step, "apply_gradients");
  clg_node *averages =
      clg_moving_average_apply(g, CIFAR10_MOVING_AVERAGE_DECAY, t->global_step, CIFAR10_NUM_VARS,
                               t->towers[0].vars, t->shadows, "ExponentialMovingAverage");
  t->train_op = clg_op(g, "NoOp", "train_op", 0, NULL, 0, NULL);
  if (t->train_op && apply && averages) {
    clg_node_add_control_input(t->train_op, apply);
    clg_node_add_control_input(t->train_op, averages);
  }
  clg_graph_pop_device(g);
  cifar10_assigner_build(g, t->towers[0].vars, t->shadows, &t->assign);
  t->init = clg_global_variables_initializer(g, "init");
  return clg_graph_status(g) == CLG_OK;
}
