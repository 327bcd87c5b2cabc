/* A TensorFlow.js graph model's weights (weightsManifest and its .bin shards), as tfjs loads
 * them: the shards of all groups are one byte stream in manifest order, each group's weights
 * laid end to end in its own shards; quantized weights are dequantized here (uint8/uint16:
 * q * scale + min, float16: to float32), and a weight named like a Const node is its value.
 * The topology is read by tfjs.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/build.h"
#include "import/tfjs.h"

/* The NodeDef attribute a weight fills (Const's value, as tfjs's converter leaves it empty). */
static const char *const const_value_attr = "value";

/* --- weights ----------------------------------------------------------------------------- */

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

/* IEEE half to float, exactly (every half is a float), by bits: exponent and mantissa move to
 * float's places and a multiply by 2^112 rebiases them (exact: a power of two, and every half,
 * subnormals too, is a normal float); infinities and NaNs (exponent 31) get float's all-ones
 * exponent, mantissa kept. No branch: the weights of real models are mostly float16 and this
 * runs once per element at import, so the loop over them vectorises. */
static inline float half_to_float(uint16_t h)
{
  uint32_t em = (uint32_t)(h & 0x7fff) << 13, sign = (uint32_t)(h & 0x8000) << 16, bits;
  float f;
  memcpy(&f, &em, 4);
  f *= 0x1p112f;
  memcpy(&bits, &f, 4);
  uint32_t special = 0u - (((uint32_t)(h & 0x7c00) + 0x400) >> 15); /* all ones at exponent 31 */
  bits = (bits & ~special) | ((em | 0x7f800000u) & special);
  bits |= sign;
  memcpy(&f, &bits, 4);
  return f;
}

/* n little-endian halves at src to floats: a function of its own, since GCC does not vectorise
 * the loop once it is inlined into the reader's. */
#if defined(__GNUC__) || defined(__clang__)
#define TFJS_NOINLINE __attribute__((noinline))
#else
#define TFJS_NOINLINE
#endif
static TFJS_NOINLINE void halves_to_floats(const uint8_t *src, float *dst, size_t n)
{
  for (size_t i = 0; i < n; i++)
    dst[i] = half_to_float((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
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
 * the graph was made with: the dtype the weight of type tf becomes in node n. */
static int widened_dtype(const clg_imp_node *n, int tf)
{
  int wide = declared_dtype(n);
  return (tf == 3 && wide == 9) || (tf == 1 && wide == 2) ? wide : tf;
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

/* The model's nodes by name (a weight names its Const). */
typedef struct node_hash {
  int *h;
  size_t size;
} node_hash;

/* One weight: its bytes from data (len available), dequantized, into node's value. Sets *used. */
static clg_code read_weight(const tfjs_ctx *c, const node_hash *hash, const json_t *wj,
                            const char *shards, const uint8_t *data, size_t len, size_t *used)
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
  int k = clg_imp_hash_find(hash->h, hash->size, clg_imp_model_node_name, c->m, nm, strlen(nm));
  if (k < 0)
    return CLG_OK; /* tfjs keeps weights no node names; they are unused */
  clg_imp_node *n = &c->m->nodes[k];
  if (qdtype == 19 && t.tf_dtype != 1) {
    snprintf(what, sizeof what, "%s with float16 quantization", where);
    return bad(c, what, "float32");
  }
  if (qdtype && qdtype != 19 && count > 0 && t.tf_dtype != 1 && t.tf_dtype != 3) {
    snprintf(what, sizeof what, "%s with %s quantization", where, qdtype == 4 ? "uint8" : "uint16");
    return bad(c, what, "float32 or int32");
  }
  /* Decoded once, straight into the Const's tensor (no buffer copied after). */
  int tf = t.tf_dtype;
  t.tf_dtype = widened_dtype(n, tf);
  bool wide = t.tf_dtype != tf;
  char w[700];
  snprintf(w, sizeof w, "%s: %s", c->file, where);
  void *out;
  clg_code code =
      clg_imp_tensor_alloc(&t, (size_t)(count * clg_imp_tf_dtype_size(t.tf_dtype)), w, &out);
  if (code != CLG_OK) {
    clg_imp_tensor_clear(&t);
    return code;
  }
  if (out && !qdtype && !wide)
    memcpy(out, data, (size_t)bytes);
  else if (out && qdtype == 19 && !wide) /* the common case, kept a loop of its own */
    halves_to_floats(data, out, (size_t)count);
  else if (out)
    for (size_t i = 0; i < count; i++) {
      double v;
      if (qdtype == 19)
        v = half_to_float((uint16_t)(data[2 * i] | data[2 * i + 1] << 8));
      else if (qdtype)
        v = (qdtype == 4 ? data[i] : (double)(data[2 * i] | data[2 * i + 1] << 8)) * scale + min;
      else if (tf == 1) {
        float x;
        memcpy(&x, data + 4 * i, 4);
        v = x;
      } else {
        int32_t x;
        memcpy(&x, data + 4 * i, 4);
        v = x;
      }
      /* tfjs: float32(q * scale + min), Math.round for int32 weights; widened exactly. */
      if (tf == 1 && wide)
        ((double *)out)[i] = (float)v;
      else if (tf == 1)
        ((float *)out)[i] = (float)v;
      else if (wide)
        ((int64_t *)out)[i] = qdtype ? (int32_t)lround(v) : (int64_t)v;
      else
        ((int32_t *)out)[i] = qdtype ? (int32_t)lround(v) : (int32_t)v;
    }
  if (out && t.value && clg_tensor_dtype(t.value) == CLG_BOOL)
    for (size_t i = 0; i < count; i++)
      ((uint8_t *)out)[i] = ((uint8_t *)out)[i] != 0;
  return set_const_value(c, n, t);
}

static clg_code read_groups(const tfjs_ctx *c, const node_hash *hash, const json_t *manifest,
                            const char *base_dir)
{
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
      if (!data) { /* the first shard is the buffer: one group's usual single shard is not copied */
        data = bytes;
        len = n;
        continue;
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
        if ((code = read_weight(c, hash, w, list, data + used, len - used, &used)) != CLG_OK)
          break;
      }
    free(data);
    if (code != CLG_OK)
      return code;
  }
  return CLG_OK;
}

clg_code clg_imp_tfjs_weights(const tfjs_ctx *c, const json_t *manifest, const char *base_dir)
{
  if (!json_is_array(manifest))
    return bad(c, "weightsManifest", "an array");
  node_hash hash = {NULL, 0};
  hash.h = clg_imp_hash_build(c->m->num_nodes, clg_imp_model_node_name, c->m, &hash.size);
  if (!hash.h)
    return oom(c);
  clg_code code = read_groups(c, &hash, manifest, base_dir);
  free(hash.h);
  return code;
}
