/* Checkpoints: round trips for every dtype (scalars and empty tensors too) with variables on
 * every device kind; a file written here read back by a reader written in this test from the
 * format alone; a file from another writer restored; a table of malformed files, each with
 * its error and no variable changed; save errors; every file save writes is read back (empty
 * tensors of huge shapes); FIFOs refused at once; names of 255 bytes; modes under the umask;
 * a writer killed in the middle of a save leaves the previous checkpoint intact, and the next
 * save removes its temporary file (and an earlier version's, once old) but never a live
 * writer's, whatever its pid or host, only its lock says; and `clgraph checkpoint ls`. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "core/core.h"
#include "testutil.h"

static const char *const DEVICES[5] = {"/cpu:0", "/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
                                       "/device:GPU:3"};

static char dir[256];

static char *path_in(const char *name)
{
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s", dir, name);
  return p;
}

static clg_session *new_session(clg_graph *g)
{
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, NULL, &s));
  return s;
}

static clg_code run_target(clg_session *s, clg_node *target)
{
  return clg_session_run_outputs(s, 0, NULL, NULL, 0, NULL, NULL, 1, &target);
}

static clg_tensor *fetch(clg_session *s, clg_node *n)
{
  clg_tensor *t = NULL;
  if (clg_session_run(s, 0, NULL, NULL, 1, &n, &t) != CLG_OK)
    fprintf(stderr, "fetch %s: %s\n", clg_node_name(n), clg_last_error());
  return t;
}

static bool same_tensor(const clg_tensor *a, const clg_tensor *b)
{
  return a && b && clg_tensor_dtype(a) == clg_tensor_dtype(b) &&
         clg_tensor_bytes(a) == clg_tensor_bytes(b) &&
         memcmp(clg_tensor_const_data(a), clg_tensor_const_data(b), clg_tensor_bytes(a)) == 0;
}

/* Writes bytes to a file. */
static void put_file(const char *path, const void *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    CHECK(fwrite(data, 1, len, f) == len);
    fclose(f);
  }
}

static uint8_t *get_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)n + 1);
  *len = fread(buf, 1, (size_t)n, f);
  fclose(f);
  return buf;
}

/* Hidden entries of folder d ("." and ".." aside): temporary files. */
static int hidden_in(const char *d)
{
  DIR *dd = opendir(d);
  int n = 0;
  for (struct dirent *e; dd && (e = readdir(dd));)
    n += e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  if (dd)
    closedir(dd);
  return n;
}

/* A session with one initialized variable "w" = [1.5, -2]. */
static clg_session *small_session(clg_graph **g)
{
  *g = clg_graph_new();
  int64_t d2[1] = {2};
  float wv[2] = {1.5f, -2};
  clg_variable(*g, "w", CLG_FLOAT32, 1, d2, clg_const_f32(*g, NULL, 1, d2, wv));
  clg_node *init = clg_global_variables_initializer(*g, NULL);
  CHECK_OK(clg_graph_status(*g));
  clg_session *s = new_session(*g);
  CHECK_OK(run_target(s, init));
  return s;
}

/* --- values of every dtype -------------------------------------------------------------- */

static const clg_dtype ALL[6] = {CLG_FLOAT32, CLG_FLOAT64, CLG_FLOAT16,
                                 CLG_INT32,   CLG_INT64,   CLG_BOOL};
static const char *const ST_NAMES[6] = {"F32", "F64", "F16", "I32", "I64", "BOOL"};

/* A tensor of dtype and shape with values that depend on seed. */
static clg_tensor *pattern(clg_dtype dt, int rank, const int64_t *dims, int seed)
{
  clg_tensor *t = clg_tensor_new(dt, rank, dims, NULL);
  size_t n = clg_tensor_count(t);
  uint8_t *p = clg_tensor_data(t);
  for (size_t i = 0; i < n; i++) {
    long v = (long)(i * 7 + (size_t)seed * 13) % 23 - 11;
    switch (dt) {
    case CLG_FLOAT32:
      ((float *)p)[i] = (float)v * 0.25f;
      break;
    case CLG_FLOAT64:
      ((double *)p)[i] = (double)v / 3.0;
      break;
    case CLG_FLOAT16:
      ((uint16_t *)p)[i] = (uint16_t)(0x3c00 + v); /* near 1.0 */
      break;
    case CLG_INT32:
      ((int32_t *)p)[i] = (int32_t)(v * 100000);
      break;
    case CLG_INT64:
      ((int64_t *)p)[i] = (int64_t)v * 4000000000LL;
      break;
    case CLG_BOOL:
      p[i] = (uint8_t)(v & 1);
      break;
    default: /* the small and unsigned integers: v's low bits, wrapped */
      for (size_t b = 0; b < clg_dtype_size(dt); b++)
        p[i * clg_dtype_size(dt) + b] = (uint8_t)((unsigned long)v >> (8 * b));
      break;
    }
  }
  return t;
}

/* Variables of every dtype, each as a scalar, an empty tensor and a [3,5] tensor, spread
 * over the devices; set from Consts with `seed`'s pattern. */
typedef struct model {
  clg_graph *g;
  clg_node *v[18];
  clg_tensor *val[18];
  clg_node *init;
} model;

static const int64_t SHAPES[3][2] = {{0, 0}, {3, 0}, {3, 5}};
static const int RANKS[3] = {0, 2, 2};

static void model_build(model *m, int seed)
{
  memset(m, 0, sizeof *m);
  m->g = clg_graph_new();
  for (int k = 0; k < 18; k++) {
    int t = k / 3, s = k % 3;
    char name[64];
    snprintf(name, sizeof name, "%s/%s", ST_NAMES[t], s == 0 ? "scalar" : s == 1 ? "empty" : "m");
    m->val[k] = pattern(ALL[t], RANKS[s], SHAPES[s], seed + k);
    CHECK_OK(clg_graph_push_device(m->g, DEVICES[k % 5]));
    clg_node *c = clg_const(m->g, NULL, m->val[k]);
    m->v[k] = clg_variable(m->g, name, ALL[t], RANKS[s], SHAPES[s], c);
    CHECK_OK(clg_graph_pop_device(m->g));
  }
  m->init = clg_global_variables_initializer(m->g, NULL);
  CHECK_OK(clg_graph_status(m->g));
}

static void model_free(model *m)
{
  for (int k = 0; k < 18; k++)
    clg_tensor_free(m->val[k]);
  clg_graph_free(m->g);
}

/* Every variable of s (those of model `nodes`) holds model `vals`'s values. */
static void expect_values(clg_session *s, const model *nodes, const model *vals, const char *what)
{
  for (int k = 0; k < 18; k++) {
    clg_tensor *t = fetch(s, nodes->v[k]);
    CHECK_MSG(same_tensor(t, vals->val[k]), "%s: variable %s differs", what,
              clg_node_name(nodes->v[k]));
    clg_tensor_free(t);
  }
}

/* --- an independent reader ---------------------------------------------------------------- */

/* Reads a safetensors file from the format's description: the 8-byte little-endian header
 * size, the JSON header, the data at data_offsets after it; checks each expected tensor's
 * dtype, shape and bytes. */
static void independent_read(const char *path, const model *m)
{
  size_t len;
  uint8_t *buf = get_file(path, &len);
  CHECK(buf != NULL && len >= 8);
  if (!buf || len < 8) {
    free(buf);
    return;
  }
  uint64_t n = 0;
  for (int i = 0; i < 8; i++)
    n |= (uint64_t)buf[i] << (8 * i);
  CHECK(8 + n <= len);
  CHECK_MSG((8 + n) % 8 == 0, "the data starts at %llu, not 8-aligned",
            (unsigned long long)(8 + n));
  json_error_t err;
  json_t *h = json_loadb((const char *)buf + 8, n, 0, &err);
  CHECK_MSG(h && json_is_object(h), "header: %s", h ? "not an object" : err.text);
  const uint8_t *data = buf + 8 + n;
  for (int k = 0; h && k < 18; k++) {
    json_t *e = json_object_get(h, clg_node_name(m->v[k]));
    CHECK_MSG(e != NULL, "no entry for %s", clg_node_name(m->v[k]));
    if (!e)
      continue;
    CHECK_STR(json_string_value(json_object_get(e, "dtype")), ST_NAMES[k / 3]);
    json_t *shape = json_object_get(e, "shape");
    CHECK((int)json_array_size(shape) == clg_tensor_rank(m->val[k]));
    for (size_t d = 0; d < json_array_size(shape); d++)
      CHECK(json_integer_value(json_array_get(shape, d)) == clg_tensor_dim(m->val[k], (int)d));
    json_t *off = json_object_get(e, "data_offsets");
    uint64_t b = (uint64_t)json_integer_value(json_array_get(off, 0));
    uint64_t en = (uint64_t)json_integer_value(json_array_get(off, 1));
    CHECK(en - b == clg_tensor_bytes(m->val[k]) && 8 + n + en <= len);
    CHECK_MSG(b % clg_dtype_size(ALL[k / 3]) == 0, "%s at %llu is not aligned",
              clg_node_name(m->v[k]), (unsigned long long)b);
    CHECK_MSG(8 + n + en <= len && memcmp(data + b, clg_tensor_const_data(m->val[k]), en - b) == 0,
              "%s: bytes differ", clg_node_name(m->v[k]));
  }
  CHECK_STR(json_string_value(json_object_get(json_object_get(h, "__metadata__"), "producer")),
            "clgraph");
  json_decref(h);
  free(buf);
}

static void test_round_trip(void)
{
  model a, b;
  model_build(&a, 1);
  model_build(&b, 2); /* the same variables with other values */
  clg_session *s = new_session(a.g), *t = new_session(b.g);
  CHECK_OK(run_target(s, a.init));
  CHECK_OK(run_target(t, b.init));
  const char *f = path_in("all.safetensors");
  CHECK_OK(clg_session_save(s, f, 0, NULL));
  independent_read(f, &a);
  /* Restoring a's file into b's session gives a's values, on every device. */
  CHECK_OK(clg_session_restore(t, f, 0, NULL));
  expect_values(t, &b, &a, "restore into another graph");
  expect_values(s, &a, &a, "the saved session");
  /* A session that never ran the initializer is initialized by a restore. */
  clg_session *u = new_session(b.g);
  CHECK_OK(clg_session_restore(u, f, 0, NULL));
  expect_values(u, &b, &a, "restore into a fresh session");
  clg_session_free(u);
  /* Named variables only. */
  const char *names[2] = {"F32/m", "I64/scalar"};
  const char *g2 = path_in("two.safetensors");
  CHECK_OK(clg_session_save(s, g2, 2, names));
  clg_checkpoint *c = NULL;
  CHECK_OK(clg_checkpoint_open(g2, &c));
  CHECK(clg_checkpoint_num_tensors(c) == 2);
  clg_checkpoint_tensor info;
  CHECK_OK(clg_checkpoint_tensor_info(c, 0, &info));
  CHECK_STR(info.name, "I64/scalar"); /* larger dtypes first */
  clg_checkpoint_close(c);
  clg_session_free(s);
  clg_session_free(t);
  model_free(&a);
  model_free(&b);
}

/* A file from another writer: keys in another order, no metadata, extra tensors, padding
 * spaces; written here byte by byte. */
static void test_foreign_file(void)
{
  clg_graph *g = clg_graph_new();
  int64_t d2[1] = {2};
  clg_node *w = clg_variable(g, "w", CLG_FLOAT32, 1, d2, NULL);
  clg_node *k = clg_variable(g, "step", CLG_INT64, 0, NULL, NULL);
  CHECK_OK(clg_graph_status(g));
  const char *json = "{\"zz_extra\":{\"shape\":[1],\"data_offsets\":[16,17],\"dtype\":\"F8_E4M3\"},"
                     "\"step\":{\"data_offsets\":[8,16],\"dtype\":\"I64\",\"shape\":[]},"
                     "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ";
  size_t hn = strlen(json);
  uint8_t file[512];
  for (int i = 0; i < 8; i++)
    file[i] = (uint8_t)((uint64_t)hn >> (8 * i));
  memcpy(file + 8, json, hn);
  float wv[2] = {1.5f, -2.25f};
  int64_t step = 123456789012LL;
  memcpy(file + 8 + hn, wv, 8);
  memcpy(file + 16 + hn, &step, 8);
  file[24 + hn] = 7;
  const char *f = path_in("foreign.safetensors");
  put_file(f, file, 25 + hn);
  clg_session *s = new_session(g);
  CHECK_OK(clg_session_restore(s, f, 0, NULL));
  clg_tensor *tw = fetch(s, w), *tk = fetch(s, k);
  CHECK(tw && ((float *)clg_tensor_data(tw))[0] == 1.5f &&
        ((float *)clg_tensor_data(tw))[1] == -2.25f);
  CHECK(tk && *(int64_t *)clg_tensor_data(tk) == step);
  clg_tensor_free(tw);
  clg_tensor_free(tk);
  /* Listing shows the F8_E4M3 tensor clgraph has no dtype for. */
  clg_checkpoint *c = NULL;
  CHECK_OK(clg_checkpoint_open(f, &c));
  CHECK(clg_checkpoint_num_tensors(c) == 3);
  clg_checkpoint_tensor info;
  CHECK_OK(clg_checkpoint_tensor_info(c, 2, &info));
  CHECK_STR(info.name, "zz_extra");
  CHECK_STR(info.dtype, "F8_E4M3");
  CHECK(info.type == 0 && info.bytes == 1);
  clg_tensor *x = NULL;
  CHECK_CODE(clg_checkpoint_read(c, 2, &x), CLG_UNIMPLEMENTED);
  CHECK_OK(clg_checkpoint_read(c, 0, &x));
  CHECK(x && ((float *)clg_tensor_data(x))[1] == -2.25f);
  clg_tensor_free(x);
  clg_checkpoint_close(c);
  clg_session_free(s);
  clg_graph_free(g);
}

/* --- malformed files ----------------------------------------------------------------------- */

typedef struct bad_case {
  const char *what;
  const char *json;    /* NULL: raw bytes below */
  int64_t header_size; /* -1: the JSON's length */
  int data_bytes;      /* bytes of data after the header */
  int raw_len;         /* for json NULL: the file is this many zero bytes */
  clg_code code;
  const char *text;
} bad_case;

#define A_OK "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

static const bad_case BAD[] = {
    {"empty file", NULL, 0, 0, 0, CLG_DATA_LOSS, "too short"},
    {"5 bytes", NULL, 0, 0, 5, CLG_DATA_LOSS, "too short"},
    {"header larger than the file", "{" A_OK "}", 4000, 8, 0, CLG_DATA_LOSS,
     "header of 4000 bytes is larger than the file"},
    {"header beyond the cap", "{}", 200000000, 0, 0, CLG_INVALID_ARGUMENT, "exceeds the format's"},
    {"invalid JSON", "{\"a\":{\"dtype\":\"F32\",", -1, 8, 0, CLG_INVALID_ARGUMENT,
     "not valid JSON"},
    {"JSON not an object", "[1,2]", -1, 0, 0, CLG_INVALID_ARGUMENT, "not an object"},
    {"duplicate names", "{" A_OK "," A_OK "}", -1, 8, 0, CLG_INVALID_ARGUMENT, "duplicate"},
    {"unknown dtype", "{\"a\":{\"dtype\":\"F31\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, 0,
     CLG_INVALID_ARGUMENT, "tensor 'a': unknown dtype \"F31\""},
    {"size differs from shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
     -1, 8, 0, CLG_INVALID_ARGUMENT, "tensor 'a': 8 bytes at data_offsets [0, 8], but its shape"},
    {"offsets beyond the data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
     -1, 8, 0, CLG_DATA_LOSS, "tensor 'a': data_offsets [8, 16] lie beyond"},
    {"truncated data", "{" A_OK "}", -1, 5, 0, CLG_DATA_LOSS, "tensor 'a'"},
    {"overlap", "{" A_OK ",\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", -1, 8,
     0, CLG_INVALID_ARGUMENT, "overlap"},
    {"hole", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", -1, 12, 0,
     CLG_INVALID_ARGUMENT, "tensor 'a': a hole of 4 bytes"},
    {"trailing bytes", "{" A_OK "}", -1, 12, 0, CLG_INVALID_ARGUMENT, "4 bytes of data after"},
    {"offsets reversed", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", -1, 8,
     0, CLG_INVALID_ARGUMENT, "end before they begin"},
    {"negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", -1, 8, 0,
     CLG_INVALID_ARGUMENT, "shape[0] is not a non-negative integer"},
    {"shape not a list", "{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", -1, 8, 0,
     CLG_INVALID_ARGUMENT, "\"shape\" is missing"},
    {"three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4,8]}}", -1, 8,
     0, CLG_INVALID_ARGUMENT, "not a pair"},
    {"huge shape",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", -1, 8,
     0, CLG_INVALID_ARGUMENT, "need more than"},
    {"metadata not strings", "{\"__metadata__\":{\"k\":1}," A_OK "}", -1, 8, 0,
     CLG_INVALID_ARGUMENT, "\"__metadata__\" value"},
    {"entry not an object", "{\"a\":5}", -1, 0, 0, CLG_INVALID_ARGUMENT, "not an object"},
    {"missing name", "{\"other\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8,
     0, CLG_INVALID_ARGUMENT, "no tensor 'a' for variable 'a'"},
    {"wrong dtype", "{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", -1, 16, 0,
     CLG_INVALID_ARGUMENT, "tensor 'a' is F64, but variable 'a' is float"},
    {"wrong shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", -1, 8, 0,
     CLG_INVALID_ARGUMENT, "tensor 'a' has shape [1,2], but variable 'a' has [2]"},
    /* a is fine, b is wrong: a must not change either. */
    {"second variable wrong",
     "{" A_OK ",\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[8,20]}}", -1, 20, 0,
     CLG_INVALID_ARGUMENT, "tensor 'b' has shape [3], but variable 'b' has [2]"},
};

static void test_malformed(void)
{
  clg_graph *g = clg_graph_new();
  int64_t d2[1] = {2};
  float av[2] = {3, 4}, bv[2] = {5, 6};
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
  clg_node *a = clg_variable(g, "a", CLG_FLOAT32, 1, d2, clg_const_f32(g, NULL, 1, d2, av));
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *b = clg_variable(g, "b", CLG_FLOAT32, 1, d2, clg_const_f32(g, NULL, 1, d2, bv));
  clg_node *init = clg_global_variables_initializer(g, NULL);
  CHECK_OK(clg_graph_status(g));
  clg_session *s = new_session(g);
  CHECK_OK(run_target(s, init));
  const char *f = path_in("bad.safetensors");
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    const bad_case *c = &BAD[i];
    uint8_t file[1024];
    size_t len;
    if (!c->json) {
      memset(file, 0, sizeof file);
      len = (size_t)c->raw_len;
    } else {
      size_t hn = strlen(c->json);
      uint64_t hs = c->header_size < 0 ? hn : (uint64_t)c->header_size;
      for (int k = 0; k < 8; k++)
        file[k] = (uint8_t)(hs >> (8 * k));
      memcpy(file + 8, c->json, hn);
      for (int k = 0; k < c->data_bytes; k++)
        file[8 + hn + (size_t)k] = (uint8_t)(0xA0 + k);
      len = 8 + hn + (size_t)c->data_bytes;
    }
    put_file(f, file, len);
    clg_code got = clg_session_restore(s, f, 0, NULL);
    CHECK_MSG(got == c->code && strstr(clg_last_error(), c->text) && strstr(clg_last_error(), f),
              "%s: %s \"%s\", want %s with \"%s\" and the file name", c->what, clg_code_name(got),
              clg_last_error(), clg_code_name(c->code), c->text);
    clg_tensor *ta = fetch(s, a), *tb = fetch(s, b);
    CHECK_MSG(ta && tb && memcmp(clg_tensor_data(ta), av, 8) == 0 &&
                  memcmp(clg_tensor_data(tb), bv, 8) == 0,
              "%s: a variable changed", c->what);
    clg_tensor_free(ta);
    clg_tensor_free(tb);
    /* The listing API reports the same errors for what is wrong with the file itself. */
    clg_checkpoint *cp = NULL;
    clg_code lc = clg_checkpoint_open(f, &cp);
    CHECK(lc == CLG_OK || lc == c->code);
    clg_checkpoint_close(cp);
  }
  CHECK_CODE(clg_session_restore(s, path_in("missing.safetensors"), 0, NULL), CLG_NOT_FOUND);
  CHECK_CONTAINS(clg_last_error(), "missing.safetensors");
  clg_session_free(s);
  clg_graph_free(g);
}

static void test_save_errors(void)
{
  clg_graph *g = clg_graph_new();
  int64_t d2[1] = {2};
  CHECK_OK(clg_graph_push_variable_scope(g, "conv1", CLG_REUSE_INHERIT));
  clg_node *w = clg_get_variable(g, "weights", CLG_FLOAT32, 1, d2, NULL);
  CHECK_OK(clg_graph_pop_variable_scope(g));
  CHECK_OK(clg_graph_status(g));
  (void)w;
  clg_session *s = new_session(g);
  const char *f = path_in("never.safetensors");
  CHECK_CODE(clg_session_save(s, f, 0, NULL), CLG_FAILED_PRECONDITION);
  CHECK_CONTAINS(clg_last_error(), "Attempting to use uninitialized value conv1/weights");
  CHECK(access(f, F_OK) != 0);
  CHECK_OK(run_target(s, clg_global_variables_initializer(g, NULL)));
  const char *names[1] = {"nope"};
  CHECK_CODE(clg_session_save(s, f, 1, names), CLG_NOT_FOUND);
  CHECK_CONTAINS(clg_last_error(), "no variable named 'nope'");
  CHECK(clg_session_save(s, "/nonexistent-dir-clgraph/x.safetensors", 0, NULL) != CLG_OK);
  CHECK_CONTAINS(clg_last_error(), "/nonexistent-dir-clgraph/x.safetensors");
  CHECK_OK(clg_session_save(s, f, 0, NULL));
  /* No temporary file is left beside it. */
  CHECK(hidden_in(dir) == 0);
  clg_session_free(s);
  clg_graph_free(g);
}

/* --- what save writes, restore reads (issue 21) --------------------------------------------- */

/* Variables of zero bytes whose other dimensions multiply past 2^64: save writes them, and
 * restore and the listing read them back (the reader once multiplied before it saw the 0). */
static void test_huge_empty(void)
{
  const int64_t big = (int64_t)1 << 62;
  const int64_t shapes[3][3] = {{big, big, 0}, {0, big, big}, {big, 0, big}};
  for (int d = 0; d < 2; d++) {
    clg_graph *g = clg_graph_new();
    clg_node *v[3];
    CHECK_OK(clg_graph_push_device(g, DEVICES[d]));
    for (int i = 0; i < 3; i++) {
      char name[16];
      snprintf(name, sizeof name, "e%d", i);
      clg_tensor *zero = clg_tensor_new(CLG_FLOAT32, 3, shapes[i], NULL);
      CHECK(zero != NULL);
      v[i] = clg_variable(g, name, CLG_FLOAT32, 3, shapes[i], clg_const(g, NULL, zero));
      clg_tensor_free(zero);
    }
    int64_t d2[1] = {2};
    float wv[2] = {1.5f, -2};
    clg_node *w = clg_variable(g, "w", CLG_FLOAT32, 1, d2, clg_const_f32(g, NULL, 1, d2, wv));
    CHECK_OK(clg_graph_pop_device(g));
    clg_node *init = clg_global_variables_initializer(g, NULL);
    CHECK_OK(clg_graph_status(g));
    clg_session *s = new_session(g), *t = new_session(g);
    CHECK_OK(run_target(s, init));
    const char *f = path_in("huge-empty.safetensors");
    CHECK_OK(clg_session_save(s, f, 0, NULL));
    CHECK_OK(clg_session_restore(t, f, 0, NULL));
    for (int i = 0; i < 3; i++) {
      clg_tensor *x = fetch(t, v[i]);
      CHECK_MSG(x && clg_tensor_count(x) == 0 && clg_tensor_rank(x) == 3 &&
                    clg_tensor_dim(x, 0) == shapes[i][0] && clg_tensor_dim(x, 1) == shapes[i][1] &&
                    clg_tensor_dim(x, 2) == shapes[i][2],
                "on %s: e%d not restored", DEVICES[d], i);
      clg_tensor_free(x);
    }
    clg_tensor *x = fetch(t, w);
    CHECK(x && ((float *)clg_tensor_data(x))[1] == -2);
    clg_tensor_free(x);
    clg_checkpoint *c = NULL;
    CHECK_OK(clg_checkpoint_open(f, &c));
    CHECK(clg_checkpoint_num_tensors(c) == 4);
    clg_checkpoint_close(c);
    clg_session_free(s);
    clg_session_free(t);
    clg_graph_free(g);
  }
  /* The boundary in the parser itself: zero bytes, whatever comes before or after the 0;
   * the largest count that fits 64 bits; one byte more than fits. */
  static const struct {
    const char *entry;
    clg_code code;
    const char *text;
  } cases[] = {
      {"\"dtype\":\"F32\",\"shape\":[4611686018427387904,4611686018427387904,0]", CLG_OK, NULL},
      {"\"dtype\":\"F64\",\"shape\":[0,9223372036854775807,9223372036854775807]", CLG_OK, NULL},
      {"\"dtype\":\"F32\",\"shape\":[4611686018427387904,4611686018427387904,1]",
       CLG_INVALID_ARGUMENT, "need more than 18446744073709551615"},
      {"\"dtype\":\"U8\",\"shape\":[4294967295,4294967297]", CLG_INVALID_ARGUMENT,
       "need 18446744073709551615"},
      {"\"dtype\":\"U16\",\"shape\":[4294967295,4294967297]", CLG_INVALID_ARGUMENT,
       "need more than 18446744073709551615"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char json[256];
    int hn = snprintf(json, sizeof json, "{\"a\":{%s,\"data_offsets\":[0,0]}}", cases[i].entry);
    uint8_t head[264];
    for (int k = 0; k < 8; k++)
      head[k] = (uint8_t)((uint64_t)hn >> (8 * k));
    memcpy(head + 8, json, (size_t)hn);
    clg_st *st = NULL;
    clg_code got = clg_st_parse("x.safetensors", head, 8 + (size_t)hn, 8 + (uint64_t)hn, &st);
    CHECK_MSG(got == cases[i].code && (!cases[i].text || strstr(clg_last_error(), cases[i].text)),
              "%s: %s \"%s\", want %s with \"%s\"", cases[i].entry, clg_code_name(got),
              got ? clg_last_error() : "", clg_code_name(cases[i].code),
              cases[i].text ? cases[i].text : "");
    clg_st_free(st);
  }
}

/* --- readers refuse a FIFO instead of blocking on it (issue 21) ----------------------------- */

static void on_alarm(int sig)
{
  (void)sig;
  static const char msg[] = "test_checkpoint: a reader blocked on a FIFO\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(1);
}

static void test_fifo(void)
{
  const char *f = path_in("fifo.safetensors");
  unlink(f);
  CHECK(mkfifo(f, 0600) == 0);
  signal(SIGALRM, on_alarm);
  alarm(60); /* a reader that blocks ends the test instead of hanging it */
  char want[600];
  snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", f);
  clg_checkpoint *c = NULL;
  CHECK_CODE(clg_checkpoint_open(f, &c), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), want);
  clg_graph *g = clg_graph_new();
  int64_t d2[1] = {2};
  clg_variable(g, "w", CLG_FLOAT32, 1, d2, NULL);
  CHECK_OK(clg_graph_status(g));
  clg_session *s = new_session(g);
  CHECK_CODE(clg_session_restore(s, f, 0, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), want);
  clg_session_free(s);
  clg_graph_free(g);
  const char *bin = getenv("CLG_BINARY_DIR");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "timeout 30 %s/clgraph checkpoint ls %s 2>&1", bin ? bin : ".", f);
  FILE *p = popen(cmd, "r");
  char out[4096] = "";
  size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
  out[n] = '\0';
  int status = p ? pclose(p) : -1;
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s: status %d: %s", cmd, status, out);
  CHECK_CONTAINS(out, want);
  alarm(0);
  unlink(f);
}

/* --- how save names and creates files (issue 21) -------------------------------------------- */

/* A name of 255 bytes, the most a file system takes, is saved; one of 256 is refused with
 * the file system's reason and leaves nothing behind. */
static void test_long_name(void)
{
  clg_graph *g = NULL;
  clg_session *s = small_session(&g);
  char sub[300], name[260], path[600];
  snprintf(sub, sizeof sub, "%s/long", dir);
  CHECK(mkdir(sub, 0700) == 0);
  memset(name, 'n', 255);
  strcpy(name + 255 - strlen(".safetensors"), ".safetensors");
  snprintf(path, sizeof path, "%s/%s", sub, name);
  CHECK(strlen(name) == 255);
  CHECK_OK(clg_session_save(s, path, 0, NULL));
  CHECK_OK(clg_session_restore(s, path, 0, NULL));
  CHECK(hidden_in(sub) == 0);
  CHECK(unlink(path) == 0);
  memset(name, 'n', 256);
  strcpy(name + 256 - strlen(".safetensors"), ".safetensors");
  snprintf(path, sizeof path, "%s/%s", sub, name);
  CHECK_CODE(clg_session_save(s, path, 0, NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), path);
  CHECK_CONTAINS(clg_last_error(), strerror(ENAMETOOLONG));
  CHECK(hidden_in(sub) == 0);
  CHECK(rmdir(sub) == 0);
  clg_session_free(s);
  clg_graph_free(g);
}

/* Checkpoints are created as open(..., 0666) creates files: under the umask. */
static void test_umask(void)
{
  clg_graph *g = NULL;
  clg_session *s = small_session(&g);
  const char *f = path_in("umask.safetensors");
  static const mode_t masks[3] = {0, 077, 027}, want[3] = {0666, 0600, 0640};
  mode_t old = umask(0);
  for (int i = 0; i < 3; i++) {
    umask(masks[i]);
    CHECK_OK(clg_session_save(s, f, 0, NULL));
    struct stat sb;
    CHECK(stat(f, &sb) == 0);
    CHECK_MSG((sb.st_mode & 07777) == want[i], "under umask %03o the file is %03o, want %03o",
              (unsigned)masks[i], (unsigned)(sb.st_mode & 07777), (unsigned)want[i]);
  }
  umask(old);
  unlink(f);
  clg_session_free(s);
  clg_graph_free(g);
}

/* Which temporary files a save removes: those of the same file whose writer is gone: on this
 * host, its process ended, or the process that has its pid now started after the file was
 * last written; on another host, the file was last written before this process started.
 * Never a live writer's, nor another file's. */
/* A fresh OFD write lock on the whole of path (an open file description of its own, so it
 * conflicts with every other, this process's included); the descriptor, -1 on failure. */
static int lock_file(const char *path)
{
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fd >= 0 && fcntl(fd, F_OFD_SETLK, &l) != 0) {
    close(fd);
    fd = -1;
  }
  CHECK_MSG(fd >= 0, "locking %s: %s", path, strerror(errno));
  return fd;
}

/* Whether another open file holds a lock on path. */
static bool locked(const char *path)
{
  struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  bool held = fd >= 0 && fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
  if (fd >= 0)
    close(fd);
  return held;
}

static void test_stale_temps(void)
{
  clg_graph *g = NULL;
  clg_session *s = small_session(&g);
  char sub[300], f[400], other[400];
  snprintf(sub, sizeof sub, "%s/stale", dir);
  CHECK(mkdir(sub, 0700) == 0);
  snprintf(f, sizeof f, "%s/model.safetensors", sub);
  snprintf(other, sizeof other, "%s/other.safetensors", sub);
  char *pf = clg_atomic_file_temp_prefix(f), *po = clg_atomic_file_temp_prefix(other);
  CHECK(pf && po && strncmp(pf, sub, strlen(sub)) == 0 && strcmp(pf, po) != 0);
  if (!pf || !po) {
    free(pf);
    free(po);
    clg_session_free(s);
    clg_graph_free(g);
    return;
  }
  /* As short for a name of 255 bytes as for one of 1, with room for the rest. */
  char longest[600], *pl;
  snprintf(longest, sizeof longest, "%s/%0255d", sub, 7);
  pl = clg_atomic_file_temp_prefix(longest);
  CHECK(pl && strlen(pl) == strlen(pf) && strlen(strrchr(pf, '/') + 1) + 20 < 100);
  free(pl);
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  waitpid(dead, NULL, 0);
  /* Whose a temporary is shows in its lock alone: a writer holds one on its temporary from
   * creation to rename, and its pid or host (in the names of earlier versions) tell nothing
   * of a writer in another PID namespace, or paused on another host. */
  enum { UNLOCKED, LOCKED_HERE, LOCKED_CHILD };
  static const struct {
    int kind; /* 0: this file's; 1: another file's; 2: this file's by an earlier version;
               * 3, 4: this file's, named with a dead pid, with another host and a pid
               * (as one earlier version named them); 5: another file's by an earlier one */
    int lock; /* UNLOCKED, LOCKED_HERE (another thread's save), LOCKED_CHILD */
    bool old; /* last written in 2001 */
    bool removed;
    const char *what;
  } cases[] = {
      {0, UNLOCKED, false, true, "a killed writer's"},
      {0, LOCKED_HERE, false, false, "this process's (another thread's save)"},
      {0, LOCKED_CHILD, false, false, "a live child's"},
      {0, LOCKED_CHILD, true, false, "a live writer's, last written long ago (paused)"},
      {3, LOCKED_CHILD, false, false,
       "a live writer's named with a dead pid (another PID namespace)"},
      {4, LOCKED_CHILD, true, false, "a live writer's on another host, paused"},
      {3, UNLOCKED, false, true, "a killed writer's whose name has a pid"},
      {1, UNLOCKED, false, false, "another file's"},
      {1, UNLOCKED, true, false, "another file's, old"},
      {2, UNLOCKED, false, false, "an earlier version's, recent (its writer took no lock)"},
      {2, UNLOCKED, true, true, "an earlier version's, old"},
      {2, LOCKED_HERE, true, false, "an earlier version's, old but locked"},
      {5, UNLOCKED, true, false, "an earlier version's of another file, old"},
  };
  enum { NC = sizeof cases / sizeof cases[0] };
  char names[NC][700];
  int fds[NC];
  for (int i = 0; i < NC; i++) {
    const char *k = "XYZ12";
    switch (cases[i].kind) {
    case 0:
      snprintf(names[i], sizeof names[i], "%scase%02d", pf, i);
      break;
    case 1:
      snprintf(names[i], sizeof names[i], "%scase%02d", po, i);
      break;
    case 2:
      snprintf(names[i], sizeof names[i], "%s/.model.safetensors.tmp.%s%d", sub, k, i % 10);
      break;
    case 3: /* a dead pid */
      snprintf(names[i], sizeof names[i], "%s%ld.case%02d", pf, (long)dead, i);
      break;
    case 4: /* another host's */
      snprintf(names[i], sizeof names[i], "%szzzzzzzz.%ld.case%02d", pf, (long)getpid(), i);
      break;
    default:
      snprintf(names[i], sizeof names[i], "%s/.other.safetensors.tmp.%s%d", sub, k, i % 10);
      break;
    }
    put_file(names[i], "partial", 7);
    if (cases[i].old) {
      struct timespec t[2] = {{1000000000, 0}, {1000000000, 0}}; /* 2001 */
      CHECK(utimensat(AT_FDCWD, names[i], t, 0) == 0);
    }
    fds[i] = cases[i].lock != UNLOCKED ? lock_file(names[i]) : -1;
  }
  /* The child shares the open file descriptions, so their locks, and this process closes
   * its own: each lock is then the child's alone. */
  pid_t live = fork();
  if (live == 0) {
    pause();
    _exit(0);
  }
  CHECK(live > 0);
  for (int i = 0; i < NC; i++)
    if (cases[i].lock == LOCKED_CHILD) {
      close(fds[i]);
      fds[i] = -1;
    }
  CHECK_OK(clg_session_save(s, f, 0, NULL));
  for (int i = 0; i < NC; i++)
    CHECK_MSG((access(names[i], F_OK) != 0) == cases[i].removed, "%s temporary file was %s",
              cases[i].what, cases[i].removed ? "kept" : "removed");

  /* A writer of this process keeps its temporary, and its lock, through another's save. */
  clg_atomic_file a;
  CHECK_OK(clg_atomic_file_open(&a, f));
  CHECK_OK(clg_atomic_file_write(&a, "x", 1));
  CHECK_OK(clg_session_save(s, f, 0, NULL));
  CHECK_MSG(a.tmp && access(a.tmp, F_OK) == 0, "a save removed another save's temporary %s",
            a.tmp ? a.tmp : "?");
  CHECK_MSG(a.tmp && locked(a.tmp), "a writer holds no lock on its temporary file");
  CHECK_OK(clg_atomic_file_commit(&a));
  int kept = 0;
  for (int i = 0; i < NC; i++)
    kept += !cases[i].removed;
  CHECK_MSG(hidden_in(sub) == kept, "%d temporary files left, not %d", hidden_in(sub), kept);

  kill(live, SIGKILL);
  waitpid(live, NULL, 0);
  for (int i = 0; i < NC; i++) {
    if (fds[i] >= 0)
      close(fds[i]);
    unlink(names[i]);
  }
  unlink(f);
  CHECK(rmdir(sub) == 0);
  free(pf);
  free(po);
  clg_session_free(s);
  clg_graph_free(g);
}

/* --- a writer killed in the middle of a save ------------------------------------------------ */

#define KILL_FLOATS (8 << 20) /* 32 MiB per save: long enough to be caught in the middle */

/* The child: saves a large variable to path, again and again, forever (every save writes
 * the same bytes, so the file is checked for completeness, not for a generation). */
static int child_save(const char *path)
{
  clg_graph *g = clg_graph_new();
  int64_t dims[1] = {KILL_FLOATS};
  clg_graph_push_device(g, "/cpu:0");
  clg_initializer c = clg_init_constant(7);
  clg_get_variable(g, "big", CLG_FLOAT32, 1, dims, &c);
  clg_node *init = clg_global_variables_initializer(g, NULL);
  clg_session *s = NULL;
  if (clg_session_new(g, NULL, &s) != CLG_OK || run_target(s, init) != CLG_OK)
    return 3;
  for (;;)
    if (clg_session_save(s, path, 0, NULL) != CLG_OK)
      return 4;
}

/* The file at path is a complete checkpoint: header intact, every element 7. */
static bool complete_generation(const char *path, float *gen)
{
  clg_checkpoint *c = NULL;
  if (clg_checkpoint_open(path, &c) != CLG_OK)
    return false;
  clg_tensor *t = NULL;
  bool ok = clg_checkpoint_num_tensors(c) == 1 && clg_checkpoint_read(c, 0, &t) == CLG_OK &&
            clg_tensor_count(t) == KILL_FLOATS;
  const float *x = ok ? clg_tensor_const_data(t) : NULL;
  for (size_t i = 0; ok && i < KILL_FLOATS; i++)
    ok = x[i] == 7.0f;
  if (ok)
    *gen = x[0];
  clg_tensor_free(t);
  clg_checkpoint_close(c);
  return ok;
}

static char kill_dir[300];

/* The writer's temporary files: the hidden entries of its folder. */
static int count_temps(void) { return hidden_in(kill_dir); }

static void remove_temps(void)
{
  DIR *d = opendir(kill_dir);
  char p[600];
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(p, sizeof p, "%s/%s", kill_dir, e->d_name);
      unlink(p);
    }
  if (d)
    closedir(d);
}

/* The name of one temporary file in kill_dir ("" when there is none). */
static void one_temp(char *name, size_t size)
{
  DIR *d = opendir(kill_dir);
  name[0] = '\0';
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      snprintf(name, size, "%s/%s", kill_dir, e->d_name);
  if (d)
    closedir(d);
}

static pid_t start_child_save(const char *self, const char *f)
{
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "--child-save", f, (char *)NULL);
    _exit(127);
  }
  CHECK(pid > 0);
  return pid;
}

static void test_kill_writer(const char *self)
{
  snprintf(kill_dir, sizeof kill_dir, "%s/kill", dir);
  CHECK(mkdir(kill_dir, 0700) == 0);
  char f[400];
  snprintf(f, sizeof f, "%s/kill.safetensors", kill_dir);
  bool caught = false;
  int attempts = 0;
  for (int attempt = 0; attempt < 12 && !caught; attempt++) {
    attempts++;
    unlink(f);
    remove_temps();
    pid_t pid = start_child_save(self, f);
    /* Wait for the first complete checkpoint, then kill at a moment that varies. */
    for (int i = 0; i < 600 && access(f, F_OK) != 0; i++)
      nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    CHECK_MSG(access(f, F_OK) == 0, "the child never completed a save");
    long ms = 20 + 37 * attempt % 150;
    nanosleep(&(struct timespec){0, ms * 1000 * 1000}, NULL);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    float gen = 0;
    CHECK_MSG(complete_generation(f, &gen),
              "after a kill (attempt %d) the checkpoint is broken: %s", attempt, clg_last_error());
    caught = count_temps() > 0; /* killed while a temporary file was being written */
  }
  CHECK_MSG(caught, "never killed the writer in the middle of a save");
  printf("test_kill_writer: killed in the middle of a save after %d attempt(s)\n", attempts);

  /* The next save of the same file removes what the killed writer left. */
  clg_graph *g = NULL;
  clg_session *s = small_session(&g);
  CHECK_OK(clg_session_save(s, f, 0, NULL));
  CHECK_MSG(count_temps() == 0, "a save left %d temporary file(s) of a killed writer",
            count_temps());

  /* A live writer's temporary file stays: a writer stopped in the middle of a save, once it
   * holds the lock (stopped between the file's creation and the lock, its file may go, and it
   * then takes another: its save still succeeds, as the end checks). */
  remove_temps();
  pid_t pid = start_child_save(self, f);
  char temp[700] = "";
  for (int i = 0; i < 30000 && !temp[0]; i++) {
    if (count_temps() > 0) {
      kill(pid, SIGSTOP);
      one_temp(temp, sizeof temp); /* still there, and locked, once stopped? */
      if (temp[0] && !locked(temp))
        temp[0] = '\0';
      if (!temp[0])
        kill(pid, SIGCONT);
    } else {
      nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
  }
  CHECK_MSG(temp[0], "never stopped the writer in the middle of a save");
  CHECK_OK(clg_session_save(s, f, 0, NULL));
  CHECK_MSG(access(temp, F_OK) == 0, "a save removed %s, the temporary file of a live writer",
            temp);
  /* Let it go on: its save completes (the temporary file is renamed), and it keeps saving. */
  kill(pid, SIGCONT);
  int status = 0;
  for (int i = 0; i < 3000 && access(temp, F_OK) == 0 && waitpid(pid, &status, WNOHANG) == 0; i++)
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  CHECK_MSG(access(temp, F_OK) != 0, "the writer's save did not complete");
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
            "the live writer ended with status %d (4: a save failed)",
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  clg_session_free(s);
  clg_graph_free(g);
  remove_temps();
  unlink(f);
  rmdir(kill_dir);
}

/* --- the command line -------------------------------------------------------------------- */

static void test_cli(void)
{
  const char *bin = getenv("CLG_BINARY_DIR");
  CHECK_MSG(bin != NULL, "CLG_BINARY_DIR is not set");
  if (!bin)
    return;
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s/clgraph checkpoint ls %s 2>&1", bin,
           path_in("foreign.safetensors"));
  FILE *p = popen(cmd, "r");
  char out[4096] = "";
  size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
  out[n] = '\0';
  int status = p ? pclose(p) : -1;
  CHECK_MSG(status == 0, "%s: status %d: %s", cmd, status, out);
  CHECK_CONTAINS(out, "w");
  CHECK_CONTAINS(out, "F32");
  CHECK_CONTAINS(out, "[2]");
  CHECK_CONTAINS(out, "step");
  CHECK_CONTAINS(out, "zz_extra");
  CHECK_CONTAINS(out, "F8_E4M3");
  snprintf(cmd, sizeof cmd, "%s/clgraph checkpoint ls --bogus %s >/dev/null 2>&1", bin,
           path_in("foreign.safetensors"));
  status = system(cmd);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 2, "unknown option: status %d", status);
  put_file(path_in("cut.safetensors"), "\x10\0\0\0\0\0\0\0{}", 10);
  snprintf(cmd, sizeof cmd, "%s/clgraph checkpoint ls %s >/dev/null 2>&1", bin,
           path_in("cut.safetensors"));
  status = system(cmd);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1, "bad file: status %d", status);
}

int main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--child-save") == 0)
    return child_save(argv[2]);
  if (!clg_test_require_gpus(4))
    return clg_test_summary("test_checkpoint");
  snprintf(dir, sizeof dir, "/tmp/clg_test_checkpoint.XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  clg_graph *keep_graph = clg_graph_new();
  clg_session *keep = new_session(keep_graph); /* keeps the device state across tests */
  test_round_trip();
  test_foreign_file();
  test_malformed();
  test_save_errors();
  test_huge_empty();
  test_fifo();
  test_long_name();
  test_umask();
  test_stale_temps();
  test_cli();
  clg_session_free(keep);
  clg_graph_free(keep_graph);
  test_kill_writer(argv[0]);
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      unlink(path_in(e->d_name));
  if (d)
    closedir(d);
  rmdir(dir);
  return clg_test_summary("test_checkpoint");
}
