/* tf.train in clgraph: a model with a known answer trained to it on CPU:0, on one GPU
 * stand-in and on four towers; four towers with the same total batch follow one device's
 * loss curve; the global step, exponential decay and moving averages against their
 * formulas. */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

#define N 32 /* examples */
#define D 3  /* features */

static const double W_TRUE[D] = {0.5, -1.25, 2.0}, B_TRUE = 0.75;

/* The data: x uniform in [-1, 1), y = x w + b exactly. */
static void make_data(float *x, float *y)
{
  clg_test_seed(3);
  for (int i = 0; i < N; i++) {
    double s = B_TRUE;
    for (int j = 0; j < D; j++) {
      x[i * D + j] = (float)clg_test_uniform(-1, 1);
      s += x[i * D + j] * W_TRUE[j];
    }
    y[i] = (float)s;
  }
}

typedef struct model {
  clg_graph *g;
  clg_node *w, *b, *loss_sum, *train, *init, *step;
  clg_node *tower_loss[4];
  int towers;
} model;

/* Squared error of a linear model on examples [from, from + n) on the current device. */
static clg_node *tower(clg_graph *g, clg_node *w, clg_node *b, const float *x, const float *y,
                       int from, int n)
{
  clg_node *xs = clg_const_f32(g, NULL, 2, (int64_t[]){n, D}, x + from * D);
  clg_node *ys = clg_const_f32(g, NULL, 2, (int64_t[]){n, 1}, y + from);
  clg_node *pred = clg_add(g, NULL, clg_matmul(g, NULL, xs, w, false, false), b);
  return clg_square(g, NULL, clg_sub(g, NULL, pred, ys));
}

/* towers == 0: one device (dev) and the whole batch; else `towers` GPUs, variables and the
 * average on CPU:0, N / towers examples each. */
static void build(model *m, const char *dev, int towers, clg_optimizer_kind kind, double lr)
{
  static float x[N * D], y[N];
  make_data(x, y);
  memset(m, 0, sizeof *m);
  clg_graph *g = m->g = clg_graph_new();
  CHECK_OK(clg_graph_set_random_seed(g, 42));
  CHECK_OK(clg_graph_push_device(g, towers ? "/cpu:0" : dev));
  clg_initializer init = clg_init_random_uniform(-0.5, 0.5, 7);
  m->w = clg_get_variable(g, "w", CLG_FLOAT32, 2, (int64_t[]){D, 1}, &init);
  clg_initializer zero = clg_init_zeros();
  m->b = clg_get_variable(g, "b", CLG_FLOAT32, 1, (int64_t[]){1}, &zero);
  m->step = clg_global_step(g);
  clg_node *rate = clg_const_f32(g, "lr", 0, NULL, (float[]){(float)lr});
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *vars[2] = {m->w, m->b};
  clg_grad_var gv[8];
  if (!towers) {
    CHECK_OK(clg_graph_push_device(g, dev));
    clg_node *l = tower(g, m->w, m->b, x, y, 0, N);
    m->tower_loss[0] = l;
    CHECK_OK(clg_compute_gradients(g, clg_out(l, 0), 2, vars, NULL, gv));
    CHECK_OK(clg_graph_pop_device(g));
  } else {
    clg_gradients_options go;
    clg_gradients_options_init(&go);
    go.colocate_gradients_with_ops = 1;
    for (int t = 0; t < towers; t++) {
      char d[32];
      snprintf(d, sizeof d, "/device:GPU:%d", t);
      CHECK_OK(clg_graph_push_device(g, d));
      clg_node *l = tower(g, m->w, m->b, x, y, t * (N / towers), N / towers);
      m->tower_loss[t] = l;
      CHECK_OK(clg_compute_gradients(g, clg_out(l, 0), 2, vars, &go, gv + 2 * t));
      CHECK_OK(clg_graph_pop_device(g));
    }
    CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
    clg_grad_var avg[2];
    CHECK_OK(clg_average_gradients(g, towers, 2, gv, avg));
    /* The towers' mean gradient of per-tower sums is the whole batch's sum over towers. */
    for (int v = 0; v < 2; v++)
      avg[v].grad = clg_out(
          clg_mul(g, NULL, avg[v].grad.node, clg_const_f32(g, NULL, 0, NULL, (float[]){towers})),
          0);
    memcpy(gv, avg, sizeof avg);
    CHECK_OK(clg_graph_pop_device(g));
  }
  m->towers = towers;
  clg_optimizer opt = {kind, rate, 0.9, 0};
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  m->train = clg_apply_gradients(g, &opt, 2, gv, m->step, "train");
  CHECK_OK(clg_graph_pop_device(g));
  m->init = clg_global_variables_initializer(g, "init");
  CHECK_MSG(clg_graph_status(g) == CLG_OK, "building: %s", clg_graph_error(g));
}

/* The sum of squared errors now (over the towers' losses). */
static double loss_of(clg_session *s, const model *m)
{
  int k = m->towers ? m->towers : 1;
  clg_tensor *out[4] = {NULL};
  if (clg_session_run(s, 0, NULL, NULL, k, (clg_node **)m->tower_loss, out) != CLG_OK) {
    CHECK_MSG(false, "loss: %s", clg_last_error());
    return NAN;
  }
  double sum = 0;
  for (int t = 0; t < k; t++) {
    const float *v = clg_tensor_const_data(out[t]);
    for (size_t i = 0; i < clg_tensor_count(out[t]); i++)
      sum += v[i];
    clg_tensor_free(out[t]);
  }
  return sum;
}

static void train_to_answer(const char *dev, int towers, clg_optimizer_kind kind)
{
  model m;
  build(&m, dev, towers, kind, kind == CLG_OPTIMIZER_MOMENTUM ? 0.004 : 0.01);
  clg_session *s = NULL;
  if (clg_graph_status(m.g) == CLG_OK)
    CHECK_OK(clg_session_new(m.g, NULL, &s));
  if (s) {
    CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &m.init));
    double first = loss_of(s, &m);
    for (int i = 0; i < 300; i++)
      CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &m.train));
    double last = loss_of(s, &m);
    clg_tensor *w = NULL, *b = NULL, *st = NULL;
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &m.w, &w));
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &m.b, &b));
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &m.step, &st));
    double err = 0;
    for (int j = 0; w && j < D; j++)
      err = fmax(err, fabs(((const float *)clg_tensor_const_data(w))[j] - W_TRUE[j]));
    if (b)
      err = fmax(err, fabs(*(const float *)clg_tensor_const_data(b) - B_TRUE));
    CHECK_MSG(err < 1e-3 && last < 1e-4 * first,
              "%s, %d towers, %s: loss %g -> %g, weights off by %g", dev, towers,
              kind == CLG_OPTIMIZER_MOMENTUM ? "momentum" : "gradient descent", first, last, err);
    CHECK_MSG(st && *(const int64_t *)clg_tensor_const_data(st) == 300, "global step %lld",
              st ? (long long)*(const int64_t *)clg_tensor_const_data(st) : -1LL);
    clg_tensor_free(w);
    clg_tensor_free(b);
    clg_tensor_free(st);
  }
  clg_session_free(s);
  clg_graph_free(m.g);
}

/* Four towers with a quarter of the batch each follow one device's loss curve. */
static void test_towers_follow_one_device(void)
{
  model one, four;
  build(&one, "/cpu:0", 0, CLG_OPTIMIZER_MOMENTUM, 0.004);
  build(&four, NULL, 4, CLG_OPTIMIZER_MOMENTUM, 0.004);
  clg_session *s1 = NULL, *s4 = NULL;
  CHECK_OK(clg_session_new(one.g, NULL, &s1));
  CHECK_OK(clg_session_new(four.g, NULL, &s4));
  if (s1 && s4) {
    CHECK_OK(clg_session_run_outputs(s1, 0, NULL, NULL, 0, NULL, NULL, 1, &one.init));
    CHECK_OK(clg_session_run_outputs(s4, 0, NULL, NULL, 0, NULL, NULL, 1, &four.init));
    double worst = 0;
    for (int i = 0; i < 40; i++) {
      double a = loss_of(s1, &one), b = loss_of(s4, &four);
      worst = fmax(worst, fabs(a - b) / fmax(1e-3, fabs(a)));
      CHECK_OK(clg_session_run_outputs(s1, 0, NULL, NULL, 0, NULL, NULL, 1, &one.train));
      CHECK_OK(clg_session_run_outputs(s4, 0, NULL, NULL, 0, NULL, NULL, 1, &four.train));
    }
    CHECK_MSG(worst < 1e-4, "four towers drift from one device by %g (relative)", worst);
  }
  clg_session_free(s1);
  clg_session_free(s4);
  clg_graph_free(one.g);
  clg_graph_free(four.g);
}

static double scalar_of(clg_session *s, clg_node *n)
{
  clg_tensor *t = NULL;
  if (clg_session_run(s, 0, NULL, NULL, 1, &n, &t) != CLG_OK) {
    CHECK_MSG(false, "%s: %s", clg_node_name(n), clg_last_error());
    return NAN;
  }
  double v = clg_tensor_dtype(t) == CLG_FLOAT32 ? *(const float *)clg_tensor_const_data(t)
             : clg_tensor_dtype(t) == CLG_INT64 ? (double)*(const int64_t *)clg_tensor_const_data(t)
                                                : *(const double *)clg_tensor_const_data(t);
  clg_tensor_free(t);
  return v;
}

static void test_decay_and_moving_average(void)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *step = clg_global_step(g);
  CHECK(clg_global_step(g) == step);
  clg_node *stair = clg_exponential_decay(g, 0.1, step, 2, 0.5, 1);
  clg_node *smooth = clg_exponential_decay(g, 0.1, step, 2, 0.5, 0);
  clg_initializer c = clg_init_constant(3);
  clg_node *v = clg_get_variable(g, "v", CLG_FLOAT32, 0, NULL, &c);
  clg_node *shadow = NULL;
  clg_node *ema = clg_moving_average_apply(g, 0.99, step, 1, &v, &shadow, "ema");
  clg_tensor *one = clg_tensor_new(CLG_INT64, 0, NULL, NULL);
  *(int64_t *)clg_tensor_data(one) = 1;
  clg_node *bump = clg_assign_add(g, "bump", step, clg_const(g, NULL, one));
  clg_tensor_free(one);
  clg_node *vbump = clg_assign_add(g, "vbump", v, clg_const_f32(g, NULL, 0, NULL, (float[]){1}));
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *init = clg_global_variables_initializer(g, "init");
  CHECK_MSG(clg_graph_status(g) == CLG_OK, "%s", clg_graph_error(g));
  clg_session *s = NULL;
  if (clg_graph_status(g) == CLG_OK)
    CHECK_OK(clg_session_new(g, NULL, &s));
  if (s) {
    CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &init));
    double want_shadow = 3; /* a shadow starts at its variable's initial value */
    for (int k = 0; k < 5; k++) {
      double st = scalar_of(s, step);
      CHECK(st == k);
      CHECK_MSG(fabs(scalar_of(s, stair) - 0.1 * pow(0.5, floor(k / 2.0))) < 1e-7,
                "staircase decay at step %d", k);
      CHECK_MSG(fabs(scalar_of(s, smooth) - 0.1 * pow(0.5, k / 2.0)) < 1e-6, "decay at step %d: %g",
                k, scalar_of(s, smooth));
      double d = fmin(0.99, (1.0 + k) / (10.0 + k));
      want_shadow -= (1 - d) * (want_shadow - (3.0 + k)); /* v is 3 + k now */
      CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &ema));
      CHECK_MSG(fabs(scalar_of(s, shadow) - want_shadow) < 1e-5, "shadow at step %d: %g, want %g",
                k, scalar_of(s, shadow), want_shadow);
      CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &bump));
      CHECK_OK(clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &vbump));
    }
  }
  clg_session_free(s);
  clg_graph_free(g);
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_train");
  train_to_answer("/cpu:0", 0, CLG_OPTIMIZER_GRADIENT_DESCENT);
  train_to_answer("/cpu:0", 0, CLG_OPTIMIZER_MOMENTUM);
  train_to_answer("/device:GPU:0", 0, CLG_OPTIMIZER_MOMENTUM);
  train_to_answer(NULL, 4, CLG_OPTIMIZER_MOMENTUM);
  test_towers_follow_one_device();
  test_decay_and_moving_average();
  return clg_test_summary("test_train");
}
