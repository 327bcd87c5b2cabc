/* clgraph: host tensors.
 *
 * A clg_tensor is a dense, row-major array in host memory with a dtype and a shape. Feeds
 * and fetches of a session are host tensors.
 *
 *   int64_t dims[2] = {2, 3};
 *   float v[6] = {1, 2, 3, 4, 5, 6};
 *   clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 2, dims, v);
 *   char *s = clg_tensor_to_string(t);   // "[[ 1.  2.  3.]\n [ 4.  5.  6.]]"
 *   free(s);
 *   clg_tensor_free(t);
 */
#ifndef CLGRAPH_TENSOR_H
#define CLGRAPH_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Values follow TensorFlow's DataType enum (DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3,
 * DT_INT64 = 9, DT_BOOL = 10, DT_HALF = 19). A bool element is one byte, 0 or 1. */
typedef enum clg_dtype {
  CLG_FLOAT32 = 1,
  CLG_FLOAT64 = 2,
  CLG_INT32 = 3,
  CLG_INT64 = 9,
  CLG_BOOL = 10,
  CLG_FLOAT16 = 19
} clg_dtype;

#define CLG_MAX_RANK 8

typedef struct clg_tensor clg_tensor;

/* Size of one element in bytes; 0 for an unknown dtype. */
size_t clg_dtype_size(clg_dtype dtype);

/* TensorFlow's names: "float", "double", "int32", "int64", "bool", "half"; "invalid"
 * otherwise. */
const char *clg_dtype_name(clg_dtype dtype);

/* A new tensor of the given dtype and shape (rank 0..CLG_MAX_RANK, every dim >= 0).
 * data, if not NULL, holds the elements in row-major order and is copied; if NULL the
 * tensor is zero-filled. Returns NULL (INVALID_ARGUMENT, see clg_last_error) on a bad
 * dtype, rank or dim, or NULL (RESOURCE_EXHAUSTED) when memory runs out. The data is
 * aligned to 64 bytes. */
clg_tensor *clg_tensor_new(clg_dtype dtype, int rank, const int64_t *dims, const void *data);

/* Frees the tensor; NULL is allowed. */
void clg_tensor_free(clg_tensor *t);

clg_dtype clg_tensor_dtype(const clg_tensor *t);
int clg_tensor_rank(const clg_tensor *t);
/* Dimension i, or -1 if i is out of range. */
int64_t clg_tensor_dim(const clg_tensor *t, int i);
/* Number of elements (1 for a scalar). */
size_t clg_tensor_count(const clg_tensor *t);
/* Size of the data in bytes. */
size_t clg_tensor_bytes(const clg_tensor *t);
/* The elements, row-major; writable. */
void *clg_tensor_data(clg_tensor *t);
const void *clg_tensor_const_data(const clg_tensor *t);

/* The values printed as numpy prints them (the guide's style):
 *   "[[ 22.  28.]\n [ 49.  64.]]", "[[  44.   56.]\n [  98.  128.]]";
 * integers as "[ 1 -2 30]", bools as "[ True False]".
 * Returns a malloc'd string the caller frees with free(), or NULL on failure. */
char *clg_tensor_to_string(const clg_tensor *t);

/* The shape as TensorFlow prints it: "[2,3]", "[]" for a scalar, into buf (always
 * NUL-terminated). Returns buf. */
char *clg_tensor_shape_string(const clg_tensor *t, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
