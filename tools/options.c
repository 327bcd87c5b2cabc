/* The option parser of every clgraph command (see tool.h): one table per command, one
 * wording per kind of mistake. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tool.h"

static bool is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

static bool is_option(const char *a) { return a[0] == '-' && a[1] != '\0'; }

static clg_tool_opt *find(clg_tool_opt *opts, const char *a)
{
  for (; opts && opts->name; opts++)
    if (strcmp(opts->name, a) == 0 || (opts->alias && strcmp(opts->alias, a) == 0))
      return opts;
  return NULL;
}

/* Whether argv[i] is a value for o: there is one, and it is not one of the command's options
 * or help ("--trace --json" forgot the file). */
static bool has_value(clg_tool_opt *opts, const clg_tool_opt *o, int argc, char **argv, int i)
{
  return o->kind != CLG_TOOL_FLAG && i < argc && !find(opts, argv[i]) && !is_help(argv[i]);
}

/* "clgraph <command>: <reason>", then (with_usage) a blank line and the usage. */
static int refuse(const clg_tool_cmd *cmd, bool with_usage, const char *fmt, ...) CLG_PRINTF(3, 4);
static int refuse(const clg_tool_cmd *cmd, bool with_usage, const char *fmt, ...)
{
  FILE *err = cmd->err ? cmd->err : stderr;
  va_list ap;
  va_start(ap, fmt);
  fprintf(err, "clgraph %s: ", cmd->name);
  vfprintf(err, fmt, ap);
  va_end(ap);
  fputc('\n', err);
  if (with_usage && cmd->usage) {
    fputc('\n', err);
    cmd->usage(err);
  }
  return 2;
}

/* [+-]digits and nothing else (strtoll alone takes leading spaces and stops at garbage). */
static bool whole_number(const char *s, size_t n, long long *out)
{
  size_t i = n > 0 && (s[0] == '+' || s[0] == '-');
  if (i == n || n > 40)
    return false;
  for (size_t k = i; k < n; k++)
    if (s[k] < '0' || s[k] > '9')
      return false;
  char buf[48];
  memcpy(buf, s, n);
  buf[n] = '\0';
  errno = 0;
  *out = strtoll(buf, NULL, 10);
  return errno == 0;
}

/* A decimal number: [+-]digits[.digits][e[+-]digits] with a digit somewhere before the
 * exponent; no spaces, hexadecimal, "inf" or "nan" (strtod takes them all). */
static bool decimal_number(const char *s, double *out)
{
  const char *p = s + (*s == '+' || *s == '-');
  size_t digits = strspn(p, "0123456789");
  p += digits;
  if (*p == '.') {
    size_t frac = strspn(p + 1, "0123456789");
    digits += frac;
    p += 1 + frac;
  }
  if (!digits)
    return false;
  if (*p == 'e' || *p == 'E') {
    p += 1 + (p[1] == '+' || p[1] == '-');
    size_t exp = strspn(p, "0123456789");
    if (!exp)
      return false;
    p += exp;
  }
  if (*p)
    return false;
  *out = strtod(s, NULL);
  return true;
}

static int parse_list(const clg_tool_cmd *cmd, clg_tool_opt *o, const char *text)
{
  long long lo = (long long)o->min, hi = (long long)o->max;
  int n = 0;
  if (*text) {
    for (const char *s = text;; n++) {
      size_t len = strcspn(s, ",");
      long long v = 0;
      const char *why = NULL;
      if (len == 0)
        why = "is empty";
      else if (n == o->max_items)
        why = "is one too many";
      else if (!whole_number(s, len, &v) || v < lo || v > hi)
        why = "is not a whole number in range";
      if (why)
        return refuse(cmd, false,
                      "%s '%s': element %d %s; want a comma list of up to %d whole "
                      "numbers in %lld..%lld",
                      o->name, text, n + 1, why, o->max_items, lo, hi);
      o->list[n] = (int)v;
      if (!s[len])
        break;
      s += len + 1;
    }
    n++;
  }
  *o->count = n;
  return CLG_TOOL_RUN;
}

/* Converts the value of o into its variable; the exit status 2 after a message, or
 * CLG_TOOL_RUN. */
static int take_value(const clg_tool_cmd *cmd, clg_tool_opt *o, const char *text)
{
  switch (o->kind) {
  case CLG_TOOL_INT: {
    long long v;
    if (!whole_number(text, strlen(text), &v) || v < (long long)o->min || v > (long long)o->max)
      return refuse(cmd, false, "%s '%s': want %lld..%lld", o->name, text, (long long)o->min,
                    (long long)o->max);
    *o->integer = (int)v;
    return CLG_TOOL_RUN;
  }
  case CLG_TOOL_FLOAT: {
    double v;
    if (!decimal_number(text, &v) || !(v >= o->min && v <= o->max))
      return refuse(cmd, false, "%s '%s': want a number in %g..%g", o->name, text, o->min, o->max);
    *o->number = v;
    return CLG_TOOL_RUN;
  }
  case CLG_TOOL_LIST:
    return parse_list(cmd, o, text);
  case CLG_TOOL_STRING:
    *o->text = text;
    return CLG_TOOL_RUN;
  case CLG_TOOL_FLAG:
  case CLG_TOOL_REPEAT:
    break;
  }
  return refuse(cmd, false, "%s: this option's kind is unknown (a bug of clgraph)", o->name);
}

int clg_tool_parse(clg_tool_cmd *cmd, int argc, char **argv)
{
  cmd->num_args = 0;
  for (clg_tool_opt *o = cmd->opts; o && o->name; o++) {
    o->given = false;
    o->value = NULL;
  }
  /* Help first, whatever else is wrong; a valued option's value is not an option. */
  for (int i = 1; i < argc; i++) {
    clg_tool_opt *o = find(cmd->opts, argv[i]);
    if (o && has_value(cmd->opts, o, argc, argv, i + 1))
      i++;
    else if (!o && is_help(argv[i])) {
      if (cmd->usage)
        cmd->usage(cmd->out ? cmd->out : stdout);
      return 0;
    }
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!is_option(a)) {
      if (cmd->num_args >= cmd->max_args ||
          cmd->num_args >= (int)(sizeof cmd->args / sizeof cmd->args[0]))
        return refuse(cmd, true, "unexpected argument '%s'", a);
      cmd->args[cmd->num_args++] = a;
      continue;
    }
    clg_tool_opt *o = find(cmd->opts, a);
    if (!o)
      return refuse(cmd, true, "unknown option '%s'", a);
    if (o->kind != CLG_TOOL_FLAG && !has_value(cmd->opts, o, argc, argv, i + 1))
      return refuse(cmd, true, "%s needs a value", a);
    const char *value = o->kind == CLG_TOOL_FLAG ? NULL : argv[++i];
    if (o->kind == CLG_TOOL_REPEAT) {
      if (!o->given)
        *o->count = 0;
      if (*o->count >= o->max_items)
        return refuse(cmd, true, "%s given more than %d times", o->name, o->max_items);
      o->given = true;
      o->value = value;
      o->texts[(*o->count)++] = value;
      continue;
    }
    if (o->given && o->kind == CLG_TOOL_FLAG)
      return refuse(cmd, true, "%s given twice", o->name);
    if (o->given)
      return refuse(cmd, true, "%s given twice ('%s', then '%s')", o->name, o->value, value);
    o->given = true;
    o->value = value;
    if (o->kind == CLG_TOOL_FLAG) {
      *o->flag = true;
      continue;
    }
    int rc = take_value(cmd, o, value);
    if (rc != CLG_TOOL_RUN)
      return rc;
  }
  for (clg_tool_opt *o = cmd->opts; o && o->name; o++)
    if (o->required && !o->given)
      return o->help ? refuse(cmd, true, "%s %s is required (%s)", o->name,
                              o->meta ? o->meta : "VALUE", o->help)
                     : refuse(cmd, true, "%s %s is required", o->name, o->meta ? o->meta : "VALUE");
  return CLG_TOOL_RUN;
}

bool clg_tool_given(const clg_tool_opt *opts, const char *name)
{
  for (; opts && opts->name; opts++)
    if (strcmp(opts->name, name) == 0)
      return opts->given;
  return false;
}
