/* Host tensors: construction, argument checks, shapes, and numpy-style printing (legacy
 * '1.13' mode). Every expected string below was produced by numpy with
 * np.set_printoptions(legacy='1.13'). Needs no OpenCL. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/core.h"
#include "testutil.h"

static void check_print_f32(int rank, const int64_t *dims, const float *v, const char *want)
{
  clg_tensor *t = clg_tensor_new(CLG_FLOAT32, rank, dims, v);
  CHECK(t != NULL);
  char *s = clg_tensor_to_string(t);
  CHECK_STR(s, want);
  free(s);
  clg_tensor_free(t);
}

static void check_print_f64(int rank, const int64_t *dims, const double *v, const char *want)
{
  clg_tensor *t = clg_tensor_new(CLG_FLOAT64, rank, dims, v);
  CHECK(t != NULL);
  char *s = clg_tensor_to_string(t);
  CHECK_STR(s, want);
  free(s);
  clg_tensor_free(t);
}

static void test_guide_strings(void)
{
  int64_t d22[2] = {2, 2};
  check_print_f32(2, d22, (const float[]){22, 28, 49, 64}, "[[ 22.  28.]\n [ 49.  64.]]");
  check_print_f32(2, d22, (const float[]){44, 56, 98, 128}, "[[  44.   56.]\n [  98.  128.]]");
  /* the header's example */
  int64_t d23[2] = {2, 3};
  check_print_f32(2, d23, (const float[]){1, 2, 3, 4, 5, 6}, "[[ 1.  2.  3.]\n [ 4.  5.  6.]]");
}

static void test_printing(void)
{
  int64_t d1 = 1, d2 = 2, d3 = 3, d20 = 20;
  check_print_f32(1, &d1, (const float[]){7}, "[ 7.]");
  check_print_f32(1, &d2, (const float[]){-3.5f, 1}, "[-3.5  1. ]");
  check_print_f32(1, &d2, (const float[]){0.5f, 1.25f}, "[ 0.5   1.25]");
  check_print_f32(1, &d2, (const float[]){-100, 5}, "[-100.    5.]");
  check_print_f32(1, &d2, (const float[]){-0.0f, 0.0f}, "[-0.  0.]");
  /* shortest digits of the dtype, cut at 8 decimals */
  check_print_f32(1, &d3, (const float[]){1.0f / 3, 2.0f / 3, 1},
                  "[ 0.33333334  0.6666667   1.        ]");
  check_print_f64(1, &d3, (const double[]){1.0 / 3, 2.0 / 3, 1},
                  "[ 0.33333333  0.66666667  1.        ]");
  check_print_f32(1, &d3, (const float[]){0.1f, 0.2f, 0.3f}, "[ 0.1  0.2  0.3]");
  /* scientific notation: large, small, or a wide ratio */
  check_print_f32(1, &d2, (const float[]){1e8f, 1}, "[  1.00000000e+08   1.00000000e+00]");
  check_print_f64(1, &d2, (const double[]){1e-5, 1}, "[  1.00000000e-05   1.00000000e+00]");
  check_print_f32(1, &d2, (const float[]){1, 2000}, "[  1.00000000e+00   2.00000000e+03]");
  check_print_f64(1, &d2, (const double[]){1e200, -1e-200},
                  "[  1.00000000e+200  -1.00000000e-200]");
  /* nan and inf */
  check_print_f32(1, &d3, (const float[]){NAN, 1, -INFINITY}, "[ nan   1. -inf]");
  check_print_f32(1, &d2, (const float[]){NAN, INFINITY}, "[ nan  inf]");
  /* rank 3: blocks separated by a blank line */
  int64_t d222[3] = {2, 2, 2};
  check_print_f32(3, d222, (const float[]){0, 1, 2, 3, 4, 5, 6, 7},
                  "[[[ 0.  1.]\n  [ 2.  3.]]\n\n [[ 4.  5.]\n  [ 6.  7.]]]");
  int64_t d232[3] = {2, 3, 2};
  double r3[12];
  for (int i = 0; i < 12; i++)
    r3[i] = (i - 5) / 2.0;
  check_print_f64(3, d232, r3,
                  "[[[-2.5 -2. ]\n  [-1.5 -1. ]\n  [-0.5  0. ]]\n\n [[ 0.5  1. ]\n  [ 1.5  2. ]\n"
                  "  [ 2.5  3. ]]]");
  /* a long row wraps at 75 columns */
  float w[20];
  for (int i = 0; i < 20; i++)
    w[i] = 1.5f * (float)i;
  check_print_f32(1, &d20, w,
                  "[  0.    1.5   3.    4.5   6.    7.5   9.   10.5  12.   13.5  15.   16.5\n"
                  "  18.   19.5  21.   22.5  24.   25.5  27.   28.5]");
  /* more than 1000 elements are summarised */
  int64_t d1001 = 1001;
  float *big = malloc(1001 * sizeof *big);
  for (int i = 0; i < 1001; i++)
    big[i] = (float)i;
  check_print_f32(1, &d1001, big, "[    0.     1.     2. ...,   998.   999.  1000.]");
  free(big);
  int64_t d2x1001[2] = {2, 1001};
  double *big2 = malloc(2002 * sizeof *big2);
  for (int i = 0; i < 2002; i++)
    big2[i] = i;
  check_print_f64(2, d2x1001, big2,
                  "[[  0.00000000e+00   1.00000000e+00   2.00000000e+00 ...,   9.98000000e+02\n"
                  "    9.99000000e+02   1.00000000e+03]\n"
                  " [  1.00100000e+03   1.00200000e+03   1.00300000e+03 ...,   1.99900000e+03\n"
                  "    2.00000000e+03   2.00100000e+03]]");
  free(big2);
  /* float16: stored as IEEE half bits; 0.1 is 0x2e66, 65504 is 0x7bff, -2.5 is 0xc100 */
  clg_tensor *h = clg_tensor_new(CLG_FLOAT16, 1, &d3, (const uint16_t[]){0x2e66, 0x7bff, 0xc100});
  char *s = clg_tensor_to_string(h);
  CHECK_STR(s, "[  9.99755859e-02   6.55040000e+04  -2.50000000e+00]");
  free(s);
  clg_tensor_free(h);
  h = clg_tensor_new(CLG_FLOAT16, 1, &d2, (const uint16_t[]){0x3c00, 0xbe00}); /* 1, -1.5 */
  s = clg_tensor_to_string(h);
  CHECK_STR(s, "[ 1.  -1.5]");
  free(s);
  clg_tensor_free(h);
}

static void test_scalars_and_empty(void)
{
  /* rank 0 prints like numpy's scalar str */
  static const struct {
    float v;
    const char *want;
  } f32[] = {{22, "22.0"},     {0.1f, "0.1"},    {-2.5f, "-2.5"},        {1e-5f, "1e-05"},
             {1e16f, "1e+16"}, {NAN, "nan"},     {-INFINITY, "-inf"},    {0, "0.0"},
             {-0.0f, "-0.0"},  {1e-4f, "1e-04"}, {123456.7f, "123456.7"}};
  for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
    clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 0, NULL, &f32[i].v);
    char *s = clg_tensor_to_string(t);
    CHECK_STR(s, f32[i].want);
    free(s);
    clg_tensor_free(t);
  }
  double third = 1.0 / 3;
  clg_tensor *t = clg_tensor_new(CLG_FLOAT64, 0, NULL, &third);
  char *s = clg_tensor_to_string(t);
  CHECK_STR(s, "0.3333333333333333");
  free(s);
  char buf[32];
  CHECK_STR(clg_tensor_shape_string(t, buf, sizeof buf), "[]");
  CHECK(clg_tensor_count(t) == 1 && clg_tensor_bytes(t) == 8 && clg_tensor_rank(t) == 0);
  CHECK(clg_tensor_dim(t, 0) == -1);
  clg_tensor_free(t);
  /* a NULL scalar starts at zero */
  t = clg_tensor_new(CLG_FLOAT32, 0, NULL, NULL);
  s = clg_tensor_to_string(t);
  CHECK_STR(s, "0.0");
  free(s);
  clg_tensor_free(t);

  /* empty tensors */
  int64_t d0[2] = {3, 0};
  t = clg_tensor_new(CLG_FLOAT32, 2, d0, NULL);
  CHECK(t != NULL);
  s = clg_tensor_to_string(t);
  CHECK_STR(s, "[]");
  free(s);
  CHECK(clg_tensor_count(t) == 0 && clg_tensor_bytes(t) == 0);
  CHECK(clg_tensor_data(t) != NULL);
  CHECK_STR(clg_tensor_shape_string(t, buf, sizeof buf), "[3,0]");
  clg_tensor_free(t);
  /* a zero dim makes any other size fine: no overflow */
  int64_t dz[3] = {INT64_MAX, 0, INT64_MAX};
  t = clg_tensor_new(CLG_FLOAT64, 3, dz, NULL);
  CHECK(t != NULL && clg_tensor_count(t) == 0);
  clg_tensor_free(t);
}

static void test_accessors(void)
{
  int64_t dims[3] = {2, 3, 4};
  double v[24];
  for (int i = 0; i < 24; i++)
    v[i] = i * 0.25;
  clg_tensor *t = clg_tensor_new(CLG_FLOAT64, 3, dims, v);
  CHECK(t != NULL);
  CHECK(clg_tensor_dtype(t) == CLG_FLOAT64);
  CHECK(clg_tensor_rank(t) == 3);
  CHECK(clg_tensor_dim(t, 0) == 2 && clg_tensor_dim(t, 1) == 3 && clg_tensor_dim(t, 2) == 4);
  CHECK(clg_tensor_dim(t, 3) == -1 && clg_tensor_dim(t, -1) == -1);
  CHECK(clg_tensor_count(t) == 24);
  CHECK(clg_tensor_bytes(t) == 24 * sizeof(double));
  CHECK(((uintptr_t)clg_tensor_data(t) % 64) == 0);
  CHECK(clg_tensor_const_data(t) == clg_tensor_data(t));
  CHECK(memcmp(clg_tensor_const_data(t), v, sizeof v) == 0);
  v[0] = 99; /* the data was copied */
  CHECK(((const double *)clg_tensor_const_data(t))[0] == 0);
  ((double *)clg_tensor_data(t))[23] = -1;
  CHECK(((const double *)clg_tensor_const_data(t))[23] == -1);
  char buf[32], tiny[4];
  CHECK_STR(clg_tensor_shape_string(t, buf, sizeof buf), "[2,3,4]");
  CHECK_STR(clg_tensor_shape_string(t, tiny, sizeof tiny), "[2,");
  CHECK(clg_tensor_shape_string(t, NULL, 0) == NULL);
  clg_tensor_free(t);

  /* NULL data zero-fills */
  int64_t d5 = 5;
  t = clg_tensor_new(CLG_FLOAT16, 1, &d5, NULL);
  CHECK(t && clg_tensor_bytes(t) == 10 && clg_tensor_dtype(t) == CLG_FLOAT16);
  const uint16_t *h = clg_tensor_const_data(t);
  CHECK(h[0] == 0 && h[4] == 0);
  char *s = clg_tensor_to_string(t);
  CHECK_STR(s, "[ 0.  0.  0.  0.  0.]");
  free(s);
  clg_tensor_free(t);

  /* dtypes */
  CHECK(clg_dtype_size(CLG_FLOAT32) == 4 && clg_dtype_size(CLG_FLOAT64) == 8 &&
        clg_dtype_size(CLG_FLOAT16) == 2 && clg_dtype_size((clg_dtype)7) == 0);
  CHECK_STR(clg_dtype_name(CLG_FLOAT32), "float");
  CHECK_STR(clg_dtype_name(CLG_FLOAT64), "double");
  CHECK_STR(clg_dtype_name(CLG_FLOAT16), "half");
  CHECK_STR(clg_dtype_name((clg_dtype)0), "invalid");

  /* NULL tensor */
  clg_tensor_free(NULL);
  CHECK(clg_tensor_rank(NULL) == 0 && clg_tensor_count(NULL) == 0 && clg_tensor_data(NULL) == NULL);
  CHECK(clg_tensor_dim(NULL, 0) == -1);
  CHECK(clg_tensor_to_string(NULL) == NULL);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "t is NULL");
  CHECK_STR(clg_tensor_shape_string(NULL, buf, sizeof buf), "");
}

static void check_bad(clg_dtype dtype, int rank, const int64_t *dims, const char *want)
{
  clg_error_clear();
  clg_tensor *t = clg_tensor_new(dtype, rank, dims, NULL);
  CHECK(t == NULL);
  clg_tensor_free(t);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), want);
}

/* numpy's IntegerFormat (right-aligned to the longest element) and BoolFormat (True padded
 * to the width of False in arrays). */
static void check_print(clg_dtype dtype, int rank, const int64_t *dims, const void *data,
                        const char *want)
{
  clg_tensor *t = clg_tensor_new(dtype, rank, dims, data);
  CHECK(t != NULL);
  char *s = clg_tensor_to_string(t);
  CHECK_STR(s, want);
  free(s);
  clg_tensor_free(t);
}

static void test_int_bool(void)
{
  CHECK(clg_dtype_size(CLG_INT32) == 4 && clg_dtype_size(CLG_INT64) == 8 &&
        clg_dtype_size(CLG_BOOL) == 1);
  CHECK(CLG_INT32 == 3 && CLG_INT64 == 9 && CLG_BOOL == 10);
  CHECK_STR(clg_dtype_name(CLG_INT32), "int32");
  CHECK_STR(clg_dtype_name(CLG_INT64), "int64");
  CHECK_STR(clg_dtype_name(CLG_BOOL), "bool");
  int64_t d3[1] = {3}, d22[2] = {2, 2}, d2[1] = {2}, d20[1] = {20};
  check_print(CLG_INT32, 1, d3, (int32_t[]){1, 2, 3}, "[1 2 3]");
  check_print(CLG_INT32, 1, d3, (int32_t[]){1, -2, 30}, "[ 1 -2 30]");
  check_print(CLG_INT64, 2, d22, (int64_t[]){1, 2, 30, -4}, "[[ 1  2]\n [30 -4]]");
  check_print(CLG_INT64, 1, d2, (int64_t[]){9007199254740993LL, -1},
              "[9007199254740993               -1]");
  check_print(CLG_BOOL, 1, d2, (uint8_t[]){1, 0}, "[ True False]");
  check_print(CLG_BOOL, 2, d22, (uint8_t[]){1, 1, 0, 1}, "[[ True  True]\n [False  True]]");
  check_print(CLG_INT32, 0, NULL, (int32_t[]){-7}, "-7");
  check_print(CLG_INT64, 0, NULL, (int64_t[]){5}, "5");
  check_print(CLG_BOOL, 0, NULL, (uint8_t[]){1}, "True");
  check_print(CLG_BOOL, 1, (int64_t[]){0}, NULL, "[]");
  int32_t big[20];
  for (int i = 0; i < 20; i++)
    big[i] = i * 1000;
  check_print(CLG_INT32, 1, d20, big,
              "[    0  1000  2000  3000  4000  5000  6000  7000  8000  9000 10000 11000\n"
              " 12000 13000 14000 15000 16000 17000 18000 19000]");
}

static void test_bad_arguments(void)
{
  int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  check_bad(CLG_FLOAT32, 9, dims, "rank 9 is out of range [0, 8]");
  check_bad(CLG_FLOAT32, -1, dims, "rank -1 is out of range");
  check_bad(CLG_FLOAT32, 2, NULL, "dims is NULL but rank is 2");
  int64_t neg[2] = {2, -3};
  check_bad(CLG_FLOAT32, 2, neg, "dims[1] is -3");
  check_bad((clg_dtype)7, 1, dims, "dtype 7 is not a valid dtype");
  check_bad((clg_dtype)0, 0, NULL, "dtype 0");
  int64_t huge[2] = {INT64_MAX, 4};
  check_bad(CLG_FLOAT64, 2, huge, "size overflow");
  check_bad(CLG_FLOAT64, 2, huge, "[9223372036854775807,4]");
  int64_t big[3] = {1 << 30, 1 << 30, 1 << 30};
  check_bad(CLG_FLOAT32, 3, big, "size overflow");
  /* rank 8, the maximum, works */
  clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 8, dims, NULL);
  CHECK(t != NULL && clg_tensor_count(t) == 1);
  char *s = clg_tensor_to_string(t);
  CHECK_STR(s, "[[[[[[[[ 0.]]]]]]]]");
  free(s);
  clg_tensor_free(t);
}

/* Large buffers are reused only while recycling is on (a session is live), by exact size,
 * within 8 buffers; small ones never; turning it off frees what is kept. */
static void test_recycling(void)
{
  int64_t big[1] = {1 << 18}, other[1] = {(1 << 18) + 16}, small[1] = {1024};
  clg_tensor *t = clg_tensor_new_uninit(CLG_FLOAT32, 1, big);
  CHECK(t != NULL);
  void *p = clg_tensor_data(t);
  clg_tensor_free(t); /* off: freed at once */
  CHECK(clg_tensor_recycled_bytes() == 0);

  clg_tensor_recycle_set(true);
  t = clg_tensor_new_uninit(CLG_FLOAT32, 1, big);
  p = clg_tensor_data(t);
  clg_tensor_free(t);
  CHECK(clg_tensor_recycled_bytes() == (size_t)1 << 20);
  clg_tensor *u = clg_tensor_new_uninit(CLG_FLOAT32, 1, other); /* other size: not taken */
  CHECK(u != NULL && clg_tensor_data(u) != p);
  CHECK(clg_tensor_recycled_bytes() == (size_t)1 << 20);
  clg_tensor *v = clg_tensor_new(CLG_FLOAT32, 1, big, NULL); /* same size: reused, zeroed */
  CHECK(v != NULL && clg_tensor_data(v) == p);
  CHECK(v && ((const float *)clg_tensor_const_data(v))[12345] == 0.0f);
  CHECK(clg_tensor_recycled_bytes() == 0);
  clg_tensor_free(u);
  clg_tensor_free(v);
  clg_tensor *w = clg_tensor_new_uninit(CLG_FLOAT32, 1, small);
  clg_tensor_free(w); /* 4 KiB: below the floor */
  CHECK(clg_tensor_recycled_bytes() == ((size_t)2 << 20) + 64);

  clg_tensor *many[10];
  for (int i = 0; i < 10; i++)
    many[i] = clg_tensor_new_uninit(CLG_FLOAT32, 1, big);
  for (int i = 0; i < 10; i++)
    clg_tensor_free(many[i]);
  /* 8 buffers at most: the other-sized one and seven of these */
  CHECK(clg_tensor_recycled_bytes() == ((size_t)8 << 20) + 64);
  clg_tensor_recycle_set(false);
  CHECK(clg_tensor_recycled_bytes() == 0);
}

int main(void)
{
  test_int_bool();
  test_guide_strings();
  test_printing();
  test_scalars_and_empty();
  test_accessors();
  test_bad_arguments();
  test_recycling();
  return clg_test_summary("test_tensor");
}
