/* A binary tensorflow.GraphDef (graph.proto, node_def.proto, attr_value.proto, tensor.proto,
 * tensor_shape.proto, types.proto; field numbers in model-formats.md) into the neutral model.
 * Unknown fields are skipped, as protobuf readers do; known fields must have their wire type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"

#define MAX_FILLED_ELEMENTS CLG_IMP_MAX_FILLED

static char *dup_bytes(const clg_pb_field *f)
{
  char *s = malloc(f->len + 1);
  if (!s) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading a GraphDef");
    return NULL;
  }
  if (f->len)
    memcpy(s, f->data, f->len);
  s[f->len] = 0;
  return s;
}

/* Replaces *dst with the field's bytes as a string. */
static clg_code take_string(const clg_pb *r, const clg_pb_field *f, const char *name, char **dst)
{
  clg_code code = clg_pb_want(r, f, CLG_PB_BYTES, name);
  if (code != CLG_OK)
    return code;
  char *s = dup_bytes(f);
  if (!s)
    return CLG_RESOURCE_EXHAUSTED;
  free(*dst);
  *dst = s;
  return CLG_OK;
}

static clg_code oom(void)
{
  return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading a GraphDef");
}

/* --- growable arrays ------------------------------------------------------------------------ */

static bool grow(void **v, int n, size_t es)
{
  if (n & (n - 1) && n > 4)
    return true; /* capacity is the next power of two >= n (and at least 4) */
  size_t cap = n < 4 ? 4 : 2 * (size_t)n;
  void *g = realloc(*v, cap * es);
  if (!g)
    return false;
  *v = g;
  return true;
}

/* --- TensorShapeProto ------------------------------------------------------------------------ */

static clg_code read_shape(const clg_pb *parent, const clg_pb_field *pf, clg_imp_shape *s)
{
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "TensorShapeProto");
  clg_code code;
  s->rank = 0;
  bool unknown = false;
  clg_pb_field f;
  int k;
  while ((k = clg_pb_next(&r, &f)) > 0) {
    if (f.number == 2) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "dim")) != CLG_OK)
        return code;
      if (s->rank >= CLG_MAX_RANK)
        return clg_error(CLG_INVALID_ARGUMENT,
                         "%s: TensorShapeProto at byte %zu has more than %d dims (clgraph's "
                         "CLG_MAX_RANK)",
                         clg_pb_file(&r), f.offset, CLG_MAX_RANK);
      clg_pb d;
      clg_pb_sub(&d, &r, &f, "TensorShapeProto.Dim");
      int64_t size = 0;
      clg_pb_field g;
      int j;
      while ((j = clg_pb_next(&d, &g)) > 0)
        if (g.number == 1) {
          if ((code = clg_pb_want(&d, &g, CLG_PB_VARINT, "size")) != CLG_OK)
            return code;
          size = (int64_t)g.v;
        }
      if (j < 0)
        return CLG_INVALID_ARGUMENT;
      if (size < -1)
        return clg_error(CLG_INVALID_ARGUMENT,
                         "%s: TensorShapeProto.Dim.size at byte %zu is %lld (a size is >= 0, or "
                         "-1 for unknown)",
                         clg_pb_file(&r), f.offset, (long long)size);
      s->dims[s->rank++] = size;
    } else if (f.number == 3) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_VARINT, "unknown_rank")) != CLG_OK)
        return code;
      unknown = f.v != 0;
    }
  }
  if (k < 0)
    return CLG_INVALID_ARGUMENT;
  if (unknown)
    s->rank = -1;
  return CLG_OK;
}

/* --- TensorProto ----------------------------------------------------------------------------- */

typedef struct typed_ctx {
  int field; /* 5 float, 6 double, 7 int, 10 int64, 11 bool, 13 half, 16 uint32, 17 uint64 */
  size_t es; /* the tensor's element size */
  uint8_t *buf;
  size_t count, cap;
} typed_ctx;

static clg_code typed_each(void *vctx, uint64_t v)
{
  typed_ctx *c = vctx;
  if (c->count == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 16;
    if (cap > MAX_FILLED_ELEMENTS * 2u)
      return clg_error(CLG_INVALID_ARGUMENT, "a TensorProto holds more than %u typed values",
                       MAX_FILLED_ELEMENTS * 2u);
    uint8_t *g = realloc(c->buf, cap * c->es);
    if (!g)
      return oom();
    c->buf = g;
    c->cap = cap;
  }
  /* Each typed field's wire value holds the element in its low bytes (fixed32 float bits,
   * varints of int8..int32, uint8/16, bool, half's 16 bits): copied at the element's width
   * (little-endian hosts, as the rest of clgraph assumes). */
  uint64_t x = v;
  memcpy(c->buf + c->count * c->es, &x, c->es < 8 ? c->es : 8);
  c->count++;
  return CLG_OK;
}

/* Which typed field holds values of a DataType (TensorFlow's tensor.proto comments). */
static int typed_field_of(int tf)
{
  switch (tf > 100 ? tf - 100 : tf) {
  case 1:
    return 5;
  case 2:
    return 6;
  case 3:
  case 4:
  case 5:
  case 6:
  case 11:
  case 12:
  case 13:
  case 15:
  case 16:
  case 17:
    return 7;
  case 9:
    return 10;
  case 10:
    return 11;
  case 14:
  case 19:
    return 13;
  case 22:
    return 16;
  case 23:
    return 17;
  default:
    return 0;
  }
}

static const char *typed_field_name(int field)
{
  switch (field) {
  case 5:
    return "float_val";
  case 6:
    return "double_val";
  case 7:
    return "int_val";
  case 10:
    return "int64_val";
  case 11:
    return "bool_val";
  case 13:
    return "half_val";
  case 16:
    return "uint32_val";
  case 17:
    return "uint64_val";
  default:
    return "?";
  }
}

clg_code clg_imp_read_tensor(const clg_pb *parent, clg_imp_tensor *t, const char *where)
{
  clg_pb r = *parent;
  clg_code code;
  clg_pb_field f, content = {0};
  bool has_content = false;
  t->tf_dtype = 0;
  t->shape.rank = 0;
  int k;
  while ((k = clg_pb_next(&r, &f)) > 0) {
    if (f.number == 1) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_VARINT, "dtype")) != CLG_OK)
        return code;
      t->tf_dtype = f.v > 1000 ? 1000 : (int)f.v;
    } else if (f.number == 2) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "tensor_shape")) != CLG_OK)
        return code;
      if ((code = read_shape(&r, &f, &t->shape)) != CLG_OK)
        return code;
    } else if (f.number == 4) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "tensor_content")) != CLG_OK)
        return code;
      content = f;
      has_content = true;
    }
  }
  if (k < 0)
    return CLG_INVALID_ARGUMENT;
  char dt[24];
  if (!clg_imp_tf_dtype_known(t->tf_dtype))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: %s: TensorProto has unknown dtype %s",
                     clg_pb_file(parent), where, clg_imp_tf_dtype_name(t->tf_dtype, dt));
  char w[512];
  snprintf(w, sizeof w, "%s: %s", clg_pb_file(parent), where);
  if (has_content)
    return clg_imp_tensor_from_raw(t, content.data, content.len, w);
  size_t es = clg_imp_tf_dtype_size(t->tf_dtype);
  int want = typed_field_of(t->tf_dtype);
  if (!es || !want) {
    /* Strings, variants, complex: no clgraph op takes them; counted, not decoded. */
    return clg_error(CLG_UNIMPLEMENTED, "%s: tensors of %s are not supported", w,
                     clg_imp_tf_dtype_name(t->tf_dtype, dt));
  }
  typed_ctx c = {.field = want, .es = es};
  r = *parent;
  while ((k = clg_pb_next(&r, &f)) > 0) {
    bool typed = (f.number >= 5 && f.number <= 7) || f.number == 10 || f.number == 11 ||
                 f.number == 13 || f.number == 16 || f.number == 17;
    if (!typed)
      continue;
    if ((int)f.number != want) {
      free(c.buf);
      return clg_error(CLG_INVALID_ARGUMENT, "%s: a TensorProto of %s holds %s (expected %s)", w,
                       clg_imp_tf_dtype_name(t->tf_dtype, dt), typed_field_name((int)f.number),
                       typed_field_name(want));
    }
    int wire = want == 5 ? CLG_PB_FIXED32 : want == 6 ? CLG_PB_FIXED64 : CLG_PB_VARINT;
    c.field = want;
    if ((code = clg_pb_repeated(&r, &f, wire, typed_field_name(want), typed_each, &c)) != CLG_OK) {
      free(c.buf);
      return code;
    }
  }
  if (k < 0) {
    free(c.buf);
    return CLG_INVALID_ARGUMENT;
  }
  code = clg_imp_tensor_from_values(t, c.buf, c.count, typed_field_name(want), w);
  free(c.buf);
  return code;
}

/* --- AttrValue ------------------------------------------------------------------------------- */

typedef struct list_ctx {
  clg_imp_attr *a;
  clg_imp_attr_kind elem;
} list_ctx;

static clg_code list_int(void *vctx, uint64_t v)
{
  list_ctx *c = vctx;
  clg_imp_attr *a = c->a;
  if (a->elem && a->elem != c->elem)
    return clg_error(CLG_INVALID_ARGUMENT, "AttrValue.list '%s' mixes kinds of values", a->name);
  a->elem = c->elem;
  if (!grow((void **)&a->ints, a->n, sizeof *a->ints))
    return oom();
  a->ints[a->n++] = (int64_t)v;
  return CLG_OK;
}

static clg_code list_float(void *vctx, uint64_t v)
{
  list_ctx *c = vctx;
  clg_imp_attr *a = c->a;
  if (a->elem && a->elem != CLG_IMP_F)
    return clg_error(CLG_INVALID_ARGUMENT, "AttrValue.list '%s' mixes kinds of values", a->name);
  a->elem = CLG_IMP_F;
  if (!grow((void **)&a->floats, a->n, sizeof *a->floats))
    return oom();
  float f;
  uint32_t b = (uint32_t)v;
  memcpy(&f, &b, 4);
  a->floats[a->n++] = f;
  return CLG_OK;
}

static clg_code read_list(const clg_pb *parent, const clg_pb_field *pf, clg_imp_attr *a,
                          const char *where)
{
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "AttrValue.ListValue");
  a->kind = CLG_IMP_LIST;
  clg_pb_field f;
  clg_code code = CLG_OK;
  int k;
  while ((k = clg_pb_next(&r, &f)) > 0) {
    clg_imp_attr_kind elem = f.number == 2   ? CLG_IMP_S
                             : f.number == 3 ? CLG_IMP_I
                             : f.number == 4 ? CLG_IMP_F
                             : f.number == 5 ? CLG_IMP_B
                             : f.number == 6 ? CLG_IMP_TYPE
                             : f.number == 7 ? CLG_IMP_SHAPE
                             : f.number == 8 ? CLG_IMP_TENSOR
                                             : CLG_IMP_NONE;
    if (elem == CLG_IMP_NONE)
      continue;
    if (a->elem && a->elem != elem)
      return clg_error(CLG_INVALID_ARGUMENT, "%s: %s: AttrValue.list '%s' mixes kinds of values",
                       clg_pb_file(&r), where, a->name);
    list_ctx c = {a, elem};
    switch (elem) {
    case CLG_IMP_I:
    case CLG_IMP_B:
    case CLG_IMP_TYPE:
      code = clg_pb_repeated(&r, &f, CLG_PB_VARINT,
                             elem == CLG_IMP_I   ? "i"
                             : elem == CLG_IMP_B ? "b"
                                                 : "type",
                             list_int, &c);
      break;
    case CLG_IMP_F:
      code = clg_pb_repeated(&r, &f, CLG_PB_FIXED32, "f", list_float, &c);
      break;
    case CLG_IMP_S:
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "s")) != CLG_OK)
        return code;
      if (!grow((void **)&a->strs, a->n, sizeof *a->strs))
        return oom();
      if (!(a->strs[a->n] = dup_bytes(&f)))
        return CLG_RESOURCE_EXHAUSTED;
      a->n++;
      a->elem = elem;
      break;
    case CLG_IMP_SHAPE:
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "shape")) != CLG_OK)
        return code;
      if (!grow((void **)&a->shapes, a->n, sizeof *a->shapes))
        return oom();
      if ((code = read_shape(&r, &f, &a->shapes[a->n])) != CLG_OK)
        return code;
      a->n++;
      a->elem = elem;
      break;
    case CLG_IMP_TENSOR: {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "tensor")) != CLG_OK)
        return code;
      if (!grow((void **)&a->tensors, a->n, sizeof *a->tensors))
        return oom();
      memset(&a->tensors[a->n], 0, sizeof a->tensors[a->n]);
      a->n++; /* counted first, so that clearing frees a half-read one */
      a->elem = elem;
      clg_pb t;
      clg_pb_sub(&t, &r, &f, "TensorProto");
      if ((code = clg_imp_read_tensor(&t, &a->tensors[a->n - 1], where)) != CLG_OK)
        return code;
      break;
    }
    default:
      break;
    }
    if (code != CLG_OK)
      return code;
  }
  return k < 0 ? CLG_INVALID_ARGUMENT : CLG_OK;
}

static clg_code read_attr_value(const clg_pb *parent, const clg_pb_field *pf, clg_imp_attr *a,
                                const char *where)
{
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "AttrValue");
  clg_pb_field f;
  clg_code code;
  int k;
  while ((k = clg_pb_next(&r, &f)) > 0) {
    switch (f.number) {
    case 1:
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "list")) != CLG_OK ||
          (code = read_list(&r, &f, a, where)) != CLG_OK)
        return code;
      break;
    case 2:
    case 9:
      if ((code = take_string(&r, &f, f.number == 2 ? "s" : "placeholder", &a->s)) != CLG_OK)
        return code;
      a->len = f.len;
      a->kind = f.number == 2 ? CLG_IMP_S : CLG_IMP_FUNC;
      break;
    case 3:
    case 5:
    case 6:
      if ((code = clg_pb_want(&r, &f, CLG_PB_VARINT,
                              f.number == 3   ? "i"
                              : f.number == 5 ? "b"
                                              : "type")) != CLG_OK)
        return code;
      a->i = f.number == 5 ? f.v != 0 : (int64_t)f.v;
      a->kind = f.number == 3 ? CLG_IMP_I : f.number == 5 ? CLG_IMP_B : CLG_IMP_TYPE;
      break;
    case 4: {
      if ((code = clg_pb_want(&r, &f, CLG_PB_FIXED32, "f")) != CLG_OK)
        return code;
      float v;
      uint32_t b = (uint32_t)f.v;
      memcpy(&v, &b, 4);
      a->f = v;
      a->kind = CLG_IMP_F;
      break;
    }
    case 7:
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "shape")) != CLG_OK ||
          (code = read_shape(&r, &f, &a->shape)) != CLG_OK)
        return code;
      a->kind = CLG_IMP_SHAPE;
      break;
    case 8: {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "tensor")) != CLG_OK)
        return code;
      clg_imp_tensor_clear(&a->tensor);
      clg_pb t;
      clg_pb_sub(&t, &r, &f, "TensorProto");
      if ((code = clg_imp_read_tensor(&t, &a->tensor, where)) != CLG_OK)
        return code;
      a->kind = CLG_IMP_TENSOR;
      break;
    }
    case 10: {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "func")) != CLG_OK)
        return code;
      clg_pb fn;
      clg_pb_sub(&fn, &r, &f, "NameAttrList");
      clg_pb_field g;
      int j;
      while ((j = clg_pb_next(&fn, &g)) > 0)
        if (g.number == 1 && (code = take_string(&fn, &g, "name", &a->s)) != CLG_OK)
          return code;
      if (j < 0)
        return CLG_INVALID_ARGUMENT;
      a->kind = CLG_IMP_FUNC;
      break;
    }
    default:
      break;
    }
  }
  return k < 0 ? CLG_INVALID_ARGUMENT : CLG_OK;
}

/* --- NodeDef --------------------------------------------------------------------------------- */

static clg_code read_attr_entry(const clg_pb *parent, const clg_pb_field *pf, clg_imp_node *n)
{
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "NodeDef.AttrEntry");
  if (!grow((void **)&n->attrs, n->num_attrs, sizeof *n->attrs))
    return oom();
  clg_imp_attr *a = &n->attrs[n->num_attrs++];
  memset(a, 0, sizeof *a);
  clg_pb_field f, value = {0};
  bool has_value = false;
  clg_code code;
  int k;
  while ((k = clg_pb_next(&r, &f)) > 0) {
    if (f.number == 1) {
      if ((code = take_string(&r, &f, "key", &a->name)) != CLG_OK)
        return code;
    } else if (f.number == 2) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "value")) != CLG_OK)
        return code;
      value = f;
      has_value = true;
    }
  }
  if (k < 0)
    return CLG_INVALID_ARGUMENT;
  if (!a->name && !(a->name = clg_strdup("")))
    return oom();
  char where[400];
  snprintf(where, sizeof where, "node '%.200s' attr '%.100s'", n->name ? n->name : "?", a->name);
  if (has_value)
    return read_attr_value(&r, &value, a, where);
  return CLG_OK;
}

static clg_code read_node(const clg_pb *parent, const clg_pb_field *pf, clg_imp_node *n)
{
  clg_pb r;
  clg_pb_sub(&r, parent, pf, "NodeDef");
  clg_pb_field f;
  clg_code code;
  int k;
  /* The name first, so that errors in attributes can name the node whatever the order. */
  while ((k = clg_pb_next(&r, &f)) > 0)
    if (f.number == 1 && (code = take_string(&r, &f, "name", &n->name)) != CLG_OK)
      return code;
  if (k < 0)
    return CLG_INVALID_ARGUMENT;
  clg_pb_sub(&r, parent, pf, "NodeDef");
  while ((k = clg_pb_next(&r, &f)) > 0) {
    switch (f.number) {
    case 2:
      if ((code = take_string(&r, &f, "op", &n->op)) != CLG_OK)
        return code;
      break;
    case 3:
      if (!grow((void **)&n->inputs, n->num_inputs, sizeof *n->inputs))
        return oom();
      n->inputs[n->num_inputs] = NULL;
      if ((code = take_string(&r, &f, "input", &n->inputs[n->num_inputs])) != CLG_OK)
        return code;
      n->num_inputs++;
      break;
    case 4:
      if ((code = take_string(&r, &f, "device", &n->device)) != CLG_OK)
        return code;
      break;
    case 5:
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "attr")) != CLG_OK ||
          (code = read_attr_entry(&r, &f, n)) != CLG_OK)
        return code;
      break;
    default:
      break;
    }
  }
  if (k < 0)
    return CLG_INVALID_ARGUMENT;
  if ((!n->name && !(n->name = clg_strdup(""))) || (!n->op && !(n->op = clg_strdup(""))) ||
      (!n->device && !(n->device = clg_strdup(""))))
    return oom();
  if (!n->name[0])
    return clg_error(CLG_INVALID_ARGUMENT, "%s: NodeDef at byte %zu has no name", clg_pb_file(&r),
                     pf->offset);
  if (!n->op[0])
    return clg_error(CLG_INVALID_ARGUMENT, "%s: node '%s' has no op", clg_pb_file(&r), n->name);
  return CLG_OK;
}

clg_code clg_imp_read_graphdef(const uint8_t *bytes, size_t len, const char *file,
                               clg_imp_model **out)
{
  *out = NULL;
  clg_imp_model *m = clg_imp_model_new("graphdef", file);
  if (!m)
    return CLG_RESOURCE_EXHAUSTED;
  clg_pb r;
  clg_pb_init(&r, bytes, bytes, len, "GraphDef", m->file);
  clg_pb_field f;
  clg_code code = CLG_OK;
  int k;
  while (code == CLG_OK && (k = clg_pb_next(&r, &f)) > 0) {
    if (f.number == 1) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "node")) != CLG_OK)
        break;
      clg_imp_node *n = clg_imp_model_add(m);
      if (!n) {
        code = CLG_RESOURCE_EXHAUSTED;
        break;
      }
      code = read_node(&r, &f, n);
    } else if (f.number == 4) {
      if ((code = clg_pb_want(&r, &f, CLG_PB_BYTES, "versions")) != CLG_OK)
        break;
      clg_pb v;
      clg_pb_sub(&v, &r, &f, "VersionDef");
      clg_pb_field g;
      int j;
      while ((j = clg_pb_next(&v, &g)) > 0)
        if (g.number == 1 && (code = clg_pb_want(&v, &g, CLG_PB_VARINT, "producer")) == CLG_OK) {
          char text[64];
          snprintf(text, sizeof text, "GraphDef producer %lld", (long long)(int32_t)g.v);
          char *p = clg_strdup(text);
          if (!p) {
            code = oom();
            break;
          }
          free(m->producer);
          m->producer = p;
        }
      if (j < 0)
        code = CLG_INVALID_ARGUMENT;
    }
  }
  if (code == CLG_OK && k < 0)
    code = CLG_INVALID_ARGUMENT;
  if (code != CLG_OK) {
    clg_imp_model_free(m);
    return code;
  }
  *out = m;
  return CLG_OK;
}
