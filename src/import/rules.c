/* The one table of per-op import rules: what a TensorFlow op type becomes before the op
 * registry sees it. Every op type not listed goes to the registry's op of the same name, so an
 * op another module registers (Relu6, Pad, ConcatV2, ...) imports with no change here. */
#include <string.h>

#include "import/import_internal.h"
#include "ops/ops.h"

static const clg_imp_rule rules[] = {
    /* Aliases where clgraph has the semantics under TensorFlow's older name. */
    {"AddV2", CLG_IMP_RULE_ALIAS, "Add"},
    {"Div", CLG_IMP_RULE_ALIAS, "RealDiv"}, /* float operands: Div is RealDiv */
    /* The converter's fused forms: the base op, then BiasAdd and the epilogue as nodes. */
    {"_FusedConv2D", CLG_IMP_RULE_FUSED, "Conv2D"},
    {"_FusedMatMul", CLG_IMP_RULE_FUSED, "MatMul"},
    {"FusedDepthwiseConv2dNative", CLG_IMP_RULE_FUSED, "DepthwiseConv2dNative"},
    /* A static shape: clgraph's shapes are all known once the inputs are bound. */
    {"Shape", CLG_IMP_RULE_SHAPE, NULL},
    {"Size", CLG_IMP_RULE_SHAPE, "Size"}, /* the element count of that shape */
    /* Never folded although their inputs may all be constants. */
    {"RandomUniform", CLG_IMP_RULE_NOFOLD, NULL},
    {"RandomUniformInt", CLG_IMP_RULE_NOFOLD, NULL},
    {"RandomStandardNormal", CLG_IMP_RULE_NOFOLD, NULL},
    {"TruncatedNormal", CLG_IMP_RULE_NOFOLD, NULL},
    {"Multinomial", CLG_IMP_RULE_NOFOLD, NULL},
    {"RandomShuffle", CLG_IMP_RULE_NOFOLD, NULL},
    {"AllReduce", CLG_IMP_RULE_NOFOLD, NULL},
};

const clg_imp_rule *clg_imp_rule_find(const char *tf_op)
{
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (strcmp(rules[i].tf, tf_op) == 0)
      return &rules[i];
  return NULL;
}

/* Attributes TensorFlow defines that do not change the result, ignored where clgraph's op does
 * not declare them: the dtype annotations of inputs (clgraph infers dtypes from the inputs and
 * checks them), N (the input count), use_cudnn_on_gpu (an implementation choice), and the
 * converter's bookkeeping. Attributes whose default is the only value clgraph has are ignored
 * at that value only (data_format NHWC, dilations 1, explicit_paddings empty); any other
 * value is refused where the op does not declare the attribute. */
static const char *const ignorable[] = {
    "T",     "Tidx",        "Tshape",       "Tpaddings",    "Tindices",         "Tparams",
    "Taxis", "Tmultiples",  "Index",        "Tblock_shape", "Tcrops",           "TI",
    "N",     "Tperm",       "SrcT",         "Tout",         "use_cudnn_on_gpu", "Tlabels",
    "Tdim",  "Tsegmentids", "Tnumsegments", "Targmax",
};

/* Attributes ignored only at the one value clgraph has (what TensorFlow defaults them to). */
enum { AT_NHWC, AT_ALL_ONES, AT_EMPTY_LIST, AT_BOOL };
static const struct {
  const char *name;
  int at;
} ignorable_at[] = {{"data_format", AT_NHWC},
                    {"dilations", AT_ALL_ONES},
                    {"explicit_paddings", AT_EMPTY_LIST},
                    /* Equal/NotEqual: true reports incompatible shapes as an error, as clgraph
                     * does. false gives a false scalar instead, but only for shapes that do not
                     * broadcast; clgraph's shapes are static, so such a graph fails at import
                     * ("Incompatible shapes") and every graph that imports computes the same. */
                    {"incompatible_shape_error", AT_BOOL}};

bool clg_imp_attr_ignorable(const clg_imp_attr *a)
{
  if (a->name[0] == '_')
    return true;
  for (size_t i = 0; i < sizeof ignorable / sizeof ignorable[0]; i++)
    if (strcmp(a->name, ignorable[i]) == 0)
      return true;
  for (size_t i = 0; i < sizeof ignorable_at / sizeof ignorable_at[0]; i++) {
    if (strcmp(a->name, ignorable_at[i].name) != 0)
      continue;
    switch (ignorable_at[i].at) {
    case AT_NHWC:
      return a->kind == CLG_IMP_S && (a->s[0] == 0 || strcmp(a->s, "NHWC") == 0);
    case AT_ALL_ONES:
      if (a->kind != CLG_IMP_LIST)
        return false;
      for (int j = 0; j < a->n; j++)
        if (!a->ints || a->ints[j] != 1)
          return false;
      return true;
    case AT_BOOL:
      return a->kind == CLG_IMP_B;
    default:
      return a->kind == CLG_IMP_LIST && a->n == 0;
    }
  }
  return false;
}

/* The epilogue steps of fused nodes that take one of the node's args as their second input;
 * the others take none. */
static const char *const steps_with_arg[] = {"BiasAdd", "Prelu"};

int clg_imp_fused_step_args(const char *step)
{
  for (size_t i = 0; i < sizeof steps_with_arg / sizeof steps_with_arg[0]; i++)
    if (strcmp(step, steps_with_arg[i]) == 0)
      return 1;
  return 0;
}

/* Attributes of a fused node that its steps take, by the step's attribute name. */
static const struct {
  const char *fused, *step;
} step_attrs[] = {{"leakyrelu_alpha", "alpha"}};

const char *clg_imp_fused_step_attr(const char *step_attr)
{
  for (size_t i = 0; i < sizeof step_attrs / sizeof step_attrs[0]; i++)
    if (strcmp(step_attr, step_attrs[i].step) == 0)
      return step_attrs[i].fused;
  return NULL;
}

bool clg_imp_op_supported(const clg_imp_node *n)
{
  const clg_imp_rule *r = clg_imp_rule_find(n->op);
  if (!r || r->kind == CLG_IMP_RULE_NOFOLD)
    return clg_op_find(n->op) != NULL;
  if (r->kind == CLG_IMP_RULE_SHAPE)
    return true;
  if (r->kind == CLG_IMP_RULE_ALIAS)
    return clg_op_find(r->target) != NULL;
  /* Fused: the base op and every step of fused_ops. */
  if (!clg_op_find(r->target))
    return false;
  const clg_imp_attr *f = clg_imp_node_attr(n, "fused_ops");
  if (f && f->kind == CLG_IMP_LIST)
    for (int i = 0; i < f->n; i++)
      if (!f->strs || !clg_op_find(f->strs[i]))
        return false;
  return true;
}
