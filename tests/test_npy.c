/* numpy's .npy files: clg_tensor_load_npy against files numpy wrote (tests/data/npy/, made by
 * make_npy.py there), their values recomputed here from the script's formulas;
 * clg_tensor_save_npy against np.save byte for byte; and every kind of bad file refused with
 * a message naming it. Needs no OpenCL. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "testutil.h"

static char data_dir[1024];

static const char *fixture(const char *name)
{
  static char path[1200];
  snprintf(path, sizeof path, "%s/%s", data_dir, name);
  return path;
}

/* The whole file, malloc'd. */
static uint8_t *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  *len = b ? fread(b, 1, (size_t)n, f) : 0;
  fclose(f);
  return b;
}

static clg_tensor *load(const char *name, clg_dtype dtype, int rank, const int64_t *dims)
{
  clg_tensor *t = NULL;
  CHECK_OK(clg_tensor_load_npy(fixture(name), &t));
  if (!t)
    return NULL;
  CHECK_MSG(clg_tensor_dtype(t) == dtype, "%s: dtype %d, want %d", name, clg_tensor_dtype(t),
            dtype);
  CHECK_MSG(clg_tensor_rank(t) == rank, "%s: rank %d, want %d", name, clg_tensor_rank(t), rank);
  for (int i = 0; i < rank && i < clg_tensor_rank(t); i++)
    CHECK_MSG(clg_tensor_dim(t, i) == dims[i], "%s: dim %d is %lld, want %lld", name, i,
              (long long)clg_tensor_dim(t, i), (long long)dims[i]);
  /* The same bytes through the memory reader give the same tensor. */
  size_t len = 0;
  uint8_t *b = slurp(fixture(name), &len);
  clg_tensor *m = NULL;
  CHECK_OK(clg_tensor_load_npy_memory(b, len, name, &m));
  CHECK(m && clg_tensor_bytes(m) == clg_tensor_bytes(t) &&
        memcmp(clg_tensor_const_data(m), clg_tensor_const_data(t), clg_tensor_bytes(t)) == 0);
  clg_tensor_free(m);
  free(b);
  return t;
}

static void test_values(void)
{
  clg_tensor *t = load("f32_2x3.npy", CLG_FLOAT32, 2, (int64_t[]){2, 3});
  for (int i = 0; t && i < 6; i++)
    CHECK(((const float *)clg_tensor_const_data(t))[i] == (float)i * 0.5f - 1);
  clg_tensor_free(t);
  for (int v = 2; v <= 3; v++) {
    char name[32];
    snprintf(name, sizeof name, "f32_2x3_v%d.npy", v);
    t = load(name, CLG_FLOAT32, 2, (int64_t[]){2, 3});
    for (int i = 0; t && i < 6; i++)
      CHECK(((const float *)clg_tensor_const_data(t))[i] == (float)i * 0.5f - 1);
    clg_tensor_free(t);
  }
  t = load("f64_scalar.npy", CLG_FLOAT64, 0, NULL);
  CHECK(t && clg_tensor_count(t) == 1 && *(const double *)clg_tensor_const_data(t) == 3.25);
  clg_tensor_free(t);
  /* float16 as its bit patterns: 0, 1, -2.5, the largest half, the smallest subnormal. */
  t = load("f16_5.npy", CLG_FLOAT16, 1, (int64_t[]){5});
  const double halves[5] = {0, 1, -2.5, 65504, ldexp(1, -24)};
  const uint16_t bits[5] = {0x0000, 0x3c00, 0xc100, 0x7bff, 0x0001};
  for (int i = 0; t && i < 5; i++) {
    uint16_t h = ((const uint16_t *)clg_tensor_const_data(t))[i];
    CHECK_MSG(h == bits[i] && clg_half_to_double(h) == halves[i], "half %d: 0x%04x", i, h);
  }
  clg_tensor_free(t);
  /* int8, int16, uint8 and uint16 as themselves (make_npy.py's values). */
  t = load("i8_4.npy", CLG_INT8, 1, (int64_t[]){4});
  const int8_t i8[4] = {-128, -1, 0, 127};
  CHECK(t && memcmp(clg_tensor_const_data(t), i8, sizeof i8) == 0);
  clg_tensor_free(t);
  t = load("i16_5.npy", CLG_INT16, 1, (int64_t[]){5});
  const int16_t i16[5] = {-32768, -1, 0, 1, 32767};
  CHECK(t && memcmp(clg_tensor_const_data(t), i16, sizeof i16) == 0);
  clg_tensor_free(t);
  t = load("u8_3.npy", CLG_UINT8, 1, (int64_t[]){3});
  const uint8_t u8[3] = {0, 128, 255};
  CHECK(t && memcmp(clg_tensor_const_data(t), u8, sizeof u8) == 0);
  clg_tensor_free(t);
  t = load("u16_2.npy", CLG_UINT16, 1, (int64_t[]){2});
  const uint16_t u16[2] = {1, 2};
  CHECK(t && memcmp(clg_tensor_const_data(t), u16, sizeof u16) == 0);
  clg_tensor_free(t);
  t = load("i32_2x2.npy", CLG_INT32, 2, (int64_t[]){2, 2});
  const int32_t i32[4] = {INT32_MIN, -1, 0, INT32_MAX};
  CHECK(t && memcmp(clg_tensor_const_data(t), i32, sizeof i32) == 0);
  clg_tensor_free(t);
  t = load("i64_3.npy", CLG_INT64, 1, (int64_t[]){3});
  const int64_t i64[3] = {INT64_MIN, 0, INT64_MAX};
  CHECK(t && memcmp(clg_tensor_const_data(t), i64, sizeof i64) == 0);
  clg_tensor_free(t);
  t = load("bool_4.npy", CLG_BOOL, 1, (int64_t[]){4});
  const uint8_t b4[4] = {1, 0, 0, 1};
  CHECK(t && memcmp(clg_tensor_const_data(t), b4, sizeof b4) == 0);
  clg_tensor_free(t);
  t = load("f32_0x3.npy", CLG_FLOAT32, 2, (int64_t[]){0, 3});
  CHECK(t && clg_tensor_count(t) == 0);
  clg_tensor_free(t);
  t = load("f32_rank8.npy", CLG_FLOAT32, 8, (int64_t[]){2, 2, 2, 2, 2, 2, 2, 2});
  for (int i = 0; t && i < 256; i++)
    CHECK(((const float *)clg_tensor_const_data(t))[i] == (float)i);
  clg_tensor_free(t);
}

/* clg_tensor_save_npy writes what np.save wrote, byte for byte, for every dtype clgraph
 * has a fixture of. */
static void test_save_matches_numpy(void)
{
  static const char *names[] = {"f32_2x3.npy", "f64_scalar.npy", "f16_5.npy",   "i32_2x2.npy",
                                "i64_3.npy",   "bool_4.npy",     "f32_0x3.npy", "f32_rank8.npy",
                                "i8_4.npy",    "i16_5.npy",      "u8_3.npy",    "u16_2.npy"};
  char out[256];
  snprintf(out, sizeof out, "/tmp/test_npy_%d.npy", (int)getpid());
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    clg_tensor *t = NULL;
    CHECK_OK(clg_tensor_load_npy(fixture(names[i]), &t));
    CHECK_OK(clg_tensor_save_npy(t, out));
    size_t la = 0, lb = 0;
    uint8_t *a = slurp(fixture(names[i]), &la), *b = slurp(out, &lb);
    CHECK_MSG(a && b && la == lb && memcmp(a, b, la) == 0, "%s: saved %zu bytes, numpy %zu",
              names[i], lb, la);
    free(a);
    free(b);
    clg_tensor_free(t);
  }
  /* Writes are atomic: a folder that does not exist is NOT_FOUND naming the file. */
  int64_t d = 2;
  clg_tensor *t = clg_tensor_new(CLG_FLOAT32, 1, &d, (const float[]){1, 2});
  CHECK_CODE(clg_tensor_save_npy(t, "/nonexistent-folder/x.npy"), CLG_NOT_FOUND);
  CHECK_CONTAINS(clg_last_error(), "/nonexistent-folder/x.npy");
  clg_tensor_free(t);
  unlink(out);
}

/* A refused file: code, and a message naming the file and the fault. */
static void refused_file(const char *name, clg_code code, const char *why)
{
  clg_tensor *t = (clg_tensor *)1;
  CHECK_CODE(clg_tensor_load_npy(fixture(name), &t), code);
  CHECK(t == NULL);
  CHECK_CONTAINS(clg_last_error(), fixture(name));
  CHECK_CONTAINS(clg_last_error(), why);
}

static void refused_bytes(const void *b, size_t len, clg_code code, const char *why)
{
  clg_tensor *t = (clg_tensor *)1;
  CHECK_CODE(clg_tensor_load_npy_memory(b, len, "bad.npy", &t), code);
  if (code == CLG_OK) { /* a header numpy reads too */
    CHECK(t != NULL && t != (clg_tensor *)1);
    if (t != (clg_tensor *)1)
      clg_tensor_free(t);
    return;
  }
  CHECK(t == NULL);
  CHECK_CONTAINS(clg_last_error(), "bad.npy: ");
  CHECK_CONTAINS(clg_last_error(), why);
}

/* A version 1.0 file with this header text (padded with spaces and '\n' as numpy does) and
 * `data` bytes of 0 after it. */
static void header_case(const char *dict, size_t data, clg_code code, const char *why)
{
  uint8_t b[512] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  size_t n = strlen(dict), hlen = n + 1;
  hlen += (64 - (10 + hlen) % 64) % 64;
  b[8] = (uint8_t)hlen;
  b[9] = (uint8_t)(hlen >> 8);
  memcpy(b + 10, dict, n);
  memset(b + 10 + n, ' ', hlen - n - 1);
  b[10 + hlen - 1] = '\n';
  refused_bytes(b, 10 + hlen + data, code, why);
}

static void test_refused(void)
{
  refused_file("f32_big_endian.npy", CLG_UNIMPLEMENTED, "'>f4' is big-endian");
  refused_file("f32_fortran.npy", CLG_UNIMPLEMENTED, "Fortran order");
  refused_file("str_2.npy", CLG_UNIMPLEMENTED, "dtype '<U2' is not one clgraph reads");
  refused_file("f32_rank9.npy", CLG_UNIMPLEMENTED, "more than 8 dimensions");
  refused_file("make_npy.py", CLG_INVALID_ARGUMENT, "not an .npy file");
  clg_tensor *t = NULL;
  CHECK_CODE(clg_tensor_load_npy(data_dir, &t), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "not a regular file");
  CHECK_CODE(clg_tensor_load_npy(fixture("absent.npy"), &t), CLG_NOT_FOUND);
  CHECK_CONTAINS(clg_last_error(), "absent.npy");

  /* Every cut of a real file is DATA_LOSS or, before the magic is whole, not an .npy. */
  size_t len = 0;
  uint8_t *f = slurp(fixture("f32_2x3.npy"), &len);
  for (size_t cut = 0; f && cut < len; cut++) {
    const clg_code want = CLG_DATA_LOSS;
    t = (clg_tensor *)1;
    clg_code got = clg_tensor_load_npy_memory(f, cut, "cut.npy", &t);
    CHECK_MSG(got == want && t == NULL, "cut at %zu: %s (%s)", cut, clg_code_name(got),
              clg_last_error());
  }
  /* A cut in the data names the shape, the bytes wanted and those there. */
  refused_bytes(f, len - 1, CLG_DATA_LOSS,
                "the shape (2, 3) needs 24 bytes of data, the file has 23 after its header (cut "
                "short)");
  /* Bytes past the data. */
  uint8_t *longer = malloc(len + 4);
  memcpy(longer, f, len);
  memset(longer + len, 0, 4);
  refused_bytes(longer, len + 4, CLG_DATA_LOSS,
                "the file has 28 after its header (bytes left over)");
  /* The same through a file. */
  char path[256];
  snprintf(path, sizeof path, "/tmp/test_npy_cut_%d.npy", (int)getpid());
  FILE *w = fopen(path, "wb");
  fwrite(f, 1, len - 5, w);
  fclose(w);
  CHECK_CODE(clg_tensor_load_npy(path, &t), CLG_DATA_LOSS);
  CHECK_CONTAINS(clg_last_error(), path);
  CHECK_CONTAINS(clg_last_error(), "needs 24 bytes of data, the file has 19");
  unlink(path);
  /* A header longer than the file. */
  uint8_t head[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x76, 0x00, '{', '\''};
  refused_bytes(head, sizeof head, CLG_DATA_LOSS, "a header of 118 bytes, but the file has 12");
  head[6] = 4;
  refused_bytes(head, sizeof head, CLG_UNIMPLEMENTED, "format version 4.0");
  head[6] = 2;
  head[8] = 0, head[9] = 0, head[10] = 0x10, head[11] = 0; /* 4 KiB... of a 12-byte file */
  refused_bytes(head, sizeof head, CLG_DATA_LOSS, "a header of 1048576 bytes, but the file");
  head[10] = 0x20; /* 2 MiB: no header is that long */
  refused_bytes(head, sizeof head, CLG_INVALID_ARGUMENT, "clgraph reads headers of up to");
  free(longer);
  free(f);

  /* Headers numpy would not write, each named. */
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, CLG_OK, "");
  header_case("{'descr': '<f4', 'fortran_order': False}", 0, CLG_INVALID_ARGUMENT, "no 'shape'");
  header_case("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8, CLG_UNIMPLEMENTED,
              "dtype '<c8' is not one clgraph reads");
  /* the unsigned widths numpy writes, each as clgraph's own */
  header_case("{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }", 8, CLG_OK, "");
  header_case("{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }", 16, CLG_OK, "");
  header_case("{'descr': '<f4', 'shape': (), }", 4, CLG_INVALID_ARGUMENT, "no 'fortran_order'");
  header_case("{'fortran_order': False, 'shape': (), }", 4, CLG_INVALID_ARGUMENT, "no 'descr'");
  header_case("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4,
              CLG_INVALID_ARGUMENT, "key 'descr' given twice");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}", 4,
              CLG_INVALID_ARGUMENT, "unknown key 'extra'");
  header_case("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", 4, CLG_INVALID_ARGUMENT,
              "'fortran_order' is neither True nor False");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", 8, CLG_INVALID_ARGUMENT,
              "needs a trailing comma");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", 24, CLG_INVALID_ARGUMENT,
              "not separated by commas");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", 0, CLG_INVALID_ARGUMENT,
              "not a whole number >= 0");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", 8, CLG_INVALID_ARGUMENT,
              "'shape' is not a tuple");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 0,
              CLG_INVALID_ARGUMENT, "too large");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, "
              "4294967296)}",
              0, CLG_INVALID_ARGUMENT, "too many elements");
  header_case("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", 4,
              CLG_INVALID_ARGUMENT, "structured dtypes are not read");
  header_case("{'descr': '|f4', 'fortran_order': False, 'shape': ()}", 4, CLG_INVALID_ARGUMENT,
              "'|f4' has no byte order");
  header_case("{'descr': '<f4', 'fortran_order': False, 'shape': ()} x", 4, CLG_INVALID_ARGUMENT,
              "text after the dictionary");
  header_case("['descr']", 4, CLG_INVALID_ARGUMENT, "it does not begin with '{'");
  header_case("{descr: '<f4'}", 4, CLG_INVALID_ARGUMENT, "a key is not a quoted string");
  header_case("{'descr' '<f4'}", 4, CLG_INVALID_ARGUMENT, "not followed by ':'");
  header_case("{'descr': '<f4' 'shape': ()}", 4, CLG_INVALID_ARGUMENT, "entries are not separated");
  /* '=' (native: little-endian here) and '<' for one byte, as numpy also reads them. */
  header_case("{'descr': '=f4', 'fortran_order': False, 'shape': ()}", 4, CLG_OK, "");
  header_case("{'descr': '<b1', 'fortran_order': False, 'shape': (3,)}", 3, CLG_OK, "");
  header_case("{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (1, 1)}", 8, CLG_OK, "");
  /* A bool byte other than 0 or 1 names its element. */
  size_t blen = 0;
  uint8_t *bf = slurp(fixture("bool_4.npy"), &blen);
  if (bf)
    bf[blen - 2] = 7;
  refused_bytes(bf, blen, CLG_INVALID_ARGUMENT, "bool element 2 is the byte 7, not 0 or 1");
  free(bf);
  CHECK_CODE(clg_tensor_load_npy_memory(NULL, 0, "empty.npy", &t), CLG_DATA_LOSS);
  CHECK_CODE(clg_tensor_load_npy_memory("x", 1, "x.npy", &t), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_tensor_save_npy(NULL, "/tmp/x.npy"), CLG_INVALID_ARGUMENT);
}

int main(void)
{
  const char *src = getenv("CLG_SOURCE_DIR");
  snprintf(data_dir, sizeof data_dir, "%s/tests/data/npy", src ? src : ".");
  test_values();
  test_save_matches_numpy();
  test_refused();
  return clg_test_summary("test_npy");
}
