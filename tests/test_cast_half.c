/* Cast to and from half (issue 24's ONNX Cast FLOAT16) on CPU:0 and on a PoCL stand-in GPU,
 * soft placement off so that each device's own kernel runs. The reference is IEEE 754
 * binary16 itself: bit patterns written here by hand (round to nearest, ties to even, once;
 * overflow to infinity; subnormals; half to integer truncating toward zero and saturating). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

/* y = Cast(x) to dt on dev; NULL after a failed check. */
static clg_tensor *cast_on(const char *dev, const clg_tensor *x, clg_dtype dt)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, dev));
  clg_node *c = clg_const(g, "x", x);
  clg_node *y = clg_cast(g, "y", c, dt);
  CHECK_MSG(y != NULL, "%s", clg_graph_error(g));
  clg_session_options o;
  clg_session_options_init(&o);
  o.allow_soft_placement = 0;
  o.gpu_options.allow_growth = 1;
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  if (y && clg_session_new(g, &o, &s) == CLG_OK) {
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &y, &out));
    clg_session_free(s);
  } else
    CHECK_MSG(false, "session on %s", dev);
  clg_graph_free(g);
  return out;
}

static clg_tensor *vec(clg_dtype dt, int n, const void *v)
{
  int64_t d = n;
  return clg_tensor_new(dt, 1, &d, v);
}

static void test_to_half(const char *dev)
{
  static const float f[] = {1.0f,         -2.0f,    65504.0f, 65519.996f,  65520.0f, 1e10f,
                            -INFINITY,    0x1p-24f, 0x1p-25f, 0x1.8p-24f,  0x1p-14f, 1 + 0x1p-11f,
                            1 + 0x3p-11f, -0.0f,    0.1f,     0x1.ffcp-15f};
  static const uint16_t want[] = {0x3C00, 0xC000, 0x7BFF, 0x7BFF, 0x7C00, 0x7C00, 0xFC00, 0x0001,
                                  0x0000, 0x0002, 0x0400, 0x3C00, 0x3C02, 0x8000, 0x2E66, 0x0400};
  int n = (int)(sizeof f / sizeof f[0]);
  clg_tensor *x = vec(CLG_FLOAT32, n, f), *y = cast_on(dev, x, CLG_FLOAT16);
  if (y) {
    CHECK(clg_tensor_dtype(y) == CLG_FLOAT16 && (int)clg_tensor_count(y) == n);
    const uint16_t *h = clg_tensor_data(y);
    for (int i = 0; i < n; i++)
      CHECK_MSG(h[i] == want[i], "%s: float %a to half: 0x%04X, want 0x%04X", dev, (double)f[i],
                h[i], want[i]);
  }
  clg_tensor_free(x);
  clg_tensor_free(y);
  float nan = NAN;
  x = vec(CLG_FLOAT32, 1, &nan);
  y = cast_on(dev, x, CLG_FLOAT16);
  if (y) {
    uint16_t h = *(const uint16_t *)clg_tensor_data(y);
    CHECK_MSG((h & 0x7C00) == 0x7C00 && (h & 0x3FF), "%s: NaN to half: 0x%04X", dev, h);
  }
  clg_tensor_free(x);
  clg_tensor_free(y);

  /* double to half rounds once: 1 + 2^-11 + 2^-40 is above the tie (through float it would
   * round to the tie and then to even, 0x3C00) */
  static const double d[] = {1 + 0x1p-11 + 0x1p-40, 65519.99999, -0x1p-24, 3.0};
  static const uint16_t dwant[] = {0x3C01, 0x7BFF, 0x8001, 0x4200};
  x = vec(CLG_FLOAT64, 4, d);
  y = cast_on(dev, x, CLG_FLOAT16);
  if (y) {
    const uint16_t *h = clg_tensor_data(y);
    for (int i = 0; i < 4; i++)
      CHECK_MSG(h[i] == dwant[i], "%s: double %a to half: 0x%04X, want 0x%04X", dev, d[i], h[i],
                dwant[i]);
  }
  clg_tensor_free(x);
  clg_tensor_free(y);

  /* integers: 2049 is a tie (2048 or 2050: even 2048), 2051 rounds up to 2052, 70000 past the
   * largest half */
  static const int32_t iv[] = {2049, 2051, 70000, -3, 0};
  static const uint16_t iwant[] = {0x6800, 0x6802, 0x7C00, 0xC200, 0x0000};
  x = vec(CLG_INT32, 5, iv);
  y = cast_on(dev, x, CLG_FLOAT16);
  if (y) {
    const uint16_t *h = clg_tensor_data(y);
    for (int i = 0; i < 5; i++)
      CHECK_MSG(h[i] == iwant[i], "%s: int %d to half: 0x%04X, want 0x%04X", dev, iv[i], h[i],
                iwant[i]);
  }
  clg_tensor_free(x);
  clg_tensor_free(y);
}

static void test_from_half(const char *dev)
{
  static const uint16_t h[] = {0x0001, 0x7BFF, 0xC000, 0x3555, 0xC100, 0x7C00, 0x8000, 0xFC00};
  static const double want[] = {0x1p-24, 65504,    -2,   0.333251953125,
                                -2.5,    INFINITY, -0.0, -INFINITY};
  static const int64_t iwant[] = {0, 65504, -2, 0, -2, INT64_MAX, 0, INT64_MIN};
  static const int32_t i32want[] = {0, 65504, -2, 0, -2, INT32_MAX, 0, INT32_MIN};
  static const uint8_t bwant[] = {1, 1, 1, 1, 1, 1, 0, 1};
  clg_tensor *x = vec(CLG_FLOAT16, 8, h);
  clg_dtype dts[] = {CLG_FLOAT32, CLG_FLOAT64, CLG_INT64, CLG_INT32, CLG_BOOL};
  for (int k = 0; k < 5; k++) {
    clg_tensor *y = cast_on(dev, x, dts[k]);
    if (!y)
      continue;
    CHECK(clg_tensor_dtype(y) == dts[k] && clg_tensor_count(y) == 8);
    const void *p = clg_tensor_data(y);
    for (int i = 0; i < 8; i++) {
      bool ok;
      switch (dts[k]) {
      case CLG_FLOAT32:
        ok = ((const float *)p)[i] == (float)want[i] &&
             !signbit(((const float *)p)[i]) == !signbit(want[i]);
        break;
      case CLG_FLOAT64:
        ok = ((const double *)p)[i] == want[i] &&
             !signbit(((const double *)p)[i]) == !signbit(want[i]);
        break;
      case CLG_INT64:
        ok = ((const int64_t *)p)[i] == iwant[i];
        break;
      case CLG_INT32:
        ok = ((const int32_t *)p)[i] == i32want[i];
        break;
      default:
        ok = ((const uint8_t *)p)[i] == bwant[i];
        break;
      }
      CHECK_MSG(ok, "%s: half 0x%04X to %s: element %d wrong", dev, h[i], clg_dtype_name(dts[k]),
                i);
    }
    clg_tensor_free(y);
  }
  clg_tensor_free(x);
}

int main(void)
{
  test_to_half("/device:CPU:0");
  test_from_half("/device:CPU:0");
  if (clg_test_require_gpus(1)) {
    test_to_half("/device:GPU:0");
    test_from_half("/device:GPU:0");
  }
  return clg_test_summary("test_cast_half");
}
