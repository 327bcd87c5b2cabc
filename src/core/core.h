/* The core module's door: status, logging, host tensors and small utilities shared by
 * every other module. Nothing here knows OpenCL, graphs or devices. */
#ifndef CLG_CORE_H
#define CLG_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clgraph/log.h"
#include "clgraph/status.h"
#include "clgraph/tensor.h"

#if defined(__GNUC__)
#define CLG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLG_PRINTF(f, a)
#endif

/* --- status ------------------------------------------------------------------------ */

/* Records code and message as this thread's last error and returns code. */
clg_code clg_error(clg_code code, const char *fmt, ...) CLG_PRINTF(2, 3);
clg_code clg_error_v(clg_code code, const char *fmt, va_list ap);
/* Prefixes this thread's last error message with "<prefix>" (formatted). Returns the
 * last code, so `return clg_error_prefix("node 'a': ");` propagates. */
clg_code clg_error_prefix(const char *fmt, ...) CLG_PRINTF(1, 2);
/* Clears this thread's last error (code OK, message ""). */
void clg_error_clear(void);

/* --- logging ----------------------------------------------------------------------- */

bool clg_log_enabled(clg_log_level level);
void clg_log(clg_log_level level, const char *fmt, ...) CLG_PRINTF(2, 3);

/* --- tensors ------------------------------------------------------------------------ */

/* As clg_tensor_new with data NULL, but the data is left uninitialised: for a producer
 * that writes every element (a kernel computing a fetched output in place). */
clg_tensor *clg_tensor_new_uninit(clg_dtype dtype, int rank, const int64_t *dims);
/* While on (from the first live session to the last), the buffers of large freed tensors are
 * kept, within bounds, for the next tensor of the same size; off frees them. */
void clg_tensor_recycle_set(bool on);
size_t clg_tensor_recycled_bytes(void);

/* Memory for tensors of at least min_bytes from elsewhere while set: the runtime's pinned
 * host memory, which GPUs copy at full speed. alloc returns NULL to decline (the tensor then
 * takes plain memory), else 64-byte aligned memory and a handle for release; release may
 * run after the provider is unset (a tensor can outlive every session), so a handle keeps
 * whatever it needs. */
typedef struct clg_host_buf clg_host_buf;
typedef struct clg_host_provider {
  size_t min_bytes;
  void *(*alloc)(void *ctx, size_t bytes, clg_host_buf **buf);
  void (*release)(clg_host_buf *buf);
  void *ctx;
} clg_host_provider;
/* p NULL: unset. */
void clg_tensor_set_host_provider(const clg_host_provider *p);
/* Whether t's memory came from the provider. */
bool clg_tensor_is_provided(const clg_tensor *t);
/* IEEE 754 binary16 (CLG_FLOAT16 elements are stored as these bit patterns). To double is
 * exact; from double rounds to nearest, ties to even, once (so float -> double -> half is
 * a correct float -> half rounding): too large becomes infinity, tiny values subnormals or
 * zero, NaN stays NaN (quiet, sign kept). */
double clg_half_to_double(uint16_t h);
uint16_t clg_half_from_double(double d);

/* The integer dtypes (bool is apart): int8..int64, uint8..uint64. */
bool clg_dtype_is_integer(clg_dtype d);
bool clg_dtype_is_unsigned(clg_dtype d);
/* Element i of an integer (or bool) array of dtype d, widened; uint64 above INT64_MAX wraps
 * in clg_int_load (read it with clg_uint_load). */
int64_t clg_int_load(clg_dtype d, const void *p, size_t i);
uint64_t clg_uint_load(clg_dtype d, const void *p, size_t i);
/* Stores v's low bits as element i (wraparound, as a C cast to the unsigned type). */
void clg_int_store(clg_dtype d, void *p, size_t i, uint64_t v);

/* --- strings ----------------------------------------------------------------------- */

/* A growable string; all functions keep buf NUL-terminated. On allocation failure the
 * string sets failed and stops growing (callers check once, at the end). */
typedef struct clg_strbuf {
  char *buf;
  size_t len, cap;
  bool failed;
} clg_strbuf;

void clg_strbuf_init(clg_strbuf *s);
void clg_strbuf_printf(clg_strbuf *s, const char *fmt, ...) CLG_PRINTF(2, 3);
void clg_strbuf_append(clg_strbuf *s, const char *text);
/* Returns the malloc'd string (or NULL if anything failed) and resets s. */
/* A file written atomically: open makes a temporary file beside path, write appends, commit
 * syncs it, renames it over path and syncs the folder; on any failure, and on abort, the
 * temporary file is removed and path is unchanged. The file is created as open(path, ...,
 * 0666) creates one: under the umask. Its temporary name is short whatever path's length
 * (".clgraph-tmp.<name hash>.<random>"), and the writer holds an OFD write lock on it
 * (fcntl F_OFD_SETLK) from open to the rename. open first removes the temporaries of path
 * that no writer holds (one killed during a save): those it can lock itself, and the
 * ".<name>.tmp.XXXXXX" of earlier versions, which took no lock, once unlocked and an hour
 * old; never a live writer's, whatever process, PID namespace or host it runs in (on a file
 * system without locks nothing is removed). Errors name the file and the call:
 * PERMISSION_DENIED, NOT_FOUND (no such folder), RESOURCE_EXHAUSTED (disk full),
 * INVALID_ARGUMENT for an empty path or a name the file system refuses, INTERNAL. commit and
 * abort free f's strings. */
typedef struct clg_atomic_file {
  int fd;
  char *tmp, *path;
} clg_atomic_file;
clg_code clg_atomic_file_open(clg_atomic_file *f, const char *path);
clg_code clg_atomic_file_write(clg_atomic_file *f, const void *data, size_t size);
clg_code clg_atomic_file_commit(clg_atomic_file *f);
void clg_atomic_file_abort(clg_atomic_file *f);
/* open, write, commit. */
clg_code clg_file_write_atomic(const char *path, const void *data, size_t size);
/* "<folder>/.clgraph-tmp.<name hash>.": what every temporary name of path begins with,
 * before "<random>" (malloc'd; NULL when out of memory). */
char *clg_atomic_file_temp_prefix(const char *path);

/* Opens path for reading, a regular file only: the open does not wait on a FIFO (O_NONBLOCK,
 * cleared once fstat has shown a regular file), so a FIFO, a directory or a device is refused
 * at once, INVALID_ARGUMENT "PATH: not a regular file (a FIFO)". Other errors name the path:
 * NOT_FOUND, PERMISSION_DENIED, INVALID_ARGUMENT. *fd: the descriptor (close-on-exec), -1 on
 * error. Every reader of a user's file opens it through this. */
clg_code clg_file_open_read(const char *path, int *fd);

/* Appends text (NULL: "") as a JSON string literal: quotes, backslashes and control
 * characters escaped (\n, \t, \r, else \u00XX), and each byte that is not part of
 * well-formed UTF-8 written \ufffd (U+FFFD, the replacement character), so that any C string
 * gives valid JSON. */
void clg_strbuf_json_string(clg_strbuf *s, const char *text);
char *clg_strbuf_take(clg_strbuf *s);
void clg_strbuf_free(clg_strbuf *s);

/* strdup that records RESOURCE_EXHAUSTED on failure. */
char *clg_strdup(const char *s);
/* v with as many digits as it takes to read back exactly ("%.17g" at most, fewer when they
 * suffice: 0.4, but 1.0000000000000002), so a message shows why a value was refused.
 * Returns buf. */
#define CLG_DOUBLE_TEXT 32
char *clg_double_text(double v, char buf[CLG_DOUBLE_TEXT]);

/* Aligned allocation (alignment a power of two >= sizeof(void*)); free with clg_aligned_free. */
void *clg_aligned_alloc(size_t alignment, size_t size);
void clg_aligned_free(void *p);

/* The environment variable `name` as a whole number of MiB, in bytes: 1 and *bytes set when
 * it is one, 0 when it is set to anything else (the caller warns with *raw), -1 when unset
 * or empty. */
int clg_env_mib(const char *name, uint64_t *bytes, const char **raw);

/* Monotonic clock in nanoseconds. */
uint64_t clg_now_ns(void);

/* --- device-name specifications (tf-semantics.md section 1) -------------------------- */

#define CLG_DEVNAME_FIELD 64

/* A parsed, possibly partial, device name. A field is meaningful only when its has_ flag
 * is set; "*" leaves it unset. */
typedef struct clg_devname {
  bool has_job, has_replica, has_task, has_type, has_id;
  char job[CLG_DEVNAME_FIELD];
  int replica, task;
  char type[CLG_DEVNAME_FIELD];
  int id;
} clg_devname;

/* TensorFlow's ParseFullName (any order, legacy /cpu:N /gpu:N, wildcards, "" and "/"
 * valid). On failure: INVALID_ARGUMENT "Malformed device specification '<s>': <what is
 * wrong, naming the part>". */
clg_code clg_devname_parse(const char *text, clg_devname *out);
/* ParseFullName, then ParseLocalName ("GPU:0", "CPU:1"). */
clg_code clg_devname_parse_full_or_local(const char *text, clg_devname *out);
/* As tf.device() in Python does: parse, then upper-case the types "cpu" and "gpu". */
clg_code clg_devname_parse_scope(const char *text, clg_devname *out);

/* ParsedNameToString: "/job:J/replica:R/task:T/device:TYPE:ID" with the parts that are
 * set ("*" for an unset id after a type). Always NUL-terminates buf. Returns buf. */
char *clg_devname_format(const clg_devname *n, char *buf, size_t size);

/* MergeDevNames: fills target's unset fields from other; conflicts are INVALID_ARGUMENT
 * ("Cannot merge devices with incompatible types: '<a>' and '<b>'") unless
 * allow_soft_placement, which clears the conflicting type/id instead (jobs, replicas and
 * tasks always conflict). */
clg_code clg_devname_merge(clg_devname *target, const clg_devname *other,
                           bool allow_soft_placement);
/* MergeOverrideDevNames: every field set in other wins. */
void clg_devname_merge_override(clg_devname *target, const clg_devname *other);
/* MergeUnsetDevNames: copies only fields unset in target. */
void clg_devname_merge_unset(clg_devname *target, const clg_devname *other);

/* IsSpecification: every field set in less_specific is set and equal in more_specific. */
bool clg_devname_is_specification(const clg_devname *less_specific,
                                  const clg_devname *more_specific);
/* IsCompleteSpecification: every field set in pattern equals the one in the (complete)
 * name. */
bool clg_devname_matches(const clg_devname *pattern, const clg_devname *name);
/* AreCompatibleDevNames: fields set in both are equal. */
bool clg_devname_compatible(const clg_devname *a, const clg_devname *b);
/* True when nothing is set. */
bool clg_devname_is_empty(const clg_devname *n);

/* --- device kinds -------------------------------------------------------------------- */

/* The kinds of device implementation; each has a device table and its own kernels. */
typedef enum clg_device_kind { CLG_KIND_HOST, CLG_KIND_OPENCL, CLG_KIND_COUNT } clg_device_kind;

#endif
