/* Placeholder until this command is written. */
#include <stdio.h>

#include "tool.h"

int clg_bench_overhead(int argc, char **argv)
{
  (void)argc;
  fprintf(stderr, "clgraph: '%s' is not built yet\n", argv[0]);
  return 2;
}
