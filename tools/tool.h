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
int clg_tool_export(int argc, char **argv);
int clg_tool_run(int argc, char **argv);
int clg_tool_inspect(int argc, char **argv);

/* Benchmarks, called by clg_tool_bench with argv[0] = "matmul" etc. */
int clg_bench_matmul(int argc, char **argv);
int clg_bench_alloc(int argc, char **argv);
int clg_bench_overhead(int argc, char **argv);
int clg_bench_variables(int argc, char **argv);
int clg_bench_conv(int argc, char **argv);
int clg_bench_train_step(int argc, char **argv);
int clg_bench_towers(int argc, char **argv);
int clg_bench_allreduce(int argc, char **argv);
int clg_bench_parallel(int argc, char **argv);

/* --- options: one parser for every command ---------------------------------------------
 *
 * A command describes its options in a table and calls clg_tool_parse once:
 *
 *   int repeats = 5;
 *   bool json = false;
 *   clg_tool_opt opts[] = {
 *       {"--json", CLG_TOOL_FLAG, .flag = &json},
 *       {"--repeats", CLG_TOOL_INT, .meta = "N", .min = 1, .max = 64, .integer = &repeats},
 *       {NULL}};
 *   clg_tool_cmd cmd = {.name = "bench matmul", .usage = usage, .opts = opts};
 *   int parsed = clg_tool_parse(&cmd, argc, argv);
 *   if (parsed != CLG_TOOL_RUN)
 *     return parsed;
 *
 * Options come in any order, between the command's arguments. A valued option takes the
 * next argument unless that is one of the command's options or help ("--trace --json"
 * forgot the file); "-5" and "-" are values. A variable keeps its value when its option is
 * absent. --help or -h prints the usage on stdout, whatever else is wrong. Mistakes are
 * reported on stderr as "clgraph <command>: <reason>", the command's usage after those
 * about the command line's shape (marked +):
 *   unknown option '--x'                          +
 *   unexpected argument 'x'                       + (more than max_args)
 *   --x needs a value                             +
 *   --x given twice ('1', then '2')               + (flags too: "--json given twice"; not REPEAT)
 *   --x given more than 16 times                  + (REPEAT)
 *   --x FILE is required (help)                   +
 *   --x '5x': want 1..64                            (INT: [+-]digits only, in [min, max])
 *   --x 'inf': want a number in 0..1                (FLOAT: decimal digits, point, exponent)
 *   --x '8,': element 2 is empty; want a comma list of up to 16 whole numbers in 1..16384 */
#define CLG_TOOL_RUN (-1)

typedef enum clg_tool_opt_kind {
  CLG_TOOL_FLAG,   /* no value: *flag becomes true */
  CLG_TOOL_INT,    /* a whole number in [min, max] into *integer */
  CLG_TOOL_FLOAT,  /* a decimal number in [min, max] into *number */
  CLG_TOOL_STRING, /* any text into *text (a pointer into argv) */
  CLG_TOOL_LIST,   /* comma-separated whole numbers in [min, max], at most max_items, into
                      list[0 .. *count); "" is the empty list */
  CLG_TOOL_REPEAT, /* any text, repeatable: each occurrence appended to texts[*count], at most
                      max_items ("--input a=x --input b=y") */
} clg_tool_opt_kind;

typedef struct clg_tool_opt {
  const char *name; /* "--repeats"; NULL ends the table */
  clg_tool_opt_kind kind;
  const char *meta;  /* the value's name in messages: "N", "FILE" */
  const char *help;  /* what it is, for the message of a required option */
  bool required;     /* its absence is an error */
  const char *alias; /* a second spelling ("-q"), or NULL */
  double min, max;   /* INT, FLOAT and LIST elements */
  int max_items;     /* LIST: room in list */
  bool *flag;
  int *integer;
  double *number;
  const char **text;
  int *list, *count;
  const char **texts; /* REPEAT: room for max_items, *count of them used */
  /* Set by clg_tool_parse: whether it was given, and its text (NULL for a flag). */
  bool given;
  const char *value;
} clg_tool_opt;

typedef struct clg_tool_cmd {
  const char *name; /* "bench matmul", for messages */
  void (*usage)(FILE *);
  clg_tool_opt *opts;  /* the table, or NULL for none */
  int max_args;        /* arguments that are not options (FILE, ...): at most this many, <= 4 */
  const char *args[4]; /* set by clg_tool_parse: those arguments in order, num_args of them */
  int num_args;
  FILE *out, *err; /* where help and mistakes go (NULL: stdout and stderr) */
} clg_tool_cmd;

/* Parses argv[1 .. argc) against cmd. Returns CLG_TOOL_RUN when the command should run,
 * else its exit status: 0 after --help, 2 after a mistake (reported as above). */
int clg_tool_parse(clg_tool_cmd *cmd, int argc, char **argv);
/* Whether the option name of opts (after clg_tool_parse) was given. */
bool clg_tool_given(const clg_tool_opt *opts, const char *name);

/* Writes text as a JSON string literal with core's escaper (bytes that are not UTF-8, as a
 * file name may hold, become \ufffd: the output is valid JSON whatever the text). */
void clg_tool_json_string(FILE *f, const char *text);

/* Median of n doubles (sorts the array). */
double clg_tool_median(double *v, int n);

#endif
