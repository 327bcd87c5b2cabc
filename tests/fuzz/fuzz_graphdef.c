/* libFuzzer target: the GraphDef reader (src/import/graphdef.c over the wire reader pb.c) and the
 * importer that builds what it read.
 *
 * Input: the bytes of a whole GraphDef, copied into a buffer of exactly their length (so ASan
 * sees any over-read). Properties checked, beyond "no crash, no leak, no UB":
 *  - reading either succeeds or fails with INVALID_ARGUMENT, UNIMPLEMENTED or
 *    RESOURCE_EXHAUSTED and a message naming the file;
 *  - reading is deterministic (the same code and node count twice);
 *  - a model read has named nodes with an op, and every Const tensor's byte size is its
 *    element count times its dtype's size;
 *  - importing it into a graph succeeds or leaves the graph's sticky error with a message,
 *    and a successful import maps every node name to graph tensors.
 * Also compiled into tests/test_fuzz_replay.c, which replays the committed corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/import.h"
#include "fuzz_check.h"
#include "import/import_internal.h"

#ifndef FUZZ_GRAPHDEF_ENTRY
#define FUZZ_GRAPHDEF_ENTRY LLVMFuzzerTestOneInput
#endif

#define FGD_ASSERT(cond, ...) FUZZ_ASSERT("fuzz_graphdef", cond, __VA_ARGS__)

int FUZZ_GRAPHDEF_ENTRY(const uint8_t *data, size_t size);

int FUZZ_GRAPHDEF_ENTRY(const uint8_t *data, size_t size)
{
  uint8_t *exact = malloc(size ? size : 1);
  if (!exact)
    return 0;
  if (size)
    memcpy(exact, data, size);
  clg_imp_model *m = NULL, *again = NULL;
  clg_code code = clg_imp_read_graphdef(exact, size, "fuzz.pb", &m);
  clg_code code2 = clg_imp_read_graphdef(exact, size, "fuzz.pb", &again);
  FGD_ASSERT(code == code2, "%s then %s", clg_code_name(code), clg_code_name(code2));
  if (code != CLG_OK) {
    FGD_ASSERT(code == CLG_INVALID_ARGUMENT || code == CLG_UNIMPLEMENTED ||
                   code == CLG_RESOURCE_EXHAUSTED,
               "code %s", clg_code_name(code));
    FGD_ASSERT(m == NULL, "an error with a model");
    FGD_ASSERT(strstr(clg_last_error(), "fuzz.pb") != NULL, "message: %s", clg_last_error());
  } else {
    FGD_ASSERT(m->num_nodes == again->num_nodes, "%d then %d nodes", m->num_nodes,
               again->num_nodes);
    for (int i = 0; i < m->num_nodes; i++) {
      const clg_imp_node *n = &m->nodes[i];
      FGD_ASSERT(n->name && n->name[0] && n->op && n->op[0] && n->device, "node %d", i);
      for (int j = 0; j < n->num_attrs; j++) {
        fuzz_check_tensor("fuzz_graphdef", &n->attrs[j].tensor);
        for (int k = 0; n->attrs[j].tensors && k < n->attrs[j].n; k++)
          fuzz_check_tensor("fuzz_graphdef", &n->attrs[j].tensors[k]);
      }
    }
    /* Bounded: a model of many nodes is read, not built. */
    if (m->num_nodes <= 64) {
      clg_graph *g = clg_graph_new();
      clg_import_result *r = NULL;
      clg_import_shape s = {"x", 2, {2, 3}};
      clg_import_options o;
      clg_import_options_init(&o);
      o.input_shapes = &s;
      o.num_input_shapes = m->num_nodes && strcmp(m->nodes[0].name, "x") == 0;
      clg_code c = clg_graph_import_memory(g, CLG_IMPORT_GRAPHDEF, exact, size, &o, &r);
      FGD_ASSERT(c == clg_graph_status(g), "%s but the graph says %s", clg_code_name(c),
                 clg_code_name(clg_graph_status(g)));
      if (c != CLG_OK)
        FGD_ASSERT(clg_graph_error(g)[0] && r == NULL, "an error without a message");
      else
        for (int i = 0; i < m->num_nodes; i++) {
          clg_output out;
          FGD_ASSERT(clg_import_find(r, m->nodes[i].name, &out) == CLG_OK ||
                         clg_last_code() == CLG_NOT_FOUND,
                     "find '%s'", m->nodes[i].name);
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
