/* Host tensors: dtype, shape, 64-byte aligned row-major data, and numpy-style printing.
 *
 * Printing follows numpy's legacy='1.13' mode (what TensorFlow 1.x users saw): default
 * precision 8 in "maxprec" float mode, one sign position before every element,
 * scientific notation when the magnitudes call for it, 75-column line wrapping and
 * summarisation ("...") above 1000 elements. Digits are the shortest that read back as
 * the same value of the tensor's dtype, as numpy's Dragon4 does. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define TENSOR_ALIGN 64

struct clg_tensor {
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
  size_t count, bytes;
  void *data;
  clg_host_buf *buf; /* data came from a host provider: give it back through release */
  void (*release)(clg_host_buf *buf);
};

/* Buffers of large tensors freed while a session is live wait here for the next tensor of
 * the same byte size: session runs fetch same-shaped results step after step, and a fresh
 * buffer costs a page fault per 4 KiB (on the H200 machine's VM that was 12% of a 1024^2
 * float GEMM on 16 cores). Bounded in count and bytes; emptied when the last session goes,
 * so nothing is held once the library is idle. */
#define RECYCLE_MIN_BYTES ((size_t)256 << 10)
#define RECYCLE_MAX_BYTES ((size_t)512 << 20)
#define RECYCLE_SLOTS 8

static struct {
  pthread_mutex_t mu;
  bool on;
  int n;
  size_t bytes;
  struct {
    void *mem;
    size_t bytes;
  } slot[RECYCLE_SLOTS];
  bool has_provider;
  clg_host_provider provider;
} recycle = {.mu = PTHREAD_MUTEX_INITIALIZER};

void clg_tensor_set_host_provider(const clg_host_provider *p)
{
  pthread_mutex_lock(&recycle.mu);
  recycle.has_provider = p != NULL;
  if (p)
    recycle.provider = *p;
  pthread_mutex_unlock(&recycle.mu);
}

/* The provider is called under the lock, so that it cannot be unset (and its owner freed)
 * while it allocates. */
static void *provider_take(size_t bytes, clg_host_buf **buf, void (**release)(clg_host_buf *))
{
  void *mem = NULL;
  pthread_mutex_lock(&recycle.mu);
  if (recycle.has_provider && bytes >= recycle.provider.min_bytes && bytes > 0) {
    mem = recycle.provider.alloc(recycle.provider.ctx, bytes, buf);
    *release = recycle.provider.release;
  }
  pthread_mutex_unlock(&recycle.mu);
  return mem;
}

bool clg_tensor_is_provided(const clg_tensor *t) { return t && t->buf; }

static void *recycle_take(size_t bytes)
{
  void *mem = NULL;
  if (bytes < RECYCLE_MIN_BYTES)
    return NULL;
  pthread_mutex_lock(&recycle.mu);
  for (int i = 0; i < recycle.n; i++)
    if (recycle.slot[i].bytes == bytes) {
      mem = recycle.slot[i].mem;
      recycle.bytes -= bytes;
      recycle.slot[i] = recycle.slot[--recycle.n];
      break;
    }
  pthread_mutex_unlock(&recycle.mu);
  return mem;
}

/* Keeps mem for reuse when there is room; false when the caller must free it. */
static bool recycle_give(void *mem, size_t bytes)
{
  if (bytes < RECYCLE_MIN_BYTES)
    return false;
  bool kept = false;
  pthread_mutex_lock(&recycle.mu);
  if (recycle.on && recycle.n < RECYCLE_SLOTS && bytes <= RECYCLE_MAX_BYTES - recycle.bytes) {
    recycle.slot[recycle.n].mem = mem;
    recycle.slot[recycle.n].bytes = bytes;
    recycle.n++;
    recycle.bytes += bytes;
    kept = true;
  }
  pthread_mutex_unlock(&recycle.mu);
  return kept;
}

void clg_tensor_recycle_set(bool on)
{
  pthread_mutex_lock(&recycle.mu);
  recycle.on = on;
  if (!on) {
    for (int i = 0; i < recycle.n; i++)
      clg_aligned_free(recycle.slot[i].mem);
    recycle.n = 0;
    recycle.bytes = 0;
  }
  pthread_mutex_unlock(&recycle.mu);
}

size_t clg_tensor_recycled_bytes(void)
{
  pthread_mutex_lock(&recycle.mu);
  size_t bytes = recycle.bytes;
  pthread_mutex_unlock(&recycle.mu);
  return bytes;
}

size_t clg_dtype_size(clg_dtype dtype)
{
  switch (dtype) {
  case CLG_FLOAT32:
    return 4;
  case CLG_FLOAT64:
    return 8;
  case CLG_FLOAT16:
    return 2;
  case CLG_INT32:
    return 4;
  case CLG_INT64:
    return 8;
  case CLG_BOOL:
    return 1;
  }
  return 0;
}

const char *clg_dtype_name(clg_dtype dtype)
{
  switch (dtype) {
  case CLG_FLOAT32:
    return "float";
  case CLG_FLOAT64:
    return "double";
  case CLG_FLOAT16:
    return "half";
  case CLG_INT32:
    return "int32";
  case CLG_INT64:
    return "int64";
  case CLG_BOOL:
    return "bool";
  }
  return "invalid";
}

/* The shape as "[2,3]" (TensorFlow's style), from raw dims that may be invalid. */
static void dims_text(int rank, const int64_t *dims, char *buf, size_t size)
{
  clg_strbuf s;
  clg_strbuf_init(&s);
  clg_strbuf_append(&s, "[");
  for (int i = 0; i < rank; i++)
    clg_strbuf_printf(&s, "%s%lld", i ? "," : "", (long long)dims[i]);
  clg_strbuf_append(&s, "]");
  snprintf(buf, size, "%s", s.failed || !s.buf ? "[?]" : s.buf);
  clg_strbuf_free(&s);
}

/* Creates a tensor; its data is copied from `data`, else zeroed when `zero`, else left
 * as it is (for producers that overwrite every element). */
static clg_tensor *tensor_create(clg_dtype dtype, int rank, const int64_t *dims, const void *data,
                                 bool zero)
{
  size_t esize = clg_dtype_size(dtype);
  if (esize == 0) {
    clg_error(CLG_INVALID_ARGUMENT,
              "clg_tensor_new: dtype %d is not a valid dtype (float = 1, double = 2, int32 = 3, "
              "int64 = 9, bool = 10, half = 19)",
              (int)dtype);
    return NULL;
  }
  if (rank < 0 || rank > CLG_MAX_RANK) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_tensor_new: rank %d is out of range [0, %d]", rank,
              CLG_MAX_RANK);
    return NULL;
  }
  if (rank > 0 && !dims) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_tensor_new: dims is NULL but rank is %d", rank);
    return NULL;
  }
  bool has_zero = false;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) {
      clg_error(CLG_INVALID_ARGUMENT, "clg_tensor_new: dims[%d] is %lld; dimensions must be >= 0",
                i, (long long)dims[i]);
      return NULL;
    }
    has_zero = has_zero || dims[i] == 0;
  }
  size_t count = 1;
  if (has_zero) {
    count = 0;
  } else {
    for (int i = 0; i < rank; i++) {
      if ((uint64_t)dims[i] > SIZE_MAX || count > SIZE_MAX / esize / (size_t)dims[i]) {
        char shape[256];
        dims_text(rank, dims, shape, sizeof shape);
        clg_error(CLG_INVALID_ARGUMENT,
                  "clg_tensor_new: dims %s of %s elements do not fit in memory (size overflow)",
                  shape, clg_dtype_name(dtype));
        return NULL;
      }
      count *= (size_t)dims[i];
    }
  }
  size_t bytes = count * esize;
  clg_tensor *t = malloc(sizeof *t);
  clg_host_buf *buf = NULL;
  void (*release)(clg_host_buf *) = NULL;
  void *mem = t ? provider_take(bytes, &buf, &release) : NULL;
  if (!mem) {
    buf = NULL;
    mem = recycle_take(bytes);
  }
  if (!mem)
    mem = clg_aligned_alloc(TENSOR_ALIGN, bytes);
  if (!t || !mem) {
    free(t);
    clg_aligned_free(mem);
    char shape[256];
    dims_text(rank, dims, shape, sizeof shape);
    clg_error(CLG_RESOURCE_EXHAUSTED,
              "clg_tensor_new: out of host memory allocating %zu bytes for a %s tensor of shape %s",
              bytes, clg_dtype_name(dtype), shape);
    return NULL;
  }
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++)
    t->dims[i] = dims[i];
  t->count = count;
  t->bytes = bytes;
  t->data = mem;
  t->buf = buf;
  t->release = release;
  if (data && bytes)
    memcpy(mem, data, bytes);
  else if (bytes && zero)
    memset(mem, 0, bytes);
  return t;
}

clg_tensor *clg_tensor_new(clg_dtype dtype, int rank, const int64_t *dims, const void *data)
{
  return tensor_create(dtype, rank, dims, data, true);
}

clg_tensor *clg_tensor_new_uninit(clg_dtype dtype, int rank, const int64_t *dims)
{
  return tensor_create(dtype, rank, dims, NULL, false);
}

void clg_tensor_free(clg_tensor *t)
{
  if (!t)
    return;
  if (t->buf)
    t->release(t->buf);
  else if (!recycle_give(t->data, t->bytes))
    clg_aligned_free(t->data);
  free(t);
}

clg_dtype clg_tensor_dtype(const clg_tensor *t) { return t ? t->dtype : (clg_dtype)0; }

int clg_tensor_rank(const clg_tensor *t) { return t ? t->rank : 0; }

int64_t clg_tensor_dim(const clg_tensor *t, int i)
{
  if (!t || i < 0 || i >= t->rank)
    return -1;
  return t->dims[i];
}

size_t clg_tensor_count(const clg_tensor *t) { return t ? t->count : 0; }

size_t clg_tensor_bytes(const clg_tensor *t) { return t ? t->bytes : 0; }

void *clg_tensor_data(clg_tensor *t) { return t ? t->data : NULL; }

const void *clg_tensor_const_data(const clg_tensor *t) { return t ? t->data : NULL; }

char *clg_tensor_shape_string(const clg_tensor *t, char *buf, size_t size)
{
  if (!buf || size == 0)
    return buf;
  buf[0] = '\0';
  if (t)
    dims_text(t->rank, t->dims, buf, size);
  return buf;
}

/* --- IEEE half precision ------------------------------------------------------------ */

double clg_half_to_double(uint16_t h)
{
  int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0)
    v = ldexp(man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = ldexp(man | 0x400, exp - 25);
  return sign ? -v : v;
}

/* Rounds to the nearest half (ties to even), as a conversion would. */
uint16_t clg_half_from_double(double d)
{
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  if (isnan(d))
    return sign | 0x7e00;
  if (isinf(d)) /* frexp leaves the exponent unspecified for infinities */
    return sign | 0x7c00;
  if (a < 0x1p-14) /* subnormal: a multiple of 2^-24; 1024 * 2^-24 is the smallest normal */
    return sign | (uint16_t)rint(a * 0x1p24);
  int e;
  double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
  double m = rint(f * 2048.0);
  int exp = e - 1;
  if (m == 2048.0) {
    m = 1024.0;
    exp++;
  }
  if (exp > 15)
    return sign | 0x7c00;
  return (uint16_t)(sign | (unsigned)((exp + 15) << 10) | ((unsigned)m - 1024u));
}

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

static bool is_integer(clg_dtype d) { return d == CLG_INT32 || d == CLG_INT64; }

/* An int or bool element as numpy's str() writes it (bools as True/False). */
static void int_text(const clg_tensor *t, size_t off, char *buf, size_t size)
{
  if (t->dtype == CLG_BOOL)
    snprintf(buf, size, "%s", ((const uint8_t *)t->data)[off] ? "True" : "False");
  else if (t->dtype == CLG_INT32)
    snprintf(buf, size, "%d", (int)((const int32_t *)t->data)[off]);
  else
    snprintf(buf, size, "%lld", (long long)((const int64_t *)t->data)[off]);
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
