/* libFuzzer target: the ONNX reader (src/import/onnx_read.c over the wire reader pb.c) and the
 * ONNX build (onnx_build.c and its op rules).
 *
 * Input: the bytes of a whole ModelProto, copied into a buffer of exactly their length. Checked,
 * beyond "no crash, no leak, no UB":
 *  - reading succeeds or fails with INVALID_ARGUMENT, UNIMPLEMENTED, NOT_FOUND or
 *    RESOURCE_EXHAUSTED and a message naming the file; it is deterministic;
 *  - a model read has an opset in 1..17, nodes with an op type, and initializers whose byte
 *    size is their element count times their dtype's size;
 *  - importing it succeeds or leaves the graph's sticky error with a message, and a successful
 *    import finds every graph output by name.
 * From memory there is no model folder, so external data is always refused. Also compiled
 * into tests/test_fuzz_replay.c, which replays the committed corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/import.h"
#include "fuzz_check.h"
#include "import/import_internal.h"

#ifndef FUZZ_ONNX_ENTRY
#define FUZZ_ONNX_ENTRY LLVMFuzzerTestOneInput
#endif

#define FOX_ASSERT(cond, ...) FUZZ_ASSERT("fuzz_onnx", cond, __VA_ARGS__)

int FUZZ_ONNX_ENTRY(const uint8_t *data, size_t size);

static void fox_check_model(const clg_imp_model *m)
{
  FOX_ASSERT(m->opset >= 1 && m->opset <= 17, "opset %d", m->opset);
  for (int i = 0; i < m->num_nodes; i++)
    FOX_ASSERT(m->nodes[i].op && m->nodes[i].op[0] && m->nodes[i].name && m->nodes[i].domain,
               "node %d", i);
  for (int i = 0; i < m->num_inits; i++) {
    FOX_ASSERT(m->inits[i].name && m->inits[i].name[0], "initializer %d unnamed", i);
    fuzz_check_tensor("fuzz_onnx", &m->inits[i].t);
  }
}

int FUZZ_ONNX_ENTRY(const uint8_t *data, size_t size)
{
  uint8_t *exact = malloc(size ? size : 1);
  if (!exact)
    return 0;
  if (size)
    memcpy(exact, data, size);
  clg_imp_model *m = NULL, *again = NULL;
  clg_code code = clg_imp_read_onnx(exact, size, "fuzz.onnx", NULL, true, &m);
  clg_code code2 = clg_imp_read_onnx(exact, size, "fuzz.onnx", NULL, true, &again);
  FOX_ASSERT(code == code2, "%s then %s", clg_code_name(code), clg_code_name(code2));
  if (code != CLG_OK) {
    FOX_ASSERT(code == CLG_INVALID_ARGUMENT || code == CLG_UNIMPLEMENTED || code == CLG_NOT_FOUND ||
                   code == CLG_RESOURCE_EXHAUSTED,
               "code %s", clg_code_name(code));
    FOX_ASSERT(m == NULL, "an error with a model");
    FOX_ASSERT(strstr(clg_last_error(), "fuzz.onnx") != NULL, "message: %s", clg_last_error());
  } else {
    FOX_ASSERT(m->num_nodes == again->num_nodes && m->num_inits == again->num_inits,
               "%d then %d nodes", m->num_nodes, again->num_nodes);
    fox_check_model(m);
    if (m->num_nodes <= 64) { /* bounded: a large model is read, not built */
      clg_graph *g = clg_graph_new();
      clg_import_result *r = NULL;
      clg_code c = clg_graph_import_memory(g, CLG_IMPORT_ONNX, exact, size, NULL, &r);
      FOX_ASSERT(c == clg_graph_status(g), "%s but the graph says %s", clg_code_name(c),
                 clg_code_name(clg_graph_status(g)));
      if (c != CLG_OK)
        FOX_ASSERT(clg_graph_error(g)[0] && r == NULL, "an error without a message");
      else
        for (int i = 0; i < m->num_sig_outputs; i++) {
          clg_output out;
          FOX_ASSERT(clg_import_find(r, m->sig_outputs[i].name, &out) == CLG_OK, "find '%s'",
                     m->sig_outputs[i].name);
        }
      clg_import_result_free(r);
      clg_graph_free(g);
    }
  }
  clg_imp_model_free(m);
  clg_imp_model_free(again);
  free(exact);
  return 0;
}
