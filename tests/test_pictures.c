/* Pictures of runs: the Chrome trace (parsed with jansson, checked against the graph: one
 * slice per node run per run, dependencies in order on one clock, the S7 towers on two
 * device tracks, copies joined by flows), the per-op profile (against the trace's slices),
 * and the SVG memory map (parsed by a small XML checker written here, its blocks against
 * clg_session_memory_stats), including the map an out-of-memory run writes; the files'
 * modes under the umask, and `clgraph trace-html` refusing a FIFO. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char dir[256];

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf)
    buf[n] = '\0';
  fclose(f);
  return buf;
}

/* --- a small XML checker: well-formedness, and the <rect> elements with their attributes - */

#define MAX_ATTRS 24
typedef struct xml_elem {
  char name[32];
  int nattrs;
  char key[MAX_ATTRS][32];
  char *val[MAX_ATTRS];
} xml_elem;

typedef struct xml_doc {
  xml_elem *rects;
  int nrects, cap;
  xml_elem root;
  char error[200];
} xml_doc;

static bool is_name_char(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == ':' || c == '.';
}

/* Checks entities in text or an attribute value up to `end`. */
static bool xml_chars_ok(const char *p, const char *end, char stop)
{
  for (; p < end; p++) {
    if (*p == '<' || (stop && *p == stop))
      return false;
    if (*p == '&') {
      const char *semi = memchr(p, ';', (size_t)(end - p));
      if (!semi)
        return false;
      size_t n = (size_t)(semi - p - 1);
      bool ok = (n == 2 && (!strncmp(p + 1, "lt", 2) || !strncmp(p + 1, "gt", 2))) ||
                (n == 3 && !strncmp(p + 1, "amp", 3)) ||
                (n == 4 && (!strncmp(p + 1, "quot", 4) || !strncmp(p + 1, "apos", 4))) ||
                (n >= 2 && p[1] == '#');
      if (!ok)
        return false;
      p = semi;
    }
  }
  return true;
}

static void xml_free(xml_doc *d)
{
  for (int i = 0; i < d->nrects; i++)
    for (int k = 0; k < d->rects[i].nattrs; k++)
      free(d->rects[i].val[k]);
  for (int k = 0; k < d->root.nattrs; k++)
    free(d->root.val[k]);
  free(d->rects);
}

static const char *attr(const xml_elem *e, const char *key)
{
  for (int k = 0; k < e->nattrs; k++)
    if (!strcmp(e->key[k], key))
      return e->val[k];
  return NULL;
}

/* True when text is one well-formed element (after an optional <?xml ...?>). */
static bool xml_parse(const char *text, xml_doc *d)
{
  memset(d, 0, sizeof *d);
  const char *p = text;
  char stack[64][32];
  int depth = 0, roots = 0;
#define FAIL(...)                                                                                  \
  do {                                                                                             \
    snprintf(d->error, sizeof d->error, __VA_ARGS__);                                              \
    return false;                                                                                  \
  } while (0)
  if (!strncmp(p, "<?xml", 5)) {
    const char *e = strstr(p, "?>");
    if (!e)
      FAIL("unterminated <?xml");
    p = e + 2;
  }
  while (*p) {
    if (*p != '<') {
      const char *lt = strchr(p, '<');
      const char *end = lt ? lt : p + strlen(p);
      if (!xml_chars_ok(p, end, 0))
        FAIL("bad text near '%.20s'", p);
      if (depth == 0)
        for (const char *q = p; q < end; q++)
          if (*q != ' ' && *q != '\n' && *q != '\t' && *q != '\r')
            FAIL("text outside the root element");
      p = end;
      continue;
    }
    if (p[1] == '/') { /* closing tag */
      const char *q = p + 2;
      char name[32] = "";
      int n = 0;
      while (is_name_char(*q) && n < 31)
        name[n++] = *q++;
      name[n] = '\0';
      while (*q == ' ')
        q++;
      if (*q != '>' || depth == 0 || strcmp(stack[depth - 1], name))
        FAIL("mismatched </%s>", name);
      depth--;
      p = q + 1;
      continue;
    }
    xml_elem e;
    memset(&e, 0, sizeof e);
    const char *q = p + 1;
    int n = 0;
    while (is_name_char(*q) && n < 31)
      e.name[n++] = *q++;
    if (!n)
      FAIL("bad tag near '%.20s'", p);
    for (;;) {
      while (*q == ' ' || *q == '\n' || *q == '\t')
        q++;
      if (*q == '>' || (q[0] == '/' && q[1] == '>'))
        break;
      char key[32] = "";
      int k = 0;
      while (is_name_char(*q) && k < 31)
        key[k++] = *q++;
      if (!k || *q != '=' || (q[1] != '"' && q[1] != '\''))
        FAIL("bad attribute in <%s> near '%.20s'", e.name, q);
      char quote = q[1];
      const char *v = q + 2, *ve = strchr(v, quote);
      if (!ve || !xml_chars_ok(v, ve, quote))
        FAIL("bad value of %s in <%s>", key, e.name);
      for (int j = 0; j < e.nattrs; j++)
        if (!strcmp(e.key[j], key))
          FAIL("attribute %s twice in <%s>", key, e.name);
      if (e.nattrs < MAX_ATTRS) {
        snprintf(e.key[e.nattrs], sizeof e.key[0], "%s", key);
        e.val[e.nattrs] = strndup(v, (size_t)(ve - v));
        e.nattrs++;
      }
      q = ve + 1;
    }
    bool empty = *q == '/';
    p = q + (empty ? 2 : 1);
    if (depth == 0 && roots++)
      FAIL("a second root element <%s>", e.name);
    bool keep = false;
    if (depth == 0) {
      d->root = e;
      keep = true;
    } else if (!strcmp(e.name, "rect")) {
      if (d->nrects == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->rects = realloc(d->rects, sizeof *d->rects * (size_t)d->cap);
      }
      d->rects[d->nrects++] = e;
      keep = true;
    }
    if (!keep)
      for (int j = 0; j < e.nattrs; j++)
        free(e.val[j]);
    if (!empty) {
      if (depth == 64)
        FAIL("too deep");
      snprintf(stack[depth++], sizeof stack[0], "%s", e.name);
    }
  }
  if (depth != 0 || roots != 1)
    FAIL("unclosed elements (%d) or no root", depth);
  return true;
#undef FAIL
}

/* The SVG at path against the statistics of its device. */
static void check_memory_map(clg_session *s, const char *path, const char *want_device)
{
  char *svg = slurp(path);
  CHECK_MSG(svg != NULL, "no memory map at %s", path);
  if (!svg)
    return;
  xml_doc d;
  bool ok = xml_parse(svg, &d);
  CHECK_MSG(ok, "%s is not well-formed XML: %s", path, d.error);
  CHECK_STR(d.root.name, "svg");
  const char *device = attr(&d.root, "data-device");
  CHECK_MSG(device != NULL, "the <svg> names no device");
  if (want_device && device)
    CHECK_STR(device, want_device);
  clg_memory_stats st;
  if (ok && device && clg_session_memory_stats(s, device, &st) == CLG_OK) {
    uint64_t used = 0, free_bytes = 0, largest = 0;
    int used_blocks = 0, free_blocks = 0, labelled = 0, blocks = 0;
    for (int i = 0; i < d.nrects; i++) {
      const char *cls = attr(&d.rects[i], "class");
      if (!cls || strncmp(cls, "block ", 6))
        continue;
      blocks++;
      const char *size = attr(&d.rects[i], "data-size");
      uint64_t b = size ? strtoull(size, NULL, 10) : 0;
      CHECK(b > 0);
      if (!strcmp(cls, "block in-use")) {
        used += b;
        used_blocks++;
        const char *label = attr(&d.rects[i], "data-label");
        labelled += label && label[0];
      } else if (!strcmp(cls, "block free")) {
        free_bytes += b;
        free_blocks++;
        if (b > largest)
          largest = b;
      }
    }
    printf("memory map of %s: %d blocks (%d in use, %d labelled, %d free)\n", device, blocks,
           used_blocks, labelled, free_blocks);
    const char *root_blocks = attr(&d.root, "data-blocks");
    CHECK(root_blocks && atoi(root_blocks) == blocks); /* one rect per block */
    CHECK_MSG(used == st.bytes_in_use, "in use: %llu in the picture, %llu in the stats",
              (unsigned long long)used, (unsigned long long)st.bytes_in_use);
    CHECK((uint64_t)used_blocks == st.live_allocs);
    CHECK(used_blocks > 0 && labelled > 0);
    CHECK_MSG(largest == st.largest_free_block, "largest free: %llu vs %llu",
              (unsigned long long)largest, (unsigned long long)st.largest_free_block);
    double frag = free_bytes ? (double)(free_bytes - largest) / (double)free_bytes : 0.0;
    CHECK(fabs(frag - st.fragmentation) < 1e-9);
    const char *a = attr(&d.root, "data-bytes-in-use");
    CHECK(a && strtoull(a, NULL, 10) == st.bytes_in_use);
    a = attr(&d.root, "data-largest-free-block");
    CHECK(a && strtoull(a, NULL, 10) == st.largest_free_block);
    a = attr(&d.root, "data-fragmentation");
    CHECK(a && fabs(strtod(a, NULL) - st.fragmentation) < 1e-6);
  }
  xml_free(&d);
  free(svg);
}

/* --- the trace ------------------------------------------------------------------------ */

/* ts and dur are microseconds with three decimals: back to whole ns. */
static int64_t ns_of(json_t *v) { return (int64_t)llround(json_number_value(v) * 1000.0); }

typedef struct slice {
  const char *name, *cat;
  int tid;
  int64_t start, end;
  json_t *args;
} slice;

static const float va[6] = {1, 2, 3, 4, 5, 6};
static const int64_t da[2] = {2, 3}, db[2] = {3, 2};

/* The guide's S7 towers (MatMul on GPU:2 and GPU:3, AddN on the CPU), then more that crosses
 * devices: Square of the sum on GPU:1 (host -> device) and a Relu of that on GPU:2 (a peer
 * copy in one context), fetched on the host. */
static clg_graph *towers(clg_node **tower, clg_node **sum, clg_node **out)
{
  clg_graph *g = clg_graph_new();
  for (int i = 0; i < 2; i++) {
    char dev[32];
    snprintf(dev, sizeof dev, "/device:GPU:%d", 2 + i);
    clg_graph_push_device(g, dev);
    clg_node *a = clg_const_f32(g, NULL, 2, da, va);
    clg_node *b = clg_const_f32(g, NULL, 2, db, va);
    tower[i] = clg_matmul(g, NULL, a, b, false, false);
    clg_graph_pop_device(g);
  }
  clg_graph_push_device(g, "/cpu:0");
  *sum = clg_add_n(g, "sum", 2, tower);
  clg_graph_pop_device(g);
  clg_graph_push_device(g, "/device:GPU:1");
  clg_node *sq = clg_square(g, "square", *sum);
  clg_graph_pop_device(g);
  clg_graph_push_device(g, "/device:GPU:2");
  *out = clg_relu(g, "relu", sq);
  clg_graph_pop_device(g);
  return g;
}

/* Traces, memory maps and trace pages are created as open(..., 0666) creates files: under the
 * umask. */
static void check_modes(clg_session *s)
{
  static const mode_t masks[2] = {0, 077}, want[2] = {0666, 0600};
  const char *bin = getenv("CLG_BINARY_DIR");
  char files[3][300], cmd[1400];
  mode_t old = umask(0);
  for (int i = 0; i < 2; i++) {
    umask(masks[i]);
    snprintf(files[0], sizeof files[0], "%s/mode%d.json", dir, i);
    snprintf(files[1], sizeof files[1], "%s/mode%d.svg", dir, i);
    snprintf(files[2], sizeof files[2], "%s/mode%d.html", dir, i);
    CHECK_OK(clg_session_write_trace(s, files[0]));
    CHECK_OK(clg_session_write_memory_map(s, "/device:GPU:2", files[1]));
    snprintf(cmd, sizeof cmd, "timeout 60 '%s/clgraph' trace-html '%s' '%s'", bin ? bin : ".",
             files[0], files[2]);
    CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
    for (int k = 0; k < 3; k++) {
      struct stat sb;
      CHECK(stat(files[k], &sb) == 0);
      CHECK_MSG((sb.st_mode & 07777) == want[i], "under umask %03o %s is %03o, want %03o",
                (unsigned)masks[i], files[k], (unsigned)(sb.st_mode & 07777), (unsigned)want[i]);
    }
  }
  umask(old);
}

/* `clgraph trace-html` refuses a FIFO for its trace at once (it used to wait for a writer
 * forever; here it runs under timeout). */
static void check_trace_html_fifo(void)
{
  const char *bin = getenv("CLG_BINARY_DIR");
  char fifo[300], page[300], err[300], cmd[1400];
  snprintf(fifo, sizeof fifo, "%s/fifo.json", dir);
  snprintf(page, sizeof page, "%s/fifo.html", dir);
  snprintf(err, sizeof err, "%s/fifo.err", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  snprintf(cmd, sizeof cmd, "timeout 60 '%s/clgraph' trace-html '%s' '%s' 2>'%s'", bin ? bin : ".",
           fifo, page, err);
  int status = system(cmd);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s: status %d", cmd, status);
  char *text = slurp(err), want_err[400];
  snprintf(want_err, sizeof want_err, "%s: not a regular file (a FIFO)", fifo);
  CHECK_CONTAINS(text, want_err);
  free(text);
  CHECK(access(page, F_OK) != 0);
}

static void test_trace(void)
{
  clg_node *tower[2], *sum, *out;
  clg_graph *g = towers(tower, &sum, &out);
  CHECK_OK(clg_graph_status(g));
  clg_session *s = NULL;
  char path[300], bad[300];
  snprintf(path, sizeof path, "%s/s7.json", dir);
  snprintf(bad, sizeof bad, "%s/no/such/dir/t.json", dir);
  CHECK_OK(clg_session_new(g, NULL, &s));
  if (!s) {
    clg_graph_free(g);
    return;
  }
  CHECK_CODE(clg_session_write_trace(s, path), CLG_FAILED_PRECONDITION);
  CHECK_CODE(clg_session_set_trace(s, -1), CLG_INVALID_ARGUMENT);
  clg_op_profile *rows = NULL;
  int nrows = 0;
  CHECK_CODE(clg_session_profile(s, &rows, &nrows), CLG_FAILED_PRECONDITION);
  clg_tensor *t = NULL;
  CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &out, &t)); /* not traced: compiles */
  clg_tensor_free(t);
  CHECK_OK(clg_session_set_trace(s, 3));
  const int runs = 4; /* the first traced one falls out: the last 3 are kept */
  for (int r = 0; r < runs; r++) {
    t = NULL;
    CHECK_OK(clg_session_run(s, 0, NULL, NULL, 1, &out, &t));
    clg_tensor_free(t);
  }
  /* One clock through the public call too: the CPU's sum after both towers. */
  uint64_t s0, e0, s1, e1;
  for (int i = 0; i < 2; i++) {
    CHECK_OK(clg_session_node_times(s, tower[i], &s0, &e0));
    CHECK_OK(clg_session_node_times(s, sum, &s1, &e1));
    CHECK_MSG(e0 <= s1, "tower %d ends at %llu, after the sum starts at %llu", i,
              (unsigned long long)e0, (unsigned long long)s1);
  }
  CHECK_OK(clg_session_write_trace(s, path));
  CHECK_CODE(clg_session_write_trace(s, bad), CLG_NOT_FOUND); /* no such folder */
  CHECK_CONTAINS(clg_last_error(), bad);
  char *text = slurp(path);
  CHECK(text != NULL);
  json_error_t err;
  json_t *root = text ? json_loads(text, 0, &err) : NULL;
  CHECK_MSG(root != NULL, "the trace is not JSON: %s (line %d)", err.text, err.line);
  json_t *events = json_object_get(root, "traceEvents");
  CHECK(json_is_array(events));
  size_t nev = json_array_size(events);
  slice *sl = calloc(nev + 1, sizeof *sl);
  int nsl = 0, ncounters = 0, ninstants = 0;
  const char *track_name[64] = {0};
  int64_t flow_s[256] = {0}, flow_f[256] = {0};
  int flow_s_tid[256], flow_f_tid[256], nflows = 0;
  for (size_t i = 0; i < nev; i++) {
    json_t *e = json_array_get(events, i);
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *name = json_string_value(json_object_get(e, "name"));
    CHECK_MSG(ph && strlen(ph) == 1 && strchr("MXiCsf", ph[0]) && name,
              "event %zu: ph '%s' name '%s'", i, ph ? ph : "?", name ? name : "?");
    if (!ph || !name)
      continue;
    CHECK(json_is_integer(json_object_get(e, "pid")));
    json_t *tid = json_object_get(e, "tid");
    int tidv = (int)json_integer_value(tid);
    if (ph[0] == 'M') {
      if (!strcmp(name, "thread_name") && tidv >= 0 && tidv < 64)
        track_name[tidv] = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
      continue;
    }
    json_t *ts = json_object_get(e, "ts");
    CHECK(json_is_number(ts) && json_number_value(ts) >= 0);
    CHECK(json_is_integer(tid));
    if (ph[0] == 'X') {
      json_t *dur = json_object_get(e, "dur");
      CHECK(json_is_number(dur) && json_number_value(dur) >= 0);
      sl[nsl++] = (slice){name,
                          json_string_value(json_object_get(e, "cat")),
                          tidv,
                          ns_of(ts),
                          ns_of(ts) + ns_of(dur),
                          json_object_get(e, "args")};
    } else if (ph[0] == 'C') {
      ncounters++;
      CHECK(json_is_number(json_object_get(json_object_get(e, "args"), name)));
    } else if (ph[0] == 'i') {
      ninstants++;
    } else {
      json_t *id = json_object_get(e, "id");
      CHECK(json_is_integer(id));
      int k = (int)json_integer_value(id);
      if (k > 0 && k < 256) {
        if (ph[0] == 's') {
          flow_s[k] = ns_of(ts);
          flow_s_tid[k] = tidv;
        } else {
          flow_f[k] = ns_of(ts);
          flow_f_tid[k] = tidv;
        }
        if (k > nflows)
          nflows = k;
      }
    }
  }
  /* Steps: one per kept run. */
  int steps = 0;
  for (int i = 0; i < nsl; i++)
    steps += sl[i].cat && !strcmp(sl[i].cat, "step");
  CHECK_MSG(steps == 3, "%d step slices, want 3", steps);
  CHECK(ninstants == 3);
  CHECK(ncounters > 0);
  /* One slice per node run per run: the nodes that run are every node but the Consts. */
  const char *ran[] = {clg_node_name(tower[0]), clg_node_name(tower[1]), "sum", "square", "relu"};
  for (int run = 2; run <= 4; run++) {
    for (size_t k = 0; k < sizeof ran / sizeof ran[0]; k++) {
      int count = 0;
      for (int i = 0; i < nsl; i++)
        if (sl[i].cat && !strcmp(sl[i].cat, "op") && !strcmp(sl[i].name, ran[k]) &&
            json_integer_value(json_object_get(sl[i].args, "run")) == run)
          count++;
      CHECK_MSG(count == 1, "run %d: %d slices of %s", run, count, ran[k]);
    }
  }
  int ops = 0;
  for (int i = 0; i < nsl; i++)
    ops += sl[i].cat && !strcmp(sl[i].cat, "op");
  CHECK_MSG(ops == 15, "%d op slices, want 15 (5 nodes x 3 runs)", ops);
  /* Dependencies on one clock: no consumer starts before a producer of its inputs ends. */
  int checked = 0;
  for (int i = 0; i < nsl; i++) {
    if (!sl[i].cat || strcmp(sl[i].cat, "op"))
      continue;
    json_t *inputs = json_object_get(sl[i].args, "inputs");
    json_int_t run = json_integer_value(json_object_get(sl[i].args, "run"));
    CHECK(json_is_array(inputs));
    for (size_t k = 0; k < json_array_size(inputs); k++) {
      const char *in = json_string_value(json_array_get(inputs, k));
      for (int j = 0; j < nsl; j++)
        if (sl[j].cat && !strcmp(sl[j].cat, "op") && !strcmp(sl[j].name, in) &&
            json_integer_value(json_object_get(sl[j].args, "run")) == run) {
          checked++;
          CHECK_MSG(sl[j].end <= sl[i].start,
                    "run %d: %s (tid %d) starts %lld ns before its input %s (tid %d) ends",
                    (int)run, sl[i].name, sl[i].tid, (long long)(sl[j].end - sl[i].start), in,
                    sl[j].tid);
        }
    }
  }
  CHECK_MSG(checked == 4 * 3, "%d dependencies checked, want 12", checked);
  /* Copies: slices of their own, after their producer, joined by flows. */
  int copies = 0;
  for (int i = 0; i < nsl; i++)
    if (sl[i].cat && !strcmp(sl[i].cat, "copy")) {
      copies++;
      const char *to = track_name[sl[i].tid];
      CHECK(to && !strncmp(to, "copies to /job:localhost", 24));
    }
  CHECK_MSG(copies >= 3 * 3, "%d copy slices", copies); /* 2 towers to CPU, CPU to GPU:1, ... */
  CHECK(nflows >= copies);
  for (int k = 1; k <= nflows && k < 256; k++) {
    bool s_in = false, f_in = false;
    for (int i = 0; i < nsl; i++) {
      s_in |= sl[i].tid == flow_s_tid[k] && sl[i].start <= flow_s[k] && flow_s[k] <= sl[i].end;
      f_in |= sl[i].tid == flow_f_tid[k] && sl[i].start <= flow_f[k] && flow_f[k] <= sl[i].end;
    }
    CHECK_MSG(s_in && f_in, "flow %d is not bound to slices at both ends", k);
    CHECK(flow_s[k] <= flow_f[k]);
  }
  /* The towers on two device tracks named by their devices. */
  int tid0 = -1, tid1 = -1;
  for (int i = 0; i < nsl; i++) {
    if (!strcmp(sl[i].name, clg_node_name(tower[0])))
      tid0 = sl[i].tid;
    if (!strcmp(sl[i].name, clg_node_name(tower[1])))
      tid1 = sl[i].tid;
  }
  CHECK(tid0 >= 0 && tid1 >= 0 && tid0 != tid1);
  if (tid0 >= 0 && tid1 >= 0 && tid0 < 64 && tid1 < 64) {
    CHECK_STR(track_name[tid0], "/job:localhost/replica:0/task:0/device:GPU:2");
    CHECK_STR(track_name[tid1], "/job:localhost/replica:0/task:0/device:GPU:3");
  }
  /* The profile: its totals are the slices' durations. */
  CHECK_OK(clg_session_profile(s, &rows, &nrows));
  bool found = false;
  for (int k = 0; k < nrows; k++) {
    double total = 0;
    int64_t count = 0;
    for (int i = 0; i < nsl; i++) {
      if (!sl[i].cat || !strcmp(sl[i].cat, "step"))
        continue;
      const char *op = !strcmp(sl[i].cat, "copy")
                           ? "copy"
                           : json_string_value(json_object_get(sl[i].args, "op"));
      const char *dev = !strcmp(sl[i].cat, "copy")
                            ? json_string_value(json_object_get(sl[i].args, "to"))
                            : json_string_value(json_object_get(sl[i].args, "device"));
      if (op && dev && !strcmp(op, rows[k].op) && !strcmp(dev, rows[k].device)) {
        total += (double)(sl[i].end - sl[i].start) / 1e6;
        count++;
      }
    }
    CHECK_MSG(count == rows[k].count && fabs(total - rows[k].total_ms) < 1e-5,
              "profile row %s on %s: %lld in %.6f ms, the trace: %lld in %.6f ms", rows[k].op,
              rows[k].device, (long long)rows[k].count, rows[k].total_ms, (long long)count, total);
    CHECK(fabs(rows[k].mean_ms * (double)rows[k].count - rows[k].total_ms) < 1e-9);
    CHECK(rows[k].share > 0 && rows[k].share <= 1.0);
    if (!strcmp(rows[k].op, "MatMul") && strstr(rows[k].device, "GPU:2"))
      found = rows[k].count == 3;
    if (k)
      CHECK(rows[k - 1].total_ms >= rows[k].total_ms);
  }
  CHECK(found);
  free(rows);
  char ppath[300];
  snprintf(ppath, sizeof ppath, "%s/profile.txt", dir);
  FILE *pf = fopen(ppath, "w");
  CHECK_OK(clg_session_print_profile(s, pf));
  fclose(pf);
  char *ptext = slurp(ppath);
  CHECK_CONTAINS(ptext, "MatMul");
  CHECK_CONTAINS(ptext, "op type");
  free(ptext);

  /* Memory maps: a named device, and the default (the most bytes in use). */
  char svg[300];
  snprintf(svg, sizeof svg, "%s/gpu2.svg", dir);
  CHECK_OK(clg_session_write_memory_map(s, "/device:GPU:2", svg));
  check_memory_map(s, svg, "/job:localhost/replica:0/task:0/device:GPU:2");
  char *svgtext = slurp(svg);
  CHECK_CONTAINS(svgtext, "class=\"in-use\""); /* the chart of the traced run */
  CHECK_CONTAINS(svgtext, "MatMul");           /* the arena names its largest tensor */
  free(svgtext);
  snprintf(svg, sizeof svg, "%s/most.svg", dir);
  CHECK_OK(clg_session_write_memory_map(s, NULL, svg));
  const char *most = NULL;
  uint64_t best = 0;
  const clg_devices *devs = clg_session_devices(s);
  for (int d = 0; d < clg_devices_count(devs); d++) {
    clg_memory_stats st;
    const char *name = clg_devices_get(devs, d)->full_name;
    if (clg_session_memory_stats(s, name, &st) == CLG_OK && (!most || st.bytes_in_use > best)) {
      most = name;
      best = st.bytes_in_use;
    }
  }
  check_memory_map(s, svg, most);
  CHECK_CODE(clg_session_write_memory_map(s, "/device:GPU:9", svg), CLG_NOT_FOUND);
  check_modes(s);
  check_trace_html_fifo();
  CHECK_OK(clg_session_set_trace(s, 0));
  CHECK_CODE(clg_session_write_trace(s, path), CLG_FAILED_PRECONDITION);

  json_decref(root);
  free(sl);
  free(text);
  clg_session_free(s);
  clg_graph_free(g);
}

/* Out of memory on a virtual GPU of 1 MiB: the error names the memory map it wrote. */
static void test_oom_map(void)
{
  clg_graph *g = clg_graph_new();
  int64_t big[2] = {1024, 1024}, small[2] = {16, 16};
  clg_graph_push_device(g, "/device:GPU:0");
  clg_node *x = clg_placeholder(g, "x", CLG_FLOAT32, 2, small);
  static float ones[256];
  clg_node *c = clg_const_f32(g, "c", 2, small, ones); /* stays on the device: a labelled block */
  clg_node *y = clg_add(g, "y", x, c);
  clg_node *bx = clg_placeholder(g, "bx", CLG_FLOAT32, 2, big);
  clg_node *by = clg_add(g, "by", bx, bx);
  clg_graph_pop_device(g);
  clg_session_options opt;
  clg_session_options_init(&opt);
  clg_virtual_devices vd = {1, {1.0}};
  opt.num_virtual = 1;
  opt.virtual_devices = &vd;
  opt.visible_device_list = "0";
  char path[300];
  snprintf(path, sizeof path, "%s/oom.svg", dir);
  opt.oom_memory_map = path;
  opt.trace_runs = 1;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  if (s) {
    clg_tensor *f = clg_tensor_new(CLG_FLOAT32, 2, small, NULL), *out = NULL;
    CHECK_OK(clg_session_run(s, 1, &x, &f, 1, &y, &out)); /* a traced run: the chart */
    clg_tensor_free(out);
    clg_tensor *bf = clg_tensor_new(CLG_FLOAT32, 2, big, NULL);
    out = NULL;
    clg_test_log_capture_start(CLG_LOG_WARNING);
    CHECK_CODE(clg_session_run(s, 1, &bx, &bf, 1, &by, &out), CLG_RESOURCE_EXHAUSTED);
    clg_test_log_capture_stop();
    char want[400];
    snprintf(want, sizeof want, "; memory map of /job:localhost/replica:0/task:0/device:GPU:0: %s",
             path);
    CHECK_CONTAINS(clg_last_error(), want);
    CHECK_CONTAINS(clg_last_error(), "OOM when allocating");
    check_memory_map(s, path, "/job:localhost/replica:0/task:0/device:GPU:0");
    clg_tensor_free(bf);
    clg_tensor_free(f);
  }
  clg_session_free(s);
  clg_graph_free(g);
}

int main(void)
{
  snprintf(dir, sizeof dir, "%s/clg_pictures_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  if (clg_test_require_gpus(4)) {
    test_trace();
    test_oom_map();
  }
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return clg_test_summary("test_pictures");
}
