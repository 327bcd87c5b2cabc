/* The input pipeline of TensorFlow's CIFAR-10 tutorial (cifar10_input.py), in plain C: the
 * datasets clgraph train and eval read (CIFAR-10's binary records, the UCI digits that
 * Debian's python3-sklearn ships, synthetic images), the tutorial's training distortions and
 * evaluation crop, per-image standardization, and a reader thread that prepares batches
 * ahead of the training loop. Uses no clgraph call: batches are plain float/int32 arrays. */
#ifndef CLG_CIFAR10_INPUT_H
#define CLG_CIFAR10_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum input_dataset_kind {
  INPUT_CIFAR10,   /* <dir>/cifar-10-batches-bin/data_batch_{1..5}.bin, test_batch.bin */
  INPUT_DIGITS,    /* <dir>/digits.csv.gz: 1,797 rows of 64 pixels (0-16) and a label */
  INPUT_SYNTHETIC, /* random images and labels from the seed, for throughput */
} input_dataset_kind;

/* Parses "cifar10", "digits", "synthetic"; false for anything else. */
bool input_dataset_parse(const char *name, input_dataset_kind *out);
const char *input_dataset_name(input_dataset_kind kind);

/* A split of a dataset, all records in memory as the files hold them. */
typedef struct input_dataset input_dataset;

/* Loads the training split (train = true) or the test split. For the digits the test split
 * is every fifth row of digits.csv.gz (rows 5, 10, ..., 1795 counted from 1: 359 images) and
 * the training split the other 1,438, so both hold the same writers' digits. Synthetic data has 10,000 records of 32x32x3 and
 * ignores dir (the test split draws other images than the training split). On failure returns
 * NULL and writes into err a message that names the file and, for a bad record, the record
 * (e.g. "data_batch_2.bin: record 9999 is truncated (1234 of 3073 bytes)"; CIFAR-10 records
 * are numbered from 0 within their file, digits rows by their 1-based line number). */
input_dataset *input_dataset_load(input_dataset_kind kind, const char *dir, bool train,
                                  uint64_t seed, char *err, size_t errlen);
void input_dataset_free(input_dataset *d);

int64_t input_dataset_num_records(const input_dataset *d);
/* The model's image: 24x24x3 for CIFAR-10 and synthetic (the crop), 8x8x1 for the digits. */
int input_dataset_image_size(const input_dataset *d);
int input_dataset_channels(const input_dataset *d);

/* What a batch looks like and which records it holds. Batches are numbered globally: at
 * step s, tower t of this process reads batch s*batches_per_step + tower_offset + t (one
 * process: batches_per_step = towers, tower_offset = 0, so batches are read 0, 1, 2, ...; MPI
 * task K of P with T towers each: batches_per_step = P*T, tower_offset = K*T). With shuffle off,
 * batch b holds records
 * b*batch .. b*batch+batch-1 in file order, wrapping around the end of the split (records of
 * all files in order: data_batch_1 first). With shuffle on, record positions p are mapped
 * through a permutation of the split drawn per epoch (p / num_records) from the seed.
 * Distortions (training only, CIFAR-10 and synthetic: random 24x24 crop, left-right flip,
 * brightness, contrast; for the digits a random shift by one pixel, see input_digits_shift) draw
 * from a generator seeded by (seed, batch, row), so a batch's contents do not depend on threads or
 * timing. Without distortions an image is the central crop. Every image then gets per-image
 * standardization. */
typedef struct input_options {
  int batch;    /* records per batch */
  bool distort; /* the tutorial's training distortions */
  bool shuffle; /* shuffled record order (else file order) */
  uint64_t seed;
  int towers;               /* batches per step this process reads (at least 1) */
  int64_t batches_per_step; /* over all processes; 0 means towers */
  int64_t tower_offset;     /* global number of this process's first tower */
  int64_t first_step;       /* the reader starts at this step (resume) */
  int prefetch;             /* batches prepared ahead by the reader thread (at least 1) */
} input_options;

/* Fills one batch: images [batch, size, size, channels] float32 (NHWC), labels [batch]
 * int32. Usable without a reader thread (evaluation, tests). */
void input_fill_batch(const input_dataset *d, const input_options *o, int64_t batch_index,
                      float *images, int32_t *labels);

/* The global number of the batch tower t reads at step s under o. */
int64_t input_batch_index(const input_options *o, int64_t step, int tower);

/* The record (0 .. num_records-1, in file order) that row `row` of batch batch_index holds
 * under o: what input_fill_batch reads there (for checks and step-by-step comparisons). */
int64_t input_batch_record(const input_dataset *d, const input_options *o, int64_t batch_index,
                           int row);

/* The random distortion of one training image (CIFAR-10 and synthetic, o->distort): the
 * 24x24 window's top-left corner in the 32x32 image (0..8 each), whether the crop is
 * mirrored left-right, the brightness delta added to every value (U[-63, 63)) and the
 * contrast factor (U[0.2, 1.8)). input_fill_batch applies exactly the draw of
 * (o->seed, batch_index, row). */
typedef struct input_distortion {
  int crop_y, crop_x;
  bool flip;
  float brightness;
  float contrast;
} input_distortion;

void input_distortion_draw(uint64_t seed, int64_t batch_index, int row, input_distortion *out);

/* The digits' distortion, their counterpart of the random crop: the 8x8 image padded with one
 * row and column of background on each side and cropped back to 8x8 at a random place, i.e.
 * shifted by dy, dx in -1..1 (from the draw's crop offsets; no flip, brightness or contrast:
 * a mirrored digit is another digit, and standardization undoes the other two). */
void input_digits_shift(const input_distortion *t, int *dy, int *dx);

/* A reader thread that fills, ahead of the consumer and into a ring of `prefetch` slots, the
 * batches of step first_step towers 0..towers-1, then of the next step, and so on. */
typedef struct input_reader input_reader;

/* NULL when o->batch < 1 or memory or a thread cannot be had. d must outlive the reader. */
input_reader *input_reader_start(const input_dataset *d, const input_options *o);
/* Copies the next batch into images/labels (sized as for input_fill_batch) and returns the
 * number of seconds the caller waited for it (0 when it was ready). */
double input_reader_next(input_reader *r, float *images, int32_t *labels);
/* Stops and joins the thread; frees the reader. NULL is fine. */
void input_reader_stop(input_reader *r);

/* Per-image standardization of n floats in place: (x - mean) / max(stddev, 1/sqrt(n)). */
void input_standardize(float *x, size_t n);

#endif
