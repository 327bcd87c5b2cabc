/* Replays every committed fuzz input through the fuzz targets' own code: the seeds in
 * tests/fuzz/corpus/<target>/ and the inputs that once crashed, kept as regression tests in
 * tests/fuzz/regressions/<target>/. A property violation aborts with the target's message,
 * after the name of the input printed on stderr. The targets are built for libFuzzer by
 * ci/fuzz.sh; here they are plain C compiled with the tests. */
#include <dirent.h>
#include <stdlib.h>

#include "testutil.h"

#define FUZZ_DEVNAME_ENTRY fuzz_devname_one
#include "fuzz/fuzz_devname.c"
#define FUZZ_SUBALLOC_ENTRY fuzz_suballoc_one
#include "fuzz/fuzz_suballoc.c"
#define FUZZ_SAFETENSORS_ENTRY fuzz_safetensors_one
#include "fuzz/fuzz_safetensors.c"
#define FUZZ_NPY_ENTRY fuzz_npy_one
#include "fuzz/fuzz_npy.c"
#define FUZZ_GRAPHDEF_ENTRY fuzz_graphdef_one
#include "fuzz/fuzz_graphdef.c"
#define FUZZ_TFJS_ENTRY fuzz_tfjs_one
#include "fuzz/fuzz_tfjs.c"
#define FUZZ_ONNX_ENTRY fuzz_onnx_one
#include "fuzz/fuzz_onnx.c"
#define FUZZ_GRAPH_ENTRY fuzz_graph_one
#define FUZZ_GRAPH_INIT fuzz_graph_init
#include "fuzz/fuzz_graph.c"

typedef int (*fuzz_entry)(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every file of dir through entry; returns how many ran. */
static int replay_dir(const char *dir, fuzz_entry entry)
{
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  char **names = NULL;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    char **grown = realloc(names, sizeof *names * (size_t)(n + 1));
    if (!grown)
      break;
    names = grown;
    names[n++] = clg_strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, by_name);
  int ran = 0;
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (f) {
      uint8_t *buf = malloc(1 << 16);
      size_t len = fread(buf, 1, 1 << 16, f);
      fclose(f);
      fprintf(stderr, "replaying %s (%zu bytes)\n", path, len);
      /* An exact-size copy, so that ASan sees reads past the end. */
      uint8_t *exact = malloc(len ? len : 1);
      memcpy(exact, buf, len);
      free(buf);
      CHECK(entry(exact, len) == 0);
      free(exact);
      ran++;
    }
    free(names[i]);
  }
  free(names);
  return ran;
}

static void replay(const char *target, fuzz_entry entry, int min_seeds)
{
  const char *src = getenv("CLG_SOURCE_DIR");
  char dir[2048];
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", src ? src : ".", target);
  int seeds = replay_dir(dir, entry);
  CHECK_MSG(seeds >= min_seeds, "%s: %d inputs in %s, want at least %d", target, seeds, dir,
            min_seeds);
  snprintf(dir, sizeof dir, "%s/tests/fuzz/regressions/%s", src ? src : ".", target);
  int regressions = replay_dir(dir, entry);
  printf("%s: %d corpus inputs and %d regression inputs replayed\n", target, seeds, regressions);
}

int main(void)
{
  replay("fuzz_devname", fuzz_devname_one, 10);
  replay("fuzz_suballoc", fuzz_suballoc_one, 5);
  replay("fuzz_safetensors", fuzz_safetensors_one, 8);
  replay("fuzz_npy", fuzz_npy_one, 10);
  replay("fuzz_graphdef", fuzz_graphdef_one, 8);
  replay("fuzz_tfjs", fuzz_tfjs_one, 6);
  replay("fuzz_onnx", fuzz_onnx_one, 8);
  if (clg_test_require_gpus(4)) {
    fuzz_graph_init(NULL, NULL);
    replay("fuzz_graph", fuzz_graph_one, 10);
    clg_session_free(fg_anchor);
    clg_graph_free(fg_anchor_graph);
    clg_log_set_sink(NULL, NULL);
  }
  return clg_test_summary("test_fuzz_replay");
}
