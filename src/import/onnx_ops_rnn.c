/* ONNX's recurrent ops RNN, GRU and LSTM, unrolled over the input's static sequence length:
 * per direction, X times W for every step at once (one MatMul), then per step H times R, the
 * gates sliced out and combined with Sigmoid/Tanh/Mul/Add; Pack gathers Y. sequence_lens, when
 * given, masks the forward direction at run time (a step past a batch entry's length keeps its
 * state and writes zeros to Y); the reverse direction takes it only when it is constant and
 * full. Activations: ONNX's defaults and Relu, Tanh, Sigmoid, Affine, LeakyRelu, ScaledTanh,
 * HardSigmoid, Softsign, Softplus. */
#include <ctype.h>
#include <string.h>

#include "import/onnx.h"
#include "ops/ops.h"

#define TRY(e)                                                                                     \
  do {                                                                                             \
    clg_code try_code_ = (e);                                                                      \
    if (try_code_ != CLG_OK)                                                                       \
      return try_code_;                                                                            \
  } while (0)

enum { RNN, GRU, LSTM };

typedef enum {
  ACT_RELU,
  ACT_TANH,
  ACT_SIGMOID,
  ACT_AFFINE,
  ACT_LEAKY,
  ACT_SCALED_TANH,
  ACT_HARD_SIGMOID,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS
} act_kind;

typedef struct rnn_act {
  act_kind kind;
  double alpha, beta;
} rnn_act;

/* One direction's constants and the state the steps carry. */
typedef struct rnn_dir {
  clg_output xw;      /* [S * B, G * H]: X W^T + Wb (+ Rb where it may be added up front) */
  clg_output r;       /* [G * H, H] (GRU without linear_before_reset: z and r rows only) */
  clg_output rh;      /* GRU: the h rows of R, [H, H] */
  clg_output rb, rbh; /* the R bias where it stays apart (GRU), node NULL: none */
  clg_output p[3];    /* LSTM peepholes i, o, f as [1, H]; node NULL: none */
  rnn_act act[3];
} rnn_dir;

typedef struct rnn_ctx {
  clg_onnx *c;
  const clg_imp_node *n;
  int kind, gates, nact;
  int64_t s, b, h, in;
  double clip; /* 0: none */
  bool lbr;    /* GRU's linear_before_reset */
} rnn_ctx;

static clg_code op1(clg_onnx *c, const char *op, clg_output x, clg_output *y)
{
  return clg_onnx_op(c, op, 1, &x, 0, NULL, y);
}

static clg_code matmul_t(clg_onnx *c, clg_output a, clg_output b, clg_output *y)
{
  clg_attr tb = clg_attr_bool("transpose_b", 1);
  clg_output ins[2] = {a, b};
  return clg_onnx_op(c, "MatMul", 2, ins, 1, &tb, y);
}

/* x[begin : begin + size] along each axis (size -1: to the end). */
static clg_code slice(clg_onnx *c, clg_output x, const int64_t *begin, const int64_t *size,
                      clg_output *y)
{
  int rank = clg_onnx_rank(x);
  int64_t sz[CLG_MAX_RANK];
  for (int d = 0; d < rank; d++)
    sz[d] = size[d] < 0 ? clg_onnx_dim(x, d) - begin[d] : size[d];
  clg_output ins[3] = {x};
  TRY(clg_onnx_const_i32(c, rank, begin, &ins[1]));
  TRY(clg_onnx_const_i32(c, rank, sz, &ins[2]));
  return clg_onnx_op(c, "Slice", 3, ins, 0, NULL, y);
}

/* Columns [g * h, (g + k) * h) of a [rows, G * h] value. */
static clg_code cols(clg_onnx *c, clg_output x, int64_t g, int64_t k, int64_t h, clg_output *y)
{
  return slice(c, x, (int64_t[]){0, g * h}, (int64_t[]){-1, k * h}, y);
}

static bool same_name(const char *a, const char *b)
{
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return false;
  return *a == *b;
}

/* The activations of every direction: the attribute's names (nact per direction) with their
 * alphas and betas in order, else the op's defaults. */
static clg_code parse_acts(rnn_ctx *x, int dirs, rnn_dir *d)
{
  static const act_kind defaults[3][3] = {
      {ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
  const clg_imp_attr *a = clg_onnx_attr(x->n, "activations");
  const clg_imp_attr *al = clg_onnx_attr(x->n, "activation_alpha");
  const clg_imp_attr *be = clg_onnx_attr(x->n, "activation_beta");
  int ia = 0, ib = 0, want = x->nact * dirs;
  if (a && (a->kind != CLG_IMP_LIST || a->n != want || (a->n && a->elem != CLG_IMP_S)))
    return clg_onnx_fail(x->c, x->n, CLG_INVALID_ARGUMENT,
                         "activations must name %d functions (%d per direction)", want, x->nact);
  for (int k = 0; k < want; k++) {
    rnn_act *r = &d[k / x->nact].act[k % x->nact];
    r->alpha = r->beta = 0;
    if (!a) {
      r->kind = defaults[x->kind][k % x->nact];
      continue;
    }
    static const struct {
      const char *name;
      act_kind kind;
      double alpha, beta; /* the defaults */
      bool has_alpha, has_beta;
    } table[] = {
        {"Relu", ACT_RELU, 0, 0, false, false},
        {"Tanh", ACT_TANH, 0, 0, false, false},
        {"Sigmoid", ACT_SIGMOID, 0, 0, false, false},
        {"Affine", ACT_AFFINE, 1, 0, true, true},
        {"LeakyRelu", ACT_LEAKY, 0.01, 0, true, false},
        {"ScaledTanh", ACT_SCALED_TANH, 1, 1, true, true},
        {"HardSigmoid", ACT_HARD_SIGMOID, 0.2, 0.5, true, true},
        {"Softsign", ACT_SOFTSIGN, 0, 0, false, false},
        {"Softplus", ACT_SOFTPLUS, 0, 0, false, false},
    };
    size_t t = 0;
    while (t < sizeof table / sizeof table[0] && !same_name(a->strs[k], table[t].name))
      t++;
    if (t == sizeof table / sizeof table[0])
      return clg_onnx_fail(x->c, x->n, CLG_UNIMPLEMENTED, "activation '%s' is not supported",
                           a->strs[k]);
    r->kind = table[t].kind;
    r->alpha = table[t].alpha;
    r->beta = table[t].beta;
    if (table[t].has_alpha && al && al->kind == CLG_IMP_LIST && ia < al->n && al->floats)
      r->alpha = al->floats[ia++];
    if (table[t].has_beta && be && be->kind == CLG_IMP_LIST && ib < be->n && be->floats)
      r->beta = be->floats[ib++];
  }
  return CLG_OK;
}

static clg_code activate(clg_onnx *c, const rnn_act *a, clg_output x, clg_output *y)
{
  clg_output t = {0}, u = {0};
  switch (a->kind) {
  case ACT_RELU:
    return op1(c, "Relu", x, y);
  case ACT_TANH:
    return op1(c, "Tanh", x, y);
  case ACT_SIGMOID:
    return op1(c, "Sigmoid", x, y);
  case ACT_AFFINE:
    TRY(clg_onnx_scalar_op(c, "Mul", x, a->alpha, &t));
    return clg_onnx_scalar_op(c, "Add", t, a->beta, y);
  case ACT_LEAKY: {
    clg_attr al = clg_attr_float("alpha", a->alpha);
    return clg_onnx_op(c, "LeakyRelu", 1, &x, 1, &al, y);
  }
  case ACT_SCALED_TANH:
    TRY(clg_onnx_scalar_op(c, "Mul", x, a->beta, &t));
    TRY(op1(c, "Tanh", t, &t));
    return clg_onnx_scalar_op(c, "Mul", t, a->alpha, y);
  case ACT_HARD_SIGMOID:
    TRY(clg_onnx_scalar_op(c, "Mul", x, a->alpha, &t));
    TRY(clg_onnx_scalar_op(c, "Add", t, a->beta, &t));
    TRY(clg_onnx_scalar_op(c, "Minimum", t, 1, &t));
    return clg_onnx_scalar_op(c, "Maximum", t, 0, y);
  case ACT_SOFTSIGN:
    TRY(op1(c, "Abs", x, &t));
    TRY(clg_onnx_scalar_op(c, "Add", t, 1, &t));
    return clg_onnx_binop(c, "RealDiv", x, t, y);
  case ACT_SOFTPLUS: /* max(x, 0) + log(1 + exp(-|x|)): no overflow */
    TRY(op1(c, "Abs", x, &t));
    TRY(op1(c, "Neg", t, &t));
    TRY(op1(c, "Exp", t, &t));
    TRY(clg_onnx_scalar_op(c, "Add", t, 1, &t));
    TRY(op1(c, "Log", t, &t));
    TRY(op1(c, "Relu", x, &u));
    return clg_onnx_binop(c, "Add", u, t, y);
  }
  return CLG_INTERNAL;
}

/* The activation of a gate's pre-activation, clipped first when the node says so. */
static clg_code gate(rnn_ctx *x, const rnn_act *a, clg_output pre, clg_output *y)
{
  if (x->clip > 0) {
    TRY(clg_onnx_scalar_op(x->c, "Minimum", pre, x->clip, &pre));
    TRY(clg_onnx_scalar_op(x->c, "Maximum", pre, -x->clip, &pre));
  }
  return activate(x->c, a, pre, y);
}

/* Direction d's slice of a [D, ...] input as a value of the remaining dims. */
static clg_code dir_slice(rnn_ctx *x, int i, int d, clg_output *y)
{
  clg_output v = {0};
  TRY(clg_onnx_in(x->c, x->n, i, &v));
  int rank = clg_onnx_rank(v);
  int64_t b[CLG_MAX_RANK] = {0}, s[CLG_MAX_RANK], dims[CLG_MAX_RANK];
  for (int k = 0; k < rank; k++)
    s[k] = -1;
  b[0] = d;
  s[0] = 1;
  TRY(slice(x->c, v, b, s, &v));
  for (int k = 1; k < rank; k++)
    dims[k - 1] = clg_onnx_dim(v, k);
  return clg_onnx_reshape(x->c, v, rank - 1, dims, y);
}

/* Direction d's initial state from input i ([D, B, H], or [B, D, H] in layout 1), else zeros. */
static clg_code initial(rnn_ctx *x, int i, int d, bool layout1, clg_output *y)
{
  if (!clg_onnx_has(x->n, i)) {
    clg_dtype dt = clg_onnx_in_dtype(x->c, x->n, 0);
    clg_tensor *t = clg_tensor_new(dt, 2, (int64_t[]){x->b, x->h}, NULL);
    if (!t)
      return clg_graph_record_error(x->c->g);
    clg_code code = clg_onnx_const(x->c, t, y);
    clg_tensor_free(t);
    return code;
  }
  int64_t want[3] = {layout1 ? x->b : 0, layout1 ? 0 : x->b, x->h};
  int rank = clg_onnx_in_rank(x->c, x->n, i);
  bool ok = rank == 3 && clg_onnx_in_dim(x->c, x->n, i, 2) == want[2];
  for (int k = 0; k < 2 && ok; k++)
    ok = want[k] == 0 || clg_onnx_in_dim(x->c, x->n, i, k) == want[k];
  if (!ok)
    return clg_onnx_fail(x->c, x->n, CLG_INVALID_ARGUMENT,
                         "input %d ('%s') is not [directions, batch %lld, hidden %lld]%s", i,
                         x->n->inputs[i], (long long)x->b, (long long)x->h,
                         layout1 ? " in layout 1's order" : "");
  if (!layout1)
    return dir_slice(x, i, d, y);
  clg_output v = {0};
  TRY(clg_onnx_in(x->c, x->n, i, &v));
  TRY(slice(x->c, v, (int64_t[]){0, d, 0}, (int64_t[]){-1, 1, -1}, &v));
  return clg_onnx_reshape(x->c, v, 2, (int64_t[]){x->b, x->h}, y);
}

/* Direction d's constants: X W^T + biases for every step, R, and the peepholes. */
static clg_code prepare(rnn_ctx *x, clg_output x2d, int d, rnn_dir *rd)
{
  clg_onnx *c = x->c;
  int64_t gh = x->gates * x->h;
  clg_output w, r, bias = {0}, rb = {0};
  TRY(dir_slice(x, 1, d, &w));
  TRY(dir_slice(x, 2, d, &r));
  TRY(matmul_t(c, x2d, w, &rd->xw));
  if (clg_onnx_has(x->n, 3)) {
    clg_output b = {0};
    TRY(dir_slice(x, 3, d, &b));
    TRY(slice(c, b, (int64_t[]){0}, (int64_t[]){gh}, &bias));
    TRY(slice(c, b, (int64_t[]){gh}, (int64_t[]){gh}, &rb));
  }
  rd->rb = rd->rbh = (clg_output){0};
  rd->r = r;
  if (x->kind == GRU) { /* R's bias of the h gate is inside the reset product */
    TRY(slice(c, r, (int64_t[]){2 * x->h, 0}, (int64_t[]){x->h, -1}, &rd->rh));
    if (!x->lbr)
      TRY(slice(c, r, (int64_t[]){0, 0}, (int64_t[]){2 * x->h, -1}, &rd->r));
    if (rb.node && x->lbr) /* H R^T + Rb for all three gates, the h part reset after */
      rd->rb = rb;
    else if (rb.node) {
      TRY(slice(c, rb, (int64_t[]){0}, (int64_t[]){2 * x->h}, &rd->rb));
      TRY(slice(c, rb, (int64_t[]){2 * x->h}, (int64_t[]){x->h}, &rd->rbh));
    }
  } else if (rb.node)
    TRY(clg_onnx_binop(c, "Add", bias, rb, &bias));
  if (bias.node)
    TRY(clg_onnx_binop(c, "Add", rd->xw, bias, &rd->xw));
  for (int k = 0; k < 3; k++)
    rd->p[k] = (clg_output){0};
  if (x->kind == LSTM && clg_onnx_has(x->n, 7)) {
    clg_output p = {0};
    if (clg_onnx_in_rank(c, x->n, 7) != 2 || clg_onnx_in_dim(c, x->n, 7, 1) != 3 * x->h)
      return clg_onnx_fail(c, x->n, CLG_INVALID_ARGUMENT, "P must be [directions, %lld]",
                           (long long)(3 * x->h));
    TRY(dir_slice(x, 7, d, &p));
    for (int k = 0; k < 3; k++) {
      TRY(slice(c, p, (int64_t[]){k * x->h}, (int64_t[]){x->h}, &rd->p[k]));
      TRY(clg_onnx_reshape(c, rd->p[k], 2, (int64_t[]){1, x->h}, &rd->p[k]));
    }
  }
  return CLG_OK;
}

/* One step at time t: new H (and C) from the previous ones. */
static clg_code step(rnn_ctx *x, const rnn_dir *rd, int64_t t, clg_output h, clg_output cst,
                     clg_output *h_out, clg_output *c_out)
{
  clg_onnx *c = x->c;
  clg_output xt = {0}, hr = {0}, pre = {0}, g[4] = {0}, u = {0}, v = {0};
  TRY(slice(c, rd->xw, (int64_t[]){t * x->b, 0}, (int64_t[]){x->b, -1}, &xt));
  TRY(matmul_t(c, h, rd->r, &hr));
  if (rd->rb.node)
    TRY(clg_onnx_binop(c, "Add", hr, rd->rb, &hr));
  if (x->kind == RNN) {
    TRY(clg_onnx_binop(c, "Add", xt, hr, &pre));
    return gate(x, &rd->act[0], pre, h_out);
  }
  if (x->kind == GRU) { /* z, r, h; f = act[0], g = act[1] */
    clg_output xz = {0}, xr = {0}, xh = {0}, z = {0}, r = {0}, hh = {0};
    TRY(cols(c, xt, 0, 1, x->h, &xz));
    TRY(cols(c, xt, 1, 1, x->h, &xr));
    TRY(cols(c, xt, 2, 1, x->h, &xh));
    TRY(cols(c, hr, 0, 1, x->h, &u));
    TRY(clg_onnx_binop(c, "Add", xz, u, &pre));
    TRY(gate(x, &rd->act[0], pre, &z));
    TRY(cols(c, hr, 1, 1, x->h, &u));
    TRY(clg_onnx_binop(c, "Add", xr, u, &pre));
    TRY(gate(x, &rd->act[0], pre, &r));
    if (x->lbr) { /* r * (H R_h^T + Rb_h), Rb_h already in hr */
      TRY(cols(c, hr, 2, 1, x->h, &u));
      TRY(clg_onnx_binop(c, "Mul", r, u, &u));
    } else { /* (r * H) R_h^T + Rb_h */
      TRY(clg_onnx_binop(c, "Mul", r, h, &u));
      TRY(matmul_t(c, u, rd->rh, &u));
      if (rd->rbh.node)
        TRY(clg_onnx_binop(c, "Add", u, rd->rbh, &u));
    }
    TRY(clg_onnx_binop(c, "Add", xh, u, &pre));
    TRY(gate(x, &rd->act[1], pre, &hh));
    /* H = (1 - z) * hh + z * H = hh + z * (H - hh) */
    TRY(clg_onnx_binop(c, "Sub", h, hh, &u));
    TRY(clg_onnx_binop(c, "Mul", z, u, &u));
    return clg_onnx_binop(c, "Add", hh, u, h_out);
  }
  /* LSTM: i, o, f, c; f = act[0], g = act[1], h = act[2] */
  TRY(clg_onnx_binop(c, "Add", xt, hr, &pre));
  for (int k = 0; k < 4; k++)
    TRY(cols(c, pre, k, 1, x->h, &g[k]));
  clg_output i = {0}, o = {0}, f = {0}, cc = {0}, cn = {0};
  if (rd->p[0].node) {
    TRY(clg_onnx_binop(c, "Mul", rd->p[0], cst, &u));
    TRY(clg_onnx_binop(c, "Add", g[0], u, &g[0]));
    TRY(clg_onnx_binop(c, "Mul", rd->p[2], cst, &u));
    TRY(clg_onnx_binop(c, "Add", g[2], u, &g[2]));
  }
  TRY(gate(x, &rd->act[0], g[0], &i));
  TRY(gate(x, &rd->act[0], g[2], &f));
  TRY(gate(x, &rd->act[1], g[3], &cc));
  TRY(clg_onnx_binop(c, "Mul", f, cst, &u));
  TRY(clg_onnx_binop(c, "Mul", i, cc, &v));
  TRY(clg_onnx_binop(c, "Add", u, v, &cn));
  if (rd->p[1].node) {
    TRY(clg_onnx_binop(c, "Mul", rd->p[1], cn, &u));
    TRY(clg_onnx_binop(c, "Add", g[1], u, &g[1]));
  }
  TRY(gate(x, &rd->act[0], g[1], &o));
  TRY(activate(c, &rd->act[2], cn, &u));
  *c_out = cn;
  return clg_onnx_binop(c, "Mul", o, u, h_out);
}

/* sequence_lens: absent or constant and full (true: no masking), else the forward direction's
 * masks; *lens receives the int64 [B] lengths. */
static clg_code seq_lens(rnn_ctx *x, bool *full, clg_output *lens)
{
  *full = true;
  if (!clg_onnx_has(x->n, 4))
    return CLG_OK;
  if (clg_onnx_in_rank(x->c, x->n, 4) != 1 || clg_onnx_in_dim(x->c, x->n, 4, 0) != x->b)
    return clg_onnx_fail(x->c, x->n, CLG_INVALID_ARGUMENT, "sequence_lens must hold %lld lengths",
                         (long long)x->b);
  const clg_tensor *t = clg_onnx_in_const(x->c, x->n, 4);
  if (t) {
    int64_t v[256];
    int k;
    if (x->b <= 256) {
      TRY(clg_onnx_in_ints(x->c, x->n, 4, v, 256, &k));
      for (int i = 0; i < k; i++) {
        if (v[i] < 0 || v[i] > x->s)
          return clg_onnx_fail(x->c, x->n, CLG_INVALID_ARGUMENT,
                               "sequence_lens[%d] = %lld is outside [0, %lld]", i, (long long)v[i],
                               (long long)x->s);
        *full = *full && v[i] == x->s;
      }
      if (*full)
        return CLG_OK;
    } else
      *full = false;
  } else
    *full = false;
  TRY(clg_onnx_in(x->c, x->n, 4, lens));
  clg_attr a = clg_attr_dtype("DstT", CLG_INT64);
  return clg_onnx_op(x->c, "Cast", 1, lens, 1, &a, lens);
}

/* One direction over every step: ys[t] its H at time t, *h_last and *c_last the final state. */
static clg_code run_dir(rnn_ctx *x, const rnn_dir *rd, bool reverse, bool masked, clg_output lens,
                        clg_output h, clg_output cst, clg_output *ys, clg_output *h_last,
                        clg_output *c_last)
{
  clg_onnx *c = x->c;
  clg_output zeros = {0};
  if (masked) {
    clg_tensor *t = clg_tensor_new(clg_onnx_dtype(h), 2, (int64_t[]){x->b, x->h}, NULL);
    if (!t)
      return clg_graph_record_error(c->g);
    clg_code code = clg_onnx_const(c, t, &zeros);
    clg_tensor_free(t);
    TRY(code);
  }
  for (int64_t k = 0; k < x->s; k++) {
    int64_t t = reverse ? x->s - 1 - k : k;
    clg_output hn, cn = cst;
    TRY(step(x, rd, t, h, cst, &hn, &cn));
    if (masked) { /* past a length: the state stays, Y is zero */
      clg_output live = {0}, ins[3] = {0};
      TRY(clg_onnx_const_scalar(c, CLG_INT64, (double)(t + 1), &live));
      TRY(clg_onnx_binop(c, "GreaterEqual", lens, live, &live));
      ins[0] = live, ins[1] = hn, ins[2] = zeros;
      TRY(clg_onnx_op(c, "Select", 3, ins, 0, NULL, &ys[t]));
      ins[2] = h;
      TRY(clg_onnx_op(c, "Select", 3, ins, 0, NULL, &hn));
      if (x->kind == LSTM) {
        ins[1] = cn, ins[2] = cst;
        TRY(clg_onnx_op(c, "Select", 3, ins, 0, NULL, &cn));
      }
    } else
      ys[t] = hn;
    h = hn;
    cst = cn;
  }
  *h_last = h;
  *c_last = cst;
  return CLG_OK;
}

static clg_code pack(clg_onnx *c, int k, const clg_output *v, int axis, clg_output *y)
{
  clg_attr a = clg_attr_int("axis", axis);
  return clg_onnx_op(c, "Pack", k, v, 1, &a, y);
}

/* The outputs: Y [S, D, B, H] (layout 1: [B, S, D, H]), Y_h and Y_c [D, B, H] ([B, D, H]). */
static clg_code outputs(rnn_ctx *x, int dirs, bool layout1, clg_output ys[2][1024],
                        const clg_output *hl, const clg_output *cl)
{
  clg_onnx *c = x->c;
  const clg_imp_node *n = x->n;
  if (n->num_outputs > 0 && n->outputs[0][0]) {
    clg_output per[2] = {0}, y = {0};
    for (int d = 0; d < dirs; d++)
      TRY(pack(c, (int)x->s, ys[d], 0, &per[d])); /* [S, B, H] */
    TRY(pack(c, dirs, per, 1, &y));               /* [S, D, B, H] */
    if (layout1)
      TRY(clg_onnx_transpose(c, y, 4, (int64_t[]){2, 0, 1, 3}, &y));
    TRY(clg_onnx_out(c, n, 0, y));
  }
  for (int i = 1; i < 3 && i < n->num_outputs; i++) {
    if (!n->outputs[i][0] || (i == 2 && x->kind != LSTM))
      continue;
    clg_output y = {0};
    TRY(pack(c, dirs, i == 1 ? hl : cl, 0, &y));
    if (layout1)
      TRY(clg_onnx_transpose(c, y, 3, (int64_t[]){1, 0, 2}, &y));
    TRY(clg_onnx_out(c, n, i, y));
  }
  return CLG_OK;
}

/* The shapes of X, W and R against hidden_size and the direction count. */
static clg_code check_shapes(rnn_ctx *x, int dirs, bool layout1)
{
  clg_onnx *c = x->c;
  const clg_imp_node *n = x->n;
  if (clg_onnx_in_rank(c, n, 0) != 3)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "X has rank %d, not 3",
                         clg_onnx_in_rank(c, n, 0));
  x->s = clg_onnx_in_dim(c, n, 0, layout1 ? 1 : 0);
  x->b = clg_onnx_in_dim(c, n, 0, layout1 ? 0 : 1);
  x->in = clg_onnx_in_dim(c, n, 0, 2);
  int64_t hs = clg_onnx_attr_i(n, "hidden_size", -1);
  x->h = clg_onnx_in_rank(c, n, 2) == 3 ? clg_onnx_in_dim(c, n, 2, 2) : -1;
  if (hs >= 0 && hs != x->h)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "hidden_size %lld but R's last dim is %lld",
                         (long long)hs, (long long)x->h);
  int64_t gh = x->gates * x->h;
  struct {
    int i;
    int64_t d1, d2;
    const char *what;
  } want[3] = {{1, gh, x->in, "W"}, {2, gh, x->h, "R"}, {3, 2 * gh, -1, "B"}};
  for (int k = 0; k < 3; k++) {
    int i = want[k].i, rank = want[k].d2 < 0 ? 2 : 3;
    if (i == 3 && !clg_onnx_has(n, 3))
      continue;
    if (clg_onnx_in_rank(c, n, i) != rank || clg_onnx_in_dim(c, n, i, 0) != dirs ||
        clg_onnx_in_dim(c, n, i, 1) != want[k].d1 ||
        (rank == 3 && clg_onnx_in_dim(c, n, i, 2) != want[k].d2))
      return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT,
                           "%s must be [%d, %lld%s%lld] for %d direction(s), hidden %lld",
                           want[k].what, dirs, (long long)want[k].d1, rank == 3 ? ", " : "",
                           rank == 3 ? (long long)want[k].d2 : 0ll, dirs, (long long)x->h);
  }
  if (x->h < 1 || x->s < 1 || x->s > 1024 || x->b < 1)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "%lld steps of batch %lld, hidden %lld: want 1 to 1024 steps",
                         (long long)x->s, (long long)x->b, (long long)x->h);
  return CLG_OK;
}

static clg_code recurrent(clg_onnx *c, const clg_imp_node *n, const clg_onnx_rule *r)
{
  (void)r;
  rnn_ctx x = {.c = c, .n = n};
  x.kind = strcmp(n->op, "RNN") == 0 ? RNN : strcmp(n->op, "GRU") == 0 ? GRU : LSTM;
  x.gates = x.kind == RNN ? 1 : x.kind == GRU ? 3 : 4;
  x.nact = x.kind + 1;
  x.clip = clg_onnx_attr_f(n, "clip", 0);
  x.lbr = clg_onnx_attr_i(n, "linear_before_reset", 0) != 0;
  bool layout1 = clg_onnx_attr_i(n, "layout", 0) != 0;
  const char *dir = clg_onnx_attr_s(n, "direction", "forward");
  bool bidi = strcmp(dir, "bidirectional") == 0, rev = strcmp(dir, "reverse") == 0;
  if (!bidi && !rev && strcmp(dir, "forward") != 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "direction '%s'", dir);
  if (x.kind == LSTM && clg_onnx_attr_i(n, "input_forget", 0) != 0)
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED, "input_forget is not supported");
  if (x.clip < 0)
    return clg_onnx_fail(c, n, CLG_INVALID_ARGUMENT, "clip %g", x.clip);
  int dirs = bidi ? 2 : 1;
  rnn_dir rd[2];
  TRY(check_shapes(&x, dirs, layout1));
  TRY(parse_acts(&x, dirs, rd));
  bool full;
  clg_output lens = {0}, xin;
  TRY(seq_lens(&x, &full, &lens));
  if (!full && (rev || bidi))
    return clg_onnx_fail(c, n, CLG_UNIMPLEMENTED,
                         "the reverse direction takes sequence_lens only when it is constant and "
                         "equal to the sequence length");
  TRY(clg_onnx_in(c, n, 0, &xin));
  if (layout1)
    TRY(clg_onnx_transpose(c, xin, 3, (int64_t[]){1, 0, 2}, &xin));
  TRY(clg_onnx_reshape(c, xin, 2, (int64_t[]){x.s * x.b, x.in}, &xin));
  clg_output yl[2][1024] = {0}, hl[2] = {0},
             cl[2] = {0}; /* Y per direction and time, the final states */
  for (int d = 0; d < dirs; d++) {
    clg_output h, cst = {0};
    TRY(prepare(&x, xin, d, &rd[d]));
    TRY(initial(&x, 5, d, layout1, &h));
    if (x.kind == LSTM)
      TRY(initial(&x, 6, d, layout1, &cst));
    TRY(run_dir(&x, &rd[d], rev || d == 1, !full, lens, h, cst, yl[d], &hl[d], &cl[d]));
  }
  return outputs(&x, dirs, layout1, yl, hl, cl);
}

CLG_ONNX_RULE_SET(clg_onnx_rules_rnn, {"RNN", 7, recurrent, "Pack"}, {"GRU", 7, recurrent, "Pack"},
                  {"LSTM", 7, recurrent, "Pack"});
