/* Einsum (tf.einsum) of one or two float or double operands: an equation of letter labels
 * per operand ("ij,jk->ik"), at most one "..." per operand for broadcast dims (numpy's rules
 * over the dims it covers, aligned right), an optional "->" output (without it: the
 * ellipsis dims, then the labels that appear once, in ASCII order). A label repeated in an
 * operand takes its diagonal; labels absent from the output are summed. Letter labels must
 * have one size everywhere. Kernels: backends/host/einsum.c (a naive sum per output element,
 * in double) and backends/opencl/einsum.c (the same sum, one work-item per element). */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"

enum { A_N, A_T, A_EQUATION };

static const clg_attr_def attrs[] = {
    {.name = "N", .type = CLG_ATTR_INT, .inferred = true},
    {.name = "T", .type = CLG_ATTR_DTYPE, .inferred = true},
    {.name = "equation", .type = CLG_ATTR_STRING},
};

/* Letter labels are 0..51 (A-Z, a-z: ASCII order), ellipsis dim j is 52 + j. */
static int letter_id(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }

/* One side of the equation: its labels (ELLIPSIS for "...") into lab, the count into *n. */
enum { ELLIPSIS = -1 };

static clg_code parse_term(const clg_node *n, const char *s, size_t len, int *lab, int *count,
                           const char *what)
{
  int k = 0;
  bool ell = false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == '.') {
      if (ell || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.')
        return clg_node_error(n, CLG_INVALID_ARGUMENT,
                              "equation '%s': %s has a '.' outside one \"...\"",
                              n->attrs[A_EQUATION].s, what);
      ell = true;
      i += 2;
      c = 0;
    } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "equation '%s': invalid character '%c' in %s",
                            n->attrs[A_EQUATION].s, c, what);
    }
    if (k == CLG_MAX_RANK + 1)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "equation '%s': %s has more than %d labels",
                            n->attrs[A_EQUATION].s, what, CLG_MAX_RANK);
    lab[k++] = c == 0 ? ELLIPSIS : letter_id(c);
  }
  *count = k;
  return CLG_OK;
}

/* Each input axis's label into e->in_label, and each label's size into e->size: sizes agree
 * (ellipsis dims broadcast). */
static clg_code label_axes(const clg_node *n, clg_einsum *e, int lab[2][CLG_MAX_RANK + 1],
                           const int *cnt, const int *ell_dims, int ell_rank)
{
  const char *eq = n->attrs[A_EQUATION].s;
  for (int i = 0; i < e->nin; i++) {
    const clg_out_desc *x = clg_node_in(n, i);
    int ax = 0;
    for (int k = 0; k < cnt[i]; k++) {
      int ids[CLG_MAX_RANK], nids = 0;
      if (lab[i][k] == ELLIPSIS)
        for (int j = 0; j < ell_dims[i]; j++)
          ids[nids++] = 52 + ell_rank - ell_dims[i] + j;
      else
        ids[nids++] = lab[i][k];
      for (int j = 0; j < nids; j++, ax++) {
        int l = ids[j];
        int64_t d = x->dims[ax];
        e->in_label[i][ax] = l;
        if (e->size[l] < 0 || (l >= 52 && e->size[l] == 1))
          e->size[l] = d;
        else if (d != e->size[l] && !(l >= 52 && d == 1))
          return clg_node_error(n, CLG_INVALID_ARGUMENT,
                                "equation '%s': dimension %lld of input %d (axis %d) differs from "
                                "%lld for the same label",
                                eq, (long long)d, i, ax, (long long)e->size[l]);
      }
    }
    e->in_rank[i] = x->rank;
  }
  return CLG_OK;
}

clg_code clg_einsum_spec(const clg_node *n, clg_einsum *e)
{
  const char *eq = n->attrs[A_EQUATION].s;
  memset(e, 0, sizeof *e);
  e->nin = n->num_inputs;
  if (e->nin != 1 && e->nin != 2)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Einsum takes 1 or 2 inputs, not %d", e->nin);
  const char *arrow = strstr(eq, "->");
  size_t lhs = arrow ? (size_t)(arrow - eq) : strlen(eq);
  const char *comma = memchr(eq, ',', lhs);
  int nterms = comma ? 2 : 1;
  if (comma && memchr(comma + 1, ',', lhs - (size_t)(comma + 1 - eq)))
    nterms = 3;
  if (nterms != e->nin)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "equation '%s' has %d operand(s) but the node has %d input(s)", eq,
                          nterms, e->nin);
  int lab[2][CLG_MAX_RANK + 1], cnt[2], ell_dims[2] = {0, 0}, ell_rank = 0;
  static const char *const names[2] = {"operand 0", "operand 1"};
  for (int i = 0; i < e->nin; i++) {
    const char *s = i == 0 ? eq : comma + 1;
    size_t len = i == 0 ? (comma ? (size_t)(comma - eq) : lhs) : lhs - (size_t)(comma + 1 - eq);
    clg_code code = parse_term(n, s, len, lab[i], &cnt[i], names[i]);
    if (code != CLG_OK)
      return code;
    const clg_out_desc *x = clg_node_in(n, i);
    int letters = 0;
    bool ell = false;
    for (int k = 0; k < cnt[i]; k++)
      ell |= lab[i][k] == ELLIPSIS, letters += lab[i][k] != ELLIPSIS;
    if (ell ? x->rank < letters : x->rank != letters) {
      char s2[192];
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "equation '%s': %s has %d label(s) but input %d has shape %s", eq,
                            names[i], letters, i, clg_out_shape_string(x, s2, sizeof s2));
    }
    ell_dims[i] = x->rank - letters;
    ell_rank = ell_dims[i] > ell_rank ? ell_dims[i] : ell_rank;
  }
  for (int l = 0; l < CLG_EINSUM_LABELS; l++)
    e->size[l] = -1;
  clg_code code = label_axes(n, e, lab, cnt, ell_dims, ell_rank);
  if (code != CLG_OK)
    return code;
  /* The output's labels. */
  int olab[CLG_MAX_RANK + 1], ocnt = 0;
  if (arrow) {
    clg_code code = parse_term(n, arrow + 2, strlen(arrow + 2), olab, &ocnt, "the output");
    if (code != CLG_OK)
      return code;
  } else {
    if (ell_rank)
      olab[ocnt++] = ELLIPSIS;
    for (int l = 0; l < 52; l++) {
      int uses = 0;
      for (int i = 0; i < e->nin; i++)
        for (int k = 0; k < cnt[i]; k++)
          uses += lab[i][k] == l;
      if (uses == 1 && ocnt <= CLG_MAX_RANK)
        olab[ocnt++] = l;
    }
  }
  bool seen[CLG_EINSUM_LABELS] = {false}, out_ell = false;
  for (int k = 0; k < ocnt; k++) {
    if (olab[k] == ELLIPSIS) {
      out_ell = true;
      for (int j = 0; j < ell_rank; j++) {
        if (e->out_rank == CLG_MAX_RANK)
          return clg_node_error(n, CLG_INVALID_ARGUMENT,
                                "equation '%s': the output has more than %d dims", eq,
                                CLG_MAX_RANK);
        e->out_label[e->out_rank++] = 52 + j;
        seen[52 + j] = true;
      }
      continue;
    }
    int l = olab[k];
    if (e->size[l] < 0)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "equation '%s': output label '%c' appears in no operand", eq,
                            l < 26 ? 'A' + l : 'a' + l - 26);
    if (seen[l])
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "equation '%s': output label '%c' appears more than once", eq,
                            l < 26 ? 'A' + l : 'a' + l - 26);
    if (e->out_rank == CLG_MAX_RANK)
      return clg_node_error(n, CLG_INVALID_ARGUMENT,
                            "equation '%s': the output has more than %d dims", eq, CLG_MAX_RANK);
    seen[l] = true;
    e->out_label[e->out_rank++] = l;
  }
  if (ell_rank && !out_ell)
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "equation '%s': the operands have \"...\" dims but the output has no "
                          "\"...\"",
                          eq);
  for (int l = 0; l < CLG_EINSUM_LABELS; l++)
    if (e->size[l] >= 0 && !seen[l])
      e->sum_label[e->sum_count++] = l;
  return CLG_OK;
}

static clg_code infer(clg_node *n)
{
  clg_einsum e;
  clg_code code = clg_einsum_spec(n, &e);
  if (code != CLG_OK)
    return code;
  clg_dtype dt = clg_node_in(n, 0)->dtype;
  for (int i = 1; i < n->num_inputs; i++)
    if (clg_node_in(n, i)->dtype != dt)
      return clg_node_error(n, CLG_INVALID_ARGUMENT, "inputs differ in dtype: %s vs %s",
                            clg_dtype_name(dt), clg_dtype_name(clg_node_in(n, i)->dtype));
  if (dt != CLG_FLOAT32 && dt != CLG_FLOAT64)
    return clg_node_error(n, CLG_INVALID_ARGUMENT, "Einsum takes float or double, not %s",
                          clg_dtype_name(dt));
  clg_attr_value *nn = &n->attrs[A_N], *t = &n->attrs[A_T];
  if ((nn->set && nn->i != n->num_inputs) || (t->set && t->dtype != dt))
    return clg_node_error(n, CLG_INVALID_ARGUMENT,
                          "attributes N and T must match the %d input(s) of dtype %s",
                          n->num_inputs, clg_dtype_name(dt));
  nn->set = t->set = true;
  nn->i = n->num_inputs;
  t->dtype = dt;
  int64_t dims[CLG_MAX_RANK];
  for (int k = 0; k < e.out_rank; k++)
    dims[k] = e.size[e.out_label[k]];
  return clg_node_set_output(n, 0, dt, e.out_rank, dims);
}

const clg_op_def clg_op_Einsum = {
    .name = "Einsum",
    .num_inputs = CLG_OP_VARIADIC,
    .num_outputs = 1,
    .num_attrs = 3,
    .attrs = attrs,
    .infer = infer,
    .inplace = -1,
};
