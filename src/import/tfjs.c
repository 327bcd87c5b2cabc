/* A TensorFlow.js graph model: model.json (modelTopology, a GraphDef in protobuf's JSON mapping;
 * weightsManifest; signature) read with jansson; the weights of its manifest and .bin shards
 * are read by tfjs_weights.c (into the Const nodes named like them). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/tfjs.h"

/* --- JSON mapping helpers (json_int and json_float: tfjs.h) --------------------------------- */

static bool json_dtype(const json_t *v, int *out)
{
  int64_t i;
  if (json_is_string(v)) {
    int t = clg_imp_tf_dtype_parse(json_string_value(v));
    if (t >= 0) {
      *out = t;
      return true;
    }
  }
  if (json_int(v, &i) && i >= 0 && i < 1000) {
    *out = (int)i;
    return true;
  }
  return false;
}

static int b64_value(unsigned char ch)
{
  if (ch >= 'A' && ch <= 'Z')
    return ch - 'A';
  if (ch >= 'a' && ch <= 'z')
    return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9')
    return ch - '0' + 52;
  if (ch == '+' || ch == '-')
    return 62;
  if (ch == '/' || ch == '_')
    return 63;
  return -1;
}

/* Base64 (protobuf's JSON bytes; standard or URL-safe, padding optional): malloc'd with a NUL
 * after len bytes, or NULL with *ok false on a bad character. */
static uint8_t *b64_decode(const char *s, size_t *len, bool *ok)
{
  size_t n = strlen(s);
  uint8_t *out = malloc(n / 4 * 3 + 4);
  *ok = out != NULL;
  if (!out)
    return NULL;
  uint32_t acc = 0;
  int bits = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '=')
      break;
    int v = b64_value((unsigned char)s[i]);
    if (v < 0) {
      free(out);
      *ok = false;
      return NULL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[k++] = (uint8_t)(acc >> bits);
    }
  }
  out[k] = 0;
  *len = k;
  return out;
}

static const json_t *get2(const json_t *o, const char *camel, const char *snake)
{
  const json_t *v = json_object_get(o, camel);
  return v ? v : json_object_get(o, snake);
}

static clg_code read_shape(const tfjs_ctx *c, const json_t *j, clg_imp_shape *s, const char *where)
{
  char what[512];
  s->rank = 0;
  if (!json_is_object(j)) {
    snprintf(what, sizeof what, "%.480s's shape", where); /* %.480s: room for the suffix */
    return bad(c, what, "an object");
  }
  const json_t *unknown = get2(j, "unknownRank", "unknown_rank");
  if (unknown && json_is_true(unknown)) {
    s->rank = -1;
    return CLG_OK;
  }
  const json_t *dims = json_object_get(j, "dim");
  if (!dims)
    return CLG_OK;
  if (!json_is_array(dims)) {
    snprintf(what, sizeof what, "%s's shape.dim", where);
    return bad(c, what, "an array");
  }
  if (json_array_size(dims) > CLG_MAX_RANK)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: %s: a shape of rank %zu (clgraph's most is %d)",
                     c->file, where, json_array_size(dims), CLG_MAX_RANK);
  size_t i;
  const json_t *d;
  json_array_foreach(dims, i, d)
  {
    int64_t size = 0;
    const json_t *v = json_is_object(d) ? json_object_get(d, "size") : NULL;
    if (v && !json_int(v, &size)) {
      snprintf(what, sizeof what, "%s's shape.dim[%zu].size", where, i);
      return bad(c, what, "an integer");
    }
    if (!json_is_object(d) || size < -1) {
      snprintf(what, sizeof what, "%s's shape.dim[%zu]", where, i);
      return bad(c, what, "a dim of size >= -1");
    }
    s->dims[s->rank++] = size;
  }
  return CLG_OK;
}

/* A TensorProto in JSON: dtype, tensorShape, and tensorContent (base64) or typed values.
 * has_values: whether the JSON held any (tfjs's Consts hold none: the weights give them). */
static clg_code read_tensor(const tfjs_ctx *c, const json_t *j, clg_imp_tensor *t,
                            const char *where, bool *has_values)
{
  char what[512], dt[24];
  *has_values = false;
  if (!json_is_object(j)) {
    snprintf(what, sizeof what, "%.480s's tensor", where);
    return bad(c, what, "an object");
  }
  const json_t *d = json_object_get(j, "dtype");
  if (!d || !json_dtype(d, &t->tf_dtype)) {
    snprintf(what, sizeof what, "%s's tensor dtype", where);
    return bad(c, what, "a DataType");
  }
  if (!clg_imp_tf_dtype_known(t->tf_dtype))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: %s: unknown dtype %s", c->file, where,
                     clg_imp_tf_dtype_name(t->tf_dtype, dt));
  const json_t *sh = get2(j, "tensorShape", "tensor_shape");
  clg_code code;
  t->shape.rank = 0;
  if (sh && (code = read_shape(c, sh, &t->shape, where)) != CLG_OK)
    return code;
  char w[512];
  snprintf(w, sizeof w, "%s: %s", c->file, where);
  const json_t *content = get2(j, "tensorContent", "tensor_content");
  if (content) {
    bool ok;
    size_t len = 0;
    uint8_t *raw =
        json_is_string(content) ? b64_decode(json_string_value(content), &len, &ok) : NULL;
    if (!raw) {
      snprintf(what, sizeof what, "%s's tensorContent", where);
      return bad(c, what, "base64");
    }
    *has_values = true;
    code = clg_imp_tensor_from_raw(t, raw, len, w);
    free(raw);
    return code;
  }
  static const struct {
    const char *camel, *snake;
  } fields[] = {{"floatVal", "float_val"},   {"doubleVal", "double_val"}, {"intVal", "int_val"},
                {"int64Val", "int64_val"},   {"boolVal", "bool_val"},     {"halfVal", "half_val"},
                {"uint32Val", "uint32_val"}, {"uint64Val", "uint64_val"}};
  const json_t *vals = NULL;
  int which = -1;
  for (int i = 0; i < 8 && !vals; i++)
    if ((vals = get2(j, fields[i].camel, fields[i].snake)))
      which = i;
  size_t es = clg_imp_tf_dtype_size(t->tf_dtype);
  if (!vals) {
    /* tfjs's Consts hold no values: a weight gives them (value left NULL until then). */
    bool empty = false;
    for (int i = 0; i < t->shape.rank; i++)
      empty = empty || t->shape.dims[i] == 0;
    return empty && es ? clg_imp_tensor_from_values(t, NULL, 0, "no values", w) : CLG_OK;
  }
  if (!json_is_array(vals)) {
    snprintf(what, sizeof what, "%s's %s", where, fields[which].camel);
    return bad(c, what, "an array");
  }
  if (!es)
    return clg_error(CLG_UNIMPLEMENTED, "%s: tensors of %s are not supported", w,
                     clg_imp_tf_dtype_name(t->tf_dtype, dt));
  size_t n = json_array_size(vals);
  uint8_t *buf = malloc(n * es + 1);
  if (!buf)
    return oom(c);
  clg_dtype cd;
  bool floating = clg_imp_dtype(t->tf_dtype, &cd) && (cd == CLG_FLOAT32 || cd == CLG_FLOAT64);
  for (size_t i = 0; i < n; i++) {
    const json_t *v = json_array_get(vals, i);
    uint8_t *dst = buf + i * es;
    double f;
    int64_t x;
    bool ok;
    if (floating && which != 5) {
      ok = json_float(v, &f);
      if (es == 4) {
        float ff = (float)f;
        memcpy(dst, &ff, 4);
      } else
        memcpy(dst, &f, 8);
    } else if (json_is_boolean(v)) {
      ok = true;
      x = json_is_true(v);
      memcpy(dst, &x, es < 8 ? es : 8);
    } else {
      ok = json_int(v, &x);
      memcpy(dst, &x, es < 8 ? es : 8);
    }
    if (!ok) {
      free(buf);
      snprintf(what, sizeof what, "%s's %s[%zu]", where, fields[which].camel, i);
      return bad(c, what, floating ? "a number" : "an integer");
    }
  }
  *has_values = true;
  code = clg_imp_tensor_from_values(t, buf, n, fields[which].camel, w);
  free(buf);
  return code;
}

static char *dup_json_string(const json_t *v) { return clg_strdup(json_string_value(v)); }

/* An AttrValue's list: values of one kind (an empty list of any kind is no kind). */
static clg_code read_list(const tfjs_ctx *c, const json_t *v, clg_imp_attr *a, const char *where)
{
  char what[640];
  clg_code code;
  bool ok, has;
  if (!json_is_object(v)) {
    snprintf(what, sizeof what, "%s's list", where);
    return bad(c, what, "an object");
  }
  static const struct {
    const char *key;
    clg_imp_attr_kind kind;
  } kinds[] = {{"s", CLG_IMP_S},          {"i", CLG_IMP_I},       {"f", CLG_IMP_F},
               {"b", CLG_IMP_B},          {"type", CLG_IMP_TYPE}, {"shape", CLG_IMP_SHAPE},
               {"tensor", CLG_IMP_TENSOR}};
  for (int k = 0; k < 7; k++) {
    const json_t *arr = json_object_get(v, kinds[k].key);
    if (!arr)
      continue;
    if (!json_is_array(arr)) {
      snprintf(what, sizeof what, "%s's list.%s", where, kinds[k].key);
      return bad(c, what, "an array");
    }
    size_t n = json_array_size(arr);
    if (n == 0)
      continue;
    if (a->elem) {
      snprintf(what, sizeof what, "%s's list", where);
      return bad(c, what, "a list of one kind");
    }
    if (n > (1u << 24))
      return clg_error(CLG_INVALID_ARGUMENT, "%s: %s: a list of %zu values", c->file, where, n);
    a->elem = kinds[k].kind;
    size_t cnt = n ? n : 1;
    switch (a->elem) {
    case CLG_IMP_S:
      a->strs = calloc(cnt, sizeof *a->strs);
      break;
    case CLG_IMP_F:
      a->floats = calloc(cnt, sizeof *a->floats);
      break;
    case CLG_IMP_SHAPE:
      a->shapes = calloc(cnt, sizeof *a->shapes);
      break;
    case CLG_IMP_TENSOR:
      a->tensors = calloc(cnt, sizeof *a->tensors);
      break;
    default:
      a->ints = calloc(cnt, sizeof *a->ints);
      break;
    }
    if (!a->strs && !a->floats && !a->shapes && !a->tensors && !a->ints)
      return oom(c);
    for (size_t i = 0; i < n; i++) {
      const json_t *e = json_array_get(arr, i);
      bool good = true;
      a->n = (int)i + 1;
      switch (a->elem) {
      case CLG_IMP_S: {
        size_t len;
        a->strs[i] = json_is_string(e) ? (char *)b64_decode(json_string_value(e), &len, &ok) : NULL;
        good = a->strs[i] != NULL;
        break;
      }
      case CLG_IMP_I:
        good = json_int(e, &a->ints[i]);
        break;
      case CLG_IMP_F:
        good = json_float(e, &a->floats[i]);
        break;
      case CLG_IMP_B:
        good = json_is_boolean(e);
        a->ints[i] = json_is_true(e);
        break;
      case CLG_IMP_TYPE: {
        int t = 0;
        good = json_dtype(e, &t);
        a->ints[i] = t;
        break;
      }
      case CLG_IMP_SHAPE:
        if ((code = read_shape(c, e, &a->shapes[i], where)) != CLG_OK)
          return code;
        break;
      case CLG_IMP_TENSOR:
        if ((code = read_tensor(c, e, &a->tensors[i], where, &has)) != CLG_OK)
          return code;
        break;
      default:
        break;
      }
      if (!good) {
        snprintf(what, sizeof what, "%s's list.%s[%zu]", where, kinds[k].key, i);
        return bad(c, what, "a value of its kind");
      }
    }
  }
  return CLG_OK;
}

static clg_code read_attr(const tfjs_ctx *c, const char *key, const json_t *j, clg_imp_attr *a,
                          const char *node)
{
  char where[512], what[640];
  snprintf(where, sizeof where, "node '%.200s' attr '%.200s'", node, key);
  if (!(a->name = clg_strdup(key)))
    return oom(c);
  if (!json_is_object(j))
    return bad(c, where, "an AttrValue object");
  const json_t *v;
  bool ok, has;
  if ((v = json_object_get(j, "s"))) {
    a->kind = CLG_IMP_S;
    a->s = json_is_string(v) ? (char *)b64_decode(json_string_value(v), &a->len, &ok) : NULL;
    if (!a->s) {
      snprintf(what, sizeof what, "%s's s", where);
      return bad(c, what, "base64");
    }
  } else if ((v = json_object_get(j, "i"))) {
    a->kind = CLG_IMP_I;
    if (!json_int(v, &a->i)) {
      snprintf(what, sizeof what, "%s's i", where);
      return bad(c, what, "an integer");
    }
  } else if ((v = json_object_get(j, "f"))) {
    a->kind = CLG_IMP_F;
    if (!json_float(v, &a->f)) {
      snprintf(what, sizeof what, "%s's f", where);
      return bad(c, what, "a number");
    }
  } else if ((v = json_object_get(j, "b"))) {
    a->kind = CLG_IMP_B;
    if (!json_is_boolean(v)) {
      snprintf(what, sizeof what, "%s's b", where);
      return bad(c, what, "a boolean");
    }
    a->i = json_is_true(v);
  } else if ((v = json_object_get(j, "type"))) {
    a->kind = CLG_IMP_TYPE;
    int t;
    if (!json_dtype(v, &t)) {
      snprintf(what, sizeof what, "%s's type", where);
      return bad(c, what, "a DataType");
    }
    a->i = t;
  } else if ((v = json_object_get(j, "shape"))) {
    a->kind = CLG_IMP_SHAPE;
    return read_shape(c, v, &a->shape, where);
  } else if ((v = json_object_get(j, "tensor"))) {
    a->kind = CLG_IMP_TENSOR;
    return read_tensor(c, v, &a->tensor, where, &has);
  } else if ((v = json_object_get(j, "func"))) {
    a->kind = CLG_IMP_FUNC;
    const json_t *name = json_is_object(v) ? json_object_get(v, "name") : NULL;
    a->s = clg_strdup(json_is_string(name) ? json_string_value(name) : "");
    if (!a->s)
      return oom(c);
  } else if ((v = json_object_get(j, "placeholder"))) {
    a->kind = CLG_IMP_FUNC;
    a->s = clg_strdup(json_is_string(v) ? json_string_value(v) : "");
    if (!a->s)
      return oom(c);
  } else if ((v = json_object_get(j, "list"))) {
    a->kind = CLG_IMP_LIST;
    return read_list(c, v, a, where);
  }
  return CLG_OK;
}

static clg_code read_node(const tfjs_ctx *c, const json_t *j, size_t index, clg_imp_node *n)
{
  char what[512];
  if (!json_is_object(j)) {
    snprintf(what, sizeof what, "modelTopology.node[%zu]", index);
    return bad(c, what, "an object");
  }
  const json_t *name = json_object_get(j, "name"), *op = json_object_get(j, "op");
  if (!json_is_string(name) || !json_string_value(name)[0]) {
    snprintf(what, sizeof what, "modelTopology.node[%zu].name", index);
    return bad(c, what, "a non-empty string");
  }
  if (!(n->name = dup_json_string(name)))
    return oom(c);
  if (!json_is_string(op) || !json_string_value(op)[0]) {
    snprintf(what, sizeof what, "node '%s' op", n->name);
    return bad(c, what, "a non-empty string");
  }
  const json_t *dev = json_object_get(j, "device");
  if (dev && !json_is_string(dev)) {
    snprintf(what, sizeof what, "node '%s' device", n->name);
    return bad(c, what, "a string");
  }
  if (!(n->op = dup_json_string(op)) ||
      !(n->device = clg_strdup(dev ? json_string_value(dev) : "")))
    return oom(c);
  const json_t *in = json_object_get(j, "input");
  if (in) {
    if (!json_is_array(in)) {
      snprintf(what, sizeof what, "node '%s' input", n->name);
      return bad(c, what, "an array");
    }
    size_t k = json_array_size(in);
    n->inputs = calloc(k ? k : 1, sizeof *n->inputs);
    if (!n->inputs)
      return oom(c);
    for (size_t i = 0; i < k; i++) {
      const json_t *s = json_array_get(in, i);
      if (!json_is_string(s)) {
        snprintf(what, sizeof what, "node '%s' input[%zu]", n->name, i);
        return bad(c, what, "a string");
      }
      if (!(n->inputs[i] = dup_json_string(s)))
        return oom(c);
      n->num_inputs++;
    }
  }
  const json_t *attr = json_object_get(j, "attr");
  if (attr) {
    if (!json_is_object(attr)) {
      snprintf(what, sizeof what, "node '%s' attr", n->name);
      return bad(c, what, "an object");
    }
    size_t k = json_object_size(attr);
    n->attrs = calloc(k ? k : 1, sizeof *n->attrs);
    if (!n->attrs)
      return oom(c);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)attr, key, v)
    {
      n->num_attrs++;
      clg_code code = read_attr(c, key, v, &n->attrs[n->num_attrs - 1], n->name);
      if (code != CLG_OK)
        return code;
    }
  }
  return CLG_OK;
}

/* --- the signature ----------------------------------------------------------------------- */

static clg_code read_sig_list(const tfjs_ctx *c, const json_t *o, const char *what,
                              clg_imp_sig **sigs, int *count)
{
  if (!o)
    return CLG_OK;
  if (!json_is_object(o))
    return bad(c, what, "an object");
  size_t n = json_object_size(o);
  *sigs = calloc(n ? n : 1, sizeof **sigs);
  if (!*sigs)
    return oom(c);
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)o, key, v)
  {
    clg_imp_sig *s = &(*sigs)[*count];
    const json_t *nm = json_is_object(v) ? json_object_get(v, "name") : NULL;
    if (!(s->name = clg_strdup(json_is_string(nm) ? json_string_value(nm) : key)))
      return oom(c);
    (*count)++;
    s->shape.rank = -1;
    const json_t *dt = json_is_object(v) ? json_object_get(v, "dtype") : NULL;
    if (dt && !json_dtype(dt, &s->tf_dtype))
      s->tf_dtype = 0;
    const json_t *sh = json_is_object(v) ? get2(v, "tensorShape", "tensor_shape") : NULL;
    char where[300];
    snprintf(where, sizeof where, "%s '%.200s'", what, s->name);
    clg_code code;
    if (sh && (code = read_shape(c, sh, &s->shape, where)) != CLG_OK)
      return code;
  }
  return CLG_OK;
}

/* --- model.json --------------------------------------------------------------------------- */

static clg_code read_model(const char *json, size_t len, const char *file, const char *base_dir,
                           bool weights, clg_imp_model **out)
{
  *out = NULL;
  json_error_t jerr;
  json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: not JSON (line %d: %s)", file, jerr.line,
                     jerr.text);
  clg_imp_model *m = clg_imp_model_new("tfjs", file);
  if (!m) {
    json_decref(root);
    return CLG_RESOURCE_EXHAUSTED;
  }
  tfjs_ctx c = {m->file, m};
  clg_code code = CLG_OK;
  const json_t *topo = json_is_object(root) ? json_object_get(root, "modelTopology") : NULL;
  const json_t *nodes = json_is_object(topo) ? json_object_get(topo, "node") : NULL;
  if (!json_is_object(root))
    code = bad(&c, "the model", "a JSON object");
  else if (!topo)
    code = bad(&c, "the model", "a tfjs graph model (no modelTopology)");
  else if (!json_is_object(topo))
    code = bad(&c, "modelTopology", "an object");
  else if (nodes && !json_is_array(nodes))
    code = bad(&c, "modelTopology.node", "an array");
  const json_t *fmt = json_is_object(root) ? json_object_get(root, "format") : NULL;
  if (code == CLG_OK && fmt &&
      (!json_is_string(fmt) || strcmp(json_string_value(fmt), "graph-model") != 0))
    code =
        clg_error(CLG_UNIMPLEMENTED, "%s: format '%s' is not a tfjs graph model (\"graph-model\")",
                  file, json_is_string(fmt) ? json_string_value(fmt) : "?");
  size_t i;
  const json_t *nj;
  if (code == CLG_OK && nodes)
    json_array_foreach(nodes, i, nj)
    {
      clg_imp_node *n = clg_imp_model_add(m);
      if (!n || (code = read_node(&c, nj, i, n)) != CLG_OK) {
        if (!n)
          code = CLG_RESOURCE_EXHAUSTED;
        break;
      }
    }
  if (code == CLG_OK) {
    const json_t *gen = json_object_get(root, "generatedBy"),
                 *conv = json_object_get(root, "convertedBy");
    char text[512];
    snprintf(text, sizeof text, "%s%s%s", json_is_string(gen) ? json_string_value(gen) : "",
             json_is_string(gen) && json_is_string(conv) ? "; " : "",
             json_is_string(conv) ? json_string_value(conv) : "");
    free(m->producer);
    if (!(m->producer = clg_strdup(text)))
      code = oom(&c);
  }
  if (code == CLG_OK) {
    const json_t *sig = json_object_get(root, "signature");
    const json_t *meta = json_object_get(root, "userDefinedMetadata");
    if (!sig && json_is_object(meta))
      sig = json_object_get(meta, "signature");
    if (sig && !json_is_object(sig))
      code = bad(&c, "signature", "an object");
    else if (sig) {
      code = read_sig_list(&c, json_object_get(sig, "inputs"), "signature.inputs", &m->sig_inputs,
                           &m->num_sig_inputs);
      if (code == CLG_OK)
        code = read_sig_list(&c, json_object_get(sig, "outputs"), "signature.outputs",
                             &m->sig_outputs, &m->num_sig_outputs);
    }
  }
  if (code == CLG_OK && weights) {
    const json_t *man = json_object_get(root, "weightsManifest");
    if (man)
      code = clg_imp_tfjs_weights(&c, man, base_dir);
  }
  json_decref(root);
  if (code != CLG_OK) {
    clg_imp_model_free(m);
    return code;
  }
  *out = m;
  return CLG_OK;
}

clg_code clg_imp_read_tfjs(const char *json, size_t len, const char *file, const char *base_dir,
                           clg_imp_model **out)
{
  return read_model(json, len, file, base_dir, true, out);
}

clg_code clg_imp_read_tfjs_topology(const char *json, size_t len, const char *file,
                                    clg_imp_model **out)
{
  return read_model(json, len, file, NULL, false, out);
}
