/* clgraph bench: dispatches to the benchmarks. */
#include <stdio.h>
#include <string.h>

#include "tool.h"

int clg_tool_bench(int argc, char **argv)
{
  static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
  } benches[] = {
      {"matmul", clg_bench_matmul, "GFLOP/s through a session vs direct CBLAS / CLBlast"},
      {"alloc", clg_bench_alloc, "ns per allocate+free vs malloc and clCreateBuffer"},
      {"overhead", clg_bench_overhead, "us per op on a 1,000-Add chain; graph build/place time"},
  };
  size_t n = sizeof benches / sizeof benches[0];
  if (argc < 2 || strcmp(argv[1], "--help") == 0) {
    printf("usage: clgraph bench <benchmark> [--json] [--repeats N]\n\nbenchmarks:\n");
    for (size_t i = 0; i < n; i++)
      printf("  %-9s %s\n", benches[i].name, benches[i].summary);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < n; i++)
    if (strcmp(argv[1], benches[i].name) == 0)
      return benches[i].run(argc - 1, argv + 1);
  fprintf(stderr, "clgraph bench: unknown benchmark '%s' (matmul, alloc, overhead)\n", argv[1]);
  return 2;
}
