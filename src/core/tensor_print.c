/* numpy-style printing of host tensors (clg_tensor_to_string).
 *
 * Printing follows numpy's legacy='1.13' mode (what TensorFlow 1.x users saw): default
 * precision 8 in "maxprec" float mode, one sign position before every element,
 * scientific notation when the magnitudes call for it, 75-column line wrapping and
 * summarisation ("...") above 1000 elements. Digits are the shortest that read back as
 * the same value of the tensor's dtype, as numpy's Dragon4 does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/tensor_layout.h"

/* --- digits ------------------------------------------------------------------------- */

static double element(const clg_tensor *t, size_t i)
{
  switch (t->dtype) {
  case CLG_FLOAT32:
    return ((const float *)t->data)[i];
  case CLG_FLOAT64:
    return ((const double *)t->data)[i];
  case CLG_FLOAT16:
    return clg_half_to_double(((const uint16_t *)t->data)[i]);
  case CLG_INT32:
    return ((const int32_t *)t->data)[i];
  case CLG_INT64:
    return (double)((const int64_t *)t->data)[i];
  case CLG_BOOL:
    return ((const uint8_t *)t->data)[i] != 0;
  case CLG_UINT8:
  case CLG_INT8:
  case CLG_INT16:
  case CLG_UINT16:
  case CLG_UINT32:
    return (double)clg_int_load(t->dtype, t->data, i);
  case CLG_UINT64:
    return (double)clg_uint_load(t->dtype, t->data, i);
  }
  return 0.0;
}

/* A finite magnitude as decimal digits: value = 0.d1d2...dn * 10^(exp10 + 1). */
typedef struct decimal {
  char digits[40];
  int ndigits;
  int exp10; /* exponent of the first digit */
} decimal;

/* Reads the output of "%.Ne" into d without relying on the locale's decimal point. */
static void read_sci(const char *s, decimal *d)
{
  d->ndigits = 0;
  for (; *s && *s != 'e' && *s != 'E'; s++) {
    if (*s >= '0' && *s <= '9' && d->ndigits < (int)sizeof d->digits - 1)
      d->digits[d->ndigits++] = *s;
  }
  d->digits[d->ndigits] = '\0';
  d->exp10 = *s ? atoi(s + 1) : 0;
}

static bool reads_back(const char *s, double a, clg_dtype dtype)
{
  switch (dtype) {
  case CLG_FLOAT32:
    return strtof(s, NULL) == (float)a;
  case CLG_FLOAT16:
    return clg_half_from_double(strtod(s, NULL)) == clg_half_from_double(a);
  default:
    break;
  }
  return strtod(s, NULL) == a;
}

/* The shortest digits of |x| that read back as the same value of dtype. */
static void shortest(double x, clg_dtype dtype, decimal *d)
{
  int maxp = dtype == CLG_FLOAT64 ? 17 : dtype == CLG_FLOAT32 ? 9 : 5;
  double a = fabs(x);
  char buf[64];
  for (int p = 1; p <= maxp; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, a);
    if (reads_back(buf, a, dtype))
      break;
  }
  read_sci(buf, d);
}

static void copy_clamped(char *dst, size_t size, const char *src, size_t n)
{
  if (n >= size)
    n = size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Positional form split at the decimal point: ip holds the sign and integer digits, fp
 * the fractional digits without trailing zeros. At most max_frac fractional digits
 * (rounded from the exact value, as Dragon4's cutoff does); max_frac < 0: no limit.
 * whole_units: digits run at least to the units place (numpy's arrays pass min_digits=0,
 * so float16 65504 prints "65504." there, while the scalar prints "65500.0"). */
static void positional(double x, clg_dtype dtype, int max_frac, bool whole_units, char *ip,
                       size_t ip_size, char *fp, size_t fp_size)
{
  decimal d;
  shortest(x, dtype, &d);
  char idig[400], fdig[400];
  size_t ni = 0, nf = 0;
  int frac_digits = d.ndigits - 1 - d.exp10;
  bool short_int = d.exp10 >= 0 && d.ndigits < d.exp10 + 1;
  if ((max_frac >= 0 && frac_digits > max_frac) || (whole_units && short_int)) {
    char buf[400];
    snprintf(buf, sizeof buf, "%.*f", short_int ? 0 : max_frac, fabs(x));
    const char *s = buf;
    for (; *s >= '0' && *s <= '9'; s++)
      idig[ni++] = *s;
    for (; *s; s++)
      if (*s >= '0' && *s <= '9')
        fdig[nf++] = *s;
  } else if (d.exp10 >= 0) {
    for (int i = 0; i <= d.exp10 && ni < sizeof idig - 1; i++)
      idig[ni++] = i < d.ndigits ? d.digits[i] : '0';
    for (int i = d.exp10 + 1; i < d.ndigits; i++)
      fdig[nf++] = d.digits[i];
  } else {
    idig[ni++] = '0';
    for (int i = 0; i < -d.exp10 - 1 && nf < sizeof fdig - 41; i++)
      fdig[nf++] = '0';
    for (int i = 0; i < d.ndigits; i++)
      fdig[nf++] = d.digits[i];
  }
  while (nf > 0 && fdig[nf - 1] == '0')
    nf--;
  idig[ni] = '\0';
  fdig[nf] = '\0';
  size_t at = 0;
  if (signbit(x) && ip_size > 1)
    ip[at++] = '-';
  copy_clamped(ip + at, ip_size - at, idig, ni);
  copy_clamped(fp, fp_size, fdig, nf);
}

/* --- scalars: numpy's scalar str, Python float style ("22.0", "0.5", "1e-05", "inf") ------ */

static void scalar_repr(double x, clg_dtype dtype, clg_strbuf *out)
{
  if (isnan(x)) {
    clg_strbuf_append(out, "nan");
    return;
  }
  if (isinf(x)) {
    clg_strbuf_append(out, x < 0 ? "-inf" : "inf");
    return;
  }
  decimal d;
  shortest(x, dtype, &d);
  /* numpy's scalar str picks the notation from the value, not from its digits */
  double a = fabs(x);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    char ip[64], fp[64];
    positional(x, dtype, -1, false, ip, sizeof ip, fp, sizeof fp);
    clg_strbuf_printf(out, "%s.%s", ip, fp[0] ? fp : "0");
    return;
  }
  clg_strbuf_printf(out, "%s%c%s%s", signbit(x) ? "-" : "", d.digits[0], d.ndigits > 1 ? "." : "",
                    d.digits + 1);
  clg_strbuf_printf(out, "e%c%02d", d.exp10 < 0 ? '-' : '+', abs(d.exp10));
}

/* --- arrays: numpy's FloatingFormat and _formatArray in legacy '1.13' mode ---------------- */

#define PRINT_PRECISION 8
#define PRINT_THRESHOLD 1000
#define PRINT_EDGEITEMS 3
#define PRINT_LINEWIDTH 75

typedef struct printer {
  const clg_tensor *t;
  size_t strides[CLG_MAX_RANK];
  bool summarize;
  /* first pass: the range of the shown values */
  bool any_nonzero, any_nonfinite, any_finite;
  double max_val, min_val;
  /* FloatingFormat's state */
  bool exp_format;
  int int_width; /* IntegerFormat's and BoolFormat's */
  int pad_left, pad_right, exp_size;
} printer;

/* Whether numpy switches to scientific notation. The thresholds compare as doubles (numpy
 * 1.x promotes a scalar compared with a Python float), the ratio is computed in the dtype
 * (a float32 or float16 division). */
static bool wants_exp(double max_val, double min_val, clg_dtype dtype)
{
  if (max_val >= 1e8 || min_val < 1e-4)
    return true;
  switch (dtype) {
  case CLG_FLOAT32: {
    float ratio = (float)max_val / (float)min_val;
    return ratio > 1000.0f;
  }
  case CLG_FLOAT16: {
    float ratio = (float)max_val / (float)min_val;
    return clg_half_to_double(clg_half_from_double(ratio)) > 1000.0;
  }
  default:
    break;
  }
  return max_val / min_val > 1000.0;
}

/* "%.8e" of |x| split into the mantissa digits and the exponent. */
static void scientific(double x, decimal *d)
{
  char buf[64];
  snprintf(buf, sizeof buf, "%.*e", PRINT_PRECISION, fabs(x));
  read_sci(buf, d);
}

static int exp_digit_count(int exp10)
{
  int n = 0;
  for (int e = abs(exp10); e > 0; e /= 10)
    n++;
  return n < 2 ? 2 : n;
}

/* Visits the elements that the printed text shows (all, or the corners when summarised). */
typedef void (*visit_fn)(printer *pr, size_t off);

static void visit_shown(printer *pr, int axis, size_t off, visit_fn fn)
{
  const clg_tensor *t = pr->t;
  if (axis == t->rank) {
    fn(pr, off);
    return;
  }
  size_t n = (size_t)t->dims[axis];
  bool cut = pr->summarize && n > 2 * PRINT_EDGEITEMS;
  for (size_t i = 0; i < n; i++) {
    if (cut && i == PRINT_EDGEITEMS)
      i = n - PRINT_EDGEITEMS;
    visit_shown(pr, axis + 1, off + i * pr->strides[axis], fn);
  }
}

static void scan_range(printer *pr, size_t off)
{
  double v = element(pr->t, off);
  if (!isfinite(v)) {
    pr->any_nonfinite = true;
    return;
  }
  pr->any_finite = true;
  double a = fabs(v);
  if (a == 0)
    return;
  if (!pr->any_nonzero || a > pr->max_val)
    pr->max_val = a;
  if (!pr->any_nonzero || a < pr->min_val)
    pr->min_val = a;
  pr->any_nonzero = true;
}

static void scan_widths(printer *pr, size_t off)
{
  double v = element(pr->t, off);
  if (!isfinite(v))
    return;
  if (pr->exp_format) {
    decimal d;
    scientific(v, &d);
    int n = exp_digit_count(d.exp10);
    if (n > pr->exp_size)
      pr->exp_size = n;
    return;
  }
  char ip[400], fp[64];
  positional(v, pr->t->dtype, PRINT_PRECISION, true, ip, sizeof ip, fp, sizeof fp);
  int li = 1 + (int)strlen(ip[0] == '-' ? ip + 1 : ip);
  int lf = (int)strlen(fp);
  if (li > pr->pad_left)
    pr->pad_left = li;
  if (lf > pr->pad_right)
    pr->pad_right = lf;
}

static bool is_integer(clg_dtype d) { return clg_dtype_is_integer(d); }

/* An int or bool element as numpy's str() writes it (bools as True/False). */
static void int_text(const clg_tensor *t, size_t off, char *buf, size_t size)
{
  if (t->dtype == CLG_BOOL)
    snprintf(buf, size, "%s", ((const uint8_t *)t->data)[off] ? "True" : "False");
  else if (t->dtype == CLG_UINT64)
    snprintf(buf, size, "%llu", (unsigned long long)clg_uint_load(t->dtype, t->data, off));
  else
    snprintf(buf, size, "%lld", (long long)clg_int_load(t->dtype, t->data, off));
}

static void scan_int_width(printer *pr, size_t off)
{
  char buf[32];
  int_text(pr->t, off, buf, sizeof buf);
  if ((int)strlen(buf) > pr->int_width)
    pr->int_width = (int)strlen(buf);
}

/* FloatingFormat.fillFormat; IntegerFormat's width (the longest shown element); BoolFormat
 * pads True to the width of False in arrays. */
static void fill_format(printer *pr)
{
  if (pr->t->dtype == CLG_BOOL) {
    pr->int_width = 5;
    return;
  }
  if (is_integer(pr->t->dtype)) {
    visit_shown(pr, 0, 0, scan_int_width);
    return;
  }
  visit_shown(pr, 0, 0, scan_range);
  pr->exp_format = pr->any_nonzero && wants_exp(pr->max_val, pr->min_val, pr->t->dtype);
  pr->pad_left = pr->pad_right = 0;
  pr->exp_size = -1;
  if (pr->any_finite) {
    visit_shown(pr, 0, 0, scan_widths);
    if (pr->exp_format) {
      pr->pad_left = 3;
      pr->pad_right = pr->exp_size + 2 + PRINT_PRECISION;
    }
  }
  if (pr->any_nonfinite) {
    /* Room for "nan" and "-inf" (legacy mode always counts the minus sign). */
    int offset = pr->pad_right + 1;
    if (3 - offset > pr->pad_left)
      pr->pad_left = 3 - offset;
    if (4 - offset > pr->pad_left)
      pr->pad_left = 4 - offset;
  }
}

static void pad(clg_strbuf *s, int n)
{
  for (int i = 0; i < n; i++)
    clg_strbuf_append(s, " ");
}

/* FloatingFormat.__call__: one element, padded to the common width. */
static void format_element(const printer *pr, double v, clg_strbuf *out)
{
  if (!isfinite(v)) {
    const char *r = isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
    pad(out, pr->pad_left + pr->pad_right + 1 - (int)strlen(r));
    clg_strbuf_append(out, r);
    return;
  }
  if (pr->exp_format) {
    decimal d;
    scientific(v, &d);
    bool neg = signbit(v);
    pad(out, pr->pad_left - (neg ? 2 : 1));
    clg_strbuf_printf(out, "%s%c.%se%c%0*d", neg ? "-" : "", d.digits[0], d.digits + 1,
                      d.exp10 < 0 ? '-' : '+', pr->exp_size, abs(d.exp10));
    return;
  }
  char ip[400], fp[64];
  positional(v, pr->t->dtype, PRINT_PRECISION, true, ip, sizeof ip, fp, sizeof fp);
  pad(out, pr->pad_left - (int)strlen(ip));
  clg_strbuf_printf(out, "%s.%s", ip, fp);
  pad(out, pr->pad_right - (int)strlen(fp));
}

static void rstrip_append(clg_strbuf *s, const char *text, size_t len)
{
  while (len > 0 && text[len - 1] == ' ')
    len--;
  clg_strbuf_printf(s, "%.*s", (int)len, text);
}

/* _extendLine (legacy): wraps when the line would pass the width. */
static void extend_line(clg_strbuf *s, clg_strbuf *line, const char *word, int indent)
{
  if (line->len + strlen(word) > PRINT_LINEWIDTH) {
    rstrip_append(s, line->buf ? line->buf : "", line->len);
    clg_strbuf_append(s, "\n");
    line->len = 0;
    if (line->buf)
      line->buf[0] = '\0';
    pad(line, indent);
  }
  clg_strbuf_append(line, word);
}

/* Text of element off as a fresh string (NULL when memory ran out). */
static char *element_text(const printer *pr, size_t off)
{
  clg_strbuf w;
  clg_strbuf_init(&w);
  if (pr->int_width > 0) {
    char buf[32];
    int_text(pr->t, off, buf, sizeof buf);
    pad(&w, pr->int_width - (int)strlen(buf));
    clg_strbuf_append(&w, buf);
    return clg_strbuf_take(&w);
  }
  format_element(pr, element(pr->t, off), &w);
  return clg_strbuf_take(&w);
}

/* _formatArray's recurser: the sub-array at axis starting at element off, with a hanging
 * indent of indent spaces. Returns a malloc'd string, or NULL when memory ran out. */
static char *format_axis(const printer *pr, int axis, size_t off, int indent)
{
  const clg_tensor *t = pr->t;
  int axes_left = t->rank - axis;
  size_t n = (size_t)t->dims[axis], stride = pr->strides[axis];
  bool show_summary = pr->summarize && n > 2 * PRINT_EDGEITEMS;
  size_t leading = show_summary ? PRINT_EDGEITEMS : 0;
  size_t trailing = show_summary ? PRINT_EDGEITEMS : n;
  clg_strbuf s;
  clg_strbuf_init(&s);
  bool failed = false;
  if (axes_left == 1) {
    clg_strbuf line;
    clg_strbuf_init(&line);
    pad(&line, indent);
    for (size_t k = 0; k < leading + trailing; k++) {
      size_t i = k < leading ? k : n - (leading + trailing - k);
      char *word = element_text(pr, off + i * stride);
      failed = failed || !word;
      extend_line(&s, &line, word ? word : "", indent);
      free(word);
      if (k + 1 < leading + trailing)
        clg_strbuf_append(&line, " ");
      if (show_summary && k + 1 == leading) {
        extend_line(&s, &line, "...", indent);
        clg_strbuf_append(&line, ", ");
      }
    }
    clg_strbuf_append(&s, line.buf ? line.buf : "");
    failed = failed || line.failed;
    clg_strbuf_free(&line);
  } else {
    for (size_t k = 0; k < leading + trailing; k++) {
      size_t i = k < leading ? k : n - (leading + trailing - k);
      char *nested = format_axis(pr, axis + 1, off + i * stride, indent + 1);
      failed = failed || !nested;
      pad(&s, indent);
      clg_strbuf_append(&s, nested ? nested : "");
      free(nested);
      if (k + 1 < leading + trailing) {
        for (int nl = 0; nl < axes_left - 1; nl++)
          clg_strbuf_append(&s, "\n");
      }
      if (show_summary && k + 1 == leading) {
        pad(&s, indent);
        clg_strbuf_append(&s, "..., \n");
      }
    }
  }
  if (failed || s.failed) {
    clg_strbuf_free(&s);
    return NULL;
  }
  /* Drop the hanging indent of the first line and wrap in brackets. */
  clg_strbuf r;
  clg_strbuf_init(&r);
  clg_strbuf_append(&r, "[");
  if (s.len > (size_t)indent)
    clg_strbuf_append(&r, s.buf + indent);
  clg_strbuf_append(&r, "]");
  clg_strbuf_free(&s);
  return clg_strbuf_take(&r);
}

char *clg_tensor_to_string(const clg_tensor *t)
{
  if (!t) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_tensor_to_string: t is NULL");
    return NULL;
  }
  char *text;
  if (t->rank == 0) {
    clg_strbuf s;
    clg_strbuf_init(&s);
    if (t->dtype == CLG_BOOL || is_integer(t->dtype)) {
      char buf[32];
      int_text(t, 0, buf, sizeof buf);
      clg_strbuf_append(&s, buf);
    } else {
      scalar_repr(element(t, 0), t->dtype, &s);
    }
    text = clg_strbuf_take(&s);
  } else if (t->count == 0) {
    text = clg_strdup("[]");
  } else {
    printer pr;
    memset(&pr, 0, sizeof pr);
    pr.t = t;
    pr.summarize = t->count > PRINT_THRESHOLD;
    size_t stride = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
      pr.strides[i] = stride;
      stride *= (size_t)t->dims[i];
    }
    fill_format(&pr);
    text = format_axis(&pr, 0, 0, 1);
  }
  if (!text)
    clg_error(CLG_RESOURCE_EXHAUSTED, "clg_tensor_to_string: out of host memory");
  return text;
}
