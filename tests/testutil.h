/* A small test harness: CHECK macros that count, and a summary line CTest logs show.
 * A test fails (non-zero exit) when any check failed; there is no skipping. */
#ifndef CLG_TESTUTIL_H
#define CLG_TESTUTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "clgraph.h"

extern int clg_test_passed, clg_test_failed;

void clg_test_fail(const char *file, int line, const char *fmt, ...);

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (cond)                                                                                      \
      clg_test_passed++;                                                                           \
    else                                                                                           \
      clg_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                                       \
  } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
  do {                                                                                             \
    if (cond)                                                                                      \
      clg_test_passed++;                                                                           \
    else                                                                                           \
      clg_test_fail(__FILE__, __LINE__, __VA_ARGS__);                                              \
  } while (0)

#define CHECK_CODE(expr, want)                                                                     \
  do {                                                                                             \
    clg_code got_ = (expr);                                                                        \
    if (got_ == (want))                                                                            \
      clg_test_passed++;                                                                           \
    else                                                                                           \
      clg_test_fail(__FILE__, __LINE__, "%s returned %s, want %s (last error: %s)", #expr,         \
                    clg_code_name(got_), clg_code_name(want), clg_last_error());                   \
  } while (0)

#define CHECK_OK(expr) CHECK_CODE(expr, CLG_OK)

#define CHECK_STR(got, want)                                                                       \
  do {                                                                                             \
    const char *g_ = (got), *w_ = (want);                                                          \
    if (g_ && w_ && strcmp(g_, w_) == 0)                                                           \
      clg_test_passed++;                                                                           \
    else                                                                                           \
      clg_test_fail(__FILE__, __LINE__, "%s:\n  got:  \"%s\"\n  want: \"%s\"", #got,               \
                    g_ ? g_ : "(null)", w_ ? w_ : "(null)");                                       \
  } while (0)

/* Checks that haystack contains needle. */
#define CHECK_CONTAINS(haystack, needle)                                                           \
  do {                                                                                             \
    const char *h_ = (haystack), *n_ = (needle);                                                   \
    if (h_ && n_ && strstr(h_, n_))                                                                \
      clg_test_passed++;                                                                           \
    else                                                                                           \
      clg_test_fail(__FILE__, __LINE__, "%s does not contain \"%s\":\n  \"%s\"", #haystack,        \
                    n_ ? n_ : "(null)", h_ ? h_ : "(null)");                                       \
  } while (0)

/* Prints "<name>: N passed, N failed" and returns the process exit status. */
int clg_test_summary(const char *name);

/* Fails the test (not skips) unless at least `min_gpus` OpenCL devices are available as
 * GPUs under the test environment. Returns true when they are. */
bool clg_test_require_gpus(int min_gpus);

/* The parts each physical device is split into by CLGRAPH_VIRTUAL_DEVICES in the forms the
 * test environments use ("N" or "NxMiB"; the native mode and the split4 variants), or 0 when
 * it is unset: GPUs that are parts of one device share its cl_device_id. */
int clg_test_parts(void);

/* Captures log messages into a buffer while active. */
void clg_test_log_capture_start(clg_log_level min_level);
/* Returns everything captured since start (one message per line) and stops capturing.
 * The string is owned by the harness and valid until the next start. */
const char *clg_test_log_capture_stop(void);

/* Deterministic random numbers (xorshift64*). */
unsigned long long clg_test_rand(void);
void clg_test_seed(unsigned long long seed);
/* Uniform in [lo, hi). */
double clg_test_uniform(double lo, double hi);

/* Element i of a host tensor of float32, float64, int32, int64 or bool, as a double (NaN for
 * other dtypes). */
double clg_test_elem(const clg_tensor *t, size_t i);

/* Fills count float32 or float64 elements with uniform values in [-1, 1), or with NaN
 * (poison: an element a kernel fails to write stays NaN). */
void clg_test_fill_random(clg_dtype dtype, void *p, size_t count);
void clg_test_fill_nan(clg_dtype dtype, void *p, size_t count);

/* --- one op against a reference (the tf_ops tests) ---------------------------------------- */

/* The element count of a shape. */
size_t clg_test_count(int rank, const int64_t *dims);
/* Sets element i of a float32, float64, int32, int64 or bool tensor (bool: v != 0). */
void clg_test_set_elem(clg_tensor *t, size_t i, double v);
/* A new host tensor of dtype from double values (clg_test_set_elem's dtypes). */
clg_tensor *clg_test_tensor(clg_dtype dt, int rank, const int64_t *dims, const double *v);
/* The values of t as doubles (malloc'd). */
double *clg_test_values(const clg_tensor *t);

/* Checks t's dtype, shape and values against want: |got - want| <= abs + rel * |want|, NaN must
 * be NaN, infinities exact, and with signed_zero a zero's sign too. The first mismatch fails
 * the test naming what, dev and the element; all of them pass it once. */
void clg_test_check_values(const clg_tensor *t, clg_dtype dtype, int rank, const int64_t *dims,
                           const double *want, double abs, double rel, bool signed_zero,
                           const char *what, const char *dev);

/* TensorFlow's output size of one spatial dim of a window op (filter k, dilation d, stride s,
 * SAME or VALID) and the padding before it. */
void clg_test_out_dim(int64_t in, int64_t k, int64_t d, int64_t s, bool same, int64_t *out,
                      int64_t *pad);

/* Runs output 0 of node, built in g, once in a new session of opt and frees the session: *out
 * is the caller's. The first failure's code (g's status included); the message is
 * clg_last_error()'s. */
clg_code clg_test_run_one(clg_graph *g, const clg_session_options *opt, clg_node *node,
                          clg_tensor **out);

typedef clg_node *(*clg_test_build_fn)(clg_graph *g, clg_node *const *in, const void *ctx);
/* Builds fn's node on CPU:0 and on a stand-in GPU (GPU:0 to GPU:3 in turn) from placeholders
 * fed `in` (at most 8), runs both in one session of opt and fetches output `index` of each into
 * out[0] (CPU:0) and out[1] (GPU). The code of the first failure, with err saying which step
 * failed and why ("" when all went well). */
clg_code clg_test_run_both(const clg_session_options *opt, int nin, clg_tensor *const *in,
                           clg_test_build_fn fn, const void *ctx, int index, clg_tensor **out,
                           char *err, size_t err_size);

/* Checks that g failed to build with INVALID_ARGUMENT and an error naming node and saying
 * text (line: the caller's, for the message); frees g. */
void clg_test_expect_error(clg_graph *g, const char *node, const char *text, int line);

#endif
