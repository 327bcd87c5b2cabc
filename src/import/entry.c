/* The importer's entry points (include/clgraph/import.h): the arguments checked, the model read
 * in its format (told by its first bytes or name when not given), then built into the graph:
 * ONNX by onnx_build.c, GraphDef and tfjs by import.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "import/build.h"

void clg_import_options_init(clg_import_options *o)
{
  if (o)
    memset(o, 0, sizeof *o);
}

static bool ends_with(const char *s, const char *tail)
{
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && strcmp(s + a - b, tail) == 0;
}

static clg_import_format detect(const uint8_t *b, size_t len, const char *file)
{
  size_t i = 0;
  while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
    i++;
  if (i < len && b[i] == '{')
    return CLG_IMPORT_TFJS;
  if ((file && ends_with(file, ".onnx")) || (len && b[0] == 0x08))
    return CLG_IMPORT_ONNX; /* ModelProto opens with ir_version (field 1, varint) */
  return CLG_IMPORT_GRAPHDEF;
}

clg_code clg_imp_read_any(clg_import_format fmt, const uint8_t *bytes, size_t len, const char *file,
                          const char *base_dir, bool weights, clg_imp_model **m)
{
  if (fmt == CLG_IMPORT_AUTO)
    fmt = detect(bytes, len, file);
  switch (fmt) {
  case CLG_IMPORT_GRAPHDEF:
    return clg_imp_read_graphdef(bytes, len, file, m);
  case CLG_IMPORT_TFJS:
    return weights ? clg_imp_read_tfjs((const char *)bytes, len, file, base_dir, m)
                   : clg_imp_read_tfjs_topology((const char *)bytes, len, file, m);
  case CLG_IMPORT_ONNX:
    return clg_imp_read_onnx(bytes, len, file, base_dir, weights, m);
  default:
    return clg_error(CLG_INVALID_ARGUMENT, "import format %d is not a clg_import_format", (int)fmt);
  }
}

static clg_code import_bytes(clg_graph *g, clg_import_format fmt, const uint8_t *bytes, size_t len,
                             const char *file, const char *base_dir, const clg_import_options *o,
                             clg_import_result **result)
{
  clg_imp_model *m = NULL;
  /* A session usually follows: OpenCL's start-up runs beside the import rather than after it
   * (constant folding needs none: its sessions are on the host alone). */
  clg_devices_warm_begin();
  clg_code code = clg_imp_read_any(fmt, bytes, len, file, base_dir, true, &m);
  if (code == CLG_OK) {
    code = strcmp(m->format, "onnx") == 0 ? clg_imp_build_onnx(g, m, o, result)
                                          : clg_imp_build_tf(g, m, o, result);
    clg_imp_model_free(m);
  } else
    code = clg_graph_record_error(g);
  /* Waited for here, not left running: a program may exit after an import alone, and the
   * drivers must not be starting while it does. */
  clg_devices_warm_end();
  return code;
}

/* Both entry points' opening: *o becomes def (the defaults) when NULL, *result NULL, and the
 * graph and options are checked. */
static clg_code check_args(clg_graph *g, const clg_import_options **op, clg_import_options *def,
                           clg_import_result **result)
{
  clg_import_options_init(def);
  if (!*op)
    *op = def;
  const clg_import_options *o = *op;
  if (result)
    *result = NULL;
  if (!g)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_graph_import: the graph is NULL");
  if (clg_graph_status(g) != CLG_OK)
    return clg_graph_status(g);
  if ((o->num_input_map > 0 && !o->input_map) || (o->num_input_shapes > 0 && !o->input_shapes) ||
      o->num_input_map < 0 || o->num_input_shapes < 0) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_graph_import: input_map or input_shapes and their "
                                    "counts disagree");
    return clg_graph_record_error(g);
  }
  return CLG_OK;
}

/* The folder of path ("." when it has none), into buf. */
static const char *dir_of(const char *path, char *buf, size_t size)
{
  const char *slash = strrchr(path, '/');
  if (!slash)
    return ".";
  size_t n = (size_t)(slash - path);
  if (n == 0)
    return "/";
  snprintf(buf, size, "%.*s", (int)n, path);
  return buf;
}

clg_code clg_graph_import(clg_graph *g, const char *path, const clg_import_options *o,
                          clg_import_result **result)
{
  clg_import_options def;
  clg_code code = check_args(g, &o, &def, result);
  if (code != CLG_OK)
    return code;
  if (!path) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_graph_import: path is NULL");
    return clg_graph_record_error(g);
  }
  uint8_t *bytes;
  size_t len;
  if (clg_imp_read_file(path, &bytes, &len) != CLG_OK)
    return clg_graph_record_error(g);
  char dir[4096];
  const char *base = o->base_dir ? o->base_dir : dir_of(path, dir, sizeof dir);
  code = import_bytes(g, o->format, bytes, len, path, base, o, result);
  free(bytes);
  return code;
}

clg_code clg_graph_import_memory(clg_graph *g, clg_import_format format, const void *bytes,
                                 size_t len, const clg_import_options *o,
                                 clg_import_result **result)
{
  clg_import_options def;
  clg_code code = check_args(g, &o, &def, result);
  if (code != CLG_OK)
    return code;
  if (!bytes && len) {
    clg_error(CLG_INVALID_ARGUMENT, "clg_graph_import_memory: bytes is NULL");
    return clg_graph_record_error(g);
  }
  /* JSON wants a terminated copy (jansson reads a length, but the copy costs little). */
  uint8_t *copy = malloc(len + 1);
  if (!copy) {
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for a %zu-byte model", len);
    return clg_graph_record_error(g);
  }
  if (len)
    memcpy(copy, bytes, len);
  copy[len] = 0;
  code = import_bytes(g, format == CLG_IMPORT_AUTO ? o->format : format, copy, len, "", o->base_dir,
                      o, result);
  free(copy);
  return code;
}
