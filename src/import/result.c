/* The import's result (include/clgraph/import.h): the model's inputs, outputs and op census,
 * the lookup of a model tensor's graph value by name, and clg_import_inspect, which fills a
 * result from a model without building it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "import/build.h"

/* --- names ------------------------------------------------------------------------------- */

static uint64_t hash_name(const char *s, size_t len)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* A name hash over strings given by get(ctx, i), i < n: slot array of size *size. */
int *clg_imp_hash_build(int n, const char *(*get)(const void *ctx, int i), const void *ctx,
                        size_t *size)
{
  size_t sz = 16;
  while (sz < 2 * (size_t)n + 2)
    sz *= 2;
  int *h = malloc(sz * sizeof *h);
  if (!h)
    return NULL;
  for (size_t i = 0; i < sz; i++)
    h[i] = -1;
  for (int i = 0; i < n; i++) {
    const char *s = get(ctx, i);
    size_t k = hash_name(s, strlen(s)) & (sz - 1);
    while (h[k] >= 0)
      k = (k + 1) & (sz - 1);
    h[k] = i;
  }
  *size = sz;
  return h;
}

int clg_imp_hash_find(const int *h, size_t sz, const char *(*get)(const void *ctx, int i),
                      const void *ctx, const char *name, size_t len)
{
  if (!h)
    return -1;
  size_t k = hash_name(name, len) & (sz - 1);
  for (; h[k] >= 0; k = (k + 1) & (sz - 1)) {
    const char *s = get(ctx, h[k]);
    if (strlen(s) == len && memcmp(s, name, len) == 0)
      return h[k];
  }
  return -1;
}

/* "node", "node:1", "^ctrl": the node name's length, the output index and whether a control
 * input. A ":" followed by anything but digits belongs to the name. */
void clg_imp_parse_tensor_name(const char *s, size_t *len, int *index, bool *ctrl)
{
  *ctrl = s[0] == '^';
  if (*ctrl)
    s++;
  size_t n = strlen(s);
  *len = n;
  *index = 0;
  const char *colon = strrchr(s, ':');
  if (colon && colon[1]) {
    const char *p = colon + 1;
    long v = 0;
    while (*p >= '0' && *p <= '9' && v < 1000000)
      v = v * 10 + (*p++ - '0');
    if (!*p) {
      *len = (size_t)(colon - s);
      *index = (int)v;
    }
  }
}

const char *clg_imp_model_node_name(const void *ctx, int i)
{
  return ((const clg_imp_model *)ctx)->nodes[i].name;
}

const char *clg_imp_map_entry_name(const void *ctx, int i)
{
  return ((const clg_import_result *)ctx)->map[i].name;
}

/* --- results ------------------------------------------------------------------------------ */

void clg_import_result_free(clg_import_result *r)
{
  if (!r)
    return;
  free(r->producer);
  for (int i = 0; i < r->num_inputs; i++)
    free((char *)r->inputs[i].name);
  for (int i = 0; i < r->num_outputs; i++)
    free((char *)r->outputs[i].name);
  free(r->inputs);
  free(r->outputs);
  for (int i = 0; i < r->num_op_types; i++) {
    free((char *)r->op_types[i].op);
    free((char *)r->op_types[i].example_node);
  }
  free(r->op_types);
  for (int i = 0; i < r->num_map; i++) {
    free(r->map[i].name);
    free(r->map[i].outs);
  }
  free(r->map);
  free(r->hash);
  free(r);
}

const char *clg_import_format_name(const clg_import_result *r) { return r ? r->format : ""; }
const char *clg_import_producer(const clg_import_result *r)
{
  return r && r->producer ? r->producer : "";
}
int clg_import_num_inputs(const clg_import_result *r) { return r ? r->num_inputs : 0; }
int clg_import_num_outputs(const clg_import_result *r) { return r ? r->num_outputs : 0; }
const clg_import_tensor *clg_import_input(const clg_import_result *r, int i)
{
  return r && i >= 0 && i < r->num_inputs ? &r->inputs[i] : NULL;
}
const clg_import_tensor *clg_import_output(const clg_import_result *r, int i)
{
  return r && i >= 0 && i < r->num_outputs ? &r->outputs[i] : NULL;
}
int clg_import_num_model_nodes(const clg_import_result *r) { return r ? r->num_model_nodes : 0; }
int clg_import_num_op_types(const clg_import_result *r) { return r ? r->num_op_types : 0; }
const clg_import_op_type *clg_import_op_type_at(const clg_import_result *r, int i)
{
  return r && i >= 0 && i < r->num_op_types ? &r->op_types[i] : NULL;
}
int clg_import_opset(const clg_import_result *r) { return r ? r->opset : 0; }

clg_code clg_import_find(const clg_import_result *r, const char *model_name, clg_output *out)
{
  if (!r || !model_name || !out)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_import_find: %s is NULL",
                     !r            ? "result"
                     : !model_name ? "model_name"
                                   : "out");
  size_t len;
  int index;
  bool ctrl;
  clg_imp_parse_tensor_name(model_name, &len, &index, &ctrl);
  int k =
      ctrl ? -1
           : clg_imp_hash_find(r->hash, r->hash_size, clg_imp_map_entry_name, r, model_name, len);
  if (k < 0)
    return clg_error(CLG_NOT_FOUND, "the imported model has no node '%s'", model_name);
  if (index >= r->map[k].num_outs)
    return clg_error(CLG_NOT_FOUND, "the imported model's node '%.*s' has %d outputs, not %d",
                     (int)len, model_name, r->map[k].num_outs, index + 1);
  if (!r->map[k].outs[index].node) /* TensorFlow's "Retval does not have value" */
    return clg_error(CLG_INVALID_ARGUMENT,
                     "the imported model's tensor '%s' is dead: it lies on a branch of a tf.cond "
                     "that the predicate (a constant at import) does not take",
                     model_name);
  *out = r->map[k].outs[index];
  return CLG_OK;
}

clg_import_result *clg_imp_result_new(const clg_imp_model *m)
{
  clg_import_result *r = calloc(1, sizeof *r);
  if (!r || !(r->producer = clg_strdup(m->producer))) {
    free(r);
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory importing %s", m->file);
    return NULL;
  }
  r->format = m->format;
  r->num_model_nodes = m->num_nodes;
  r->opset = m->opset;
  return r;
}

static bool supported(const clg_imp_model *m, const clg_imp_node *n)
{
  return m->opset ? clg_imp_onnx_supported(n, m->opset) : clg_imp_op_supported(n);
}

/* The op clg_imp_census of a model, in the order op types first appear. */
clg_code clg_imp_census(clg_import_result *r, const clg_imp_model *m)
{
  r->op_types = calloc((size_t)m->num_nodes + 1, sizeof *r->op_types);
  if (!r->op_types)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  for (int i = 0; i < m->num_nodes; i++) {
    const clg_imp_node *n = &m->nodes[i];
    int k = 0;
    while (k < r->num_op_types && strcmp(r->op_types[k].op, n->op) != 0)
      k++;
    clg_import_op_type *t = &r->op_types[k];
    if (k == r->num_op_types) {
      if (!(t->op = clg_strdup(n->op)) || !(t->example_node = clg_strdup(n->name)))
        return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
      r->num_op_types++;
      t->supported = supported(m, n);
    } else if (t->supported && !supported(m, n)) {
      /* a fused node whose epilogue clgraph lacks: the type is unsupported from here */
      t->supported = 0;
      free((char *)t->example_node);
      if (!(t->example_node = clg_strdup(n->name)))
        return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
    }
    t->count++;
  }
  return CLG_OK;
}

/* --- inspect ------------------------------------------------------------------------------ */

static clg_code inspect_tensor(clg_import_tensor **v, int *n, const char *name, int tf_dtype,
                               const clg_imp_shape *shape)
{
  clg_code code = clg_imp_add_tensor(v, n, name, (clg_output){NULL, 0});
  if (code != CLG_OK)
    return code;
  clg_import_tensor *t = &(*v)[*n - 1];
  clg_dtype d;
  t->dtype = clg_imp_dtype(tf_dtype, &d) ? d : (clg_dtype)0;
  t->rank = shape ? shape->rank : -1;
  for (int i = 0; i < t->rank; i++)
    t->dims[i] = shape->dims[i];
  return CLG_OK;
}

static clg_code inspect_model(const clg_imp_model *m, clg_import_result *r)
{
  clg_code code = clg_imp_census(r, m);
  for (int i = 0; i < m->num_sig_inputs && code == CLG_OK; i++)
    code = inspect_tensor(&r->inputs, &r->num_inputs, m->sig_inputs[i].name,
                          m->sig_inputs[i].tf_dtype, &m->sig_inputs[i].shape);
  for (int i = 0; i < m->num_nodes && code == CLG_OK && !m->num_sig_inputs; i++) {
    const clg_imp_node *n = &m->nodes[i];
    const clg_op_def *def = clg_op_find(n->op);
    if (!def || !(def->flags & CLG_OP_MUST_FEED))
      continue;
    const clg_imp_attr *dt = clg_imp_node_attr(n, "dtype"), *sh = clg_imp_node_attr(n, "shape");
    code = inspect_tensor(&r->inputs, &r->num_inputs, n->name,
                          dt && dt->kind == CLG_IMP_TYPE ? (int)dt->i : 0,
                          sh && sh->kind == CLG_IMP_SHAPE ? &sh->shape : NULL);
  }
  for (int i = 0; i < m->num_sig_outputs && code == CLG_OK; i++)
    code = inspect_tensor(&r->outputs, &r->num_outputs, m->sig_outputs[i].name,
                          m->sig_outputs[i].tf_dtype, &m->sig_outputs[i].shape);
  if (code != CLG_OK || m->num_sig_outputs)
    return code;
  /* Nodes nothing consumes, in file order. */
  bool *used = calloc((size_t)m->num_nodes + 1, sizeof *used);
  size_t hs;
  int *h = clg_imp_hash_build(m->num_nodes, clg_imp_model_node_name, m, &hs);
  if (!used || !h) {
    free(used);
    free(h);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory");
  }
  for (int i = 0; i < m->num_nodes; i++)
    for (int j = 0; j < m->nodes[i].num_inputs; j++) {
      const char *in = m->nodes[i].inputs[j];
      size_t len;
      int index;
      bool ctrl;
      clg_imp_parse_tensor_name(in, &len, &index, &ctrl);
      int p = ctrl ? -1 : clg_imp_hash_find(h, hs, clg_imp_model_node_name, m, in, len);
      if (p >= 0)
        used[p] = true;
    }
  for (int i = 0; i < m->num_nodes && code == CLG_OK; i++)
    if (!used[i]) {
      const clg_imp_attr *t = clg_imp_node_attr(&m->nodes[i], "T");
      if (!t)
        t = clg_imp_node_attr(&m->nodes[i], "dtype");
      code = inspect_tensor(&r->outputs, &r->num_outputs, m->nodes[i].name,
                            t && t->kind == CLG_IMP_TYPE ? (int)t->i : 0, NULL);
    }
  free(used);
  free(h);
  return code;
}

clg_code clg_import_inspect(const char *path, const clg_import_options *o,
                            clg_import_result **result, char *err, size_t err_size)
{
  if (err && err_size)
    err[0] = 0;
  if (result)
    *result = NULL;
  clg_code code;
  if (!path || !result)
    code = clg_error(CLG_INVALID_ARGUMENT, "clg_import_inspect: %s is NULL",
                     !path ? "path" : "result");
  else {
    uint8_t *bytes;
    size_t len;
    code = clg_imp_read_file(path, &bytes, &len);
    clg_imp_model *m = NULL;
    if (code == CLG_OK) {
      code = clg_imp_read_any(o ? o->format : CLG_IMPORT_AUTO, bytes, len, path, NULL, false, &m);
      free(bytes);
    }
    clg_import_result *r = code == CLG_OK ? clg_imp_result_new(m) : NULL;
    if (code == CLG_OK && !r)
      code = CLG_RESOURCE_EXHAUSTED;
    if (code == CLG_OK)
      code = inspect_model(m, r);
    clg_imp_model_free(m);
    if (code == CLG_OK)
      *result = r;
    else
      clg_import_result_free(r);
  }
  if (code != CLG_OK && err && err_size)
    snprintf(err, err_size, "%s", clg_last_error());
  return code;
}
