/* Add, Sub, Mul, RealDiv, Maximum, Equal and GreaterEqual on the host: the flat loops for
 * equal shapes or a scalar operand, else the broadcast walk. */
#include "backends/host/host.h"

static clg_code binary_run(const clg_kernel_ctx *c)
{
  const clg_node *n = c->node;
  size_t na, nb;
  clg_dtype dt = clg_node_in(n, 0)->dtype;
  if (clg_binop_flat(n, &na, &nb)) {
    clg_host_binary(clg_binop_of(n), dt, c->in[0].host, na, c->in[1].host, nb, c->out[0].host,
                    clg_out_count(&n->outs[0]));
    return CLG_OK;
  }
  clg_strided m;
  clg_binop_map(n, &m);
  clg_host_broadcast(clg_binop_of(n), dt, c->in[0].host, c->in[1].host, c->out[0].host, &m);
  return CLG_OK;
}

#define ARITH(OP)                                                                                  \
  {                                                                                                \
    &clg_op_##OP, { CLG_KIND_HOST, clg_kernel_float_or_double, binary_run, NULL, NULL }            \
  }
#define COMPARE(OP)                                                                                \
  {                                                                                                \
    &clg_op_##OP, { CLG_KIND_HOST, clg_binop_compare_supports, binary_run, NULL, NULL }            \
  }

static const clg_kernel_entry entries[] = {
    ARITH(Add),
    ARITH(Sub),
    ARITH(Mul),
    ARITH(RealDiv),
    ARITH(Maximum),
    COMPARE(Equal),
    COMPARE(GreaterEqual),
};
CLG_KERNEL_SET(clg_host_kernels_binary, entries);
