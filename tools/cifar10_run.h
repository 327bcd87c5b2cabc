/* What clgraph train and clgraph eval share: the tutorial's constants, the defaults the
 * digits get, setting weights from a checkpoint's raw values or moving averages, and the
 * log's time stamp and device lines. Public API only. */
#ifndef CLG_CIFAR10_RUN_H
#define CLG_CIFAR10_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cifar10_model.h"
#include "clgraph.h"

/* cifar10.py's constants. */
#define CIFAR10_MOVING_AVERAGE_DECAY 0.9999
#define CIFAR10_EPOCHS_PER_DECAY 350.0
#define CIFAR10_LEARNING_RATE_DECAY_FACTOR 0.1

/* What --dataset digits chooses (README: "The digits"): 97% in well under a minute. */
#define CIFAR10_DIGITS_BATCH 64
#define CIFAR10_DIGITS_STEPS 1500
#define CIFAR10_DIGITS_LR 0.1
#define CIFAR10_DIGITS_EPOCHS_PER_DECAY 40.0

/* Assign ops that set the model's variables (and, optionally, their moving averages) from
 * a checkpoint's tensors, as TensorFlow's Saver restores through placeholders. */
typedef struct cifar10_assigner {
  clg_node *vars[CIFAR10_NUM_VARS];
  clg_node *values[CIFAR10_NUM_VARS]; /* placeholders */
  clg_node *set_vars, *set_all;       /* NoOps: the variables; variables and shadows */
  char error[512];
} cifar10_assigner;

typedef enum cifar10_source {
  CIFAR10_FROM_RAW,      /* tensors named as the variables ("conv1/weights") */
  CIFAR10_FROM_AVERAGES, /* their moving averages ("conv1/weights/ExponentialMovingAverage") */
} cifar10_source;

/* Builds the ops into g; shadows may be NULL (no moving averages in the graph). */
void cifar10_assigner_build(clg_graph *g, clg_node *const *vars, clg_node *const *shadows,
                            cifar10_assigner *a);
/* Reads the tensors from path and runs the assigns (with_shadows: the shadows get the same
 * values). False with cifar10_assigner_error() naming the file and tensor on failure. */
bool cifar10_assigner_run(cifar10_assigner *a, clg_session *s, const char *path,
                          cifar10_source from, bool with_shadows);
const char *cifar10_assigner_error(const cifar10_assigner *a);
void cifar10_assigner_free(cifar10_assigner *a);

enum { CIFAR10_MAX_TOWERS = 64 };

/* cifar10_multi_gpu_train.py's graph: what one training step needs. */
typedef struct cifar10_train_options {
  int towers, batch;       /* batch per tower */
  int size, channels;      /* the images: 24x24x3, or 8x8x1 for the digits */
  int64_t num_examples;    /* per epoch, for the learning rate's decay steps */
  double learning_rate;    /* the initial one */
  double epochs_per_decay; /* 0: the tutorial's 350 */
  int64_t seed;            /* the graph's random seed */
  int num_tasks;           /* MPI tasks of the cluster (0 or 1: no cluster) */
} cifar10_train_options;

typedef struct cifar10_train_graph {
  clg_graph *g;
  cifar10_model towers[CIFAR10_MAX_TOWERS];
  clg_node *images[CIFAR10_MAX_TOWERS], *labels[CIFAR10_MAX_TOWERS]; /* placeholders */
  clg_node *global_step, *lr, *train_op, *init;
  clg_node *mean_loss; /* in a cluster: the mean loss over every task's towers, else NULL */
  clg_node *shadows[CIFAR10_NUM_VARS]; /* the moving averages */
  cifar10_assigner assign;             /* sets the weights (and their averages) from a file */
} cifar10_train_graph;

/* Builds it into a new graph t->g (the caller frees it, also on failure). Variables and
 * global_step on /cpu:0; tower i on /device:GPU:i under name scope tower_i, sharing the
 * variables; the towers' gradients averaged on /cpu:0 and applied by gradient descent with
 * lr = learning_rate * 0.1^floor(step / decay_steps), decay_steps = num_examples / batch /
 * (towers * tasks) * epochs_per_decay; then the moving averages. In a cluster of num_tasks
 * MPI tasks, each task builds the same graph (no task in its device specs: each runs its own
 * copy, variables included) and the towers' averaged gradients are averaged once more over
 * the tasks by AllReduce, so P tasks of T towers train as one process of P*T towers. False
 * with clg_graph_error(t->g) on failure. */
bool cifar10_train_build(const cifar10_train_options *o, cifar10_train_graph *t);

/* Python's datetime.now() as the tutorial prints it: "2026-11-30 14:32:07.123456". */
void cifar10_timestamp(char *buf, size_t n);

/* While on, soft-placement log lines are counted instead of printed (other lines go to
 * stderr); cifar10_print_mapping reports the count. */
void cifar10_count_soft_placements(bool on);
int cifar10_soft_placements(void);

/* The device mapping, then where each tower's loss and the variables were placed. */
void cifar10_print_mapping(FILE *f, clg_session *s, const cifar10_model *towers, int num_towers);

#endif
