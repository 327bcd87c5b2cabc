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

#include "clgraph/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values follow TensorFlow's DataType enum (DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3,
 * DT_UINT8 = 4, DT_INT16 = 5, DT_INT8 = 6, DT_INT64 = 9, DT_BOOL = 10, DT_UINT16 = 17,
 * DT_HALF = 19, DT_UINT32 = 22, DT_UINT64 = 23). A bool element is one byte, 0 or 1. */
typedef enum clg_dtype {
  CLG_FLOAT32 = 1,
  CLG_FLOAT64 = 2,
  CLG_INT32 = 3,
  CLG_UINT8 = 4,
  CLG_INT16 = 5,
  CLG_INT8 = 6,
  CLG_INT64 = 9,
  CLG_BOOL = 10,
  CLG_UINT16 = 17,
  CLG_FLOAT16 = 19,
  CLG_UINT32 = 22,
  CLG_UINT64 = 23
} clg_dtype;

#define CLG_MAX_RANK 8

typedef struct clg_tensor clg_tensor;

/* Size of one element in bytes; 0 for an unknown dtype. */
size_t clg_dtype_size(clg_dtype dtype);

/* TensorFlow's names: "float", "double", "int32", "int64", "bool", "half", "uint8", "int8",
 * "int16", "uint16", "uint32", "uint64"; "invalid" otherwise. */
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

/* --- numpy's .npy files ------------------------------------------------------------------
 *
 *   clg_tensor *x = NULL;
 *   if (clg_tensor_load_npy("image.npy", &x) != CLG_OK)      // np.save("image.npy", a)
 *     fprintf(stderr, "%s\n", clg_last_error());
 *   clg_tensor_save_npy(x, "copy.npy");                       // np.load("copy.npy")
 *
 * Reads format versions 1.0, 2.0 and 3.0, little-endian, C order: descr '<f2', '<f4', '<f8'
 * (float16 as CLG_FLOAT16's bit patterns), '<i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4',
 * '<u8' and '|b1' ('<' or '=' for the byte order, '|' or either of them for one-byte types),
 * each as the clgraph dtype of the same width and signedness. The header
 * dictionary is read as numpy writes it (keys 'descr', 'fortran_order' and 'shape', each
 * once, no other); the data must be exactly what the shape needs. Errors name the file:
 * INVALID_ARGUMENT for what is not an .npy file, a bad header, or a bool byte other than 0 or
 * 1; UNIMPLEMENTED for big-endian data, Fortran order, a dtype not listed or a rank above
 * CLG_MAX_RANK; DATA_LOSS for a file cut short or longer than its shape. clg_file_open_read's
 * rules: a regular file only. */
clg_code clg_tensor_load_npy(const char *path, clg_tensor **out);
/* The same from bytes in memory; name is the file's name in messages. */
clg_code clg_tensor_load_npy_memory(const void *bytes, size_t len, const char *name,
                                    clg_tensor **out);
/* Writes t as numpy's np.save does (version 1.0, or 2.0 when the header needs it; the header
 * padded to 64 bytes), atomically as every file clgraph writes: a temporary file beside path
 * renamed over it, so path holds the old file or the whole new one. Errors as
 * clg_atomic_file's: PERMISSION_DENIED, NOT_FOUND (no such folder), RESOURCE_EXHAUSTED,
 * INVALID_ARGUMENT, INTERNAL, naming the file. */
clg_code clg_tensor_save_npy(const clg_tensor *t, const char *path);

#ifdef __cplusplus
}
#endif
#endif
