/* The host paths that models' non-convolution ops take for speed, against naive loops: the
 * one-row product of clg_host_matmul (gemv.c: a fully connected layer at batch 1), both
 * layouts of B, sizes around its split across the team; Pad and PadV2 on CPU:0 with padded
 * and unpadded dimensions in every position (rows merged over unpadded trailing dims, split
 * across the team when large), exact; ConcatV2 along every axis, rows split across the team
 * when large, exact. */
// ctest: default
// ctest: one_thread CLGRAPH_HOST_THREADS=1
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"
#include "testutil.h"

static void check_gemv(bool ta, bool tb, size_t n, size_t k)
{
  float *a = malloc((k ? k : 1) * sizeof *a), *b = malloc((n * k + 1) * sizeof *b),
        *c = malloc(n * sizeof *c);
  if (!a || !b || !c) {
    CHECK(!"out of memory");
    free(a), free(b), free(c);
    return;
  }
  clg_test_fill_random(CLG_FLOAT32, a, k);
  clg_test_fill_random(CLG_FLOAT32, b, n * k);
  clg_test_fill_nan(CLG_FLOAT32, c, n);
  clg_host_matmul(CLG_FLOAT32, ta, tb, 1, n, k, a, b, c);
  int bad = 0;
  for (size_t j = 0; j < n; j++) {
    double s = 0, mag = 0;
    for (size_t q = 0; q < k; q++) {
      double p = (double)a[q] * (double)(tb ? b[j * k + q] : b[q * n + j]);
      s += p;
      mag += fabs(p);
    }
    if (!(fabs((double)c[j] - s) <= 1e-6 * mag + 1e-30)) {
      if (bad++ < 3)
        CHECK_MSG(false, "1x%zu x op(B) (ta %d, tb %d, n %zu): c[%zu] = %.9g, want %.9g", k, ta, tb,
                  n, j, (double)c[j], s);
    }
  }
  CHECK_MSG(bad == 0, "gemv k %zu n %zu tb %d: %d wrong", k, n, tb, bad);
  free(a), free(b), free(c);
}

static void test_gemv(void)
{
  static const size_t sizes[][2] = {{1000, 1280}, {1000, 512}, {7, 3},    {1, 1},  {33, 0},
                                    {300, 17},    {5, 4099},   {4096, 9}, {45, 70}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int tb = 0; tb < 2; tb++)
      for (int ta = 0; ta < 2; ta++)
        check_gemv(ta, tb, sizes[i][0], sizes[i][1]);
}

/* Pad (value NULL: zeros) or PadV2 of a random x of `dims` on CPU:0, against the output
 * computed element by element from the definition. */
static void check_pad(int rank, const int64_t *dims, const int64_t *before, const int64_t *after,
                      const double *value)
{
  size_t nx = clg_test_count(rank, dims);
  double *xv = malloc((nx ? nx : 1) * sizeof *xv);
  int64_t od[8];
  for (int k = 0; k < rank; k++)
    od[k] = dims[k] + before[k] + after[k];
  size_t no = clg_test_count(rank, od);
  double *want = malloc((no ? no : 1) * sizeof *want);
  if (!xv || !want) {
    CHECK(!"out of memory");
    free(xv), free(want);
    return;
  }
  for (size_t i = 0; i < nx; i++)
    xv[i] = (double)(float)clg_test_uniform(-1, 1);
  for (size_t q = 0; q < no; q++) {
    size_t rem = q, src = 0, stride = 1;
    bool inside = true;
    for (int k = rank - 1; k >= 0; k--) {
      int64_t i = (int64_t)(rem % (size_t)od[k]) - before[k];
      rem /= (size_t)od[k];
      inside = inside && i >= 0 && i < dims[k];
      src += (size_t)(inside ? i : 0) * stride;
      stride *= (size_t)dims[k];
    }
    want[q] = inside ? xv[src] : value ? *value : 0.0;
  }
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/device:CPU:0"));
  clg_tensor *xt = clg_test_tensor(CLG_FLOAT32, rank, dims, xv);
  clg_node *x = clg_const(g, "x", xt);
  clg_node *v = NULL;
  if (value) {
    clg_tensor *vt = clg_test_tensor(CLG_FLOAT32, 0, NULL, value);
    v = clg_const(g, "v", vt);
    clg_tensor_free(vt);
  }
  clg_node *y = clg_pad(g, "pad", x, rank, before, after, v);
  clg_tensor_free(xt);
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  CHECK_OK(clg_graph_status(g));
  if (clg_graph_status(g) == CLG_OK) {
    CHECK_OK(clg_session_new(g, NULL, &s));
    if (s)
      CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &y, &out));
  }
  if (out)
    clg_test_check_values(out, CLG_FLOAT32, rank, od, want, 0, 0, true, "Pad", "/device:CPU:0");
  clg_tensor_free(out);
  clg_session_free(s);
  clg_graph_free(g);
  free(xv), free(want);
}

static void test_pad(void)
{
  double two = 2.5;
  /* NHWC padded in H and W (mobilenet's depthwise convolutions), small and large */
  check_pad(4, (int64_t[]){2, 13, 11, 3}, (int64_t[]){0, 1, 2, 0}, (int64_t[]){0, 2, 1, 0}, NULL);
  check_pad(4, (int64_t[]){1, 112, 112, 16}, (int64_t[]){0, 0, 0, 0}, (int64_t[]){0, 1, 1, 0},
            NULL);
  check_pad(4, (int64_t[]){1, 224, 224, 3}, (int64_t[]){0, 1, 1, 0}, (int64_t[]){0, 1, 1, 0}, &two);
  /* the last dim padded; the first only; every dim; none */
  check_pad(3, (int64_t[]){3, 5, 7}, (int64_t[]){1, 0, 3}, (int64_t[]){0, 2, 1}, &two);
  check_pad(2, (int64_t[]){4, 6}, (int64_t[]){1, 0}, (int64_t[]){2, 0}, NULL);
  check_pad(2, (int64_t[]){300, 500}, (int64_t[]){3, 0}, (int64_t[]){1, 0}, &two);
  check_pad(3, (int64_t[]){2, 3, 4}, (int64_t[]){1, 1, 1}, (int64_t[]){1, 1, 1}, NULL);
  check_pad(3, (int64_t[]){2, 3, 4}, (int64_t[]){0, 0, 0}, (int64_t[]){0, 0, 0}, NULL);
  /* an empty input padded: all value */
  check_pad(2, (int64_t[]){0, 3}, (int64_t[]){2, 0}, (int64_t[]){1, 1}, &two);
  check_pad(1, (int64_t[]){5}, (int64_t[]){2}, (int64_t[]){3}, NULL);
}

/* ConcatV2 of `values` random inputs of `rank` dims, equal but along axis (whose sizes are
 * sizes[i]), on CPU:0, against the output element by element. */
static void check_concat(int rank, const int64_t *dims, int axis, int values, const int64_t *sizes)
{
  int64_t od[8], id[8][8];
  for (int k = 0; k < rank; k++)
    od[k] = dims[k];
  od[axis] = 0;
  for (int i = 0; i < values; i++) {
    for (int k = 0; k < rank; k++)
      id[i][k] = k == axis ? sizes[i] : dims[k];
    od[axis] += sizes[i];
  }
  size_t no = clg_test_count(rank, od);
  double *want = malloc((no ? no : 1) * sizeof *want), *xv[8] = {0};
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/device:CPU:0"));
  clg_node *in[8];
  for (int i = 0; i < values; i++) {
    size_t nx = clg_test_count(rank, id[i]);
    xv[i] = malloc((nx ? nx : 1) * sizeof *xv[i]);
    for (size_t q = 0; xv[i] && q < nx; q++)
      xv[i][q] = (double)(float)clg_test_uniform(-1, 1);
    clg_tensor *t = clg_test_tensor(CLG_FLOAT32, rank, id[i], xv[i]);
    in[i] = clg_const(g, NULL, t);
    clg_tensor_free(t);
  }
  for (size_t q = 0; want && q < no; q++) {
    int64_t idx[8];
    size_t rem = q;
    for (int k = rank - 1; k >= 0; k--) {
      idx[k] = (int64_t)(rem % (size_t)od[k]);
      rem /= (size_t)od[k];
    }
    int i = 0;
    while (idx[axis] >= id[i][axis])
      idx[axis] -= id[i++][axis];
    size_t src = 0;
    for (int k = 0; k < rank; k++)
      src = src * (size_t)id[i][k] + (size_t)idx[k];
    want[q] = xv[i][src];
  }
  clg_node *y = clg_concat(g, "concat", values, in, axis);
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  CHECK_OK(clg_graph_status(g));
  if (clg_graph_status(g) == CLG_OK) {
    CHECK_OK(clg_session_new(g, NULL, &s));
    if (s)
      CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &y, &out));
  }
  if (out && want)
    clg_test_check_values(out, CLG_FLOAT32, rank, od, want, 0, 0, true, "ConcatV2",
                          "/device:CPU:0");
  clg_tensor_free(out);
  clg_session_free(s);
  clg_graph_free(g);
  for (int i = 0; i < values; i++)
    free(xv[i]);
  free(want);
}

static void test_concat(void)
{
  /* squeezenet's fire modules: two expand branches joined along channels (NHWC) */
  check_concat(4, (int64_t[]){1, 55, 55, 0}, 3, 2, (int64_t[]){64, 64});
  check_concat(4, (int64_t[]){2, 13, 13, 0}, 3, 3, (int64_t[]){256, 1, 255});
  check_concat(3, (int64_t[]){40, 0, 30}, 1, 2, (int64_t[]){7, 20});
  check_concat(2, (int64_t[]){0, 600}, 0, 3, (int64_t[]){100, 0, 50});
  check_concat(2, (int64_t[]){3, 0}, 1, 2, (int64_t[]){0, 4}); /* an empty input */
}

int main(void)
{
  clg_test_seed(20261202);
  test_gemv();
  test_pad();
  test_concat();
  return clg_test_summary("test_host_fast_ops");
}
