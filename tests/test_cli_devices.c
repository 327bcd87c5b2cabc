/* `clgraph devices` end to end: runs the built tool (CLG_BINARY_DIR/clgraph) under the default
 * test environment (four PoCL devices as GPUs) and checks its table, its JSON (parsed by a
 * strict validator below), its errors and exit codes. */
#include <ctype.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* --- a strict JSON validator (RFC 8259 grammar) ------------------------------------ */

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  return p;
}

static const char *json_str(const char *p)
{
  if (*p++ != '"')
    return NULL;
  while (*p != '"') {
    unsigned char c = (unsigned char)*p;
    if (c == '\0' || c < 0x20)
      return NULL;
    if (c == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!isxdigit((unsigned char)p[i]))
            return NULL;
        p += 5;
      } else if (*p && strchr("\"\\/bfnrt", *p)) {
        p++;
      } else {
        return NULL;
      }
    } else {
      p++;
    }
  }
  return p + 1;
}

static const char *json_num(const char *p)
{
  if (*p == '-')
    p++;
  if (*p == '0')
    p++;
  else if (*p >= '1' && *p <= '9')
    while (isdigit((unsigned char)*p))
      p++;
  else
    return NULL;
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p))
      return NULL;
    while (isdigit((unsigned char)*p))
      p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    if (!isdigit((unsigned char)*p))
      return NULL;
    while (isdigit((unsigned char)*p))
      p++;
  }
  return p;
}

static const char *json_value(const char *p, int depth)
{
  if (depth > 64)
    return NULL;
  p = json_ws(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    bool object = *p == '{';
    p = json_ws(p + 1);
    if (*p == close)
      return p + 1;
    for (;;) {
      if (object) {
        p = json_str(json_ws(p));
        if (!p)
          return NULL;
        p = json_ws(p);
        if (*p++ != ':')
          return NULL;
      }
      p = json_value(p, depth + 1);
      if (!p)
        return NULL;
      p = json_ws(p);
      if (*p == close)
        return p + 1;
      if (*p++ != ',')
        return NULL;
    }
  }
  if (*p == '"')
    return json_str(p);
  if (strncmp(p, "true", 4) == 0)
    return p + 4;
  if (strncmp(p, "false", 5) == 0)
    return p + 5;
  if (strncmp(p, "null", 4) == 0)
    return p + 4;
  return json_num(p);
}

static bool json_valid(const char *text)
{
  const char *end = json_value(text, 0);
  return end && *json_ws(end) == '\0';
}

/* --- running the tool ------------------------------------------------------------------ */

static char bin[4096];

/* Runs `<env> clgraph <args>` through the shell; returns the exit status and the output
 * (stdout, or stderr when want_stderr) in a malloc'd string. */
static int run_tool(const char *env, const char *args, bool want_stderr, char **out)
{
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s '%s' %s %s", env, bin, args,
           want_stderr ? "2>&1 >/dev/null" : "2>/dev/null");
  FILE *p = popen(cmd, "r");
  size_t len = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  if (!p || !buf) {
    if (p)
      pclose(p);
    free(buf);
    *out = NULL;
    return -1;
  }
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 == cap) {
      char *grown = realloc(buf, cap * 2);
      if (!grown)
        break;
      buf = grown;
      cap *= 2;
    }
  }
  buf[len] = '\0';
  int status = pclose(p);
  *out = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char expected_types[] = "expected a comma list of gpu, accelerator, cpu, or all";

int main(void)
{
  const char *dir = getenv("CLG_BINARY_DIR");
  CHECK_MSG(dir != NULL, "CLG_BINARY_DIR is not set (run through ctest)");
  if (!dir)
    return clg_test_summary("test_cli_devices");
  snprintf(bin, sizeof bin, "%s/clgraph", dir);
  CHECK_MSG(strchr(bin, '\'') == NULL, "the build path may not hold a quote: %s", bin);
  CHECK_MSG(access(bin, X_OK) == 0, "%s is not built (build the clgraph_tool target)", bin);

  char *out = NULL, want[512];

  /* JSON: valid, and the five devices of the default environment, in order. */
  CHECK(run_tool("", "devices --json", false, &out) == 0);
  CHECK_MSG(out && json_valid(out), "not valid JSON:\n%s", out ? out : "(none)");
  const char *names[] = {"/device:CPU:0", "/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
                         "/device:GPU:3"};
  const char *at = out ? out : "";
  for (int i = 0; i < 5; i++) {
    snprintf(want, sizeof want, "\"name\": \"%s\"", names[i]);
    const char *hit = strstr(at, want);
    CHECK_MSG(hit != NULL, "%s missing or out of order in:\n%s", names[i], out ? out : "");
    if (hit)
      at = hit;
  }
  CHECK(out && !strstr(out, "/device:GPU:4"));
  CHECK_CONTAINS(out, "\"device_mapping\": \"Device mapping:\\n/job:localhost/replica:0/task:0/"
                      "device:GPU:0 -> device: 0, name: ");
  CHECK_CONTAINS(out, "\"cl_type\": \"host\"");
  /* Each GPU says where its CLBlast tuning would be (the cache folder, keyed by name and
   * driver); the host has none. */
  CHECK_CONTAINS(out, "/clgraph/clblast/");
  const char *t = out, *prev = NULL;
  int files = 0;
  while (t && (t = strstr(t, "\"clblast_tuning_file\": \"")) != NULL)
    files++, prev = t++;
  CHECK_MSG(files == 4, "%d clblast_tuning_file entries, want one per GPU", files);
  CHECK(prev && strstr(prev, "--") && strstr(prev, ".json\""));
  free(out);

  /* The table, with the mapping block at the end. */
  CHECK(run_tool("", "devices", false, &out) == 0);
  CHECK(out && strncmp(out, "NAME ", 5) == 0);
  CHECK_CONTAINS(out, "OPENCL DEVICE");
  CHECK_CONTAINS(out, "PCI BUS ID");
  CHECK_CONTAINS(out, "\n/device:CPU:0 ");
  CHECK_CONTAINS(out, "\n/device:GPU:3 ");
  CHECK_CONTAINS(out, "\n\nDevice mapping:\n/job:localhost/replica:0/task:0/device:GPU:0 -> "
                      "device: 0, name: ");
  CHECK_CONTAINS(out, "/job:localhost/replica:0/task:0/device:GPU:3 -> device: 3, name: ");
  free(out);

  /* --visible reorders; the environment variable does too. */
  CHECK(run_tool("", "devices --json --visible 3,1", false, &out) == 0);
  CHECK(out && json_valid(out));
  CHECK_CONTAINS(out, "\"name\": \"/device:GPU:0\"");
  CHECK_CONTAINS(out, "\"name\": \"/device:GPU:1\"");
  CHECK(out && !strstr(out, "/device:GPU:2\""));
  CHECK_CONTAINS(out, "device:GPU:0 -> device: 3, name: ");
  CHECK_CONTAINS(out, "device:GPU:1 -> device: 1, name: ");
  free(out);
  CHECK(run_tool("CLGRAPH_VISIBLE_DEVICES=2", "devices", false, &out) == 0);
  CHECK_CONTAINS(out, "device:GPU:0 -> device: 2, name: ");
  CHECK(out && !strstr(out, "/device:GPU:1"));
  free(out);

  /* --types gpu: CPU OpenCL devices no longer stand in. */
  CHECK(run_tool("", "devices --json --types gpu", false, &out) == 0);
  CHECK(out && json_valid(out));
  CHECK(out && !strstr(out, "\"cl_type\": \"CPU\""));
  free(out);

  /* Errors: message on stderr, exit 1. */
  CHECK(run_tool("CLGRAPH_DEVICE_TYPES='gpu,GPU '", "devices", true, &out) == 1);
  snprintf(want, sizeof want,
           "clgraph devices: CLGRAPH_DEVICE_TYPES: unknown device type 'GPU ' in 'gpu,GPU '; %s\n",
           expected_types);
  CHECK_STR(out, want);
  free(out);
  CHECK(run_tool("CLGRAPH_DEVICE_TYPES='gpu,GPU '", "devices", false, &out) == 1);
  CHECK_STR(out, ""); /* nothing on stdout */
  free(out);
  CHECK(run_tool("", "devices --types tpu", true, &out) == 1);
  snprintf(want, sizeof want, "clgraph devices: --types: unknown device type 'tpu' in 'tpu'; %s\n",
           expected_types);
  CHECK_STR(out, want);
  free(out);
  CHECK(run_tool("", "devices --visible 0,0", true, &out) == 1);
  CHECK_STR(out, "clgraph devices: visible_device_list contained a duplicate entry: 0,0\n");
  free(out);

  /* Usage. */
  CHECK(run_tool("", "devices --help", false, &out) == 0);
  CHECK_CONTAINS(out, "usage: clgraph devices");
  CHECK_CONTAINS(out, "CLGRAPH_DEVICE_TYPES");
  CHECK_CONTAINS(out, "CLGRAPH_VISIBLE_DEVICES");
  CHECK_CONTAINS(out, "--json");
  free(out);
  CHECK(run_tool("", "devices --bogus", true, &out) == 2);
  CHECK_CONTAINS(out, "clgraph devices: unknown option '--bogus'");
  free(out);
  CHECK(run_tool("", "devices --types", true, &out) == 2);
  CHECK_CONTAINS(out, "--types needs a value");
  free(out);

  /* The validator itself rejects what it should. */
  CHECK(json_valid("{\"a\": [1, -2.5e3, true, null, \"x\\n\\u00e9\"]}"));
  CHECK(!json_valid("{\"a\": \"tab\there\"}"));
  CHECK(!json_valid("{\"a\": 1,}"));
  CHECK(!json_valid("{\"a\": \"\\x\"}"));
  CHECK(!json_valid("[01]"));
  return clg_test_summary("test_cli_devices");
}
