/* The allocator as a picture: an SVG memory map (each region as a bar of its blocks: in use
 * by what they hold, free, pending; the largest free block outlined; the statistics), and a
 * line chart of the bytes in use over a run. Plain C writing SVG text; every block of the
 * snapshot is one <rect class="block ..."> carrying its numbers in data- attributes, so a
 * program can check the picture against clg_session_memory_stats. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

#define W 1000.0 /* picture width */
#define BAR_X 20.0
#define BAR_W 960.0

static const char *human(uint64_t n, char *buf, size_t size)
{
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%" PRIu64 " B", n);
  else
    snprintf(buf, size, "%.1f %s", v, unit[u]);
  return buf;
}

/* Text for an SVG text node or attribute. */
static void xml_text(clg_strbuf *s, const char *t)
{
  for (const unsigned char *p = (const unsigned char *)(t ? t : ""); *p; p++) {
    switch (*p) {
    case '<':
      clg_strbuf_append(s, "&lt;");
      break;
    case '>':
      clg_strbuf_append(s, "&gt;");
      break;
    case '&':
      clg_strbuf_append(s, "&amp;");
      break;
    case '"':
      clg_strbuf_append(s, "&quot;");
      break;
    default:
      if (*p >= 0x20 || *p == '\t' || *p == '\n')
        clg_strbuf_printf(s, "%c", *p);
    }
  }
}

/* At most max characters of t (a label inside a narrow rectangle). */
static void xml_short(clg_strbuf *s, const char *t, size_t max)
{
  char buf[128];
  size_t n = strlen(t);
  if (max >= sizeof buf)
    max = sizeof buf - 1;
  if (n > max)
    n = max;
  memcpy(buf, t, n);
  buf[n] = '\0';
  xml_text(s, buf);
}

/* A stable colour per label, so one tensor keeps its colour from picture to picture. */
static void label_colour(const char *label, char *out, size_t size)
{
  uint32_t h = 2166136261u;
  for (const char *p = label; *p; p++)
    h = (h ^ (uint8_t)*p) * 16777619u;
  snprintf(out, size, "hsl(%u,60%%,55%%)", h % 360u);
}

typedef struct region_span {
  uint32_t region;
  uint64_t size;
  size_t first, count;
} region_span;

static double chart(clg_strbuf *s, double y, const clg_memmap_point *pts, int npts, uint64_t limit);

/* What the picture sums over the blocks drawn. */
typedef struct map_totals {
  uint64_t used, free_bytes, largest;
  size_t used_blocks, free_blocks, largest_at; /* largest_at: SIZE_MAX when nothing is free */
} map_totals;

/* Groups the blocks (sorted by region) into spans and sums them; NULL when out of memory. */
static region_span *map_tally(const clg_alloc_block *b, size_t n, int *nspans, map_totals *t)
{
  region_span *spans = calloc(n + 1, sizeof *spans);
  *nspans = 0;
  *t = (map_totals){0, 0, 0, 0, 0, SIZE_MAX};
  for (size_t i = 0; spans && i < n; i++) {
    if (*nspans == 0 || spans[*nspans - 1].region != b[i].region)
      spans[(*nspans)++] = (region_span){b[i].region, b[i].region_size, i, 0};
    spans[*nspans - 1].count++;
    if (b[i].state == CLG_BLOCK_FREE) {
      t->free_bytes += b[i].size;
      t->free_blocks++;
      if (b[i].size > t->largest) {
        t->largest = b[i].size;
        t->largest_at = i;
      }
    } else if (b[i].state == CLG_BLOCK_IN_USE) {
      t->used += b[i].size;
      t->used_blocks++;
    }
  }
  return spans;
}

/* The <svg> element with the statistics as data- attributes (what tests read), the hatch
 * pattern, the title and the two summary lines. */
static void map_header(clg_strbuf *s, clg_allocator *a, const char *when,
                       const clg_memory_stats *st, const map_totals *t, size_t n, double height)
{
  const clg_device *dev = clg_allocator_device(a);
  char h1[32], h2[32], h3[32], h4[32], h5[32];
  clg_strbuf_printf(s,
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                    "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\" "
                    "data-device=\"",
                    W, height, W, height);
  xml_text(s, dev ? dev->info.full_name : "");
  clg_strbuf_printf(s,
                    "\" data-bytes-in-use=\"%" PRIu64 "\" data-bytes-free=\"%" PRIu64
                    "\" data-largest-free-block=\"%" PRIu64 "\" data-fragmentation=\"%.6f\" "
                    "data-bytes-limit=\"%" PRIu64 "\" data-bytes-reserved=\"%" PRIu64
                    "\" data-peak-bytes-in-use=\"%" PRIu64 "\" data-live-allocs=\"%" PRIu64
                    "\" data-blocks=\"%zu\">\n",
                    st->bytes_in_use, t->free_bytes, st->largest_free_block, st->fragmentation,
                    st->bytes_limit, st->bytes_reserved, st->peak_bytes_in_use, st->live_allocs, n);
  clg_strbuf_append(s, "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" "
                       "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
                       "<rect class=\"bg\" width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
                       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#cccccc\" "
                       "stroke-width=\"2\"/></pattern></defs>\n"
                       "<rect class=\"bg\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  clg_strbuf_append(s,
                    "<text x=\"20\" y=\"28\" font-size=\"18\" font-weight=\"bold\">Memory map of ");
  xml_text(s, dev ? dev->info.full_name : "?");
  clg_strbuf_append(s, " (");
  xml_text(s, clg_allocator_name(a));
  clg_strbuf_append(s, ")</text>\n<text x=\"20\" y=\"48\" fill=\"#555\">");
  xml_text(s, when ? when : "");
  clg_strbuf_append(s, "</text>\n");
  clg_strbuf_printf(s,
                    "<text x=\"20\" y=\"72\">In use %s in %zu blocks (peak %s) · free %s in %zu "
                    "blocks · largest free block %s · fragmentation %.1f%%</text>\n",
                    human(st->bytes_in_use, h1, sizeof h1), t->used_blocks,
                    human(st->peak_bytes_in_use, h2, sizeof h2),
                    human(t->free_bytes, h3, sizeof h3), t->free_blocks,
                    human(st->largest_free_block, h4, sizeof h4), 100.0 * st->fragmentation);
  clg_strbuf_printf(s,
                    "<text x=\"20\" y=\"90\">Reserved %s in %" PRIu64
                    " regions of a limit of %s; pending %s</text>\n",
                    human(st->bytes_reserved, h1, sizeof h1), st->num_regions,
                    human(st->bytes_limit, h2, sizeof h2), human(st->bytes_pending, h5, sizeof h5));
}

/* Block i of a region bar at y (scale: px per byte); at least 1.5 px so that small tensors
 * show, the largest free block outlined in red. */
static void map_block(clg_strbuf *s, const clg_alloc_block *b, size_t i, size_t largest_at,
                      double y, double scale)
{
  char h1[32];
  const clg_alloc_block *k = &b[i];
  double x = BAR_X + (double)k->offset * scale, w = (double)k->size * scale;
  if (w < 1.5)
    w = 1.5;
  if (x + w > BAR_X + BAR_W)
    x = BAR_X + BAR_W - w;
  char fill[40] = "url(#hatch)";
  const char *state = "free";
  if (k->state == CLG_BLOCK_IN_USE) {
    state = "in-use";
    label_colour(k->label[0] ? k->label : "?", fill, sizeof fill);
  } else if (k->state == CLG_BLOCK_PENDING) {
    state = "pending";
    snprintf(fill, sizeof fill, "#999999");
  }
  clg_strbuf_printf(s,
                    "<rect class=\"block %s\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
                    "height=\"36\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\" "
                    "data-region=\"%u\" data-offset=\"%" PRIu64 "\" data-size=\"%" PRIu64
                    "\" data-label=\"",
                    state, x, y + 18, w, fill, i == largest_at ? "#d62728" : "#444444",
                    i == largest_at ? "2" : "0.3", k->region, k->offset, k->size);
  xml_text(s, k->label);
  clg_strbuf_printf(s, "\"><title>%s %s at offset %" PRIu64 ": ", state,
                    human(k->size, h1, sizeof h1), k->offset);
  xml_text(s, k->label[0] ? k->label : state);
  clg_strbuf_append(s, "</title></rect>\n");
  if (w > 90 && (k->label[0] || i == largest_at)) {
    clg_strbuf_printf(s, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\">", x + 4, y + 40);
    xml_short(s, i == largest_at ? "largest free block" : k->label, (size_t)(w / 6.5));
    clg_strbuf_append(s, "</text>\n");
  }
}

/* Each region to scale, one bar of 70 px per region; returns the y below them. */
static double map_regions(clg_strbuf *s, const clg_device *dev, const clg_alloc_block *b,
                          const region_span *spans, int nspans, size_t largest_at, double y)
{
  char h1[32];
  for (int r = 0; r < nspans; r++) {
    const region_span *sp = &spans[r];
    clg_strbuf_printf(s, "<text x=\"20\" y=\"%.0f\">%s %u: %s</text>\n", y + 12,
                      dev && dev->is_host ? "Host blocks (end to end)" : "Region", sp->region,
                      human(sp->size, h1, sizeof h1));
    double scale = sp->size ? BAR_W / (double)sp->size : 0.0;
    for (size_t i = sp->first; i < sp->first + sp->count; i++)
      map_block(s, b, i, largest_at, y, scale);
    y += 70;
  }
  return y;
}

/* The blocks in use side by side, each as wide as its share of the bytes in use: what
 * fills the memory, readable when the regions are mostly free. Returns the y below. */
static double map_shares(clg_strbuf *s, const clg_alloc_block *b, size_t n, const map_totals *t,
                         double y)
{
  if (!t->used_blocks)
    return y;
  char h1[32];
  clg_strbuf_printf(s,
                    "<text x=\"20\" y=\"%.0f\">Blocks in use, side by side (width: share of "
                    "the bytes in use)</text>\n",
                    y + 12);
  double x = BAR_X;
  for (size_t i = 0; i < n; i++) {
    if (b[i].state != CLG_BLOCK_IN_USE)
      continue;
    double w = t->used ? BAR_W * (double)b[i].size / (double)t->used : 0;
    char fill[40];
    label_colour(b[i].label[0] ? b[i].label : "?", fill, sizeof fill);
    clg_strbuf_printf(s,
                      "<rect class=\"share\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"28\" "
                      "fill=\"%s\" stroke=\"white\" stroke-width=\"0.5\"><title>",
                      x, y + 18, w, fill);
    xml_text(s, b[i].label[0] ? b[i].label : "unlabelled");
    clg_strbuf_printf(s, ": %s</title></rect>\n", human(b[i].size, h1, sizeof h1));
    if (w > 110) {
      clg_strbuf_printf(s, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\">", x + 4, y + 36);
      xml_short(s, b[i].label[0] ? b[i].label : "unlabelled", (size_t)(w / 6.5));
      clg_strbuf_append(s, "</text>\n");
    }
    x += w;
  }
  return y + 60;
}

char *clg_allocator_svg(clg_allocator *a, const char *when, const clg_memmap_point *pts, int npts,
                        clg_memory_stats *stats_out)
{
  clg_memory_stats st;
  clg_alloc_block *b = NULL;
  size_t n = 0;
  if (clg_allocator_snapshot(a, &st, &b, &n) != CLG_OK)
    return NULL;
  if (stats_out)
    *stats_out = st;
  /* Regions and the totals of the blocks drawn. */
  int nspans;
  map_totals t;
  region_span *spans = map_tally(b, n, &nspans, &t);
  if (!spans) {
    free(b);
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory drawing a memory map");
    return NULL;
  }
  double height = 150.0 + nspans * 70.0 + 40.0 + (n ? 90.0 : 0.0) + 260.0;
  clg_strbuf s;
  clg_strbuf_init(&s);
  map_header(&s, a, when, &st, &t, n, height);
  double y = 110.0;
  if (n == 0) {
    clg_strbuf_printf(&s, "<text x=\"20\" y=\"%.0f\">The allocator holds no memory.</text>\n",
                      y + 20);
    y += 40;
  }
  y = map_regions(&s, clg_allocator_device(a), b, spans, nspans, t.largest_at, y);
  y = map_shares(&s, b, n, &t, y);
  y = chart(&s, y + 10, pts, npts, st.bytes_limit);
  clg_strbuf_append(&s, "</svg>\n");
  free(spans);
  free(b);
  char *out = clg_strbuf_take(&s);
  if (!out)
    clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory drawing a memory map");
  (void)y;
  return out;
}

static int cmp_point(const void *x, const void *y)
{
  const clg_memmap_point *a = x, *b = y;
  return (a->ts_ns > b->ts_ns) - (a->ts_ns < b->ts_ns);
}

/* Bytes in use (allocator) and bytes of live tensors (the run's arena) over the run. */
static double chart(clg_strbuf *s, double y, const clg_memmap_point *in, int npts, uint64_t limit)
{
  (void)limit;
  char h1[32], h2[32];
  clg_strbuf_printf(s,
                    "<text x=\"20\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">Bytes in "
                    "use during the last traced run</text>\n",
                    y + 12);
  if (npts < 2 || !in) {
    clg_strbuf_printf(s,
                      "<text x=\"20\" y=\"%.0f\" fill=\"#555\">No traced run on this device: "
                      "trace a run (clg_session_set_trace) to draw this chart.</text>\n",
                      y + 36);
    return y + 60;
  }
  clg_memmap_point *p = malloc(sizeof *p * (size_t)npts);
  if (!p)
    return y;
  memcpy(p, in, sizeof *p * (size_t)npts);
  qsort(p, (size_t)npts, sizeof *p, cmp_point);
  uint64_t t0 = p[0].ts_ns, t1 = p[npts - 1].ts_ns, top = 1;
  int peak = 0;
  for (int i = 0; i < npts; i++) {
    if (p[i].in_use > top)
      top = p[i].in_use;
    if (p[i].live > top)
      top = p[i].live;
    if (p[i].in_use > p[peak].in_use)
      peak = i;
  }
  top += top / 10;
  double cx = 90, cw = W - 120, cy = y + 30, ch = 170;
  double span = t1 > t0 ? (double)(t1 - t0) : 1.0;
#define PX(t) (cx + cw * (double)((t)-t0) / span)
#define PY(v) (cy + ch - ch * (double)(v) / (double)top)
  clg_strbuf_printf(s,
                    "<g class=\"chart\"><rect class=\"frame\" x=\"%.0f\" y=\"%.0f\" "
                    "width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#888\"/>\n",
                    cx, cy, cw, ch);
  for (int k = 0; k <= 4; k++) {
    uint64_t v = top / 4 * (uint64_t)k;
    clg_strbuf_printf(s,
                      "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\">%s</text>"
                      "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                      cx - 4, PY(v) + 3, human(v, h1, sizeof h1), cx, cx + cw, PY(v), PY(v));
  }
  for (int k = 0; k <= 4; k++) {
    double t = span * k / 4.0;
    clg_strbuf_printf(s,
                      "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"10\">%.3f "
                      "ms</text>\n",
                      cx + cw * k / 4.0, cy + ch + 14, t / 1e6);
  }
  /* Steps: a value holds until the next sample. */
  const char *series[2] = {"in-use", "live"};
  const char *colour[2] = {"#1f77b4", "#ff7f0e"};
  for (int k = 0; k < 2; k++) {
    clg_strbuf_printf(s,
                      "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                      "points=\"",
                      series[k], colour[k]);
    for (int i = 0; i < npts; i++) {
      uint64_t v = k == 0 ? p[i].in_use : p[i].live;
      if (i > 0)
        clg_strbuf_printf(s, "%.1f,%.1f ", PX(p[i].ts_ns),
                          PY(k == 0 ? p[i - 1].in_use : p[i - 1].live));
      clg_strbuf_printf(s, "%.1f,%.1f ", PX(p[i].ts_ns), PY(v));
    }
    clg_strbuf_append(s, "\"/>\n");
  }
  clg_strbuf_printf(s,
                    "<circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#d62728\"/>"
                    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#d62728\" "
                    "text-anchor=\"%s\">peak %s at %.3f ms</text>\n",
                    PX(p[peak].ts_ns), PY(p[peak].in_use),
                    PX(p[peak].ts_ns) + (PX(p[peak].ts_ns) > cx + cw / 2 ? -6 : 6),
                    PY(p[peak].in_use) + 14, PX(p[peak].ts_ns) > cx + cw / 2 ? "end" : "start",
                    human(p[peak].in_use, h2, sizeof h2), (double)(p[peak].ts_ns - t0) / 1e6);
  clg_strbuf_printf(s,
                    "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"4\" fill=\"%s\"/>"
                    "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">allocator: bytes in use</text>"
                    "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"4\" fill=\"%s\"/>"
                    "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">tensors of the run live in its "
                    "arena</text></g>\n",
                    cx, cy + ch + 24, colour[0], cx + 16, cy + ch + 30, cx + 200, cy + ch + 24,
                    colour[1], cx + 216, cy + ch + 30);
#undef PX
#undef PY
  free(p);
  return cy + ch + 40;
}
