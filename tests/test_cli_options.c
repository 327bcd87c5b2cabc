/* Every clgraph command refuses an unknown option and a missing option value: the reason
 * and the command's usage on stderr, nothing on stdout, exit status 2, and nothing run
 * (`clgraph bench matmul --no-such-option` used to run the benchmark and exit 0). The one
 * option parser of the commands (tools/options.c, compiled in) is tested on its own, one
 * case per kind of mistake; then each command through the binary. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "tool.h"

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

/* --- the parser on its own -------------------------------------------------------------- */

static void parse_usage(FILE *f) { fputs("usage: clgraph t [options] [A [B]]\n", f); }

static char *read_back(FILE *f)
{
  rewind(f);
  char *text = slurp(f);
  fclose(f);
  return text;
}

typedef struct parse_case {
  const char *argv[12]; /* after the command's name; NULL ends it */
  int rc;               /* CLG_TOOL_RUN, 0 (help) or 2 */
  const char *err;      /* the whole first line on stderr ("" for an empty stderr) */
  bool usage;           /* the usage follows the reason (or, for help, is on stdout) */
  /* With CLG_TOOL_RUN: the variables after it (they start as 7, 0.5, "dflt", -1, false). */
  int i;
  double f;
  const char *s;
  const char *list; /* "1 2 3" */
  bool flag;
  const char *args; /* "a b" */
} parse_case;

#define RUN CLG_TOOL_RUN
#define DEFAULTS 7, 0.5, "dflt", "-", false, ""
static const parse_case parse_cases[] = {
    /* What is taken. */
    {{NULL}, RUN, "", false, DEFAULTS},
    {{"--flag", "--int", "42", "--float", "0.25", "--str", "x", "--list", "1,2,3", NULL},
     RUN,
     "",
     false,
     42,
     0.25,
     "x",
     "1 2 3",
     true,
     ""},
    {{"-f", NULL}, RUN, "", false, 7, 0.5, "dflt", "-", true, ""},
    {{"--int", "-5", NULL}, RUN, "", false, -5, 0.5, "dflt", "-", false, ""},
    {{"--int", "+100", NULL}, RUN, "", false, 100, 0.5, "dflt", "-", false, ""},
    {{"--float", "1e-1", NULL}, RUN, "", false, 7, 0.1, "dflt", "-", false, ""},
    {{"--float", ".5", NULL}, RUN, "", false, 7, 0.5, "dflt", "-", false, ""},
    {{"--float", "1.", NULL}, RUN, "", false, 7, 1.0, "dflt", "-", false, ""},
    {{"--float", "-0", NULL}, RUN, "", false, 7, 0.0, "dflt", "-", false, ""},
    {{"--list", "", NULL}, RUN, "", false, 7, 0.5, "dflt", "", false, ""},
    {{"--list", "9", NULL}, RUN, "", false, 7, 0.5, "dflt", "9", false, ""},
    {{"--str", "-", NULL}, RUN, "", false, 7, 0.5, "-", "-", false, ""},
    {{"--str", "", NULL}, RUN, "", false, 7, 0.5, "", "-", false, ""},
    {{"a", "--flag", "b", NULL}, RUN, "", false, 7, 0.5, "dflt", "-", true, "a b"},
    /* Help, whatever else is wrong; help is never an option's value. */
    {{"--help", NULL}, 0, "", true, DEFAULTS},
    {{"--bogus", "-h", NULL}, 0, "", true, DEFAULTS},
    {{"--str", "--help", NULL}, 0, "", true, DEFAULTS},
    /* The shape of the command line: the usage follows. */
    {{"--bogus", NULL}, 2, "clgraph t: unknown option '--bogus'", true, DEFAULTS},
    {{"--flag=1", NULL}, 2, "clgraph t: unknown option '--flag=1'", true, DEFAULTS},
    {{"-5", NULL}, 2, "clgraph t: unknown option '-5'", true, DEFAULTS},
    {{"a", "b", "c", NULL}, 2, "clgraph t: unexpected argument 'c'", true, DEFAULTS},
    {{"--int", NULL}, 2, "clgraph t: --int needs a value", true, DEFAULTS},
    {{"--str", "--flag", NULL}, 2, "clgraph t: --str needs a value", true, DEFAULTS},
    {{"--list", "-f", NULL}, 2, "clgraph t: --list needs a value", true, DEFAULTS},
    {{"--int", "1", "--int", "2", NULL},
     2,
     "clgraph t: --int given twice ('1', then '2')",
     true,
     DEFAULTS},
    {{"--str", "a", "--str", "a", NULL},
     2,
     "clgraph t: --str given twice ('a', then 'a')",
     true,
     DEFAULTS},
    {{"--flag", "-f", NULL}, 2, "clgraph t: --flag given twice", true, DEFAULTS},
    /* Bad numbers: the option, the text and what is wanted. */
    {{"--int", "5x", NULL}, 2, "clgraph t: --int '5x': want -5..100", false, DEFAULTS},
    {{"--int", " 5", NULL}, 2, "clgraph t: --int ' 5': want -5..100", false, DEFAULTS},
    {{"--int", "5 ", NULL}, 2, "clgraph t: --int '5 ': want -5..100", false, DEFAULTS},
    {{"--int", "", NULL}, 2, "clgraph t: --int '': want -5..100", false, DEFAULTS},
    {{"--int", "-", NULL}, 2, "clgraph t: --int '-': want -5..100", false, DEFAULTS},
    {{"--int", "101", NULL}, 2, "clgraph t: --int '101': want -5..100", false, DEFAULTS},
    {{"--int", "-6", NULL}, 2, "clgraph t: --int '-6': want -5..100", false, DEFAULTS},
    {{"--int", "1e2", NULL}, 2, "clgraph t: --int '1e2': want -5..100", false, DEFAULTS},
    {{"--int", "0x10", NULL}, 2, "clgraph t: --int '0x10': want -5..100", false, DEFAULTS},
    {{"--int", "4294967301", NULL},
     2,
     "clgraph t: --int '4294967301': want -5..100",
     false,
     DEFAULTS},
    {{"--int", "99999999999999999999", NULL},
     2,
     "clgraph t: --int '99999999999999999999': want -5..100",
     false,
     DEFAULTS},
    {{"--float", "inf", NULL},
     2,
     "clgraph t: --float 'inf': want a number in 0..1",
     false,
     DEFAULTS},
    {{"--float", "nan", NULL},
     2,
     "clgraph t: --float 'nan': want a number in 0..1",
     false,
     DEFAULTS},
    {{"--float", "0x1p-2", NULL},
     2,
     "clgraph t: --float '0x1p-2': want a number in 0..1",
     false,
     DEFAULTS},
    {{"--float", " 0.5", NULL},
     2,
     "clgraph t: --float ' 0.5': want a number in 0..1",
     false,
     DEFAULTS},
    {{"--float", "0.5x", NULL},
     2,
     "clgraph t: --float '0.5x': want a number in 0..1",
     false,
     DEFAULTS},
    {{"--float", "1e", NULL}, 2, "clgraph t: --float '1e': want a number in 0..1", false, DEFAULTS},
    {{"--float", ".", NULL}, 2, "clgraph t: --float '.': want a number in 0..1", false, DEFAULTS},
    {{"--float", "1.5", NULL},
     2,
     "clgraph t: --float '1.5': want a number in 0..1",
     false,
     DEFAULTS},
    {{"--float", "-1e-9", NULL},
     2,
     "clgraph t: --float '-1e-9': want a number in 0..1",
     false,
     DEFAULTS},
    {{"--float", "1e999", NULL},
     2,
     "clgraph t: --float '1e999': want a number in 0..1",
     false,
     DEFAULTS},
    /* Lists: every element must be there and be a number in range. */
    {{"--list", "8,", NULL},
     2,
     "clgraph t: --list '8,': element 2 is empty; want a comma list of up to 3 whole numbers "
     "in 1..9",
     false,
     DEFAULTS},
    {{"--list", "1,,2", NULL},
     2,
     "clgraph t: --list '1,,2': element 2 is empty; want a comma list of up to 3 whole "
     "numbers in 1..9",
     false,
     DEFAULTS},
    {{"--list", ",1", NULL},
     2,
     "clgraph t: --list ',1': element 1 is empty; want a comma list of up to 3 whole numbers "
     "in 1..9",
     false,
     DEFAULTS},
    {{"--list", ",", NULL},
     2,
     "clgraph t: --list ',': element 1 is empty; want a comma list of up to 3 whole numbers "
     "in 1..9",
     false,
     DEFAULTS},
    {{"--list", "1,2,3,4", NULL},
     2,
     "clgraph t: --list '1,2,3,4': element 4 is one too many; want a comma list of up to 3 "
     "whole numbers in 1..9",
     false,
     DEFAULTS},
    {{"--list", "1,x", NULL},
     2,
     "clgraph t: --list '1,x': element 2 is not a whole number in range; want a comma list "
     "of up to 3 whole numbers in 1..9",
     false,
     DEFAULTS},
    {{"--list", "10", NULL},
     2,
     "clgraph t: --list '10': element 1 is not a whole number in range; want a comma list of "
     "up to 3 whole numbers in 1..9",
     false,
     DEFAULTS},
    {{"--list", "1, 2", NULL},
     2,
     "clgraph t: --list '1, 2': element 2 is not a whole number in range; want a comma list "
     "of up to 3 whole numbers in 1..9",
     false,
     DEFAULTS},
};
#undef DEFAULTS
#undef RUN

static void list_text(const int *v, int n, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = '\0';
  if (n < 0)
    snprintf(buf, size, "-");
  for (int i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? " %d" : "%d", v[i]);
}

static void test_parser_cases(void)
{
  for (size_t c = 0; c < sizeof parse_cases / sizeof parse_cases[0]; c++) {
    const parse_case *pc = &parse_cases[c];
    bool flag = false;
    int integer = 7, list[3] = {0}, count = -1;
    double number = 0.5;
    const char *text = "dflt";
    clg_tool_opt opts[] = {{"--flag", CLG_TOOL_FLAG, .alias = "-f", .flag = &flag},
                           {"--int", CLG_TOOL_INT, .min = -5, .max = 100, .integer = &integer},
                           {"--float", CLG_TOOL_FLOAT, .min = 0, .max = 1, .number = &number},
                           {"--str", CLG_TOOL_STRING, .meta = "FILE", .text = &text},
                           {"--list", CLG_TOOL_LIST, .min = 1, .max = 9, .max_items = 3,
                            .list = list, .count = &count},
                           {NULL}};
    char *argv[13] = {"t"};
    int argc = 1;
    for (; pc->argv[argc - 1]; argc++)
      argv[argc] = (char *)pc->argv[argc - 1];
    clg_tool_cmd cmd = {.name = "t",
                        .usage = parse_usage,
                        .opts = opts,
                        .max_args = 2,
                        .out = tmpfile(),
                        .err = tmpfile()};
    CHECK(cmd.out && cmd.err);
    if (!cmd.out || !cmd.err)
      return;
    int rc = clg_tool_parse(&cmd, argc, argv);
    char *out = read_back(cmd.out), *err = read_back(cmd.err);
    char what[256] = "";
    for (int i = 1; i < argc; i++)
      snprintf(what + strlen(what), sizeof what - strlen(what), " '%s'", argv[i]);
    CHECK_MSG(rc == pc->rc, "case %zu (t%s): status %d, want %d", c, what, rc, pc->rc);
    char first[512] = "";
    if (err)
      snprintf(first, sizeof first, "%.*s", (int)strcspn(err, "\n"), err);
    CHECK_MSG(strcmp(first, pc->err) == 0, "case %zu (t%s): stderr starts\n  %s\nwant\n  %s", c,
              what, first, pc->err);
    bool usage_on_err = err && strstr(err, "\n\nusage: clgraph t ");
    bool usage_on_out = out && strcmp(out, "usage: clgraph t [options] [A [B]]\n") == 0;
    if (pc->rc == 0)
      CHECK_MSG(usage_on_out && err && !*err, "case %zu (t%s): help: stdout '%s', stderr '%s'", c,
                what, out ? out : "", err ? err : "");
    else
      CHECK_MSG(usage_on_err == pc->usage && out && !*out,
                "case %zu (t%s): usage on stderr %d, want %d; stdout '%s'", c, what, usage_on_err,
                pc->usage, out ? out : "");
    if (pc->rc == CLG_TOOL_RUN) {
      char got[64], args[64] = "";
      list_text(list, count, got, sizeof got);
      for (int i = 0; i < cmd.num_args; i++)
        snprintf(args + strlen(args), sizeof args - strlen(args), i ? " %s" : "%s", cmd.args[i]);
      CHECK_MSG(integer == pc->i && number == pc->f && strcmp(text, pc->s) == 0 &&
                    strcmp(got, pc->list) == 0 && flag == pc->flag && strcmp(args, pc->args) == 0,
                "case %zu (t%s): int %d, float %g, str '%s', list '%s', flag %d, args '%s'", c,
                what, integer, number, text, got, flag, args);
      CHECK(clg_tool_given(opts, "--int") == (integer != 7));
    }
    free(out);
    free(err);
  }
}

/* A required option; and a table and a command line far longer than 63 options (the last
 * one is checked as well as the first). */
static void test_parser_required_and_long(void)
{
  const char *need = NULL;
  clg_tool_opt req[] = {{"--need", CLG_TOOL_STRING, .meta = "FILE", .help = "what it needs",
                         .required = true, .text = &need},
                        {NULL}};
  clg_tool_cmd cmd = {.name = "t", .usage = parse_usage, .opts = req, .err = tmpfile()};
  CHECK(clg_tool_parse(&cmd, 1, (char *[]){"t", NULL}) == 2);
  char *err = cmd.err ? read_back(cmd.err) : NULL;
  CHECK_STR(err, "clgraph t: --need FILE is required (what it needs)\n\n"
                 "usage: clgraph t [options] [A [B]]\n");
  free(err);
  cmd.err = NULL;
  CHECK(clg_tool_parse(&cmd, 3, (char *[]){"t", "--need", "x", NULL}) == CLG_TOOL_RUN);
  CHECK_STR(need, "x");

  enum { N = 200 };
  static char names[N][8];
  static bool flags[N];
  static clg_tool_opt many[N + 1];
  static char *argv[N + 2];
  argv[0] = "t";
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "--f%d", i);
    many[i] = (clg_tool_opt){names[i], CLG_TOOL_FLAG, .flag = &flags[i]};
    argv[1 + i] = names[i];
  }
  argv[N + 1] = "--bogus";
  clg_tool_cmd big = {.name = "t", .usage = parse_usage, .opts = many, .err = tmpfile()};
  CHECK(clg_tool_parse(&big, N + 1, argv) == CLG_TOOL_RUN);
  bool all = true;
  for (int i = 0; i < N; i++)
    all = all && flags[i];
  CHECK(all);
  CHECK(clg_tool_parse(&big, N + 2, argv) == 2);
  err = big.err ? read_back(big.err) : NULL;
  CHECK(err && strncmp(err, "clgraph t: unknown option '--bogus'\n", 36) == 0);
  free(err);
}

/* A repeatable option (clgraph run's --input): each occurrence appended, in order, up to
 * max_items; a value that is an option is refused as for any valued option. */
static void test_parser_repeat(void)
{
  const char *texts[3] = {NULL, NULL, NULL};
  int count = -1;
  bool json = false;
  clg_tool_opt opts[] = {{"--input", CLG_TOOL_REPEAT, .meta = "NAME=FILE", .max_items = 2,
                          .texts = texts, .count = &count},
                         {"--json", CLG_TOOL_FLAG, .flag = &json},
                         {NULL}};
  clg_tool_cmd cmd = {.name = "t", .usage = parse_usage, .opts = opts, .max_args = 1};
  CHECK(clg_tool_parse(&cmd, 2, (char *[]){"t", "m", NULL}) == CLG_TOOL_RUN);
  CHECK(count == -1); /* absent: the variable keeps its value */
  CHECK(clg_tool_parse(&cmd, 6, (char *[]){"t", "--input", "a=1", "m", "--input", "b=2", NULL}) ==
        CLG_TOOL_RUN);
  CHECK(count == 2 && texts[0] && texts[1] && strcmp(texts[0], "a=1") == 0 &&
        strcmp(texts[1], "b=2") == 0 && cmd.num_args == 1);
  cmd.err = tmpfile();
  CHECK(clg_tool_parse(&cmd, 7,
                       (char *[]){"t", "--input", "a", "--input", "b", "--input", "c", NULL}) == 2);
  char *err = cmd.err ? read_back(cmd.err) : NULL;
  CHECK_STR(err, "clgraph t: --input given more than 2 times\n\n"
                 "usage: clgraph t [options] [A [B]]\n");
  free(err);
  cmd.err = tmpfile();
  CHECK(clg_tool_parse(&cmd, 3, (char *[]){"t", "--input", "--json", NULL}) == 2);
  err = cmd.err ? read_back(cmd.err) : NULL;
  CHECK(err && strncmp(err, "clgraph t: --input needs a value\n", 33) == 0);
  free(err);
}

static bool put_file(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, n, f) == n;
  if (f)
    ok = fclose(f) == 0 && ok;
  return ok;
}

/* `checkpoint ls --json` of a file whose name is not UTF-8: valid JSON (jansson checks UTF-8),
 * the name's stray bytes written as U+FFFD. */
static void test_checkpoint_json_names(const char *dir)
{
  char path[2048], args[4096];
  snprintf(path, sizeof path, "%s/ck-\xff\xfe-\xc3.safetensors", dir);
  static const char file[] = "\x36\0\0\0\0\0\0\0"
                             "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"
                             "\0\0\x80\x3f";
  CHECK(put_file(path, file, sizeof file - 1));
  snprintf(args, sizeof args, "checkpoint ls --json '%s'", path);
  char *out = NULL, *err = NULL;
  CHECK_MSG(run_tool(args, &out, &err) == 0, "clgraph %s: %s", args, err ? err : "");
  json_error_t jerr;
  json_t *v = out ? json_loads(out, 0, &jerr) : NULL;
  CHECK_MSG(v != NULL, "clgraph %s: not JSON (%s):\n%s", args, v ? "" : jerr.text, out);
  char want[2048];
  snprintf(want, sizeof want, "%s/ck-\xef\xbf\xbd\xef\xbf\xbd-\xef\xbf\xbd.safetensors", dir);
  const char *got = json_string_value(json_object_get(v, "file"));
  CHECK_MSG(got && strcmp(got, want) == 0, "file: %s, want %s", got ? got : "(none)", want);
  json_t *t = json_array_get(json_object_get(v, "tensors"), 0);
  CHECK_STR(json_string_value(json_object_get(t, "name")), "w");
  CHECK(json_integer_value(json_object_get(v, "total_bytes")) == 4);
  json_decref(v);
  free(out);
  free(err);
  unlink(path);
}

/* args ends with status rc, stdout empty and stderr holding reason (and, when usage_head is
 * not NULL, the usage). */
static void check_status(const char *args, int want, const char *reason, const char *usage_head)
{
  char *out = NULL, *err = NULL;
  int rc = run_tool(args, &out, &err);
  CHECK_MSG(rc == want, "clgraph %s: exit status %d, want %d\nstderr: %s", args, rc, want,
            err ? err : "(none)");
  CHECK_MSG(out && out[0] == '\0', "clgraph %s: stdout is not empty:\n%s", args,
            out ? out : "(none)");
  CHECK_MSG(err && strstr(err, reason), "clgraph %s: stderr lacks \"%s\":\n%s", args, reason,
            err ? err : "(none)");
  if (usage_head)
    CHECK_MSG(err && strstr(err, usage_head), "clgraph %s: stderr lacks the usage \"%s\":\n%s",
              args, usage_head, err ? err : "(none)");
  free(out);
  free(err);
}

/* Through the binary, each command with the one parser: a repeated option, numbers with
 * garbage around them, list elements that are empty; and the command-level defects the
 * separate parsers had. Each command line is cheap to run, should it be accepted. */
static void test_commands(const char *dir)
{
  static const struct {
    const char *args, *reason, *usage;
  } twice[] = {
      {"devices --json --json", "clgraph devices: --json given twice", "usage: clgraph devices"},
      {"demo --scenario S1 --scenario S2", "clgraph demo: --scenario given twice ('S1', then 'S2')",
       "usage: clgraph demo"},
      {"demo -q --quiet --scenario S1", "clgraph demo: --quiet given twice", "usage: clgraph demo"},
      {"bench matmul --repeats 1 --repeats 2 --sizes 8 --f64-sizes ''",
       "clgraph bench matmul: --repeats given twice ('1', then '2')",
       "usage: clgraph bench matmul"},
      {"bench alloc --repeats 1 --repeats 1",
       "clgraph bench alloc: --repeats given twice ('1', then '1')", "usage: clgraph bench alloc"},
      {"bench overhead --json --json --repeats 1", "clgraph bench overhead: --json given twice",
       "usage: clgraph bench overhead"},
      {"bench variables --repeats 1 --dir /tmp --dir /tmp",
       "clgraph bench variables: --dir given twice ('/tmp', then '/tmp')",
       "usage: clgraph bench variables"},
      {"bench conv --repeats 1 --batch 1 --batch 2",
       "clgraph bench conv: --batch given twice ('1', then '2')", "usage: clgraph bench conv"},
      {"bench train-step --repeats 1 --batch 1 --batch 1",
       "clgraph bench train-step: --batch given twice ('1', then '1')",
       "usage: clgraph bench train-step"},
      {"bench towers --repeats 1 --batch 2 --towers 2 --towers 2",
       "clgraph bench towers: --towers given twice ('2', then '2')", "usage: clgraph bench towers"},
      {"bench allreduce --repeats 1 --max-mib 1 --max-mib 1",
       "clgraph bench allreduce: --max-mib given twice ('1', then '1')",
       "usage: mpirun -np P clgraph bench allreduce"},
      {"train --steps 0 --steps 0", "clgraph train: --steps given twice ('0', then '0')",
       "usage: clgraph train"},
      {"eval --checkpoint a --checkpoint b",
       "clgraph eval: --checkpoint given twice ('a', then 'b')", "usage: clgraph eval"},
      {"export --checkpoint a --checkpoint b --output c",
       "clgraph export: --checkpoint given twice ('a', then 'b')", "usage: clgraph export"},
      {"run m.pb --seed 1 --seed 2", "clgraph run: --seed given twice ('1', then '2')",
       "usage: clgraph run"},
      {"inspect m.pb --json --json", "clgraph inspect: --json given twice",
       "usage: clgraph inspect"},
  };
  for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++)
    check_status(twice[i].args, 2, twice[i].reason, twice[i].usage);

  /* Numbers: the whole text, digits only (strtol took leading spaces, strtod hexadecimal). */
  check_status("bench alloc --repeats ' 1'", 2, "clgraph bench alloc: --repeats ' 1': want 1..1000",
               NULL);
  check_status("bench matmul --repeats 1x --sizes 8 --f64-sizes ''", 2,
               "clgraph bench matmul: --repeats '1x': want 1..64", NULL);
  check_status("train --steps 0 --lr 0x1", 2,
               "clgraph train: --lr '0x1': want a number in 0..1e+06", NULL);
  check_status("eval --checkpoint x --batch 4294967297", 2,
               "clgraph eval: --batch '4294967297': want 1..65536", NULL);
  check_status("bench matmul --trace --repeats 1", 2, "clgraph bench matmul: --trace needs a value",
               "usage: clgraph bench matmul");

  /* Lists: an empty element is refused wherever it is. */
  check_status("bench matmul --repeats 1 --f64-sizes '' --sizes 8,", 2,
               "clgraph bench matmul: --sizes '8,': element 2 is empty; want a comma list of up to "
               "16 whole numbers in 1..16384",
               NULL);
  check_status("bench matmul --repeats 1 --f64-sizes '' --sizes 1,,2", 2,
               "clgraph bench matmul: --sizes '1,,2': element 2 is empty", NULL);
  check_status("bench matmul --repeats 1 --sizes 8 --f64-sizes ,8", 2,
               "clgraph bench matmul: --f64-sizes ',8': element 1 is empty", NULL);

  /* A --device that is none of the devices measured nothing and exited 0. */
  check_status("bench conv --repeats 1 --batch 1 --device /device:GPU:UNKNOWN", 2,
               "clgraph bench conv: --device '/device:GPU:UNKNOWN': no such device; want one of "
               "/device:CPU:0, /device:GPU:0",
               NULL);

  /* checkpoint ls checked only its first 63 options: a 66th went unseen. */
  char path[2048], args[8192];
  snprintf(path, sizeof path, "%s/test_cli_options.%ld.safetensors", dir, (long)getpid());
  static const char file[] = "\x36\0\0\0\0\0\0\0"
                             "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"
                             "\0\0\x80\x3f";
  CHECK(put_file(path, file, sizeof file - 1));
  int n = snprintf(args, sizeof args, "checkpoint ls '%s'", path);
  for (int i = 0; i < 65; i++)
    n += snprintf(args + n, sizeof args - (size_t)n, " --json");
  snprintf(args + n, sizeof args - (size_t)n, " --bogus");
  check_status(args, 2, "clgraph checkpoint: --json given twice", "usage: clgraph checkpoint");
  snprintf(args, sizeof args, "checkpoint ls '%s' --json --bogus", path);
  check_status(args, 2, "clgraph checkpoint: unknown option '--bogus'",
               "usage: clgraph checkpoint");
  unlink(path);

  /* bench allreduce said its runs would be traced, then refused --trace: it traces now. */
  snprintf(path, sizeof path, "%s/test_cli_options.%ld.trace.json", dir, (long)getpid());
  snprintf(args, sizeof args, "bench allreduce --repeats 1 --max-mib 1 --trace '%s'", path);
  char *out = NULL, *err = NULL;
  CHECK_MSG(run_tool(args, &out, &err) == 0, "clgraph %s: %s", args, err ? err : "");
  CHECK_CONTAINS(out, "1 MiB on 1 tasks: session");
  CHECK_CONTAINS(err, "clgraph bench allreduce: --trace: the timed runs are traced");
  json_error_t jerr;
  json_t *trace = json_load_file(path, 0, &jerr);
  CHECK_MSG(trace != NULL, "%s: %s", path, trace ? "" : jerr.text);
  json_t *events = json_object_get(trace, "traceEvents");
  int reductions = 0;
  for (size_t i = 0; i < json_array_size(events); i++) {
    const char *op = json_string_value(
        json_object_get(json_object_get(json_array_get(events, i), "args"), "op"));
    reductions += op && strcmp(op, "AllReduce") == 0;
  }
  CHECK_MSG(reductions == 2, "%d AllReduce slices in the trace, want 2 (a warm-up and a repeat)",
            reductions);
  json_decref(trace);
  free(out);
  free(err);
  unlink(path);
}

int main(void)
{
  test_parser_cases();
  test_parser_required_and_long();
  test_parser_repeat();
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
  const char *benches[] = {"matmul", "alloc", "overhead", "variables", "parallel"};
  for (int i = 0; i < 5; i++) {
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
  test_checkpoint_json_names(dir);
  test_commands(dir);
  unlink(err_path);
  return clg_test_summary("test_cli_options");
}
