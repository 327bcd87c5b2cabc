/* The host tensor's fields, shared by tensor.c (making and freeing) and tensor_print.c inside
 * src/core only; everything else reads a tensor through core.h's accessors. */
#ifndef CLG_CORE_TENSOR_LAYOUT_H
#define CLG_CORE_TENSOR_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

struct clg_tensor {
  clg_dtype dtype;
  int rank;
  int64_t dims[CLG_MAX_RANK];
  size_t count, bytes;
  void *data;
  clg_host_buf *buf; /* data came from a host provider: give it back through release */
  void (*release)(clg_host_buf *buf);
};

#endif
