/* The pictures in a real browser: `clgraph demo --scenario S7 --trace --memory-map` writes
 * the towers' trace and a memory map, `clgraph trace-html` turns the trace into a page, and
 * headless Chromium (Debian's chromium) renders both. The page's script must have run to
 * its end (it sets the title), and each screenshot must have the window's size and show a
 * picture: decoded here (PNG: zlib and the five row filters), not blank. A trace whose names
 * are markup ("<!--<script>", "</script>") must give a page whose script runs and shows them
 * as text when the pointer is over the slice. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

static char dir[256];

static int run(const char *cmd)
{
  int st = system(cmd);
  return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static unsigned char *slurp(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)len + 1);
  if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  if (buf)
    buf[len] = 0;
  *n = (size_t)len;
  fclose(f);
  return buf;
}

static uint32_t be32(const unsigned char *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

typedef struct png_info {
  uint32_t width, height;
  double inked; /* share of pixels that are not the background (the top-left pixel) */
  int colours;  /* distinct colours among the first 64 seen */
} png_info;

/* Decodes an 8-bit RGB or RGBA PNG. */
static bool png_decode(const char *path, png_info *out)
{
  size_t n = 0;
  unsigned char *png = slurp(path, &n);
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!png || n < 8 || memcmp(png, sig, 8)) {
    free(png);
    return false;
  }
  unsigned char *idat = NULL;
  size_t nidat = 0;
  int depth = 0, type = -1;
  for (size_t at = 8; at + 12 <= n;) {
    uint32_t len = be32(png + at);
    const unsigned char *kind = png + at + 4, *body = png + at + 8;
    if (at + 12 + len > n)
      break;
    if (!memcmp(kind, "IHDR", 4) && len >= 13) {
      out->width = be32(body);
      out->height = be32(body + 4);
      depth = body[8];
      type = body[9];
    } else if (!memcmp(kind, "IDAT", 4)) {
      unsigned char *v = realloc(idat, nidat + len);
      if (!v)
        break;
      idat = v;
      memcpy(idat + nidat, body, len);
      nidat += len;
    }
    at += 12 + len;
  }
  free(png);
  int bpp = type == 6 ? 4 : type == 2 ? 3 : 0;
  if (depth != 8 || !bpp || !out->width || !out->height || out->width > 10000 ||
      out->height > 10000) {
    free(idat);
    return false;
  }
  size_t stride = (size_t)out->width * (size_t)bpp;
  uLongf raw_len = (uLongf)((stride + 1) * out->height);
  unsigned char *raw = malloc(raw_len);
  bool ok = raw && uncompress(raw, &raw_len, idat, (uLong)nidat) == Z_OK &&
            raw_len == (stride + 1) * out->height;
  free(idat);
  unsigned char *img = ok ? malloc(stride * out->height) : NULL;
  ok = ok && img;
  for (uint32_t y = 0; ok && y < out->height; y++) {
    const unsigned char *src = raw + y * (stride + 1) + 1;
    unsigned char *row = img + y * stride, *up = y ? row - stride : NULL;
    int filter = src[-1];
    if (filter > 4)
      ok = false;
    for (size_t x = 0; ok && x < stride; x++) {
      int a = x >= (size_t)bpp ? row[x - bpp] : 0, b = up ? up[x] : 0;
      int c = up && x >= (size_t)bpp ? up[x - bpp] : 0, v = src[x];
      switch (filter) {
      case 1:
        v += a;
        break;
      case 2:
        v += b;
        break;
      case 3:
        v += (a + b) / 2;
        break;
      case 4:
        v += paeth(a, b, c);
        break;
      default:
        break;
      }
      row[x] = (unsigned char)v;
    }
  }
  if (ok) {
    size_t inked = 0;
    uint32_t seen[64];
    out->colours = 0;
    for (size_t i = 0; i < (size_t)out->width * out->height; i++) {
      const unsigned char *p = img + i * (size_t)bpp;
      uint32_t rgb = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
      if (memcmp(p, img, 3))
        inked++;
      bool known = false;
      for (int k = 0; k < out->colours && !known; k++)
        known = seen[k] == rgb;
      if (!known && out->colours < 64)
        seen[out->colours++] = rgb;
    }
    out->inked = (double)inked / ((double)out->width * out->height);
  }
  free(raw);
  free(img);
  return ok;
}

/* Renders url in headless Chromium: a screenshot into png (when not NULL), else the DOM after
 * the page's scripts ran into dom. */
static int chromium(const char *url, const char *png, const char *dom)
{
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
           "--no-first-run --hide-scrollbars --user-data-dir='%s/profile' --window-size=1200,700 "
           "--allow-file-access-from-files "
           "%s%s%s '%s' >%s 2>'%s/chromium.log'",
           dir, png ? "--screenshot='" : "--dump-dom", png ? png : "", png ? "'" : "", url,
           dom ? dom : "/dev/null", dir);
  return run(cmd);
}

static void check_screenshot(const char *what, const char *png)
{
  png_info info = {0};
  bool ok = png_decode(png, &info);
  CHECK_MSG(ok, "%s: the screenshot %s is not a PNG this test decodes", what, png);
  if (!ok)
    return;
  printf("%s: %ux%u, %.1f%% of the pixels inked, %d+ colours\n", what, info.width, info.height,
         100 * info.inked, info.colours);
  CHECK(info.width == 1200 && info.height == 700);
  CHECK_MSG(info.inked > 0.02, "%s: the page is blank (%.3f%% inked)", what, 100 * info.inked);
  CHECK_MSG(info.colours >= 6, "%s: only %d colours", what, info.colours);
}

static bool put_text(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  bool ok = f && fputs(text, f) >= 0;
  if (f)
    ok = fclose(f) == 0 && ok;
  return ok;
}

/* A trace whose slice and track names are markup. The page is opened in a frame of a page
 * of this test's, which moves the pointer over the slice (the middle of the canvas, in the
 * first track's row) and writes the page's title and tooltip, URI-encoded, into its DOM. */
static void test_markup_names(const char *bin)
{
  char path[512], cmd[2048], url[600], dom[512];
  snprintf(path, sizeof path, "%s/markup.json", dir);
  CHECK(put_text(path, "{\"traceEvents\": ["
                       "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, "
                       "\"args\": {\"name\": \"</script> & <b>track</b>\"}},"
                       "{\"ph\": \"X\", \"name\": \"<!--<script>\", \"pid\": 1, \"tid\": 1, "
                       "\"ts\": 0, \"dur\": 5}]}"));
  snprintf(cmd, sizeof cmd, "'%s/clgraph' trace-html '%s' '%s/markup.html'", bin, path, dir);
  CHECK_MSG(run(cmd) == 0, "%s failed", cmd);
  snprintf(path, sizeof path, "%s/hover.html", dir);
  CHECK(put_text(
      path,
      "<!DOCTYPE html><html><head><title>hover</title></head><body>\n"
      "<iframe id=\"f\" src=\"markup.html\" width=\"1100\" height=\"500\"></iframe>\n<script>\n"
      "document.getElementById(\"f\").addEventListener(\"load\", () => {\n"
      "  const d = document.getElementById(\"f\").contentDocument;\n"
      "  const c = d.getElementById(\"c\"), r = c.getBoundingClientRect();\n"
      "  c.dispatchEvent(new MouseEvent(\"mousemove\", {bubbles: true,\n"
      "    clientX: r.left + r.width / 2, clientY: r.top + 39}));\n"
      "  const out = document.createElement(\"pre\");\n"
      "  out.textContent = \"title=\" + encodeURIComponent(d.title) + \" tip=\" +\n"
      "    encodeURIComponent(d.getElementById(\"tip\").textContent) + \" end\";\n"
      "  document.body.appendChild(out);\n"
      "});\n</script></body></html>\n"));
  snprintf(url, sizeof url, "file://%s", path);
  snprintf(dom, sizeof dom, "%s/hover.dom", dir);
  CHECK(chromium(url, NULL, dom) == 0);
  size_t n = 0;
  char *text = (char *)slurp(dom, &n);
  /* "clgraph trace: 1 slices" and "<!--<script>  (5.000 µs)\n" (no args). */
  CHECK_CONTAINS(text, "title=clgraph%20trace%3A%201%20slices tip=");
  CHECK_CONTAINS(text, " tip=%3C!--%3Cscript%3E%20%20(5.000%20%C2%B5s)%0A end");
  free(text);
}

int main(void)
{
  snprintf(dir, sizeof dir, "%s/clg_browser_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  const char *bin = getenv("CLG_BINARY_DIR");
  CHECK_MSG(bin != NULL, "CLG_BINARY_DIR is not set (run this test through ctest)");
  int have = run("command -v chromium >/dev/null");
  CHECK_MSG(have == 0, "chromium is not installed: apt-get install chromium (ci/install-deps.sh)");
  if (bin && have == 0)
    test_markup_names(bin);
  if (bin && have == 0 && clg_test_require_gpus(4)) {
    char cmd[2048], url[512], png[512], dom[512];
    snprintf(cmd, sizeof cmd,
             "'%s/clgraph' demo --scenario S7 --quiet --trace '%s/s7.json' --memory-map "
             "'%s/s7.svg' >'%s/demo.log' 2>&1",
             bin, dir, dir, dir);
    CHECK_MSG(run(cmd) == 0, "%s failed", cmd);
    snprintf(cmd, sizeof cmd, "'%s/clgraph' trace-html '%s/s7.json' '%s/s7.html'", bin, dir, dir);
    CHECK_MSG(run(cmd) == 0, "%s failed", cmd);
    /* The page's script ran to its end: it titles the page with the slices it drew. */
    snprintf(url, sizeof url, "file://%s/s7.html", dir);
    snprintf(dom, sizeof dom, "%s/s7.dom", dir);
    CHECK(chromium(url, NULL, dom) == 0);
    size_t n = 0;
    char *text = (char *)slurp(dom, &n);
    CHECK_CONTAINS(text, "<title>clgraph trace: ");
    CHECK_CONTAINS(text, " slices on 5 tracks"); /* steps, CPU:0, GPU:2, GPU:3, copies */
    free(text);
    snprintf(png, sizeof png, "%s/s7.png", dir);
    CHECK(chromium(url, png, NULL) == 0);
    check_screenshot("trace of S7", png);
    snprintf(url, sizeof url, "file://%s/s7.svg", dir);
    snprintf(png, sizeof png, "%s/map.png", dir);
    CHECK(chromium(url, png, NULL) == 0);
    check_screenshot("memory map", png);
  }
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (run(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return clg_test_summary("test_browser");
}
