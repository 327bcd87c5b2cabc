/* Node texts for errors: "<Op> '<name>': ..." messages, TensorFlow's node summary (its
 * attributes printed as TensorFlow does), and the check that an inferred attribute is the
 * one the caller gave. They read a node and its op definition only. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

clg_code clg_node_error(const clg_node *n, clg_code code, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return clg_error(code, "%s '%s': %s", n->op, n->name, msg);
}

static const char *dt_enum(clg_dtype d)
{
  switch (d) {
  case CLG_FLOAT64:
    return "DT_DOUBLE";
  case CLG_FLOAT16:
    return "DT_HALF";
  case CLG_INT32:
    return "DT_INT32";
  case CLG_INT64:
    return "DT_INT64";
  case CLG_BOOL:
    return "DT_BOOL";
  case CLG_UINT8:
    return "DT_UINT8";
  case CLG_INT8:
    return "DT_INT8";
  case CLG_INT16:
    return "DT_INT16";
  case CLG_UINT16:
    return "DT_UINT16";
  case CLG_UINT32:
    return "DT_UINT32";
  case CLG_UINT64:
    return "DT_UINT64";
  case CLG_FLOAT32:
    break;
  }
  return "DT_FLOAT";
}

/* Element i of a host tensor as a double (int64 beyond 2^53 rounds: summaries only). */
double clg_tensor_element_double(const clg_tensor *t, size_t i)
{
  const void *p = clg_tensor_const_data(t);
  switch (clg_tensor_dtype(t)) {
  case CLG_FLOAT64:
    return ((const double *)p)[i];
  case CLG_FLOAT16:
    return clg_half_to_double(((const uint16_t *)p)[i]);
  case CLG_INT32:
    return ((const int32_t *)p)[i];
  case CLG_INT64:
    return (double)((const int64_t *)p)[i];
  case CLG_BOOL:
    return ((const uint8_t *)p)[i] != 0;
  case CLG_UINT64:
    return (double)clg_uint_load(CLG_UINT64, p, i);
  case CLG_UINT8:
  case CLG_INT8:
  case CLG_INT16:
  case CLG_UINT16:
  case CLG_UINT32:
    return (double)clg_int_load(clg_tensor_dtype(t), p, i);
  case CLG_FLOAT32:
    break;
  }
  return ((const float *)p)[i];
}

/* "1 2 3..." (TensorFlow's summary of a value: the first three). */
static void summarize_value(clg_strbuf *s, const clg_tensor *t)
{
  char shape[192];
  clg_strbuf_printf(s, "Tensor<type: %s shape: %s values: ", clg_dtype_name(clg_tensor_dtype(t)),
                    clg_tensor_shape_string(t, shape, sizeof shape));
  size_t count = clg_tensor_count(t);
  size_t shown = count < 3 ? count : 3;
  for (size_t i = 0; i < shown; i++)
    clg_strbuf_printf(s, "%s%g", i ? " " : "", clg_tensor_element_double(t, i));
  clg_strbuf_append(s, count > shown ? "...>" : ">");
}

static void print_attr(clg_strbuf *s, const clg_attr_value *a)
{
  switch (a->type) {
  case CLG_ATTR_INT:
    clg_strbuf_printf(s, "%lld", (long long)a->i);
    break;
  case CLG_ATTR_FLOAT:
    clg_strbuf_printf(s, "%g", a->f);
    break;
  case CLG_ATTR_BOOL:
    clg_strbuf_append(s, a->b ? "true" : "false");
    break;
  case CLG_ATTR_STRING:
    clg_strbuf_printf(s, "\"%.64s\"", a->s ? a->s : "");
    break;
  case CLG_ATTR_DTYPE:
    clg_strbuf_append(s, dt_enum(a->dtype));
    break;
  case CLG_ATTR_INT_LIST:
  case CLG_ATTR_SHAPE:
    clg_strbuf_append(s, "[");
    for (int i = 0; i < a->n && a->v; i++)
      clg_strbuf_printf(s, "%s%lld", i ? (a->type == CLG_ATTR_SHAPE ? "," : ", ") : "",
                        (long long)a->v[i]);
    clg_strbuf_append(s, "]");
    break;
  case CLG_ATTR_TENSOR:
    if (a->tensor)
      summarize_value(s, a->tensor);
    break;
  }
}

/* Whether a's value is the one the caller gave (the types agree: checked when it was set). */
static bool attr_same(const clg_attr_value *a, const clg_attr *given)
{
  switch (a->type) {
  case CLG_ATTR_INT:
    return a->i == given->v.i;
  case CLG_ATTR_FLOAT:
    return a->f == given->v.f;
  case CLG_ATTR_BOOL:
    return a->b == (given->v.b != 0);
  case CLG_ATTR_STRING:
    return a->s && given->v.s && strcmp(a->s, given->v.s) == 0;
  case CLG_ATTR_DTYPE:
    return a->dtype == given->v.dtype;
  case CLG_ATTR_INT_LIST:
  case CLG_ATTR_SHAPE:
    return a->n == given->v.list.n &&
           (a->n <= 0 || memcmp(a->v, given->v.list.v, sizeof *a->v * (size_t)a->n) == 0);
  case CLG_ATTR_TENSOR:
    return a->tensor == given->v.tensor; /* no op infers a tensor */
  }
  return false;
}

clg_code clg_node_attr_agrees(const clg_node *n, int i, const clg_attr *given)
{
  const clg_attr_value *a = &n->attrs[i];
  if (attr_same(a, given))
    return CLG_OK;
  clg_strbuf want, got;
  clg_strbuf_init(&want);
  clg_strbuf_init(&got);
  if (a->type == CLG_ATTR_DTYPE) {
    clg_strbuf_append(&want, clg_dtype_name(given->v.dtype));
    clg_strbuf_append(&got, clg_dtype_name(a->dtype));
  } else {
    clg_attr_value g = {.set = true, .type = given->type};
    switch (given->type) {
    case CLG_ATTR_INT:
      g.i = given->v.i;
      break;
    case CLG_ATTR_FLOAT:
      g.f = given->v.f;
      break;
    case CLG_ATTR_BOOL:
      g.b = given->v.b != 0;
      break;
    case CLG_ATTR_STRING:
      g.s = (char *)given->v.s;
      break;
    case CLG_ATTR_INT_LIST:
    case CLG_ATTR_SHAPE:
      g.n = given->v.list.n;
      g.v = (int64_t *)given->v.list.v;
      break;
    default:
      break;
    }
    print_attr(&want, &g);
    print_attr(&got, a);
  }
  char *w = clg_strbuf_take(&want), *o = clg_strbuf_take(&got);
  clg_code code =
      clg_node_error(n, CLG_INVALID_ARGUMENT, "attribute %s is %s but the inputs make it %s",
                     n->def->attrs[i].name, w ? w : "?", o ? o : "?");
  free(w);
  free(o);
  return code;
}

char *clg_node_def_string(const clg_node *n)
{
  clg_strbuf s;
  clg_strbuf_init(&s);
  clg_strbuf_printf(&s, "%s = %s[", n->name, n->op);
  int printed = 0;
  for (int i = 0; i < n->def->num_attrs; i++) {
    if (!n->attrs[i].set)
      continue;
    clg_strbuf_printf(&s, "%s%s=", printed++ ? ", " : "", n->def->attrs[i].name);
    print_attr(&s, &n->attrs[i]);
  }
  if (n->requested_text && n->requested_text[0])
    clg_strbuf_printf(&s, "%s_device=\"%s\"", printed ? ", " : "", n->requested_text);
  clg_strbuf_append(&s, "](");
  for (int i = 0; i < n->num_inputs; i++) {
    const clg_output *in = &n->inputs[i];
    clg_strbuf_printf(&s, "%s%s", i ? ", " : "", in->node->name);
    if (in->index)
      clg_strbuf_printf(&s, ":%d", in->index);
  }
  for (int i = 0; i < n->num_control; i++)
    clg_strbuf_printf(&s, "%s^%s", i || n->num_inputs ? ", " : "", n->control[i]->name);
  clg_strbuf_append(&s, ")");
  return clg_strbuf_take(&s);
}
