/* The small and unsigned integer dtypes (int8, int16, uint8, uint16, uint32, uint64): their
 * names and sizes, printing, Cast's rules (float to integer truncates toward zero and
 * saturates, NaN gives 0; integer to integer keeps the low bits), and the host's element-wise
 * arithmetic against naive loops computed here in 64 bits and reduced to the type's width
 * (wraparound), on CPU:0 and, with soft placement, on a stand-in GPU (whose kernels refuse
 * these dtypes, so the nodes run on CPU:0). A safetensors file of U8/I8/I16/U16/U32/U64
 * tensors written by hand reads back as those dtypes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static const clg_dtype INTS[6] = {CLG_INT8,   CLG_INT16,  CLG_UINT8,
                                  CLG_UINT16, CLG_UINT32, CLG_UINT64};

static bool is_unsigned(clg_dtype d)
{
  return d == CLG_UINT8 || d == CLG_UINT16 || d == CLG_UINT32 || d == CLG_UINT64;
}

static int bits_of(clg_dtype d) { return (int)clg_dtype_size(d) * 8; }

/* v reduced to d's width: the low bits, sign-extended for a signed d (as a uint64 pattern). */
static uint64_t wrap(clg_dtype d, uint64_t v)
{
  int b = bits_of(d);
  if (b == 64)
    return v;
  uint64_t low = v & ((UINT64_C(1) << b) - 1);
  if (!is_unsigned(d) && (low >> (b - 1)))
    low |= ~((UINT64_C(1) << b) - 1);
  return low;
}

static uint64_t get(clg_dtype d, const void *p, size_t i)
{
  switch (clg_dtype_size(d)) {
  case 1:
    return wrap(d, ((const uint8_t *)p)[i]);
  case 2:
    return wrap(d, ((const uint16_t *)p)[i]);
  case 4:
    return wrap(d, ((const uint32_t *)p)[i]);
  default:
    return ((const uint64_t *)p)[i];
  }
}

static void put(clg_dtype d, void *p, size_t i, uint64_t v)
{
  switch (clg_dtype_size(d)) {
  case 1:
    ((uint8_t *)p)[i] = (uint8_t)v;
    break;
  case 2:
    ((uint16_t *)p)[i] = (uint16_t)v;
    break;
  case 4:
    ((uint32_t *)p)[i] = (uint32_t)v;
    break;
  default:
    ((uint64_t *)p)[i] = v;
    break;
  }
}

static void test_names(void)
{
  static const char *names[6] = {"int8", "int16", "uint8", "uint16", "uint32", "uint64"};
  static const size_t sizes[6] = {1, 2, 1, 2, 4, 8};
  static const int tf[6] = {6, 5, 4, 17, 22, 23}; /* TensorFlow's DataType numbers */
  for (int i = 0; i < 6; i++) {
    CHECK_STR(clg_dtype_name(INTS[i]), names[i]);
    CHECK(clg_dtype_size(INTS[i]) == sizes[i]);
    CHECK((int)INTS[i] == tf[i]);
  }
}

static void check_print(clg_dtype d, int n, const void *v, const char *want)
{
  int64_t dim = n;
  clg_tensor *t = clg_tensor_new(d, 1, &dim, v);
  char *s = clg_tensor_to_string(t);
  CHECK_MSG(s && strcmp(s, want) == 0, "%s: printed \"%s\", want \"%s\"", clg_dtype_name(d),
            s ? s : "(null)", want);
  free(s);
  clg_tensor_free(t);
}

/* numpy's str() of the same arrays. */
static void test_print(void)
{
  check_print(CLG_UINT8, 3, (const uint8_t[]){0, 128, 255}, "[  0 128 255]");
  check_print(CLG_INT8, 3, (const int8_t[]){-128, -1, 127}, "[-128   -1  127]");
  check_print(CLG_INT16, 2, (const int16_t[]){-32768, 7}, "[-32768      7]");
  check_print(CLG_UINT16, 2, (const uint16_t[]){65535, 1}, "[65535     1]");
  check_print(CLG_UINT32, 1, (const uint32_t[]){4294967295u}, "[4294967295]");
  check_print(CLG_UINT64, 2, (const uint64_t[]){UINT64_MAX, 0},
              "[18446744073709551615                    0]");
}

/* Output 0 of the node fn builds from placeholders of `in`, on dev with soft placement. */
static clg_tensor *run_on(const char *dev, int nin, clg_tensor *const *in,
                          clg_node *(*fn)(clg_graph *, clg_node *const *, const void *),
                          const void *ctx, bool soft)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, dev));
  clg_node *ph[4];
  for (int i = 0; i < nin; i++) {
    int64_t dims[CLG_MAX_RANK];
    for (int k = 0; k < clg_tensor_rank(in[i]); k++)
      dims[k] = clg_tensor_dim(in[i], k);
    char name[8];
    snprintf(name, sizeof name, "x%d", i);
    ph[i] = clg_placeholder(g, name, clg_tensor_dtype(in[i]), clg_tensor_rank(in[i]), dims);
  }
  clg_node *y = fn(g, ph, ctx);
  clg_session_options o;
  clg_session_options_init(&o);
  o.allow_soft_placement = soft;
  o.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  if (!y || clg_graph_status(g) != CLG_OK) {
    CHECK_MSG(false, "build on %s: %s", dev, clg_graph_error(g));
  } else if (clg_session_new(g, &o, &s) == CLG_OK) {
    if (clg_session_run(s, nin, ph, in, 1, &y, &out) != CLG_OK)
      out = NULL;
    clg_session_free(s);
  }
  clg_graph_free(g);
  return out;
}

static clg_node *build_cast(clg_graph *g, clg_node *const *in, const void *ctx)
{
  return clg_cast(g, "y", in[0], *(const clg_dtype *)ctx);
}

/* Cast x (n values of st) to dt on dev; the result's bytes against want's. */
static void check_cast(const char *dev, clg_dtype st, int n, const void *x, clg_dtype dt,
                       const void *want)
{
  int64_t dim = n;
  clg_tensor *t = clg_tensor_new(st, 1, &dim, x);
  clg_tensor *y = run_on(dev, 1, &t, build_cast, &dt, true);
  CHECK_MSG(y && clg_tensor_dtype(y) == dt && (int)clg_tensor_count(y) == n,
            "%s: cast %s to %s: %s", dev, clg_dtype_name(st), clg_dtype_name(dt),
            y ? "wrong result" : clg_last_error());
  for (int i = 0; y && i < n; i++) {
    size_t es = clg_dtype_size(dt);
    CHECK_MSG(memcmp((const char *)clg_tensor_const_data(y) + i * es, (const char *)want + i * es,
                     es) == 0,
              "%s: cast %s to %s, element %d differs", dev, clg_dtype_name(st), clg_dtype_name(dt),
              i);
  }
  clg_tensor_free(t);
  clg_tensor_free(y);
}

static void test_cast(const char *dev)
{
  /* float to int8: truncation toward zero, saturation, NaN gives 0 */
  check_cast(dev, CLG_FLOAT32, 9,
             (const float[]){1.9f, -1.9f, 127.5f, 128, -129, 1e10f, -INFINITY, NAN, -0.5f},
             CLG_INT8, (const int8_t[]){1, -1, 127, 127, -128, 127, -128, 0, 0});
  check_cast(dev, CLG_FLOAT32, 6, (const float[]){-1, 255.9f, 300, NAN, 3.7f, INFINITY}, CLG_UINT8,
             (const uint8_t[]){0, 255, 255, 0, 3, 255});
  check_cast(dev, CLG_FLOAT64, 4, (const double[]){-40000, 40000, 65535.5, -0.9}, CLG_INT16,
             (const int16_t[]){-32768, 32767, 32767, 0});
  check_cast(dev, CLG_FLOAT64, 4, (const double[]){1e20, -5, 9223372036854775808.0, 4294967295.0},
             CLG_UINT64,
             (const uint64_t[]){UINT64_MAX, 0, UINT64_C(9223372036854775808), 4294967295u});
  check_cast(dev, CLG_FLOAT32, 3, (const float[]){5e9f, -1, 4294967040.0f}, CLG_UINT32,
             (const uint32_t[]){4294967295u, 0, 4294967040u});
  /* integer to integer: the low bits */
  check_cast(dev, CLG_INT32, 4, (const int32_t[]){256, -1, 300, -129}, CLG_UINT8,
             (const uint8_t[]){0, 255, 44, 127});
  check_cast(dev, CLG_INT32, 3, (const int32_t[]){128, 255, -32769}, CLG_INT8,
             (const int8_t[]){-128, -1, -1});
  check_cast(dev, CLG_INT8, 2, (const int8_t[]){-1, -128}, CLG_UINT16,
             (const uint16_t[]){65535, 65408});
  check_cast(dev, CLG_UINT32, 2, (const uint32_t[]){4294967295u, 7}, CLG_INT64,
             (const int64_t[]){4294967295LL, 7});
  check_cast(dev, CLG_UINT64, 1, (const uint64_t[]){UINT64_MAX}, CLG_INT32, (const int32_t[]){-1});
  check_cast(dev, CLG_INT64, 1, (const int64_t[]){-1}, CLG_UINT64, (const uint64_t[]){UINT64_MAX});
  /* to float: the value, unsigned read as unsigned */
  check_cast(dev, CLG_UINT64, 2, (const uint64_t[]){UINT64_MAX, 3}, CLG_FLOAT64,
             (const double[]){18446744073709551615.0, 3});
  check_cast(dev, CLG_UINT8, 2, (const uint8_t[]){255, 0}, CLG_FLOAT32, (const float[]){255, 0});
  check_cast(dev, CLG_INT16, 2, (const int16_t[]){-32768, 5}, CLG_FLOAT32,
             (const float[]){-32768, 5});
  /* to and from bool */
  check_cast(dev, CLG_UINT16, 3, (const uint16_t[]){0, 256, 1}, CLG_BOOL,
             (const uint8_t[]){0, 1, 1});
  check_cast(dev, CLG_BOOL, 2, (const uint8_t[]){1, 0}, CLG_INT8, (const int8_t[]){1, 0});
}

enum {
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_MAX,
  OP_MIN,
  OP_FDIV,
  OP_FMOD,
  OP_LSH,
  OP_RSH,
  OP_LESS,
  OP_EQ,
  NUM_OPS
};
static const char *const OP_NAMES[NUM_OPS] = {"Add",        "Sub",      "Mul",      "Maximum",
                                              "Minimum",    "FloorDiv", "FloorMod", "LeftShift",
                                              "RightShift", "Less",     "Equal"};

static clg_node *build_binary(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const char *op = OP_NAMES[*(const int *)ctx];
  return clg_op(g, op, "y", 2, (clg_output[]){{in[0], 0}, {in[1], 0}}, 0, NULL);
}

/* The reference of op on x and y of d (patterns as read by get), as a pattern of d (or 0/1). */
static uint64_t reference(int op, clg_dtype d, uint64_t x, uint64_t y)
{
  bool u = is_unsigned(d);
  int b = bits_of(d);
  int64_t sx = (int64_t)x, sy = (int64_t)y;
  bool less = u ? x < y : sx < sy;
  switch (op) {
  case OP_ADD:
    return wrap(d, x + y);
  case OP_SUB:
    return wrap(d, x - y);
  case OP_MUL:
    return wrap(d, x * y);
  case OP_MAX:
    return less ? y : x;
  case OP_MIN:
    return less ? x : y;
  case OP_FDIV:
    if (u)
      return x / y;
    return wrap(d, (uint64_t)(int64_t)floor((double)sx / (double)sy)); /* |x| < 2^15: exact */
  case OP_FMOD:
    if (u)
      return x % y;
    return wrap(d, (uint64_t)(sx - (int64_t)floor((double)sx / (double)sy) * sy));
  case OP_LSH:
    if ((u ? y : (uint64_t)sy) >= (uint64_t)b)
      return 0;
    return wrap(d, x << y);
  case OP_RSH:
    if ((u ? y : (uint64_t)sy) >= (uint64_t)b)
      return !u && sx < 0 ? wrap(d, UINT64_MAX) : 0;
    if (u)
      return x >> y;
    return wrap(d, (uint64_t)(int64_t)floor((double)sx / ldexp(1, (int)y)));
  case OP_LESS:
    return less;
  default:
    return x == y;
  }
}

/* Values of d with the extremes, wrapped from a fixed pseudo-random stream. */
static void fill(clg_dtype d, void *p, size_t n, uint64_t seed, bool divisor, bool shift)
{
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t v = s >> 11;
    if (i % 5 == 0) /* extremes: the largest, the smallest (0 or the most negative) */
      v = i % 10 == 0 ? (is_unsigned(d) ? UINT64_MAX : (UINT64_C(1) << (bits_of(d) - 1)) - 1)
                      : (is_unsigned(d) ? 0 : UINT64_C(1) << (bits_of(d) - 1));
    if (shift) /* mostly in range, some beyond the width, some negative */
      v = i % 7 == 3                      ? (uint64_t)bits_of(d) + (v % 3)
          : i % 7 == 5 && !is_unsigned(d) ? UINT64_MAX
                                          : v % (uint64_t)bits_of(d);
    v = wrap(d, v);
    if (divisor && v == 0)
      v = 3;
    if (divisor && !is_unsigned(d) && (int64_t)v == -1) /* wraps in TensorFlow too: apart */
      v = 5;
    put(d, p, i, v);
  }
}

/* op on d: [3,4] with [3,4] (flat) and [3,4] with [4] (broadcast), against the reference. */
static void check_binary(const char *dev, int op, clg_dtype d)
{
  int64_t full[2] = {3, 4}, row[1] = {4};
  for (int bc = 0; bc < 2; bc++) {
    clg_tensor *in[2] = {clg_tensor_new(d, 2, full, NULL),
                         bc ? clg_tensor_new(d, 1, row, NULL) : clg_tensor_new(d, 2, full, NULL)};
    fill(d, clg_tensor_data(in[0]), 12, 17 + (uint64_t)op, false, false);
    fill(d, clg_tensor_data(in[1]), bc ? 4 : 12, 91 + (uint64_t)op, op == OP_FDIV || op == OP_FMOD,
         op == OP_LSH || op == OP_RSH);
    if (op == OP_EQ) /* some equal pairs */
      memcpy(clg_tensor_data(in[1]), clg_tensor_data(in[0]), 2 * clg_dtype_size(d));
    clg_tensor *y = run_on(dev, 2, in, build_binary, &op, true);
    bool cmp = op == OP_LESS || op == OP_EQ;
    CHECK_MSG(y && clg_tensor_dtype(y) == (cmp ? CLG_BOOL : d) && clg_tensor_count(y) == 12,
              "%s: %s on %s (%s): %s", dev, OP_NAMES[op], clg_dtype_name(d),
              bc ? "broadcast" : "flat", y ? "wrong dtype or shape" : clg_last_error());
    for (size_t i = 0; y && i < 12; i++) {
      uint64_t a = get(d, clg_tensor_const_data(in[0]), i);
      uint64_t b = get(d, clg_tensor_const_data(in[1]), bc ? i % 4 : i);
      uint64_t want = reference(op, d, a, b);
      uint64_t got = cmp ? ((const uint8_t *)clg_tensor_const_data(y))[i]
                         : get(d, clg_tensor_const_data(y), i);
      CHECK_MSG(got == want, "%s: %s on %s (%s) [%zu]: %llx op %llx = %llx, want %llx", dev,
                OP_NAMES[op], clg_dtype_name(d), bc ? "broadcast" : "flat", i,
                (unsigned long long)a, (unsigned long long)b, (unsigned long long)got,
                (unsigned long long)want);
    }
    clg_tensor_free(in[0]);
    clg_tensor_free(in[1]);
    clg_tensor_free(y);
  }
}

static void test_binary(const char *dev)
{
  for (int t = 0; t < 6; t++)
    for (int op = 0; op < NUM_OPS; op++)
      check_binary(dev, op, INTS[t]);
}

/* Data movement on x [2,3] (pattern values of d): Transpose, Reshape, Concat with itself,
 * Gather of rows, Slice, Tile, Pad, Identity, Select, ExpandDims and ReverseV2's kin are
 * dtype-blind copies; each against the index arithmetic written here. */
enum {
  MV_TRANSPOSE,
  MV_RESHAPE,
  MV_CONCAT,
  MV_GATHER,
  MV_SLICE,
  MV_TILE,
  MV_IDENTITY,
  MV_SELECT,
  NUM_MV
};

typedef struct move_ctx {
  int kind;
  clg_dtype d;
} move_ctx;

static clg_node *build_move(clg_graph *g, clg_node *const *in, const void *ctx)
{
  const move_ctx *m = ctx;
  clg_node *x = in[0];
  switch (m->kind) {
  case MV_TRANSPOSE:
    return clg_transpose(g, "y", x, 2, (const int64_t[]){1, 0});
  case MV_RESHAPE:
    return clg_reshape(g, "y", x, 2, (const int64_t[]){3, 2});
  case MV_CONCAT:
    return clg_concat(g, "y", 2, (clg_node *const[]){x, x}, 1);
  case MV_GATHER: {
    int32_t idx[3] = {1, 0, 1};
    int64_t n = 3;
    clg_tensor *t = clg_tensor_new(CLG_INT32, 1, &n, idx);
    clg_node *i = clg_const(g, "i", t);
    clg_tensor_free(t);
    return clg_gather(g, "y", x, i, 0);
  }
  case MV_SLICE:
    return clg_slice(g, "y", x, 2, (const int64_t[]){1, 1}, (const int64_t[]){1, 2});
  case MV_TILE:
    return clg_tile(g, "y", x, 2, (const int64_t[]){2, 1});
  case MV_IDENTITY:
    return clg_identity(g, "y", x);
  default: {
    uint8_t c[6] = {1, 0, 0, 1, 1, 0};
    int64_t dims[2] = {2, 3};
    clg_tensor *t = clg_tensor_new(CLG_BOOL, 2, dims, c);
    clg_node *cond = clg_const(g, "c", t);
    clg_tensor_free(t);
    clg_node *z = clg_op(g, "ZerosLike", "z", 1, (clg_output[]){{x, 0}}, 0, NULL);
    return clg_select(g, "y", cond, x, z);
  }
  }
}

/* Element i of kind's result as an index into x (row-major [2,3]); -1: a zero. */
static int move_source(int kind, int i)
{
  static const int tr[6] = {0, 3, 1, 4, 2, 5}, cc[12] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5};
  static const int ga[9] = {3, 4, 5, 0, 1, 2, 3, 4, 5}, sl[2] = {4, 5};
  static const int sel[6] = {0, -1, -1, 3, 4, -1};
  switch (kind) {
  case MV_TRANSPOSE:
    return tr[i];
  case MV_CONCAT:
    return cc[i];
  case MV_GATHER:
    return ga[i];
  case MV_SLICE:
    return sl[i];
  case MV_TILE:
    return i % 6;
  case MV_SELECT:
    return sel[i];
  default: /* Reshape, Identity */
    return i;
  }
}

static void test_moves(const char *dev)
{
  static const size_t counts[NUM_MV] = {6, 6, 12, 9, 2, 12, 6, 6};
  for (int t = 0; t < 6; t++)
    for (int k = 0; k < NUM_MV; k++) {
      move_ctx m = {k, INTS[t]};
      int64_t dims[2] = {2, 3};
      clg_tensor *x = clg_tensor_new(m.d, 2, dims, NULL);
      fill(m.d, clg_tensor_data(x), 6, 5 + (uint64_t)k, true, false); /* nonzero */
      clg_tensor *y = run_on(dev, 1, &x, build_move, &m, true);
      CHECK_MSG(y && clg_tensor_dtype(y) == m.d && clg_tensor_count(y) == counts[k],
                "%s: move %d of %s: %s", dev, k, clg_dtype_name(m.d),
                y ? "wrong dtype or count" : clg_last_error());
      for (size_t i = 0; y && i < counts[k]; i++) {
        int src = move_source(k, (int)i);
        uint64_t want = src < 0 ? 0 : get(m.d, clg_tensor_const_data(x), (size_t)src);
        CHECK_MSG(get(m.d, clg_tensor_const_data(y), i) == want, "%s: move %d of %s [%zu]", dev, k,
                  clg_dtype_name(m.d), i);
      }
      clg_tensor_free(x);
      clg_tensor_free(y);
    }
}

/* Errors: an integer division by zero, a shift of floats, and a GPU without soft placement
 * (no OpenCL kernel takes these dtypes: the placer says which op and dtype). */
static void test_errors(bool gpu)
{
  int64_t n = 2;
  clg_tensor *in[2] = {clg_tensor_new(CLG_UINT8, 1, &n, (const uint8_t[]){4, 5}),
                       clg_tensor_new(CLG_UINT8, 1, &n, (const uint8_t[]){1, 0})};
  int op = OP_FDIV;
  clg_tensor *y = run_on("/device:CPU:0", 2, in, build_binary, &op, true);
  CHECK(y == NULL);
  CHECK_CONTAINS(clg_last_error(), "Integer division by zero");
  clg_tensor_free(y);
  if (gpu) {
    op = OP_ADD;
    y = run_on("/device:GPU:0", 2, in, build_binary, &op, false);
    CHECK(y == NULL);
    CHECK_CONTAINS(clg_last_error(), "uint8");
    clg_tensor_free(y);
  }
  clg_tensor_free(in[0]);
  clg_tensor_free(in[1]);
  clg_graph *g = clg_graph_new();
  clg_node *a = clg_placeholder(g, "a", CLG_FLOAT32, 0, NULL);
  clg_op(g, "LeftShift", "s", 2, (clg_output[]){{a, 0}, {a, 0}}, 0, NULL);
  clg_test_expect_error(g, "s", "takes integers", __LINE__);
}

/* A safetensors file with one tensor of each integer dtype, written here byte by byte. */
static void test_safetensors(void)
{
  const char *json = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                     "\"b\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                     "\"c\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[4,6]},"
                     "\"d\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[6,8]},"
                     "\"e\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                     "\"f\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[16,24]},"
                     "\"g\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[12,16]}}";
  size_t hn = strlen(json);
  uint8_t file[1024] = {0};
  for (int i = 0; i < 8; i++)
    file[i] = (uint8_t)((uint64_t)hn >> (8 * i));
  memcpy(file + 8, json, hn);
  static const uint8_t data[24] = {200,  7,    0x80, 0x7f, 0x00, 0x80, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 1,    0,    0,    0,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  memcpy(file + 8 + hn, data, sizeof data);
  char path[256];
  snprintf(path, sizeof path, "/tmp/test_int_dtypes_%d.safetensors", (int)getpid());
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(file, 1, 8 + hn + sizeof data, f) == 8 + hn + sizeof data);
  if (f)
    fclose(f);
  clg_checkpoint *c = NULL;
  CHECK_OK(clg_checkpoint_open(path, &c));
  static const clg_dtype want_dt[7] = {CLG_UINT8,  CLG_INT8,   CLG_INT16, CLG_UINT16,
                                       CLG_UINT32, CLG_UINT64, CLG_INT32};
  for (int i = 0; c && i < clg_checkpoint_num_tensors(c); i++) {
    clg_checkpoint_tensor info;
    CHECK_OK(clg_checkpoint_tensor_info(c, i, &info));
    int k = info.name[0] - 'a';
    clg_tensor *t = NULL;
    CHECK_OK(clg_checkpoint_read(c, i, &t));
    CHECK_MSG(t && k >= 0 && k < 7 && clg_tensor_dtype(t) == want_dt[k], "tensor %s", info.name);
    if (t && k == 0)
      CHECK(((const uint8_t *)clg_tensor_const_data(t))[0] == 200);
    if (t && k == 1)
      CHECK(((const int8_t *)clg_tensor_const_data(t))[0] == -128);
    if (t && k == 2)
      CHECK(((const int16_t *)clg_tensor_const_data(t))[0] == -32768);
    if (t && k == 3)
      CHECK(((const uint16_t *)clg_tensor_const_data(t))[0] == 65535);
    if (t && k == 4)
      CHECK(((const uint32_t *)clg_tensor_const_data(t))[0] == 4294967295u);
    if (t && k == 5)
      CHECK(((const uint64_t *)clg_tensor_const_data(t))[0] == UINT64_MAX);
    clg_tensor_free(t);
  }
  clg_checkpoint_close(c);
  unlink(path);
}

int main(void)
{
  test_names();
  test_print();
  test_safetensors();
  test_cast("/device:CPU:0");
  test_binary("/device:CPU:0");
  test_moves("/device:CPU:0");
  bool gpu = clg_test_require_gpus(1);
  if (gpu) {
    test_cast("/device:GPU:0");
    test_binary("/device:GPU:0");
    test_moves("/device:GPU:0");
  }
  test_errors(gpu);
  return clg_test_summary("test_int_dtypes");
}
