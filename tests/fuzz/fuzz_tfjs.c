/* libFuzzer target: the tfjs graph-model reader (src/import/tfjs.c: model.json through jansson,
 * the weight shards, dequantization) and the importer that builds what it read.
 *
 * Input: model.json's bytes, then optionally a 0 byte and the bytes of the one weight shard
 * the manifest may name as "w.bin" (written to a private temporary folder; "v.bin" holds the
 * same bytes). Properties checked, beyond "no crash, no leak, no UB":
 *  - reading either succeeds or fails with INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED,
 *    DATA_LOSS or RESOURCE_EXHAUSTED and a message naming model.json;
 *  - reading is deterministic (the same code and node count twice);
 *  - every Const value read has the byte size its shape and dtype give;
 *  - importing succeeds or leaves the graph's sticky error with a message.
 * Also compiled into tests/test_fuzz_replay.c, which replays the committed corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clgraph/import.h"
#include "fuzz_check.h"
#include "import/import_internal.h"

#ifndef FUZZ_TFJS_ENTRY
#define FUZZ_TFJS_ENTRY LLVMFuzzerTestOneInput
#endif

#define FTJ_ASSERT(cond, ...) FUZZ_ASSERT("fuzz_tfjs", cond, __VA_ARGS__)

int FUZZ_TFJS_ENTRY(const uint8_t *data, size_t size);

static char ftj_dir[64];

static void ftj_cleanup(void)
{
  char p[128];
  snprintf(p, sizeof p, "%s/w.bin", ftj_dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/v.bin", ftj_dir);
  unlink(p);
  rmdir(ftj_dir);
}

static void ftj_write(const char *name, const uint8_t *d, size_t n)
{
  char p[128];
  snprintf(p, sizeof p, "%s/%s", ftj_dir, name);
  FILE *f = fopen(p, "wb");
  FTJ_ASSERT(f != NULL, "cannot write %s", p);
  if (n)
    FTJ_ASSERT(fwrite(d, 1, n, f) == n, "short write");
  fclose(f);
}

int FUZZ_TFJS_ENTRY(const uint8_t *data, size_t size)
{
  if (!ftj_dir[0]) {
    snprintf(ftj_dir, sizeof ftj_dir, "/tmp/clg_fuzz_tfjs.XXXXXX");
    FTJ_ASSERT(mkdtemp(ftj_dir) != NULL, "mkdtemp");
    atexit(ftj_cleanup);
  }
  const uint8_t *zero = size ? memchr(data, 0, size) : NULL;
  size_t json_len = zero ? (size_t)(zero - data) : size;
  size_t shard_len = zero ? size - json_len - 1 : 0;
  ftj_write("w.bin", zero ? zero + 1 : data, shard_len);
  ftj_write("v.bin", zero ? zero + 1 : data, shard_len);
  char *json = malloc(json_len + 1);
  if (!json)
    return 0;
  memcpy(json, data, json_len);
  json[json_len] = 0;
  clg_imp_model *m = NULL, *again = NULL;
  clg_code code = clg_imp_read_tfjs(json, json_len, "model.json", ftj_dir, &m);
  clg_code code2 = clg_imp_read_tfjs(json, json_len, "model.json", ftj_dir, &again);
  FTJ_ASSERT(code == code2, "%s then %s", clg_code_name(code), clg_code_name(code2));
  if (code != CLG_OK) {
    FTJ_ASSERT(code == CLG_INVALID_ARGUMENT || code == CLG_NOT_FOUND || code == CLG_UNIMPLEMENTED ||
                   code == CLG_DATA_LOSS || code == CLG_RESOURCE_EXHAUSTED,
               "code %s", clg_code_name(code));
    FTJ_ASSERT(m == NULL, "an error with a model");
    FTJ_ASSERT(strstr(clg_last_error(), "model.json") != NULL, "message: %s", clg_last_error());
  } else {
    FTJ_ASSERT(m->num_nodes == again->num_nodes, "%d then %d nodes", m->num_nodes,
               again->num_nodes);
    for (int i = 0; i < m->num_nodes; i++)
      for (int j = 0; j < m->nodes[i].num_attrs; j++) {
        const clg_imp_tensor *t = &m->nodes[i].attrs[j].tensor;
        if (!t->value)
          continue;
        size_t count = 1;
        for (int k = 0; k < t->shape.rank; k++)
          count *= (size_t)t->shape.dims[k];
        FTJ_ASSERT(clg_tensor_bytes(t->value) == count * clg_imp_tf_dtype_size(t->tf_dtype),
                   "node '%s': %zu bytes for %zu elements", m->nodes[i].name,
                   clg_tensor_bytes(t->value), count);
      }
    if (m->num_nodes <= 64) {
      clg_graph *g = clg_graph_new();
      clg_import_options o;
      clg_import_options_init(&o);
      o.base_dir = ftj_dir;
      clg_import_result *r = NULL;
      clg_code c = clg_graph_import_memory(g, CLG_IMPORT_TFJS, json, json_len, &o, &r);
      FTJ_ASSERT(c == clg_graph_status(g), "%s but the graph says %s", clg_code_name(c),
                 clg_code_name(clg_graph_status(g)));
      FTJ_ASSERT(c == CLG_OK ? r != NULL : clg_graph_error(g)[0] && r == NULL,
                 "result and code disagree");
      clg_import_result_free(r);
      clg_graph_free(g);
    }
  }
  clg_imp_model_free(m);
  clg_imp_model_free(again);
  free(json);
  return 0;
}
