/* The neutral model the readers fill and the importer builds: ownership, TensorFlow's DataType
 * numbers, and tensors from raw bytes (shape and byte count checked). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/import_internal.h"

clg_imp_model *clg_imp_model_new(const char *format, const char *file)
{
  clg_imp_model *m = calloc(1, sizeof *m);
  if (!m || !(m->file = clg_strdup(file ? file : "")) || !(m->producer = clg_strdup(""))) {
    clg_imp_model_free(m);
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading a model");
    return NULL;
  }
  m->format = format;
  return m;
}

void clg_imp_tensor_clear(clg_imp_tensor *t)
{
  clg_tensor_free(t->value);
  t->value = NULL;
}

void clg_imp_attr_clear(clg_imp_attr *a)
{
  free(a->name);
  free(a->s);
  clg_imp_tensor_clear(&a->tensor);
  free(a->ints);
  free(a->floats);
  if (a->strs)
    for (int i = 0; i < a->n; i++)
      free(a->strs[i]);
  free(a->strs);
  free(a->shapes);
  if (a->tensors)
    for (int i = 0; i < a->n; i++)
      clg_imp_tensor_clear(&a->tensors[i]);
  free(a->tensors);
  memset(a, 0, sizeof *a);
}

static void node_clear(clg_imp_node *n)
{
  free(n->name);
  free(n->op);
  free(n->device);
  for (int i = 0; i < n->num_inputs; i++)
    free(n->inputs[i]);
  free(n->inputs);
  for (int i = 0; i < n->num_attrs; i++)
    clg_imp_attr_clear(&n->attrs[i]);
  free(n->attrs);
  for (int i = 0; i < n->num_outputs; i++)
    free(n->outputs[i]);
  free(n->outputs);
  free(n->domain);
}

static void free_sigs(clg_imp_sig *v, int n)
{
  for (int i = 0; i < n; i++)
    free(v[i].name);
  free(v);
}

void clg_imp_model_free(clg_imp_model *m)
{
  if (!m)
    return;
  for (int i = 0; i < m->num_nodes; i++)
    node_clear(&m->nodes[i]);
  free(m->nodes);
  free_sigs(m->sig_inputs, m->num_sig_inputs);
  free_sigs(m->sig_outputs, m->num_sig_outputs);
  for (int i = 0; i < m->num_inits; i++) {
    free(m->inits[i].name);
    clg_imp_tensor_clear(&m->inits[i].t);
  }
  free(m->inits);
  free(m->producer);
  free(m->file);
  free(m);
}

clg_imp_node *clg_imp_model_add(clg_imp_model *m)
{
  if (m->num_nodes == m->cap_nodes) {
    int cap = m->cap_nodes ? 2 * m->cap_nodes : 64;
    clg_imp_node *grown = realloc(m->nodes, sizeof *grown * (size_t)cap);
    if (!grown) {
      clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory reading %s", m->file);
      return NULL;
    }
    m->nodes = grown;
    m->cap_nodes = cap;
  }
  clg_imp_node *n = &m->nodes[m->num_nodes++];
  memset(n, 0, sizeof *n);
  return n;
}

const clg_imp_attr *clg_imp_node_attr(const clg_imp_node *n, const char *name)
{
  for (int i = 0; i < n->num_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0)
      return &n->attrs[i];
  return NULL;
}

/* --- DataType -------------------------------------------------------------------------------- */

/* TensorFlow's types.proto, 1..23: name and element size (0: no fixed size). */
static const struct {
  const char *name;
  size_t size;
} tf_types[] = {
    {NULL, 0},           {"DT_FLOAT", 4},   {"DT_DOUBLE", 8},      {"DT_INT32", 4},
    {"DT_UINT8", 1},     {"DT_INT16", 2},   {"DT_INT8", 1},        {"DT_STRING", 0},
    {"DT_COMPLEX64", 8}, {"DT_INT64", 8},   {"DT_BOOL", 1},        {"DT_QINT8", 1},
    {"DT_QUINT8", 1},    {"DT_QINT32", 4},  {"DT_BFLOAT16", 2},    {"DT_QINT16", 2},
    {"DT_QUINT16", 2},   {"DT_UINT16", 2},  {"DT_COMPLEX128", 16}, {"DT_HALF", 2},
    {"DT_RESOURCE", 0},  {"DT_VARIANT", 0}, {"DT_UINT32", 4},      {"DT_UINT64", 8},
};
enum { NUM_TF_TYPES = (int)(sizeof tf_types / sizeof tf_types[0]) };

static int base_type(int tf) { return tf > 100 ? tf - 100 : tf; }

bool clg_imp_tf_dtype_known(int tf)
{
  int b = base_type(tf);
  return b >= 1 && b < NUM_TF_TYPES;
}

size_t clg_imp_tf_dtype_size(int tf)
{
  return clg_imp_tf_dtype_known(tf) ? tf_types[base_type(tf)].size : 0;
}

const char *clg_imp_tf_dtype_name(int tf, char buf[24])
{
  if (clg_imp_tf_dtype_known(tf)) {
    snprintf(buf, 24, "%s%s", tf_types[base_type(tf)].name, tf > 100 ? "_REF" : "");
    return buf;
  }
  snprintf(buf, 24, "DT_<%d>", tf);
  return buf;
}

int clg_imp_tf_dtype_parse(const char *name)
{
  for (int i = 1; i < NUM_TF_TYPES; i++)
    if (strcmp(name, tf_types[i].name) == 0)
      return i;
  return -1;
}

bool clg_imp_dtype(int tf, clg_dtype *out)
{
  switch (base_type(tf)) {
  case 1:
    *out = CLG_FLOAT32;
    return true;
  case 2:
    *out = CLG_FLOAT64;
    return true;
  case 3:
    *out = CLG_INT32;
    return true;
  case 9:
    *out = CLG_INT64;
    return true;
  case 10:
    *out = CLG_BOOL;
    return true;
  case 19:
    *out = CLG_FLOAT16;
    return true;
  case 4:
  case 5:
  case 6:
  case 17:
  case 22:
  case 23:
    *out = (clg_dtype)base_type(tf);
    return true;
  default:
    return false;
  }
}

/* --- tensors ------------------------------------------------------------------------------- */

static void shape_text(const clg_imp_shape *s, char *buf, size_t size)
{
  size_t k = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < s->rank && k < size; i++)
    k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "," : "", (long long)s->dims[i]);
  if (k < size)
    snprintf(buf + k, size - k, "]");
}

clg_code clg_imp_tensor_alloc(clg_imp_tensor *t, size_t len, const char *where, void **data)
{
  *data = NULL;
  char dt[24], sh[160];
  clg_imp_tf_dtype_name(t->tf_dtype, dt);
  if (!clg_imp_tf_dtype_known(t->tf_dtype))
    return clg_error(CLG_INVALID_ARGUMENT, "%s: unknown dtype %s", where, dt);
  if (t->shape.rank < 0)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: a constant tensor of unknown rank", where);
  uint64_t count = 1;
  for (int i = 0; i < t->shape.rank; i++) {
    int64_t d = t->shape.dims[i];
    shape_text(&t->shape, sh, sizeof sh);
    if (d < 0)
      return clg_error(CLG_INVALID_ARGUMENT, "%s: a constant tensor of shape %s (dim %d unknown)",
                       where, sh, i);
    if (d && count > (UINT64_MAX >> 8) / (uint64_t)d)
      return clg_error(CLG_INVALID_ARGUMENT, "%s: shape %s has too many elements", where, sh);
    count *= (uint64_t)d;
  }
  size_t es = clg_imp_tf_dtype_size(t->tf_dtype);
  if (es == 0)
    return clg_error(CLG_UNIMPLEMENTED, "%s: tensors of %s are not supported", where, dt);
  shape_text(&t->shape, sh, sizeof sh);
  if (count * es != len)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: the content holds %zu bytes but shape %s of %s needs %llu: content "
                     "does not match the shape",
                     where, len, sh, dt, (unsigned long long)(count * es));
  clg_dtype d;
  if (!clg_imp_dtype(t->tf_dtype, &d))
    return CLG_OK; /* a dtype clgraph lacks: an error where a node uses it */
  clg_tensor_free(t->value);
  t->value = clg_tensor_new_uninit(d, t->shape.rank, t->shape.dims);
  if (!t->value)
    return clg_error_prefix("%s: ", where);
  *data = clg_tensor_data(t->value);
  return CLG_OK;
}

clg_code clg_imp_tensor_from_raw(clg_imp_tensor *t, const void *raw, size_t len, const char *where)
{
  void *data;
  clg_code code = clg_imp_tensor_alloc(t, len, where, &data);
  if (code != CLG_OK || !data || len == 0)
    return code;
  memcpy(data, raw, len);
  if (clg_tensor_dtype(t->value) == CLG_BOOL) {
    uint8_t *b = data;
    for (size_t i = 0; i < len; i++)
      b[i] = b[i] != 0;
  }
  return CLG_OK;
}

clg_code clg_imp_tensor_from_values(clg_imp_tensor *t, const void *vals, size_t count,
                                    const char *field, const char *where)
{
  char dt[24];
  size_t es = clg_imp_tf_dtype_size(t->tf_dtype);
  if (!es)
    return clg_error(CLG_UNIMPLEMENTED, "%s: tensors of %s are not supported", where,
                     clg_imp_tf_dtype_name(t->tf_dtype, dt));
  if (t->shape.rank < 0)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: a constant tensor of unknown rank", where);
  uint64_t n = 1;
  for (int i = 0; i < t->shape.rank; i++) {
    if (t->shape.dims[i] < 0)
      return clg_error(CLG_INVALID_ARGUMENT, "%s: a constant tensor with dim %d unknown", where, i);
    n = t->shape.dims[i] == 0 ? 0 : n * (uint64_t)t->shape.dims[i];
    if (n > CLG_IMP_MAX_FILLED && n != count)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "%s: a constant of more than %u elements from %zu values in %s (TF's "
                       "repeat-the-last rule is bounded here)",
                       where, CLG_IMP_MAX_FILLED, count, field);
  }
  if (count > n)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "%s: %s holds %zu values but the shape has %llu elements: content does not "
                     "match the shape",
                     where, field, count, (unsigned long long)n);
  uint8_t *full = calloc(n ? (size_t)n : 1, es);
  if (!full)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of host memory", where);
  if (count) {
    memcpy(full, vals, count * es);
    for (size_t i = count; i < n; i++) /* TF: fewer values than the shape repeat the last */
      memcpy(full + i * es, (const uint8_t *)vals + (count - 1) * es, es);
  }
  clg_code code = clg_imp_tensor_from_raw(t, full, (size_t)n * es, where);
  free(full);
  return code;
}

clg_code clg_imp_read_file(const char *path, uint8_t **bytes, size_t *len)
{
  *bytes = NULL;
  *len = 0;
  int fd;
  clg_code code = clg_file_open_read(path, &fd);
  if (code != CLG_OK)
    return code;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 0) {
    close(fd);
    return clg_error(CLG_INVALID_ARGUMENT, "%s: cannot stat the file", path);
  }
  size_t size = (size_t)st.st_size;
  uint8_t *buf = malloc(size + 1);
  if (!buf) {
    close(fd);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "%s: out of host memory for %zu bytes", path, size);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t k = read(fd, buf + got, size - got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      close(fd);
      free(buf);
      return clg_error(CLG_DATA_LOSS, "%s: read failed after %zu of %zu bytes", path, got, size);
    }
    got += (size_t)k;
  }
  close(fd);
  buf[size] = 0; /* JSON readers get a terminated string */
  *bytes = buf;
  *len = size;
  return CLG_OK;
}
