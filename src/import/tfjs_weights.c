/* A TensorFlow.js graph model's weights (weightsManifest and its .bin shards), as tfjs loads
 * them: the shards of all groups are one byte stream in manifest order, each group's weights
 * laid end to end in its own shards; quantized weights are dequantized here (uint8/uint16:
 * q * scale + min, float16: to float32), and a weight named like a Const node is its value.
 * The topology is read by tfjs.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/tfjs.h"

/* The NodeDef attribute a weight fills (Const's value, as tfjs's converter leaves it empty). */
static const char *const const_value_attr = "value";

/* --- weights ----------------------------------------------------------------------------- */

static clg_imp_node *find_node(clg_imp_model *m, const char *name)
{
  for (int i = 0; i < m->num_nodes; i++)
    if (strcmp(m->nodes[i].name, name) == 0)
      return &m->nodes[i];
  return NULL;
}

static bool weight_dtype(const char *s, int *tf)
{
  static const struct {
    const char *js;
    int tf;
  } map[] = {{"float32", 1}, {"int32", 3}, {"bool", 10},   {"float16", 19}, {"int64", 9},
             {"uint8", 4},   {"int8", 6},  {"uint16", 17}, {"int16", 5},    {"float64", 2}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(s, map[i].js) == 0) {
      *tf = map[i].tf;
      return true;
    }
  return false;
}

/* IEEE half to float, exactly (every half is a float), by bits: the weights of real models are
 * mostly float16, and this runs once per element at import. */
static float half_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0 && mant == 0)
    bits = sign;
  else if (exp == 0) { /* subnormal: normalise */
    uint32_t e = 113;
    while (!(mant & 0x400)) {
      mant <<= 1;
      e--;
    }
    bits = sign | e << 23 | (mant & 0x3ff) << 13;
  } else if (exp == 31)
    bits = sign | 0x7f800000u | mant << 13;
  else
    bits = sign | (exp + 112) << 23 | mant << 13;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* The dtype a Const declares: its dtype attr, else its value tensor's; 0 when neither, or when
 * the two disagree (then the Const refuses its value, as tools/tfjs_to_pb.py does). */
static int declared_dtype(const clg_imp_node *n)
{
  const clg_imp_attr *a = clg_imp_node_attr(n, "dtype"),
                     *v = clg_imp_node_attr(n, const_value_attr);
  int vt = v && v->kind == CLG_IMP_TENSOR ? v->tensor.tf_dtype : 0;
  if (a && a->kind == CLG_IMP_TYPE)
    return vt == 0 || vt == (int)a->i ? (int)a->i : 0;
  return vt;
}

/* tfjs has no int64 or float64: its converter stores such a Const's weight as int32 or
 * float32 and keeps the node's TensorFlow dtype. Widened back (exactly) where the Const
 * declares the wider dtype, as tools/tfjs_to_pb.py does, so that its consumers get the dtype
 * the graph was made with. *vals is replaced (or freed on failure). */
static clg_code widen_to_declared(const tfjs_ctx *c, const clg_imp_node *n, clg_imp_tensor *t,
                                  void **vals, uint64_t count)
{
  int wide = declared_dtype(n);
  if ((t->tf_dtype == 3 && wide == 9) || (t->tf_dtype == 1 && wide == 2)) {
    void *w64 = malloc(count ? (size_t)count * 8 : 1);
    if (!w64) {
      free(*vals);
      *vals = NULL;
      return oom(c);
    }
    for (size_t i = 0; i < count; i++)
      if (wide == 9)
        ((int64_t *)w64)[i] = ((const int32_t *)*vals)[i];
      else
        ((double *)w64)[i] = ((const float *)*vals)[i];
    free(*vals);
    *vals = w64;
    t->tf_dtype = wide;
  }
  return CLG_OK;
}

/* The weight is the Const's value: it replaces the topology's (empty) tensor. Takes t. */
static clg_code set_const_value(const tfjs_ctx *c, clg_imp_node *n, clg_imp_tensor t)
{
  for (int i = 0; i < n->num_attrs; i++)
    if (strcmp(n->attrs[i].name, const_value_attr) == 0) {
      clg_imp_tensor_clear(&n->attrs[i].tensor);
      n->attrs[i].kind = CLG_IMP_TENSOR;
      n->attrs[i].tensor = t;
      return CLG_OK;
    }
  clg_imp_attr *grown = realloc(n->attrs, sizeof *grown * (size_t)(n->num_attrs + 1));
  if (!grown) {
    clg_imp_tensor_clear(&t);
    return oom(c);
  }
  n->attrs = grown;
  clg_imp_attr *a = &n->attrs[n->num_attrs++];
  memset(a, 0, sizeof *a);
  a->kind = CLG_IMP_TENSOR;
  a->tensor = t;
  if (!(a->name = clg_strdup(const_value_attr)))
    return oom(c);
  return CLG_OK;
}

/* One weight: its bytes from data (len available), dequantized, into node's value. Sets *used. */
static clg_code read_weight(const tfjs_ctx *c, const json_t *wj, const char *shards,
                            const uint8_t *data, size_t len, size_t *used)
{
  char what[700], where[512];
  const json_t *name = json_object_get(wj, "name"), *shape = json_object_get(wj, "shape"),
               *dtype = json_object_get(wj, "dtype"), *q = json_object_get(wj, "quantization");
  if (!json_is_string(name))
    return bad(c, "a weightsManifest weight's name", "a string");
  const char *nm = json_string_value(name);
  snprintf(where, sizeof where, "weight '%.300s'", nm);
  clg_imp_tensor t = {0};
  if (!json_is_string(dtype) || !weight_dtype(json_string_value(dtype), &t.tf_dtype)) {
    snprintf(what, sizeof what, "%s's dtype", where);
    return bad(c, what, "float32, int32, bool, float16 or another tfjs dtype");
  }
  if (!json_is_array(shape) || json_array_size(shape) > CLG_MAX_RANK) {
    snprintf(what, sizeof what, "%s's shape", where);
    return bad(c, what, "an array of at most 8 dims");
  }
  uint64_t count = 1;
  for (size_t i = 0; i < json_array_size(shape); i++) {
    int64_t d;
    if (!json_int(json_array_get(shape, i), &d) || d < 0 || d > (1ll << 40)) {
      snprintf(what, sizeof what, "%s's shape[%zu]", where, i);
      return bad(c, what, "a dim >= 0");
    }
    t.shape.dims[t.shape.rank++] = d;
    count *= (uint64_t)d;
    if (count > (1ull << 40)) {
      snprintf(what, sizeof what, "%s's shape", where);
      return bad(c, what, "a shape of a sensible size");
    }
  }
  int qdtype = 0; /* 0: none, 4: uint8, 17: uint16, 19: float16 */
  double scale = 1, min = 0;
  if (q) {
    const json_t *qd = json_is_object(q) ? json_object_get(q, "dtype") : NULL;
    if (!json_is_string(qd) || !weight_dtype(json_string_value(qd), &qdtype) ||
        (qdtype != 4 && qdtype != 17 && qdtype != 19)) {
      snprintf(what, sizeof what, "%s's quantization.dtype", where);
      return bad(c, what, "uint8, uint16 or float16");
    }
    if (qdtype != 19 && (!json_float(json_object_get(q, "scale"), &scale) ||
                         !json_float(json_object_get(q, "min"), &min))) {
      snprintf(what, sizeof what, "%s's quantization scale and min", where);
      return bad(c, what, "numbers");
    }
  }
  int stored = qdtype ? qdtype : t.tf_dtype;
  size_t es = clg_imp_tf_dtype_size(stored);
  uint64_t bytes = count * es;
  if (bytes > len)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: %s needs %llu bytes at byte %zu of the shards [%s] but they hold %zu: "
                     "short or missing shard data",
                     c->file, where, (unsigned long long)bytes, *used, shards, len + *used);
  *used += (size_t)bytes;
  clg_imp_node *n = find_node(c->m, nm);
  if (!n)
    return CLG_OK; /* tfjs keeps weights no node names; they are unused */
  void *vals = malloc(count ? (size_t)(count * clg_imp_tf_dtype_size(t.tf_dtype)) : 1);
  if (!vals)
    return oom(c);
  if (qdtype == 19) {
    if (t.tf_dtype != 1) {
      free(vals);
      snprintf(what, sizeof what, "%s with float16 quantization", where);
      return bad(c, what, "float32");
    }
    for (size_t i = 0; i < count; i++) {
      uint16_t h = (uint16_t)(data[2 * i] | data[2 * i + 1] << 8);
      ((float *)vals)[i] = half_to_float(h);
    }
  } else if (qdtype) {
    for (size_t i = 0; i < count; i++) {
      double qv = qdtype == 4 ? data[i] : (double)(data[2 * i] | data[2 * i + 1] << 8);
      double v = qv * scale + min;
      if (t.tf_dtype == 1)
        ((float *)vals)[i] = (float)v;
      else if (t.tf_dtype == 3)
        ((int32_t *)vals)[i] = (int32_t)lround(v); /* tfjs: Math.round for int32 weights */
      else {
        free(vals);
        snprintf(what, sizeof what, "%s with %s quantization", where,
                 qdtype == 4 ? "uint8" : "uint16");
        return bad(c, what, "float32 or int32");
      }
    }
  } else
    memcpy(vals, data, (size_t)bytes);
  clg_code widened = widen_to_declared(c, n, &t, &vals, count);
  if (widened != CLG_OK)
    return widened;
  char w[700];
  snprintf(w, sizeof w, "%s: %s", c->file, where);
  clg_code code =
      clg_imp_tensor_from_raw(&t, vals, (size_t)(count * clg_imp_tf_dtype_size(t.tf_dtype)), w);
  free(vals);
  if (code != CLG_OK)
    return code;
  return set_const_value(c, n, t);
}

clg_code clg_imp_tfjs_weights(const tfjs_ctx *c, const json_t *manifest, const char *base_dir)
{
  if (!json_is_array(manifest))
    return bad(c, "weightsManifest", "an array");
  /* Every shard once: a file named twice would give its bytes to two weights. */
  int num_seen = 0;
  const char *seen[256];
  size_t gi;
  const json_t *group;
  clg_code code = CLG_OK;
  json_array_foreach(manifest, gi, group)
  {
    char what[256];
    snprintf(what, sizeof what, "weightsManifest[%zu]", gi);
    const json_t *paths = json_is_object(group) ? json_object_get(group, "paths") : NULL;
    const json_t *weights = json_is_object(group) ? json_object_get(group, "weights") : NULL;
    if (!json_is_array(weights))
      return bad(c, what, "an object with an array of weights");
    if (!json_is_array(paths) || json_array_size(paths) == 0) {
      if (json_array_size(weights) == 0)
        continue;
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: %s lists %zu weights but names no file (paths missing or empty)",
                       c->file, what, json_array_size(weights));
    }
    /* The group's shards, concatenated. */
    uint8_t *data = NULL;
    size_t len = 0;
    char list[1024] = "";
    for (size_t p = 0; p < json_array_size(paths) && code == CLG_OK; p++) {
      const json_t *pj = json_array_get(paths, p);
      if (!json_is_string(pj) || !json_string_value(pj)[0]) {
        code = bad(c, what, "a group whose paths are file names");
        break;
      }
      const char *pn = json_string_value(pj);
      for (int s = 0; s < num_seen; s++)
        if (strcmp(seen[s], pn) == 0)
          code = clg_error(CLG_INVALID_ARGUMENT,
                           "%s: shard '%s' is named twice in weightsManifest: shards overlap",
                           c->file, pn);
      if (code != CLG_OK)
        break;
      if (num_seen < 256)
        seen[num_seen++] = pn;
      size_t k = strlen(list);
      snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", pn);
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", base_dir && base_dir[0] ? base_dir : ".", pn);
      uint8_t *bytes;
      size_t n;
      if ((code = clg_imp_read_file(path, &bytes, &n)) != CLG_OK) {
        clg_error_prefix("%s: weight shard: ", c->file);
        break;
      }
      uint8_t *grown = realloc(data, len + n + 1);
      if (!grown) {
        free(bytes);
        code = oom(c);
        break;
      }
      data = grown;
      memcpy(data + len, bytes, n);
      len += n;
      free(bytes);
    }
    size_t used = 0;
    size_t wi;
    const json_t *w;
    if (code == CLG_OK)
      json_array_foreach(weights, wi, w)
      {
        if (!json_is_object(w)) {
          code = bad(c, "a weightsManifest weight", "an object");
          break;
        }
        if ((code = read_weight(c, w, list, data + used, len - used, &used)) != CLG_OK)
          break;
      }
    free(data);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}
