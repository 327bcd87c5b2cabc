/* ResizeBilinear and ResizeBilinearGrad on the host, in float as TensorFlow's CPU kernels:
 * the forward op from per-row and per-column weights computed once, output rows across the
 * cores; the gradient as TensorFlow's scatter, one batch image per task.
 * ResizeNearestNeighbor copies pixels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"

/* TensorFlow's source coordinate of output i, and its interpolation (lower, upper, lerp). */
static void weights(const clg_resize *r, int64_t i, float scale, int64_t in, int64_t *lo,
                    int64_t *hi, float *lerp)
{
  float s = r->half_pixel ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
  float f = floorf(s);
  *lo = (int64_t)f > 0 ? (int64_t)f : 0;
  *hi = (int64_t)ceilf(s) < in - 1 ? (int64_t)ceilf(s) : in - 1;
  *lerp = s - f;
}

typedef struct resize_job {
  const clg_kernel_ctx *c;
  clg_resize r;
  int64_t *xlo, *xhi;
  float *xl;
} resize_job;

#define FORWARD(T)                                                                                 \
  do {                                                                                             \
    const T *x = j->c->in[0].host;                                                                 \
    float *y = j->c->out[0].host;                                                                  \
    for (size_t row = begin; row < end; row++) {                                                   \
      int64_t b = (int64_t)row / r->oh, oy = (int64_t)row % r->oh, ylo, yhi;                       \
      float yl;                                                                                    \
      weights(r, oy, r->hs, r->h, &ylo, &yhi, &yl);                                                \
      const T *top = x + ((size_t)b * (size_t)r->h + (size_t)ylo) * (size_t)(r->w * r->c);         \
      const T *bot = x + ((size_t)b * (size_t)r->h + (size_t)yhi) * (size_t)(r->w * r->c);         \
      float *out = y + row * (size_t)(r->ow * r->c);                                               \
      for (int64_t ox = 0; ox < r->ow; ox++) {                                                     \
        int64_t l = j->xlo[ox] * r->c, h = j->xhi[ox] * r->c;                                      \
        float xl = j->xl[ox];                                                                      \
        for (int64_t ch = 0; ch < r->c; ch++) {                                                    \
          float tl = (float)top[l + ch], tr = (float)top[h + ch];                                  \
          float bl = (float)bot[l + ch], br = (float)bot[h + ch];                                  \
          float t = tl + (tr - tl) * xl, bo = bl + (br - bl) * xl;                                 \
          out[ox * r->c + ch] = t + (bo - t) * yl;                                                 \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static void forward_range(void *ctx, size_t begin, size_t end)
{
  const resize_job *j = ctx;
  const clg_resize *r = &j->r;
  if (clg_node_in(j->c->node, 0)->dtype == CLG_FLOAT64)
    FORWARD(double);
  else
    FORWARD(float);
}

#define BACKWARD(T)                                                                                \
  do {                                                                                             \
    const float *dy = j->c->in[0].host;                                                            \
    T *dx = (T *)j->c->out[0].host + (size_t)b * (size_t)(r->h * r->w * r->c);                     \
    dy += (size_t)b * (size_t)(r->oh * r->ow * r->c);                                              \
    for (int64_t q = 0; q < r->h * r->w * r->c; q++)                                               \
      dx[q] = 0;                                                                                   \
    for (int64_t oy = 0; oy < r->oh; oy++) {                                                       \
      int64_t ylo, yhi;                                                                            \
      float yl;                                                                                    \
      weights(r, oy, r->hs, r->h, &ylo, &yhi, &yl);                                                \
      float iy = 1.0f - yl;                                                                        \
      for (int64_t ox = 0; ox < r->ow; ox++) {                                                     \
        int64_t xlo = j->xlo[ox], xhi = j->xhi[ox];                                                \
        float xl = j->xl[ox], ix = 1.0f - xl;                                                      \
        const float *g = dy + (oy * r->ow + ox) * r->c;                                            \
        T *tl = dx + (ylo * r->w + xlo) * r->c, *tr = dx + (ylo * r->w + xhi) * r->c;              \
        T *bl = dx + (yhi * r->w + xlo) * r->c, *br = dx + (yhi * r->w + xhi) * r->c;              \
        for (int64_t ch = 0; ch < r->c; ch++) {                                                    \
          tl[ch] += (T)(g[ch] * iy * ix);                                                          \
          tr[ch] += (T)(g[ch] * iy * xl);                                                          \
          bl[ch] += (T)(g[ch] * yl * ix);                                                          \
          br[ch] += (T)(g[ch] * yl * xl);                                                          \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static void backward_task(void *ctx, int task)
{
  const resize_job *j = ctx;
  const clg_resize *r = &j->r;
  int64_t b = task;
  if (j->c->node->outs[0].dtype == CLG_FLOAT64)
    BACKWARD(double);
  else
    BACKWARD(float);
}

static clg_code resize_run(const clg_kernel_ctx *c)
{
  resize_job j = {c, {0}, NULL, NULL, NULL};
  clg_resize_geometry(c->node, &j.r);
  if (clg_out_count(&c->node->outs[0]) == 0)
    return CLG_OK;
  j.xlo = malloc(sizeof *j.xlo * (size_t)j.r.ow);
  j.xhi = malloc(sizeof *j.xhi * (size_t)j.r.ow);
  j.xl = malloc(sizeof *j.xl * (size_t)j.r.ow);
  if (!j.xlo || !j.xhi || !j.xl) {
    free(j.xlo);
    free(j.xhi);
    free(j.xl);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory running '%s'", c->node->name);
  }
  for (int64_t ox = 0; ox < j.r.ow; ox++)
    weights(&j.r, ox, j.r.ws, j.r.w, &j.xlo[ox], &j.xhi[ox], &j.xl[ox]);
  if (c->node->def == &clg_op_ResizeBilinear) {
    size_t per_row = (size_t)(j.r.ow * j.r.c) + 1;
    clg_host_parallel_for((size_t)(j.r.n * j.r.oh), per_row >= 8192 ? 1 : 8192 / per_row,
                          forward_range, &j);
  } else {
    clg_host_parallel((int)j.r.n, backward_task, &j);
  }
  free(j.xlo);
  free(j.xhi);
  free(j.xl);
  return CLG_OK;
}

/* ResizeNearestNeighbor: each output pixel copies its source pixel's c elements. */
static clg_code nearest_run(const clg_kernel_ctx *c)
{
  clg_resize r;
  clg_resize_geometry(c->node, &r);
  size_t es = clg_dtype_size(c->node->outs[0].dtype), px = (size_t)r.c * es;
  if (clg_out_count(&c->node->outs[0]) == 0)
    return CLG_OK;
  const char *x = c->in[0].host;
  char *y = c->out[0].host;
  for (int64_t b = 0; b < r.n; b++)
    for (int64_t oy = 0; oy < r.oh; oy++) {
      int64_t iy = clg_resize_nearest_source(&r, oy, r.hs, r.h);
      for (int64_t ox = 0; ox < r.ow; ox++) {
        int64_t ix = clg_resize_nearest_source(&r, ox, r.ws, r.w);
        memcpy(y + (size_t)((b * r.oh + oy) * r.ow + ox) * px,
               x + (size_t)((b * r.h + iy) * r.w + ix) * px, px);
      }
    }
  return CLG_OK;
}

/* Images of float or double (ResizeBilinear's output, and the gradient's input, are float). */
static bool resize_supports(const clg_node *n, const clg_device *dev)
{
  (void)dev;
  clg_dtype t = n->def == &clg_op_ResizeBilinear ? clg_node_in(n, 0)->dtype : n->outs[0].dtype;
  return t == CLG_FLOAT32 || t == CLG_FLOAT64;
}

static const clg_kernel_entry entries[] = {
    {&clg_op_ResizeBilinear, {CLG_KIND_HOST, resize_supports, resize_run, NULL, NULL}},
    {&clg_op_ResizeBilinearGrad, {CLG_KIND_HOST, resize_supports, resize_run, NULL, NULL}},
    {&clg_op_ResizeNearestNeighbor, {CLG_KIND_HOST, NULL, nearest_run, NULL, NULL}},
};
CLG_KERNEL_SET(clg_host_kernels_resize, entries);
