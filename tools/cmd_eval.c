/* clgraph eval: TensorFlow's cifar10_eval.py on clgraph's public API. The model's variables
 * take the moving averages that training kept (or, with --raw, the trained values) from the
 * checkpoint; every image of the test split goes through the evaluation crop and the model
 * once, and in_top_k(logits, labels, 1) counts the right answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cifar10_input.h"
#include "cifar10_model.h"
#include "cifar10_run.h"
#include "clgraph.h"
#include "tool.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph eval [--dataset cifar10|digits|synthetic] [--data-dir DIR]\n"
             "                    --checkpoint FILE [--raw] [--batch N] [--json]\n"
             "                    [--log-device-placement]\n\n"
             "Precision @ 1 of the checkpoint's model over the test split (CIFAR-10:\n"
             "test_batch.bin; digits: every fifth row of digits.csv.gz), with the moving\n"
             "averages of the weights as the tutorial evaluates (--raw: the weights themselves).\n"
             "Prints \"precision @ 1 = P\"; --json prints one object instead.\n");
}

/* The checkpoint's global_step, or -1 when it has none. */
static long long checkpoint_step(const char *path)
{
  clg_checkpoint *ck = NULL;
  long long step = -1;
  if (clg_checkpoint_open(path, &ck) != CLG_OK)
    return -1;
  for (int i = 0; i < clg_checkpoint_num_tensors(ck); i++) {
    clg_checkpoint_tensor info;
    clg_tensor *t = NULL;
    if (clg_checkpoint_tensor_info(ck, i, &info) == CLG_OK &&
        strcmp(info.name, "global_step") == 0 && info.type == CLG_INT64 && info.rank == 0 &&
        clg_checkpoint_read(ck, i, &t) == CLG_OK) {
      step = (long long)*(const int64_t *)clg_tensor_data(t);
      clg_tensor_free(t);
    }
  }
  clg_checkpoint_close(ck);
  return step;
}

/* Every test record once: batch b holds records b*batch..; the last batch wraps around,
 * and only its first rows count. The number right into *correct; false after a message. */
static bool count_correct(clg_session *s, const input_dataset *d, int batch, clg_node *images,
                          clg_node *labels, clg_node *top, clg_tensor *img, clg_tensor *lab,
                          int64_t *correct)
{
  const int64_t n = input_dataset_num_records(d);
  input_options io = {.batch = batch, .towers = 1, .prefetch = 1};
  clg_output feeds_at[2] = {clg_out(images, 0), clg_out(labels, 0)}, fetch = clg_out(top, 0);
  clg_tensor *feeds[2] = {img, lab};
  *correct = 0;
  for (int64_t b = 0; b * batch < n; b++) {
    input_fill_batch(d, &io, b, clg_tensor_data(img), clg_tensor_data(lab));
    clg_tensor *hit = NULL;
    if (clg_session_run_outputs(s, 2, feeds_at, feeds, 1, &fetch, &hit, 0, NULL) != CLG_OK) {
      fprintf(stderr, "clgraph eval: batch %lld: %s\n", (long long)b, clg_last_error());
      return false;
    }
    const bool *h = clg_tensor_data(hit);
    int64_t valid = n - b * batch < batch ? n - b * batch : batch;
    for (int64_t i = 0; i < valid; i++)
      *correct += h[i];
    clg_tensor_free(hit);
  }
  return true;
}

/* The tutorial's precision line (or one JSON object). */
static void print_precision(int64_t correct, int64_t n, input_dataset_kind kind, const char *path,
                            bool raw, bool json)
{
  double precision = (double)correct / (double)n;
  long long step = checkpoint_step(path);
  if (json) {
    json_t *o = json_pack("{s:f, s:I, s:I, s:s, s:s, s:I, s:s}", "precision_at_1", precision,
                          "correct", (json_int_t)correct, "total", (json_int_t)n, "dataset",
                          input_dataset_name(kind), "checkpoint", path, "global_step",
                          (json_int_t)step, "weights", raw ? "raw" : "moving_averages");
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    printf("%s\n", text ? text : "{}");
    free(text);
    json_decref(o);
  } else {
    char stamp[64];
    cifar10_timestamp(stamp, sizeof stamp);
    printf("%s: precision @ 1 = %.3f\n", stamp, precision);
    printf("(%lld of %lld %s test images right; checkpoint %s at step %lld, %s)\n",
           (long long)correct, (long long)n, input_dataset_name(kind), path, step,
           raw ? "raw weights" : "moving averages of the weights");
  }
}

int clg_tool_eval(int argc, char **argv)
{
  const char *ds = NULL, *dir = NULL, *path = NULL;
  int batch = 128;
  bool raw = false, json = false, log_placement = false;
  clg_tool_opt opts[] = {{"--dataset", CLG_TOOL_STRING, .meta = "NAME", .text = &ds},
                         {"--data-dir", CLG_TOOL_STRING, .meta = "DIR", .text = &dir},
                         {"--checkpoint", CLG_TOOL_STRING, .meta = "FILE",
                          .help = "what clgraph train saved", .required = true, .text = &path},
                         {"--batch", CLG_TOOL_INT, .min = 1, .max = 1 << 16, .integer = &batch},
                         {"--raw", CLG_TOOL_FLAG, .flag = &raw},
                         {"--json", CLG_TOOL_FLAG, .flag = &json},
                         {"--log-device-placement", CLG_TOOL_FLAG, .flag = &log_placement},
                         {NULL}};
  clg_tool_cmd cmd = {.name = "eval", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  input_dataset_kind kind = INPUT_SYNTHETIC;
  if (ds && !input_dataset_parse(ds, &kind)) {
    fprintf(stderr, "clgraph eval: --dataset '%s': want cifar10, digits or synthetic\n", ds);
    return 2;
  }
  if (kind != INPUT_SYNTHETIC && !dir) {
    fprintf(stderr, "clgraph eval: --dataset %s needs --data-dir DIR\n", input_dataset_name(kind));
    return 2;
  }

  char err[512];
  input_dataset *d = input_dataset_load(kind, dir, false, 0, err, sizeof err);
  if (!d) {
    fprintf(stderr, "clgraph eval: %s\n", err);
    return 1;
  }
  const int size = input_dataset_image_size(d), ch = input_dataset_channels(d);
  int64_t idims[4] = {batch, size, size, ch}, ldims[1] = {batch};
  clg_graph *g = clg_graph_new();
  clg_graph_push_device(g, "/device:GPU:0");
  clg_node *images = clg_placeholder(g, "images", CLG_FLOAT32, 4, idims);
  clg_node *labels = clg_placeholder(g, "labels", CLG_INT32, 1, ldims);
  cifar10_model m;
  cifar10_build(g, images, labels, batch, size, ch, "/cpu:0", &m);
  clg_node *top = clg_in_top_k(g, "top_k_op", m.logits, labels, 1);
  clg_graph_pop_device(g);
  cifar10_assigner assign;
  cifar10_assigner_build(g, m.vars, NULL, &assign);

  clg_session *s = NULL;
  clg_tensor *img = clg_tensor_new(CLG_FLOAT32, 4, idims, NULL);
  clg_tensor *lab = clg_tensor_new(CLG_INT32, 1, ldims, NULL);
  int rc = 1;
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = 1;
  opt.log_device_placement = log_placement;
  if (clg_graph_status(g) != CLG_OK) {
    fprintf(stderr, "clgraph eval: building the model: %s\n", clg_graph_error(g));
    goto done;
  }
  if (!img || !lab) {
    fprintf(stderr, "clgraph eval: out of host memory for a batch of %d images\n", batch);
    goto done;
  }
  cifar10_count_soft_placements(!opt.log_device_placement);
  clg_code made = clg_session_new(g, &opt, &s);
  cifar10_count_soft_placements(false);
  if (made != CLG_OK) {
    fprintf(stderr, "clgraph eval: %s\n", clg_last_error());
    goto done;
  }
  if (!cifar10_assigner_run(&assign, s, path, raw ? CIFAR10_FROM_RAW : CIFAR10_FROM_AVERAGES,
                            false)) {
    fprintf(stderr, "clgraph eval: %s\n", cifar10_assigner_error(&assign));
    goto done;
  }

  int64_t correct = 0;
  if (!count_correct(s, d, batch, images, labels, top, img, lab, &correct))
    goto done;
  print_precision(correct, input_dataset_num_records(d), kind, path, raw, json);
  rc = 0;
done:
  clg_tensor_free(img);
  clg_tensor_free(lab);
  clg_session_free(s);
  cifar10_assigner_free(&assign);
  clg_graph_free(g);
  input_dataset_free(d);
  return rc;
}
