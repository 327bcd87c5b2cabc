/* A graph as a frozen binary tensorflow.GraphDef (graph.proto, node_def.proto,
 * attr_value.proto, tensor.proto, tensor_shape.proto). Field numbers:
 *   GraphDef: node = 1.  NodeDef: name = 1, op = 2, input = 3, device = 4, attr = 5 (map
 *   entries: key = 1, value = 2).  AttrValue: list = 1 (ListValue: i = 3 packed), s = 2, i = 3,
 *   f = 4, b = 5, type = 6, shape = 7, tensor = 8.  TensorShapeProto: dim = 2 (size = 1).
 *   TensorProto: dtype = 1, tensor_shape = 2, tensor_content = 4 (little-endian bytes).
 * clgraph's attribute names and types are TensorFlow's and clg_dtype's values are DataType's,
 * so each attribute is written as the node holds it. */
#include <stdlib.h>
#include <string.h>

#include "clgraph/session.h"
#include "core/core.h"
#include "export/export.h"
#include "graph/graph.h"

/* protobuf's messages stop at 2 GiB (TensorFlow's parser refuses larger ones). */
#define PB_MAX ((size_t)INT32_MAX)

static void write_shape(clg_pbw *b, int field, int rank, const int64_t *dims)
{
  size_t m = clg_pbw_begin(b, field);
  for (int i = 0; i < rank; i++) {
    size_t d = clg_pbw_begin(b, 2);
    clg_pbw_int(b, 1, dims[i]);
    clg_pbw_end(b, d);
  }
  clg_pbw_end(b, m);
}

static void write_tensor(clg_pbw *b, int field, const clg_tensor *t)
{
  size_t m = clg_pbw_begin(b, field);
  clg_pbw_uint(b, 1, (uint64_t)clg_tensor_dtype(t));
  int64_t dims[CLG_MAX_RANK];
  int rank = clg_tensor_rank(t);
  for (int i = 0; i < rank; i++)
    dims[i] = clg_tensor_dim(t, i);
  write_shape(b, 2, rank, dims);
  clg_pbw_bytes(b, 4, clg_tensor_const_data(t), clg_tensor_bytes(t));
  clg_pbw_end(b, m);
}

/* One attr map entry: key, then an AttrValue holding v. */
static void write_attr(clg_pbw *b, const char *name, const clg_attr_value *v)
{
  size_t e = clg_pbw_begin(b, 5);
  clg_pbw_string(b, 1, name);
  size_t a = clg_pbw_begin(b, 2);
  switch (v->type) {
  case CLG_ATTR_INT:
    clg_pbw_int(b, 3, v->i);
    break;
  case CLG_ATTR_FLOAT:
    clg_pbw_float(b, 4, (float)v->f);
    break;
  case CLG_ATTR_BOOL:
    clg_pbw_uint(b, 5, v->b);
    break;
  case CLG_ATTR_STRING:
    clg_pbw_string(b, 2, v->s ? v->s : "");
    break;
  case CLG_ATTR_DTYPE:
    clg_pbw_uint(b, 6, (uint64_t)v->dtype);
    break;
  case CLG_ATTR_INT_LIST: {
    size_t l = clg_pbw_begin(b, 1);
    if (v->n)
      clg_pbw_packed_ints(b, 3, v->n, v->v);
    clg_pbw_end(b, l);
    break;
  }
  case CLG_ATTR_SHAPE:
    write_shape(b, 7, v->n, v->v);
    break;
  case CLG_ATTR_TENSOR:
    write_tensor(b, 8, v->tensor);
    break;
  }
  clg_pbw_end(b, a);
  clg_pbw_end(b, e);
}

/* "node" for output 0, "node:i" otherwise, "^node" for a control input. */
static void write_input(clg_pbw *b, const char *prefix, const clg_node *n, int index)
{
  clg_strbuf s;
  clg_strbuf_init(&s);
  clg_strbuf_printf(&s, "%s%s", prefix, n->name);
  if (index > 0)
    clg_strbuf_printf(&s, ":%d", index);
  if (s.failed)
    b->failed = true;
  else
    clg_pbw_string(b, 3, s.buf);
  clg_strbuf_free(&s);
}

static void write_node(clg_pbw *b, const clg_node *n, const clg_tensor *frozen)
{
  size_t m = clg_pbw_begin(b, 1);
  clg_pbw_string(b, 1, n->name);
  clg_pbw_string(b, 2, frozen ? "Const" : n->op);
  for (int i = 0; !frozen && i < n->num_inputs; i++)
    write_input(b, "", n->inputs[i].node, n->inputs[i].index);
  for (int i = 0; i < n->num_control; i++)
    write_input(b, "^", n->control[i], 0);
  if (n->requested_text && n->requested_text[0])
    clg_pbw_string(b, 4, n->requested_text);
  if (frozen) {
    clg_attr_value dtype = {.set = true, .type = CLG_ATTR_DTYPE, .dtype = clg_tensor_dtype(frozen)};
    clg_attr_value value = {.set = true, .type = CLG_ATTR_TENSOR, .tensor = (clg_tensor *)frozen};
    write_attr(b, "dtype", &dtype);
    write_attr(b, "value", &value);
  } else {
    for (int i = 0; i < n->def->num_attrs; i++)
      if (n->attrs[i].set)
        write_attr(b, n->def->attrs[i].name, &n->attrs[i]);
  }
  clg_pbw_end(b, m);
}

clg_code clg_session_export_graphdef_memory(clg_session *s, int num_outputs,
                                            const clg_output *outputs, void **bytes, size_t *len)
{
  if (!bytes || !len)
    return clg_error(CLG_INVALID_ARGUMENT, "exporting a GraphDef: bytes or len is NULL");
  *bytes = NULL;
  *len = 0;
  if (!s || num_outputs < 1 || !outputs)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "exporting a GraphDef: want a session and at least one output (got %d)",
                     num_outputs);
  clg_graph *g = outputs[0].node ? outputs[0].node->graph : NULL;
  for (int i = 0; i < num_outputs; i++) {
    const clg_node *n = outputs[i].node;
    if (!n || n->graph != g)
      return clg_error(CLG_INVALID_ARGUMENT, "exporting a GraphDef: output %d is %s", i,
                       n ? "a node of another graph" : "NULL");
    if (outputs[i].index < 0 || outputs[i].index >= n->num_outputs)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "exporting a GraphDef: output %d is %s:%d, but %s has %d outputs", i,
                       n->name, outputs[i].index, n->name, n->num_outputs);
  }
  /* What the outputs need: a walk over inputs and control inputs (nodes only point back to
   * earlier ones, so one pass from the last node down finds them all). */
  const int count = clg_graph_num_nodes(g);
  bool *need = calloc((size_t)count + 1, sizeof *need);
  clg_node **vars = calloc((size_t)count + 1, sizeof *vars);
  clg_tensor **values = calloc((size_t)count + 1, sizeof *values);
  clg_output *fetch = calloc((size_t)count + 1, sizeof *fetch);
  clg_code code = CLG_OK;
  int num_vars = 0;
  clg_pbw b = {0};
  if (!need || !vars || !values || !fetch) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "exporting a GraphDef: out of memory");
    goto done;
  }
  for (int i = 0; i < num_outputs; i++)
    need[outputs[i].node->index] = true;
  for (int i = count - 1; i >= 0; i--) {
    clg_node *n = clg_graph_node(g, i);
    if (!need[i])
      continue;
    if (n->def->ref_inputs) {
      code = clg_error(CLG_INVALID_ARGUMENT,
                       "exporting a GraphDef: node '%s' (%s) updates a variable; a frozen graph "
                       "holds no state (export outputs that do not depend on it)",
                       n->name, n->op);
      goto done;
    }
    if (n->def->flags & CLG_OP_VARIABLE) {
      vars[num_vars] = n;
      fetch[num_vars++] = clg_out(n, 0);
      continue; /* a variable's initializer is not part of the frozen graph */
    }
    for (int k = 0; k < n->num_inputs; k++)
      need[n->inputs[k].node->index] = true;
    for (int k = 0; k < n->num_control; k++)
      need[n->control[k]->index] = true;
  }
  /* The variables' values now, in one run. */
  if (num_vars && (code = clg_session_run_outputs(s, 0, NULL, NULL, num_vars, fetch, values, 0,
                                                  NULL)) != CLG_OK) {
    clg_error_prefix("exporting a GraphDef: reading the variables: ");
    goto done;
  }
  for (int i = 0, v = num_vars - 1; i < count; i++) {
    if (!need[i])
      continue;
    clg_node *n = clg_graph_node(g, i);
    /* vars[] was filled from the last node down. */
    const clg_tensor *frozen = NULL;
    if (n->def->flags & CLG_OP_VARIABLE)
      frozen = values[v--];
    write_node(&b, n, frozen);
  }
  if (b.failed)
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "exporting a GraphDef: out of memory");
  else if (b.len > PB_MAX)
    code = clg_error(CLG_INVALID_ARGUMENT,
                     "exporting a GraphDef: %zu bytes, more than protobuf's 2 GiB for a message",
                     b.len);
  if (code == CLG_OK) {
    *bytes = b.buf ? (void *)b.buf : malloc(1);
    *len = b.len;
    b.buf = NULL;
    if (!*bytes)
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "exporting a GraphDef: out of memory");
  }
done:
  for (int i = 0; values && i < num_vars; i++)
    clg_tensor_free(values[i]);
  free(need);
  free(vars);
  free(values);
  free(fetch);
  clg_pbw_free(&b);
  return code;
}

clg_code clg_session_export_graphdef(clg_session *s, int num_outputs, const clg_output *outputs,
                                     const char *path)
{
  void *bytes = NULL;
  size_t len = 0;
  clg_code code = clg_session_export_graphdef_memory(s, num_outputs, outputs, &bytes, &len);
  if (code == CLG_OK)
    code = clg_file_write_atomic(path, bytes, len);
  free(bytes);
  return code;
}
