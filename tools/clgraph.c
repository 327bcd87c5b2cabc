/* clgraph: the command line. Dispatches to one function per command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host.h"
#include "clgraph.h"
#include "core/core.h"
#include "tool.h"

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} commands[] = {
    {"devices", clg_tool_devices, "list the devices clgraph finds (--json)"},
    {"demo", clg_tool_demo, "walk the guide's scenarios S1-S7 on this machine's devices"},
    {"bench", clg_tool_bench, "benchmarks: matmul, alloc, overhead, variables (--json)"},
    {"checkpoint", clg_tool_checkpoint, "ls FILE: the tensors of a safetensors file"},
    {"train", clg_tool_train, "train the CIFAR-10 tutorial's CNN (cifar10, digits, synthetic)"},
    {"eval", clg_tool_eval, "precision @ 1 of a checkpoint of clgraph train on the test split"},
    {"trace-html", clg_tool_trace_html, "TRACE.json OUT.html: a trace as a page to open offline"},
    {"run", clg_tool_run, "MODEL: run a TensorFlow graph (.pb, tfjs model.json) on .npy inputs"},
    {"inspect", clg_tool_inspect, "MODEL: what a model holds, and the op types clgraph lacks"},
    {"export", clg_tool_export, "a checkpoint of clgraph train as a frozen TensorFlow GraphDef"},
};

static void usage(FILE *f)
{
  fprintf(f,
          "usage: clgraph <command> [options]\n\n"
          "clgraph %s runs dataflow graphs on OpenCL devices with TensorFlow's device model.\n\n"
          "commands:\n",
          clg_version());
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(
      f, "\n'clgraph <command> --help' explains a command.\n"
         "\nenvironment:\n"
         "  CLGRAPH_DEVICE_TYPES     OpenCL device types used as GPUs: gpu,accelerator,cpu or all\n"
         "                           (default gpu,accelerator; cpu makes PoCL devices stand in)\n"
         "  CLGRAPH_VISIBLE_DEVICES  visible GPUs and their order, e.g. 2,0\n"
         "  CLGRAPH_LOG_LEVEL        debug, info, warning, error or off (default info)\n"
         "  CLGRAPH_FORCE_GPU_ALLOW_GROWTH  true or false: overrides allow_growth\n");
}

void clg_tool_json_string(FILE *f, const char *text)
{
  clg_strbuf b;
  clg_strbuf_init(&b);
  clg_strbuf_json_string(&b, text);
  fputs(b.buf && !b.failed ? b.buf : "\"\"", f);
  clg_strbuf_free(&b);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double clg_tool_median(double *v, int n)
{
  if (n <= 0)
    return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("clgraph %s\n", clg_version());
    return 0;
  }
  /* No BLAS of anyone else's runs in this process: OpenBLAS's start-up threads can go now
   * rather than spin beside the first ops. */
  clg_host_blas_stop_threads();
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "clgraph: unknown %s '%s'\n\n", argv[1][0] == '-' ? "option" : "command",
          argv[1]);
  usage(stderr);
  return 2;
}
