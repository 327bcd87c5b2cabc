/* Host tensors: dtype, shape, 64-byte aligned row-major data (numpy-style printing is in
 * tensor_print.c). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/tensor_layout.h"

#define TENSOR_ALIGN 64

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
  case CLG_UINT8:
  case CLG_INT8:
    return 1;
  case CLG_INT16:
  case CLG_UINT16:
    return 2;
  case CLG_UINT32:
    return 4;
  case CLG_UINT64:
    return 8;
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
  case CLG_UINT8:
    return "uint8";
  case CLG_INT8:
    return "int8";
  case CLG_INT16:
    return "int16";
  case CLG_UINT16:
    return "uint16";
  case CLG_UINT32:
    return "uint32";
  case CLG_UINT64:
    return "uint64";
  }
  return "invalid";
}

bool clg_dtype_is_integer(clg_dtype d)
{
  return d == CLG_INT8 || d == CLG_INT16 || d == CLG_INT32 || d == CLG_INT64 ||
         clg_dtype_is_unsigned(d);
}

bool clg_dtype_is_unsigned(clg_dtype d)
{
  return d == CLG_UINT8 || d == CLG_UINT16 || d == CLG_UINT32 || d == CLG_UINT64;
}

int64_t clg_int_load(clg_dtype d, const void *p, size_t i)
{
  switch (d) {
  case CLG_INT8:
    return ((const int8_t *)p)[i];
  case CLG_INT16:
    return ((const int16_t *)p)[i];
  case CLG_INT32:
    return ((const int32_t *)p)[i];
  case CLG_INT64:
    return ((const int64_t *)p)[i];
  default: /* unsigned or bool; 0 for a float dtype */
    return clg_dtype_is_unsigned(d) || d == CLG_BOOL ? (int64_t)clg_uint_load(d, p, i) : 0;
  }
}

uint64_t clg_uint_load(clg_dtype d, const void *p, size_t i)
{
  switch (d) {
  case CLG_BOOL:
  case CLG_UINT8:
    return ((const uint8_t *)p)[i];
  case CLG_UINT16:
    return ((const uint16_t *)p)[i];
  case CLG_UINT32:
    return ((const uint32_t *)p)[i];
  case CLG_UINT64:
    return ((const uint64_t *)p)[i];
  default: /* signed; 0 for a float dtype */
    return clg_dtype_is_integer(d) ? (uint64_t)clg_int_load(d, p, i) : 0;
  }
}

void clg_int_store(clg_dtype d, void *p, size_t i, uint64_t v)
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
  case 8:
    ((uint64_t *)p)[i] = v;
    break;
  default:
    break;
  }
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
