/* clgraph: status codes and error messages.
 *
 * Every fallible call returns a clg_code (TensorFlow's canonical codes). On failure the
 * call also leaves a human-readable message, readable with clg_last_error() on the same
 * thread until the next failing call on that thread.
 *
 *   if (clg_session_run(...) != CLG_OK)
 *     fprintf(stderr, "%s: %s\n", clg_code_name(code), clg_last_error());
 */
#ifndef CLGRAPH_STATUS_H
#define CLGRAPH_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum clg_code {
  CLG_OK = 0,
  CLG_CANCELLED = 1,
  CLG_UNKNOWN = 2,
  CLG_INVALID_ARGUMENT = 3,
  CLG_DEADLINE_EXCEEDED = 4,
  CLG_NOT_FOUND = 5,
  CLG_ALREADY_EXISTS = 6,
  CLG_PERMISSION_DENIED = 7,
  CLG_RESOURCE_EXHAUSTED = 8,
  CLG_FAILED_PRECONDITION = 9,
  CLG_ABORTED = 10,
  CLG_OUT_OF_RANGE = 11,
  CLG_UNIMPLEMENTED = 12,
  CLG_INTERNAL = 13,
  CLG_UNAVAILABLE = 14,
  CLG_DATA_LOSS = 15
} clg_code;

/* "INVALID_ARGUMENT" for CLG_INVALID_ARGUMENT; "UNKNOWN_CODE" for values out of range. */
const char *clg_code_name(clg_code code);

/* TensorFlow's Python exception-style title: "InvalidArgumentError" for
 * CLG_INVALID_ARGUMENT, "ResourceExhaustedError", ...; "UnknownError" out of range. */
const char *clg_code_error_class(clg_code code);

/* TensorFlow's status prefix: "Invalid argument" for CLG_INVALID_ARGUMENT, "Resource
 * exhausted", ... (as in "InvalidArgumentError: Invalid argument: ..."). */
const char *clg_code_title(clg_code code);

/* The message of the most recent failure on this thread ("" if none). The pointer stays
 * valid until the next clgraph call on this thread. */
const char *clg_last_error(void);

/* The code of the most recent failure on this thread (CLG_OK if none). */
clg_code clg_last_code(void);

#ifdef __cplusplus
}
#endif
#endif
