/* The schema's shape arithmetic: element counts that cannot overflow, shapes as text. */
#include <stdio.h>

#include "schema/schema.h"

bool clg_checked_mul(int64_t a, int64_t b, int64_t *r)
{
  if (a != 0 && b > INT64_MAX / a)
    return false;
  *r = a * b;
  return true;
}

bool clg_dims_product(int n, const int64_t *dims, int64_t *count)
{
  bool fits = true;
  int64_t c = 1;
  for (int k = 0; k < n; k++) {
    if (dims[k] == 0) {
      *count = 0;
      return true;
    }
    fits = fits && clg_checked_mul(c, dims[k], &c);
  }
  *count = fits ? c : INT64_MAX;
  return fits;
}

size_t clg_out_count(const clg_out_desc *d)
{
  size_t count = 1;
  for (int i = 0; i < d->rank; i++)
    count *= (size_t)d->dims[i];
  return count;
}

char *clg_out_shape_string(const clg_out_desc *d, char *buf, size_t size)
{
  if (!buf || size == 0)
    return buf;
  /* snprintf returns the length it wanted: once that reaches size, the rest is cut. */
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; d && i < d->rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)d->dims[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
  return buf;
}
