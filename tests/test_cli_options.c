/* Every clgraph command refuses an unknown option and a missing option value: the reason
 * and the command's usage on stderr, nothing on stdout, exit status 2, and nothing run
 * (`clgraph bench matmul --no-such-option` used to run the benchmark and exit 0). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char bin[2048], err_path[2048];

static char *slurp(FILE *f)
{
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (len + 1 == cap) {
      char *grown = realloc(buf, cap * 2);
      if (!grown)
        break;
      buf = grown;
      cap *= 2;
    }
  }
  if (buf)
    buf[len] = '\0';
  return buf;
}

/* Runs `clgraph <args>` (at most 60 s); returns the exit status, stdout and stderr. */
static int run_tool(const char *args, char **out, char **err)
{
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "timeout 60 '%s' %s 2>'%s'", bin, args, err_path);
  FILE *p = popen(cmd, "r");
  *out = p ? slurp(p) : NULL;
  int status = p ? pclose(p) : -1;
  FILE *e = fopen(err_path, "r");
  *err = e ? slurp(e) : NULL;
  if (e)
    fclose(e);
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* args is refused with status 2, stderr holds reason and usage_head, stdout is empty. */
static void check_refused(const char *args, const char *reason, const char *usage_head)
{
  char *out = NULL, *err = NULL;
  int rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == 2, "clgraph %s: exit status %d, want 2\nstderr: %s", args, rc,
            err ? err : "(none)");
  CHECK_MSG(out && out[0] == '\0', "clgraph %s: stdout is not empty:\n%s", args,
            out ? out : "(none)");
  CHECK_MSG(err && strstr(err, reason), "clgraph %s: stderr lacks \"%s\":\n%s", args, reason,
            err ? err : "(none)");
  CHECK_MSG(err && strstr(err, usage_head), "clgraph %s: stderr lacks the usage \"%s\":\n%s", args,
            usage_head, err ? err : "(none)");
  free(out);
  free(err);
}

int main(void)
{
  const char *dir = getenv("CLG_BINARY_DIR");
  CHECK_MSG(dir != NULL, "CLG_BINARY_DIR is not set (run through ctest)");
  if (!dir)
    return clg_test_summary("test_cli_options");
  snprintf(bin, sizeof bin, "%s/clgraph", dir);
  snprintf(err_path, sizeof err_path, "%s/test_cli_options.%ld.stderr", dir, (long)getpid());
  CHECK_MSG(access(bin, X_OK) == 0, "%s is not built (build the clgraph_tool target)", bin);

  /* The top level. */
  check_refused("--no-such-option", "clgraph: unknown option '--no-such-option'",
                "usage: clgraph <command>");
  check_refused("", "usage: clgraph <command>", "commands:");
  check_refused("frobnicate", "clgraph: unknown command 'frobnicate'", "usage: clgraph <command>");

  /* devices and demo. */
  check_refused("devices --no-such-option", "clgraph devices: unknown option '--no-such-option'",
                "usage: clgraph devices");
  check_refused("devices --types", "clgraph devices: --types needs a value",
                "usage: clgraph devices");
  check_refused("devices --visible", "clgraph devices: --visible needs a value",
                "usage: clgraph devices");
  check_refused("demo --no-such-option", "clgraph demo: unknown option '--no-such-option'",
                "usage: clgraph demo");
  check_refused("demo --scenario", "clgraph demo: --scenario needs a value", "usage: clgraph demo");

  /* bench and each benchmark. */
  check_refused("bench", "usage: clgraph bench <benchmark>", "benchmarks:");
  check_refused("bench --no-such-option", "clgraph bench: unknown option '--no-such-option'",
                "usage: clgraph bench <benchmark>");
  check_refused("bench nosuch", "clgraph bench: unknown benchmark 'nosuch'",
                "usage: clgraph bench <benchmark>");
  const char *benches[] = {"matmul", "alloc", "overhead", "variables"};
  for (int i = 0; i < 4; i++) {
    char args[256], reason[256], usage[256];
    snprintf(usage, sizeof usage, "usage: clgraph bench %s", benches[i]);
    snprintf(args, sizeof args, "bench %s --no-such-option", benches[i]);
    snprintf(reason, sizeof reason, "clgraph bench %s: unknown option '--no-such-option'",
             benches[i]);
    check_refused(args, reason, usage);
    snprintf(args, sizeof args, "bench %s --json --repeats", benches[i]);
    snprintf(reason, sizeof reason, "clgraph bench %s: --repeats needs a value", benches[i]);
    check_refused(args, reason, usage);
    snprintf(args, sizeof args, "bench %s stray", benches[i]);
    snprintf(reason, sizeof reason, "clgraph bench %s: unexpected argument 'stray'", benches[i]);
    check_refused(args, reason, usage);
  }
  check_refused("bench matmul --sizes", "clgraph bench matmul: --sizes needs a value",
                "usage: clgraph bench matmul");
  check_refused("bench matmul --f64-sizes", "clgraph bench matmul: --f64-sizes needs a value",
                "usage: clgraph bench matmul");
  check_refused("bench matmul --f16-sizes", "clgraph bench matmul: --f16-sizes needs a value",
                "usage: clgraph bench matmul");
  check_refused("bench matmul --device", "clgraph bench matmul: --device needs a value",
                "usage: clgraph bench matmul");

  /* checkpoint. */
  check_refused("checkpoint", "clgraph checkpoint: missing subcommand",
                "usage: clgraph checkpoint ls FILE");
  check_refused("checkpoint rm x", "clgraph checkpoint: unknown subcommand 'rm'",
                "usage: clgraph checkpoint ls FILE");
  check_refused("checkpoint ls --no-such-option x",
                "clgraph checkpoint: unknown option '--no-such-option'",
                "usage: clgraph checkpoint ls FILE");
  check_refused("checkpoint ls a b", "clgraph checkpoint: unexpected argument 'b'",
                "usage: clgraph checkpoint ls FILE");
  check_refused("checkpoint ls --json", "clgraph checkpoint: ls needs a FILE",
                "usage: clgraph checkpoint ls FILE");

  /* Help still works and goes to stdout. */
  const char *helps[] = {"--help",
                         "devices --help",
                         "demo --help",
                         "bench --help",
                         "bench matmul --help",
                         "bench alloc -h",
                         "bench overhead --help",
                         "bench variables --help",
                         "checkpoint --help"};
  for (int i = 0; i < 9; i++) {
    char *out = NULL, *err = NULL;
    CHECK_MSG(run_tool(helps[i], &out, &err) == 0, "clgraph %s did not exit 0", helps[i]);
    CHECK_MSG(out && strstr(out, "usage: clgraph"), "clgraph %s: no usage on stdout", helps[i]);
    free(out);
    free(err);
  }
  unlink(err_path);
  return clg_test_summary("test_cli_options");
}
