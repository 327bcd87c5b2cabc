/* Status codes and the thread-local last error message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define CLG_MSG_MAX 4096

static _Thread_local clg_code last_code = CLG_OK;
static _Thread_local char last_msg[CLG_MSG_MAX];

static const char *const code_names[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS"};

static const char *const code_titles[] = {
    "OK",        "Cancelled",      "Unknown",           "Invalid argument",   "Deadline exceeded",
    "Not found", "Already exists", "Permission denied", "Resource exhausted", "Failed precondition",
    "Aborted",   "Out of range",   "Unimplemented",     "Internal",           "Unavailable",
    "Data loss"};

static const char *const code_classes[] = {"OK",
                                           "CancelledError",
                                           "UnknownError",
                                           "InvalidArgumentError",
                                           "DeadlineExceededError",
                                           "NotFoundError",
                                           "AlreadyExistsError",
                                           "PermissionDeniedError",
                                           "ResourceExhaustedError",
                                           "FailedPreconditionError",
                                           "AbortedError",
                                           "OutOfRangeError",
                                           "UnimplementedError",
                                           "InternalError",
                                           "UnavailableError",
                                           "DataLossError"};

static bool code_valid(clg_code code) { return (unsigned)code <= (unsigned)CLG_DATA_LOSS; }

const char *clg_code_name(clg_code code)
{
  return code_valid(code) ? code_names[code] : "UNKNOWN_CODE";
}

const char *clg_code_title(clg_code code)
{
  return code_valid(code) ? code_titles[code] : "Unknown";
}

const char *clg_code_error_class(clg_code code)
{
  return code_valid(code) ? code_classes[code] : "UnknownError";
}

const char *clg_last_error(void) { return last_msg; }

clg_code clg_last_code(void) { return last_code; }

/* Quoted input longer than this is shown as its first QUOTE_KEEP characters, "...", and its
 * length, so that a huge name or spec never pushes the reason out of the message. */
#define QUOTE_KEEP 64

typedef struct out_buf {
  char *p;
  size_t cap, len; /* len < cap; p[len] == '\0' */
} out_buf;

static void out_put(out_buf *o, const char *s, size_t n)
{
  if (n > o->cap - 1 - o->len)
    n = o->cap - 1 - o->len;
  memcpy(o->p + o->len, s, n);
  o->len += n;
  o->p[o->len] = '\0';
}

/* Copies src to o, shortening every single-quoted run longer than QUOTE_KEEP. */
static void shorten_quoted(out_buf *o, const char *src)
{
  const char *p = src;
  for (;;) {
    const char *open = strchr(p, '\'');
    const char *close = open ? strchr(open + 1, '\'') : NULL;
    if (!close) {
      out_put(o, p, strlen(p));
      return;
    }
    size_t inside = (size_t)(close - open - 1);
    if (inside <= QUOTE_KEEP) {
      out_put(o, p, (size_t)(close + 1 - p));
    } else {
      size_t keep = QUOTE_KEEP;
      /* Do not cut a UTF-8 sequence in two. */
      while (keep > 0 && ((unsigned char)open[1 + keep] & 0xC0) == 0x80)
        keep--;
      out_put(o, p, (size_t)(open + 1 + keep - p));
      char tail[64];
      int n = snprintf(tail, sizeof tail, "...' (%zu characters)", inside);
      out_put(o, tail, (size_t)n);
    }
    p = close + 1;
  }
}

/* Fits text (len >= cap) into o: quoted runs shortened, then, if still too long, the middle
 * cut so that the end, where the reason is, survives. */
static void fit_message(out_buf *o, const char *text)
{
  shorten_quoted(o, text);
  size_t short_len = o->len;
  if (short_len < o->cap - 1)
    return;
  /* Still full: redo as head + " ... " + the last 1024 characters of the text. */
  size_t len = strlen(text), tail = 1024;
  static const char gap[] = " ... ";
  o->len = 0;
  out_put(o, text, o->cap - 1 - tail - (sizeof gap - 1));
  out_put(o, gap, sizeof gap - 1);
  out_put(o, text + len - tail, tail);
}

clg_code clg_error_v(clg_code code, const char *fmt, va_list ap)
{
  last_code = code;
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  if (n >= (int)sizeof last_msg) {
    char *full = malloc((size_t)n + 1);
    if (full) {
      vsnprintf(full, (size_t)n + 1, fmt, again);
      out_buf o = {last_msg, sizeof last_msg, 0};
      last_msg[0] = '\0';
      fit_message(&o, full);
      free(full);
    }
  }
  va_end(again);
  return code;
}

clg_code clg_error(clg_code code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  clg_error_v(code, fmt, ap);
  va_end(ap);
  return code;
}

clg_code clg_error_prefix(const char *fmt, ...)
{
  /* The prefix is context (which node, which scope): its quoted input is shortened and it
   * gets only the room the message leaves, so the reason after it is kept whole. */
  char old[CLG_MSG_MAX];
  memcpy(old, last_msg, sizeof old);
  size_t old_len = strlen(old);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char small[CLG_MSG_MAX];
  char *prefix = n < (int)sizeof small ? small : malloc((size_t)n + 1);
  size_t size = prefix == small ? sizeof small : (size_t)n + 1;
  if (!prefix) {
    prefix = small;
    size = sizeof small;
  }
  va_start(ap, fmt);
  vsnprintf(prefix, size, fmt, ap);
  va_end(ap);
  out_buf o = {last_msg, sizeof last_msg - old_len, 0};
  last_msg[0] = '\0';
  shorten_quoted(&o, prefix);
  if (prefix != small)
    free(prefix);
  memcpy(last_msg + o.len, old, old_len + 1);
  return last_code;
}

void clg_error_clear(void)
{
  last_code = CLG_OK;
  last_msg[0] = '\0';
}
