/* Differential tests: random graphs (random ops, shapes, dtypes and device specs across
 * CPU:0 and GPU:0..3) must give the results of the same graph placed on CPU:0 alone:
 * float32 within 1e-5 relative, float64 within 1e-12. */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

enum { GRAPHS = 200, MAX_NODES = 14 };

static const char *const specs[] = {"",       "/cpu:0",        "/device:GPU:0", "/device:GPU:1",
                                    "/gpu:2", "/device:GPU:3", "/device:GPU:*"};

/* Every tensor is [n,n], so that any two nodes can be combined by any op. */
typedef struct plan {
  clg_dtype dtype;
  int64_t n;
} plan;

/* Builds graph number `seed` into g, with device specs when placed, else all on /cpu:0. */
static clg_node *build(clg_graph *g, unsigned long long seed, bool placed, clg_node **feed,
                       clg_tensor **feed_value)
{
  clg_test_seed(seed);
  plan p = {clg_test_rand() % 2 ? CLG_FLOAT32 : CLG_FLOAT64, 1 + (int64_t)(clg_test_rand() % 9)};
  clg_node *pool[MAX_NODES * 2];
  int np = 0;
  if (!placed)
    clg_graph_push_device(g, "/cpu:0");
  int64_t sq[2] = {p.n, p.n};
  size_t count = (size_t)(p.n * p.n);
  double *vals = malloc(sizeof(double) * count);
  float *fvals = malloc(sizeof(float) * count);
  /* Two constants and one placeholder of shape [n,n] seed the pool. */
  for (int c = 0; c < 3; c++) {
    for (size_t i = 0; i < count; i++) {
      vals[i] = clg_test_uniform(-1, 1);
      fvals[i] = (float)vals[i];
    }
    const char *spec = specs[clg_test_rand() % 7];
    if (placed)
      clg_graph_push_device(g, spec);
    if (c < 2)
      pool[np++] = p.dtype == CLG_FLOAT32 ? clg_const_f32(g, NULL, 2, sq, fvals)
                                          : clg_const_f64(g, NULL, 2, sq, vals);
    else {
      pool[np++] = *feed = clg_placeholder(g, "x", p.dtype, 2, sq);
      *feed_value = clg_tensor_new(p.dtype, 2, sq, p.dtype == CLG_FLOAT32 ? (void *)fvals : vals);
    }
    if (placed)
      clg_graph_pop_device(g);
  }
  int nodes = 3 + (int)(clg_test_rand() % MAX_NODES);
  for (int k = 0; k < nodes; k++) {
    clg_node *a = pool[clg_test_rand() % (unsigned)np];
    clg_node *b = pool[clg_test_rand() % (unsigned)np];
    const char *spec = specs[clg_test_rand() % 7];
    if (placed)
      clg_graph_push_device(g, spec);
    clg_node *r = NULL;
    switch (clg_test_rand() % 6) {
    case 0:
      r = clg_matmul(g, NULL, a, b, clg_test_rand() % 2, clg_test_rand() % 2);
      break;
    case 1:
      r = clg_add(g, NULL, a, b);
      break;
    case 2:
      r = clg_sub(g, NULL, a, b);
      break;
    case 3:
      r = clg_mul(g, NULL, a, b);
      break;
    case 4: {
      clg_node *in[3] = {a, b, pool[clg_test_rand() % (unsigned)np]};
      r = clg_add_n(g, NULL, 3, in);
      break;
    }
    default:
      r = clg_identity(g, NULL, a);
    }
    if (placed)
      clg_graph_pop_device(g);
    pool[np++] = r;
  }
  /* Sum everything so that every node is needed. */
  if (placed)
    clg_graph_push_device(g, specs[clg_test_rand() % 7]);
  clg_node *sum = clg_add_n(g, "sum", np, pool);
  if (placed)
    clg_graph_pop_device(g);
  if (!placed)
    clg_graph_pop_device(g);
  free(vals);
  free(fvals);
  return sum;
}

static double rel_error(const clg_tensor *a, const clg_tensor *b)
{
  double num = 0, den = 0;
  size_t n = clg_tensor_count(a);
  for (size_t i = 0; i < n; i++) {
    double x = clg_tensor_dtype(a) == CLG_FLOAT32 ? ((const float *)clg_tensor_const_data(a))[i]
                                                  : ((const double *)clg_tensor_const_data(a))[i];
    double y = clg_tensor_dtype(b) == CLG_FLOAT32 ? ((const float *)clg_tensor_const_data(b))[i]
                                                  : ((const double *)clg_tensor_const_data(b))[i];
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static clg_tensor *run(clg_graph *g, clg_node *fetch, clg_node *feed, clg_tensor *value, bool soft)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = soft;
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  if (clg_session_new(g, &opt, &s) == CLG_OK)
    clg_session_run(s, 1, &feed, &value, 1, &fetch, &out);
  CHECK_MSG(out != NULL, "run failed: %s", clg_last_error());
  clg_session_free(s);
  return out;
}

int main(void)
{
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_random_graphs");
  /* A session kept open holds the device state, so the 400 sessions below share it. */
  clg_graph *keep_g = clg_graph_new();
  clg_session *keep = NULL;
  CHECK_OK(clg_session_new(keep_g, NULL, &keep));
  int ran = 0;
  for (unsigned long long seed = 1; seed <= GRAPHS; seed++) {
    clg_graph *g = clg_graph_new(), *ref = clg_graph_new();
    clg_node *feed, *rfeed;
    clg_tensor *fv = NULL, *rfv = NULL;
    clg_node *out = build(g, seed, true, &feed, &fv);
    clg_node *rout = build(ref, seed, false, &rfeed, &rfv);
    CHECK_OK(clg_graph_status(g));
    CHECK_OK(clg_graph_status(ref));
    {
#ifdef CLG_HAVE_CLBLAST
      bool soft = false;
#else /* explicit GPU MatMuls need soft placement to fall back to CPU:0 */
      bool soft = true;
#endif
      clg_tensor *got = run(g, out, feed, fv, soft);
      clg_tensor *want = run(ref, rout, rfeed, rfv, false);
      if (got && want) {
        double tol = clg_tensor_dtype(want) == CLG_FLOAT32 ? 1e-5 : 1e-12;
        double err = rel_error(got, want);
        CHECK_MSG(err <= tol, "graph %llu: relative error %g > %g", seed, err, tol);
        ran++;
      }
      clg_tensor_free(got);
      clg_tensor_free(want);
    }
    clg_tensor_free(fv);
    clg_tensor_free(rfv);
    clg_graph_free(g);
    clg_graph_free(ref);
  }
  printf("random graphs: %d of %d ran and matched the CPU-only result\n", ran, GRAPHS);
  CHECK_MSG(ran == GRAPHS, "only %d graphs ran", ran);
  clg_session_free(keep);
  clg_graph_free(keep_g);
  return clg_test_summary("test_random_graphs");
}
