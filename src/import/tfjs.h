/* What the two tfjs readers share inside src/import only: tfjs.c (model.json's topology,
 * attributes and signature) and tfjs_weights.c (its weightsManifest and .bin shards). The
 * helpers are static (each file uses all of them and keeps its call sites); the module's door
 * stays import_internal.h. */
#ifndef CLG_IMPORT_TFJS_H
#define CLG_IMPORT_TFJS_H

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"

typedef struct tfjs_ctx {
  const char *file;
  clg_imp_model *m;
} tfjs_ctx;

static clg_code oom(const tfjs_ctx *c)
{
  return clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of host memory", c->file);
}

static clg_code bad(const tfjs_ctx *c, const char *what, const char *expected)
{
  return clg_error(CLG_INVALID_ARGUMENT, "%s: %s is not %s", c->file, what, expected);
}

/* --- JSON mapping helpers ------------------------------------------------------------------- */

/* protobuf's JSON mapping writes int64 as a string, int32 as a number; both are accepted. */
static bool json_int(const json_t *v, int64_t *out)
{
  if (json_is_integer(v)) {
    *out = (int64_t)json_integer_value(v);
    return true;
  }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || errno)
      return false;
    *out = x;
    return true;
  }
  return false;
}

static bool json_float(const json_t *v, double *out)
{
  if (json_is_number(v)) {
    *out = json_number_value(v);
    return true;
  }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (strcmp(s, "NaN") == 0)
      *out = NAN;
    else if (strcmp(s, "Infinity") == 0)
      *out = INFINITY;
    else if (strcmp(s, "-Infinity") == 0)
      *out = -INFINITY;
    else {
      char *end;
      *out = strtod(s, &end);
      return *s && !*end;
    }
    return true;
  }
  return false;
}

/* Reads the weights of manifest (weightsManifest) from base_dir (NULL or "": ".") into the
 * Const nodes of c->m named like them (tfjs_weights.c). */
clg_code clg_imp_tfjs_weights(const tfjs_ctx *c, const json_t *manifest, const char *base_dir);

#endif
