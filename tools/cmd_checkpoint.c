/* clgraph checkpoint: inspects safetensors files, as a user checks a file before restoring
 * it. `ls FILE` lists every tensor (name, dtype, shape, bytes) of any safetensors file. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clgraph.h"
#include "tool.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph checkpoint ls FILE [--json]\n\n"
             "Lists the tensors of a safetensors file (written by clgraph or any other writer):\n"
             "name, dtype, shape and bytes, in the order of their data. The file's header and\n"
             "layout are checked as a restore checks them. --json prints one object instead;\n"
             "bytes of the file name or of a tensor name that are not UTF-8 show as U+FFFD.\n\n"
             "exit status: 0 on success, 1 when the file cannot be read or is malformed (the\n"
             "reason on stderr), 2 on a usage error.\n");
}

static void shape_text(const clg_checkpoint_tensor *t, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < t->rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? ",%" PRId64 : "%" PRId64, t->dims[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
}

/* A name or a path, which may hold any bytes, as a JSON string. */
static void json_string(const char *s) { clg_tool_json_string(stdout, s); }

static int list(const char *path, bool json)
{
  clg_checkpoint *c = NULL;
  if (clg_checkpoint_open(path, &c) != CLG_OK) {
    fprintf(stderr, "clgraph checkpoint: %s\n", clg_last_error());
    return 1;
  }
  int n = clg_checkpoint_num_tensors(c);
  uint64_t total = 0;
  if (json)
    printf("{\"file\": ");
  if (json)
    json_string(path);
  if (json)
    printf(", \"tensors\": [");
  else
    printf("%-40s %-8s %-20s %14s\n", "name", "dtype", "shape", "bytes");
  for (int i = 0; i < n; i++) {
    clg_checkpoint_tensor t;
    char shape[256];
    clg_checkpoint_tensor_info(c, i, &t);
    shape_text(&t, shape, sizeof shape);
    total += t.bytes;
    if (json) {
      printf("%s{\"name\": ", i ? ", " : "");
      json_string(t.name);
      printf(", \"dtype\": \"%s\", \"shape\": %s, \"bytes\": %" PRIu64 "}", t.dtype, shape,
             t.bytes);
    } else {
      printf("%-40s %-8s %-20s %14" PRIu64 "\n", t.name, t.dtype, shape, t.bytes);
    }
  }
  if (json)
    printf("], \"total_bytes\": %" PRIu64 "}\n", total);
  else
    printf("%d tensor%s, %" PRIu64 " bytes\n", n, n == 1 ? "" : "s", total);
  clg_checkpoint_close(c);
  return 0;
}

int clg_tool_checkpoint(int argc, char **argv)
{
  bool json = false;
  clg_tool_opt opts[] = {{"--json", CLG_TOOL_FLAG, .flag = &json}, {NULL}};
  /* "ls" and FILE; options anywhere after the command. */
  clg_tool_cmd cmd = {.name = "checkpoint", .usage = usage, .opts = opts, .max_args = 2};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (cmd.num_args < 1 || strcmp(cmd.args[0], "ls") != 0) {
    if (cmd.num_args < 1)
      fprintf(stderr, "clgraph checkpoint: missing subcommand\n\n");
    else
      fprintf(stderr, "clgraph checkpoint: unknown subcommand '%s'\n\n", cmd.args[0]);
    usage(stderr);
    return 2;
  }
  if (cmd.num_args < 2) {
    fprintf(stderr, "clgraph checkpoint: ls needs a FILE\n\n");
    usage(stderr);
    return 2;
  }
  return list(cmd.args[1], json);
}
