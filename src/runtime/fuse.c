/* The plan's fusion pass: a Conv2D, MatMul or DepthwiseConv2dNative followed by element-wise
 * ops that run in place on its output (BiasAdd, Relu, Relu6, Add of a residual, a vector or
 * a scalar, Maximum/Minimum with one element: tfjs's and ONNX's fused convolutions, expanded
 * at import) becomes one launch: the first step's kernel applies the others as an epilogue to
 * each block of output rows while it is in cache, where the separate steps each made a pass
 * over memory. The plan is otherwise unchanged: values, lifetimes and the arena are the
 * unfused plan's (the chain's outputs already share one buffer, in place), and the fused steps
 * stay in the plan, launching nothing. Only kernels that take epilogues fuse (the host's);
 * other devices run the unfused steps. */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "runtime/plan.h"

static bool fuse_head(const clg_node *n, const step *st)
{
  return !st->remote && st->kernel && n->num_outputs == 1 && n->outs[0].dtype == CLG_FLOAT32 &&
         n->outs[0].rank >= 1 && clg_backend_takes_epilogue(st->kernel, n);
}

/* Whether o, an operand of an op on out, is a [cols] vector broadcast along the rows (its
 * dims 1 but the last, which is out's last). */
static bool is_row_vector(const clg_out_desc *o, const clg_out_desc *out)
{
  if (o->rank < 1 || o->rank > out->rank || o->dims[o->rank - 1] != out->dims[out->rank - 1])
    return false;
  for (int i = 0; i < o->rank - 1; i++)
    if (o->dims[i] != 1)
      return false;
  return true;
}

static bool same_shape(const clg_out_desc *a, const clg_out_desc *b)
{
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

/* The epilogue op of node n, whose input 0 is the chain's value (out: its shape), with its
 * other operand's pval in *arg (-1: none); false when n's op does not fuse. */
static bool epi_op_of(const step *st, const clg_node *n, clg_epi_op *op, int *arg)
{
  const clg_op_def *d = n->def;
  const clg_out_desc *out = &n->outs[0];
  *arg = -1;
  if (n->num_outputs != 1 || out->dtype != CLG_FLOAT32)
    return false;
  if (d == &clg_op_Relu || d == &clg_op_Relu6) {
    *op = d == &clg_op_Relu ? CLG_EPI_RELU : CLG_EPI_RELU6;
    return n->num_inputs == 1;
  }
  if (n->num_inputs != 2 || st->in[1] == st->in[0])
    return false;
  const clg_out_desc *o = clg_node_in(n, 1);
  size_t count = clg_out_count(o);
  *arg = st->in[1];
  if (d == &clg_op_BiasAdd) {
    *op = CLG_EPI_BIAS;
    return true;
  }
  if (d == &clg_op_Add || d == &clg_op_AddV2) {
    if (same_shape(o, out))
      *op = CLG_EPI_ADD;
    else if (count == 1)
      *op = CLG_EPI_SCALAR;
    else if (is_row_vector(o, out))
      *op = CLG_EPI_BIAS;
    else
      return false;
    return true;
  }
  if ((d == &clg_op_Maximum || d == &clg_op_Minimum) && count == 1) {
    *op = d == &clg_op_Maximum ? CLG_EPI_MAX : CLG_EPI_MIN;
    return true;
  }
  return false;
}

/* What the pass counts once per plan: per pval, its readers and the last step reading it. */
typedef struct fuse_ctx {
  clg_executor *x;
  plan *p;
  int *uses, *user;
} fuse_ctx;

/* Whether a step in (from, to) assigns to a variable (an operand may be one). */
static bool assigns_between(const fuse_ctx *f, int from, int to)
{
  for (int k = from + 1; k < to; k++)
    if (clg_exec_node(f->x, f->p->steps[k].node)->def->flags & CLG_OP_ASSIGNS)
      return true;
  return false;
}

/* The chain after head step h: each next step reads the current value only (its one
 * reader, not fetched), as input 0, in place (its output is that buffer), on the device,
 * with an operand there before h runs. */
static void fuse_chain(fuse_ctx *f, int h)
{
  plan *p = f->p;
  step *hs = &p->steps[h];
  int cur = hs->out[0];
  while (hs->nepi < CLG_EPI_MAX_OPS && f->uses[cur] == 1) {
    int k = f->user[cur];
    step *st = &p->steps[k];
    const clg_node *n = clg_exec_node(f->x, st->node);
    clg_epi_op op;
    int arg;
    if (st->remote || st->dev != hs->dev || st->fused_by || n->num_inputs < 1 || st->in[0] != cur ||
        p->pv[st->out[0]].alias != cur || !epi_op_of(st, n, &op, &arg))
      break;
    /* The operand exists when h runs (produced before it, or a Const, feed or variable), and
     * no step between may assign a variable it could be. */
    if (arg >= 0 && (p->pv[arg].start > h || assigns_between(f, h, k)))
      break;
    hs->epi_op[hs->nepi] = op;
    hs->epi_pv[hs->nepi++] = arg;
    st->fused_by = h + 1;
    p->stats.num_fused++;
    cur = st->out[0];
  }
}

clg_code clg_plan_fuse(clg_executor *x, plan *p)
{
  const char *env = getenv("CLGRAPH_FUSE");
  /* A plan with a Switch skips dead steps one by one (runner.c): a head would apply a dead
   * tail's ops, so such plans are not fused. */
  if ((env && strcmp(env, "0") == 0) || p->npv == 0 || p->control)
    return CLG_OK;
  fuse_ctx f = {x, p, calloc((size_t)p->npv, sizeof(int)), malloc(sizeof(int) * (size_t)p->npv)};
  if (!f.uses || !f.user) {
    free(f.uses);
    free(f.user);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
  }
  for (int k = 0; k < p->nsteps; k++) {
    const step *st = &p->steps[k];
    const clg_node *n = clg_exec_node(x, st->node);
    for (int j = 0; !st->remote && j < n->num_inputs; j++)
      if (st->in[j] >= 0)
        f.uses[st->in[j]]++, f.user[st->in[j]] = k;
    for (int c = 0; c < st->ncopies; c++) /* a copy reads its source too */
      f.uses[p->pv[st->copies[c]].src] += 2;
  }
  for (int i = 0; i < p->nfetches; i++)
    f.uses[p->fetch_pv[i]] += 2;
  for (int k = 0; k < p->nsteps; k++)
    if (!p->steps[k].fused_by && fuse_head(clg_exec_node(x, p->steps[k].node), &p->steps[k]))
      fuse_chain(&f, k);
  free(f.uses);
  free(f.user);
  return CLG_OK;
}
