/* Status codes and the thread-local last error message. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

#define CLG_MSG_MAX 4096

static _Thread_local clg_code last_code = CLG_OK;
static _Thread_local char last_msg[CLG_MSG_MAX];

static const char *const code_names[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS"};

static const char *const code_titles[] = {
    "OK",        "Cancelled",      "Unknown",           "Invalid argument",   "Deadline exceeded",
    "Not found", "Already exists", "Permission denied", "Resource exhausted", "Failed precondition",
    "Aborted",   "Out of range",   "Unimplemented",     "Internal",           "Unavailable",
    "Data loss"};

static const char *const code_classes[] = {"OK",
                                           "CancelledError",
                                           "UnknownError",
                                           "InvalidArgumentError",
                                           "DeadlineExceededError",
                                           "NotFoundError",
                                           "AlreadyExistsError",
                                           "PermissionDeniedError",
                                           "ResourceExhaustedError",
                                           "FailedPreconditionError",
                                           "AbortedError",
                                           "OutOfRangeError",
                                           "UnimplementedError",
                                           "InternalError",
                                           "UnavailableError",
                                           "DataLossError"};

static bool code_valid(clg_code code) { return (unsigned)code <= (unsigned)CLG_DATA_LOSS; }

const char *clg_code_name(clg_code code)
{
  return code_valid(code) ? code_names[code] : "UNKNOWN_CODE";
}

const char *clg_code_title(clg_code code)
{
  return code_valid(code) ? code_titles[code] : "Unknown";
}

const char *clg_code_error_class(clg_code code)
{
  return code_valid(code) ? code_classes[code] : "UnknownError";
}

const char *clg_last_error(void) { return last_msg; }

clg_code clg_last_code(void) { return last_code; }

clg_code clg_error_v(clg_code code, const char *fmt, va_list ap)
{
  last_code = code;
  vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  return code;
}

clg_code clg_error(clg_code code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  clg_error_v(code, fmt, ap);
  va_end(ap);
  return code;
}

clg_code clg_error_prefix(const char *fmt, ...)
{
  char prefix[CLG_MSG_MAX];
  char old[CLG_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, last_msg, sizeof old);
  size_t n = strlen(prefix);
  memcpy(last_msg, prefix, n + 1);
  /* Keep as much of the old message as fits after the prefix. */
  size_t room = sizeof last_msg - 1 - n;
  size_t old_len = strnlen(old, room);
  memcpy(last_msg + n, old, old_len);
  last_msg[n + old_len] = '\0';
  return last_code;
}

void clg_error_clear(void)
{
  last_code = CLG_OK;
  last_msg[0] = '\0';
}
