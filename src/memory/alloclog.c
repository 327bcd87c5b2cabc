/* The allocator's messages: log lines queued while its lock is held and written once it is
 * dropped (a log sink may be slow, or allocate), and TensorFlow's readable byte counts. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "memory/memory_internal.h"

void clg_logq_add(clg_logq *q, clg_log_level level, char *text)
{
  if (!text)
    return;
  if (q->n == 4) {
    free(text);
    return;
  }
  q->level[q->n] = level;
  q->text[q->n++] = text;
}

void clg_logq_flush(clg_logq *q)
{
  for (int i = 0; i < q->n; i++) {
    clg_log(q->level[i], "%s", q->text[i]);
    free(q->text[i]);
  }
  q->n = 0;
}

char *clg_logq_format(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

const char *clg_logq_bytes(uint64_t n, char *buf, size_t size)
{
  static const char units[] = "KMGTPE";
  if (n < 1024) {
    snprintf(buf, size, "%lluB", (unsigned long long)n);
    return buf;
  }
  double v = (double)n / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, size, "%.2f%ciB", v, units[u]);
  return buf;
}
