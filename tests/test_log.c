/* The log sink: a sink may log and may replace the sink from inside itself (both used to
 * deadlock on the log lock), and calls from several threads still reach it one at a time.
 * An alarm turns a regression into a failure instead of a hang. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "testutil.h"

static void on_alarm(int sig)
{
  (void)sig;
  static const char msg[] = "test_log: FAIL: a log call did not return (deadlock)\n";
  ssize_t n = write(2, msg, sizeof msg - 1);
  (void)n;
  _exit(1);
}

static char seen[4096];

static void append(const char *message)
{
  size_t len = strlen(seen);
  if (len + strlen(message) + 2 < sizeof seen) {
    strcat(seen, message);
    strcat(seen, "\n");
  }
}

/* Logs once from inside itself. */
static void logging_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  int *nested = user;
  append(message);
  if (!*nested) {
    *nested = 1;
    clg_log(CLG_LOG_WARNING, "nested %d", 7);
  }
}

static void plain_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  (void)user;
  append(message);
}

/* Replaces itself with plain_sink from inside itself. */
static void replacing_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  (void)user;
  append(message);
  clg_log_set_sink(plain_sink, NULL);
}

static void test_sink_logs(void)
{
  seen[0] = '\0';
  int nested = 0;
  clg_log_set_sink(logging_sink, &nested);
  alarm(10);
  clg_log(CLG_LOG_WARNING, "outer");
  alarm(0);
  clg_log_set_sink(NULL, NULL);
  CHECK_STR(seen, "outer\nnested 7\n");
}

static void test_sink_replaces_sink(void)
{
  seen[0] = '\0';
  clg_log_set_sink(replacing_sink, NULL);
  alarm(10);
  clg_log(CLG_LOG_WARNING, "first");
  clg_log(CLG_LOG_WARNING, "second");
  alarm(0);
  clg_log_set_sink(NULL, NULL);
  CHECK_STR(seen, "first\nsecond\n");
}

/* One call at a time across threads: the sink notices an overlap. */
static int inside, overlaps, calls;

static void counting_sink(clg_log_level level, const char *message, void *user)
{
  (void)level;
  (void)message;
  (void)user;
  if (__atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST) != 1)
    __atomic_add_fetch(&overlaps, 1, __ATOMIC_SEQ_CST);
  calls++;
  for (volatile int i = 0; i < 1000; i++) {
  }
  __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
}

static void *log_many(void *arg)
{
  (void)arg;
  for (int i = 0; i < 2000; i++)
    clg_log(CLG_LOG_WARNING, "thread message %d", i);
  return NULL;
}

static void test_sink_serialized(void)
{
  clg_log_set_sink(counting_sink, NULL);
  alarm(60);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, log_many, NULL);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  alarm(0);
  clg_log_set_sink(NULL, NULL);
  CHECK(overlaps == 0);
  CHECK(calls == 4 * 2000);
}

int main(void)
{
  signal(SIGALRM, on_alarm);
  clg_log_set_level(CLG_LOG_WARNING);
  test_sink_logs();
  test_sink_replaces_sink();
  test_sink_serialized();
  return clg_test_summary("test_log");
}
