// ctest-serial: trains through the clgraph binary on CPU:0 and on stand-ins (several processes)
/* clgraph train and clgraph eval as a user runs them, on a small CIFAR-10-format dataset the
 * test writes (a bright square whose place is the label, with noise): the loss goes down on
 * CPU:0 and on two stand-ins; a checkpoint evaluates the same on every device; a resumed run
 * ends exactly where an uninterrupted one does; a killed run resumes from its last
 * checkpoint; Ctrl-C saves; four towers follow one tower with four times the batch; a FIFO
 * for a checkpoint or a data file is refused at once, and a negative global_step says so. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "testutil.h"

static char g_bin[4096], g_dir[256], g_data[300];
static const char *const *g_launcher; /* e.g. mpirun -np 2 ..., or none */
static int g_num_launcher;

/* --- the dataset ----------------------------------------------------------------------- */

static unsigned g_rng = 12345;
static int noise(void)
{
  g_rng = g_rng * 1103515245u + 12345u;
  return (int)((g_rng >> 16) % 41) - 20;
}

/* One 3,073-byte record: label, then R, G, B planes of 32x32. The label decides where a
 * 10x10 bright square sits on a dark, noisy background. */
static void record(unsigned char *r, int label)
{
  r[0] = (unsigned char)label;
  int y0 = 4 + (label / 5) * 12, x0 = 2 + (label % 5) * 5;
  for (int c = 0; c < 3; c++)
    for (int y = 0; y < 32; y++)
      for (int x = 0; x < 32; x++) {
        bool in = y >= y0 && y < y0 + 10 && x >= x0 && x < x0 + 10;
        int v = (in ? 200 : 50) + noise();
        r[1 + c * 1024 + y * 32 + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
}

static void write_file(const char *name, int records, int label0)
{
  char path[512];
  snprintf(path, sizeof path, "%s/cifar-10-batches-bin/%s", g_data, name);
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f)
    return;
  unsigned char r[3073];
  for (int i = 0; i < records; i++) {
    record(r, (label0 + i * 7) % 10);
    fwrite(r, 1, sizeof r, f);
  }
  fclose(f);
}

static void make_dataset(void)
{
  snprintf(g_data, sizeof g_data, "%s/data", g_dir);
  mkdir(g_data, 0755);
  char sub[400];
  snprintf(sub, sizeof sub, "%s/cifar-10-batches-bin", g_data);
  mkdir(sub, 0755);
  for (int i = 1; i <= 5; i++) {
    char name[32];
    snprintf(name, sizeof name, "data_batch_%d.bin", i);
    write_file(name, 64, i);
  }
  write_file("test_batch.bin", 100, 0);
}

/* --- running clgraph --------------------------------------------------------------------- */

/* Starts `clgraph <args>` with stdout and stderr to files, under env "KEY=value" entries. */
static pid_t start(const char *out, const char *err, const char *const *env,
                   const char *const *args)
{
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fe, 2);
    for (int i = 0; env && env[i]; i++) {
      char kv[256];
      snprintf(kv, sizeof kv, "%s", env[i]);
      char *eq = strchr(kv, '=');
      if (eq) {
        *eq = 0;
        setenv(kv, eq + 1, 1);
      }
    }
    /* Under g_launcher (mpirun and its options), clgraph is one of its arguments. */
    const char *argv[96];
    int n = 0;
    for (int i = 0; i < g_num_launcher && n < 60; i++)
      argv[n++] = g_launcher[i];
    argv[n++] = g_bin;
    for (int i = 0; args[i] && n < 95; i++)
      argv[n++] = args[i];
    argv[n] = NULL;
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static int finish(pid_t pid)
{
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

/* Runs clgraph to the end; returns its status, with stdout and stderr in *out and *err. */
static int run(const char *const *env, const char *const *args, char **out, char **err)
{
  char po[400], pe[400];
  snprintf(po, sizeof po, "%s/out.txt", g_dir);
  snprintf(pe, sizeof pe, "%s/err.txt", g_dir);
  int rc = finish(start(po, pe, env, args));
  *out = slurp(po);
  *err = slurp(pe);
  if (rc != 0)
    fprintf(stderr, "clgraph exited %d; stderr:\n%s\n", rc, *err);
  return rc;
}

/* The "step", "loss" or "mean_loss" of each JSON line of out. */
static int json_steps(const char *out, const char *field, double *values, int64_t *steps, int max)
{
  int n = 0;
  for (const char *line = out; line && *line && n < max;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    json_error_t e;
    json_t *o = json_loadb(line, len, 0, &e);
    if (o && json_is_object(o)) {
      json_t *v = json_object_get(o, field), *s = json_object_get(o, "step");
      if (json_is_number(v) && json_is_integer(s)) {
        values[n] = json_number_value(v);
        steps[n++] = json_integer_value(s);
      }
    }
    json_decref(o);
    line = end ? end + 1 : NULL;
  }
  return n;
}

/* --- checkpoints -------------------------------------------------------------------------- */

static int64_t ck_step(const char *path)
{
  clg_checkpoint *ck = NULL;
  int64_t step = -1;
  if (clg_checkpoint_open(path, &ck) != CLG_OK)
    return -1;
  for (int i = 0; i < clg_checkpoint_num_tensors(ck); i++) {
    clg_checkpoint_tensor info;
    clg_tensor *t = NULL;
    if (clg_checkpoint_tensor_info(ck, i, &info) == CLG_OK &&
        strcmp(info.name, "global_step") == 0 && clg_checkpoint_read(ck, i, &t) == CLG_OK) {
      step = *(const int64_t *)clg_tensor_data(t);
      clg_tensor_free(t);
    }
  }
  clg_checkpoint_close(ck);
  return step;
}

/* The largest difference between float tensors of the same name in a and b, relative to
 * max(1, |value|); every tensor of a must be in b. */
static double ck_diff(const char *a, const char *b, int *compared)
{
  clg_checkpoint *ca = NULL, *cb = NULL;
  double worst = INFINITY;
  *compared = 0;
  if (clg_checkpoint_open(a, &ca) != CLG_OK || clg_checkpoint_open(b, &cb) != CLG_OK)
    goto out;
  worst = 0;
  for (int i = 0; i < clg_checkpoint_num_tensors(ca); i++) {
    clg_checkpoint_tensor ia, ib;
    clg_checkpoint_tensor_info(ca, i, &ia);
    int j = 0;
    for (; j < clg_checkpoint_num_tensors(cb); j++)
      if (clg_checkpoint_tensor_info(cb, j, &ib) == CLG_OK && strcmp(ia.name, ib.name) == 0)
        break;
    if (j == clg_checkpoint_num_tensors(cb) || ia.type != CLG_FLOAT32) {
      if (j == clg_checkpoint_num_tensors(cb))
        worst = INFINITY;
      continue;
    }
    clg_tensor *ta = NULL, *tb = NULL;
    if (clg_checkpoint_read(ca, i, &ta) == CLG_OK && clg_checkpoint_read(cb, j, &tb) == CLG_OK &&
        clg_tensor_count(ta) == clg_tensor_count(tb)) {
      const float *pa = clg_tensor_data(ta), *pb = clg_tensor_data(tb);
      for (size_t k = 0; k < clg_tensor_count(ta); k++) {
        double d = fabs((double)pa[k] - pb[k]) / fmax(1.0, fabs((double)pa[k]));
        if (!(d <= worst))
          worst = d;
      }
      (*compared)++;
    } else
      worst = INFINITY;
    clg_tensor_free(ta);
    clg_tensor_free(tb);
  }
out:
  clg_checkpoint_close(ca);
  clg_checkpoint_close(cb);
  return worst;
}

static const char *CPU_ONLY[] = {"CLGRAPH_DEVICE_TYPES=gpu", NULL};
static const char *TWO_STANDINS[] = {"CLGRAPH_DEVICE_TYPES=all", "POCL_DEVICES=pthread pthread",
                                     NULL};
static const char *FOUR_STANDINS[] = {"CLGRAPH_DEVICE_TYPES=all",
                                      "POCL_DEVICES=pthread pthread pthread pthread", NULL};

static double mean(const double *v, int n)
{
  double s = 0;
  for (int i = 0; i < n; i++)
    s += v[i];
  return n ? s / n : NAN;
}

/* Trains `steps` steps and checks the loss goes down; returns eval's correct count. */
static long long train_and_eval(const char *what, const char *const *env, const char *towers,
                                const char *ck, int steps)
{
  char nsteps[16];
  snprintf(nsteps, sizeof nsteps, "%d", steps);
  const char *args[] = {"train",   "--dataset",    "cifar10", "--data-dir", g_data,
                        "--batch", "16",           "--steps", nsteps,       "--towers",
                        towers,    "--checkpoint", ck,        "--json",     "--log-every",
                        "1",       "--lr",         "0.05",    NULL};
  char *out, *err;
  CHECK_MSG(run(env, args, &out, &err) == 0, "%s: train failed", what);
  double loss[512];
  int64_t step[512];
  int n = json_steps(out, "mean_loss", loss, step, 512);
  CHECK_MSG(n == steps, "%s: %d JSON lines for %d steps:\n%s", what, n, steps, out);
  if (n >= 10) {
    double first = mean(loss, 5), last = mean(loss + n - 5, 5);
    /* Weight decay alone (about 2.4 of the first loss) shrinks by ~0.04 in 40 steps at this
     * rate: a drop of 0.3 is the cross entropy going down. */
    CHECK_MSG(first - last > 0.3, "%s: loss %.4f over the first 5 steps, %.4f over the last 5",
              what, first, last);
    CHECK(step[0] == 0 && step[n - 1] == steps - 1);
  }
  CHECK_MSG(ck_step(ck) == steps, "%s: checkpoint at step %lld, want %d", what,
            (long long)ck_step(ck), steps);
  free(out);
  free(err);
  /* Evaluation on CPU:0 and on a stand-in give the same count. */
  long long correct[2] = {-1, -2};
  for (int k = 0; k < 2; k++) {
    const char *eargs[] = {"eval",         "--dataset", "cifar10", "--data-dir", g_data,
                           "--checkpoint", ck,          "--json",  NULL};
    CHECK_MSG(run(k == 0 ? CPU_ONLY : TWO_STANDINS, eargs, &out, &err) == 0, "%s: eval failed",
              what);
    json_error_t e;
    json_t *o = json_loads(out, 0, &e);
    json_t *c = o ? json_object_get(o, "correct") : NULL,
           *t = o ? json_object_get(o, "total") : NULL;
    CHECK_MSG(json_is_integer(c) && json_is_integer(t) && json_integer_value(t) == 100,
              "%s: eval printed %s", what, out);
    if (json_is_integer(c))
      correct[k] = json_integer_value(c);
    json_decref(o);
    free(out);
    free(err);
  }
  CHECK_MSG(correct[0] == correct[1], "%s: %lld right on CPU:0, %lld on GPU:0", what, correct[0],
            correct[1]);
  return correct[0];
}

/* A resumed run ends where an uninterrupted run does (CPU:0 is deterministic). */
static void test_resume_exact(void)
{
  char a[400], b[400];
  snprintf(a, sizeof a, "%s/straight.safetensors", g_dir);
  snprintf(b, sizeof b, "%s/resumed.safetensors", g_dir);
  const char *straight[] = {"train",   "--dataset", "cifar10", "--data-dir", g_data,
                            "--batch", "8",         "--steps", "8",          "--checkpoint",
                            a,         "--json",    NULL};
  const char *half[] = {"train",   "--dataset", "cifar10", "--data-dir", g_data,
                        "--batch", "8",         "--steps", "4",          "--checkpoint",
                        b,         "--json",    NULL};
  const char *rest[] = {"train",   "--dataset", "cifar10",     "--data-dir", g_data,
                        "--batch", "8",         "--steps",     "8",          "--checkpoint",
                        b,         "--json",    "--log-every", "1",          NULL};
  char *out, *err;
  CHECK(run(CPU_ONLY, straight, &out, &err) == 0);
  free(out), free(err);
  CHECK(run(CPU_ONLY, half, &out, &err) == 0);
  free(out), free(err);
  CHECK(ck_step(b) == 4);
  CHECK(run(CPU_ONLY, rest, &out, &err) == 0);
  double loss[16];
  int64_t step[16];
  int n = json_steps(out, "loss", loss, step, 16);
  CHECK_MSG(n == 4 && step[0] == 4, "the resumed run logged %d steps from %lld:\n%s", n,
            n ? (long long)step[0] : -1LL, out);
  free(out), free(err);
  int compared = 0;
  double d = ck_diff(a, b, &compared);
  CHECK_MSG(compared >= 20 && d < 1e-5,
            "resumed and uninterrupted runs differ by %g over %d tensors", d, compared);
}

static bool wait_for_step(const char *out_path, const char *ck, int64_t min_step, double timeout)
{
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    char *out = slurp(out_path);
    double loss[4096];
    int64_t step[4096];
    int n = json_steps(out, "loss", loss, step, 4096);
    free(out);
    struct stat st;
    if (n && step[n - 1] >= min_step && (!ck || stat(ck, &st) == 0))
      return true;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 > timeout)
      return false;
    nanosleep(&(struct timespec){0, 20000000}, NULL);
  }
}

/* SIGKILL after a checkpoint: the file is whole, and a new run continues from its step. */
static void test_kill_resume(void)
{
  char ck[400], po[400], pe[400];
  snprintf(ck, sizeof ck, "%s/killed.safetensors", g_dir);
  snprintf(po, sizeof po, "%s/kill-out.txt", g_dir);
  snprintf(pe, sizeof pe, "%s/kill-err.txt", g_dir);
  const char *args[] = {"train",  "--dataset",    "cifar10",     "--data-dir",
                        g_data,   "--batch",      "4",           "--steps",
                        "100000", "--save-every", "3",           "--checkpoint",
                        ck,       "--json",       "--log-every", "1",
                        NULL};
  pid_t pid = start(po, pe, CPU_ONLY, args);
  bool reached = wait_for_step(po, ck, 7, 120);
  CHECK_MSG(reached, "the training run did not reach step 7 with a checkpoint within 120 s");
  kill(pid, SIGKILL);
  CHECK(finish(pid) == 128 + SIGKILL);
  int64_t saved = ck_step(ck);
  CHECK_MSG(saved >= 6 && saved % 3 == 0, "the killed run's checkpoint is at step %lld",
            (long long)saved);
  char nsteps[32];
  snprintf(nsteps, sizeof nsteps, "%lld", (long long)saved + 2);
  const char *again[] = {"train",   "--dataset",   "cifar10", "--data-dir", g_data,
                         "--batch", "4",           "--steps", nsteps,       "--checkpoint",
                         ck,        "--log-every", "1",       NULL};
  char *out, *err;
  CHECK(run(CPU_ONLY, again, &out, &err) == 0);
  char want[64];
  snprintf(want, sizeof want, "at step %lld", (long long)saved);
  CHECK_CONTAINS(out, want);
  snprintf(want, sizeof want, "step %lld, loss = ", (long long)saved);
  CHECK_CONTAINS(out, want);
  CHECK(ck_step(ck) == saved + 2);
  free(out), free(err);
}

/* Ctrl-C: the run saves and exits with 130. */
static void test_interrupt(void)
{
  char ck[400], po[400], pe[400];
  snprintf(ck, sizeof ck, "%s/interrupted.safetensors", g_dir);
  snprintf(po, sizeof po, "%s/int-out.txt", g_dir);
  snprintf(pe, sizeof pe, "%s/int-err.txt", g_dir);
  const char *args[] = {"train",   "--dataset", "cifar10",     "--data-dir", g_data,
                        "--batch", "4",         "--steps",     "100000",     "--checkpoint",
                        ck,        "--json",    "--log-every", "1",          NULL};
  pid_t pid = start(po, pe, CPU_ONLY, args);
  CHECK(wait_for_step(po, NULL, 2, 120));
  kill(pid, SIGINT);
  CHECK(finish(pid) == 130);
  char *out = slurp(po), *err = slurp(pe);
  double loss[4096];
  int64_t step[4096];
  int n = json_steps(out, "loss", loss, step, 4096);
  CHECK_MSG(n >= 3 && ck_step(ck) == step[n - 1] + 1,
            "interrupted after step %lld, checkpoint at %lld", n ? (long long)step[n - 1] : -1LL,
            (long long)ck_step(ck));
  CHECK_CONTAINS(err, "interrupted at step");
  free(out), free(err);
}

/* Four towers of batch 4 on four stand-ins, and one tower of batch 16: the same records each
 * step (--no-shuffle --no-distort), the same start (--init-checkpoint), the same losses. */
static void test_towers_match(const char *init)
{
  double one[8], four[8];
  int64_t s1[8], s4[8];
  int n1 = 0, n4 = 0;
  for (int k = 0; k < 2; k++) {
    char ck[400];
    snprintf(ck, sizeof ck, "%s/towers%d.safetensors", g_dir, k);
    const char *args[] = {"train",
                          "--dataset",
                          "cifar10",
                          "--data-dir",
                          g_data,
                          "--batch",
                          k ? "4" : "16",
                          "--towers",
                          k ? "4" : "1",
                          "--steps",
                          "6",
                          "--checkpoint",
                          ck,
                          "--init-checkpoint",
                          init,
                          "--no-shuffle",
                          "--no-distort",
                          "--json",
                          "--log-every",
                          "1",
                          NULL};
    char *out, *err;
    CHECK(run(FOUR_STANDINS, args, &out, &err) == 0);
    if (k)
      n4 = json_steps(out, "mean_loss", four, s4, 8);
    else
      n1 = json_steps(out, "mean_loss", one, s1, 8);
    free(out), free(err);
  }
  CHECK_MSG(n1 == 6 && n4 == 6, "logged %d and %d steps", n1, n4);
  for (int i = 0; i < n1 && i < n4; i++)
    CHECK_MSG(fabs(one[i] - four[i]) <= 1e-4 * fmax(1, fabs(one[i])),
              "step %d: one tower of 16 %.7f, four towers of 4 %.7f", i, one[i], four[i]);
  char a[400], b[400];
  snprintf(a, sizeof a, "%s/towers0.safetensors", g_dir);
  snprintf(b, sizeof b, "%s/towers1.safetensors", g_dir);
  int compared = 0;
  double d = ck_diff(a, b, &compared);
  CHECK_MSG(compared >= 20 && d < 1e-4, "after 6 steps the weights differ by %g", d);
}

/* --trace, --profile and --memory-map on train: the last steps' trace holds the towers'
 * ops, the profile names Conv2D, the map is an SVG. */
static void test_pictures(void)
{
  char trace[400], map[400];
  snprintf(trace, sizeof trace, "%s/train-trace.json", g_dir);
  snprintf(map, sizeof map, "%s/train-map.svg", g_dir);
  const char *args[] = {"train",     "--batch",      "4", "--steps", "4", "--trace", trace,
                        "--profile", "--memory-map", map, "--quiet", NULL};
  char *out, *err;
  CHECK(run(CPU_ONLY, args, &out, &err) == 0);
  CHECK_CONTAINS(out, "Conv2DBackpropFilter");
  free(out), free(err);
  json_error_t e;
  json_t *t = json_load_file(trace, 0, &e);
  json_t *events = t ? json_object_get(t, "traceEvents") : NULL;
  int conv = 0;
  for (size_t i = 0; json_is_array(events) && i < json_array_size(events); i++) {
    json_t *name = json_object_get(json_array_get(events, i), "name");
    conv += json_is_string(name) && strcmp(json_string_value(name), "tower_0/conv1/Conv2D") == 0;
  }
  CHECK_MSG(conv == 4, "the trace of 4 steps holds tower_0/conv1/Conv2D %d times", conv);
  json_decref(t);
  char *svg = slurp(map);
  CHECK_CONTAINS(svg, "<svg");
  free(svg);
}

static void test_bad_input(void)
{
  char *out, *err;
  const char *no_dir[] = {"train", "--dataset", "cifar10", NULL};
  CHECK(run(CPU_ONLY, no_dir, &out, &err) == 2);
  CHECK_CONTAINS(err, "--data-dir");
  free(out), free(err);
  const char *bad_towers[] = {"train", "--towers", "0", NULL};
  CHECK(run(CPU_ONLY, bad_towers, &out, &err) == 2);
  CHECK_CONTAINS(err, "--towers '0'");
  free(out), free(err);
  const char *bad_ds[] = {"eval", "--dataset", "mnist", "--checkpoint", "x", NULL};
  CHECK(run(CPU_ONLY, bad_ds, &out, &err) == 2);
  CHECK_CONTAINS(err, "mnist");
  free(out), free(err);
  /* A truncated data file names the file and the record. */
  char path[512];
  snprintf(path, sizeof path, "%s/cifar-10-batches-bin/test_batch.bin", g_data);
  CHECK(truncate(path, 3073 * 10 + 100) == 0);
  char ck[400];
  snprintf(ck, sizeof ck, "%s/straight.safetensors", g_dir);
  const char *eval[] = {"eval", "--dataset",    "cifar10", "--data-dir",
                        g_data, "--checkpoint", ck,        NULL};
  CHECK(run(CPU_ONLY, eval, &out, &err) == 1);
  CHECK_CONTAINS(err, "test_batch.bin");
  CHECK_CONTAINS(err, "record 10");
  free(out), free(err);
  write_file("test_batch.bin", 100, 0);
  /* A checkpoint that is not one of this model's. */
  const char *missing_ck[] = {"eval",
                              "--dataset",
                              "cifar10",
                              "--data-dir",
                              g_data,
                              "--checkpoint",
                              "/nonexistent/ck.safetensors",
                              NULL};
  CHECK(run(CPU_ONLY, missing_ck, &out, &err) == 1);
  CHECK_CONTAINS(err, "/nonexistent/ck.safetensors");
  free(out), free(err);
}

/* Files that are not what they should be: a FIFO where the checkpoint or a data file should
 * be is refused at once, naming it (the readers used to wait forever for a writer; here they
 * run under timeout); a checkpoint whose global_step is negative says so. */
static void test_bad_files(void)
{
  char *out, *err;
  static const char *const under_timeout[] = {"timeout", "60"};
  char fifo[400], want[700];
  snprintf(fifo, sizeof fifo, "%s/fifo.safetensors", g_dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  g_launcher = under_timeout;
  g_num_launcher = 2;
  const char *resume[] = {"train", "--dataset", "cifar10", "--data-dir",   g_data, "--batch",
                          "4",     "--steps",   "1",       "--checkpoint", fifo,   NULL};
  CHECK(run(CPU_ONLY, resume, &out, &err) == 1);
  snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", fifo);
  CHECK_CONTAINS(err, want);
  free(out), free(err);
  const char *eval[] = {"eval", "--dataset",    "cifar10", "--data-dir",
                        g_data, "--checkpoint", fifo,      NULL};
  CHECK(run(CPU_ONLY, eval, &out, &err) == 1);
  CHECK_CONTAINS(err, want);
  free(out), free(err);
  /* A data folder whose third training file is a FIFO (the others link to real ones). */
  char data[400], sub[500], path[600], target[600];
  snprintf(data, sizeof data, "%s/fifo-data", g_dir);
  snprintf(sub, sizeof sub, "%s/cifar-10-batches-bin", data);
  CHECK(mkdir(data, 0700) == 0 && mkdir(sub, 0700) == 0);
  for (int i = 1; i <= 6; i++) {
    char name[32];
    snprintf(name, sizeof name, i < 6 ? "data_batch_%d.bin" : "test_batch.bin", i);
    snprintf(path, sizeof path, "%s/%s", sub, name);
    snprintf(target, sizeof target, "%s/cifar-10-batches-bin/%s", g_data, name);
    CHECK(i == 3 ? mkfifo(path, 0600) == 0 : symlink(target, path) == 0);
  }
  const char *train[] = {"train",   "--dataset", "cifar10", "--data-dir", data,
                         "--batch", "4",         "--steps", "1",          NULL};
  CHECK(run(CPU_ONLY, train, &out, &err) == 1);
  snprintf(want, sizeof want, "%s/data_batch_3.bin: not a regular file (a FIFO)", sub);
  CHECK_CONTAINS(err, want);
  free(out), free(err);
  g_launcher = NULL;
  g_num_launcher = 0;

  /* A checkpoint whose global_step is -5. */
  char ck[400];
  snprintf(ck, sizeof ck, "%s/negative.safetensors", g_dir);
  const char *once[] = {"train", "--dataset", "cifar10", "--data-dir",   g_data, "--batch",
                        "4",     "--steps",   "1",       "--checkpoint", ck,     NULL};
  CHECK(run(CPU_ONLY, once, &out, &err) == 0);
  free(out), free(err);
  clg_checkpoint *c = NULL;
  uint64_t at = 0;
  CHECK_OK(clg_checkpoint_open(ck, &c));
  for (int i = 0; c && i < clg_checkpoint_num_tensors(c); i++) {
    clg_checkpoint_tensor info;
    if (clg_checkpoint_tensor_info(c, i, &info) == CLG_OK &&
        strcmp(info.name, "global_step") == 0 && info.bytes == 8)
      at = info.offset;
  }
  clg_checkpoint_close(c);
  int64_t minus5 = -5;
  int fd = open(ck, O_WRONLY);
  CHECK(at > 0 && fd >= 0 && pwrite(fd, &minus5, 8, (off_t)at) == 8);
  if (fd >= 0)
    close(fd);
  CHECK(ck_step(ck) == -5);
  const char *again[] = {"train", "--dataset", "cifar10", "--data-dir",   g_data, "--batch",
                         "4",     "--steps",   "2",       "--checkpoint", ck,     NULL};
  CHECK(run(CPU_ONLY, again, &out, &err) == 1);
  snprintf(want, sizeof want, "resuming from %s: global_step is -5; a step count is never negative",
           ck);
  CHECK_CONTAINS(err, want);
  free(out), free(err);
}

/* Under mpirun: 2 tasks of 2 towers (batch 4 each) against one process of 4 towers, on CPU:0,
 * --no-shuffle --no-distort: the same records per step, so the same mean loss per step and the
 * same weights after the run. Only task 0 writes the checkpoint. */
static void test_mpi(int argc, char **argv)
{
  char one[400], two[400];
  snprintf(one, sizeof one, "%s/one-process.safetensors", g_dir);
  snprintf(two, sizeof two, "%s/two-tasks.safetensors", g_dir);
  double a[16], b[16];
  int64_t sa[16], sb[16];
  /* The same run but for the towers, the checkpoint and, under mpirun, the cluster. */
  // clang-format off
  const char *single[] = {"train", "--dataset", "cifar10", "--data-dir", g_data,
                          "--batch", "4", "--steps", "6", "--no-shuffle", "--no-distort",
                          "--json", "--log-every", "1",
                          "--towers", "4",          /* 15 */
                          "--checkpoint", one,      /* 17 */
                          NULL, NULL, NULL};        /* 18, 19: --cluster mpi */
  // clang-format on
  const char *tasks[21];
  memcpy(tasks, single, sizeof single);
  tasks[15] = "2";
  tasks[17] = two;
  tasks[18] = "--cluster";
  tasks[19] = "mpi";
  char *out, *err;
  CHECK(run(CPU_ONLY, single, &out, &err) == 0);
  int na = json_steps(out, "mean_loss", a, sa, 16);
  free(out), free(err);
  g_launcher = (const char *const *)argv;
  g_num_launcher = argc;
  CHECK(run(CPU_ONLY, tasks, &out, &err) == 0);
  int nb = json_steps(out, "mean_loss", b, sb, 16);
  CHECK_CONTAINS(out, "\"tasks\": 2");
  free(out), free(err);
  g_launcher = NULL;
  g_num_launcher = 0;
  CHECK_MSG(na == 6 && nb == 6, "logged %d steps alone and %d under mpirun (task 0 only)", na, nb);
  for (int i = 0; i < na && i < nb; i++)
    CHECK_MSG(sa[i] == sb[i] && fabs(a[i] - b[i]) <= 1e-5 * fmax(1, fabs(a[i])),
              "step %d: one process of 4 towers %.7f, 2 tasks of 2 towers %.7f", i, a[i], b[i]);
  int compared = 0;
  double d = ck_diff(one, two, &compared);
  CHECK_MSG(compared >= 20 && d < 1e-5, "after 6 steps the weights differ by %g (%d tensors)", d,
            compared);
}

/* Runs `clgraph train <args> --checkpoint ck.safetensors` as 2 tasks under MPIRUN ARGS whose
 * working folders (and so checkpoint files) differ: task 0 in dir0, task 1 in dir1 (mpirun's
 * MPMD form, as on two machines without a shared file system). */
static int run_split(const char *const *launcher, int nlauncher, const char *dir0, const char *dir1,
                     const char *const *args, char **out, char **err)
{
  const char *l[40], *a[96];
  int nl = 0, na = 0, n = 0;
  for (int i = 0; i < nlauncher && nl < 30; i++)
    l[nl++] = launcher[i];
  const char *first[] = {"-np", "1", "-wdir", dir0};
  for (int i = 0; i < 4; i++)
    l[nl++] = first[i];
  while (args[n])
    n++;
  const char *ck[] = {"--checkpoint", "ck.safetensors"};
  for (int copy = 0; copy < 2; copy++) {
    if (copy) {
      const char *second[] = {":", "-np", "1", "-wdir", dir1, g_bin};
      for (int i = 0; i < 6; i++)
        a[na++] = second[i];
    }
    for (int i = 0; i < n && na < 80; i++)
      a[na++] = args[i];
    a[na++] = ck[0];
    a[na++] = ck[1];
  }
  a[na] = NULL;
  static const char *env[] = {"CLGRAPH_DEVICE_TYPES=gpu", "CLGRAPH_CLUSTER_TIMEOUT=20", NULL};
  g_launcher = l;
  g_num_launcher = nl;
  int rc = run(env, a, out, err);
  g_launcher = NULL;
  g_num_launcher = 0;
  return rc;
}

static bool copy_file(const char *from, const char *to)
{
  char *data = NULL;
  FILE *f = fopen(from, "rb"), *t = NULL;
  bool ok = false;
  if (f && fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    data = n > 0 ? malloc((size_t)n) : NULL;
    ok = data && fseek(f, 0, SEEK_SET) == 0 && fread(data, 1, (size_t)n, f) == (size_t)n &&
         (t = fopen(to, "wb")) && fwrite(data, 1, (size_t)n, t) == (size_t)n;
  }
  if (f)
    fclose(f);
  if (t && fclose(t) != 0)
    ok = false;
  free(data);
  return ok;
}

/* Whether to resume is task 0's decision, from what its own file system holds: a stale
 * checkpoint of task 1 alone is ignored (the run equals one process of 4 towers), one of task 0
 * alone, or another file on task 1, fails every task before any step, and the same file on
 * both resumes both. */
static void test_mpi_resume(int argc, char **argv)
{
  char d0[400], d1[400], ck0[450], ck1[450], one[400], stale[400];
  snprintf(d0, sizeof d0, "%s/task0", g_dir);
  snprintf(d1, sizeof d1, "%s/task1", g_dir);
  mkdir(d0, 0755);
  mkdir(d1, 0755);
  snprintf(ck0, sizeof ck0, "%s/ck.safetensors", d0);
  snprintf(ck1, sizeof ck1, "%s/ck.safetensors", d1);
  snprintf(one, sizeof one, "%s/one-process.safetensors", g_dir);
  snprintf(stale, sizeof stale, "%s/stale.safetensors", g_dir);
  // clang-format off
  const char *single[] = {"train", "--dataset", "cifar10", "--data-dir", g_data,
                          "--batch", "4", "--steps", "6", "--no-shuffle", "--no-distort",
                          "--json", "--log-every", "1",
                          "--towers", "4",          /* 15 */
                          "--checkpoint", one,      /* 17 */
                          NULL};
  // clang-format on
  char *out, *err;
  CHECK(run(CPU_ONLY, single, &out, &err) == 0);
  free(out), free(err);
  const char *three[20];
  memcpy(three, single, sizeof single);
  three[8] = "3";
  three[15] = "2";
  three[17] = stale;
  CHECK(run(CPU_ONLY, three, &out, &err) == 0);
  free(out), free(err);
  CHECK(ck_step(stale) == 3);
  /* The cluster's runs: 2 tasks of 2 towers, --checkpoint ck.safetensors in each folder. */
  const char *tasks[24];
  memcpy(tasks, single, sizeof single);
  tasks[15] = "2";
  tasks[16] = "--cluster";
  tasks[17] = "mpi";

  /* Only task 1 holds a checkpoint (a stale one): nobody resumes. */
  CHECK(copy_file(stale, ck1));
  CHECK(run_split((const char *const *)argv, argc, d0, d1, tasks, &out, &err) == 0);
  double loss[16];
  int64_t steps[16];
  int n = json_steps(out, "mean_loss", loss, steps, 16);
  CHECK_MSG(n == 6 && steps[0] == 0, "task 0 logged %d steps from step %lld:\n%s", n,
            n ? (long long)steps[0] : -1LL, out);
  free(out), free(err);
  int compared = 0;
  double d = ck_diff(one, ck0, &compared);
  CHECK_MSG(compared >= 20 && d < 1e-5,
            "after 6 steps the weights differ from one process's by %g (%d tensors)", d, compared);
  CHECK(ck_step(ck1) == 3); /* task 1 never writes */

  /* Only task 0 holds one: every task fails before any step, saying why. */
  tasks[8] = "8";
  unlink(ck1);
  CHECK(run_split((const char *const *)argv, argc, d0, d1, tasks, &out, &err) != 0);
  CHECK_CONTAINS(err, "task 0 resumes from ck.safetensors, but task 1 cannot read it: every task "
                      "restores the checkpoint from that path");
  CHECK(json_steps(out, "mean_loss", loss, steps, 16) == 0);
  CHECK(ck_step(ck0) == 6);
  free(out), free(err);

  /* Task 1 holds another file there. */
  CHECK(copy_file(stale, ck1));
  CHECK(run_split((const char *const *)argv, argc, d0, d1, tasks, &out, &err) != 0);
  CHECK_CONTAINS(err, "task 0 resumes from ck.safetensors, but task 1 holds another file there");
  CHECK(ck_step(ck0) == 6);
  free(out), free(err);

  /* The same file on both: both resume from step 6. */
  CHECK(copy_file(ck0, ck1));
  CHECK(run_split((const char *const *)argv, argc, d0, d1, tasks, &out, &err) == 0);
  n = json_steps(out, "mean_loss", loss, steps, 16);
  CHECK_MSG(n == 2 && steps[0] == 6, "task 0 logged %d steps from step %lld:\n%s", n,
            n ? (long long)steps[0] : -1LL, out);
  CHECK(ck_step(ck0) == 8);
  free(out), free(err);
}

/* test_train_cli [--mpi MPIRUN ARGS...]: with --mpi, only the cluster test; with --mpi-resume
 * MPIRUN ARGS... (no -np), only the cluster's resume test. */
int main(int argc, char **argv)
{
  const char *bin = getenv("CLG_BINARY_DIR");
  snprintf(g_bin, sizeof g_bin, "%s/clgraph", bin ? bin : ".");
  snprintf(g_dir, sizeof g_dir, "/tmp/clg-train-XXXXXX");
  CHECK(mkdtemp(g_dir) != NULL);
  make_dataset();
  bool resume = argc > 2 && strcmp(argv[1], "--mpi-resume") == 0;
  if (argc > 2 && (strcmp(argv[1], "--mpi") == 0 || resume)) {
    if (resume)
      test_mpi_resume(argc - 2, argv + 2);
    else
      test_mpi(argc - 2, argv + 2);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    CHECK(system(cmd) == 0);
    return clg_test_summary(resume ? "test_train_cli --mpi-resume" : "test_train_cli --mpi");
  }

  char ck_cpu[400], ck_two[400];
  snprintf(ck_cpu, sizeof ck_cpu, "%s/cpu.safetensors", g_dir);
  snprintf(ck_two, sizeof ck_two, "%s/two.safetensors", g_dir);
  long long right = train_and_eval("CPU:0", CPU_ONLY, "1", ck_cpu, 40);
  CHECK_MSG(right > 20, "after 40 steps %lld of 100 test images are right (chance: 10)", right);
  train_and_eval("two stand-ins", TWO_STANDINS, "2", ck_two, 20);
  test_resume_exact();
  test_kill_resume();
  test_interrupt();
  test_towers_match(ck_cpu);
  test_pictures();
  test_bad_input();
  test_bad_files();

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  CHECK(system(cmd) == 0);
  return clg_test_summary("test_train_cli");
}
