/* The input pipeline of TensorFlow's CIFAR-10 tutorial in plain C (see cifar10_input.h and
 * ../shared/reference/cifar10-tutorial.md): readers for CIFAR-10's binary records, the UCI
 * digits CSV and synthetic images, the training distortions, the evaluation crop, per-image
 * standardization, per-epoch shuffling and a reader thread with a ring of prepared batches. */
#include "cifar10_input.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/core.h"

enum {
  CIFAR_SIDE = 32,
  CIFAR_CHANNELS = 3,
  CIFAR_PIXELS = CIFAR_SIDE * CIFAR_SIDE * CIFAR_CHANNELS, /* 3072 */
  CIFAR_RECORD = 1 + CIFAR_PIXELS,                         /* 3073: label byte, then pixels */
  CIFAR_CROP = 24,
  CIFAR_TRAIN_FILES = 5,
  DIGITS_SIDE = 8,
  DIGITS_PIXELS = DIGITS_SIDE * DIGITS_SIDE,
  DIGITS_COLUMNS = DIGITS_PIXELS + 1,
  SYNTHETIC_RECORDS = 10000,
  NUM_CLASSES = 10,
};
#define DIGITS_MAX_PIXEL 16.0
/* A decompressed digits file larger than this is not the 270 kB CSV Debian ships. */
#define DIGITS_MAX_BYTES ((size_t)64 << 20)

/* Domain tags: the generators of different purposes never share a stream. */
#define TAG_DISTORT 0x64697374ULL
#define TAG_SHUFFLE 0x73687566ULL
#define TAG_SYNTHETIC 0x73796e74ULL

/* ---- random numbers: splitmix64, seeded by hashing a tuple ----------------------------------- */

static uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

typedef struct rng {
  uint64_t state;
} rng;

/* A stream that depends only on (tag, seed, a, b): no shared state, so results never depend on
 * which thread draws or when. */
static rng rng_for(uint64_t tag, uint64_t seed, uint64_t a, uint64_t b)
{
  uint64_t h = mix64(tag + 0x9e3779b97f4a7c15ULL);
  h = mix64(h ^ seed);
  h = mix64(h ^ (a + 0x632be59bd9b4e019ULL));
  h = mix64(h ^ (b + 0x8cb92ba72f3d8dd7ULL));
  return (rng){h};
}

static uint64_t rng_next(rng *r)
{
  r->state += 0x9e3779b97f4a7c15ULL;
  return mix64(r->state);
}

/* Uniform in [0, 1) with 53 bits. */
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [0, n), n >= 1, without modulo bias. */
static uint64_t rng_below(rng *r, uint64_t n)
{
  uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* accept x < limit: a multiple of n values */
  uint64_t x;
  do {
    x = rng_next(r);
  } while (x >= limit);
  return x % n;
}

/* ---- errors --------------------------------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* ---- datasets ------------------------------------------------------------------------------- */

/* One cached permutation of the split's record positions for (seed, epoch). Two slots: a batch
 * that crosses an epoch boundary needs two permutations at once. */
typedef struct perm_slot {
  bool valid;
  uint64_t seed;
  int64_t epoch;
  uint32_t *perm;
} perm_slot;

struct input_dataset {
  input_dataset_kind kind;
  int64_t n;
  uint8_t *bytes;  /* CIFAR-10 and synthetic: n images of 32x32x3, HWC */
  float *values;   /* digits: n images of 8x8 */
  int32_t *labels; /* n labels, 0-9 */
  pthread_mutex_t perm_lock;
  perm_slot perms[2];
  unsigned perm_victim; /* the slot the next new permutation replaces */
};

bool input_dataset_parse(const char *name, input_dataset_kind *out)
{
  static const struct {
    const char *name;
    input_dataset_kind kind;
  } names[] = {
      {"cifar10", INPUT_CIFAR10}, {"digits", INPUT_DIGITS}, {"synthetic", INPUT_SYNTHETIC}};
  if (!name)
    return false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strcmp(name, names[i].name) == 0) {
      if (out)
        *out = names[i].kind;
      return true;
    }
  }
  return false;
}

const char *input_dataset_name(input_dataset_kind kind)
{
  switch (kind) {
  case INPUT_CIFAR10:
    return "cifar10";
  case INPUT_DIGITS:
    return "digits";
  case INPUT_SYNTHETIC:
    return "synthetic";
  }
  return "unknown";
}

/* Allocates a dataset of n records with its image and label storage and permutation cache. */
static input_dataset *dataset_new(input_dataset_kind kind, int64_t n, char *err, size_t errlen)
{
  input_dataset *d = calloc(1, sizeof *d);
  if (!d) {
    set_err(err, errlen, "out of memory for the %s dataset", input_dataset_name(kind));
    return NULL;
  }
  d->kind = kind;
  d->n = n;
  pthread_mutex_init(&d->perm_lock, NULL);
  size_t un = (size_t)n;
  if (kind == INPUT_DIGITS)
    d->values = malloc(un * DIGITS_PIXELS * sizeof *d->values);
  else
    d->bytes = malloc(un * CIFAR_PIXELS);
  d->labels = malloc(un * sizeof *d->labels);
  d->perms[0].perm = malloc(un * sizeof(uint32_t));
  d->perms[1].perm = malloc(un * sizeof(uint32_t));
  if ((!d->values && !d->bytes) || !d->labels || !d->perms[0].perm || !d->perms[1].perm) {
    set_err(err, errlen, "out of memory for %lld records of the %s dataset", (long long)n,
            input_dataset_name(kind));
    input_dataset_free(d);
    return NULL;
  }
  return d;
}

void input_dataset_free(input_dataset *d)
{
  if (!d)
    return;
  pthread_mutex_destroy(&d->perm_lock);
  free(d->bytes);
  free(d->values);
  free(d->labels);
  free(d->perms[0].perm);
  free(d->perms[1].perm);
  free(d);
}

int64_t input_dataset_num_records(const input_dataset *d) { return d ? d->n : 0; }

int input_dataset_image_size(const input_dataset *d)
{
  return d && d->kind == INPUT_DIGITS ? DIGITS_SIDE : CIFAR_CROP;
}

int input_dataset_channels(const input_dataset *d)
{
  return d && d->kind == INPUT_DIGITS ? 1 : CIFAR_CHANNELS;
}

/* Writes dir/sub/name into buf; false (with err) when it does not fit. */
static bool join_path(char *buf, size_t len, const char *dir, const char *sub, const char *name,
                      char *err, size_t errlen)
{
  int w =
      sub ? snprintf(buf, len, "%s/%s/%s", dir, sub, name) : snprintf(buf, len, "%s/%s", dir, name);
  if (w < 0 || (size_t)w >= len) {
    set_err(err, errlen, "%s: the path of %s is too long", dir, name);
    return false;
  }
  return true;
}

/* Reads up to len bytes (fewer only at the end of the file). -1 with errno on error. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, (char *)buf + got, len - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* ---- CIFAR-10 ------------------------------------------------------------------------------- */

typedef struct cifar_file {
  char path[4096];
  int fd;
  int64_t records;
} cifar_file;

/* Opens one file and checks that its size is a whole number of records. */
static bool cifar_open(cifar_file *f, char *err, size_t errlen)
{
  clg_code code = clg_file_open_read(f->path, &f->fd);
  if (code != CLG_OK) {
    set_err(err, errlen, "%s%s", clg_last_error(),
            code == CLG_NOT_FOUND ? " (the data folder must hold cifar-10-batches-bin/)" : "");
    return false;
  }
  struct stat st;
  if (fstat(f->fd, &st) != 0) {
    set_err(err, errlen, "%s: %s", f->path, strerror(errno));
    return false;
  }
  long long size = (long long)st.st_size;
  if (size == 0) {
    set_err(err, errlen, "%s: the file is empty (want records of %d bytes)", f->path, CIFAR_RECORD);
    return false;
  }
  if (size % CIFAR_RECORD != 0) {
    set_err(err, errlen, "%s: record %lld is truncated (%lld of %d bytes)", f->path,
            size / CIFAR_RECORD, size % CIFAR_RECORD, CIFAR_RECORD);
    return false;
  }
  f->records = size / CIFAR_RECORD;
  return true;
}

/* Reads one file's records into d from record `first` on: labels checked, pixels from
 * channel-major (1024 R, 1024 G, 1024 B) to HWC. */
static bool cifar_read(const cifar_file *f, input_dataset *d, int64_t first, uint8_t *buf,
                       int64_t buf_records, char *err, size_t errlen)
{
  int64_t done = 0;
  while (done < f->records) {
    int64_t want = f->records - done < buf_records ? f->records - done : buf_records;
    ssize_t got = read_full(f->fd, buf, (size_t)want * CIFAR_RECORD);
    if (got < 0) {
      set_err(err, errlen, "%s: %s", f->path, strerror(errno));
      return false;
    }
    if (got < (ssize_t)want * CIFAR_RECORD) { /* the file shrank since it was measured */
      set_err(err, errlen, "%s: record %lld is truncated (%lld of %d bytes)", f->path,
              (long long)(done + got / CIFAR_RECORD), (long long)(got % CIFAR_RECORD),
              CIFAR_RECORD);
      return false;
    }
    for (int64_t k = 0; k < want; k++) {
      const uint8_t *rec = buf + k * CIFAR_RECORD;
      int64_t index = done + k;
      if (rec[0] >= NUM_CLASSES) {
        set_err(err, errlen, "%s: record %lld has label %d (want 0-9)", f->path, (long long)index,
                rec[0]);
        return false;
      }
      d->labels[first + index] = rec[0];
      uint8_t *out = d->bytes + (size_t)(first + index) * CIFAR_PIXELS;
      const uint8_t *planes = rec + 1;
      for (int c = 0; c < CIFAR_CHANNELS; c++)
        for (int p = 0; p < CIFAR_SIDE * CIFAR_SIDE; p++)
          out[p * CIFAR_CHANNELS + c] = planes[c * CIFAR_SIDE * CIFAR_SIDE + p];
    }
    done += want;
  }
  return true;
}

static input_dataset *load_cifar(const char *dir, bool train, char *err, size_t errlen)
{
  cifar_file files[CIFAR_TRAIN_FILES];
  int nfiles = train ? CIFAR_TRAIN_FILES : 1;
  input_dataset *d = NULL;
  uint8_t *buf = NULL;
  bool ok = true;
  for (int i = 0; i < nfiles; i++)
    files[i].fd = -1;
  int64_t total = 0;
  for (int i = 0; i < nfiles && ok; i++) {
    char name[32];
    if (train)
      snprintf(name, sizeof name, "data_batch_%d.bin", i + 1);
    else
      snprintf(name, sizeof name, "test_batch.bin");
    ok = join_path(files[i].path, sizeof files[i].path, dir, "cifar-10-batches-bin", name, err,
                   errlen) &&
         cifar_open(&files[i], err, errlen);
    if (ok)
      total += files[i].records;
  }
  if (ok) {
    d = dataset_new(INPUT_CIFAR10, total, err, errlen);
    ok = d != NULL;
  }
  const int64_t buf_records = 256;
  if (ok) {
    buf = malloc((size_t)buf_records * CIFAR_RECORD);
    if (!buf) {
      set_err(err, errlen, "out of memory reading CIFAR-10");
      ok = false;
    }
  }
  int64_t first = 0;
  for (int i = 0; i < nfiles && ok; i++) {
    ok = cifar_read(&files[i], d, first, buf, buf_records, err, errlen);
    first += files[i].records;
  }
  for (int i = 0; i < nfiles; i++)
    if (files[i].fd >= 0)
      close(files[i].fd);
  free(buf);
  if (!ok) {
    input_dataset_free(d);
    return NULL;
  }
  return d;
}

/* ---- digits --------------------------------------------------------------------------------- */

/* Decompresses the whole file into a NUL-terminated buffer (*len bytes before the NUL). */
static char *gz_read_all(const char *path, size_t *len, char *err, size_t errlen)
{
  int fd;
  if (clg_file_open_read(path, &fd) != CLG_OK) {
    set_err(err, errlen, "%s", clg_last_error());
    return NULL;
  }
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    set_err(err, errlen, "%s: cannot start reading it with zlib", path);
    close(fd);
    return NULL;
  }
  size_t cap = 1 << 18, n = 0;
  char *buf = malloc(cap + 1);
  bool ok = buf != NULL;
  if (!ok)
    set_err(err, errlen, "%s: out of memory", path);
  while (ok) {
    if (n == cap) {
      if (cap >= DIGITS_MAX_BYTES) {
        set_err(err, errlen, "%s: more than %zu MB of text; not the digits CSV", path,
                DIGITS_MAX_BYTES >> 20);
        ok = false;
        break;
      }
      cap *= 2;
      char *bigger = realloc(buf, cap + 1);
      if (!bigger) {
        set_err(err, errlen, "%s: out of memory", path);
        ok = false;
        break;
      }
      buf = bigger;
    }
    size_t chunk = cap - n < INT_MAX ? cap - n : INT_MAX;
    int r = gzread(gz, buf + n, (unsigned)chunk);
    if (r <= 0) {
      int code = Z_OK;
      const char *msg = gzerror(gz, &code);
      /* A damaged or cut-off stream ends with data and then an error (Z_BUF_ERROR at an
       * early end of input). */
      if (r < 0 || (code != Z_OK && code != Z_STREAM_END)) {
        /* zlib prefixes its message with the name it knows, "<fd:N>: ". */
        const char *colon = msg ? strstr(msg, ": ") : NULL;
        set_err(err, errlen, "%s: cannot decompress: %s", path,
                code == Z_ERRNO ? strerror(errno)
                : colon         ? colon + 2
                : msg           ? msg
                                : "?");
        ok = false;
      }
      break;
    }
    n += (size_t)r;
  }
  gzclose(gz);
  if (!ok) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* Parses one field [s, e) as a finite number; false when it is not one. */
static bool parse_number(const char *s, const char *e, double *out)
{
  while (s < e && (*s == ' ' || *s == '\t'))
    s++;
  while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
    e--;
  if (s == e || (size_t)(e - s) >= 64)
    return false;
  char tmp[64];
  memcpy(tmp, s, (size_t)(e - s));
  tmp[e - s] = '\0';
  char *end = NULL;
  errno = 0;
  double v = strtod(tmp, &end);
  if (errno != 0 || end != tmp + (e - s) || !isfinite(v))
    return false;
  *out = v;
  return true;
}

/* The field [s, e) for an error message, shortened. */
static void field_text(const char *s, const char *e, char *out, size_t len)
{
  size_t n = (size_t)(e - s);
  if (n >= len)
    n = len - 1;
  memcpy(out, s, n);
  out[n] = '\0';
}

/* Parses one CSV row (line `row`, 1-based) into 64 pixels and a label. */
static bool digits_row(const char *path, long long row, const char *line, const char *end,
                       float *pixels, int32_t *label, char *err, size_t errlen)
{
  int columns = 1;
  for (const char *p = line; p < end; p++)
    columns += *p == ',';
  if (columns != DIGITS_COLUMNS) {
    set_err(err, errlen, "%s: row %lld has %d values, want %d (64 pixels, then the label)", path,
            row, columns, DIGITS_COLUMNS);
    return false;
  }
  const char *s = line;
  for (int col = 1; col <= DIGITS_COLUMNS; col++) {
    const char *e = s;
    while (e < end && *e != ',')
      e++;
    char text[32];
    field_text(s, e, text, sizeof text);
    double v;
    if (!parse_number(s, e, &v)) {
      set_err(err, errlen, "%s: row %lld, column %d: '%s' is not a number", path, row, col, text);
      return false;
    }
    if (col <= DIGITS_PIXELS) {
      if (v < 0.0 || v > DIGITS_MAX_PIXEL) {
        set_err(err, errlen, "%s: row %lld, column %d: pixel value %s is out of range (want 0-16)",
                path, row, col, text);
        return false;
      }
      pixels[col - 1] = (float)v;
    } else {
      if (v < 0.0 || v > NUM_CLASSES - 1 || v != floor(v)) {
        set_err(err, errlen, "%s: row %lld, column %d: label %s is not one of 0-9", path, row, col,
                text);
        return false;
      }
      *label = (int32_t)v;
    }
    s = e + 1;
  }
  return true;
}

static input_dataset *load_digits(const char *dir, bool train, char *err, size_t errlen)
{
  char path[4096];
  if (!join_path(path, sizeof path, dir, NULL, "digits.csv.gz", err, errlen))
    return NULL;
  size_t len = 0;
  char *text = gz_read_all(path, &len, err, errlen);
  if (!text)
    return NULL;
  if (len == 0) {
    set_err(err, errlen, "%s: the file is empty (want rows of 64 pixels and a label)", path);
    free(text);
    return NULL;
  }
  /* Rows: lines, without trailing empty lines. */
  long long rows = 0, last_nonempty = 0;
  for (const char *p = text; p < text + len;) {
    const char *nl = memchr(p, '\n', (size_t)(text + len - p));
    const char *e = nl ? nl : text + len;
    rows++;
    if (e > p && !(e - p == 1 && *p == '\r'))
      last_nonempty = rows;
    p = nl ? nl + 1 : text + len;
  }
  rows = last_nonempty;
  if (rows < 5) {
    set_err(err, errlen, "%s: %lld row%s; want at least 5 (every fifth row is the test split)",
            path, rows, rows == 1 ? "" : "s");
    free(text);
    return NULL;
  }
  /* The test split is every fifth row (rows 5, 10, ... counted from 1): 359 of Debian's 1,797,
   * from the same writers as the training rows (the file's last rows are other writers'). */
  long long test_rows = rows / 5;
  long long count = train ? rows - test_rows : test_rows;
  input_dataset *d = dataset_new(INPUT_DIGITS, count, err, errlen);
  if (!d) {
    free(text);
    return NULL;
  }
  /* Every row is checked (a bad row fails both splits); only the split's rows are kept. */
  long long row = 0, kept = 0;
  bool ok = true;
  float pixels[DIGITS_PIXELS];
  for (const char *p = text; ok && row < rows;) {
    const char *nl = memchr(p, '\n', (size_t)(text + len - p));
    const char *e = nl ? nl : text + len;
    row++;
    if (e > p && e[-1] == '\r')
      e--;
    int32_t label = 0;
    if (e == p) {
      set_err(err, errlen, "%s: row %lld is empty", path, row);
      ok = false;
    } else if (digits_row(path, row, p, e, pixels, &label, err, errlen)) {
      const bool is_test = row % 5 == 0;
      if (is_test != train && kept < count) {
        memcpy(d->values + (size_t)kept * DIGITS_PIXELS, pixels, sizeof pixels);
        d->labels[kept++] = label;
      }
    } else {
      ok = false;
    }
    p = nl ? nl + 1 : text + len;
  }
  free(text);
  if (!ok) {
    input_dataset_free(d);
    return NULL;
  }
  return d;
}

/* ---- synthetic ------------------------------------------------------------------------------ */

static input_dataset *load_synthetic(bool train, uint64_t seed, char *err, size_t errlen)
{
  input_dataset *d = dataset_new(INPUT_SYNTHETIC, SYNTHETIC_RECORDS, err, errlen);
  if (!d)
    return NULL;
  rng r = rng_for(TAG_SYNTHETIC, seed, train ? 0 : 1, 0);
  size_t total = (size_t)SYNTHETIC_RECORDS * CIFAR_PIXELS;
  for (size_t i = 0; i < total; i += 8) {
    uint64_t x = rng_next(&r);
    for (size_t k = 0; k < 8 && i + k < total; k++)
      d->bytes[i + k] = (uint8_t)(x >> (8 * k));
  }
  for (int64_t i = 0; i < SYNTHETIC_RECORDS; i++)
    d->labels[i] = (int32_t)rng_below(&r, NUM_CLASSES);
  return d;
}

input_dataset *input_dataset_load(input_dataset_kind kind, const char *dir, bool train,
                                  uint64_t seed, char *err, size_t errlen)
{
  set_err(err, errlen, "%s", "");
  if (kind == INPUT_SYNTHETIC)
    return load_synthetic(train, seed, err, errlen);
  if (!dir || !*dir) {
    set_err(err, errlen, "the %s dataset needs a data folder", input_dataset_name(kind));
    return NULL;
  }
  if (kind == INPUT_CIFAR10)
    return load_cifar(dir, train, err, errlen);
  if (kind == INPUT_DIGITS)
    return load_digits(dir, train, err, errlen);
  set_err(err, errlen, "unknown dataset kind %d", (int)kind);
  return NULL;
}

/* ---- batches -------------------------------------------------------------------------------- */

int64_t input_batch_index(const input_options *o, int64_t step, int tower)
{
  int64_t towers = o->towers > 0 ? o->towers : 1;
  int64_t per_step = o->batches_per_step > 0 ? o->batches_per_step : towers;
  return step * per_step + o->tower_offset + tower;
}

void input_distortion_draw(uint64_t seed, int64_t batch_index, int row, input_distortion *out)
{
  rng r = rng_for(TAG_DISTORT, seed, (uint64_t)batch_index, (uint64_t)(int64_t)row);
  /* tf.random_crop: offsets uniform in 0..32-24; flip with probability 1/2; brightness delta
   * ~ U[-63, 63); contrast factor ~ U[0.2, 1.8). */
  out->crop_y = (int)rng_below(&r, CIFAR_SIDE - CIFAR_CROP + 1);
  out->crop_x = (int)rng_below(&r, CIFAR_SIDE - CIFAR_CROP + 1);
  out->flip = rng_uniform(&r) < 0.5;
  out->brightness = (float)(-63.0 + 126.0 * rng_uniform(&r));
  out->contrast = (float)(0.2 + 1.6 * rng_uniform(&r));
}

void input_digits_shift(const input_distortion *t, int *dy, int *dx)
{
  /* crop_y and crop_x are uniform over 0..8: modulo 3 each shift is equally likely. */
  *dy = t->crop_y % 3 - 1;
  *dx = t->crop_x % 3 - 1;
}

/* out[y][x] = src[y + dy][x + dx], 0 (the digits' background) outside the image. */
static void shift_digit(const float *src, int dy, int dx, float *out)
{
  for (int y = 0; y < DIGITS_SIDE; y++)
    for (int x = 0; x < DIGITS_SIDE; x++) {
      int sy = y + dy, sx = x + dx;
      out[y * DIGITS_SIDE + x] = sy >= 0 && sy < DIGITS_SIDE && sx >= 0 && sx < DIGITS_SIDE
                                     ? src[sy * DIGITS_SIDE + sx]
                                     : 0.0f;
    }
}

/* The permutation of epoch `epoch` under seed: Fisher-Yates from a generator of (seed, epoch).
 * Called with perm_lock held; the result is valid until the lock is released. */
static const uint32_t *epoch_perm(input_dataset *d, uint64_t seed, int64_t epoch)
{
  for (int s = 0; s < 2; s++)
    if (d->perms[s].valid && d->perms[s].seed == seed && d->perms[s].epoch == epoch)
      return d->perms[s].perm;
  perm_slot *slot = &d->perms[d->perm_victim];
  d->perm_victim ^= 1;
  uint32_t *p = slot->perm;
  for (int64_t i = 0; i < d->n; i++)
    p[i] = (uint32_t)i;
  rng r = rng_for(TAG_SHUFFLE, seed, (uint64_t)epoch, 0);
  for (int64_t i = d->n - 1; i > 0; i--) {
    int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
    uint32_t t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  slot->valid = true;
  slot->seed = seed;
  slot->epoch = epoch;
  return p;
}

/* The records of rows [0, count) of batch b. */
static void batch_records(const input_dataset *d, const input_options *o, int64_t b, int count,
                          int64_t *records)
{
  input_dataset *m = (input_dataset *)d; /* only the permutation cache changes, under its lock */
  if (o->shuffle)
    pthread_mutex_lock(&m->perm_lock);
  for (int row = 0; row < count; row++) {
    int64_t pos = b * o->batch + row;
    int64_t epoch = pos / d->n, i = pos % d->n;
    if (i < 0) {
      i += d->n;
      epoch--;
    }
    records[row] = o->shuffle ? (int64_t)epoch_perm(m, o->seed, epoch)[i] : i;
  }
  if (o->shuffle)
    pthread_mutex_unlock(&m->perm_lock);
}

int64_t input_batch_record(const input_dataset *d, const input_options *o, int64_t batch_index,
                           int row)
{
  int64_t rec = 0;
  input_options one = *o;
  /* Row r of batch b is position b*batch + r: ask for it as row 0 of a batch of one. */
  int64_t pos = batch_index * o->batch + row;
  one.batch = 1;
  batch_records(d, &one, pos, 1, &rec);
  return rec;
}

/* One 24x24x3 image from a stored 32x32x3 record: the crop (flipped), then brightness and
 * contrast when distorting. */
static void crop_image(const uint8_t *src, const input_distortion *t, bool distort, float *out)
{
  for (int y = 0; y < CIFAR_CROP; y++)
    for (int x = 0; x < CIFAR_CROP; x++) {
      int sx = t->crop_x + (t->flip ? CIFAR_CROP - 1 - x : x);
      const uint8_t *px = src + ((t->crop_y + y) * CIFAR_SIDE + sx) * CIFAR_CHANNELS;
      float *o = out + (y * CIFAR_CROP + x) * CIFAR_CHANNELS;
      for (int c = 0; c < CIFAR_CHANNELS; c++)
        o[c] = (float)px[c];
    }
  if (!distort)
    return;
  const int pixels = CIFAR_CROP * CIFAR_CROP;
  double mean[CIFAR_CHANNELS] = {0};
  for (int p = 0; p < pixels; p++)
    for (int c = 0; c < CIFAR_CHANNELS; c++) {
      out[p * CIFAR_CHANNELS + c] += t->brightness;
      mean[c] += out[p * CIFAR_CHANNELS + c];
    }
  for (int c = 0; c < CIFAR_CHANNELS; c++)
    mean[c] /= pixels;
  for (int p = 0; p < pixels; p++)
    for (int c = 0; c < CIFAR_CHANNELS; c++) {
      float *v = &out[p * CIFAR_CHANNELS + c];
      *v = (float)((*v - mean[c]) * t->contrast + mean[c]);
    }
}

void input_fill_batch(const input_dataset *d, const input_options *o, int64_t batch_index,
                      float *images, int32_t *labels)
{
  if (!d || !o || o->batch <= 0 || d->n <= 0)
    return;
  int size = input_dataset_image_size(d), channels = input_dataset_channels(d);
  size_t per_image = (size_t)size * size * channels;
  int64_t records_small[256];
  /* Without memory for a large batch's list, each row looks its record up alone. */
  int64_t *records = o->batch <= 256 ? records_small : malloc((size_t)o->batch * sizeof *records);
  if (records)
    batch_records(d, o, batch_index, o->batch, records);
  for (int row = 0; row < o->batch; row++) {
    int64_t rec = records ? records[row] : input_batch_record(d, o, batch_index, row);
    float *out = images + (size_t)row * per_image;
    labels[row] = d->labels[rec];
    if (d->kind == INPUT_DIGITS) {
      int dy = 0, dx = 0;
      if (o->distort) {
        input_distortion t;
        input_distortion_draw(o->seed, batch_index, row, &t);
        input_digits_shift(&t, &dy, &dx);
      }
      shift_digit(d->values + (size_t)rec * DIGITS_PIXELS, dy, dx, out);
    } else {
      input_distortion t = {(CIFAR_SIDE - CIFAR_CROP) / 2, (CIFAR_SIDE - CIFAR_CROP) / 2, false,
                            0.0f, 1.0f};
      if (o->distort)
        input_distortion_draw(o->seed, batch_index, row, &t);
      crop_image(d->bytes + (size_t)rec * CIFAR_PIXELS, &t, o->distort, out);
    }
    input_standardize(out, per_image);
  }
  if (records != records_small)
    free(records);
}

void input_standardize(float *x, size_t n)
{
  if (n == 0)
    return;
  double sum = 0.0;
  for (size_t i = 0; i < n; i++)
    sum += x[i];
  double mean = sum / (double)n, squares = 0.0;
  for (size_t i = 0; i < n; i++) {
    double dv = x[i] - mean;
    squares += dv * dv;
  }
  double stddev = sqrt(squares / (double)n), least = 1.0 / sqrt((double)n);
  double scale = stddev > least ? stddev : least;
  for (size_t i = 0; i < n; i++)
    x[i] = (float)((x[i] - mean) / scale);
}

/* ---- the reader thread ---------------------------------------------------------------------- */

struct input_reader {
  const input_dataset *d;
  input_options o;
  size_t image_floats; /* floats of one batch's images */
  int slots;
  float **images;
  int32_t **labels;
  pthread_mutex_t lock;
  pthread_cond_t ready; /* a batch was published */
  pthread_cond_t space; /* a slot was freed, or stop */
  int head, count;      /* the oldest filled slot; filled slots (both under lock) */
  bool stop;
  bool started;
  pthread_t thread;
};

/* The producer: fills slot (head + count) % slots outside the lock (no one else touches a
 * slot that is not filled), then publishes it. */
static void *reader_main(void *arg)
{
  input_reader *r = arg;
  int towers = r->o.towers > 0 ? r->o.towers : 1;
  int tail = 0;
  for (int64_t k = 0;; k++) {
    pthread_mutex_lock(&r->lock);
    while (r->count == r->slots && !r->stop)
      pthread_cond_wait(&r->space, &r->lock);
    bool stop = r->stop;
    pthread_mutex_unlock(&r->lock);
    if (stop)
      break;
    int64_t step = r->o.first_step + k / towers;
    int tower = (int)(k % towers);
    input_fill_batch(r->d, &r->o, input_batch_index(&r->o, step, tower), r->images[tail],
                     r->labels[tail]);
    pthread_mutex_lock(&r->lock);
    r->count++;
    pthread_cond_signal(&r->ready);
    pthread_mutex_unlock(&r->lock);
    tail = (tail + 1) % r->slots;
  }
  return NULL;
}

static void reader_free(input_reader *r)
{
  for (int s = 0; s < r->slots; s++) {
    if (r->images)
      free(r->images[s]);
    if (r->labels)
      free(r->labels[s]);
  }
  free(r->images);
  free(r->labels);
  pthread_cond_destroy(&r->ready);
  pthread_cond_destroy(&r->space);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

input_reader *input_reader_start(const input_dataset *d, const input_options *o)
{
  if (!d || !o || o->batch <= 0 || d->n <= 0)
    return NULL;
  input_reader *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->d = d;
  r->o = *o;
  int size = input_dataset_image_size(d), channels = input_dataset_channels(d);
  r->image_floats = (size_t)o->batch * size * size * channels;
  r->slots = o->prefetch > 0 ? o->prefetch : 1;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->ready, NULL);
  pthread_cond_init(&r->space, NULL);
  r->images = calloc((size_t)r->slots, sizeof *r->images);
  r->labels = calloc((size_t)r->slots, sizeof *r->labels);
  bool ok = r->images && r->labels;
  for (int s = 0; ok && s < r->slots; s++) {
    r->images[s] = malloc(r->image_floats * sizeof(float));
    r->labels[s] = malloc((size_t)o->batch * sizeof(int32_t));
    ok = r->images[s] && r->labels[s];
  }
  if (ok)
    ok = pthread_create(&r->thread, NULL, reader_main, r) == 0;
  if (!ok) {
    reader_free(r);
    return NULL;
  }
  r->started = true;
  return r;
}

static double now_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double input_reader_next(input_reader *r, float *images, int32_t *labels)
{
  double waited = 0.0;
  pthread_mutex_lock(&r->lock);
  if (r->count == 0) {
    double t0 = now_seconds();
    while (r->count == 0)
      pthread_cond_wait(&r->ready, &r->lock);
    waited = now_seconds() - t0;
  }
  int head = r->head;
  pthread_mutex_unlock(&r->lock);
  /* The filled head slot is the consumer's until it is released below. */
  memcpy(images, r->images[head], r->image_floats * sizeof(float));
  memcpy(labels, r->labels[head], (size_t)r->o.batch * sizeof(int32_t));
  pthread_mutex_lock(&r->lock);
  r->head = (head + 1) % r->slots;
  r->count--;
  pthread_cond_signal(&r->space);
  pthread_mutex_unlock(&r->lock);
  return waited;
}

void input_reader_stop(input_reader *r)
{
  if (!r)
    return;
  pthread_mutex_lock(&r->lock);
  r->stop = true;
  pthread_cond_broadcast(&r->space);
  pthread_mutex_unlock(&r->lock);
  if (r->started)
    pthread_join(r->thread, NULL);
  reader_free(r);
}
