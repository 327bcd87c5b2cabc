/* Variables: values that persist across runs on every device kind, stored in the device's
 * allocator and read without copies; sharing under variable scopes (towers); uninitialized
 * reads; colocation of updates; control dependencies ordering reads after updates across
 * devices; one value per session; the update ops' arithmetic; initializers that give the
 * same values on every device, and truncated normal's statistics over 10^6 draws. */
#include <math.h>
#include <stdlib.h>

#include "runtime/runtime.h"
#include "testutil.h"

static const char *const DEVICES[5] = {"/cpu:0", "/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
                                       "/device:GPU:3"};
static const char *const SHORT[5] = {"CPU:0", "GPU:0", "GPU:1", "GPU:2", "GPU:3"};

static clg_session *new_session(clg_graph *g, int soft)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = soft;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  return s;
}

static clg_code run_target(clg_session *s, clg_node *target)
{
  return clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &target);
}

static float fetch_f32(clg_session *s, clg_node *n, size_t i)
{
  clg_tensor *t = NULL;
  float v = NAN;
  if (clg_session_run(s, 0, NULL, NULL, 1, &n, &t) == CLG_OK)
    v = ((const float *)clg_tensor_const_data(t))[i];
  else
    fprintf(stderr, "fetch '%s': %s\n", clg_node_name(n), clg_last_error());
  clg_tensor_free(t);
  return v;
}

/* A variable of 4 floats initialized to 1 on each device, then AssignAdd(ones) 40 times:
 * 41 everywhere, the device's allocator holds it, and the update runs move no bytes. */
static void test_many_runs_every_device(void)
{
  for (int d = 0; d < 5; d++) {
    clg_graph *g = clg_graph_new();
    int64_t dims[1] = {256};
    clg_initializer one = clg_init_ones();
    CHECK_OK(clg_graph_push_device(g, DEVICES[d]));
    clg_node *v = clg_get_variable(g, "v", CLG_FLOAT32, 1, dims, &one);
    clg_node *ones = clg_initializer_op(g, "ones", &one, CLG_FLOAT32, 1, dims);
    clg_node *add = clg_assign_add(g, "add", v, ones);
    CHECK_OK(clg_graph_pop_device(g));
    clg_node *init = clg_global_variables_initializer(g, NULL);
    CHECK_OK(clg_graph_status(g));
    clg_session *s = new_session(g, 0);
    const char *where = clg_session_node_device(s, v);
    CHECK_MSG(where && strstr(where, SHORT[d]) != NULL, "v on %s, want %s", where, DEVICES[d]);
    clg_memory_stats before, after;
    CHECK_OK(clg_session_memory_stats(s, DEVICES[d], &before));
    CHECK_OK(run_target(s, init));
    CHECK_OK(clg_session_memory_stats(s, DEVICES[d], &after));
    CHECK_MSG(after.live_allocs > before.live_allocs,
              "%s: the variable is not a block of the device's allocator", DEVICES[d]);
    for (int r = 0; r < 40; r++) {
      CHECK_OK(run_target(s, add));
      clg_plan_stats ps;
      CHECK_OK(clg_session_plan_stats(s, &ps));
      CHECK_MSG(ps.host_to_device_bytes == 0 && ps.device_to_host_bytes == 0,
                "%s: an update run moved %llu + %llu bytes", DEVICES[d],
                (unsigned long long)ps.host_to_device_bytes,
                (unsigned long long)ps.device_to_host_bytes);
    }
    CHECK_MSG(fetch_f32(s, v, 255) == 41.0f, "%s: v = %g after 40 AssignAdds", DEVICES[d],
              fetch_f32(s, v, 255));
    CHECK(strstr(clg_session_node_reason(s, add), "colocated with variable 'v'") != NULL);
    clg_session_free(s);
    clg_graph_free(g);
  }
}

static void test_uninitialized(void)
{
  clg_graph *g = clg_graph_new();
  int64_t dims[2] = {3, 3};
  CHECK_OK(clg_graph_push_variable_scope(g, "conv1", CLG_REUSE_INHERIT));
  clg_node *w = clg_get_variable(g, "weights", CLG_FLOAT32, 2, dims, NULL);
  CHECK_OK(clg_graph_pop_variable_scope(g));
  clg_node *sq = clg_square(g, "sq", w);
  CHECK_OK(clg_graph_status(g));
  CHECK_STR(clg_node_name(w), "conv1/weights");
  clg_session *s = new_session(g, 0);
  clg_tensor *t = NULL;
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &sq, &t), CLG_FAILED_PRECONDITION);
  CHECK_CONTAINS(clg_last_error(), "Attempting to use uninitialized value conv1/weights");
  CHECK(t == NULL);
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &w, &t), CLG_FAILED_PRECONDITION);
  CHECK_CONTAINS(clg_last_error(), "Attempting to use uninitialized value conv1/weights");
  /* After the initializer, both work. */
  clg_node *init = clg_global_variables_initializer(g, NULL);
  CHECK_OK(run_target(s, init));
  float w0 = fetch_f32(s, w, 0);
  float limit = sqrtf(6.0f / 6.0f);
  CHECK_MSG(w0 >= -limit && w0 < limit && w0 != 0.0f, "glorot value %g", w0);
  CHECK(fetch_f32(s, sq, 0) == w0 * w0);
  clg_session_free(s);
  clg_graph_free(g);
}

/* Towers built in a loop share one variable; errors for existing/missing names. */
static void test_towers_share(void)
{
  clg_graph *g = clg_graph_new();
  int64_t dw[2] = {2, 2}, dx[2] = {1, 2};
  float xv[2] = {1, 2};
  clg_initializer c = clg_init_constant(0.5);
  clg_node *w[4], *y[4];
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *wcpu = NULL;
  for (int i = 0; i < 4; i++) {
    CHECK_OK(clg_graph_push_device(g, DEVICES[1 + i]));
    CHECK_OK(clg_graph_push_variable_scope(g, "model", i ? CLG_REUSE_TRUE : CLG_REUSE_INHERIT));
    if (i == 0) { /* the variable on the CPU, as the multi-tower CIFAR model does */
      CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
      wcpu = clg_get_variable(g, "w", CLG_FLOAT32, 2, dw, &c);
      CHECK_OK(clg_graph_pop_device(g));
    }
    w[i] = i ? clg_get_variable(g, "w", CLG_FLOAT32, 2, dw, &c) : wcpu;
    clg_node *x = clg_const_f32(g, NULL, 2, dx, xv);
    y[i] = clg_matmul(g, NULL, x, w[i], false, false);
    CHECK_OK(clg_graph_pop_variable_scope(g));
    CHECK_OK(clg_graph_pop_device(g));
  }
  clg_node *sum = clg_add_n(g, "sum", 4, y);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_status(g));
  for (int i = 0; i < 4; i++)
    CHECK_MSG(w[i] == wcpu, "tower %d got another variable", i);
  CHECK_STR(clg_node_name(wcpu), "model/w");
  CHECK(clg_graph_num_variables(g) == 1);
  clg_session *s = new_session(g, 0);
  CHECK_OK(run_target(s, clg_global_variables_initializer(g, NULL)));
  /* Each tower: [1,2] x 0.5 = [1.5, 1.5]; four towers: 6. */
  CHECK(fetch_f32(s, sum, 0) == 6.0f && fetch_f32(s, sum, 1) == 6.0f);
  CHECK_CONTAINS(clg_session_node_device(s, wcpu), "CPU:0");
  clg_session_free(s);

  /* An existing name without reuse, and a missing one with reuse. */
  CHECK(clg_get_variable(g, "model/w", CLG_FLOAT32, 2, dw, &c) == NULL);
  CHECK(clg_graph_status(g) == CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_graph_error(g), "Variable model/w already exists, disallowed");
  clg_graph_free(g);
  g = clg_graph_new();
  CHECK_OK(clg_graph_push_variable_scope(g, "tower", CLG_REUSE_TRUE));
  CHECK(clg_get_variable(g, "w", CLG_FLOAT32, 2, dw, &c) == NULL);
  CHECK_CONTAINS(clg_graph_error(g), "Variable tower/w does not exist");
  clg_graph_free(g);
  /* A shape that differs from the shared one. */
  g = clg_graph_new();
  CHECK(clg_get_variable(g, "w", CLG_FLOAT32, 2, dw, &c) != NULL);
  CHECK_CODE(clg_graph_push_variable_scope(g, "", CLG_REUSE_TRUE), CLG_INVALID_ARGUMENT);
  clg_graph_free(g);
  g = clg_graph_new();
  CHECK(clg_get_variable(g, "w", CLG_FLOAT32, 2, dw, &c) != NULL);
  CHECK_OK(clg_graph_push_variable_scope(g, "outer", CLG_REUSE_AUTO));
  CHECK(clg_get_variable(g, "w", CLG_FLOAT32, 2, dw, &c) != NULL); /* creates outer/w */
  CHECK(clg_get_variable(g, "w", CLG_FLOAT32, 2, dw, &c) == clg_graph_find(g, "outer/w"));
  CHECK(clg_get_variable(g, "w", CLG_FLOAT32, 1, dw, &c) == NULL);
  CHECK_CONTAINS(clg_graph_error(g), "Trying to share variable outer/w, but specified shape [2]");
  clg_graph_free(g);
}

/* Updates go to their variable's device; an explicit spec elsewhere is an error without
 * soft placement and is ignored (logged) with it. */
static void test_colocation(void)
{
  for (int soft = 0; soft < 2; soft++) {
    clg_graph *g = clg_graph_new();
    int64_t dims[1] = {8};
    clg_initializer z = clg_init_zeros();
    CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
    clg_node *v = clg_get_variable(g, "v", CLG_FLOAT32, 1, dims, &z);
    CHECK_OK(clg_graph_pop_device(g));
    CHECK_OK(clg_graph_push_device(g, "/device:GPU:3"));
    clg_node *one = clg_initializer_op(g, "one", &(clg_initializer){CLG_INIT_ONES, 0, 0, 0},
                                       CLG_FLOAT32, 1, dims);
    clg_node *upd = clg_assign_add(g, "upd", v, one);
    CHECK_OK(clg_graph_pop_device(g));
    clg_node *read = clg_identity(g, "read", v);
    CHECK_OK(clg_graph_status(g));
    clg_session_options opt;
    clg_session_options_init(&opt);
    opt.allow_soft_placement = soft;
    clg_session *s = NULL;
    clg_test_log_capture_start(CLG_LOG_INFO);
    clg_code code = clg_session_new(g, &opt, &s);
    const char *log = clg_test_log_capture_stop();
    if (!soft) {
      CHECK_CODE(code, CLG_INVALID_ARGUMENT);
      CHECK_CONTAINS(clg_last_error(), "Cannot colocate nodes {{colocation_node upd}} and "
                                       "{{colocation_node v}}");
    } else {
      CHECK_OK(code);
      CHECK_CONTAINS(log, "Ignoring device specification /device:GPU:3 for node 'upd'");
      CHECK_CONTAINS(clg_session_node_device(s, upd), "GPU:1");
      CHECK_CONTAINS(clg_session_node_device(s, read), "GPU:1");
      CHECK_CONTAINS(clg_session_node_reason(s, upd), "colocated with variable 'v'");
      CHECK_CONTAINS(clg_session_node_reason(s, read), "colocated with variable 'v' (reads it)");
      /* The initializer's generator follows its Assign, onto the variable's device. */
      CHECK_CONTAINS(clg_session_node_device(s, clg_graph_find(g, "v/Assign")), "GPU:1");
      CHECK_CONTAINS(clg_session_node_device(s, clg_graph_find(g, "v/Initializer/value")), "GPU:1");
    }
    clg_session_free(s);
    clg_graph_free(g);
  }
  /* A variable reference is required. */
  clg_graph *g = clg_graph_new();
  float one = 1;
  clg_node *c = clg_const_f32(g, "c", 0, NULL, &one);
  CHECK(clg_assign(g, "bad", c, c) == NULL);
  CHECK_CONTAINS(clg_graph_error(g), "input 0 ('c') must be a variable");
  clg_graph_free(g);
}

/* A read ordered after an update by a control edge sees the update, on another device
 * too; a read before it in the same run sees the old value. */
static void test_control_order(void)
{
  for (int d = 0; d < 5; d++) {
    int reader = (d + 2) % 5; /* another device */
    clg_graph *g = clg_graph_new();
    int64_t dims[1] = {1024};
    clg_initializer z = clg_init_zeros(), o = clg_init_ones();
    CHECK_OK(clg_graph_push_device(g, DEVICES[d]));
    clg_node *v = clg_get_variable(g, "v", CLG_FLOAT32, 1, dims, &z);
    clg_node *ones = clg_initializer_op(g, "ones", &o, CLG_FLOAT32, 1, dims);
    CHECK_OK(clg_graph_pop_device(g));
    CHECK_OK(clg_graph_push_device(g, DEVICES[reader]));
    clg_node *before = clg_square(g, "before", v);
    CHECK_OK(clg_graph_pop_device(g));
    clg_node *upd = clg_assign_add(g, "upd", v, ones);
    CHECK_OK(clg_node_add_control_input(upd, before));
    CHECK_OK(clg_graph_push_device(g, DEVICES[reader]));
    clg_node *after = clg_square(g, "after", v);
    CHECK_OK(clg_node_add_control_input(after, upd));
    CHECK_OK(clg_graph_pop_device(g));
    CHECK_OK(clg_graph_status(g));
    clg_session *s = new_session(g, 0);
    CHECK_OK(run_target(s, clg_global_variables_initializer(g, NULL)));
    for (int r = 1; r <= 5; r++) {
      clg_node *f[2] = {before, after};
      clg_tensor *t[2] = {NULL, NULL};
      CHECK_OK(clg_session_run(s, 0, NULL, NULL, 2, f, t));
      if (t[0] && t[1]) {
        float b = ((const float *)clg_tensor_const_data(t[0]))[1023];
        float a = ((const float *)clg_tensor_const_data(t[1]))[1023];
        CHECK_MSG(b == (float)((r - 1) * (r - 1)) && a == (float)(r * r),
                  "var on %s, reads on %s, run %d: before %g after %g", DEVICES[d], DEVICES[reader],
                  r, b, a);
      }
      clg_tensor_free(t[0]);
      clg_tensor_free(t[1]);
    }
    clg_session_free(s);
    clg_graph_free(g);
  }
}

/* Two sessions on one graph each have their own values; a growing graph keeps them. */
static void test_sessions_and_growth(void)
{
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {4};
  clg_initializer z = clg_init_zeros(), o = clg_init_ones();
  clg_node *v = clg_get_variable(g, "v", CLG_FLOAT32, 1, dims, &z);
  clg_node *ones = clg_initializer_op(g, "ones", &o, CLG_FLOAT32, 1, dims);
  clg_node *add = clg_assign_add(g, "add", v, ones);
  clg_node *init = clg_global_variables_initializer(g, NULL);
  clg_session *a = new_session(g, 0), *b = new_session(g, 0);
  CHECK_OK(run_target(a, init));
  CHECK_OK(run_target(b, init));
  for (int i = 0; i < 3; i++)
    CHECK_OK(run_target(a, add));
  CHECK_OK(run_target(b, add));
  CHECK(fetch_f32(a, v, 0) == 3.0f);
  CHECK(fetch_f32(b, v, 0) == 1.0f);
  /* The graph grows: the sessions re-place, the values stay. */
  clg_node *sq = clg_square(g, "sq", v);
  CHECK(fetch_f32(a, sq, 0) == 9.0f);
  CHECK(fetch_f32(b, sq, 3) == 1.0f);
  clg_session_free(a);
  clg_session_free(b);
  clg_graph_free(g);
}

/* ApplyGradientDescent and ApplyMomentum against the formulas, on the host and a GPU. */
static void test_apply_ops(void)
{
  for (int d = 0; d < 2; d++) {
    clg_graph *g = clg_graph_new();
    int64_t dims[1] = {3};
    float v0[3] = {1, 2, 3}, gr[3] = {0.5f, -1, 2}, lr = 0.1f, mom = 0.9f;
    CHECK_OK(clg_graph_push_device(g, DEVICES[d]));
    clg_node *var =
        clg_variable(g, "var", CLG_FLOAT32, 1, dims, clg_const_f32(g, NULL, 1, dims, v0));
    clg_node *acc =
        clg_variable(g, "acc", CLG_FLOAT32, 1, dims,
                     clg_initializer_op(g, NULL, &(clg_initializer){CLG_INIT_ZEROS, 0, 0, 0},
                                        CLG_FLOAT32, 1, dims));
    clg_node *var2 =
        clg_variable(g, "var2", CLG_FLOAT32, 1, dims, clg_const_f32(g, NULL, 1, dims, v0));
    clg_node *grad = clg_const_f32(g, "grad", 1, dims, gr);
    clg_node *alpha = clg_const_f32(g, "lr", 0, NULL, &lr);
    clg_node *m = clg_const_f32(g, "m", 0, NULL, &mom);
    clg_node *gd = clg_apply_gradient_descent(g, "gd", var2, alpha, grad);
    clg_node *ap = clg_apply_momentum(g, "mom", var, acc, alpha, grad, m);
    clg_node *sub = clg_assign_sub(g, "sub", var2, grad);
    CHECK_OK(clg_graph_pop_device(g));
    CHECK_OK(clg_graph_status(g));
    clg_session *s = new_session(g, 0);
    CHECK_OK(run_target(s, clg_global_variables_initializer(g, NULL)));
    float ev[3], ea[3] = {0, 0, 0}, e2[3];
    memcpy(ev, v0, sizeof ev);
    memcpy(e2, v0, sizeof e2);
    for (int r = 0; r < 3; r++) {
      CHECK_OK(run_target(s, ap));
      CHECK_OK(run_target(s, gd));
      for (int i = 0; i < 3; i++) {
        ea[i] = ea[i] * mom + gr[i];
        ev[i] -= lr * ea[i];
        e2[i] -= lr * gr[i];
      }
    }
    CHECK_OK(run_target(s, sub));
    for (int i = 0; i < 3; i++) {
      e2[i] -= gr[i];
      CHECK_MSG(fabsf(fetch_f32(s, var, (size_t)i) - ev[i]) < 1e-6f,
                "%s momentum var[%d] %g want %g", DEVICES[d], i, fetch_f32(s, var, (size_t)i),
                ev[i]);
      CHECK(fabsf(fetch_f32(s, acc, (size_t)i) - ea[i]) < 1e-6f);
      CHECK_MSG(fabsf(fetch_f32(s, var2, (size_t)i) - e2[i]) < 1e-6f, "%s gd var2[%d] %g want %g",
                DEVICES[d], i, fetch_f32(s, var2, (size_t)i), e2[i]);
    }
    clg_session_free(s);
    clg_graph_free(g);
  }
}

/* Every initializer, with a graph seed and an op seed, on every device: the bytes equal
 * CPU:0's; rebuilding the graph with the same seeds gives them again; another op seed gives
 * other values. */
static void test_seeds_every_device(void)
{
  const clg_initializer inits[] = {
      clg_init_random_uniform(-2, 3, 7), clg_init_random_normal(1, 2, 7),
      clg_init_truncated_normal(0, 0.5, 7), clg_init_glorot_uniform(7), clg_init_constant(2.5)};
  const clg_dtype dtypes[] = {CLG_FLOAT32, CLG_FLOAT64, CLG_FLOAT16};
  int64_t dims[2] = {33, 65};
  for (size_t k = 0; k < sizeof inits / sizeof inits[0]; k++)
    for (size_t t = 0; t < 3; t++) {
      clg_tensor *ref = NULL;
      for (int rebuild = 0; rebuild < 2; rebuild++) {
        clg_graph *g = clg_graph_new();
        CHECK_OK(clg_graph_set_random_seed(g, 1234));
        clg_node *n[5];
        for (int d = 0; d < 5; d++) {
          CHECK_OK(clg_graph_push_device(g, DEVICES[d]));
          n[d] = clg_initializer_op(g, NULL, &inits[k], dtypes[t], 2, dims);
          CHECK_OK(clg_graph_pop_device(g));
        }
        CHECK_OK(clg_graph_status(g));
        clg_session *s = new_session(g, 0);
        clg_tensor *out[5] = {NULL};
        CHECK_OK(clg_session_run(s, 0, NULL, NULL, 5, n, out));
        for (int d = 0; d < 5 && out[0]; d++) {
          CHECK_MSG(strstr(clg_session_node_device(s, n[d]), SHORT[d]) != NULL, "initializer on %s",
                    clg_session_node_device(s, n[d]));
          if (!ref)
            ref = out[0], out[0] = NULL;
          CHECK_MSG(out[d] == NULL ||
                        memcmp(clg_tensor_const_data(out[d]), clg_tensor_const_data(ref),
                               clg_tensor_bytes(ref)) == 0,
                    "init %zu dtype %s: %s differs from CPU:0 (rebuild %d)", k,
                    clg_dtype_name(dtypes[t]), DEVICES[d], rebuild);
        }
        for (int d = 0; d < 5; d++)
          clg_tensor_free(out[d]);
        clg_session_free(s);
        clg_graph_free(g);
      }
      clg_tensor_free(ref);
    }
  /* No seed at all: each graph draws its own. */
  {
    clg_tensor *v[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
      clg_graph *gk = clg_graph_new();
      clg_initializer u = clg_init_random_uniform(0, 1, 0);
      clg_node *n = clg_initializer_op(gk, NULL, &u, CLG_FLOAT32, 2, dims);
      clg_session *sk = new_session(gk, 0);
      CHECK_OK(clg_session_run(sk, 0, NULL, NULL, 1, &n, &v[k]));
      clg_session_free(sk);
      clg_graph_free(gk);
    }
    CHECK(v[0] && v[1] &&
          memcmp(clg_tensor_const_data(v[0]), clg_tensor_const_data(v[1]),
                 clg_tensor_bytes(v[0])) != 0);
    clg_tensor_free(v[0]);
    clg_tensor_free(v[1]);
  }
  /* Another op seed: other values. */
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_set_random_seed(g, 1234));
  clg_initializer a = clg_init_random_uniform(0, 1, 1), b = clg_init_random_uniform(0, 1, 2);
  clg_node *n[2] = {clg_initializer_op(g, NULL, &a, CLG_FLOAT32, 2, dims),
                    clg_initializer_op(g, NULL, &b, CLG_FLOAT32, 2, dims)};
  clg_session *s = new_session(g, 0);
  clg_tensor *out[2] = {NULL, NULL};
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 2, n, out));
  CHECK(out[0] && out[1] &&
        memcmp(clg_tensor_const_data(out[0]), clg_tensor_const_data(out[1]),
               clg_tensor_bytes(out[0])) != 0);
  clg_tensor_free(out[0]);
  clg_tensor_free(out[1]);
  clg_session_free(s);
  clg_graph_free(g);
}

/* Truncated normal: 10^6 draws within 2 sigma, with the truncated distribution's mean and
 * spread (variance 1 - 2*2*phi(2) / (2*Phi(2) - 1) for the standard one); normal and uniform
 * moments too. */
static void test_distributions(void)
{
  int64_t dims[1] = {1000000};
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_set_random_seed(g, 99));
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_initializer ti = clg_init_truncated_normal(3, 2, 0), ni = clg_init_random_normal(3, 2, 0),
                  ui = clg_init_random_uniform(-1, 3, 0);
  clg_node *n[3] = {clg_initializer_op(g, "t", &ti, CLG_FLOAT64, 1, dims),
                    clg_initializer_op(g, "n", &ni, CLG_FLOAT64, 1, dims),
                    clg_initializer_op(g, "u", &ui, CLG_FLOAT64, 1, dims)};
  CHECK_OK(clg_graph_pop_device(g));
  clg_session *s = new_session(g, 0);
  clg_tensor *out[3] = {NULL, NULL, NULL};
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 3, n, out));
  double phi2 = exp(-2.0) / sqrt(2 * 3.14159265358979323846), cdf2 = 0.5 * (1 + erf(2 / sqrt(2.0)));
  double tsd = 2 * sqrt(1 - 4 * phi2 / (2 * cdf2 - 1));
  const double want_mean[3] = {3, 3, 1}, want_sd[3] = {tsd, 2, 4 / sqrt(12.0)};
  for (int k = 0; k < 3 && out[k]; k++) {
    const double *x = clg_tensor_const_data(out[k]);
    double sum = 0, sum2 = 0, lo = x[0], hi = x[0];
    for (int i = 0; i < 1000000; i++) {
      sum += x[i];
      sum2 += x[i] * x[i];
      lo = x[i] < lo ? x[i] : lo;
      hi = x[i] > hi ? x[i] : hi;
    }
    double mean = sum / 1e6, sd = sqrt(sum2 / 1e6 - mean * mean);
    CHECK_MSG(fabs(mean - want_mean[k]) < 0.01 && fabs(sd - want_sd[k]) < 0.01,
              "%s: mean %g sd %g, want %g %g", clg_node_name(n[k]), mean, sd, want_mean[k],
              want_sd[k]);
    if (k == 0)
      CHECK_MSG(lo >= -1.0 && hi <= 7.0, "truncated normal in [%g, %g], want within [-1, 7]", lo,
                hi);
    if (k == 2)
      CHECK(lo >= -1.0 && hi < 3.0);
  }
  for (int k = 0; k < 3; k++)
    clg_tensor_free(out[k]);
  clg_session_free(s);
  clg_graph_free(g);
}

/* A variable read by a consumer on its device moves nothing; one read from another device
 * is copied (device to device), never through a fetch. */
static void test_reads_move_nothing(void)
{
  clg_graph *g = clg_graph_new();
  int64_t dv[2] = {256, 256}, dx[2] = {256, 1};
  clg_initializer u = clg_init_random_uniform(0, 1, 3), o = clg_init_ones();
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:0"));
  clg_node *v = clg_get_variable(g, "v", CLG_FLOAT32, 2, dv, &u);
  clg_node *x = clg_initializer_op(g, "x", &o, CLG_FLOAT32, 2, dx);
  clg_node *r = clg_matmul(g, "r", v, x, true, false);
  clg_node *r2 =
      clg_matmul(g, "r2", r, clg_initializer_op(g, "one", &o, CLG_FLOAT32, 2, (int64_t[]){1, 1}),
                 false, false);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *target = clg_relu(g, "target", r2);
  CHECK_OK(clg_graph_status(g));
  clg_session *s = new_session(g, 0);
  CHECK_OK(run_target(s, clg_global_variables_initializer(g, NULL)));
  for (int i = 0; i < 3; i++) {
    CHECK_OK(run_target(s, target));
    clg_plan_stats ps;
    CHECK_OK(clg_session_plan_stats(s, &ps));
    CHECK_MSG(ps.host_to_device_bytes == 0 && ps.device_to_host_bytes == 0,
              "a run reading the variable moved %llu + %llu bytes",
              (unsigned long long)ps.host_to_device_bytes,
              (unsigned long long)ps.device_to_host_bytes);
  }
  clg_session_free(s);
  clg_graph_free(g);
}

/* A variable larger than its device's memory: RESOURCE_EXHAUSTED naming it, and the session
 * stays usable. */
static void test_variable_oom(void)
{
  clg_graph *g = clg_graph_new();
  int64_t big[2] = {65536, 65536}, small[1] = {4}; /* 16 GiB of floats */
  clg_initializer z = clg_init_zeros();
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:2"));
  clg_node *v = clg_get_variable(g, "huge", CLG_FLOAT32, 2, big, &z);
  clg_node *w = clg_get_variable(g, "small", CLG_FLOAT32, 1, small, &z);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_status(g));
  clg_session *s = new_session(g, 0);
  /* Its initializer's value fails first (the run's arena); the variable's own buffer fails
   * when a run first needs it. */
  CHECK_CODE(run_target(s, clg_graph_find(g, "huge/Assign")), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "OOM when allocating tensor with shape[65536,65536]");
  clg_tensor *t = NULL;
  CHECK_CODE(clg_session_run(s, 0, NULL, NULL, 1, &v, &t), CLG_RESOURCE_EXHAUSTED);
  CHECK_CONTAINS(clg_last_error(), "variable 'huge' (shape [65536,65536], float)");
  CHECK(t == NULL);
  CHECK_OK(run_target(s, clg_graph_find(g, "small/Assign")));
  CHECK(fetch_f32(s, w, 3) == 0.0f);
  clg_session_free(s);
  clg_graph_free(g);
}

/* Bad arguments: clear errors naming what was wrong, never a crash. */
static void test_bad_arguments(void)
{
  int64_t d2[1] = {2}, d3[1] = {3};
  clg_initializer z = clg_init_zeros();
  CHECK(clg_get_variable(NULL, "w", CLG_FLOAT32, 1, d2, &z) == NULL);
  CHECK_CONTAINS(clg_last_error(), "graph is NULL");
  struct {
    const char *what;
    clg_code code;
    const char *text;
  } cases[] = {
      {"no name", CLG_INVALID_ARGUMENT, "a variable needs a name"},
      {"rank 9", CLG_INVALID_ARGUMENT, "rank 9"},
      {"NULL initializer", CLG_INVALID_ARGUMENT, "init (nil)"},
      {"unknown kind", CLG_INVALID_ARGUMENT, "unknown initializer kind 99"},
      {"minval > maxval", CLG_INVALID_ARGUMENT, "want finite values, minval <= maxval"},
      {"stddev < 0", CLG_INVALID_ARGUMENT, "stddev >= 0"},
      {"bad scope", CLG_INVALID_ARGUMENT, "variable scope 'bad name!'"},
      {"bad reuse", CLG_INVALID_ARGUMENT, "(reuse 7)"},
      {"pop without push", CLG_FAILED_PRECONDITION, "no variable scope is open"},
      {"assign shape", CLG_INVALID_ARGUMENT, "value ('c3') has shape [3]; want [2]"},
      {"momentum same var", CLG_INVALID_ARGUMENT, "var and accum are the same variable 'w'"},
      {"gd alpha not scalar", CLG_INVALID_ARGUMENT,
       "alpha ('c2') has shape [2]; want [] (a scalar)"},
      {"bad dtype", CLG_INVALID_ARGUMENT, "dtype 77"},
  };
  for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
    clg_graph *g = clg_graph_new();
    float v[3] = {1, 2, 3};
    clg_node *w = clg_variable(g, "w", CLG_FLOAT32, 1, d2, NULL);
    clg_node *c2 = clg_const_f32(g, "c2", 1, d2, v), *c3 = clg_const_f32(g, "c3", 1, d3, v);
    clg_initializer bad = {(clg_init_kind)99, 0, 0, 0};
    switch (k) {
    case 0:
      clg_get_variable(g, NULL, CLG_FLOAT32, 1, d2, &z);
      break;
    case 1:
      clg_get_variable(g, "x", CLG_FLOAT32, 9, d2, &z);
      break;
    case 2:
      clg_initializer_op(g, "x", NULL, CLG_FLOAT32, 1, d2);
      break;
    case 3:
      clg_initializer_op(g, "x", &bad, CLG_FLOAT32, 1, d2);
      break;
    case 4: {
      clg_initializer u = clg_init_random_uniform(2, 1, 0);
      clg_initializer_op(g, "x", &u, CLG_FLOAT32, 1, d2);
      break;
    }
    case 5: {
      clg_initializer n = clg_init_random_normal(0, -1, 0);
      clg_initializer_op(g, "x", &n, CLG_FLOAT32, 1, d2);
      break;
    }
    case 6:
      clg_graph_push_variable_scope(g, "bad name!", CLG_REUSE_INHERIT);
      break;
    case 7:
      clg_graph_push_variable_scope(g, "s", (clg_reuse)7);
      break;
    case 8:
      clg_graph_pop_variable_scope(g);
      break;
    case 9:
      clg_assign(g, "a", w, c3);
      break;
    case 10: {
      clg_node *c0 = clg_const_f32(g, "c0", 0, NULL, v);
      clg_apply_momentum(g, "m", w, w, c0, c2, c0);
    } break;
    case 11:
      clg_apply_gradient_descent(g, "gd", w, c2, c2);
      break;
    case 12:
      clg_variable(g, "x", (clg_dtype)77, 1, d2, NULL);
      break;
    }
    CHECK_MSG(clg_graph_status(g) == cases[k].code && strstr(clg_graph_error(g), cases[k].text),
              "%s: %s \"%s\", want %s with \"%s\"", cases[k].what,
              clg_code_name(clg_graph_status(g)), clg_graph_error(g), clg_code_name(cases[k].code),
              cases[k].text);
    clg_graph_free(g);
  }
  /* A fed variable cannot be updated in that run. */
  clg_graph *g = clg_graph_new();
  clg_node *w = clg_get_variable(g, "w", CLG_FLOAT32, 1, d2, &z);
  clg_node *add = clg_assign_add(g, "add", w, w);
  clg_session *s = new_session(g, 0);
  clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 1, d2, NULL), *out = NULL;
  clg_output at = {w, 0}, f = {add, 0};
  CHECK_CODE(clg_session_run_outputs(s, 1, &at, &t, 1, &f, &out, 0, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "updates variable 'w', which is fed in this run");
  clg_tensor_free(t);
  clg_session_free(s);
  clg_graph_free(g);
  /* Checkpoint calls with NULL arguments. */
  CHECK_CODE(clg_session_save(NULL, "x", 0, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_session_restore(NULL, "x", 0, NULL), CLG_INVALID_ARGUMENT);
  clg_checkpoint *c = NULL;
  CHECK_CODE(clg_checkpoint_open(NULL, &c), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_checkpoint_open("x", NULL), CLG_INVALID_ARGUMENT);
  clg_checkpoint_tensor info;
  CHECK_CODE(clg_checkpoint_tensor_info(NULL, 0, &info), CLG_INVALID_ARGUMENT);
  CHECK(clg_checkpoint_num_tensors(NULL) == 0 && clg_checkpoint_metadata(NULL, "k") == NULL);
  clg_checkpoint_close(NULL);
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_variables");
  /* One session for the whole test keeps the process-wide device state (allocators that
   * reserve their limit at first use) from being made again for every graph. */
  clg_graph *keep_graph = clg_graph_new();
  clg_session *keep = new_session(keep_graph, 0);
  test_many_runs_every_device();
  test_uninitialized();
  test_towers_share();
  test_colocation();
  test_control_order();
  test_sessions_and_growth();
  test_apply_ops();
  test_seeds_every_device();
  test_distributions();
  test_reads_move_nothing();
  test_bad_arguments();
  test_variable_oom();
  clg_session_free(keep);
  clg_graph_free(keep_graph);
  return clg_test_summary("test_variables");
}
