/* clgraph: logging.
 *
 * Everything clgraph reports (placement logs, warnings, allocator summaries) goes through
 * one sink. The default sink writes "<message>\n" to stderr. The minimum level comes from
 * the environment variable CLGRAPH_LOG_LEVEL (debug, info, warning, error, off, or 0-4)
 * at first use, and can be changed with clg_log_set_level().
 *
 * log_device_placement output is emitted at CLG_LOG_INFO; placement reasons at
 * CLG_LOG_DEBUG.
 */
#ifndef CLGRAPH_LOG_H
#define CLGRAPH_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum clg_log_level {
  CLG_LOG_DEBUG = 0,
  CLG_LOG_INFO = 1,
  CLG_LOG_WARNING = 2,
  CLG_LOG_ERROR = 3,
  CLG_LOG_OFF = 4
} clg_log_level;

/* A sink receives one complete message (no trailing newline; it may contain newlines).
 * It may be called from any thread that calls into clgraph, one call at a time. It may
 * itself log (the message reaches the sink, nested in the current call) or call
 * clg_log_set_sink (taking effect from the next message). */
typedef void (*clg_log_sink)(clg_log_level level, const char *message, void *user);

/* Replaces the sink; NULL restores the default stderr sink. */
void clg_log_set_sink(clg_log_sink sink, void *user);

/* Sets the minimum level that reaches the sink. */
void clg_log_set_level(clg_log_level level);

/* The current minimum level (after CLGRAPH_LOG_LEVEL was read). */
clg_log_level clg_log_get_level(void);

/* "DEBUG", "INFO", "WARNING", "ERROR", "OFF". */
const char *clg_log_level_name(clg_log_level level);

#ifdef __cplusplus
}
#endif
#endif
