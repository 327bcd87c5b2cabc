/* The ONNX tests' harness: a protobuf writer for ModelProtos (ONNX's field numbers), the
 * model's parts (graph inputs and outputs, initializers, nodes, attributes), and running a model
 * on the test's device (CLG_ONNX_DEVICE, default /device:CPU:0; soft placement on, as the suite's
 * driver does) against references within ONNX's tolerance. */
#ifndef CLG_ONNX_TESTUTIL_H
#define CLG_ONNX_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "testutil.h"

/* ONNX's elem types the tests use. */
enum { F32 = 1, I32 = 6, I64 = 7, F64 = 11 };

/* --- a protobuf writer ----------------------------------------------------------------------- */

/* A growing buffer (zero-initialise it); aborts when out of memory. */
typedef struct clg_test_pb {
  uint8_t *p;
  size_t n, cap;
} clg_test_pb;

void clg_test_pb_raw(clg_test_pb *b, const void *d, size_t n);
void clg_test_pb_varint(clg_test_pb *b, uint64_t v);
void clg_test_pb_tag(clg_test_pb *b, int field, int wire);
void clg_test_pb_int(clg_test_pb *b, int field, int64_t v);
void clg_test_pb_bytes(clg_test_pb *b, int field, const void *d, size_t n);
void clg_test_pb_str(clg_test_pb *b, int field, const char *s);
/* Appends sub as field and frees it (sub is left empty). */
void clg_test_pb_msg(clg_test_pb *b, int field, clg_test_pb *sub);

/* --- ModelProto parts ------------------------------------------------------------------------ */

/* A graph input (field 11) or output (12): name, ONNX elem type and shape. */
void clg_test_onnx_value_info(clg_test_pb *g, int field, const char *name, int elem, int rank,
                              const int64_t *dims);
/* An initializer with raw_data of n elements of elem type (floats given as double). */
void clg_test_onnx_init(clg_test_pb *g, const char *name, int elem, int rank, const int64_t *dims,
                        int n, const double *v);
/* Attributes of a node: int, float, string, strings, ints. */
void clg_test_onnx_attr_i(clg_test_pb *node, const char *name, int64_t v);
void clg_test_onnx_attr_f(clg_test_pb *node, const char *name, float v);
void clg_test_onnx_attr_s(clg_test_pb *node, const char *name, const char *s);
void clg_test_onnx_attr_strs(clg_test_pb *node, const char *name, int n, const char *const *s);
void clg_test_onnx_attr_ints(clg_test_pb *node, const char *name, int n, const int64_t *v);
/* A node: inputs and outputs separated by a NULL ("" for an absent optional input). */
clg_test_pb clg_test_onnx_node(const char *op, const char *const *io);
/* A ModelProto (IR 8, opset 17) around graph (consumed). */
clg_test_pb clg_test_onnx_model(clg_test_pb *graph);

/* --- running --------------------------------------------------------------------------------- */

/* CLG_ONNX_DEVICE, or /device:CPU:0. */
const char *clg_test_onnx_device(void);
/* Soft placement, allow_growth. */
clg_session_options clg_test_onnx_opts(void);
/* Imports model under the test's device, feeds the inputs in order, fetches every output. */
clg_code clg_test_onnx_run(const clg_test_pb *m, int nin, clg_tensor **in, int nout,
                           clg_tensor **out);
/* got against want (double), shape rank/dims and dtype exactly, values within ONNX's tolerance
 * (rtol 1e-3, atol 1e-7). */
void clg_test_onnx_check_close(const char *what, const clg_tensor *got, clg_dtype dt, int rank,
                               const int64_t *dims, const double *want);
/* A host tensor of float32, float64, int32 or int64 from doubles. */
clg_tensor *clg_test_onnx_tensor(clg_dtype dt, int rank, const int64_t *dims, const double *v);

#endif
