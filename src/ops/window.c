/* The geometry of window ops (Conv2D, pooling and their gradients), checked once for all:
 * TensorFlow's SAME/VALID output sizes and padding on the exact effective window, the taps
 * per output, and the [1,h,w,1] / padding / data_format attributes they share. */
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

/* "Negative dimension size caused by subtracting 3 from 2 for 'conv' (op: 'Conv2D') with
 * input shapes: [1,2,5,3], [3,3,3,4]", TensorFlow 1.x's text from shape inference; the
 * subtrahend as written when it passes INT64_MAX. */
static clg_code negative_dim(const clg_node *n, int64_t in, int64_t k, int64_t d, bool fits,
                             int64_t eff)
{
  char shapes[512] = "", s[192], what[96];
  for (int i = 0; i < n->num_inputs; i++)
    snprintf(shapes + strlen(shapes), sizeof shapes - strlen(shapes), "%s%s", i ? ", " : "",
             clg_out_shape_string(clg_node_in(n, i), s, sizeof s));
  if (fits)
    snprintf(what, sizeof what, "%lld", (long long)eff);
  else
    snprintf(what, sizeof what, "(%lld - 1) * %lld + 1", (long long)k, (long long)d);
  return clg_node_error(n, CLG_INVALID_ARGUMENT,
                        "Negative dimension size caused by subtracting %s from %lld for '%s' (op: "
                        "'%s') with input shapes: %s",
                        what, (long long)in, n->name, n->op, shapes);
}

/* One spatial dim: in, window k with dilation *d and stride s (in, k >= 0; d, s >= 1) to the
 * output size and padding before; *d may become an equivalent smaller dilation (SAME). */
static clg_code window_dim(const clg_node *n, int64_t in, int64_t k, int64_t *d, int64_t s,
                           bool same, int64_t *out, int64_t *pad)
{
  /* TensorFlow's effective window (k - 1) * d + 1 (1 - d for a window of no taps). */
  int64_t eff = 1 - *d, span = 0;
  bool fits = k == 0 || (clg_checked_mul(k - 1, *d, &span) && span < INT64_MAX);
  if (k > 0)
    eff = fits ? span + 1 : INT64_MAX;
  *pad = 0;
  if (!same) {
    if (!fits || in < eff)
      return negative_dim(n, in, k, *d, fits, eff);
    /* TensorFlow's (in - eff + s) / s, as (in - eff) / s + 1 so that it cannot overflow;
     * below INT64_MAX (eff > 0, or no taps: in + d - 1 within range). */
    if (eff <= 0 && in > INT64_MAX - *d)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "a window of no taps with dilation %lld over %lld values has more "
                            "than %lld outputs",
                            (long long)*d, (long long)in, (long long)INT64_MAX);
    int64_t rest = eff > 0 ? in - eff : in + (*d - 1);
    *out = rest / s + 1;
    return CLG_OK;
  }
  *out = in / s + (in % s != 0); /* ceil(in / s), TensorFlow's (in + s - 1) / s */
  if (*out == 0 || k == 0)
    return CLG_OK;
  if (!fits) {
    /* Tap a sits at oy*s - pt + a*d: with d >= 3*in + 3, only an odd window's centre tap can
     * reach the input, at an offset that does not depend on d, and every other tap is out
     * by more than in. Any such d gives the same taps: take the smallest, 3*in + 3. */
    int64_t d2 = in <= (INT64_MAX - 3) / 3 ? 3 * in + 3 : INT64_MAX;
    if (*d < d2 || !clg_checked_mul(k - 1, d2, &span) || span == INT64_MAX)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "a window of %lld taps with dilation %lld spans more than %lld "
                            "values over an input of %lld",
                            (long long)k, (long long)*d, (long long)INT64_MAX, (long long)in);
    *d = d2;
    eff = span + 1;
  }
  /* (out - 1) * s <= in - 1, so the padding TensorFlow needs, (out - 1) * s + eff - in, fits. */
  int64_t total = ((*out - 1) * s - in) + eff;
  *pad = total > 0 ? total / 2 : 0;
  return CLG_OK;
}

clg_code clg_window_geometry(const clg_node *n, bool same, clg_window *g)
{
  clg_code code = window_dim(n, g->h, g->kh, &g->dh, g->sh, same, &g->oh, &g->pt);
  if (code == CLG_OK)
    code = window_dim(n, g->w, g->kw, &g->dw, g->sw, same, &g->ow, &g->pl);
  return code;
}

clg_code clg_window_taps(const clg_node *n, clg_window *g)
{
  if (clg_dims_product(3, (int64_t[]){g->kh, g->kw, g->c}, &g->kdim))
    return CLG_OK;
  return clg_node_error(n, CLG_INVALID_ARGUMENT,
                        "the filter [%lld,%lld,%lld,%lld] has more than %lld taps per output",
                        (long long)g->kh, (long long)g->kw, (long long)g->c, (long long)g->cout,
                        (long long)INT64_MAX);
}

clg_code clg_window_attrs(const clg_node *n, const clg_attr_value *list, const char *what,
                          int64_t *h, int64_t *w)
{
  char s[128] = "[";
  for (int i = 0; i < list->n && list->v && strlen(s) < 100; i++)
    snprintf(s + strlen(s), sizeof s - strlen(s), "%s%lld", i ? "," : "", (long long)list->v[i]);
  strcat(s, "]");
  if (list->n != 4)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Sliding window %s field must specify 4 dimensions, not %s", what, s);
  for (int i = 0; i < 4; i++)
    if (list->v[i] <= 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "%s must be positive, not %s", what, s);
  if (list->v[0] != 1 || list->v[3] != 1)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "Current implementation does not yet support %s in the batch and depth "
                          "dimensions: %s",
                          what, s);
  *h = list->v[1];
  *w = list->v[2];
  return CLG_OK;
}

clg_code clg_padding_attr(const clg_node *n, const clg_attr_value *p, bool *same)
{
  const char *s = p->s ? p->s : "";
  if (strcmp(s, "SAME") != 0 && strcmp(s, "VALID") != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "padding must be SAME or VALID, not '%s'", s);
  *same = s[0] == 'S';
  return CLG_OK;
}

clg_code clg_explicit_pads(const clg_node *n, const clg_attr_value *padding,
                           const clg_attr_value *e, bool *explicit, int64_t *p)
{
  const char *pad = padding->s;
  *explicit = pad && strcmp(pad, "EXPLICIT") == 0;
  int count = e->set && e->v ? e->n : 0;
  if (!*explicit) {
    if (count != 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "explicit_paddings must be empty under padding SAME or VALID");
    return CLG_OK;
  }
  if (count != 8)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "explicit_paddings must have 8 values under padding EXPLICIT, not %d",
                          count);
  for (int i = 0; i < 8; i++)
    if (e->v[i] < 0 || e->v[i] > INT32_MAX || ((i < 2 || i > 5) && e->v[i] != 0))
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "explicit_paddings[%d] is %lld: pads must be in [0, 2^31) and 0 in "
                            "the batch and depth dimensions",
                            i, (long long)e->v[i]);
  for (int i = 0; i < 4; i++)
    p[i] = e->v[2 + i];
  return CLG_OK;
}

clg_code clg_nhwc_attr(const clg_node *n, const clg_attr_value *f)
{
  if (f->s && strcmp(f->s, "NHWC") != 0)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "data_format '%s' is not supported: only NHWC",
                          f->s);
  return CLG_OK;
}
