/* `clgraph trace-html IN.json OUT.html`: a trace as a page any browser opens offline. The
 * page (tools/trace_viewer.html.in, embedded) draws the trace with its own script; the
 * trace goes inside it as JSON, so the page is one self-contained file. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "tool.h"
#include "trace/trace.h"

extern const char clg_tool_trace_viewer[];

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph trace-html TRACE.json OUT.html\n\n"
             "Writes a self-contained HTML page that draws a Chrome trace-event file (as\n"
             "written by --trace or clg_session_write_trace): a row per device with a box per\n"
             "op, copies and their flow arrows, memory counters and step markers. Open it in\n"
             "any browser, offline (wheel: zoom, drag: pan, hover: the op's shapes and inputs).\n"
             "Exit status: 0 when written, 1 when the trace cannot be read, 2 for usage.\n");
}

int clg_tool_trace_html(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (argv[i][0] == '-' && argv[i][1] && !clg_tool_wants_help(2, (char *[]){argv[0], argv[i]})) {
      fprintf(stderr, "clgraph trace-html: unknown option '%s'\n\n", argv[i]);
      usage(stderr);
      return 2;
    }
  if (clg_tool_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "clgraph trace-html: want TRACE.json and OUT.html\n\n");
    usage(stderr);
    return 2;
  }
  int fd;
  if (clg_file_open_read(argv[1], &fd) != CLG_OK) {
    fprintf(stderr, "clgraph trace-html: %s\n", clg_last_error());
    return 1;
  }
  json_error_t err;
  json_t *root = json_loadfd(fd, 0, &err);
  close(fd);
  if (!root) {
    if (err.line > 0)
      fprintf(stderr, "clgraph trace-html: '%s': %s (line %d)\n", argv[1], err.text, err.line);
    else
      fprintf(stderr, "clgraph trace-html: '%s': %s\n", argv[1], err.text);
    return 1;
  }
  json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
  if (!json_is_array(events)) {
    fprintf(stderr, "clgraph trace-html: '%s' is not a trace: no traceEvents array\n", argv[1]);
    json_decref(root);
    return 1;
  }
  /* Compact, and "</" written "<\/" so that no "</script>" closes the page's script early. */
  char *text = json_dumps(root, JSON_COMPACT | JSON_ESCAPE_SLASH);
  json_decref(root);
  const char *mark = strstr(clg_tool_trace_viewer, "@TRACE@");
  if (!text || !mark) {
    free(text);
    fprintf(stderr, "clgraph trace-html: out of memory\n");
    return 1;
  }
  size_t head = (size_t)(mark - clg_tool_trace_viewer), n = strlen(text);
  const char *tail = mark + strlen("@TRACE@");
  size_t total = head + n + strlen(tail);
  char *page = malloc(total + 1);
  if (!page) {
    free(text);
    fprintf(stderr, "clgraph trace-html: out of memory\n");
    return 1;
  }
  memcpy(page, clg_tool_trace_viewer, head);
  memcpy(page + head, text, n);
  strcpy(page + head + n, tail);
  free(text);
  clg_code code = clg_file_write_atomic(argv[2], page, total);
  free(page);
  if (code != CLG_OK) {
    fprintf(stderr, "clgraph trace-html: %s\n", clg_last_error());
    return 1;
  }
  return 0;
}
