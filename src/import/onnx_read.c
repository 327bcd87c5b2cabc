/* An onnx.ModelProto (onnx.proto; field numbers in model-formats.md) into the neutral model:
 * nodes keep their ONNX op types, tensor-named inputs and outputs; initializers become the
 * model's constants, graph inputs that are not initializers its signature inputs. Unknown
 * fields are skipped, as protobuf readers do; known fields must have their wire type. */
#define _DEFAULT_SOURCE /* realpath: external data must resolve inside the model's folder */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import/import_internal.h"

/* The opsets of the default domain whose semantics the importer follows. */
#define ONNX_MIN_OPSET 1
#define ONNX_MAX_OPSET 17

static clg_code oom(void)
{
  return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading an ONNX model");
}

static clg_code take_string(const clg_pb *r, const clg_pb_field *f, const char *name, char **dst)
{
  clg_code code = clg_pb_want(r, f, CLG_PB_BYTES, name);
  if (code != CLG_OK)
    return code;
  char *s = malloc(f->len + 1);
  if (!s)
    return oom();
  if (f->len)
    memcpy(s, f->data, f->len);
  s[f->len] = 0;
  free(*dst);
  *dst = s;
  return CLG_OK;
}

/* Appends a zeroed element of es bytes to the vector vec of *n elements: its address, with the
 * vector's start (moved or not) in *grown; NULL when memory runs out (error set, vec kept in
 * *grown). The capacity is implied by the count (the next power of two >= n, at least 4), so
 * the model's structs need no capacity field: these vectors grow through here only. */
static void *append_zeroed(void *vec, int *n, size_t es, void **grown)
{
  *grown = vec;
  int k = *n;
  if (k == INT_MAX) {
    oom();
    return NULL;
  }
  if (k == 0 || (k >= 4 && (k & (k - 1)) == 0)) {
    size_t cap = k ? 2 * (size_t)k : 4;
    void *g = cap <= SIZE_MAX / es ? realloc(vec, cap * es) : NULL;
    if (!g) {
      oom();
      return NULL;
    }
    *grown = g;
  }
  uint8_t *e = (uint8_t *)*grown + (size_t)k * es;
  memset(e, 0, es);
  (*n)++;
  return e;
}

/* Appends a copy of the field's bytes to a string vector. */
static clg_code push_string(const clg_pb *r, const clg_pb_field *f, const char *name, char ***v,
                            int *n)
{
  char *s = NULL;
  clg_code code = take_string(r, f, name, &s);
  if (code != CLG_OK)
    return code;
  void *grown;
  char **slot = append_zeroed(*v, n, sizeof **v, &grown);
  *v = grown;
  if (!slot) {
    free(s);
    return CLG_RESOURCE_EXHAUSTED;
  }
  *slot = s;
  return CLG_OK;
}

/* --- element types ----------------------------------------------------------------------- */

int clg_imp_onnx_dtype_to_tf(int64_t onnx)
{
  /* onnx.TensorProto.DataType to tensorflow DataType */
  static const int map[] = {
      0,  /* UNDEFINED */
      1,  /* FLOAT */
      4,  /* UINT8 */
      6,  /* INT8 */
      17, /* UINT16 */
      5,  /* INT16 */
      3,  /* INT32 */
      9,  /* INT64 */
      7,  /* STRING */
      10, /* BOOL */
      19, /* FLOAT16 */
      2,  /* DOUBLE */
      22, /* UINT32 */
      23, /* UINT64 */
      8,  /* COMPLEX64 */
      18, /* COMPLEX128 */
      14, /* BFLOAT16 */
  };
  return onnx >= 0 && onnx < (int64_t)(sizeof map / sizeof map[0]) ? map[onnx] : 0;
}

/* --- TensorProto --------------------------------------------------------------------------- */

typedef struct tensor_fields {
  int64_t dtype;
  clg_imp_shape shape;
  bool ndims_over;
  const uint8_t *raw;
  size_t raw_len;
  bool has_raw;
  uint8_t *typed; /* the typed values, converted to the element size */
  size_t typed_len, typed_cap;
  int typed_field;
  bool external;
  char *location;
  int64_t ext_offset, ext_length;
  size_t es;
  const clg_pb *r; /* for the file's name in errors */
} tensor_fields;

static clg_code push_bytes(tensor_fields *tf, const void *p, size_t n)
{
  if (tf->typed_len + n > tf->typed_cap) {
    size_t cap = tf->typed_cap ? 2 * tf->typed_cap : 64;
    while (cap < tf->typed_len + n)
      cap *= 2;
    uint8_t *g = realloc(tf->typed, cap);
    if (!g)
      return oom();
    tf->typed = g;
    tf->typed_cap = cap;
  }
  memcpy(tf->typed + tf->typed_len, p, n);
  tf->typed_len += n;
  return CLG_OK;
}

static clg_code dims_each(void *ctx, uint64_t v)
{
  tensor_fields *tf = ctx;
  if (tf->shape.rank >= CLG_MAX_RANK) {
    tf->ndims_over = true;
    return CLG_OK;
  }
  tf->shape.dims[tf->shape.rank++] = (int64_t)v;
  return CLG_OK;
}

/* A typed value as the element size of the tensor's dtype (little-endian, as raw_data). */
static clg_code typed_each(void *ctx, uint64_t v)
{
  tensor_fields *tf = ctx;
  if (tf->es > 8) /* complex128: two doubles a value, never stored as one typed value here */
    return clg_error(CLG_UNIMPLEMENTED,
                     "%s: TensorProto: typed values of a %zu-byte element type are not supported",
                     clg_pb_file(tf->r), tf->es);
  uint8_t b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> (8 * i));
  if (tf->typed_field == 4 || tf->typed_field == 10) /* float_data, double_data: bit patterns */
    return push_bytes(tf, b, tf->typed_field == 4 ? 4 : 8);
  return push_bytes(tf, b, tf->es ? tf->es : 8);
}

/* Which typed field holds values of an ONNX dtype. */
static int typed_field_of(int64_t dtype)
{
  switch (dtype) {
  case 1: /* FLOAT */
  case 14:
    return 4;
  case 11: /* DOUBLE */
  case 15:
    return 10;
  case 7: /* INT64 */
    return 7;
  case 12: /* UINT32, UINT64 */
  case 13:
    return 11;
  case 8:
    return 6;
  default: /* INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16 */
    return 5;
  }
}

static const char *field_name(int f)
{
  switch (f) {
  case 4:
    return "float_data";
  case 5:
    return "int32_data";
  case 7:
    return "int64_data";
  case 10:
    return "double_data";
  case 11:
    return "uint64_data";
  default:
    return "string_data";
  }
}

static clg_code read_external_entry(const clg_pb *parent, const clg_pb_field *pf, tensor_fields *tf)
{
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "StringStringEntryProto");
  clg_pb_field f;
  char *key = NULL, *value = NULL;
  int got;
  clg_code code = CLG_OK;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
    if (f.number == 1)
      code = take_string(&r, &f, "key", &key);
    else if (f.number == 2)
      code = take_string(&r, &f, "value", &value);
  }
  if (got < 0)
    code = CLG_INVALID_ARGUMENT;
  if (code == CLG_OK && key && value) {
    if (strcmp(key, "location") == 0) {
      free(tf->location);
      tf->location = value;
      value = NULL;
    } else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
      char *end;
      long long v = strtoll(value, &end, 10);
      if (!value[0] || *end || v < 0)
        code = clg_error(CLG_INVALID_ARGUMENT,
                         "%s: TensorProto.external_data %s '%s' is not a byte count",
                         clg_pb_file(parent), key, value);
      else if (key[0] == 'o')
        tf->ext_offset = v;
      else
        tf->ext_length = v;
    }
  }
  free(key);
  free(value);
  return code;
}

static clg_code read_tensor_field(clg_pb *r, const clg_pb_field *f, tensor_fields *tf, char **name)
{
  switch (f->number) {
  case 1:
    return clg_pb_repeated(r, f, CLG_PB_VARINT, "dims", dims_each, tf);
  case 2: {
    clg_code code = clg_pb_want(r, f, CLG_PB_VARINT, "data_type");
    tf->dtype = (int64_t)f->v;
    return code;
  }
  case 3:
    return clg_error(CLG_UNIMPLEMENTED, "%s: TensorProto.segment (a split tensor) is not supported",
                     clg_pb_file(r));
  case 4:
  case 5:
  case 7:
  case 10:
  case 11: {
    if (tf->typed_field && tf->typed_field != (int)f->number)
      return clg_error(CLG_INVALID_ARGUMENT, "%s: TensorProto has both %s and %s", clg_pb_file(r),
                       field_name(tf->typed_field), field_name((int)f->number));
    tf->typed_field = (int)f->number;
    int wire = f->number == 4 ? CLG_PB_FIXED32 : f->number == 10 ? CLG_PB_FIXED64 : CLG_PB_VARINT;
    return clg_pb_repeated(r, f, wire, field_name((int)f->number), typed_each, tf);
  }
  case 6:
    return clg_error(CLG_UNIMPLEMENTED, "%s: string tensors are not supported", clg_pb_file(r));
  case 8:
    return name ? take_string(r, f, "name", name) : clg_pb_want(r, f, CLG_PB_BYTES, "name");
  case 9: {
    clg_code code = clg_pb_want(r, f, CLG_PB_BYTES, "raw_data");
    tf->raw = f->data;
    tf->raw_len = f->len;
    tf->has_raw = true;
    return code;
  }
  case 13:
    if (clg_pb_want(r, f, CLG_PB_BYTES, "external_data") != CLG_OK)
      return CLG_INVALID_ARGUMENT;
    return read_external_entry(r, f, tf);
  case 14: {
    clg_code code = clg_pb_want(r, f, CLG_PB_VARINT, "data_location");
    tf->external = f->v == 1;
    return code;
  }
  default:
    return CLG_OK;
  }
}

/* The external file's bytes [offset, offset+length) for tf: the location must name a file
 * inside base_dir (no absolute path, no "..", no link leading out). */
static clg_code read_external(tensor_fields *tf, const char *base_dir, const char *where,
                              uint8_t **out, size_t *len)
{
  *out = NULL;
  *len = 0;
  if (!tf->location || !tf->location[0])
    return clg_error(CLG_INVALID_ARGUMENT, "%s: external data without a location", where);
  if (!base_dir)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: external data '%s' needs the model's folder (import from a file)", where,
                     tf->location);
  const char *loc = tf->location;
  bool up = strncmp(loc, "../", 3) == 0 || strstr(loc, "/../") ||
            (strlen(loc) >= 3 && strcmp(loc + strlen(loc) - 3, "/..") == 0) ||
            strcmp(loc, "..") == 0;
  if (loc[0] == '/' || up)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: external data location '%s' lies outside the model's folder", where, loc);
  char path[PATH_MAX], real_base[PATH_MAX], real_file[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", base_dir, loc) >= (int)sizeof path)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: external data path too long", where);
  if (!realpath(base_dir, real_base) || !realpath(path, real_file))
    return clg_error(CLG_NOT_FOUND, "%s: external data file %s cannot be opened", where, path);
  size_t bl = strlen(real_base);
  if (strncmp(real_file, real_base, bl) != 0 || (real_file[bl] != '/' && bl > 1))
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: external data '%s' resolves to %s, outside the model's folder %s", where,
                     loc, real_file, real_base);
  uint8_t *bytes;
  size_t size;
  clg_code code = clg_imp_read_file(path, &bytes, &size);
  if (code != CLG_OK)
    return code;
  uint64_t off = (uint64_t)tf->ext_offset;
  uint64_t n = tf->ext_length ? (uint64_t)tf->ext_length : (off <= size ? size - off : 0);
  if (off > size || n > size - off) {
    free(bytes);
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: external data '%s' asks for bytes [%llu, %llu) of a %zu-byte file", where,
                     loc, (unsigned long long)off, (unsigned long long)(off + n), size);
  }
  memmove(bytes, bytes + off, (size_t)n);
  *out = bytes;
  *len = (size_t)n;
  return CLG_OK;
}

clg_code clg_imp_read_onnx_tensor(const clg_pb *parent, clg_imp_tensor *t, char **name,
                                  const char *base_dir, const char *where)
{
  tensor_fields tf = {0};
  clg_pb_field f;
  clg_pb r = *parent;
  r.what = "TensorProto";
  tf.r = &r;
  int got;
  clg_code code = CLG_OK;
  /* data_type decides the typed field's element size: read it first */
  clg_pb scan = r;
  while ((got = clg_pb_next(&scan, &f)) > 0)
    if (f.number == 2 && f.wire == CLG_PB_VARINT)
      tf.dtype = (int64_t)f.v;
  if (got < 0)
    return CLG_INVALID_ARGUMENT;
  t->tf_dtype = clg_imp_onnx_dtype_to_tf(tf.dtype);
  tf.es = clg_imp_tf_dtype_size(t->tf_dtype);
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0)
    code = read_tensor_field(&r, &f, &tf, name);
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  char label[1200];
  snprintf(label, sizeof label, "%s: %s", where, name && *name ? *name : "TensorProto");
  if (code == CLG_OK && tf.ndims_over)
    code = clg_error(CLG_UNIMPLEMENTED, "%s: more than %d dims", label, CLG_MAX_RANK);
  if (code == CLG_OK && !t->tf_dtype)
    code =
        clg_error(CLG_INVALID_ARGUMENT, "%s: unknown data_type %lld", label, (long long)tf.dtype);
  t->shape = tf.shape;
  uint8_t *ext = NULL;
  size_t ext_len = 0;
  if (code == CLG_OK && tf.external) {
    code = read_external(&tf, base_dir, label, &ext, &ext_len);
    if (code == CLG_OK)
      code = clg_imp_tensor_from_raw(t, ext, ext_len, label);
  } else if (code == CLG_OK && tf.has_raw) {
    if (tf.typed_field)
      code = clg_error(CLG_INVALID_ARGUMENT, "%s: TensorProto has both raw_data and %s", label,
                       field_name(tf.typed_field));
    else
      code = clg_imp_tensor_from_raw(t, tf.raw, tf.raw_len, label);
  } else if (code == CLG_OK) {
    if (tf.typed_field && tf.typed_field != typed_field_of(tf.dtype))
      code = clg_error(CLG_INVALID_ARGUMENT, "%s: data_type %lld is not stored in %s", label,
                       (long long)tf.dtype, field_name(tf.typed_field));
    else
      code = clg_imp_tensor_from_raw(t, tf.typed, tf.typed_len, label);
  }
  free(ext);
  free(tf.typed);
  free(tf.location);
  return code;
}

clg_code clg_import_load_tensor(const char *path, clg_tensor **out)
{
  if (!out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_import_load_tensor: out is NULL");
  *out = NULL;
  if (!path)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_import_load_tensor: path is NULL");
  uint8_t *bytes;
  size_t len;
  clg_code code = clg_imp_read_file(path, &bytes, &len);
  if (code != CLG_OK)
    return code;
  clg_pb r;
  clg_pb_init(&r, bytes, bytes, len, "TensorProto", path);
  clg_imp_tensor t = {0};
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  code = clg_imp_read_onnx_tensor(&r, &t, NULL, dir, path);
  free(bytes);
  if (code == CLG_OK && !t.value) {
    char dt[24];
    code = clg_error(CLG_UNIMPLEMENTED, "%s: tensors of %s are not supported by clgraph", path,
                     clg_imp_tf_dtype_name(t.tf_dtype, dt));
  }
  if (code == CLG_OK)
    *out = t.value;
  else
    clg_imp_tensor_clear(&t);
  return code;
}

/* --- AttributeProto ------------------------------------------------------------------------- */

typedef struct attr_ctx {
  clg_imp_attr *a;
  const clg_pb *r;
} attr_ctx;

static clg_code list_int(void *ctx, uint64_t v)
{
  clg_imp_attr *a = ((attr_ctx *)ctx)->a;
  void *grown;
  int64_t *e = append_zeroed(a->ints, &a->n, sizeof *e, &grown);
  a->ints = grown;
  if (!e)
    return CLG_RESOURCE_EXHAUSTED;
  *e = (int64_t)v;
  return CLG_OK;
}

static clg_code list_float(void *ctx, uint64_t v)
{
  clg_imp_attr *a = ((attr_ctx *)ctx)->a;
  void *grown;
  double *e = append_zeroed(a->floats, &a->n, sizeof *e, &grown);
  a->floats = grown;
  if (!e)
    return CLG_RESOURCE_EXHAUSTED;
  uint32_t bits = (uint32_t)v;
  float x;
  memcpy(&x, &bits, 4);
  *e = x;
  return CLG_OK;
}

static clg_code attr_tensor(clg_pb *r, const clg_pb_field *f, clg_imp_tensor *t,
                            const char *base_dir, const char *where)
{
  clg_code code = clg_pb_want(r, f, CLG_PB_BYTES, "t");
  if (code != CLG_OK)
    return code;
  clg_pb sub;
  clg_pb_sub(&sub, r, f, "TensorProto");
  return clg_imp_read_onnx_tensor(&sub, t, NULL, base_dir, where);
}

static clg_code read_attr_field(clg_pb *r, const clg_pb_field *f, clg_imp_attr *a,
                                const char *base_dir, const char *where, bool weights)
{
  attr_ctx ctx = {a, r};
  clg_code code = CLG_OK;
  static const clg_imp_attr_kind list_elem[] = {
      [7] = CLG_IMP_F, [8] = CLG_IMP_I, [9] = CLG_IMP_S, [10] = CLG_IMP_TENSOR};
  /* one list per attribute: its length counts one kind of element */
  if (f->number >= 7 && f->number <= 10 && a->n && a->elem != list_elem[f->number])
    return clg_error(CLG_INVALID_ARGUMENT, "%s: attribute '%s' mixes lists of two kinds", where,
                     a->name ? a->name : "");
  switch (f->number) {
  case 1:
    return take_string(r, f, "name", &a->name);
  case 2: {
    if ((code = clg_pb_want(r, f, CLG_PB_FIXED32, "f")) != CLG_OK)
      return code;
    uint32_t bits = (uint32_t)f->v;
    float x;
    memcpy(&x, &bits, 4);
    a->f = x;
    a->kind = CLG_IMP_F;
    return CLG_OK;
  }
  case 3:
    a->i = (int64_t)f->v;
    a->kind = CLG_IMP_I;
    return clg_pb_want(r, f, CLG_PB_VARINT, "i");
  case 4:
    a->kind = CLG_IMP_S;
    code = take_string(r, f, "s", &a->s);
    a->len = f->len;
    return code;
  case 5:
    a->kind = CLG_IMP_TENSOR;
    if (!weights)
      return clg_pb_want(r, f, CLG_PB_BYTES, "t");
    return attr_tensor(r, f, &a->tensor, base_dir, where);
  case 6:
  case 11:
    a->kind = CLG_IMP_FUNC; /* a subgraph (If, Loop, Scan): kept by kind only */
    return clg_pb_want(r, f, CLG_PB_BYTES, "g");
  case 7:
    a->kind = CLG_IMP_LIST;
    a->elem = CLG_IMP_F;
    return clg_pb_repeated(r, f, CLG_PB_FIXED32, "floats", list_float, &ctx);
  case 8:
    a->kind = CLG_IMP_LIST;
    a->elem = CLG_IMP_I;
    return clg_pb_repeated(r, f, CLG_PB_VARINT, "ints", list_int, &ctx);
  case 9:
    a->kind = CLG_IMP_LIST;
    a->elem = CLG_IMP_S;
    return push_string(r, f, "strings", &a->strs, &a->n);
  case 10: {
    a->kind = CLG_IMP_LIST;
    a->elem = CLG_IMP_TENSOR;
    void *grown;
    clg_imp_tensor *t = append_zeroed(a->tensors, &a->n, sizeof *t, &grown);
    a->tensors = grown;
    if (!t)
      return CLG_RESOURCE_EXHAUSTED;
    return weights ? attr_tensor(r, f, t, base_dir, where)
                   : clg_pb_want(r, f, CLG_PB_BYTES, "tensors");
  }
  case 21:
    return clg_error(CLG_UNIMPLEMENTED, "%s: attribute references (functions) are not supported",
                     where);
  default:
    return CLG_OK;
  }
}

static clg_code read_attr(const clg_pb *parent, const clg_pb_field *pf, clg_imp_node *n,
                          const char *base_dir, bool weights)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "attribute");
  if (code != CLG_OK)
    return code;
  void *grown;
  clg_imp_attr *a = append_zeroed(n->attrs, &n->num_attrs, sizeof *a, &grown);
  n->attrs = grown;
  if (!a)
    return CLG_RESOURCE_EXHAUSTED;
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "AttributeProto");
  clg_pb_field f;
  int got;
  char where[1200];
  snprintf(where, sizeof where, "%s: node '%s'", clg_pb_file(parent), n->name ? n->name : "");
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0)
    code = read_attr_field(&r, &f, a, base_dir, where, weights);
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  if (code == CLG_OK && !a->name)
    code = clg_error(CLG_INVALID_ARGUMENT, "%s: an attribute without a name", where);
  return code;
}

/* --- NodeProto ----------------------------------------------------------------------------- */

static clg_code read_node(const clg_pb *parent, const clg_pb_field *pf, clg_imp_node *n,
                          const char *base_dir, bool weights)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "node");
  if (code != CLG_OK)
    return code;
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "NodeProto");
  clg_pb_field f;
  int got;
  /* the name first, for the errors of the attributes */
  clg_pb scan = r;
  while (code == CLG_OK && (got = clg_pb_next(&scan, &f)) > 0)
    if (f.number == 3)
      code = take_string(&scan, &f, "name", &n->name);
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
    switch (f.number) {
    case 1:
      code = push_string(&r, &f, "input", &n->inputs, &n->num_inputs);
      break;
    case 2:
      code = push_string(&r, &f, "output", &n->outputs, &n->num_outputs);
      break;
    case 4:
      code = take_string(&r, &f, "op_type", &n->op);
      break;
    case 5:
      code = read_attr(&r, &f, n, base_dir, weights);
      break;
    case 7:
      code = take_string(&r, &f, "domain", &n->domain);
      break;
    default:
      break;
    }
  }
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  if (code != CLG_OK)
    return code;
  if (!n->op || !n->op[0])
    return clg_error(CLG_INVALID_ARGUMENT, "%s: node '%s' has no op_type", clg_pb_file(parent),
                     n->name ? n->name : "");
  /* an unnamed node is named after its first output, for errors and scopes */
  for (int i = 0; (!n->name || !n->name[0]) && i < n->num_outputs; i++)
    if (n->outputs[i][0]) {
      free(n->name);
      n->name = clg_strdup(n->outputs[i]);
    }
  if ((!n->name && !(n->name = clg_strdup(""))) || (!n->domain && !(n->domain = clg_strdup(""))) ||
      !(n->device = clg_strdup("")))
    return oom();
  return CLG_OK;
}

/* --- ValueInfoProto -------------------------------------------------------------------------- */

static clg_code read_dim(const clg_pb *parent, const clg_pb_field *pf, clg_imp_shape *s)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "dim");
  if (code != CLG_OK)
    return code;
  if (s->rank >= CLG_MAX_RANK)
    return clg_error(CLG_UNIMPLEMENTED, "%s: a shape of more than %d dims", clg_pb_file(parent),
                     CLG_MAX_RANK);
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "TensorShapeProto.Dimension");
  clg_pb_field f;
  int64_t d = -1; /* dim_param or nothing: unknown */
  int got;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0)
    if (f.number == 1) {
      code = clg_pb_want(&r, &f, CLG_PB_VARINT, "dim_value");
      d = (int64_t)f.v;
    }
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  s->dims[s->rank++] = d < 0 ? -1 : d;
  return code;
}

/* TypeProto.tensor_type: elem_type and shape (rank -1 when no shape is given). */
static clg_code read_type(const clg_pb *parent, const clg_pb_field *pf, clg_imp_sig *sig)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "type");
  if (code != CLG_OK)
    return code;
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "TypeProto");
  clg_pb_field f;
  int got;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
    if (f.number != 1) /* sequence, map, optional types: left unknown */
      continue;
    if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "tensor_type")) != CLG_OK)
      break;
    clg_pb tt;
    clg_pb_sub(&tt, &r, &f, "TypeProto.Tensor");
    clg_pb_field g;
    int got2;
    while (code == CLG_OK && (got2 = clg_pb_next(&tt, &g)) > 0) {
      if (g.number == 1) {
        code = clg_pb_want(&tt, &g, CLG_PB_VARINT, "elem_type");
        sig->tf_dtype = clg_imp_onnx_dtype_to_tf((int64_t)g.v);
      } else if (g.number == 2) {
        if ((code = clg_pb_want(&tt, &g, CLG_PB_BYTES, "shape")) != CLG_OK)
          break;
        clg_pb sh;
        clg_pb_sub(&sh, &tt, &g, "TensorShapeProto");
        clg_pb_field d;
        int got3;
        sig->shape.rank = 0;
        while (code == CLG_OK && (got3 = clg_pb_next(&sh, &d)) > 0)
          if (d.number == 1)
            code = read_dim(&sh, &d, &sig->shape);
        if (code == CLG_OK && got3 < 0)
          code = CLG_INVALID_ARGUMENT;
      }
    }
    if (code == CLG_OK && got2 < 0)
      code = CLG_INVALID_ARGUMENT;
  }
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  return code;
}

static clg_code read_value_info(const clg_pb *parent, const clg_pb_field *pf, clg_imp_sig **v,
                                int *n)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "ValueInfoProto");
  if (code != CLG_OK)
    return code;
  void *grown;
  clg_imp_sig *s = append_zeroed(*v, n, sizeof *s, &grown);
  *v = grown;
  if (!s)
    return CLG_RESOURCE_EXHAUSTED;
  s->shape.rank = -1;
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "ValueInfoProto");
  clg_pb_field f;
  int got;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
    if (f.number == 1)
      code = take_string(&r, &f, "name", &s->name);
    else if (f.number == 2)
      code = read_type(&r, &f, s);
  }
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  if (code == CLG_OK && (!s->name || !s->name[0]))
    code = clg_error(CLG_INVALID_ARGUMENT, "%s: a graph input or output without a name",
                     clg_pb_file(parent));
  return code;
}

/* --- GraphProto and ModelProto -------------------------------------------------------------- */

static clg_code read_init(const clg_pb *parent, const clg_pb_field *pf, clg_imp_model *m,
                          const char *base_dir, bool weights)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "initializer");
  if (code != CLG_OK)
    return code;
  void *grown;
  clg_imp_init *in = append_zeroed(m->inits, &m->num_inits, sizeof *in, &grown);
  m->inits = grown;
  if (!in)
    return CLG_RESOURCE_EXHAUSTED;
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "TensorProto");
  if (!weights) { /* inspect: the name, dtype and dims only */
    clg_pb_field f;
    int got;
    tensor_fields tf = {0};
    while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
      if (f.number == 8)
        code = take_string(&r, &f, "name", &in->name);
      else if (f.number == 1)
        code = clg_pb_repeated(&r, &f, CLG_PB_VARINT, "dims", dims_each, &tf);
      else if (f.number == 2)
        in->t.tf_dtype = clg_imp_onnx_dtype_to_tf((int64_t)f.v);
    }
    in->t.shape = tf.shape;
    if (code == CLG_OK && got < 0)
      code = CLG_INVALID_ARGUMENT;
  } else
    code = clg_imp_read_onnx_tensor(&r, &in->t, &in->name, base_dir, clg_pb_file(parent));
  if (code == CLG_OK && (!in->name || !in->name[0]))
    code =
        clg_error(CLG_INVALID_ARGUMENT, "%s: an initializer without a name", clg_pb_file(parent));
  return code;
}

static clg_code read_graph(const clg_pb *parent, const clg_pb_field *pf, clg_imp_model *m,
                           const char *base_dir, bool weights)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "graph");
  if (code != CLG_OK)
    return code;
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "GraphProto");
  clg_pb_field f;
  int got;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
    switch (f.number) {
    case 1: {
      clg_imp_node *n = clg_imp_model_add(m);
      code = n ? read_node(&r, &f, n, base_dir, weights) : CLG_RESOURCE_EXHAUSTED;
      break;
    }
    case 5:
      code = read_init(&r, &f, m, base_dir, weights);
      break;
    case 11:
      code = read_value_info(&r, &f, &m->sig_inputs, &m->num_sig_inputs);
      break;
    case 12:
      code = read_value_info(&r, &f, &m->sig_outputs, &m->num_sig_outputs);
      break;
    case 15:
      code = clg_error(CLG_UNIMPLEMENTED, "%s: sparse initializers are not supported",
                       clg_pb_file(&r));
      break;
    default:
      break;
    }
  }
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  return code;
}

static clg_code read_opset(const clg_pb *parent, const clg_pb_field *pf, clg_imp_model *m)
{
  clg_code code = clg_pb_want(parent, pf, CLG_PB_BYTES, "opset_import");
  if (code != CLG_OK)
    return code;
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "OperatorSetIdProto");
  clg_pb_field f;
  int got;
  char *domain = NULL;
  int64_t version = 0;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
    if (f.number == 1)
      code = take_string(&r, &f, "domain", &domain);
    else if (f.number == 2) {
      code = clg_pb_want(&r, &f, CLG_PB_VARINT, "version");
      version = (int64_t)f.v;
    }
  }
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  if (code == CLG_OK && (!domain || !domain[0] || strcmp(domain, "ai.onnx") == 0)) {
    if (version < ONNX_MIN_OPSET || version > ONNX_MAX_OPSET)
      code = clg_error(CLG_UNIMPLEMENTED,
                       "%s: opset %lld of the default ONNX domain is not supported (clgraph "
                       "reads opsets %d to %d)",
                       clg_pb_file(parent), (long long)version, ONNX_MIN_OPSET, ONNX_MAX_OPSET);
    else
      m->opset = (int)version;
  }
  free(domain);
  return code;
}

clg_code clg_imp_read_onnx(const uint8_t *bytes, size_t len, const char *file, const char *base_dir,
                           bool weights, clg_imp_model **out)
{
  *out = NULL;
  clg_imp_model *m = clg_imp_model_new("onnx", file);
  if (!m)
    return CLG_RESOURCE_EXHAUSTED;
  clg_pb r;
  clg_pb_init(&r, bytes, bytes, len, "ModelProto", m->file);
  clg_pb_field f;
  int got;
  clg_code code = CLG_OK;
  bool has_graph = false;
  int64_t ir = 0;
  while (code == CLG_OK && (got = clg_pb_next(&r, &f)) > 0) {
    switch (f.number) {
    case 1:
      code = clg_pb_want(&r, &f, CLG_PB_VARINT, "ir_version");
      ir = (int64_t)f.v;
      break;
    case 2:
      code = take_string(&r, &f, "producer_name", &m->producer);
      break;
    case 7:
      if (has_graph)
        code = clg_error(CLG_INVALID_ARGUMENT, "%s: ModelProto has two graphs", clg_pb_file(&r));
      else
        code = read_graph(&r, &f, m, base_dir, weights);
      has_graph = true;
      break;
    case 8:
      code = read_opset(&r, &f, m);
      break;
    default:
      break;
    }
  }
  if (code == CLG_OK && got < 0)
    code = CLG_INVALID_ARGUMENT;
  if (code == CLG_OK && !has_graph)
    code =
        clg_error(CLG_INVALID_ARGUMENT, "%s: ModelProto has no graph (field 7)", clg_pb_file(&r));
  if (code == CLG_OK && ir < 3 && !m->opset)
    m->opset = 1; /* ir_version 1 and 2 predate opset_import: opset 1 */
  if (code == CLG_OK && !m->opset)
    code = clg_error(CLG_INVALID_ARGUMENT,
                     "%s: ModelProto imports no opset of the default ONNX domain", clg_pb_file(&r));
  /* Graph inputs that are initializers (ir_version < 4 lists them) are constants. */
  for (int i = 0; code == CLG_OK && i < m->num_sig_inputs; i++)
    for (int j = 0; j < m->num_inits; j++)
      if (strcmp(m->sig_inputs[i].name, m->inits[j].name) == 0) {
        free(m->sig_inputs[i].name);
        memmove(&m->sig_inputs[i], &m->sig_inputs[i + 1],
                sizeof *m->sig_inputs * (size_t)(m->num_sig_inputs - i - 1));
        m->num_sig_inputs--;
        i--;
        break;
      }
  if (code != CLG_OK) {
    clg_imp_model_free(m);
    return code;
  }
  *out = m;
  return CLG_OK;
}
