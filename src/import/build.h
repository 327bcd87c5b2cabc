/* The import build's state, shared by the builder (import.c) and constant folding (fold.c)
 * inside src/import only; the module's doors stay clgraph/import.h and import_internal.h. */
#ifndef CLG_IMPORT_BUILD_H
#define CLG_IMPORT_BUILD_H

#include "graph/graph.h"
#include "import/import_internal.h"
#include "runtime/runtime.h"

typedef struct name_map_entry {
  char *name;
  int num_outs;
  clg_output *outs;
} name_map_entry;

struct clg_import_result {
  const char *format;
  char *producer;
  int num_inputs, num_outputs;
  clg_import_tensor *inputs, *outputs;
  int num_model_nodes;
  int num_op_types;
  clg_import_op_type *op_types;
  int opset;
  int num_map;
  name_map_entry *map;
  int *hash; /* open addressing over map, -1 empty; size hash_size (a power of two) */
  size_t hash_size;
};

/* Names (result.c): an open-addressing hash over names got by index, and a tensor name's
 * parts ("node:1", "^node"). */
int *clg_imp_hash_build(int n, const char *(*get)(const void *ctx, int i), const void *ctx,
                        size_t *size);
int clg_imp_hash_find(const int *h, size_t sz, const char *(*get)(const void *ctx, int i),
                      const void *ctx, const char *name, size_t len);
void clg_imp_parse_tensor_name(const char *s, size_t *len, int *index, bool *ctrl);
const char *clg_imp_model_node_name(const void *ctx, int i);
const char *clg_imp_map_entry_name(const void *ctx, int i);
/* A result for model m (its format, producer and node count), and its op census. */
clg_import_result *clg_imp_result_new(const clg_imp_model *m);
clg_code clg_imp_census(clg_import_result *r, const clg_imp_model *m);
/* (import.c) A named tensor appended to v; a GraphDef or tfjs model built into g, as
 * clg_graph_import does. */
clg_code clg_imp_add_tensor(clg_import_tensor **v, int *n, const char *name, clg_output value);
clg_code clg_imp_build_tf(clg_graph *g, clg_imp_model *m, const clg_import_options *o,
                          clg_import_result **result);
/* (entry.c) A model read in any format. */
clg_code clg_imp_read_any(clg_import_format fmt, const uint8_t *bytes, size_t len, const char *file,
                          const char *base_dir, bool weights, clg_imp_model **m);

typedef struct imp {
  clg_graph *g;
  const clg_import_options *o;
  clg_imp_model *m;
  clg_import_result *r;
  int *hash;
  size_t hash_size;
  clg_node **nodes;  /* per model node: the graph node that stands for it */
  clg_output **outs; /* per model node: its outputs as graph tensors (after folding) */
  int *nouts;
  bool *fed;        /* a Placeholder fed through input_map (not built) */
  bool *consumed;   /* per model node, whether any data input reads it */
  bool *shape_used; /* per input_shapes entry */
  bool *map_used;   /* per input_map entry */
  /* Folding in waves: foldable nodes (every input a Const) wait in the scratch graph until a
   * node reads one of them (or the build ends); then one helper session and one run compute
   * the whole wave on CPU:0, so a model's thousands of shape nodes cost a few runs, not one
   * session, placement and plan each. */
  clg_graph *scratch; /* the wave: its nodes and copies of their Const inputs, on CPU:0 */
  struct pending *pend;
  int num_pend, cap_pend;
  bool *pending;       /* per model node: waiting in the wave */
  clg_graph *anchor_g; /* an empty graph whose helper session holds the device state */
  clg_session *anchor; /* across the waves of one import */
  bool no_fold;
} imp;

/* A node of the wave: what builds it again (a scratch graph for half a wave, or the node
 * itself in g when it does not fold); ins and attrs point into g and the model. */
typedef struct pending {
  int idx;
  const clg_op_def *def;
  clg_node *sn; /* in scratch */
  int nin, na, nout;
  clg_output *ins;
  clg_attr *attrs;
} pending;

static inline const char *file_of(const imp *c) { return c->m->file[0] ? c->m->file : "(memory)"; }

static inline clg_code fail(imp *c, clg_code code)
{
  (void)code;
  return clg_graph_record_error(c->g);
}

/* Records model node idx as the graph tensors outs[0..n). */
clg_code clg_imp_set_outs(imp *c, int idx, clg_node *node, int n, const clg_output *outs);

/* Folding (fold.c): a node offered to the wave (*deferred when it joins), the wave computed,
 * and the wave's state dropped at the end of an import. */
clg_code clg_imp_fold_try(imp *c, int idx, const clg_op_def *def, int nin, const clg_output *ins,
                          int na, const clg_attr *attrs, bool *done);
clg_code clg_imp_fold_flush(imp *c);
void clg_imp_fold_reset(imp *c);

/* (import.c) For cond.c: the input_map entry of a tensor (or -1), a model input string as a
 * graph tensor, and the fold wave computed first when node n reads it. */
int clg_imp_mapped(imp *c, const char *tensor);
clg_code clg_imp_resolve(imp *c, const clg_imp_node *n, const char *in, clg_output *out);
clg_code clg_imp_flush_for(imp *c, const clg_imp_node *n);
/* tf.cond at import (cond.c): *done when model node idx was resolved there (dead, or a
 * Switch with a folded predicate, or a Merge with one live input); whether a node is dead. */
clg_code clg_imp_cond_try(imp *c, int idx, bool *done);
bool clg_imp_is_dead(const imp *c, int idx);

#endif
