/* clgraph export: the model clgraph train trained, as a frozen GraphDef that other programs
 * (and clgraph run) load: TensorFlow's freeze_graph over cifar10.inference. The inference
 * graph is built as clgraph eval builds it (no device scopes: the file pins no device), its
 * variables set from the checkpoint (the moving averages, as eval, or --raw), and the subgraph
 * from the placeholder "images" to the Identity "logits" written with each variable a Const. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cifar10_model.h"
#include "cifar10_run.h"
#include "clgraph.h"
#include "tool.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph export --checkpoint FILE --output FILE.pb [--raw] [--batch N]\n"
             "                      [--dataset cifar10|digits|synthetic]\n\n"
             "Writes the CIFAR-10 model of a checkpoint of clgraph train as a frozen binary\n"
             "TensorFlow GraphDef: input \"images\" [N,24,24,3] (digits: [N,8,8,1]) float32,\n"
             "output \"logits\" [N,10]; the variables become Consts holding the checkpoint's\n"
             "moving averages (--raw: the trained values). N is --batch (default 1). The\n"
             "dataset (the image size) follows from the checkpoint unless given.\n");
}

/* The image size and channels the checkpoint's conv1/weights [5,5,C,64] were trained for:
 * 3 channels are CIFAR-10's 24x24 crops, 1 the 8x8 digits. */
static bool checkpoint_geometry(const char *path, int *size, int *channels, char *err, size_t n)
{
  clg_checkpoint *ck = NULL;
  if (clg_checkpoint_open(path, &ck) != CLG_OK) {
    snprintf(err, n, "%s", clg_last_error());
    return false;
  }
  bool found = false;
  for (int i = 0; i < clg_checkpoint_num_tensors(ck) && !found; i++) {
    clg_checkpoint_tensor t;
    if (clg_checkpoint_tensor_info(ck, i, &t) == CLG_OK && strcmp(t.name, "conv1/weights") == 0 &&
        t.rank == 4 && (t.dims[2] == 1 || t.dims[2] == 3)) {
      *channels = (int)t.dims[2];
      *size = t.dims[2] == 1 ? 8 : 24;
      found = true;
    }
  }
  clg_checkpoint_close(ck);
  if (!found)
    snprintf(err, n,
             "%s has no tensor conv1/weights of shape [5,5,1 or 3,64]: not a checkpoint of "
             "clgraph train",
             path);
  return found;
}

int clg_tool_export(int argc, char **argv)
{
  const char *path = NULL, *out = NULL, *ds = NULL;
  int batch = 1;
  bool raw = false;
  clg_tool_opt opts[] = {{"--checkpoint", CLG_TOOL_STRING, .meta = "FILE",
                          .help = "what clgraph train saved", .required = true, .text = &path},
                         {"--output", CLG_TOOL_STRING, .meta = "FILE",
                          .help = "the GraphDef to write", .required = true, .text = &out},
                         {"--dataset", CLG_TOOL_STRING, .meta = "NAME", .text = &ds},
                         {"--batch", CLG_TOOL_INT, .min = 1, .max = 1 << 16, .integer = &batch},
                         {"--raw", CLG_TOOL_FLAG, .flag = &raw},
                         {NULL}};
  clg_tool_cmd cmd = {.name = "export", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  int size = 24, channels = 3;
  char err[600];
  if (ds) {
    if (strcmp(ds, "digits") == 0)
      size = 8, channels = 1;
    else if (strcmp(ds, "cifar10") != 0 && strcmp(ds, "synthetic") != 0) {
      fprintf(stderr, "clgraph export: --dataset '%s': want cifar10, digits or synthetic\n", ds);
      return 2;
    }
  } else if (!checkpoint_geometry(path, &size, &channels, err, sizeof err)) {
    fprintf(stderr, "clgraph export: %s\n", err);
    return 1;
  }

  int64_t idims[4] = {batch, size, size, channels}, ldims[1] = {batch};
  clg_graph *g = clg_graph_new();
  clg_node *images = clg_placeholder(g, "images", CLG_FLOAT32, 4, idims);
  clg_node *labels = clg_placeholder(g, "labels", CLG_INT32, 1, ldims);
  cifar10_model m;
  cifar10_build(g, images, labels, batch, size, channels, NULL, &m);
  clg_node *logits = clg_identity(g, "logits", m.logits);
  cifar10_assigner assign;
  cifar10_assigner_build(g, m.vars, NULL, &assign);
  clg_session *s = NULL;
  int rc = 1;
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.allow_soft_placement = 1;
  if (clg_graph_status(g) != CLG_OK) {
    fprintf(stderr, "clgraph export: building the model: %s\n", clg_graph_error(g));
    goto done;
  }
  if (clg_session_new(g, &opt, &s) != CLG_OK) {
    fprintf(stderr, "clgraph export: %s\n", clg_last_error());
    goto done;
  }
  if (!cifar10_assigner_run(&assign, s, path, raw ? CIFAR10_FROM_RAW : CIFAR10_FROM_AVERAGES,
                            false)) {
    fprintf(stderr, "clgraph export: %s\n", cifar10_assigner_error(&assign));
    goto done;
  }
  clg_output at = clg_out(logits, 0);
  if (clg_session_export_graphdef(s, 1, &at, out) != CLG_OK) {
    fprintf(stderr, "clgraph export: %s\n", clg_last_error());
    goto done;
  }
  printf("wrote %s: a frozen GraphDef of %s's model (%s), input images [%d,%d,%d,%d] float32, "
         "output logits [%d,10]\n",
         out, path, raw ? "raw weights" : "moving averages of the weights", batch, size, size,
         channels, batch);
  rc = 0;
done:
  clg_session_free(s);
  cifar10_assigner_free(&assign);
  clg_graph_free(g);
  return rc;
}
