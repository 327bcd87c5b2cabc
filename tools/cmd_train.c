/* clgraph train: TensorFlow's cifar10_multi_gpu_train.py on clgraph's public API. Read it
 * beside the tutorial: variables on /cpu:0, one tower per /device:GPU:i under name scope
 * tower_i sharing them, each tower's gradients averaged on the CPU, gradient descent with a
 * staircase-decayed learning rate, moving averages of the weights for evaluation, the
 * tutorial's log line every --log-every steps and a checkpoint every 1,000 steps. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cifar10_input.h"
#include "cifar10_model.h"
#include "cifar10_run.h"
#include "clgraph.h"
#include "core/core.h"
#include "pictures.h"
#include "tool.h"

typedef struct train_config {
  input_dataset_kind dataset;
  const char *data_dir, *checkpoint, *init_checkpoint;
  int towers, batch, steps, log_every, save_every, seed;
  double lr, epochs_per_decay;
  bool distort, shuffle, json, log_placement, quiet;
  const char *cluster; /* --cluster mpi (or CLGRAPH_CLUSTER) */
  int task, num_tasks; /* this process's MPI task and their number (0 and 1 alone) */
  bool chief;          /* task 0: the one that prints */
} train_config;

static volatile sig_atomic_t g_stop; /* Ctrl-C or SIGTERM: save and leave */

static void on_signal(int sig)
{
  g_stop = sig;
  signal(sig, SIG_DFL); /* a second one ends the process at once */
}

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph train [--dataset cifar10|digits|synthetic] [--data-dir DIR]\n"
             "                     [--towers N] [--batch N] [--steps N] [--lr X] [--seed N]\n"
             "                     [--epochs-per-decay X] [--checkpoint FILE]\n"
             "                     [--init-checkpoint FILE] [--save-every N]\n"
             "                     [--no-distort] [--no-shuffle] [--log-every N]\n"
             "                     [--log-device-placement] [--json] [--quiet]\n"
             "                     [--cluster mpi]\n\n"
             "Trains the CIFAR-10 tutorial's model with one tower per /device:GPU:i (soft\n"
             "placement: /cpu:0 when there is no such GPU), variables on /cpu:0.\n"
             "  --dataset         cifar10 (DIR/cifar-10-batches-bin/), digits (DIR/digits.csv.gz,\n"
             "                    8x8x1; see README), synthetic (random images; the default)\n"
             "  --towers N        towers, one per GPU (default 1); --batch is per tower\n"
             "                    (default 128; 64 for the digits)\n"
             "  --steps N         training steps (default 1000000 for cifar10, 1500 for digits,\n"
             "                    100 for synthetic); --lr X the initial learning rate (0.1)\n"
             "  --epochs-per-decay X  the rate drops tenfold every X epochs (350; 40 for digits)\n"
             "  --checkpoint FILE saved every --save-every steps (1000) and at the end; training\n"
             "                    resumes from it when it exists\n"
             "  --init-checkpoint FILE   start from these weights\n"
             "  --no-distort      train on the evaluation crop; --no-shuffle: records in file\n"
             "                    order (tower t of T reads batch s*T+t at step s)\n"
             "  --log-every N     the tutorial's line every N steps (10); --json: one JSON\n"
             "                    object per logged step instead; --quiet: no progress bar\n"
             "  --cluster mpi     under `mpirun -np P` (or CLGRAPH_CLUSTER=mpi): P tasks of N\n"
             "                    towers train as one process of P*N towers (AllReduce of the\n"
             "                    gradients); task K's tower t reads batch s*P*N + K*N + t;\n"
             "                    task 0 prints and saves\n"
             "Ctrl-C saves the checkpoint and exits with status 130.\n");
  clg_tool_pictures_usage(f, true, true);
}

/* --- the loop -------------------------------------------------------------------------- */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress(int64_t step, int64_t last, int64_t first, double elapsed, float loss)
{
  enum { WIDTH = 30 };
  double frac = last > first ? (double)(step - first) / (double)(last - first) : 1.0;
  int fill = (int)(frac * WIDTH);
  char bar[WIDTH + 1];
  for (int i = 0; i < WIDTH; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = 0;
  double left = frac > 0 ? elapsed / frac - elapsed : 0;
  fprintf(stderr, "\r[%s] step %lld/%lld, loss %.3f, %.0f s left   ", bar, (long long)step,
          (long long)last, loss, left);
  fflush(stderr);
}

/* The step count into *step; false (with the session's error) when it cannot be read. */
static bool read_step(clg_session *s, clg_node *global_step, int64_t *step)
{
  clg_tensor *v = NULL;
  if (clg_session_run(s, 0, NULL, NULL, 1, &global_step, &v) != CLG_OK)
    return false;
  *step = *(const int64_t *)clg_tensor_data(v);
  clg_tensor_free(v);
  return true;
}

static bool save(const train_config *c, clg_session *s, int64_t step)
{
  if (!c->checkpoint)
    return true;
  if (clg_session_save(s, c->checkpoint, 0, NULL) != CLG_OK) {
    fprintf(stderr, "clgraph train: saving step %lld: %s\n", (long long)step, clg_last_error());
    return false;
  }
  return true;
}

/* One step's losses, freeing their tensors. The tutorial logs the last tower's loss; the
 * mean over towers is the loss of the whole step's batch (what one tower with T times the batch
 * would log). */
static float step_losses(const cifar10_train_graph *t, int T, clg_tensor **loss_v,
                         float *tower_loss, double *mean)
{
  double mean_loss = 0;
  for (int i = 0; i < T; i++) {
    tower_loss[i] = *(const float *)clg_tensor_data(loss_v[i]);
    mean_loss += tower_loss[i] / (double)T;
    clg_tensor_free(loss_v[i]);
  }
  if (t->mean_loss) {
    mean_loss = *(const float *)clg_tensor_data(loss_v[T]);
    clg_tensor_free(loss_v[T]);
  }
  *mean = mean_loss;
  return tower_loss[T - 1];
}

/* The tutorial's log line (or a JSON object) for one step; input_wait is the mean wait per
 * step since the last line. */
static void log_step(const train_config *c, int T, int64_t step, float loss, double mean_loss,
                     const float *tower_loss, double duration, double input_wait, bool bar)
{
  const int gpus = T * c->num_tasks; /* the tutorial's num_gpus, over all tasks */
  double eps = (double)c->batch * gpus / duration, spb = duration / gpus;
  if (bar)
    fprintf(stderr, "\r\033[K");
  if (c->json) {
    printf("{\"step\": %lld, \"loss\": %.9g, \"mean_loss\": %.9g, \"tower_losses\": [",
           (long long)step, (double)loss, mean_loss);
    for (int i = 0; i < T; i++)
      printf("%s%.9g", i ? ", " : "", (double)tower_loss[i]);
    printf("], \"examples_per_sec\": %.1f, \"sec_per_batch\": %.5f, \"step_sec\": %.5f, "
           "\"input_wait_sec\": %.5f, \"towers\": %d, \"tasks\": %d, \"batch\": %d}\n",
           eps, spb, duration, input_wait, T, c->num_tasks, c->batch);
  } else {
    char stamp[64];
    cifar10_timestamp(stamp, sizeof stamp);
    printf("%s: step %lld, loss = %.2f (%.1f examples/sec; %.3f sec/batch) input wait "
           "%.4f sec/step\n",
           stamp, (long long)step, (double)loss, eps, spb, input_wait);
  }
  fflush(stdout);
}

/* After the steps: the final checkpoint, and what an interrupt or a finished run says. */
static int finish_training(const train_config *c, clg_session *s, const cifar10_train_graph *t)
{
  int64_t done = 0;
  if (!read_step(s, t->global_step, &done)) {
    fprintf(stderr, "clgraph train: reading global_step: %s\n", clg_last_error());
    return 1;
  }
  if (!save(c, s, done))
    return 1;
  if (g_stop) {
    fprintf(stderr, "clgraph train: interrupted at step %lld%s%s\n", (long long)done,
            c->checkpoint ? "; checkpoint saved to " : "", c->checkpoint ? c->checkpoint : "");
    return 130;
  }
  if (!c->json && c->checkpoint && c->chief)
    printf("checkpoint at step %lld saved to %s\n", (long long)done, c->checkpoint);
  return 0;
}

static int train_loop(const train_config *c, const input_dataset *d, cifar10_train_graph *t,
                      clg_session *s, int64_t first)
{
  const int T = c->towers, size = input_dataset_image_size(d), ch = input_dataset_channels(d);
  int64_t idims[4] = {c->batch, size, size, ch}, ldims[1] = {c->batch};
  clg_tensor *img[CIFAR10_MAX_TOWERS] = {0}, *lab[CIFAR10_MAX_TOWERS] = {0};
  clg_output feeds_at[2 * CIFAR10_MAX_TOWERS];
  clg_tensor *feeds[2 * CIFAR10_MAX_TOWERS];
  for (int i = 0; i < T; i++) {
    img[i] = clg_tensor_new(CLG_FLOAT32, 4, idims, NULL);
    lab[i] = clg_tensor_new(CLG_INT32, 1, ldims, NULL);
    feeds_at[2 * i] = clg_out(t->images[i], 0);
    feeds_at[2 * i + 1] = clg_out(t->labels[i], 0);
    feeds[2 * i] = img[i];
    feeds[2 * i + 1] = lab[i];
  }
  input_options io = {.batch = c->batch,
                      .distort = c->distort,
                      .shuffle = c->shuffle,
                      .seed = (uint64_t)c->seed,
                      .towers = T,
                      .batches_per_step = (int64_t)T * c->num_tasks,
                      .tower_offset = (int64_t)T * c->task,
                      .first_step = first,
                      .prefetch = 2 * T};
  input_reader *reader = input_reader_start(d, &io);
  bool have_memory = reader != NULL;
  for (int i = 0; i < T; i++)
    have_memory = have_memory && img[i] && lab[i];
  if (!have_memory) {
    fprintf(stderr, "clgraph train: out of host memory for %d batches of %d images\n", T, c->batch);
    input_reader_stop(reader);
    for (int i = 0; i < T; i++) {
      clg_tensor_free(img[i]);
      clg_tensor_free(lab[i]);
    }
    return 1;
  }
  const bool bar = !c->json && !c->quiet && c->chief && isatty(STDERR_FILENO);
  /* The towers' losses, then in a cluster the mean over every task's towers. */
  clg_output loss_at[CIFAR10_MAX_TOWERS + 1];
  for (int i = 0; i < T; i++)
    loss_at[i] = clg_out(t->towers[i].loss, 0);
  const int num_fetches = t->mean_loss ? T + 1 : T;
  if (t->mean_loss)
    loss_at[T] = clg_out(t->mean_loss, 0);
  int rc = 0;
  int64_t step = first;
  double t_start = now_s(), input_wait = 0, last_draw = 0;
  int since_log = 0;
  for (; step < c->steps && !g_stop; step++) {
    double wait = 0;
    for (int i = 0; i < T; i++)
      wait += input_reader_next(reader, clg_tensor_data(img[i]), clg_tensor_data(lab[i]));
    double t0 = now_s();
    clg_tensor *loss_v[CIFAR10_MAX_TOWERS + 1] = {0};
    if (clg_session_run_outputs(s, 2 * T, feeds_at, feeds, num_fetches, loss_at, loss_v, 1,
                                &t->train_op) != CLG_OK) {
      fprintf(stderr, "clgraph train: step %lld: %s\n", (long long)step, clg_last_error());
      rc = 1;
      break;
    }
    double duration = now_s() - t0;
    float tower_loss[CIFAR10_MAX_TOWERS];
    double mean_loss = 0;
    float loss = step_losses(t, T, loss_v, tower_loss, &mean_loss);
    input_wait += wait;
    since_log++;
    if (!isfinite(loss)) {
      fprintf(stderr, "clgraph train: step %lld: the loss diverged (%g); lower --lr\n",
              (long long)step, (double)loss);
      rc = 1;
      break;
    }
    if (step % c->log_every == 0 && c->chief) {
      log_step(c, T, step, loss, mean_loss, tower_loss, duration, input_wait / since_log, bar);
      input_wait = 0;
      since_log = 0;
    }
    /* At most ten redraws a second: small models run thousands of steps a second. */
    if (bar && (now_s() - last_draw > 0.1 || step + 1 == c->steps)) {
      progress(step + 1, c->steps, first, now_s() - t_start, loss);
      last_draw = now_s();
    }
    if ((step + 1) % c->save_every == 0 && !save(c, s, step + 1)) {
      rc = 1;
      break;
    }
  }
  if (bar)
    fprintf(stderr, "\r\033[K");
  input_reader_stop(reader);
  for (int i = 0; i < T; i++) {
    clg_tensor_free(img[i]);
    clg_tensor_free(lab[i]);
  }
  if (rc == 0)
    rc = finish_training(c, s, t);
  return rc;
}

/* --- options --------------------------------------------------------------------------- */

/* Reads the command line into c and pictures (the trace and the profile hold the last 10
 * steps); CLG_TOOL_RUN, or the exit status. */
static int parse_config(int argc, char **argv, train_config *c, clg_tool_pictures *pictures)
{
  memset(c, 0, sizeof *c);
  const char *ds = NULL;
  bool no_distort = false, no_shuffle = false;
  c->towers = 1;
  c->log_every = 10;
  c->save_every = 1000;
  clg_tool_pictures_init(pictures, "train", 10);
  clg_tool_opt opts[] = {
      {"--dataset", CLG_TOOL_STRING, .meta = "NAME", .text = &ds},
      {"--data-dir", CLG_TOOL_STRING, .meta = "DIR", .text = &c->data_dir},
      {"--towers", CLG_TOOL_INT, .min = 1, .max = CIFAR10_MAX_TOWERS, .integer = &c->towers},
      {"--batch", CLG_TOOL_INT, .min = 1, .max = 1 << 16, .integer = &c->batch},
      {"--steps", CLG_TOOL_INT, .min = 0, .max = 2000000000, .integer = &c->steps},
      {"--lr", CLG_TOOL_FLOAT, .min = 0, .max = 1e6, .number = &c->lr},
      {"--seed", CLG_TOOL_INT, .min = 0, .max = 2147483647, .integer = &c->seed},
      {"--checkpoint", CLG_TOOL_STRING, .meta = "FILE", .text = &c->checkpoint},
      {"--init-checkpoint", CLG_TOOL_STRING, .meta = "FILE", .text = &c->init_checkpoint},
      {"--log-every", CLG_TOOL_INT, .min = 1, .max = 1 << 30, .integer = &c->log_every},
      {"--save-every", CLG_TOOL_INT, .min = 1, .max = 1 << 30, .integer = &c->save_every},
      {"--epochs-per-decay", CLG_TOOL_FLOAT, .min = 1e-3, .max = 1e9,
       .number = &c->epochs_per_decay},
      {"--cluster", CLG_TOOL_STRING, .meta = "mpi", .text = &c->cluster},
      {"--no-distort", CLG_TOOL_FLAG, .flag = &no_distort},
      {"--no-shuffle", CLG_TOOL_FLAG, .flag = &no_shuffle},
      {"--log-device-placement", CLG_TOOL_FLAG, .flag = &c->log_placement},
      {"--json", CLG_TOOL_FLAG, .flag = &c->json},
      {"--quiet", CLG_TOOL_FLAG, .flag = &c->quiet},
      clg_tool_profile_opt(pictures),
      clg_tool_trace_opt(pictures),
      clg_tool_memory_map_opt(pictures),
      clg_tool_memory_map_device_opt(pictures),
      {NULL}};
  clg_tool_cmd cmd = {.name = "train", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  c->distort = !no_distort;
  c->shuffle = !no_shuffle;
  c->dataset = INPUT_SYNTHETIC;
  if (ds && !input_dataset_parse(ds, &c->dataset)) {
    fprintf(stderr, "clgraph train: --dataset '%s': want cifar10, digits or synthetic\n", ds);
    return 2;
  }
  /* The defaults that depend on the dataset. */
  const bool digits = c->dataset == INPUT_DIGITS;
  if (!clg_tool_given(opts, "--batch"))
    c->batch = digits ? CIFAR10_DIGITS_BATCH : 128;
  if (!clg_tool_given(opts, "--steps"))
    c->steps = c->dataset == INPUT_CIFAR10 ? 1000000 : digits ? CIFAR10_DIGITS_STEPS : 100;
  if (!clg_tool_given(opts, "--lr"))
    c->lr = digits ? CIFAR10_DIGITS_LR : 0.1;
  if (!clg_tool_given(opts, "--epochs-per-decay"))
    c->epochs_per_decay = digits ? CIFAR10_DIGITS_EPOCHS_PER_DECAY : CIFAR10_EPOCHS_PER_DECAY;
  if (c->dataset != INPUT_SYNTHETIC && !c->data_dir) {
    fprintf(stderr, "clgraph train: --dataset %s needs --data-dir DIR (%s)\n",
            input_dataset_name(c->dataset),
            digits ? "the folder holding digits.csv.gz; ci/get-digits.sh DIR extracts it"
                   : "the folder holding cifar-10-batches-bin/");
    return 2;
  }
  return clg_tool_pictures_check(pictures) ? CLG_TOOL_RUN : 2;
}

/* Under mpirun with a cluster asked for (--cluster mpi or CLGRAPH_CLUSTER=mpi): this task
 * and the number of tasks, from a session on an empty graph (the graph to build depends on
 * them). Alone: 0 and 1. False with a message when the cluster cannot be joined. */
static bool find_tasks(train_config *c)
{
  const char *kind = c->cluster ? c->cluster : getenv("CLGRAPH_CLUSTER");
  c->task = 0;
  c->num_tasks = 1;
  if (!kind || !*kind)
    return true;
  clg_graph *g = clg_graph_new();
  clg_session *s = NULL;
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.cluster = c->cluster;
  bool ok = clg_session_new(g, &opt, &s) == CLG_OK;
  if (ok)
    clg_session_task(s, &c->task, &c->num_tasks);
  else
    fprintf(stderr, "clgraph train: joining the cluster: %s\n", clg_last_error());
  clg_session_free(s);
  clg_graph_free(g);
  return ok;
}

/* FNV-1a of the bytes of path; false when it is not a regular file this task can read
 * (opened as every reader opens one, by clg_file_open_read: a FIFO refused at once). It
 * reads the whole checkpoint, on every task, once per run that resumes: the only sure way to
 * know that the tasks see the same file (a size and a time could agree on different bytes),
 * and little beside the restore that then reads it all again. */
static bool file_hash(const char *path, uint64_t *hash)
{
  int fd;
  if (clg_file_open_read(path, &fd) != CLG_OK)
    return false;
  uint64_t h = 14695981039346656037ull;
  unsigned char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; i++)
      h = (h ^ buf[i]) * 1099511628211ull;
  close(fd);
  *hash = h;
  return n == 0;
}

/* Appends task t to a list ("1", "1, 3") of *count tasks. */
static void list_task(char *list, size_t size, int *count, int t)
{
  size_t len = strlen(list);
  if (len < size)
    snprintf(list + len, size - len, "%s%d", *count ? ", " : "", t);
  (*count)++;
}

/* Whether training resumes from --checkpoint: alone, when the file exists. In a cluster the
 * tasks must start alike whatever each one's file system holds: task 0 decides from its own
 * and tells the others (an AllReduce in which each task fills its own slots), and when it
 * resumes every task restores from the same path, so each must read the same file there (a
 * shared file system); a task that cannot, or holds another file, makes every task fail
 * before any restore. False with a message (task 0's) then. */
static bool decide_resume(const train_config *c, bool *resume)
{
  struct stat st;
  *resume = false;
  if (!c->checkpoint)
    return true;
  bool here = stat(c->checkpoint, &st) == 0;
  if (c->num_tasks == 1) {
    *resume = here;
    return true;
  }
  const int P = c->num_tasks;
  uint64_t hash = 0;
  bool readable = here && file_hash(c->checkpoint, &hash);
  int64_t dims[1] = {3 * (int64_t)P};
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, "/cpu:0");
  clg_node *x = clg_placeholder(g, "resume_facts", CLG_INT64, 1, dims);
  clg_node *y = clg_all_reduce(g, "resume_decision", x, "sum");
  clg_graph_pop_device(g);
  clg_tensor *in = clg_tensor_new(CLG_INT64, 1, dims, NULL), *out = NULL;
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.cluster = c->cluster;
  clg_session *s = NULL;
  bool ok = in && clg_session_new(g, &opt, &s) == CLG_OK;
  if (ok) {
    int64_t *v = clg_tensor_data(in);
    v[3 * c->task] = here;
    v[3 * c->task + 1] = readable;
    v[3 * c->task + 2] = (int64_t)hash;
    ok = clg_session_run(s, 1, &x, &in, 1, &y, &out) == CLG_OK;
  }
  if (!ok)
    fprintf(stderr, "clgraph train: deciding whether to resume from %s: %s\n", c->checkpoint,
            clg_last_error());
  const int64_t *all = ok ? clg_tensor_const_data(out) : NULL;
  if (ok && all[0]) {
    char cannot[256] = "", other[256] = "";
    int ncannot = 0, nother = 0;
    for (int t = 0; t < P; t++)
      if (!all[3 * t + 1])
        list_task(cannot, sizeof cannot, &ncannot, t);
      else if (all[3 * t + 2] != all[2])
        list_task(other, sizeof other, &nother, t);
    if (ncannot || nother) {
      ok = false;
      if (c->chief)
        fprintf(stderr,
                "clgraph train: task 0 resumes from %s, but %s%s%s%s%s%s%s: every task restores "
                "the checkpoint from that path, so they must see the same file there (one "
                "shared file system)\n",
                c->checkpoint, ncannot ? (ncannot == 1 ? "task " : "tasks ") : "", cannot,
                ncannot ? " cannot read it" : "", ncannot && nother ? ", and " : "",
                nother ? (nother == 1 ? "task " : "tasks ") : "", other,
                nother == 1 ? " holds another file there"
                : nother    ? " hold another file there"
                            : "");
    } else {
      *resume = true;
    }
  }
  clg_tensor_free(in);
  clg_tensor_free(out);
  clg_session_free(s);
  clg_graph_free(g);
  return ok;
}

int clg_tool_train(int argc, char **argv)
{
  train_config c;
  clg_tool_pictures pictures;
  int parsed = parse_config(argc, argv, &c, &pictures);
  if (parsed != CLG_TOOL_RUN)
    return parsed;

  if (!find_tasks(&c))
    return 1;
  c.chief = c.task == 0;
  char err[512];
  input_dataset *d =
      input_dataset_load(c.dataset, c.data_dir, true, (uint64_t)c.seed, err, sizeof err);
  if (!d) {
    fprintf(stderr, "clgraph train: %s\n", err);
    return 1;
  }
  cifar10_train_graph t;
  clg_session *s = NULL;
  int rc = 1;
  cifar10_train_options to = {c.towers,
                              c.batch,
                              input_dataset_image_size(d),
                              input_dataset_channels(d),
                              input_dataset_num_records(d),
                              c.lr,
                              c.epochs_per_decay,
                              c.seed,
                              c.num_tasks};
  if (!cifar10_train_build(&to, &t)) {
    fprintf(stderr, "clgraph train: building the model: %s\n", clg_graph_error(t.g));
    goto done;
  }
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = 1;
  opt.log_device_placement = c.log_placement;
  opt.cluster = c.cluster;
  cifar10_count_soft_placements(!c.log_placement);
  clg_code made = clg_session_new(t.g, &opt, &s);
  cifar10_count_soft_placements(false);
  if (made != CLG_OK) {
    fprintf(stderr, "clgraph train: %s\n", clg_last_error());
    goto done;
  }
  if (!c.json && c.chief)
    cifar10_print_mapping(stdout, s, t.towers, c.towers);
  clg_tool_pictures_setup(&pictures, s);

  /* Start: the initializers, then a checkpoint to resume from or weights to start from. */
  bool resume = false;
  if (!decide_resume(&c, &resume))
    goto done;
  if (clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &t.init) != CLG_OK) {
    fprintf(stderr, "clgraph train: initializing: %s\n", clg_last_error());
    goto done;
  }
  if (resume) {
    if (clg_session_restore(s, c.checkpoint, 0, NULL) != CLG_OK) {
      fprintf(stderr, "clgraph train: resuming from %s: %s\n", c.checkpoint, clg_last_error());
      goto done;
    }
  } else if (c.init_checkpoint &&
             !cifar10_assigner_run(&t.assign, s, c.init_checkpoint, CIFAR10_FROM_RAW, true)) {
    fprintf(stderr, "clgraph train: --init-checkpoint: %s\n", cifar10_assigner_error(&t.assign));
    goto done;
  }
  int64_t first = 0;
  if (!read_step(s, t.global_step, &first)) {
    fprintf(stderr, "clgraph train: reading global_step: %s\n", clg_last_error());
    goto done;
  }
  if (first < 0) { /* only a checkpoint can hold one */
    fprintf(stderr, "clgraph train: %s%s%sglobal_step is %lld; a step count is never negative\n",
            resume ? "resuming from " : "", resume ? c.checkpoint : "", resume ? ": " : "",
            (long long)first);
    goto done;
  }
  if (resume && !c.json)
    printf("resuming from %s at step %lld\n", c.checkpoint, (long long)first);
  fflush(stdout);

  g_stop = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  rc = train_loop(&c, d, &t, s, first);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if ((rc == 0 || rc == 130) && clg_tool_pictures_wanted(&pictures) &&
      (!clg_tool_pictures_finish(&pictures, s) || !clg_tool_pictures_done(&pictures)))
    rc = 1;
done:
  cifar10_assigner_free(&t.assign);
  clg_session_free(s);
  clg_graph_free(t.g);
  input_dataset_free(d);
  return rc;
}
