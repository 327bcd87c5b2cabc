/* The clgraph command line: one function per command. */
#ifndef CLG_TOOL_H
#define CLG_TOOL_H

#include <stdbool.h>
#include <stdio.h>

/* Each returns the process exit status. argv[0] is the command's name. */
int clg_tool_devices(int argc, char **argv);
int clg_tool_demo(int argc, char **argv);
int clg_tool_bench(int argc, char **argv);
int clg_tool_checkpoint(int argc, char **argv);
int clg_tool_train(int argc, char **argv);
int clg_tool_eval(int argc, char **argv);
int clg_tool_trace_html(int argc, char **argv);

/* Benchmarks, called by clg_tool_bench with argv[0] = "matmul" etc. */
int clg_bench_matmul(int argc, char **argv);
int clg_bench_alloc(int argc, char **argv);
int clg_bench_overhead(int argc, char **argv);
int clg_bench_variables(int argc, char **argv);
int clg_bench_conv(int argc, char **argv);
int clg_bench_train_step(int argc, char **argv);
int clg_bench_towers(int argc, char **argv);
int clg_bench_allreduce(int argc, char **argv);

/* True if argv holds flag (e.g. "--json"). */
bool clg_tool_has_flag(int argc, char **argv, const char *flag);
/* The value after option (e.g. "--scenario S3"), or NULL. */
const char *clg_tool_option(int argc, char **argv, const char *option);

/* Reads an integer option ("--repeats 5") into *value, which keeps its default when the
 * option is absent. A value that is not a whole number in [min, max] is reported on
 * stderr as "clgraph <command>: <option> '<text>': want <min>..<max>"; returns false then. */
bool clg_tool_int_option(int argc, char **argv, const char *command, const char *option, int min,
                         int max, int *value);

/* The same for a number ("--lr 0.05"), reported as "want a number in <min>..<max>". */
bool clg_tool_double_option(int argc, char **argv, const char *command, const char *option,
                            double min, double max, double *value);

/* Checks argv[1..] against the command's options: flags take no value, valued options
 * take the next argument. An unknown option, a stray argument or a valued option at the
 * end is reported on stderr as "clgraph <command>: ...", followed by usage(stderr);
 * returns false then (the caller exits with status 2). Both lists end with NULL. */
bool clg_tool_check_options(int argc, char **argv, const char *command, const char *const *flags,
                            const char *const *valued, void (*usage)(FILE *));

/* True if argv asks for help (--help or -h). */
bool clg_tool_wants_help(int argc, char **argv);

/* Median of n doubles (sorts the array). */
double clg_tool_median(double *v, int n);

#endif
