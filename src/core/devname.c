/* Device-name specifications with TensorFlow's grammar (DeviceNameUtils): parsing of full
 * and local names, formatting, merging and matching. See tf-semantics.md section 1. */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"

/* Error messages quote a specification whole up to SPEC_QUOTE_MAX characters, a longer one
 * as its first SPEC_QUOTE_KEEP and its length, and at most PART_QUOTE_MAX of the offending
 * part, so that a huge input still leaves the reason readable. */
#define SPEC_QUOTE_MAX 128
#define SPEC_QUOTE_KEEP 64
#define PART_QUOTE_MAX 100

static clg_code malformed(const char *spec, const char *fmt, ...) CLG_PRINTF(2, 3);

static clg_code malformed(const char *spec, const char *fmt, ...)
{
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  size_t len = strlen(spec);
  if (len <= SPEC_QUOTE_MAX)
    return clg_error(CLG_INVALID_ARGUMENT, "Malformed device specification '%s': %s", spec, why);
  return clg_error(CLG_INVALID_ARGUMENT,
                   "Malformed device specification '%.*s...' (%zu characters): %s", SPEC_QUOTE_KEEP,
                   spec, len, why);
}

/* Length of the text at p up to (not including) any character of stops, or the end. */
static size_t span_until(const char *p, const char *stops) { return strcspn(p, stops); }

/* printf arguments for quoting n characters at p, clipped. */
#define PART(p, n)                                                                                 \
  ((n) > PART_QUOTE_MAX ? PART_QUOTE_MAX : (int)(n)), (p), ((n) > PART_QUOTE_MAX ? "..." : "")

static bool consume(const char **p, const char *prefix)
{
  size_t n = strlen(prefix);
  if (strncmp(*p, prefix, n) != 0)
    return false;
  *p += n;
  return true;
}

static bool is_name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* A job name or device type: [A-Za-z][A-Za-z0-9_]*. what names the part ("job name"),
 * start points at the component (for "<what> of '/job:' is missing"), stops are the
 * characters that end the offending text quoted in a message. */
static clg_code take_name(const char *spec, const char *start, const char **p, const char *what,
                          const char *stops, char out[CLG_DEVNAME_FIELD])
{
  const char *s = *p;
  if (*s == '\0' || strchr(stops, *s))
    return malformed(spec, "%s of '%.*s%s' is missing", what, PART(start, (size_t)(s - start)));
  if (!isalpha((unsigned char)*s)) {
    size_t n = span_until(s, stops);
    return malformed(spec, "%s '%.*s%s' must start with a letter", what, PART(s, n));
  }
  size_t n = 1;
  while (is_name_char(s[n]))
    n++;
  if (n >= CLG_DEVNAME_FIELD)
    return malformed(spec, "%s '%.*s%s' is longer than %d characters", what, PART(s, n),
                     CLG_DEVNAME_FIELD - 1);
  memcpy(out, s, n);
  out[n] = '\0';
  *p = s + n;
  return CLG_OK;
}

/* Decimal digits into a non-negative int; overflow is an error (TensorFlow wraps). */
static clg_code take_number(const char *spec, const char *start, const char **p, const char *what,
                            int *out)
{
  const char *s = *p;
  if (!isdigit((unsigned char)*s)) {
    size_t n = span_until(s, "/");
    if (n == 0)
      return malformed(spec, "%s of '%.*s%s' is missing", what, PART(start, (size_t)(s - start)));
    return malformed(spec, "%s '%.*s%s' is not a non-negative number", what, PART(s, n));
  }
  long long v = 0;
  size_t n = 0;
  bool overflow = false;
  for (; isdigit((unsigned char)s[n]); n++) {
    if (!overflow) {
      v = v * 10 + (s[n] - '0');
      overflow = v > INT_MAX;
    }
  }
  if (overflow)
    return malformed(spec, "%s '%.*s%s' is out of range (at most %d)", what, PART(s, n), INT_MAX);
  *out = (int)v;
  *p = s + n;
  return CLG_OK;
}

/* "*" or a number after a component such as "/replica:" or "/gpu:". */
static clg_code take_number_or_star(const char *spec, const char *start, const char **p,
                                    const char *what, bool *has, int *out)
{
  if (consume(p, "*")) {
    *has = false;
    return CLG_OK;
  }
  clg_code code = take_number(spec, start, p, what, out);
  *has = code == CLG_OK;
  return code;
}

/* ParseFullName. On failure *out is left with nothing set. */
static clg_code parse_full(const char *spec, clg_devname *out)
{
  clg_devname n;
  clg_code code = CLG_OK;
  memset(&n, 0, sizeof n);
  memset(out, 0, sizeof *out);
  const char *p = spec;
  if (strcmp(p, "/") == 0)
    return CLG_OK;
  while (*p) {
    bool progress = false;
    const char *start = p;
    if (consume(&p, "/job:")) {
      n.has_job = !consume(&p, "*");
      if (n.has_job && (code = take_name(spec, start, &p, "job name", "/", n.job)) != CLG_OK)
        return code;
      progress = true;
    }
    start = p;
    if (consume(&p, "/replica:")) {
      code = take_number_or_star(spec, start, &p, "replica", &n.has_replica, &n.replica);
      if (code != CLG_OK)
        return code;
      progress = true;
    }
    start = p;
    if (consume(&p, "/task:")) {
      code = take_number_or_star(spec, start, &p, "task", &n.has_task, &n.task);
      if (code != CLG_OK)
        return code;
      progress = true;
    }
    start = p;
    if (consume(&p, "/device:")) {
      n.has_type = !consume(&p, "*");
      if (n.has_type && (code = take_name(spec, start, &p, "device type", "/:", n.type)) != CLG_OK)
        return code;
      if (!consume(&p, ":")) {
        n.has_id = false;
      } else {
        code = take_number_or_star(spec, start, &p, "id", &n.has_id, &n.id);
        if (code != CLG_OK)
          return code;
      }
      progress = true;
    }
    /* Legacy "/cpu:N" and "/gpu:N" (either case) mean "/device:CPU:N", "/device:GPU:N". */
    start = p;
    if (consume(&p, "/cpu:") || consume(&p, "/CPU:")) {
      n.has_type = true;
      strcpy(n.type, "CPU");
      code = take_number_or_star(spec, start, &p, "id", &n.has_id, &n.id);
      if (code != CLG_OK)
        return code;
      progress = true;
    }
    start = p;
    if (consume(&p, "/gpu:") || consume(&p, "/GPU:")) {
      n.has_type = true;
      strcpy(n.type, "GPU");
      code = take_number_or_star(spec, start, &p, "id", &n.has_id, &n.id);
      if (code != CLG_OK)
        return code;
      progress = true;
    }
    if (!progress) {
      /* Quote the offending component: up to the next '/' after its first character. */
      size_t len = 1 + span_until(p + 1, "/");
      if (*p == '/' && (p[1] == '/' || p[1] == '\0'))
        return malformed(spec, "unexpected '/' (empty component)");
      return malformed(spec, "unexpected '%.*s%s'", PART(p, len));
    }
  }
  *out = n;
  return CLG_OK;
}

/* ParseLocalName: "<type>:<id>", e.g. "GPU:0". */
static clg_code parse_local(const char *spec, clg_devname *out)
{
  clg_devname n;
  memset(&n, 0, sizeof n);
  memset(out, 0, sizeof *out);
  const char *p = spec;
  clg_code code = take_name(spec, spec, &p, "device type", "/:", n.type);
  if (code != CLG_OK)
    return code;
  if (!consume(&p, ":"))
    return malformed(spec, "expected '<type>:<id>' or a name starting with '/'");
  code = take_number(spec, spec, &p, "id", &n.id);
  if (code != CLG_OK)
    return code;
  if (*p)
    return malformed(spec, "unexpected '%.*s%s' after the id", PART(p, strlen(p)));
  n.has_type = n.has_id = true;
  *out = n;
  return CLG_OK;
}

static clg_code check_args(const char *text, clg_devname *out)
{
  if (!text)
    return clg_error(CLG_INVALID_ARGUMENT, "device specification is NULL");
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "out is NULL (parsing device specification '%.*s%s')",
                     SPEC_QUOTE_MAX, text, strlen(text) > SPEC_QUOTE_MAX ? "..." : "");
  return CLG_OK;
}

clg_code clg_devname_parse(const char *text, clg_devname *out)
{
  clg_code code = check_args(text, out);
  return code != CLG_OK ? code : parse_full(text, out);
}

clg_code clg_devname_parse_full_or_local(const char *text, clg_devname *out)
{
  clg_code code = check_args(text, out);
  if (code != CLG_OK)
    return code;
  code = parse_full(text, out);
  /* Only a name without a leading '/' can be local; its error then says more. */
  if (code != CLG_OK && text[0] != '/')
    code = parse_local(text, out);
  return code;
}

clg_code clg_devname_parse_scope(const char *text, clg_devname *out)
{
  clg_code code = clg_devname_parse_full_or_local(text, out);
  if (code != CLG_OK)
    return code;
  /* Python's DeviceSpec upper-cases exactly "cpu" and "gpu" (backwards compatibility). */
  if (out->has_type && (strcmp(out->type, "cpu") == 0 || strcmp(out->type, "gpu") == 0)) {
    for (char *c = out->type; *c; c++)
      *c = (char)toupper((unsigned char)*c);
  }
  return CLG_OK;
}

/* Appends formatted text at *pos, never past size - 1; *pos tracks the would-be length. */
static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...) CLG_PRINTF(4, 5);

static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  size_t at = *pos < size ? *pos : size - 1;
  int n = vsnprintf(buf + at, size - at, fmt, ap);
  va_end(ap);
  if (n > 0)
    *pos = at + (size_t)n;
}

char *clg_devname_format(const clg_devname *n, char *buf, size_t size)
{
  if (!buf || size == 0)
    return buf;
  buf[0] = '\0';
  if (!n)
    return buf;
  size_t pos = 0;
  if (n->has_job)
    put(buf, size, &pos, "/job:%s", n->job);
  if (n->has_replica)
    put(buf, size, &pos, "/replica:%d", n->replica);
  if (n->has_task)
    put(buf, size, &pos, "/task:%d", n->task);
  if (n->has_type) {
    if (n->has_id)
      put(buf, size, &pos, "/device:%s:%d", n->type, n->id);
    else
      put(buf, size, &pos, "/device:%s:*", n->type);
  }
  return buf;
}

/* Room for the longest formatted name: two 63-character names and three ints. */
#define NAME_TEXT_MAX 256

static clg_code merge_conflict(const char *what, const clg_devname *t, const clg_devname *o)
{
  char a[NAME_TEXT_MAX], b[NAME_TEXT_MAX];
  return clg_error(CLG_INVALID_ARGUMENT, "Cannot merge devices with incompatible %s: '%s' and '%s'",
                   what, clg_devname_format(t, a, sizeof a), clg_devname_format(o, b, sizeof b));
}

clg_code clg_devname_merge(clg_devname *target, const clg_devname *other, bool allow_soft_placement)
{
  if (!target || !other)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_devname_merge: %s is NULL",
                     !target ? "target" : "other");
  /* Work on a copy so that a failed merge leaves target untouched; messages format the
   * partly merged copy, as TensorFlow's do. */
  clg_devname w = *target;
  if (other->has_job) {
    if (w.has_job && strcmp(w.job, other->job) != 0)
      return merge_conflict("jobs", &w, other);
    w.has_job = true;
    memcpy(w.job, other->job, sizeof w.job);
  }
  if (other->has_replica) {
    if (w.has_replica && w.replica != other->replica)
      return merge_conflict("replicas", &w, other);
    w.has_replica = true;
    w.replica = other->replica;
  }
  if (other->has_task) {
    if (w.has_task && w.task != other->task)
      return merge_conflict("tasks", &w, other);
    w.has_task = true;
    w.task = other->task;
  }
  if (other->has_type) {
    if (w.has_type && strcmp(w.type, other->type) != 0) {
      if (!allow_soft_placement)
        return merge_conflict("types", &w, other);
      /* Soft placement: forget the device entirely and let the placer choose. */
      w.has_type = false;
      w.has_id = false;
      *target = w;
      return CLG_OK;
    }
    w.has_type = true;
    memcpy(w.type, other->type, sizeof w.type);
  }
  if (other->has_id) {
    if (w.has_id && w.id != other->id) {
      if (!allow_soft_placement)
        return merge_conflict("ids", &w, other);
      w.has_id = false;
      *target = w;
      return CLG_OK;
    }
    w.has_id = true;
    w.id = other->id;
  }
  *target = w;
  return CLG_OK;
}

void clg_devname_merge_override(clg_devname *target, const clg_devname *other)
{
  if (!target || !other)
    return;
  if (other->has_job) {
    target->has_job = true;
    memcpy(target->job, other->job, sizeof target->job);
  }
  if (other->has_replica) {
    target->has_replica = true;
    target->replica = other->replica;
  }
  if (other->has_task) {
    target->has_task = true;
    target->task = other->task;
  }
  if (other->has_type) {
    target->has_type = true;
    memcpy(target->type, other->type, sizeof target->type);
  }
  if (other->has_id) {
    target->has_id = true;
    target->id = other->id;
  }
}

void clg_devname_merge_unset(clg_devname *target, const clg_devname *other)
{
  if (!target || !other)
    return;
  if (other->has_job && !target->has_job) {
    target->has_job = true;
    memcpy(target->job, other->job, sizeof target->job);
  }
  if (other->has_replica && !target->has_replica) {
    target->has_replica = true;
    target->replica = other->replica;
  }
  if (other->has_task && !target->has_task) {
    target->has_task = true;
    target->task = other->task;
  }
  if (other->has_type && !target->has_type) {
    target->has_type = true;
    memcpy(target->type, other->type, sizeof target->type);
  }
  if (other->has_id && !target->has_id) {
    target->has_id = true;
    target->id = other->id;
  }
}

bool clg_devname_is_specification(const clg_devname *less_specific,
                                  const clg_devname *more_specific)
{
  const clg_devname *l = less_specific, *m = more_specific;
  if (!l || !m)
    return false;
  if (l->has_job && (!m->has_job || strcmp(l->job, m->job) != 0))
    return false;
  if (l->has_replica && (!m->has_replica || l->replica != m->replica))
    return false;
  if (l->has_task && (!m->has_task || l->task != m->task))
    return false;
  if (l->has_type && (!m->has_type || strcmp(l->type, m->type) != 0))
    return false;
  if (l->has_id && (!m->has_id || l->id != m->id))
    return false;
  return true;
}

bool clg_devname_matches(const clg_devname *pattern, const clg_devname *name)
{
  /* TensorFlow CHECKs that name is complete; here a field missing from name simply does
   * not match, which is the same test as IsSpecification. */
  return clg_devname_is_specification(pattern, name);
}

bool clg_devname_compatible(const clg_devname *a, const clg_devname *b)
{
  if (!a || !b)
    return false;
  if (a->has_job && b->has_job && strcmp(a->job, b->job) != 0)
    return false;
  if (a->has_replica && b->has_replica && a->replica != b->replica)
    return false;
  if (a->has_task && b->has_task && a->task != b->task)
    return false;
  if (a->has_type && b->has_type && strcmp(a->type, b->type) != 0)
    return false;
  if (a->has_id && b->has_id && a->id != b->id)
    return false;
  return true;
}

bool clg_devname_is_empty(const clg_devname *n)
{
  return !n || !(n->has_job || n->has_replica || n->has_task || n->has_type || n->has_id);
}
