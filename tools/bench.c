/* clgraph bench: dispatches to the benchmarks. */
#include <stdio.h>
#include <string.h>

#include "pictures.h"
#include "tool.h"

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} benches[] = {
    {"matmul", clg_bench_matmul, "GFLOP/s through a session vs direct CBLAS / CLBlast"},
    {"alloc", clg_bench_alloc, "ns per allocate+free vs malloc and clCreateBuffer"},
    {"overhead", clg_bench_overhead, "us per op on a 1,000-Add chain; graph build/place time"},
    {"variables", clg_bench_variables,
     "a 64 MiB variable read on GPU:0 vs fed; save/restore MB/s vs write/read"},
    {"conv", clg_bench_conv, "GFLOP/s of the CIFAR-10 convolutions vs im2col + GEMM by hand"},
    {"train-step", clg_bench_train_step, "one CIFAR-10 training step: ms, images/s, share of GEMM"},
    {"towers", clg_bench_towers, "N towers of batch B/N vs one tower of batch B: step time"},
    {"allreduce", clg_bench_allreduce,
     "AllReduce GB/s vs plain MPI_Allreduce, 1-256 MiB (under mpirun -np P)"},
    {"parallel", clg_bench_parallel, "us per host parallel region above the ideal; idle CPU"},
};
#define NUM_BENCHES (sizeof benches / sizeof benches[0])

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph bench <benchmark> [--json] [--repeats N] [--trace FILE]\n\n"
             "benchmarks:\n");
  for (size_t i = 0; i < NUM_BENCHES; i++)
    fprintf(f, "  %-9s %s\n", benches[i].name, benches[i].summary);
  fprintf(f,
          "\n'clgraph bench <benchmark> --help' explains a benchmark.\n"
          "--trace FILE (every benchmark but alloc and parallel, which run no graph) writes a\n"
          "Chrome trace of the last 5 runs of the benchmark's last session; 'clgraph trace-html'\n"
          "shows it.\n");
}

int clg_tool_bench(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < NUM_BENCHES; i++)
    if (strcmp(argv[1], benches[i].name) == 0) {
      /* --trace FILE, on every benchmark: the last runs of its last session. */
      char command[64];
      snprintf(command, sizeof command, "bench %s", benches[i].name);
      clg_tool_pictures_init(&clg_tool_bench_pictures, command, 5);
      int rc = benches[i].run(argc - 1, argv + 1);
      if (rc == 0 && !clg_tool_pictures_done(&clg_tool_bench_pictures))
        rc = 1;
      return rc;
    }
  fprintf(stderr, "clgraph bench: unknown %s '%s'\n\n", argv[1][0] == '-' ? "option" : "benchmark",
          argv[1]);
  usage(stderr);
  return 2;
}
