/* Initializer ops: RandomUniform, RandomStandardNormal, TruncatedNormal (redrawn beyond two
 * standard deviations) and ConstFill (zeros, ones, a constant), and clg_initializer_op.
 *
 * Values are generated on the host with Philox4x32-10 (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3"), a counter-based generator: element i is a function of
 * (seed, seed2, i) alone, so every device kind gets the same values, and a run gives the same
 * values as the last one. OpenCL kernels upload what the host made. Unlike TensorFlow's ops
 * (whose shape is an input), the shape is an attribute, and the scale is folded into the op
 * (minval/maxval, mean/stddev), so an initializer is one node. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "graph/graph.h"
#include "ops/ops.h"

/* --- Philox4x32-10 --------------------------------------------------------------------- */

static void philox(const uint32_t key_in[2], const uint32_t ctr_in[4], uint32_t out[4])
{
  uint32_t k0 = key_in[0], k1 = key_in[1];
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* Four words for element i, draw `attempt` (truncated normal redraws). */
static void draw(int64_t seed, int64_t seed2, uint64_t i, uint32_t attempt, uint32_t w[4])
{
  uint32_t key[2] = {(uint32_t)(uint64_t)seed, (uint32_t)((uint64_t)seed >> 32)};
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32) ^ (attempt << 16), (uint32_t)(uint64_t)seed2,
                     (uint32_t)((uint64_t)seed2 >> 32)};
  philox(key, ctr, w);
}

/* [0, 1) with 53 random bits. */
static double unit(uint32_t a, uint32_t b)
{
  return (double)(((uint64_t)a << 21) | (b >> 11)) * (1.0 / 9007199254740992.0);
}

static double normal(const uint32_t w[4])
{
  double u1 = 1.0 - unit(w[0], w[1]); /* (0, 1]: log is finite */
  double u2 = unit(w[2], w[3]);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* --- element stores ---------------------------------------------------------------------- */

/* Conversions saturate (a constant of 1e300 in an int32 or a float is no undefined
 * behaviour): out of range is the largest value, NaN is 0 for integers. */
static void store(clg_dtype dt, void *out, size_t i, double v)
{
  switch (dt) {
  case CLG_FLOAT32:
    ((float *)out)[i] = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
    break;
  case CLG_FLOAT64:
    ((double *)out)[i] = v;
    break;
  case CLG_FLOAT16:
    ((uint16_t *)out)[i] = clg_half_from_double(v);
    break;
  case CLG_INT32:
    ((int32_t *)out)[i] = v != v               ? 0
                          : v >= 2147483647.0  ? INT32_MAX
                          : v <= -2147483648.0 ? INT32_MIN
                                               : (int32_t)v;
    break;
  case CLG_INT64:
    ((int64_t *)out)[i] = v != v                        ? 0
                          : v >= 9223372036854775807.0  ? INT64_MAX
                          : v <= -9223372036854775808.0 ? INT64_MIN
                                                        : (int64_t)v;
    break;
  case CLG_BOOL:
    ((uint8_t *)out)[i] = v != 0;
    break;
  case CLG_UINT64:
    ((uint64_t *)out)[i] = v != v || v <= 0              ? 0
                           : v >= 18446744073709551615.0 ? UINT64_MAX
                                                         : (uint64_t)v;
    break;
  case CLG_UINT8:
  case CLG_INT8:
  case CLG_INT16:
  case CLG_UINT16:
  case CLG_UINT32: {
    int bits = (int)clg_dtype_size(dt) * 8;
    double lo = clg_dtype_is_unsigned(dt) ? 0 : -ldexp(1, bits - 1);
    double hi = clg_dtype_is_unsigned(dt) ? ldexp(1, bits) - 1 : ldexp(1, bits - 1) - 1;
    clg_int_store(dt, out, i, v != v ? 0 : (uint64_t)(int64_t)(v <= lo ? lo : v >= hi ? hi : v));
    break;
  }
  }
}

/* --- the ops ----------------------------------------------------------------------------- */

enum kind { K_UNIFORM, K_NORMAL, K_TRUNCATED, K_FILL };

/* Attribute layouts (TensorFlow's order: sorted by name). */
enum { U_DTYPE, U_MAXVAL, U_MINVAL, U_SEED, U_SEED2, U_SHAPE };
enum { N_DTYPE, N_MEAN, N_SEED, N_SEED2, N_SHAPE, N_STDDEV };
enum { F_DTYPE, F_SHAPE, F_VALUE };

/* The distribution is the op's: its definition, not its name (op_list.h declares them). */
static enum kind kind_of(const clg_node *n)
{
  return n->def == &clg_op_RandomUniform          ? K_UNIFORM
         : n->def == &clg_op_RandomStandardNormal ? K_NORMAL
         : n->def == &clg_op_TruncatedNormal      ? K_TRUNCATED
                                                  : K_FILL;
}

/* Fills out (count elements of n's dtype) with n's values. */
void clg_random_generate(const clg_node *n, void *out)
{
  clg_dtype dt = n->outs[0].dtype;
  size_t count = clg_out_count(&n->outs[0]);
  const clg_attr_value *a = n->attrs;
  uint32_t w[4];
  switch (kind_of(n)) {
  case K_UNIFORM: {
    double lo = a[U_MINVAL].f, hi = a[U_MAXVAL].f;
    for (size_t i = 0; i < count; i++) {
      draw(a[U_SEED].i, a[U_SEED2].i, i, 0, w);
      double v = lo + (hi - lo) * unit(w[0], w[1]);
      /* Rounding to the dtype must not reach maxval: the range is half-open. */
      if (dt == CLG_FLOAT32 && hi > lo && fabs(hi) <= FLT_MAX && fabs(v) <= FLT_MAX &&
          (float)v >= (float)hi)
        v = nextafterf((float)hi, (float)lo);
      store(dt, out, i, v);
    }
    break;
  }
  case K_NORMAL:
  case K_TRUNCATED: {
    bool trunc = kind_of(n) == K_TRUNCATED;
    double mean = a[N_MEAN].f, sd = a[N_STDDEV].f;
    for (size_t i = 0; i < count; i++) {
      double z = 0;
      for (uint32_t attempt = 0; attempt < 65536; attempt++) {
        draw(a[N_SEED].i, a[N_SEED2].i, i, attempt, w);
        z = normal(w);
        if (!trunc || fabs(z) <= 2.0)
          break;
      }
      if (trunc && fabs(z) > 2.0) /* 65536 redraws beyond 2 sigma: never in practice */
        z = 0;
      store(dt, out, i, mean + sd * z);
    }
    break;
  }
  case K_FILL:
    for (size_t i = 0; i < count; i++)
      store(dt, out, i, a[F_VALUE].f);
    break;
  }
}

static clg_code infer_at(clg_node *n, int dtype_at, int shape_at)
{
  const clg_attr_value *s = &n->attrs[shape_at];
  return clg_node_set_output(n, 0, n->attrs[dtype_at].dtype, s->n, s->v);
}

static clg_code infer_uniform(clg_node *n)
{
  if (!(n->attrs[U_MINVAL].f <= n->attrs[U_MAXVAL].f) || !isfinite(n->attrs[U_MINVAL].f) ||
      !isfinite(n->attrs[U_MAXVAL].f))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "minval %g, maxval %g: want finite values, minval <= maxval",
                          n->attrs[U_MINVAL].f, n->attrs[U_MAXVAL].f);
  return infer_at(n, U_DTYPE, U_SHAPE);
}

static clg_code infer_normal(clg_node *n)
{
  if (!(n->attrs[N_STDDEV].f >= 0) || !isfinite(n->attrs[N_STDDEV].f) ||
      !isfinite(n->attrs[N_MEAN].f))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "mean %g, stddev %g: want a finite mean and "
                          "stddev >= 0",
                          n->attrs[N_MEAN].f, n->attrs[N_STDDEV].f);
  return infer_at(n, N_DTYPE, N_SHAPE);
}

static clg_code infer_fill(clg_node *n) { return infer_at(n, F_DTYPE, F_SHAPE); }

#define SEED_ATTRS                                                                                 \
  {.name = "seed", .type = CLG_ATTR_INT, .has_default = true},                                     \
  {                                                                                                \
    .name = "seed2", .type = CLG_ATTR_INT, .has_default = true                                     \
  }

static const clg_attr_def uniform_attrs[] = {
    {.name = "dtype", .type = CLG_ATTR_DTYPE},
    {.name = "maxval", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 1.0},
    {.name = "minval", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 0.0},
    SEED_ATTRS,
    {.name = "shape", .type = CLG_ATTR_SHAPE},
};
static const clg_attr_def normal_attrs[] = {
    {.name = "dtype", .type = CLG_ATTR_DTYPE},
    {.name = "mean", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 0.0},
    SEED_ATTRS,
    {.name = "shape", .type = CLG_ATTR_SHAPE},
    {.name = "stddev", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 1.0},
};
static const clg_attr_def fill_attrs[] = {
    {.name = "dtype", .type = CLG_ATTR_DTYPE},
    {.name = "shape", .type = CLG_ATTR_SHAPE},
    {.name = "value", .type = CLG_ATTR_FLOAT, .has_default = true, .def_f = 0.0},
};

#define INIT_OP(NAME, ATTRS, INFER)                                                                \
  const clg_op_def clg_op_##NAME = {                                                               \
      .name = #NAME,                                                                               \
      .num_inputs = 0,                                                                             \
      .num_outputs = 1,                                                                            \
      .num_attrs = sizeof ATTRS / sizeof ATTRS[0],                                                 \
      .attrs = ATTRS,                                                                              \
      .infer = INFER,                                                                              \
      .inplace = -1,                                                                               \
  }

INIT_OP(RandomUniform, uniform_attrs, infer_uniform);
INIT_OP(RandomStandardNormal, normal_attrs, infer_normal);
INIT_OP(TruncatedNormal, normal_attrs, infer_normal);
INIT_OP(ConstFill, fill_attrs, infer_fill);

/* --- seeds and the builder ----------------------------------------------------------------- */

/* TensorFlow's random_seed.get_seed: the graph seed with the op seed (or, without one, a
 * number the graph gives this op); an op seed alone pairs with DEFAULT_GRAPH_SEED; neither
 * gives a pair drawn now, so graphs differ. (0, 0) becomes (0, INT32_MAX), as there. */
static void get_seed(clg_graph *g, int64_t op_seed, int64_t *seed, int64_t *seed2)
{
  int64_t graph_seed;
  if (clg_graph_random_seed(g, &graph_seed)) {
    *seed = graph_seed;
    *seed2 = op_seed ? op_seed : clg_graph_num_nodes(g);
  } else if (op_seed) {
    *seed = 87654321;
    *seed2 = op_seed;
  } else {
    static atomic_ulong counter; /* graphs may be built on several threads */
    *seed = (int64_t)time(NULL);
    *seed2 = (int64_t)((atomic_fetch_add(&counter, 1) + 1) * 0x9E3779B97F4A7C15ull >> 1) ^
             (int64_t)clock();
  }
  if (*seed == 0 && *seed2 == 0)
    *seed2 = 0x7fffffff;
}

/* Glorot's fans, as TensorFlow's _compute_fans. */
static void fans(int rank, const int64_t *dims, double *fan_in, double *fan_out)
{
  if (rank == 0) {
    *fan_in = *fan_out = 1;
  } else if (rank == 1) {
    *fan_in = *fan_out = (double)dims[0];
  } else {
    double receptive = 1;
    for (int i = 0; i < rank - 2; i++)
      receptive *= (double)dims[i];
    *fan_in = (double)dims[rank - 2] * receptive;
    *fan_out = (double)dims[rank - 1] * receptive;
  }
}

clg_node *clg_initializer_op(clg_graph *g, const char *name, const clg_initializer *init,
                             clg_dtype dtype, int rank, const int64_t *dims)
{
  if (g && clg_graph_status(g) == CLG_OK &&
      (!init || rank < 0 || rank > CLG_MAX_RANK || (rank > 0 && !dims))) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_initializer_op '%s': init %p, rank %d, dims %p",
              name ? name : "(default name)", (const void *)init, rank, (const void *)dims);
    clg_graph_record_error(g);
    return NULL;
  }
  if (!g || clg_graph_status(g) != CLG_OK) {
    if (g)
      clg_error(clg_graph_status(g), "%s", clg_graph_error(g));
    else
      clg_error(CLG_INVALID_ARGUMENT, "clg_initializer_op: graph is NULL");
    return NULL;
  }
  clg_attr at[6];
  int na = 0;
  at[na++] = clg_attr_dtype("dtype", dtype);
  at[na++] = clg_attr_shape("shape", rank, dims);
  const clg_op_def *def;
  double a = init->a, b = init->b;
  switch (init->kind) {
  case CLG_INIT_ZEROS:
  case CLG_INIT_ONES:
  case CLG_INIT_CONSTANT:
    def = &clg_op_ConstFill;
    at[na++] = clg_attr_float("value", init->kind == CLG_INIT_ZEROS  ? 0.0
                                       : init->kind == CLG_INIT_ONES ? 1.0
                                                                     : a);
    return clg_graph_build(g, def, name, 0, NULL, na, at);
  case CLG_INIT_GLOROT_UNIFORM: {
    double fi, fo;
    fans(rank, dims, &fi, &fo);
    b = sqrt(6.0 / (fi + fo > 0 ? fi + fo : 1));
    a = -b;
  } /* fall through */
  case CLG_INIT_RANDOM_UNIFORM:
    def = &clg_op_RandomUniform;
    at[na++] = clg_attr_float("minval", a);
    at[na++] = clg_attr_float("maxval", b);
    break;
  case CLG_INIT_RANDOM_NORMAL:
  case CLG_INIT_TRUNCATED_NORMAL:
    def = init->kind == CLG_INIT_RANDOM_NORMAL ? &clg_op_RandomStandardNormal
                                               : &clg_op_TruncatedNormal;
    at[na++] = clg_attr_float("mean", a);
    at[na++] = clg_attr_float("stddev", b);
    break;
  default:
    clg_error(CLG_INVALID_ARGUMENT, "clg_initializer_op '%s': unknown initializer kind %d",
              name ? name : "(default name)", (int)init->kind);
    clg_graph_record_error(g);
    return NULL;
  }
  int64_t seed, seed2;
  get_seed(g, init->seed, &seed, &seed2);
  at[na++] = clg_attr_int("seed", seed);
  at[na++] = clg_attr_int("seed2", seed2);
  return clg_graph_build(g, def, name, 0, NULL, na, at);
}
