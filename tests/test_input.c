/* The CIFAR-10 tutorial's input pipeline (tools/cifar10_input.c, compiled into this test):
 * CIFAR-10 binary files and digits CSVs the test writes with known labels and pixels, checked
 * against references computed here in double precision (HWC conversion, crops, distortions,
 * standardization), batch numbering for towers and tasks, shuffling, the reader thread, and
 * the errors for missing, truncated and malformed files and for FIFOs. Needs no OpenCL.
 *
 *   test_input                      the checks above
 *   test_input --real-digits DIR    Debian's digits.csv.gz in DIR (ci/get-digits.sh puts it
 *                                   there): 1438/359 records; exits 77 (CTest: skipped) when
 *                                   the file is absent */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "cifar10_input.h"
#include "testutil.h"

enum { SIDE = 32, CH = 3, CROP = 24, CROP_VALUES = CROP * CROP * CH, RECORD = 3073 };

/* ---- files the test writes ------------------------------------------------------------------ */

static char tmp_root[256];
static char made[256][512]; /* every file and folder made, removed in reverse order at the end */
static int made_count;

static void remember(const char *path)
{
  if (made_count < (int)(sizeof made / sizeof made[0]))
    snprintf(made[made_count++], sizeof made[0], "%s", path);
}

static void cleanup(void)
{
  for (int i = made_count - 1; i >= 0; i--)
    if (remove(made[i]) != 0 && errno != ENOENT)
      fprintf(stderr, "test_input: cannot remove %s: %s\n", made[i], strerror(errno));
}

/* tmp_root/a[/b]: made once. */
static const char *make_dir(const char *a, const char *b)
{
  static char path[8][512];
  static int next;
  char *p = path[next++ % 8];
  if (b)
    snprintf(p, 512, "%s/%s/%s", tmp_root, a, b);
  else
    snprintf(p, 512, "%s/%s", tmp_root, a);
  if (mkdir(p, 0700) == 0)
    remember(p);
  return p;
}

static void write_file(const char *path, const void *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s: %s", path, strerror(errno));
  if (!f)
    return;
  CHECK(fwrite(data, 1, len, f) == len);
  CHECK(fclose(f) == 0);
  remember(path);
}

static void write_gz(const char *path, const char *text)
{
  gzFile g = gzopen(path, "wb");
  CHECK_MSG(g != NULL, "cannot write %s", path);
  if (!g)
    return;
  size_t len = strlen(text);
  if (len)
    CHECK(gzwrite(g, text, (unsigned)len) == (int)len);
  CHECK(gzclose(g) == Z_OK);
  remember(path);
}

/* ---- the records' known contents ------------------------------------------------------------ */

#define CONSTANT_RECORD 5 /* a record whose every pixel is 100 */

static int label_of(int g) { return (g * 3 + 1) % 10; }

/* Pixel (channel c, row y, column x) of record g (train 0.., test 100..). */
static int pixel_of(int g, int c, int y, int x)
{
  if (g == CONSTANT_RECORD)
    return 100;
  return (g * 41 + c * 83 + y * 7 + x * 3 + (x * y) % 5 + (y > 20 ? 60 : 0)) & 255;
}

/* count records g = first.. as a CIFAR-10 file: label byte, then R, G, B planes of 32x32. */
static unsigned char *cifar_bytes(int first, int count)
{
  unsigned char *buf = malloc((size_t)count * RECORD);
  for (int k = 0; k < count; k++) {
    unsigned char *rec = buf + (size_t)k * RECORD;
    rec[0] = (unsigned char)label_of(first + k);
    for (int c = 0; c < CH; c++)
      for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
          rec[1 + c * 1024 + y * 32 + x] = (unsigned char)pixel_of(first + k, c, y, x);
  }
  return buf;
}

static const int train_counts[5] = {3, 2, 4, 1, 3}; /* 13 training records */
#define TRAIN_RECORDS 13
#define TEST_RECORDS 5
#define TEST_FIRST 100

/* Writes root/cifar-10-batches-bin/ with the five training files and the test file. */
static void write_cifar_set(const char *root_name)
{
  const char *dir = make_dir(root_name, NULL);
  (void)dir;
  const char *bin = make_dir(root_name, "cifar-10-batches-bin");
  char path[600];
  int g = 0;
  for (int i = 0; i < 5; i++) {
    unsigned char *b = cifar_bytes(g, train_counts[i]);
    snprintf(path, sizeof path, "%s/data_batch_%d.bin", bin, i + 1);
    write_file(path, b, (size_t)train_counts[i] * RECORD);
    free(b);
    g += train_counts[i];
  }
  unsigned char *b = cifar_bytes(TEST_FIRST, TEST_RECORDS);
  snprintf(path, sizeof path, "%s/test_batch.bin", bin);
  write_file(path, b, (size_t)TEST_RECORDS * RECORD);
  free(b);
}

/* ---- references ----------------------------------------------------------------------------- */

/* Per-image standardization in double: (x - mean) / max(population stddev, 1/sqrt(n)). */
static void ref_standardize(double *v, int n)
{
  double mean = 0, var = 0;
  for (int i = 0; i < n; i++)
    mean += v[i];
  mean /= n;
  for (int i = 0; i < n; i++)
    var += (v[i] - mean) * (v[i] - mean);
  double sd = sqrt(var / n);
  if (sd < 1.0 / sqrt((double)n))
    sd = 1.0 / sqrt((double)n);
  for (int i = 0; i < n; i++)
    v[i] = (v[i] - mean) / sd;
}

/* The model's 24x24x3 input of record g: window at (cy, cx), mirrored if flip, then (when
 * distort) + delta and per-channel contrast f, then standardization. */
static void ref_cifar(int g, int cy, int cx, bool flip, bool distort, double delta, double f,
                      double *out)
{
  for (int y = 0; y < CROP; y++)
    for (int x = 0; x < CROP; x++)
      for (int c = 0; c < CH; c++) {
        int sx = cx + (flip ? CROP - 1 - x : x);
        out[(y * CROP + x) * CH + c] = pixel_of(g, c, cy + y, sx) + (distort ? delta : 0.0);
      }
  if (distort)
    for (int c = 0; c < CH; c++) {
      double mean = 0;
      for (int p = 0; p < CROP * CROP; p++)
        mean += out[p * CH + c];
      mean /= CROP * CROP;
      for (int p = 0; p < CROP * CROP; p++)
        out[p * CH + c] = (out[p * CH + c] - mean) * f + mean;
    }
  ref_standardize(out, CROP_VALUES);
}

static double max_diff(const float *got, const double *want, int n)
{
  double m = 0;
  for (int i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]);
    if (!(d <= m)) /* NaN counts as a difference */
      m = isnan(d) ? INFINITY : d;
  }
  return m;
}

/* ---- the checks ----------------------------------------------------------------------------- */

static void test_names(void)
{
  input_dataset_kind k = INPUT_SYNTHETIC;
  CHECK(input_dataset_parse("cifar10", &k) && k == INPUT_CIFAR10);
  CHECK(input_dataset_parse("digits", &k) && k == INPUT_DIGITS);
  CHECK(input_dataset_parse("synthetic", &k) && k == INPUT_SYNTHETIC);
  CHECK(!input_dataset_parse("cifar", &k));
  CHECK(!input_dataset_parse("", &k));
  CHECK(!input_dataset_parse(NULL, &k));
  CHECK_STR(input_dataset_name(INPUT_CIFAR10), "cifar10");
  CHECK_STR(input_dataset_name(INPUT_DIGITS), "digits");
  CHECK_STR(input_dataset_name(INPUT_SYNTHETIC), "synthetic");
}

static void test_standardize(void)
{
  clg_test_seed(17);
  enum { N = 1000 };
  float x[N];
  double want[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)clg_test_uniform(-50, 200);
    want[i] = x[i];
  }
  input_standardize(x, N);
  ref_standardize(want, N);
  CHECK_MSG(max_diff(x, want, N) < 1e-5, "standardize: max difference %g", max_diff(x, want, N));
  /* A nearly constant image: the stddev is below 1/sqrt(n), which divides instead. */
  float small[4] = {1.0f, 1.0f, 1.0f, 1.01f};
  double small_want[4] = {1.0, 1.0, 1.0, (double)1.01f};
  input_standardize(small, 4);
  ref_standardize(small_want, 4);
  CHECK_MSG(max_diff(small, small_want, 4) < 1e-6, "standardize small: %g",
            max_diff(small, small_want, 4));
  CHECK(fabsf(small[3] - 0.015f) < 1e-4f); /* (1.01 - 1.0025) / 0.5 */
  float constant[7] = {3, 3, 3, 3, 3, 3, 3};
  input_standardize(constant, 7);
  for (int i = 0; i < 7; i++)
    CHECK(constant[i] == 0.0f);
  input_standardize(NULL, 0); /* nothing to do, no crash */
}

static void test_batch_index(void)
{
  input_options o = {.batch = 8, .towers = 1};
  CHECK(input_batch_index(&o, 0, 0) == 0);
  CHECK(input_batch_index(&o, 7, 0) == 7);
  o.towers = 4; /* one process, 4 towers: step s reads 4s .. 4s+3 */
  CHECK(input_batch_index(&o, 0, 3) == 3);
  CHECK(input_batch_index(&o, 5, 2) == 22);
  /* MPI task 1 of 3 with 2 towers each: 6 batches per step, this task's first is 2. */
  o.towers = 2;
  o.batches_per_step = 6;
  o.tower_offset = 2;
  CHECK(input_batch_index(&o, 0, 0) == 2);
  CHECK(input_batch_index(&o, 0, 1) == 3);
  CHECK(input_batch_index(&o, 4, 1) == 27);
  o.towers = 0; /* treated as 1 */
  o.batches_per_step = 0;
  o.tower_offset = 0;
  CHECK(input_batch_index(&o, 9, 0) == 9);
}

/* File order: batch b holds records b*batch .. in the files' order, wrapping around; the
 * evaluation crop is the central 24x24 window; HWC from channel-major planes. */
static void test_cifar_file_order(const char *root)
{
  char err[512];
  input_dataset *train = input_dataset_load(INPUT_CIFAR10, root, true, 0, err, sizeof err);
  CHECK_MSG(train != NULL, "load train: %s", err);
  input_dataset *test = input_dataset_load(INPUT_CIFAR10, root, false, 0, err, sizeof err);
  CHECK_MSG(test != NULL, "load test: %s", err);
  if (!train || !test)
    goto out;
  CHECK(input_dataset_num_records(train) == TRAIN_RECORDS);
  CHECK(input_dataset_num_records(test) == TEST_RECORDS);
  CHECK(input_dataset_image_size(train) == 24);
  CHECK(input_dataset_channels(train) == 3);

  input_options o = {.batch = 4, .towers = 1, .prefetch = 1, .seed = 3};
  float images[4 * CROP_VALUES];
  int32_t labels[4];
  double want[CROP_VALUES];
  for (int64_t b = 0; b < 8; b++) { /* 32 records: around the 13 records twice and more */
    input_fill_batch(train, &o, b, images, labels);
    for (int r = 0; r < 4; r++) {
      int g = (int)((b * 4 + r) % TRAIN_RECORDS);
      CHECK_MSG(input_batch_record(train, &o, b, r) == g, "batch %lld row %d: record %lld, want %d",
                (long long)b, r, (long long)input_batch_record(train, &o, b, r), g);
      CHECK_MSG(labels[r] == label_of(g), "batch %lld row %d: label %d, want %d", (long long)b, r,
                labels[r], label_of(g));
      ref_cifar(g, 4, 4, false, false, 0, 1, want);
      double d = max_diff(images + r * CROP_VALUES, want, CROP_VALUES);
      CHECK_MSG(d < 1e-5, "batch %lld row %d (record %d): image differs by %g", (long long)b, r, g,
                d);
    }
  }
  /* The test split: its own file, in order. */
  o.batch = 2;
  for (int64_t b = 0; b < 4; b++) {
    input_fill_batch(test, &o, b, images, labels);
    for (int r = 0; r < 2; r++) {
      int g = TEST_FIRST + (int)((b * 2 + r) % TEST_RECORDS);
      CHECK(labels[r] == label_of(g));
      ref_cifar(g, 4, 4, false, false, 0, 1, want);
      CHECK(max_diff(images + r * CROP_VALUES, want, CROP_VALUES) < 1e-5);
    }
  }
  /* The constant record is all zeros after standardization. */
  o.batch = 1;
  input_fill_batch(train, &o, CONSTANT_RECORD, images, labels);
  bool zeros = true;
  for (int i = 0; i < CROP_VALUES; i++)
    zeros = zeros && images[i] == 0.0f;
  CHECK_MSG(zeros, "the constant record is not all zeros");
out:
  input_dataset_free(train);
  input_dataset_free(test);
}

/* Field by field: the struct has padding after flip. */
static bool same_draw(const input_distortion *a, const input_distortion *b)
{
  return a->crop_y == b->crop_y && a->crop_x == b->crop_x && a->flip == b->flip &&
         a->brightness == b->brightness && a->contrast == b->contrast;
}

static void test_distortion_draws(void)
{
  int crop_seen[2][9] = {{0}};
  int flips = 0, draws = 0;
  double bmin = 1e9, bmax = -1e9, bsum = 0, cmin = 1e9, cmax = -1e9;
  bool in_range = true, same = true, rows_differ = false;
  for (int64_t b = 0; b < 200; b++)
    for (int r = 0; r < 20; r++) {
      input_distortion t, again, next;
      input_distortion_draw(3, b, r, &t);
      input_distortion_draw(3, b, r, &again);
      input_distortion_draw(3, b, r + 1, &next);
      same = same && same_draw(&t, &again);
      rows_differ = rows_differ || t.brightness != next.brightness;
      in_range = in_range && t.crop_y >= 0 && t.crop_y <= 8 && t.crop_x >= 0 && t.crop_x <= 8 &&
                 t.brightness >= -63.0f && t.brightness < 63.0f && t.contrast >= 0.2f &&
                 t.contrast < 1.8f;
      if (t.crop_y >= 0 && t.crop_y <= 8 && t.crop_x >= 0 && t.crop_x <= 8) {
        crop_seen[0][t.crop_y]++;
        crop_seen[1][t.crop_x]++;
      }
      flips += t.flip;
      draws++;
      bsum += t.brightness;
      bmin = fmin(bmin, t.brightness);
      bmax = fmax(bmax, t.brightness);
      cmin = fmin(cmin, t.contrast);
      cmax = fmax(cmax, t.contrast);
    }
  CHECK_MSG(in_range, "a distortion out of its range (crop 0..8, brightness [-63,63), contrast "
                      "[0.2,1.8))");
  CHECK_MSG(same, "the same (seed, batch, row) drew two distortions");
  CHECK(rows_differ);
  /* 4000 draws: each of the 9 offsets ~444 times (sd ~20); flips ~2000 (sd ~32). */
  for (int k = 0; k < 9; k++)
    CHECK_MSG(crop_seen[0][k] > 330 && crop_seen[0][k] < 560 && crop_seen[1][k] > 330 &&
                  crop_seen[1][k] < 560,
              "crop offset %d drawn %d / %d times of %d", k, crop_seen[0][k], crop_seen[1][k],
              draws);
  CHECK_MSG(flips > 1840 && flips < 2160, "%d flips in %d draws", flips, draws);
  CHECK_MSG(fabs(bsum / draws) < 3.0, "brightness mean %g", bsum / draws);
  CHECK(bmin < -60 && bmax > 60);
  CHECK(cmin < 0.25 && cmax > 1.75);
  input_distortion a, b;
  input_distortion_draw(3, 0, 0, &a);
  input_distortion_draw(4, 0, 0, &b);
  CHECK(!same_draw(&a, &b));
}

/* Training distortions: each row is the reference with the draw of (seed, batch, row). */
static void test_cifar_distorted(const char *root)
{
  char err[512];
  input_dataset *d = input_dataset_load(INPUT_CIFAR10, root, true, 0, err, sizeof err);
  CHECK_MSG(d != NULL, "load: %s", err);
  if (!d)
    return;
  enum { B = 5 };
  input_options o = {.batch = B, .distort = true, .towers = 1, .prefetch = 1, .seed = 7};
  float images[B * CROP_VALUES], again[B * CROP_VALUES];
  int32_t labels[B], labels2[B];
  double want[CROP_VALUES];
  int flipped = 0, unflipped = 0;
  for (int64_t b = 0; b < 8; b++) {
    input_fill_batch(d, &o, b, images, labels);
    for (int r = 0; r < B; r++) {
      int g = (int)((b * B + r) % TRAIN_RECORDS);
      input_distortion t;
      input_distortion_draw(o.seed, b, r, &t);
      CHECK(labels[r] == label_of(g));
      ref_cifar(g, t.crop_y, t.crop_x, t.flip, true, t.brightness, t.contrast, want);
      const float *got = images + r * CROP_VALUES;
      double diff = max_diff(got, want, CROP_VALUES);
      CHECK_MSG(diff < 1e-4,
                "batch %lld row %d (record %d, crop %d,%d flip %d delta %g f %g): differs by %g",
                (long long)b, r, g, t.crop_y, t.crop_x, t.flip, t.brightness, t.contrast, diff);
      if (g == CONSTANT_RECORD) {
        bool zeros = true;
        for (int i = 0; i < CROP_VALUES; i++)
          zeros = zeros && got[i] == 0.0f;
        CHECK_MSG(zeros, "the constant record, distorted, is not all zeros");
      }
      if (t.flip)
        flipped++;
      else
        unflipped++;
    }
    /* The same batch again: the same images (no state between calls). */
    input_fill_batch(d, &o, b, again, labels2);
    CHECK(memcmp(images, again, sizeof images) == 0 && memcmp(labels, labels2, sizeof labels) == 0);
  }
  CHECK_MSG(flipped > 0 && unflipped > 0, "flips %d, not flipped %d: both must be exercised",
            flipped, unflipped);
  /* Another seed distorts otherwise. */
  input_fill_batch(d, &o, 0, images, labels);
  o.seed = 8;
  input_fill_batch(d, &o, 0, again, labels2);
  CHECK(memcmp(images, again, sizeof images) != 0);
  CHECK(memcmp(labels, labels2, sizeof labels) == 0); /* same records (file order) */
  input_dataset_free(d);
}

/* Record g's permutation of epoch e under o (batch 1: batch b is position b). */
static void epoch_perm(const input_dataset *d, const input_options *o, int64_t epoch, int64_t n,
                       int64_t *perm)
{
  input_options one = *o;
  one.batch = 1;
  for (int64_t i = 0; i < n; i++)
    perm[i] = input_batch_record(d, &one, epoch * n + i, 0);
}

static bool is_permutation(const int64_t *perm, int64_t n)
{
  char *seen = calloc((size_t)n, 1);
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    ok = perm[i] >= 0 && perm[i] < n && !seen[perm[i]];
    if (ok)
      seen[perm[i]] = 1;
  }
  free(seen);
  return ok;
}

static void test_shuffle(const char *root)
{
  char err[512];
  input_dataset *d = input_dataset_load(INPUT_CIFAR10, root, true, 0, err, sizeof err);
  CHECK_MSG(d != NULL, "load: %s", err);
  if (!d)
    return;
  const int64_t n = TRAIN_RECORDS;
  input_options o = {.batch = 5, .shuffle = true, .towers = 1, .prefetch = 1, .seed = 11};
  int64_t perm[4][TRAIN_RECORDS], again[TRAIN_RECORDS];
  bool epochs_differ = false;
  for (int e = 0; e < 4; e++) {
    epoch_perm(d, &o, e, n, perm[e]);
    CHECK_MSG(is_permutation(perm[e], n), "epoch %d is not a permutation", e);
    if (e > 0 && memcmp(perm[e], perm[0], sizeof perm[0]) != 0)
      epochs_differ = true;
  }
  CHECK_MSG(epochs_differ, "every epoch has the same order");
  epoch_perm(d, &o, 1, n, again);
  CHECK(memcmp(again, perm[1], sizeof again) == 0);
  bool identity = true;
  for (int64_t i = 0; i < n; i++)
    identity = identity && perm[0][i] == i;
  CHECK(!identity);

  /* Batches of 5 across epoch boundaries: row r of batch b is position 5b+r, mapped through
   * the permutation of its epoch; the images are those records' central crops. */
  float images[5 * CROP_VALUES];
  int32_t labels[5];
  double want[CROP_VALUES];
  for (int64_t b = 0; b < 10; b++) { /* 50 positions: epochs 0..3 */
    input_fill_batch(d, &o, b, images, labels);
    for (int r = 0; r < 5; r++) {
      int64_t pos = b * 5 + r;
      int g = (int)perm[pos / n][pos % n];
      CHECK(input_batch_record(d, &o, b, r) == g);
      CHECK(labels[r] == label_of(g));
      ref_cifar(g, 4, 4, false, false, 0, 1, want);
      CHECK_MSG(max_diff(images + r * CROP_VALUES, want, CROP_VALUES) < 1e-5,
                "shuffled batch %lld row %d: not record %d", (long long)b, r, g);
    }
  }
  /* Another seed: another order. */
  input_options o2 = o;
  o2.seed = 12;
  epoch_perm(d, &o2, 0, n, again);
  CHECK(memcmp(again, perm[0], sizeof again) != 0);
  /* Fisher-Yates is uniform: over 2,600 seeds each record comes first ~200 times (sd ~14). */
  int first[TRAIN_RECORDS] = {0};
  for (int s = 0; s < 2600; s++) {
    o2.seed = 1000 + (uint64_t)s;
    int64_t rec = input_batch_record(d, &o2, 0, 0);
    if (rec >= 0 && rec < n)
      first[rec]++;
  }
  for (int k = 0; k < TRAIN_RECORDS; k++)
    CHECK_MSG(first[k] > 130 && first[k] < 270, "record %d first in %d of 2600 orders", k,
              first[k]);
  input_dataset_free(d);
}

static void test_synthetic(void)
{
  char err[256];
  input_dataset *a = input_dataset_load(INPUT_SYNTHETIC, NULL, true, 1, err, sizeof err);
  input_dataset *b = input_dataset_load(INPUT_SYNTHETIC, "/nonexistent", true, 1, err, sizeof err);
  input_dataset *c = input_dataset_load(INPUT_SYNTHETIC, NULL, true, 2, err, sizeof err);
  CHECK(a && b && c);
  if (a && b && c) {
    CHECK(input_dataset_num_records(a) == 10000);
    CHECK(input_dataset_image_size(a) == 24 && input_dataset_channels(a) == 3);
    enum { B = 16 };
    input_options o = {.batch = B, .distort = true, .shuffle = true, .towers = 1, .seed = 5};
    static float ia[B * CROP_VALUES], ib[B * CROP_VALUES], ic[B * CROP_VALUES];
    int32_t la[B], lb[B], lc[B];
    input_fill_batch(a, &o, 3, ia, la);
    input_fill_batch(b, &o, 3, ib, lb);
    input_fill_batch(c, &o, 3, ic, lc);
    CHECK(memcmp(ia, ib, sizeof ia) == 0 && memcmp(la, lb, sizeof la) == 0);
    CHECK(memcmp(ia, ic, sizeof ia) != 0);
    bool labels_ok = true, finite = true;
    for (int i = 0; i < B; i++)
      labels_ok = labels_ok && la[i] >= 0 && la[i] <= 9;
    for (int i = 0; i < B * CROP_VALUES; i++)
      finite = finite && isfinite(ia[i]);
    CHECK(labels_ok && finite);
    /* A shuffled epoch of 10,000 records is a permutation. */
    static int64_t perm[10000];
    epoch_perm(a, &o, 2, 10000, perm);
    CHECK(is_permutation(perm, 10000));
    /* All ten labels occur (10,000 draws). */
    int counts[10] = {0};
    o.batch = 1;
    o.shuffle = false;
    for (int64_t r = 0; r < 1000; r++) {
      input_fill_batch(a, &o, r, ia, la);
      if (la[0] >= 0 && la[0] <= 9)
        counts[la[0]]++;
    }
    for (int k = 0; k < 10; k++)
      CHECK_MSG(counts[k] > 50, "label %d in %d of 1000 synthetic records", k, counts[k]);
  }
  input_dataset_free(a);
  input_dataset_free(b);
  input_dataset_free(c);
  input_dataset *t = input_dataset_load(INPUT_SYNTHETIC, NULL, false, 1, err, sizeof err);
  a = input_dataset_load(INPUT_SYNTHETIC, NULL, true, 1, err, sizeof err);
  CHECK(t && a);
  if (t && a) {
    input_options o = {.batch = 2, .towers = 1};
    float it[2 * CROP_VALUES], ia[2 * CROP_VALUES];
    int32_t lt[2], la[2];
    input_fill_batch(t, &o, 0, it, lt);
    input_fill_batch(a, &o, 0, ia, la);
    CHECK_MSG(memcmp(it, ia, sizeof it) != 0, "the synthetic test split repeats the training one");
  }
  input_dataset_free(t);
  input_dataset_free(a);
}

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* The reader thread hands out exactly input_fill_batch's batches in consumption order. */
static void test_reader(const char *root)
{
  char err[512];
  input_dataset *d = input_dataset_load(INPUT_CIFAR10, root, true, 0, err, sizeof err);
  CHECK_MSG(d != NULL, "load: %s", err);
  if (!d)
    return;
  enum { B = 3 };
  /* Task 1 of 3, 2 towers each, resuming at step 5, shuffled and distorted. */
  input_options o = {.batch = B,
                     .distort = true,
                     .shuffle = true,
                     .seed = 5,
                     .towers = 2,
                     .batches_per_step = 6,
                     .tower_offset = 2,
                     .first_step = 5,
                     .prefetch = 2};
  float got[B * CROP_VALUES], want[B * CROP_VALUES];
  int32_t got_l[B], want_l[B];
  input_reader *r = input_reader_start(d, &o);
  CHECK(r != NULL);
  if (r) {
    for (int k = 0; k < 12; k++) {
      double waited = input_reader_next(r, got, got_l);
      CHECK(waited >= 0.0 && waited < 60.0);
      int64_t b = input_batch_index(&o, 5 + k / 2, k % 2);
      input_fill_batch(d, &o, b, want, want_l);
      CHECK_MSG(memcmp(got, want, sizeof got) == 0 && memcmp(got_l, want_l, sizeof got_l) == 0,
                "reader batch %d (global batch %lld) differs from input_fill_batch", k,
                (long long)b);
    }
    input_reader_stop(r);
  }
  /* A full ring: the next batch is ready (0 s waited); stop while the producer waits for
   * space must return (main's alarm fails the test if it hangs). */
  o.prefetch = 3;
  r = input_reader_start(d, &o);
  CHECK(r != NULL);
  if (r) {
    sleep_ms(300);
    double waited = input_reader_next(r, got, got_l);
    CHECK_MSG(waited == 0.0, "waited %g s for a batch of a full ring", waited);
    input_fill_batch(d, &o, input_batch_index(&o, 5, 0), want, want_l);
    CHECK(memcmp(got, want, sizeof got) == 0);
    sleep_ms(100);
    input_reader_stop(r);
  }
  /* Stopped at once, before the thread ran. */
  input_reader_stop(input_reader_start(d, &o));
  input_reader_stop(NULL);
  /* A batch of 0 is refused. */
  o.batch = 0;
  CHECK(input_reader_start(d, &o) == NULL);
  input_dataset_free(d);
}

static void check_load_fails(input_dataset_kind kind, const char *dir, bool train,
                             const char *want1, const char *want2)
{
  char err[1024] = "unchanged";
  input_dataset *d = input_dataset_load(kind, dir, train, 0, err, sizeof err);
  CHECK_MSG(d == NULL, "loading %s from %s succeeded; want an error naming '%s'",
            input_dataset_name(kind), dir ? dir : "(null)", want1);
  input_dataset_free(d);
  CHECK_CONTAINS(err, want1);
  if (want2)
    CHECK_CONTAINS(err, want2);
}

static void rewrite(const char *root, const char *name, const void *data, size_t len)
{
  char path[600];
  snprintf(path, sizeof path, "%s/%s/cifar-10-batches-bin/%s", tmp_root, root, name);
  write_file(path, data, len);
}

static void test_cifar_errors(void)
{
  char dir[600], want[700];
  /* A folder without cifar-10-batches-bin/. */
  snprintf(dir, sizeof dir, "%s/nothing-here", tmp_root);
  snprintf(want, sizeof want, "%s/cifar-10-batches-bin/data_batch_1.bin", dir);
  check_load_fails(INPUT_CIFAR10, dir, true, want, strerror(ENOENT));
  check_load_fails(INPUT_CIFAR10, dir, false, "cifar-10-batches-bin/test_batch.bin",
                   strerror(ENOENT));
  check_load_fails(INPUT_CIFAR10, NULL, true, "needs a data folder", NULL);
  check_load_fails(INPUT_CIFAR10, "", true, "needs a data folder", NULL);

  /* A missing training file; the test split still loads. */
  write_cifar_set("e-missing");
  snprintf(dir, sizeof dir, "%s/e-missing", tmp_root);
  snprintf(want, sizeof want, "%s/cifar-10-batches-bin/data_batch_3.bin", dir);
  remove(want);
  check_load_fails(INPUT_CIFAR10, dir, true, want, strerror(ENOENT));
  char err[512];
  input_dataset *t = input_dataset_load(INPUT_CIFAR10, dir, false, 0, err, sizeof err);
  CHECK_MSG(t && input_dataset_num_records(t) == TEST_RECORDS, "test split: %s", err);
  input_dataset_free(t);

  /* A truncated last record: 2 records and 1234 bytes of a third. */
  write_cifar_set("e-trunc");
  snprintf(dir, sizeof dir, "%s/e-trunc", tmp_root);
  unsigned char *b = cifar_bytes(3, 3);
  rewrite("e-trunc", "data_batch_2.bin", b, 2 * RECORD + 1234);
  check_load_fails(INPUT_CIFAR10, dir, true,
                   "cifar-10-batches-bin/data_batch_2.bin: record 2 is truncated (1234 of 3073 "
                   "bytes)",
                   NULL);
  /* A file shorter than one record; one a byte too long. */
  rewrite("e-trunc", "data_batch_2.bin", b, 2 * RECORD);
  rewrite("e-trunc", "data_batch_4.bin", b, 100);
  check_load_fails(INPUT_CIFAR10, dir, true,
                   "data_batch_4.bin: record 0 is truncated (100 of 3073 bytes)", NULL);
  unsigned char *big = cifar_bytes(0, 3);
  rewrite("e-trunc", "data_batch_4.bin", big, 2 * RECORD + 1);
  check_load_fails(INPUT_CIFAR10, dir, true,
                   "data_batch_4.bin: record 2 is truncated (1 of 3073 bytes)", NULL);
  rewrite("e-trunc", "data_batch_4.bin", big, RECORD);
  input_dataset *fixed = input_dataset_load(INPUT_CIFAR10, dir, true, 0, err, sizeof err);
  CHECK_MSG(fixed && input_dataset_num_records(fixed) == 3 + 2 + 4 + 1 + 3, "repaired: %s", err);
  input_dataset_free(fixed);

  /* Labels 10 and 255. */
  big[3 * 0 + 1 * RECORD] = 10; /* record 1's label */
  rewrite("e-trunc", "test_batch.bin", big, 3 * RECORD);
  check_load_fails(INPUT_CIFAR10, dir, false, "test_batch.bin: record 1 has label 10 (want 0-9)",
                   NULL);
  big[RECORD] = 1;
  big[2 * RECORD] = 255;
  rewrite("e-trunc", "test_batch.bin", big, 3 * RECORD);
  check_load_fails(INPUT_CIFAR10, dir, false, "test_batch.bin: record 2 has label 255", NULL);

  /* An empty file. */
  rewrite("e-trunc", "data_batch_5.bin", big, 0);
  check_load_fails(INPUT_CIFAR10, dir, true, "data_batch_5.bin: the file is empty", NULL);
  free(b);
  free(big);

  /* A folder where a file should be. */
  make_dir("e-dir", NULL);
  make_dir("e-dir", "cifar-10-batches-bin");
  snprintf(want, sizeof want, "%s/e-dir/cifar-10-batches-bin/data_batch_1.bin", tmp_root);
  if (mkdir(want, 0700) == 0)
    remember(want);
  snprintf(dir, sizeof dir, "%s/e-dir", tmp_root);
  check_load_fails(INPUT_CIFAR10, dir, true, "data_batch_1.bin: not a regular file", NULL);

  /* A small error buffer is cut, not overrun; no buffer at all is fine. */
  char tiny[12];
  memset(tiny, 'x', sizeof tiny);
  CHECK(input_dataset_load(INPUT_CIFAR10, dir, true, 0, tiny, 8) == NULL);
  CHECK(strlen(tiny) == 7 && tiny[8] == 'x');
  CHECK(input_dataset_load(INPUT_CIFAR10, dir, true, 0, NULL, 0) == NULL);

  /* A FIFO where a file should be: refused at once, not waited on for a writer. */
  write_cifar_set("e-fifo");
  snprintf(want, sizeof want, "%s/e-fifo/cifar-10-batches-bin/data_batch_2.bin", tmp_root);
  CHECK(remove(want) == 0 && mkfifo(want, 0600) == 0);
  snprintf(dir, sizeof dir, "%s/e-fifo", tmp_root);
  alarm(60); /* a reader that blocks ends the test (SIGALRM) instead of hanging it */
  check_load_fails(INPUT_CIFAR10, dir, true, "data_batch_2.bin: not a regular file (a FIFO)", NULL);
  alarm(0);
}

/* ---- digits --------------------------------------------------------------------------------- */

static int digit_pixel(int row, int i) { return (row * 5 + i * 3 + (i / 8) * (row % 3)) % 17; }
static int digit_label(int row) { return (row * 7) % 10; }

/* rows rows (0-based r) of 64 pixels and a label, in varied spellings: "3", "3.0", " 3". */
static char *digits_csv(int rows)
{
  size_t cap = (size_t)rows * 400 + 16, len = 0;
  char *s = malloc(cap);
  for (int r = 0; r < rows; r++) {
    for (int i = 0; i < 64; i++) {
      int v = digit_pixel(r, i);
      const char *fmt = (r + i) % 3 == 0 ? "%d.0," : (r + i) % 3 == 1 ? " %d," : "%d,";
      len += (size_t)snprintf(s + len, cap - len, fmt, v);
    }
    len += (size_t)snprintf(s + len, cap - len, r % 4 == 1 ? "%d\r\n" : "%d\n", digit_label(r));
  }
  return s;
}

static void ref_digit(int row, double *out)
{
  for (int i = 0; i < 64; i++)
    out[i] = digit_pixel(row, i);
  ref_standardize(out, 64);
}

/* The row's image moved so that out[y][x] = image[y + dy][x + dx], background 0 outside. */
static void ref_digit_shifted(int row, int dy, int dx, double *out)
{
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 8; x++) {
      int sy = y + dy, sx = x + dx;
      out[y * 8 + x] = sy >= 0 && sy < 8 && sx >= 0 && sx < 8 ? digit_pixel(row, sy * 8 + sx) : 0.0;
    }
  ref_standardize(out, 64);
}

/* Writes text as dir_name/digits.csv.gz; returns the folder. */
static const char *digits_dir(const char *dir_name, const char *text)
{
  const char *dir = make_dir(dir_name, NULL);
  char path[600];
  snprintf(path, sizeof path, "%s/digits.csv.gz", dir);
  write_gz(path, text);
  return dir;
}

static void test_digits(void)
{
  char *text = digits_csv(20);
  size_t len = strlen(text);
  char *with_blank = malloc(len + 3);
  memcpy(with_blank, text, len);
  memcpy(with_blank + len, "\n\n", 3); /* trailing empty lines are not rows */
  const char *dir = digits_dir("digits", with_blank);
  free(with_blank);
  char err[512];
  input_dataset *train = input_dataset_load(INPUT_DIGITS, dir, true, 0, err, sizeof err);
  input_dataset *test = input_dataset_load(INPUT_DIGITS, dir, false, 0, err, sizeof err);
  CHECK_MSG(train && test, "digits: %s", err);
  if (train && test) {
    /* 20 rows: every fifth (rows 4, 9, 14, 19 from 0) is the test split. */
    CHECK(input_dataset_num_records(train) == 16);
    CHECK(input_dataset_num_records(test) == 4);
    CHECK(input_dataset_image_size(train) == 8 && input_dataset_channels(train) == 1);
    /* Distorted rows are shifted by the draw's dy, dx; undistorted ones are as in the file. */
    input_options o = {.batch = 6, .distort = true, .towers = 1, .seed = 9};
    int shifted = 0;
    float images[6 * 64];
    int32_t labels[6];
    double want[64];
    for (int64_t b = 0; b < 4; b++) {
      input_fill_batch(train, &o, b, images, labels);
      for (int r = 0; r < 6; r++) {
        int p = (int)((b * 6 + r) % 16), row = p + p / 4;
        CHECK(labels[r] == digit_label(row));
        input_distortion t;
        input_distortion_draw(9, b, r, &t);
        int dy, dx;
        input_digits_shift(&t, &dy, &dx);
        CHECK(dy >= -1 && dy <= 1 && dx >= -1 && dx <= 1);
        shifted += dy != 0 || dx != 0;
        ref_digit_shifted(row, dy, dx, want);
        CHECK_MSG(max_diff(images + r * 64, want, 64) < 1e-5, "digits train row %d differs", row);
      }
      input_options plain = o;
      plain.distort = false; /* evaluation: the image as it is */
      input_fill_batch(test, &plain, b, images, labels);
      for (int r = 0; r < 6; r++) {
        int row = 5 * (int)((b * 6 + r) % 4) + 4;
        CHECK(labels[r] == digit_label(row));
        ref_digit(row, want);
        CHECK_MSG(max_diff(images + r * 64, want, 64) < 1e-5, "digits test row %d differs", row);
      }
    }
    CHECK_MSG(shifted > 0, "no distorted digit was shifted in 24 draws");
  }
  input_dataset_free(train);
  input_dataset_free(test);
  free(text);

  /* Debian's row count: 1,438 for training, 359 (every fifth) for the test. */
  text = digits_csv(1797);
  dir = digits_dir("digits-1797", text);
  free(text);
  train = input_dataset_load(INPUT_DIGITS, dir, true, 0, err, sizeof err);
  test = input_dataset_load(INPUT_DIGITS, dir, false, 0, err, sizeof err);
  CHECK_MSG(train && test, "digits 1797: %s", err);
  if (train && test) {
    CHECK(input_dataset_num_records(train) == 1438);
    CHECK(input_dataset_num_records(test) == 359);
    input_options o = {.batch = 1, .towers = 1};
    float image[64];
    int32_t label;
    double want[64];
    input_fill_batch(test, &o, 358, image, &label);
    CHECK(label == digit_label(1794));
    ref_digit(1794, want);
    CHECK(max_diff(image, want, 64) < 1e-5);
    input_fill_batch(train, &o, 1437, image, &label);
    CHECK(label == digit_label(1796));
    input_fill_batch(train, &o, 4, image, &label);
    CHECK(label == digit_label(5));
  }
  input_dataset_free(train);
  input_dataset_free(test);
}

/* A 10-row CSV with row `bad` (1-based) replaced by line. */
static const char *digits_with_row(const char *dir_name, int bad, const char *line)
{
  char *text = digits_csv(10);
  char *out = malloc(strlen(text) + strlen(line) + 2);
  size_t len = 0;
  int row = 1;
  for (const char *p = text; *p; row++) {
    const char *nl = strchr(p, '\n');
    size_t n = (size_t)(nl - p) + 1;
    if (row == bad) {
      len += (size_t)sprintf(out + len, "%s\n", line);
    } else {
      memcpy(out + len, p, n);
      len += n;
    }
    p = nl + 1;
  }
  out[len] = '\0';
  const char *dir = digits_dir(dir_name, out);
  free(text);
  free(out);
  return dir;
}

static void test_digits_errors(void)
{
  char row[1024];
  char want[700];
  /* A missing file. */
  const char *dir = make_dir("no-digits", NULL);
  snprintf(want, sizeof want, "%s/digits.csv.gz: %s", dir, strerror(ENOENT));
  check_load_fails(INPUT_DIGITS, dir, true, want, NULL);
  check_load_fails(INPUT_DIGITS, NULL, true, "needs a data folder", NULL);

  /* Not a number: row 7, column 5. */
  strcpy(row, "0,0,1,2,abc");
  for (int i = 5; i < 64; i++)
    strcat(row, ",1");
  strcat(row, ",3");
  dir = digits_with_row("d-nan", 7, row);
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: row 7, column 5: 'abc' is not a number",
                   NULL);
  check_load_fails(INPUT_DIGITS, dir, false, "row 7, column 5", NULL); /* every row is checked */

  /* An empty field and a number with trailing junk. */
  strcpy(row, "0,,1");
  for (int i = 3; i < 65; i++)
    strcat(row, ",1");
  dir = digits_with_row("d-emptyfield", 2, row);
  check_load_fails(INPUT_DIGITS, dir, true, "row 2, column 2: '' is not a number", NULL);
  strcpy(row, "0,1,2x");
  for (int i = 3; i < 65; i++)
    strcat(row, ",1");
  dir = digits_with_row("d-junk", 9, row);
  check_load_fails(INPUT_DIGITS, dir, true, "row 9, column 3: '2x' is not a number", NULL);

  /* The wrong column count: 64 values; 66 values. */
  strcpy(row, "1");
  for (int i = 1; i < 64; i++)
    strcat(row, ",1");
  dir = digits_with_row("d-cols", 3, row);
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: row 3 has 64 values, want 65", NULL);
  strcat(row, ",1,2");
  dir = digits_with_row("d-cols66", 10, row);
  check_load_fails(INPUT_DIGITS, dir, false, "row 10 has 66 values, want 65", NULL);

  /* Pixels out of 0-16: 17 in row 2 column 10; -1 in row 1 column 1. */
  strcpy(row, "0");
  for (int i = 2; i <= 64; i++)
    strcat(row, i == 10 ? ",17" : ",4");
  strcat(row, ",5");
  dir = digits_with_row("d-range", 2, row);
  check_load_fails(INPUT_DIGITS, dir, true,
                   "row 2, column 10: pixel value 17 is out of range (want 0-16)", NULL);
  row[0] = '\0';
  strcpy(row, "-1");
  for (int i = 2; i <= 64; i++)
    strcat(row, ",4");
  strcat(row, ",5");
  dir = digits_with_row("d-negative", 1, row);
  check_load_fails(INPUT_DIGITS, dir, true, "row 1, column 1: pixel value -1 is out of range",
                   NULL);

  /* Labels: 10, 2.5. */
  strcpy(row, "0");
  for (int i = 2; i <= 64; i++)
    strcat(row, ",4");
  strcat(row, ",10");
  dir = digits_with_row("d-label", 4, row);
  check_load_fails(INPUT_DIGITS, dir, true, "row 4, column 65: label 10 is not one of 0-9", NULL);
  char *p = strrchr(row, ',');
  strcpy(p, ",2.5");
  dir = digits_with_row("d-label-frac", 5, row);
  check_load_fails(INPUT_DIGITS, dir, true, "row 5, column 65: label 2.5 is not one of 0-9", NULL);

  /* An empty line between rows. */
  dir = digits_with_row("d-blank", 5, "");
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: row 5 is empty", NULL);

  /* No rows at all; one row. */
  dir = digits_dir("d-empty", "");
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: the file is empty", NULL);
  char *one = digits_csv(1);
  dir = digits_dir("d-one", one);
  free(one);
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: 1 row; want at least 5", NULL);

  /* A gzip file cut in the middle. */
  char *text = digits_csv(300);
  dir = digits_dir("d-cut", text);
  free(text);
  char path[600];
  snprintf(path, sizeof path, "%s/digits.csv.gz", dir);
  FILE *f = fopen(path, "rb");
  unsigned char buf[1 << 16];
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f)
    fclose(f);
  CHECK(n > 200);
  write_file(path, buf, n / 2);
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: cannot decompress", NULL);
  /* Damaged compressed data after a valid header. */
  memset(buf + 10, 0xff, n / 2 - 10);
  write_file(path, buf, n / 2);
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: cannot decompress", NULL);
  /* A FIFO: refused at once, not waited on for a writer. */
  CHECK(remove(path) == 0 && mkfifo(path, 0600) == 0);
  alarm(60);
  check_load_fails(INPUT_DIGITS, dir, true, "digits.csv.gz: not a regular file (a FIFO)", NULL);
  alarm(0);
}

/* Debian's file (ci/get-digits.sh): 1,797 rows, split 1438/359, labels 0-9, known first and
 * last rows. */
static int real_digits(const char *dir)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/digits.csv.gz", dir);
  if (access(path, R_OK) != 0) {
    printf("test_input: SKIPPED: %s not found (ci/get-digits.sh %s takes it out of Debian's "
           "python3-sklearn)\n",
           path, dir);
    return 77;
  }
  char err[512];
  input_dataset *train = input_dataset_load(INPUT_DIGITS, dir, true, 0, err, sizeof err);
  input_dataset *test = input_dataset_load(INPUT_DIGITS, dir, false, 0, err, sizeof err);
  CHECK_MSG(train && test, "%s: %s", path, err);
  if (train && test) {
    CHECK(input_dataset_num_records(train) == 1438);
    CHECK(input_dataset_num_records(test) == 359);
    input_options o = {.batch = 1, .towers = 1};
    float image[64];
    int32_t label;
    const input_dataset *splits[2] = {train, test};
    for (int s = 0; s < 2; s++) {
      int counts[10] = {0};
      bool in_range = true;
      for (int64_t i = 0; i < input_dataset_num_records(splits[s]); i++) {
        input_fill_batch(splits[s], &o, i, image, &label);
        in_range = in_range && label >= 0 && label <= 9;
        if (label >= 0 && label <= 9)
          counts[label]++;
      }
      CHECK(in_range);
      for (int k = 0; k < 10; k++)
        CHECK_MSG(counts[k] >= (s ? 20 : 120), "split %d: label %d only %d times", s, k,
                  counts[k]);
    }
    /* The file's first row (a 0) and the test split's last (an 8). */
    static const int first_row[64] = {0, 0, 5,  13, 9,  1,  0, 0, 0, 0, 13, 15, 10, 15, 5, 0,
                                      0, 3, 15, 2,  0,  11, 8, 0, 0, 4, 12, 0,  0,  8,  8, 0,
                                      0, 5, 8,  0,  0,  9,  8, 0, 0, 4, 11, 0,  1,  12, 7, 0,
                                      0, 2, 14, 5,  10, 12, 0, 0, 0, 0, 6,  13, 10, 0,  0, 0};
    double want[64];
    for (int i = 0; i < 64; i++)
      want[i] = first_row[i];
    ref_standardize(want, 64);
    input_fill_batch(train, &o, 0, image, &label);
    CHECK(label == 0);
    CHECK(max_diff(image, want, 64) < 1e-5);
    input_fill_batch(test, &o, 358, image, &label); /* row 1795 from 1 */
    CHECK(label == 8);
  }
  input_dataset_free(train);
  input_dataset_free(test);
  return clg_test_summary("test_input --real-digits");
}

int main(int argc, char **argv)
{
  alarm(600); /* a reader that never stops fails the test instead of hanging CTest */
  if (argc == 3 && strcmp(argv[1], "--real-digits") == 0)
    return real_digits(argv[2]);
  const char *tmp = getenv("TMPDIR");
  snprintf(tmp_root, sizeof tmp_root, "%s/clg-test-input-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(tmp_root)) {
    fprintf(stderr, "test_input: mkdtemp %s: %s\n", tmp_root, strerror(errno));
    return 1;
  }
  remember(tmp_root);
  write_cifar_set("cifar");
  char root[600];
  snprintf(root, sizeof root, "%s/cifar", tmp_root);

  test_names();
  test_standardize();
  test_batch_index();
  test_cifar_file_order(root);
  test_distortion_draws();
  test_cifar_distorted(root);
  test_shuffle(root);
  test_synthetic();
  test_reader(root);
  test_cifar_errors();
  test_digits();
  test_digits_errors();
  cleanup();
  return clg_test_summary("test_input");
}
