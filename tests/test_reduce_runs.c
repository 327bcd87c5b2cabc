/* Reductions whose kept axes end in a contiguous one (a global average pool over NHWC, a sum
 * over the first axis) on CPU:0: the host sums such outputs side by side, and must give each
 * output exactly the double sum, in reduced-index order, of the definition (computed here by
 * loops). Channel counts on both sides of the host's blocks of 256; Max with NaN and -inf;
 * pools large enough that the blocks are split across the cores (squeezenet's 13x13x1000,
 * mobilenet_v2's 7x7x1280), with the AVX2 loops and the baseline's. */
// ctest: default
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
#include <math.h>
#include <stdlib.h>

#include "testutil.h"

static clg_session_options opt;

typedef enum { R_SUM, R_MEAN, R_MAX } red_op;

/* x [d0,d1,d2,d3] reduced over the axes flagged in red (keep_dims false). */
static void check_reduce(red_op op, const int64_t *d, const bool *red, bool specials)
{
  size_t n = (size_t)(d[0] * d[1] * d[2] * d[3]);
  float *x = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    x[i] = (float)clg_test_uniform(-2, 2);
  if (specials && n > 7) {
    x[3] = NAN;
    x[n - 2] = -INFINITY;
  }
  int64_t axes[4];
  int naxes = 0;
  for (int k = 0; k < 4; k++)
    if (red[k])
      axes[naxes++] = k;
  /* the reference: per output, its reduced elements in row-major order of the reduced axes */
  size_t nout = 1, nred = 1;
  for (int k = 0; k < 4; k++)
    *(red[k] ? &nred : &nout) *= (size_t)d[k];
  double *ref = malloc(nout * sizeof(double));
  size_t o = 0;
  for (int64_t a = 0; a < (red[0] ? 1 : d[0]); a++)
    for (int64_t b = 0; b < (red[1] ? 1 : d[1]); b++)
      for (int64_t c = 0; c < (red[2] ? 1 : d[2]); c++)
        for (int64_t e = 0; e < (red[3] ? 1 : d[3]); e++, o++) {
          double acc = op == R_MAX ? -INFINITY : 0;
          for (int64_t a2 = 0; a2 < (red[0] ? d[0] : 1); a2++)
            for (int64_t b2 = 0; b2 < (red[1] ? d[1] : 1); b2++)
              for (int64_t c2 = 0; c2 < (red[2] ? d[2] : 1); c2++)
                for (int64_t e2 = 0; e2 < (red[3] ? d[3] : 1); e2++) {
                  int64_t i0 = red[0] ? a2 : a, i1 = red[1] ? b2 : b, i2 = red[2] ? c2 : c;
                  int64_t i3 = red[3] ? e2 : e;
                  double v = x[((i0 * d[1] + i1) * d[2] + i2) * d[3] + i3];
                  acc = op == R_MAX ? (acc < v ? v : acc) : acc + v;
                }
          ref[o] = op == R_MEAN ? acc / (double)nred : acc;
        }
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, "/cpu:0");
  clg_node *xn = clg_const_f32(g, "x", 4, d, x);
  clg_node *r = op == R_SUM    ? clg_sum(g, "r", xn, naxes, axes, false)
                : op == R_MEAN ? clg_mean(g, "r", xn, naxes, axes, false)
                               : clg_max(g, "r", xn, naxes, axes, false);
  clg_graph_pop_device(g);
  clg_tensor *out = NULL;
  clg_code code = clg_test_run_one(g, &opt, r, &out);
  const char *names[] = {"Sum", "Mean", "Max"};
  CHECK_MSG(code == CLG_OK, "%s [%lld,%lld,%lld,%lld]: %s", names[op], (long long)d[0],
            (long long)d[1], (long long)d[2], (long long)d[3],
            code == CLG_OK ? "" : clg_last_error());
  if (code == CLG_OK) {
    size_t bad = nout;
    CHECK(clg_tensor_count(out) == nout);
    for (size_t i = 0; i < nout && bad == nout && i < clg_tensor_count(out); i++) {
      float want = (float)ref[i], got = (float)clg_test_elem(out, i);
      if (!(got == want || (isnan(got) && isnan(want))))
        bad = i;
    }
    CHECK_MSG(bad == nout, "%s [%lld,%lld,%lld,%lld] output %zu: %.9g, want %.9g", names[op],
              (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3], bad,
              bad < nout ? clg_test_elem(out, bad) : 0.0, bad < nout ? ref[bad] : 0.0);
  }
  clg_tensor_free(out);
  clg_graph_free(g);
  free(x);
  free(ref);
}

int main(void)
{
  clg_test_seed(20261201);
  clg_session_options_init(&opt);
  static const int64_t channels[] = {2, 17, 256, 300, 1000};
  static const bool spatial[4] = {false, true, true, false}, first[4] = {true, false, false, false};
  for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++) {
    int64_t d[4] = {2, 5, 7, channels[i]};
    for (int op = R_SUM; op <= R_MAX; op++)
      check_reduce((red_op)op, d, spatial, op == R_MAX);
    int64_t d2[4] = {3, 4, 2, channels[i]};
    check_reduce(R_SUM, d2, first, false);
    check_reduce(R_MAX, d2, first, true);
  }
  static const int64_t pools[][4] = {{2, 13, 13, 1000}, {1, 7, 7, 1280}};
  for (size_t i = 0; i < 2; i++)
    for (int op = R_SUM; op <= R_MAX; op++)
      check_reduce((red_op)op, pools[i], spatial, op == R_MAX);
  return clg_test_summary("test_reduce_runs");
}
