/* Logging with levels and a replaceable sink. The level is read from CLGRAPH_LOG_LEVEL
 * once. log_lock guards only the sink pointer; the sink is called outside it, so a sink may
 * log or replace the sink. sink_lock keeps one message at a time in the sink across
 * threads; a thread already inside the sink re-enters without taking it again. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int sink_depth; /* > 0 while this thread is inside the sink */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static clg_log_sink log_sink;
static void *log_user;
static int log_level = CLG_LOG_INFO;

static void stderr_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  (void)user;
  fprintf(stderr, "%s\n", message);
}

static void log_read_env(void)
{
  static const char *const names[] = {"debug", "info", "warning", "error", "off"};
  const char *v = getenv("CLGRAPH_LOG_LEVEL");
  if (!v || !*v)
    return;
  for (int i = 0; i <= CLG_LOG_OFF; i++) {
    char digit[2] = {(char)('0' + i), 0};
    if (strcasecmp(v, names[i]) == 0 || strcmp(v, digit) == 0) {
      __atomic_store_n(&log_level, i, __ATOMIC_RELAXED);
      return;
    }
  }
  fprintf(stderr,
          "clgraph: CLGRAPH_LOG_LEVEL=\"%s\" is not one of debug, info, warning, error, off, "
          "0-4; using info\n",
          v);
}

void clg_log_set_sink(clg_log_sink sink, void *user)
{
  pthread_mutex_lock(&log_lock);
  log_sink = sink;
  log_user = user;
  pthread_mutex_unlock(&log_lock);
}

void clg_log_set_level(clg_log_level level)
{
  pthread_once(&log_once, log_read_env);
  if (level < CLG_LOG_DEBUG)
    level = CLG_LOG_DEBUG;
  if (level > CLG_LOG_OFF)
    level = CLG_LOG_OFF;
  __atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

clg_log_level clg_log_get_level(void)
{
  pthread_once(&log_once, log_read_env);
  return (clg_log_level)__atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

const char *clg_log_level_name(clg_log_level level)
{
  static const char *const names[] = {"DEBUG", "INFO", "WARNING", "ERROR", "OFF"};
  return (unsigned)level <= CLG_LOG_OFF ? names[level] : "OFF";
}

bool clg_log_enabled(clg_log_level level)
{
  return level < CLG_LOG_OFF && level >= clg_log_get_level();
}

void clg_log(clg_log_level level, const char *fmt, ...)
{
  if (!clg_log_enabled(level))
    return;
  char small[1024];
  char *msg = small;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof small) {
    char *big = malloc((size_t)n + 1);
    if (big) {
      va_start(ap, fmt);
      vsnprintf(big, (size_t)n + 1, fmt, ap);
      va_end(ap);
      msg = big;
    }
  }
  pthread_mutex_lock(&log_lock);
  clg_log_sink sink = log_sink ? log_sink : stderr_sink;
  void *user = log_user;
  pthread_mutex_unlock(&log_lock);
  if (sink_depth == 0)
    pthread_mutex_lock(&sink_lock);
  sink_depth++;
  sink(level, msg, user);
  sink_depth--;
  if (sink_depth == 0)
    pthread_mutex_unlock(&sink_lock);
  if (msg != small)
    free(msg);
}
