/* Host kernels: MatMul through both paths (CBLAS when built with it, and the portable
 * blocked kernel) against a long-double reference over shapes that cross every blocking
 * boundary and all four transpose cases; half MatMul and the half conversions;
 * element-wise ops with broadcasting; AddN; and clg_kernels_supported's table. */
// ctest: native
// ctest: avx2 CLGRAPH_HOST_GEMM_ISA=avx2
// ctest: base CLGRAPH_HOST_GEMM_ISA=base
// ctest: blaskeep CLGRAPH_OPENBLAS_THREADS=keep
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"
#include "backends/opencl/opencl.h"
#include "ops/ops.h"
#include "testutil.h"

#ifdef CLG_HAVE_CBLAS
#include <cblas.h>
#endif

typedef void (*matmul_fn)(clg_dtype, bool, bool, size_t, size_t, size_t, const void *, const void *,
                          void *);

static long double get(clg_dtype dt, const void *p, size_t i)
{
  return dt == CLG_FLOAT32 ? (long double)((const float *)p)[i]
                           : (long double)((const double *)p)[i];
}

/* ||out - ref|| / ||ref|| (Frobenius), ref computed in long double; NaN anywhere gives NaN.
 * When ref is all zero (k = 0) returns ||out||. */
static double matmul_rel_error(clg_dtype dt, bool ta, bool tb, size_t m, size_t n, size_t k,
                               const void *a, const void *b, const void *c)
{
  long double num = 0, den = 0;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      long double s = 0;
      for (size_t p = 0; p < k; p++)
        s += get(dt, a, ta ? p * m + i : i * k + p) * get(dt, b, tb ? j * k + p : p * n + j);
      long double d = get(dt, c, i * n + j) - s;
      num += d * d;
      den += s * s;
    }
  if (den == 0)
    return (double)sqrtl(num);
  return (double)sqrtl(num / den);
}

typedef struct shape {
  size_t m, n, k;
} shape;

/* Square, tall, wide, 1xN, Nx1, odd and prime sizes, sizes past each cache block
 * (k > KC = 256, m > MC = 128, n > NC = 2048), and products that the cores share. */
static const shape shapes[] = {
    {1, 1, 1},
    {7, 7, 7},
    {13, 13, 13},
    {31, 31, 31},
    {64, 64, 64},
    {97, 97, 97},
    {128, 128, 128},
    {257, 257, 257},
    {257, 7, 31},
    {7, 257, 13},
    {1, 257, 64},
    {257, 1, 97},
    {1, 1, 257},
    {13, 97, 1},
    {31, 64, 128},
    {97, 13, 257},
    {128, 257, 7},
    {64, 1, 1},
    {3, 2100, 5},
    {129, 17, 300},
    {2, 5, 513},
    /* over the threads' threshold: split by columns (few rows), by rows, both ragged */
    {30, 600, 200},
    {40, 1100, 70},
    {200, 140, 300}};

static void check_matmul_path(const char *path, matmul_fn fn, clg_dtype dt)
{
  double tol = dt == CLG_FLOAT32 ? 1e-5 : 1e-12;
  size_t es = dt == CLG_FLOAT32 ? sizeof(float) : sizeof(double);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    size_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k;
    for (int t = 0; t < 4; t++) {
      bool ta = t & 1, tb = t & 2;
      void *a = malloc(m * k * es), *b = malloc(k * n * es), *c = malloc(m * n * es);
      if (!a || !b || !c) {
        CHECK_MSG(false, "out of memory");
        free(a), free(b), free(c);
        return;
      }
      clg_test_fill_random(dt, a, m * k); /* fresh inputs for every check */
      clg_test_fill_random(dt, b, k * n);
      clg_test_fill_nan(dt, c, m * n); /* an element left unwritten stays NaN and fails */
      fn(dt, ta, tb, m, n, k, a, b, c);
      double err = matmul_rel_error(dt, ta, tb, m, n, k, a, b, c);
      CHECK_MSG(err < tol, "%s %s m=%zu n=%zu k=%zu ta=%d tb=%d: relative error %g >= %g", path,
                dt == CLG_FLOAT32 ? "float" : "double", m, n, k, ta, tb, err, tol);
      free(a), free(b), free(c);
    }
  }
}

static void test_matmul(void)
{
  clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  for (int d = 0; d < 2; d++) {
    check_matmul_path("clg_host_matmul", clg_host_matmul, dts[d]);
    check_matmul_path("clg_host_matmul_portable", clg_host_matmul_portable, dts[d]);
  }
  /* The ctest variants pin the portable kernel's instruction set (down to what the CPU
   * has): every variant is tested on a machine that has them all. */
  const char *isa = getenv("CLGRAPH_HOST_GEMM_ISA"), *got = clg_host_matmul_portable_isa();
  printf("portable kernel variant: %s\n", got);
  if (isa && strcmp(isa, "base") == 0)
    CHECK_STR(got, "base");
  else if (isa && strcmp(isa, "avx2") == 0)
    CHECK(strcmp(got, "avx2") == 0 || strcmp(got, "base") == 0);
  else
    CHECK(strcmp(got, "avx512") == 0 || strcmp(got, "avx2") == 0 || strcmp(got, "base") == 0);
#ifdef CLG_HAVE_CBLAS
  CHECK_STR(clg_host_matmul_backend(), "OpenBLAS");
#else
  CHECK_STR(clg_host_matmul_backend(), "portable");
#endif
}

/* k = 0 is an empty sum: zeros, also over a poisoned output. m or n = 0 writes nothing. */
static void test_matmul_empty(void)
{
  matmul_fn fns[2] = {clg_host_matmul, clg_host_matmul_portable};
  for (int f = 0; f < 2; f++) {
    float c[15], a[1] = {1}, b[1] = {1};
    clg_test_fill_nan(CLG_FLOAT32, c, 15);
    fns[f](CLG_FLOAT32, false, false, 5, 3, 0, a, b, c);
    bool zero = true;
    for (int i = 0; i < 15; i++)
      zero = zero && c[i] == 0.0f;
    CHECK_MSG(zero, "k=0 must give zeros (path %d)", f);
    double d[4] = {7, 7, 7, 7};
    fns[f](CLG_FLOAT64, true, true, 0, 4, 3, a, b, d);
    fns[f](CLG_FLOAT64, false, true, 4, 0, 3, a, b, d);
    CHECK(d[0] == 7 && d[3] == 7);
  }
}

/* The guide's product: [[1,2,3],[4,5,6]] x [[1,2],[3,4],[5,6]] = [[22,28],[49,64]]. */
static void test_matmul_exact(void)
{
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 5, 6}, c[4];
  clg_host_matmul(CLG_FLOAT32, false, false, 2, 2, 3, a, b, c);
  CHECK(c[0] == 22 && c[1] == 28 && c[2] == 49 && c[3] == 64);
  clg_host_matmul_portable(CLG_FLOAT32, false, false, 2, 2, 3, a, b, c);
  CHECK(c[0] == 22 && c[1] == 28 && c[2] == 49 && c[3] == 64);
  /* a^T (a stored [2,3] read as [3,2]) x b^T (b stored [2,3] read as [3,2])... as [2,2]:
   * op(a) = a^T is [3,2]; take m=3,n=3,k=2: a^T[3,2] x b[2,3]. */
  double ad[6] = {1, 2, 3, 4, 5, 6}, bd[6] = {1, 2, 3, 4, 5, 6}, cd[9];
  clg_host_matmul_portable(CLG_FLOAT64, true, false, 3, 3, 2, ad, bd, cd);
  /* a^T = [[1,4],[2,5],[3,6]], b = [[1,2,3],[4,5,6]] */
  double want[9] = {17, 22, 27, 22, 29, 36, 27, 36, 45};
  bool ok = true;
  for (int i = 0; i < 9; i++)
    ok = ok && cd[i] == want[i];
  CHECK_MSG(ok, "a^T x b");
}

static double binop(clg_binop op, double x, double y)
{
  return op == CLG_BINOP_ADD ? x + y : op == CLG_BINOP_SUB ? x - y : x * y;
}

static float binopf(clg_binop op, float x, float y)
{
  return op == CLG_BINOP_ADD ? x + y : op == CLG_BINOP_SUB ? x - y : x * y;
}

static void test_binary(void)
{
  static const size_t counts[] = {1, 3, 1000, 4097};
  clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = dts[d];
    size_t es = dt == CLG_FLOAT32 ? 4 : 8;
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
      size_t count = counts[ci];
      for (int op = CLG_BINOP_ADD; op <= CLG_BINOP_MUL; op++)
        for (int mode = 0; mode < 5; mode++) {
          /* 0: full op full, 1: full op scalar, 2: scalar op full, 3: scalar op scalar,
           * 4: full op full written in place over a */
          size_t na = (mode == 2 || mode == 3) ? 1 : count;
          size_t nb = (mode == 1 || mode == 3) ? 1 : count;
          void *a = malloc(na * es), *b = malloc(nb * es), *out = malloc(count * es);
          void *a0 = malloc(na * es);
          if (!a || !b || !out || !a0) {
            CHECK_MSG(false, "out of memory");
            free(a), free(b), free(out), free(a0);
            return;
          }
          clg_test_fill_random(dt, a, na);
          clg_test_fill_random(dt, b, nb);
          memcpy(a0, a, na * es);
          clg_test_fill_nan(dt, out, count);
          void *dst = mode == 4 ? a : out;
          clg_host_binary((clg_binop)op, dt, a, na, b, nb, dst, count);
          bool ok = true;
          for (size_t i = 0; i < count && ok; i++) {
            double x = (double)get(dt, a0, na == 1 ? 0 : i),
                   y = (double)get(dt, b, nb == 1 ? 0 : i);
            if (dt == CLG_FLOAT32)
              ok = ((float *)dst)[i] == binopf((clg_binop)op, (float)x, (float)y);
            else
              ok = ((double *)dst)[i] == binop((clg_binop)op, x, y);
            if (!ok)
              CHECK_MSG(false, "binary op %d dtype %d mode %d count %zu: element %zu wrong", op,
                        (int)dt, mode, count, i);
          }
          if (ok)
            CHECK(ok);
          free(a), free(b), free(out), free(a0);
        }
    }
  }
  /* float arithmetic is float, not double rounded to float: 16777216 + 1 stays 16777216. */
  float big = 16777216.0f, one = 1.0f, r = 0;
  clg_host_binary(CLG_BINOP_ADD, CLG_FLOAT32, &big, 1, &one, 1, &r, 1);
  CHECK(r == 16777216.0f);
  /* count 0 writes nothing */
  float untouched = 5;
  clg_host_binary(CLG_BINOP_MUL, CLG_FLOAT32, &big, 1, &one, 1, &untouched, 0);
  CHECK(untouched == 5);
}

/* Float broadcasting over [rows, c] (rows of c channels, c from 1 to 37: the vector loops'
 * bodies and tails) against the element-wise reference, exactly: b per channel [c], one value
 * [1], the full shape, and a column [rows, 1]; Prelu's signs random, with NaN, -0 and
 * infinities among x. */
static float bcast_ref(clg_binop op, float x, float y)
{
  return op == CLG_BINOP_PRELU ? (x < 0 ? y * x : x) : binopf(op, x, y);
}

static void test_broadcast_rows(void)
{
  static const int64_t cs[] = {1, 7, 8, 16, 19, 37};
  static const clg_binop ops[] = {CLG_BINOP_PRELU, CLG_BINOP_ADD, CLG_BINOP_MUL, CLG_BINOP_SUB};
  const int64_t rows = 5;
  for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
      for (int mode = 0; mode < 4; mode++) {
        int64_t c = cs[ci], dx[2] = {rows, c}, db[2] = {rows, c};
        int rb = mode == 3 ? 2 : 1;
        size_t nx = (size_t)(rows * c), nb = mode == 0 ? (size_t)c : mode == 1 ? 1 : nx;
        if (mode == 0)
          db[0] = c;
        else if (mode == 1)
          db[0] = 1;
        else if (mode == 2)
          rb = 2;
        else
          db[1] = 1, nb = (size_t)rows;
        float *x = malloc(nx * 4), *b = malloc(nb * 4), *out = malloc(nx * 4);
        clg_test_fill_random(CLG_FLOAT32, x, nx);
        clg_test_fill_random(CLG_FLOAT32, b, nb);
        for (size_t i = 0; i < nx; i++)
          x[i] = (i * 7919u) % 3 == 0 ? -x[i] : x[i]; /* both signs */
        x[0] = NAN, x[nx / 2] = -0.0f, x[nx - 1] = -INFINITY;
        if (nx > 2)
          x[1] = INFINITY;
        clg_strided m;
        clg_strided_broadcast(&m, 2, dx, rb, db, 2, dx);
        clg_test_fill_nan(CLG_FLOAT32, out, nx);
        clg_host_broadcast(ops[oi], CLG_FLOAT32, x, b, out, &m);
        size_t bad = nx;
        for (size_t i = 0; i < nx && bad == nx; i++) {
          size_t r = i / (size_t)c, k = i % (size_t)c;
          float y = b[mode == 0 ? k : mode == 1 ? 0 : mode == 2 ? i : r];
          float want = bcast_ref(ops[oi], x[i], y);
          if (memcmp(&want, &out[i], 4) != 0 && !(isnan(want) && isnan(out[i])))
            bad = i;
        }
        CHECK_MSG(bad == nx, "broadcast op %d [%lld,%lld] b mode %d: element %zu differs",
                  (int)ops[oi], (long long)rows, (long long)c, mode, bad);
        free(x), free(b), free(out);
      }
}

static void test_addn(void)
{
  static const int ns[] = {1, 2, 3, 8, 9, 17};
  static const size_t counts[] = {1, 513, 2000};
  clg_dtype dts[2] = {CLG_FLOAT32, CLG_FLOAT64};
  for (int d = 0; d < 2; d++) {
    clg_dtype dt = dts[d];
    size_t es = dt == CLG_FLOAT32 ? 4 : 8;
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int inplace = 0; inplace < 2; inplace++) {
          int n = ns[ni];
          size_t count = counts[ci];
          void *in[17];
          void *want = malloc(count * es), *out = malloc(count * es);
          for (int j = 0; j < n; j++) {
            in[j] = malloc(count * es);
            clg_test_fill_random(dt, in[j], count);
          }
          /* the sum in input order, in the dtype's own arithmetic */
          for (size_t i = 0; i < count; i++) {
            if (dt == CLG_FLOAT32) {
              float s = ((float *)in[0])[i];
              for (int j = 1; j < n; j++)
                s += ((float *)in[j])[i];
              ((float *)want)[i] = s;
            } else {
              double s = ((double *)in[0])[i];
              for (int j = 1; j < n; j++)
                s += ((double *)in[j])[i];
              ((double *)want)[i] = s;
            }
          }
          clg_test_fill_nan(dt, out, count);
          void *dst = inplace ? in[n - 1] : out;
          clg_host_addn(dt, (const void *const *)in, n, dst, count);
          CHECK_MSG(memcmp(dst, want, count * es) == 0,
                    "addn dtype %d n=%d count=%zu inplace=%d differs from the ordered sum", (int)dt,
                    n, count, inplace);
          for (int j = 0; j < n; j++)
            free(in[j]);
          free(want), free(out);
        }
  }
}

static void test_supported(void)
{
  clg_device host, gpu, gpu64;
  memset(&host, 0, sizeof host);
  memset(&gpu, 0, sizeof gpu);
  host.is_host = true;
  host.info.name = "/device:CPU:0";
  gpu.info.name = "/device:GPU:0";
  gpu64 = gpu;
  gpu64.info.has_fp64 = 1;
  clg_device gpu16 = gpu64;
  gpu16.info.has_fp16 = 1;
  const clg_device *all[] = {&host, &gpu, &gpu64, &gpu16};
  const clg_dtype dtypes[] = {CLG_FLOAT32, CLG_FLOAT64, CLG_FLOAT16};
  /* Ops that only move bytes: every dtype on every device. */
  static const char *movers[] = {"Const", "Placeholder", "Identity"};
  for (size_t i = 0; i < 3; i++)
    for (size_t d = 0; d < 4; d++)
      for (size_t t = 0; t < 3; t++)
        CHECK_MSG(clg_backend_supported(movers[i], dtypes[t], all[d]), "%s %s on %s unsupported",
                  movers[i], clg_dtype_name(dtypes[t]), all[d]->info.name);
  /* Arithmetic: float everywhere, double on the host and with fp64, half nowhere. */
  static const char *ops[] = {"Add", "Sub", "Mul", "AddN"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    CHECK(clg_backend_supported(ops[i], CLG_FLOAT32, &host));
    CHECK(clg_backend_supported(ops[i], CLG_FLOAT64, &host));
    CHECK(!clg_backend_supported(ops[i], CLG_FLOAT16, &host));
    CHECK(clg_backend_supported(ops[i], CLG_FLOAT32, &gpu));
    CHECK(!clg_backend_supported(ops[i], CLG_FLOAT64, &gpu));
    CHECK(clg_backend_supported(ops[i], CLG_FLOAT64, &gpu64));
    CHECK(!clg_backend_supported(ops[i], CLG_FLOAT16, &gpu64));
    CHECK(!clg_backend_supported(ops[i], CLG_FLOAT16, &gpu16));
  }
  /* MatMul: every dtype on the host (half through float). */
  for (size_t t = 0; t < 3; t++)
    CHECK(clg_backend_supported("MatMul", dtypes[t], &host));
  /* On OpenCL devices CLBlast decides at run time, whatever the device's extensions: what
   * it cannot run falls back to the host. Without CLBlast there is no kernel at all. */
  for (size_t d = 1; d < 4; d++)
    for (size_t t = 0; t < 3; t++) {
#ifdef CLG_HAVE_CLBLAST
      CHECK_MSG(clg_backend_supported("MatMul", dtypes[t], all[d]),
                "MatMul %s unsupported on a device with fp64 %d, fp16 %d",
                clg_dtype_name(dtypes[t]), all[d]->info.has_fp64, all[d]->info.has_fp16);
#else
      CHECK_MSG(!clg_backend_supported("MatMul", dtypes[t], all[d]),
                "MatMul %s supported on a device without CLBlast", clg_dtype_name(dtypes[t]));
#endif
    }
  CHECK(!clg_backend_supported("Conv3D", CLG_FLOAT32, &host));
  /* The integer and bool dtypes: data ops take them, arithmetic refuses them, except the
   * binary ops shape arithmetic uses (int32/int64 on the host: the importer folds them) and
   * MatMul (int32/int64 on both kinds: tfjs graphs' index arithmetic). */
  const clg_dtype ints[3] = {CLG_INT32, CLG_INT64, CLG_BOOL};
  const char *const arith[] = {"MatMul", "Add", "Sub", "Mul", "AddN", "Relu", "Neg", "Square"};
  for (int t = 0; t < 3; t++) {
    for (size_t o = 0; o < sizeof arith / sizeof arith[0]; o++)
      for (size_t d = 0; d < 2; d++) {
        bool host_int = (d == 0 && t < 2 && o >= 1 && o <= 3) || (t < 2 && o == 0);
        CHECK_MSG(clg_backend_supported(arith[o], ints[t], d ? all[1] : &host) == host_int,
                  "%s %s supported %d on %s", arith[o], clg_dtype_name(ints[t]), !host_int,
                  d ? "GPU" : "host");
      }
    CHECK(clg_backend_supported("Const", ints[t], &host) &&
          clg_backend_supported("Const", ints[t], all[1]));
    CHECK(clg_backend_supported("Placeholder", ints[t], &host) &&
          clg_backend_supported("Placeholder", ints[t], all[1]));
    CHECK(clg_backend_supported("Identity", ints[t], &host) &&
          clg_backend_supported("Identity", ints[t], all[1]));
  }
  CHECK(!clg_backend_supported("matmul", CLG_FLOAT32, &host));
  CHECK(!clg_backend_supported(NULL, CLG_FLOAT32, &host));
  CHECK(!clg_backend_supported("Add", CLG_FLOAT32, NULL));
  CHECK(!clg_backend_supported("Add", (clg_dtype)7, &host));
  CHECK(!clg_backend_supported("Const", (clg_dtype)7, &gpu));
  CHECK(!clg_backend_supported("MatMul", (clg_dtype)0, &host));
}

/* clg_backend_supported builds a stand-in node for any op: every input, output and attribute the
 * op declares must be there for its kernels' predicates to read (a predicate of a
 * three-input op read past a two-input array: a stack overflow under ASan). Every op, dtype
 * and device kind; the gradient ops of the CNN set exactly. */
static void test_supported_every_op(void)
{
  clg_device host, gpu;
  memset(&host, 0, sizeof host);
  memset(&gpu, 0, sizeof gpu);
  host.is_host = true;
  host.info.name = "/device:CPU:0";
  gpu.info.name = "/device:GPU:0";
  gpu.info.has_fp64 = 1;
  const clg_dtype dtypes[] = {CLG_FLOAT32, CLG_FLOAT64, CLG_FLOAT16,
                              CLG_INT32,   CLG_INT64,   CLG_BOOL};
  int supported = 0;
  for (int i = 0; i < clg_op_count(); i++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
      supported += clg_backend_supported(clg_op_at(i)->name, dtypes[t], &host) +
                   clg_backend_supported(clg_op_at(i)->name, dtypes[t], &gpu);
  CHECK(supported > 0);
  static const char *grads[] = {"MaxPoolGrad", "AvgPoolGrad",         "LRNGrad",
                                "InTopKV2",    "Conv2DBackpropInput", "Conv2DBackpropFilter",
                                "ReluGrad"};
  for (size_t i = 0; i < sizeof grads / sizeof grads[0]; i++) {
    CHECK_MSG(clg_backend_supported(grads[i], CLG_FLOAT32, &host), "%s float on the host",
              grads[i]);
    CHECK_MSG(clg_backend_supported(grads[i], CLG_FLOAT64, &host), "%s double on the host",
              grads[i]);
    CHECK_MSG(!clg_backend_supported(grads[i], CLG_FLOAT16, &host), "%s half on the host",
              grads[i]);
    CHECK_MSG(!clg_backend_supported(grads[i], CLG_BOOL, &gpu), "%s bool on a GPU", grads[i]);
  }
}

/* IEEE binary16 conversions: exact values, rounding ties to even, the edges of the
 * subnormal and normal ranges, infinities and NaN. */
static void test_half_conversions(void)
{
  static const struct {
    uint16_t h;
    double d;
  } exact[] = {{0x0000, 0.0},         {0x8000, -0.0},       {0x3c00, 1.0},      {0xbc00, -1.0},
               {0x4000, 2.0},         {0x3555, 0x1.554p-2}, {0x7bff, 65504.0},  {0x0400, 0x1p-14},
               {0x03ff, 0x1.ff8p-15}, {0x0001, 0x1p-24},    {0x8001, -0x1p-24}, {0x6400, 1024.0},
               {0x57d0, 125.0}};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
    CHECK_MSG(clg_half_to_double(exact[i].h) == exact[i].d, "half 0x%04x: got %a, want %a",
              exact[i].h, clg_half_to_double(exact[i].h), exact[i].d);
    CHECK_MSG(clg_half_from_double(exact[i].d) == exact[i].h, "%a: got 0x%04x, want 0x%04x",
              exact[i].d, clg_half_from_double(exact[i].d), exact[i].h);
  }
  CHECK(signbit(clg_half_to_double(0x8000)));
  /* Ties go to the even significand; just past a tie rounds away. */
  CHECK(clg_half_from_double(1.0 + 0x1p-11) == 0x3c00);
  CHECK(clg_half_from_double(1.0 + 3 * 0x1p-11) == 0x3c02);
  CHECK(clg_half_from_double(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01);
  CHECK(clg_half_from_double(2049.0) == 0x6800);  /* 2048 */
  CHECK(clg_half_from_double(2051.0) == 0x6802);  /* 2052 */
  CHECK(clg_half_from_double(0x1p-25) == 0x0000); /* half the smallest subnormal: to 0 */
  CHECK(clg_half_from_double(0x1.8p-24) == 0x0002);
  CHECK(clg_half_from_double(0x1p-14 - 0x1p-26) == 0x0400); /* rounds up into the normals */
  /* Overflow: 65519.99 rounds to 65504, 65520 (the tie with 2^16) to infinity. */
  CHECK(clg_half_from_double(65519.0) == 0x7bff);
  CHECK(clg_half_from_double(65520.0) == 0x7c00);
  CHECK(clg_half_from_double(-1e300) == 0xfc00);
  CHECK(clg_half_from_double(INFINITY) == 0x7c00);
  CHECK(clg_half_from_double(-INFINITY) == 0xfc00);
  CHECK(clg_half_to_double(0x7c00) == INFINITY);
  CHECK(clg_half_to_double(0xfc00) == -INFINITY);
  CHECK(isnan(clg_half_to_double(0x7e00)) && isnan(clg_half_to_double(0xfc01)));
  uint16_t qn = clg_half_from_double(NAN);
  CHECK((qn & 0x7c00) == 0x7c00 && (qn & 0x03ff) != 0);
  /* Every half survives the round trip (NaNs stay NaN). */
  int bad = 0;
  for (unsigned h = 0; h < 65536; h++) {
    double d = clg_half_to_double((uint16_t)h);
    uint16_t back = clg_half_from_double(d);
    if (isnan(d) ? !isnan(clg_half_to_double(back)) : back != h)
      bad++;
  }
  CHECK_MSG(bad == 0, "%d halves changed on the round trip", bad);
  /* Against float -> half by nearest-even on random floats: the result is the nearer
   * neighbour, and a tie picks the even one. */
  bad = 0;
  for (int i = 0; i < 100000; i++) {
    float f = (float)clg_test_uniform(-70000, 70000) * (float)ldexp(1.0, -(i % 30));
    uint16_t h = clg_half_from_double(f);
    double got = clg_half_to_double(h);
    double err = fabs(got - (double)f);
    uint16_t lo = (uint16_t)(h - 1), hi = (uint16_t)(h + 1);
    for (int j = 0; j < 2; j++) {
      uint16_t other = j ? hi : lo;
      double o = clg_half_to_double(other);
      if (isnan(o) || isinf(got) || ((other ^ h) & 0x8000))
        continue;
      double oe = fabs(o - (double)f);
      if (oe < err || (oe == err && (other & 1) == 0))
        bad++;
    }
  }
  CHECK_MSG(bad == 0, "%d floats not rounded to the nearest even half", bad);
}

/* Half MatMul: small integers (exact in half, and their products and sums below 2048) give
 * the exact result; random values are within half's rounding of a float product. */
static void test_matmul_half(void)
{
  const size_t dims[][3] = {{1, 1, 1}, {3, 5, 4}, {17, 9, 33}, {64, 1, 7}, {1, 40, 9}, {5, 5, 0}};
  for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
    for (int t = 0; t < 4; t++) {
      bool ta = t & 1, tb = t & 2;
      size_t m = dims[s][0], n = dims[s][1], k = dims[s][2];
      uint16_t *a = malloc(sizeof *a * (m * k + 1)), *b = malloc(sizeof *b * (k * n + 1));
      uint16_t *c = malloc(sizeof *c * m * n);
      double *av = malloc(sizeof *av * (m * k + 1)), *bv = malloc(sizeof *bv * (k * n + 1));
      if (!a || !b || !c || !av || !bv) {
        CHECK_MSG(false, "out of memory");
        free(a), free(b), free(c), free(av), free(bv);
        return;
      }
      for (size_t i = 0; i < m * k; i++) {
        av[i] = (double)((int)(clg_test_rand() % 13) - 6);
        a[i] = clg_half_from_double(av[i]);
      }
      for (size_t i = 0; i < k * n; i++) {
        bv[i] = (double)((int)(clg_test_rand() % 9) - 4);
        b[i] = clg_half_from_double(bv[i]);
      }
      for (size_t i = 0; i < m * n; i++)
        c[i] = 0x7e00; /* NaN: an unwritten element fails */
      CHECK_OK(clg_host_matmul_half(ta, tb, m, n, k, a, b, c));
      int wrong = 0;
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          double want = 0;
          for (size_t p = 0; p < k; p++)
            want += av[ta ? p * m + i : i * k + p] * bv[tb ? j * k + p : p * n + j];
          if (clg_half_to_double(c[i * n + j]) != want)
            wrong++;
        }
      CHECK_MSG(wrong == 0, "half MatMul %zux%zux%zu ta=%d tb=%d: %d wrong elements", m, n, k, ta,
                tb, wrong);
      free(a), free(b), free(c), free(av), free(bv);
    }

  /* Random values in [-1, 1): each element is the float product rounded once to half, so
   * within half an ulp of half (2^-11 relative) plus float's accumulation error. */
  enum { M = 37, N = 29, K = 301 };
  static uint16_t a[M * K], b[K * N], c[M * N];
  for (size_t i = 0; i < M * K; i++)
    a[i] = clg_half_from_double(clg_test_uniform(-1, 1));
  for (size_t i = 0; i < K * N; i++)
    b[i] = clg_half_from_double(clg_test_uniform(-1, 1));
  CHECK_OK(clg_host_matmul_half(false, true, M, N, K, a, b, c));
  double worst = 0;
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double want = 0, mag = 0;
      for (size_t p = 0; p < K; p++) {
        double x = clg_half_to_double(a[i * K + p]) * clg_half_to_double(b[j * K + p]);
        want += x;
        mag += fabs(x);
      }
      double err = fabs(clg_half_to_double(c[i * N + j]) - want);
      double bound = fabs(want) * 0x1p-11 + mag * K * 0x1p-24 + 0x1p-24;
      if (!(err <= bound) && err / bound > worst)
        worst = err / bound;
    }
  CHECK_MSG(worst == 0, "half MatMul off by %.2f times its error bound", worst);
}

static void test_clblast_names(void)
{
  CHECK_STR(clg_clblast_status_name(-2045), "CLBlastNoHalfPrecision");
  CHECK_STR(clg_clblast_status_name(-2044), "CLBlastNoDoublePrecision");
  CHECK_STR(clg_clblast_status_name(-1016), "CLBlastInvalidLeadDimA");
  CHECK_STR(clg_clblast_status_name(-11), "CLBlastOpenCLBuildProgramFailure");
  CHECK_STR(clg_clblast_status_name(0), "CLBlastSuccess");
  CHECK_STR(clg_clblast_status_name(12345), "CLBlastUnknownStatus");
  CHECK(clg_clblast_status_code(0) == CLG_OK);
  CHECK(clg_clblast_status_code(-2045) == CLG_UNIMPLEMENTED);
  CHECK(clg_clblast_status_code(-2044) == CLG_UNIMPLEMENTED);
  CHECK(clg_clblast_status_code(-3) == CLG_UNIMPLEMENTED);
  CHECK(clg_clblast_status_code(-11) == CLG_UNIMPLEMENTED);
  CHECK(clg_clblast_status_code(-2041) == CLG_UNIMPLEMENTED);
  CHECK(clg_clblast_status_code(-1024) == CLG_UNIMPLEMENTED);
  CHECK(clg_clblast_status_code(-4) == CLG_RESOURCE_EXHAUSTED);
  CHECK(clg_clblast_status_code(-1009) == CLG_INTERNAL);
  CHECK(clg_clblast_status_code(-2050) == CLG_INTERNAL);
}

/* The AVX-512 float GEMM (where this CPU has it, whether or not CBLAS is faster: thin products
 * take it anyway) against a double reference: tiles of 6 x 64 with ragged edges, A read in
 * place (n <= 128) and packed (n > 128), the narrow strips (16, 32, 48 wide: 12, 8 and 6 rows,
 * their ragged rows and columns, across row blocks of 120), ragged tiles of 1-5 rows on 64-wide
 * strips (micro_Rx64, B packed and read in place), one or two rows (B read in place,
 * not packed), all transposes, row strides wider than the matrices (columns beyond n
 * untouched), and accumulation into what c holds. */
typedef bool (*sgemm_fn)(bool, bool, size_t, size_t, size_t, const float *, size_t, const float *,
                         size_t, float *, size_t, bool, float *);

/* A single-threaded float kernel (strides, transposes, accumulation, with and without the
 * caller's work floats) against double sums; columns past n must stay untouched. */
static void check_sgemm(const char *name, sgemm_fn fn, size_t work_floats)
{
  const size_t shapes[][3] = {
      {1, 1, 1},       {6, 64, 256},  {7, 65, 257},  {13, 130, 40},  {125, 17, 300},
      {5, 600, 3},     {300, 64, 75}, {12, 16, 5},   {29, 16, 27},   {250, 15, 16},
      {37, 24, 16},    {8, 32, 300},  {250, 33, 9},  {121, 48, 130}, {150, 1, 7},
      {131, 113, 20},  {1, 130, 300}, {2, 77, 513},  {40, 200, 600}, {128, 64, 257},
      {100, 1030, 20}, {3, 64, 5},    {129, 70, 33}, {49, 130, 300}, {25, 64, 20}};
  float *work = malloc(work_floats * sizeof(float));
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int t = 0; t < 8; t++) {
      bool ta = t & 1, tb = t & 2, acc = t & 4;
      size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
      size_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
      size_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, nc = m * ldc;
      float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *c2 = malloc(nc * 4);
      clg_test_fill_random(CLG_FLOAT32, a, na);
      clg_test_fill_random(CLG_FLOAT32, b, nb);
      clg_test_fill_random(CLG_FLOAT32, c, nc);
      memcpy(c2, c, nc * 4);
      double worst = 0;
      bool ok = fn(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, acc, t & 1 ? work : NULL);
      for (size_t i = 0; ok && i < m; i++)
        for (size_t j = 0; j < ldc; j++) {
          double want = c2[i * ldc + j];
          if (j < n) {
            double sum = acc ? want : 0, mag = fabs(sum);
            for (size_t p = 0; p < k; p++) {
              double x = ta ? a[p * lda + i] : a[i * lda + p],
                     y = tb ? b[j * ldb + p] : b[p * ldb + j];
              sum += x * y;
              mag += fabs(x * y);
            }
            worst = fmax(worst, fabs(c[i * ldc + j] - sum) / (mag > 0 ? mag : 1));
          } else {
            worst = fmax(worst, c[i * ldc + j] == want ? 0 : 1); /* beyond n: untouched */
          }
        }
      CHECK_MSG(ok && worst < 1e-5, "%s %zux%zux%zu ta %d tb %d acc %d: error %g", name, m, n, k,
                ta, tb, acc, worst);
      free(a), free(b), free(c), free(c2);
    }
  free(work);
}

static void test_sgemm512(void)
{
  if (strcmp(clg_host_matmul_portable_isa(), "avx512") == 0)
    check_sgemm("sgemm512", clg_host_sgemm512, clg_host_sgemm512_work());
}

/* The AVX2 kernel wherever the CPU runs AVX2 (its own test, whatever the ISA choice). */
static void test_sgemm256(void)
{
  if (strcmp(clg_host_matmul_portable_isa(), "base") != 0)
    check_sgemm("sgemm256", clg_host_sgemm256, clg_host_sgemm256_work());
}

/* The GEMM kernels with an epilogue on each stored tile (clg_host_sgemm512_epi and
 * clg_host_sgemm256_epi, as a 1x1 convolution's pieces call them): every op, in several orders,
 * over ragged tiles, one and two rows, k over a slice (the epilogue on the last one only) and
 * k = 0, more columns than a block, a row offset (the residual's rows) and ldc wider than the
 * epilogue's columns. Each result must equal the kernel without an epilogue followed by
 * clg_host_epilogue_rows bit for bit (NaN in the residual included), and a double reference
 * within float's error. */
typedef bool (*sgemm_epi_fn)(size_t, size_t, size_t, const float *, size_t, const float *, size_t,
                             float *, size_t, float *, const clg_epilogue *, size_t);

static double epi_ref(const clg_epilogue *e, size_t row, size_t col, double y)
{
  for (int q = 0; q < e->nops; q++) {
    const float *a = e->arg[q];
    switch (e->op[q]) {
    case CLG_EPI_BIAS:
      y += a[col];
      break;
    case CLG_EPI_ADD:
      y += a[row * e->cols + col];
      break;
    case CLG_EPI_SCALAR:
      y += a[0];
      break;
    case CLG_EPI_RELU:
      y = isnan(y) ? y : fmax(y, 0);
      break;
    case CLG_EPI_RELU6:
      y = isnan(y) ? y : fmin(fmax(y, 0), 6);
      break;
    case CLG_EPI_MAX:
      y = isnan(y) ? y : fmax(y, a[0]);
      break;
    case CLG_EPI_MIN:
      y = isnan(y) ? y : fmin(y, a[0]);
      break;
    }
  }
  return y;
}

static void check_sgemm_epi(const char *name, sgemm_fn plain, sgemm_epi_fn fn, size_t work_floats)
{
  const size_t shapes[][3] = {{1, 1, 1},      {2, 77, 300},  {6, 64, 16},   {7, 65, 257},
                              {13, 130, 40},  {125, 17, 16}, {250, 33, 9},  {121, 48, 130},
                              {37, 24, 16},   {29, 16, 27},  {5, 20, 0},    {40, 600, 33},
                              {131, 113, 20}, {300, 96, 16}, {49, 160, 300}};
  static const float scal[] = {0.5f}, hi[] = {4.0f}, lo[] = {-3.0f};
  float *work = malloc(work_floats * sizeof(float));
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int set = 0; set < 4; set++) {
      size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], row0 = 3;
      size_t lda = k + 3, ldb = n + 5, ldc = n + 2, nc = m * ldc;
      float *a = malloc((m * lda + 1) * 4), *b = malloc((k * ldb + 1) * 4);
      float *c = malloc(nc * 4), *c2 = malloc(nc * 4);
      float *bias = malloc(n * 4), *res = malloc((row0 + m) * n * 4);
      clg_test_fill_random(CLG_FLOAT32, a, m * lda);
      clg_test_fill_random(CLG_FLOAT32, b, k * ldb);
      clg_test_fill_random(CLG_FLOAT32, c, nc);
      memcpy(c2, c, nc * 4);
      for (size_t j = 0; j < n; j++)
        bias[j] = (float)clg_test_uniform(-4, 4);
      for (size_t i = 0; i < (row0 + m) * n; i++)
        res[i] = (float)clg_test_uniform(-8, 8);
      res[(row0 + m / 2) * n + n / 3] = NAN; /* passes Relu, Relu6, Maximum, Minimum */
      clg_epilogue e = {.cols = n};
      static const clg_epi_op sets[4][6] = {
          {CLG_EPI_BIAS, CLG_EPI_RELU6},
          {CLG_EPI_BIAS, CLG_EPI_ADD, CLG_EPI_RELU},
          {CLG_EPI_SCALAR, CLG_EPI_MAX, CLG_EPI_MIN, CLG_EPI_RELU6},
          {CLG_EPI_ADD, CLG_EPI_BIAS, CLG_EPI_SCALAR, CLG_EPI_RELU, CLG_EPI_MIN, CLG_EPI_MAX}};
      static const int nops[4] = {2, 3, 4, 6};
      e.nops = nops[set];
      for (int q = 0; q < e.nops; q++) {
        e.op[q] = sets[set][q];
        e.arg[q] = e.op[q] == CLG_EPI_BIAS     ? bias
                   : e.op[q] == CLG_EPI_ADD    ? res
                   : e.op[q] == CLG_EPI_SCALAR ? scal
                   : e.op[q] == CLG_EPI_MAX    ? lo
                   : e.op[q] == CLG_EPI_MIN    ? hi
                                               : NULL;
      }
      bool ok = fn(m, n, k, a, lda, b, ldb, c, ldc, si & 1 ? work : NULL, &e, row0);
      /* the same kernel, then the epilogue row by row (rows of ldc: cols is n) */
      ok = ok && plain(false, false, m, n, k, a, lda, b, ldb, c2, ldc, false, work);
      float *y = malloc((row0 + m) * n * 4); /* c2's rows where the epilogue's indices are */
      for (size_t i = 0; ok && i < m; i++) {
        memcpy(y + (row0 + i) * n, c2 + i * ldc, n * 4);
        clg_host_epilogue_rows(&e, y, row0 + i, 1);
        memcpy(c2 + i * ldc, y + (row0 + i) * n, n * 4);
      }
      free(y);
      bool same = ok && memcmp(c, c2, nc * 4) == 0;
      double worst = 0;
      for (size_t i = 0; ok && i < m; i++)
        for (size_t j = 0; j < n; j++) {
          double sum = 0, mag = 0;
          for (size_t p = 0; p < k; p++) {
            double x = (double)a[i * lda + p] * b[p * ldb + j];
            sum += x;
            mag += fabs(x);
          }
          double want = epi_ref(&e, row0 + i, j, sum), got = c[i * ldc + j];
          if (isnan(want) || isnan(got))
            worst = fmax(worst, isnan(want) && isnan(got) ? 0 : 1);
          else
            worst = fmax(worst, fabs(got - want) / (mag + 20));
        }
      CHECK_MSG(ok && same && worst < 1e-6, "%s %zux%zux%zu ops %d: same %d, error %g", name, m, n,
                k, set, same, worst);
      free(a), free(b), free(c), free(c2), free(bias), free(res);
    }
  free(work);
}

static void test_sgemm_epi(void)
{
  if (strcmp(clg_host_matmul_portable_isa(), "avx512") == 0)
    check_sgemm_epi("sgemm512_epi", clg_host_sgemm512, clg_host_sgemm512_epi,
                    clg_host_sgemm512_work());
  if (strcmp(clg_host_matmul_portable_isa(), "base") != 0)
    check_sgemm_epi("sgemm256_epi", clg_host_sgemm256, clg_host_sgemm256_epi,
                    clg_host_sgemm256_work());
}

/* Team members of clg_host_parallel: below clg_host_threads(), and never two tasks at once
 * under one index (each task holds its member's flag while it spins a little). */
typedef struct member_job {
  atomic_int busy[64];
  atomic_int bad;
  volatile double sink;
} member_job;

static void member_task(void *ctx, int t)
{
  member_job *j = ctx;
  int m = clg_host_parallel_member();
  if (m < 0 || m >= clg_host_threads() || m >= 64) {
    atomic_fetch_add(&j->bad, 1);
    return;
  }
  if (atomic_exchange(&j->busy[m], 1) != 0)
    atomic_fetch_add(&j->bad, 1);
  double s = 0;
  for (int i = 0; i < 20000 + t; i++)
    s += (double)i * 1e-9;
  j->sink = s;
  atomic_store(&j->busy[m], 0);
}

static void test_parallel_member(void)
{
  for (int round = 0; round < 20; round++) {
    member_job j;
    for (int i = 0; i < 64; i++)
      atomic_init(&j.busy[i], 0);
    atomic_init(&j.bad, 0);
    clg_host_parallel(37, member_task, &j);
    int bad = atomic_load(&j.bad);
    CHECK_MSG(bad == 0, "round %d: %d tasks under a member index in use or out of range", round,
              bad);
  }
  CHECK(clg_host_parallel_member() == 0); /* outside tasks */
}

/* The host kernels keep OpenBLAS on one thread and split its calls over their own team
 * (CLGRAPH_OPENBLAS_THREADS=keep: OpenBLAS's threads left as they were); OpenBLAS's start-up
 * threads, ended by clg_host_blas_stop_threads, leave a library that still computes. */
static void test_blas_threads(int before)
{
#ifdef CLG_HAVE_CBLAS
  const char *keep = getenv("CLGRAPH_OPENBLAS_THREADS");
  int want = keep && strcmp(keep, "keep") == 0 ? before : 1;
  CHECK_MSG(openblas_get_num_threads() == want, "OpenBLAS threads %d, want %d (%d before)",
            openblas_get_num_threads(), want, before);
  clg_host_blas_stop_threads();
  CHECK(openblas_get_num_threads() == want);
  check_matmul_path("clg_host_matmul after stop_threads", clg_host_matmul, CLG_FLOAT64);
#else
  (void)before;
#endif
}

int main(void)
{
  clg_test_seed(20240611);
#ifdef CLG_HAVE_CBLAS
  int blas_before = openblas_get_num_threads();
#else
  int blas_before = 0;
#endif
  test_matmul();
  test_blas_threads(blas_before);
  test_matmul_empty();
  test_matmul_exact();
  test_sgemm512();
  test_sgemm256();
  test_sgemm_epi();
  test_parallel_member();
  test_binary();
  test_addn();
  test_broadcast_rows();
  test_supported();
  test_supported_every_op();
  test_half_conversions();
  test_matmul_half();
  test_clblast_names();
  return clg_test_summary("test_host_kernels");
}
