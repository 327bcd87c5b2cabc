/* Small utilities: growable strings, aligned memory, a monotonic clock. */
#if defined(__linux__)
#define _DEFAULT_SOURCE 1 /* MADV_HUGEPAGE */
#endif
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/core.h"

void clg_strbuf_init(clg_strbuf *s) { memset(s, 0, sizeof *s); }

static bool strbuf_reserve(clg_strbuf *s, size_t extra)
{
  if (s->failed)
    return false;
  if (s->len + extra + 1 <= s->cap)
    return true;
  size_t cap = s->cap ? s->cap : 128;
  while (cap < s->len + extra + 1)
    cap *= 2;
  char *p = realloc(s->buf, cap);
  if (!p) {
    s->failed = true;
    return false;
  }
  s->buf = p;
  s->cap = cap;
  return true;
}

void clg_strbuf_printf(clg_strbuf *s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !strbuf_reserve(s, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  s->len += (size_t)n;
}

void clg_strbuf_append(clg_strbuf *s, const char *text)
{
  size_t n = strlen(text);
  if (!strbuf_reserve(s, n))
    return;
  memcpy(s->buf + s->len, text, n + 1);
  s->len += n;
}

/* The length of the well-formed UTF-8 sequence at p (1-4), or 0 when p starts none: a stray
 * continuation byte, a cut sequence, an overlong form, a surrogate or more than U+10FFFF. */
static size_t utf8_sequence(const unsigned char *p)
{
  if (p[0] < 0x80)
    return 1;
  size_t n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
             : (p[0] & 0xf0) == 0xe0        ? 3
             : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                            : 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80)
      return 0;
  /* The second byte's range rules out overlong forms, surrogates and too large code points. */
  if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 3 && p[0] == 0xed && p[1] > 0x9f) ||
      (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] > 0x8f))
    return 0;
  return n;
}

void clg_strbuf_json_string(clg_strbuf *s, const char *text)
{
  clg_strbuf_append(s, "\"");
  const unsigned char *p = (const unsigned char *)(text ? text : "");
  while (*p) {
    size_t n = utf8_sequence(p);
    if (*p == '"' || *p == '\\')
      clg_strbuf_printf(s, "\\%c", *p);
    else if (*p == '\n' || *p == '\t' || *p == '\r')
      clg_strbuf_printf(s, "\\%c", *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r');
    else if (*p < 0x20)
      clg_strbuf_printf(s, "\\u%04x", (unsigned)*p);
    else if (n == 0)
      clg_strbuf_append(s, "\\ufffd");
    else
      clg_strbuf_printf(s, "%.*s", (int)n, (const char *)p);
    p += n ? n : 1;
  }
  clg_strbuf_append(s, "\"");
}

char *clg_strbuf_take(clg_strbuf *s)
{
  char *out = NULL;
  if (!s->failed) {
    out = s->buf ? s->buf : clg_strdup("");
    s->buf = NULL;
  }
  clg_strbuf_free(s);
  return out;
}

void clg_strbuf_free(clg_strbuf *s)
{
  free(s->buf);
  clg_strbuf_init(s);
}

char *clg_strdup(const char *s)
{
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (!p) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory copying a %zu-byte string", n);
    return NULL;
  }
  return memcpy(p, s, n);
}

char *clg_double_text(double v, char buf[CLG_DOUBLE_TEXT])
{
  for (int digits = 6; digits <= 17; digits++) {
    snprintf(buf, CLG_DOUBLE_TEXT, "%.*g", digits, v);
    if (isnan(v) || strtod(buf, NULL) == v)
      break;
  }
  return buf;
}

/* Buffers of 4 MiB and more (a model's weights, a batch's activations) start on a 2 MiB
 * boundary and ask for transparent huge pages, which Debian's kernels give on request (THP
 * "madvise"): a kernel that streams a 9 MiB filter otherwise misses the TLB on most of its
 * pages (resnet18 at batch 1: its convolutions 5% slower on 4 KiB pages). */
#define HUGE_MIN ((size_t)4 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)

void *clg_aligned_alloc(size_t alignment, size_t size)
{
  void *p = NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (size >= HUGE_MIN && alignment <= HUGE_ALIGN) {
    if (posix_memalign(&p, HUGE_ALIGN, size) != 0)
      return NULL;
    (void)madvise(p, size & ~(HUGE_ALIGN - 1), MADV_HUGEPAGE); /* a hint: failure is harmless */
    return p;
  }
#endif
  if (posix_memalign(&p, alignment, size ? size : 1) != 0)
    return NULL;
  return p;
}

void clg_aligned_free(void *p) { free(p); }

int clg_env_mib(const char *name, uint64_t *bytes, const char **raw)
{
  const char *v = getenv(name);
  *raw = v;
  if (!v || !*v)
    return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long mb = strtoull(v, &end, 10);
  if (*end || errno || v[0] == '-' || mb > (UINT64_MAX >> 20))
    return 0;
  *bytes = (uint64_t)mb << 20;
  return 1;
}

uint64_t clg_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
