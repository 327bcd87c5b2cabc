/* The pictures of a session's kept runs: the Chrome trace (a timeline per device), the
 * per-op profile, and the memory map of a device. The executor records the runs
 * (clg_run_trace, on the host's clock); this file only draws them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "trace/trace.h"

/* --- the trace ------------------------------------------------------------------------------- */

/* Output shapes of n as a JSON array of strings. */
static void shapes_json(clg_strbuf *b, const clg_node *n)
{
  clg_strbuf_append(b, "[");
  for (int o = 0; o < n->num_outputs; o++) {
    char shape[96];
    clg_strbuf_printf(b, "%s\"%s %s\"", o ? ", " : "", clg_dtype_name(n->outs[o].dtype),
                      clg_out_shape_string(&n->outs[o], shape, sizeof shape));
  }
  clg_strbuf_append(b, "]");
}

static char *node_args(const clg_node *n, const char *device, uint64_t run)
{
  clg_strbuf b;
  clg_strbuf_init(&b);
  clg_strbuf_append(&b, "\"op\": ");
  clg_strbuf_json_string(&b, n->op);
  clg_strbuf_append(&b, ", \"device\": ");
  clg_strbuf_json_string(&b, device);
  clg_strbuf_append(&b, ", \"shape\": ");
  shapes_json(&b, n);
  clg_strbuf_append(&b, ", \"inputs\": [");
  for (int j = 0; j < n->num_inputs + n->num_control; j++) {
    const clg_node *in = j < n->num_inputs ? n->inputs[j].node : n->control[j - n->num_inputs];
    if (j)
      clg_strbuf_append(&b, ", ");
    clg_strbuf_json_string(&b, in->name);
  }
  clg_strbuf_printf(&b, "], \"run\": %llu", (unsigned long long)run);
  return clg_strbuf_take(&b);
}

static uint64_t mid(const clg_run_slice *s) { return s->start_ns + (s->end_ns - s->start_ns) / 2; }

clg_code clg_runs_write_trace(const clg_graph *g, const clg_devices *devs,
                              clg_run_trace *const *runs, int n, const char *path)
{
  clg_trace *t = clg_trace_new("clgraph");
  int nd = devs->count;
  int *track = malloc(sizeof(int) * (size_t)nd * 2); /* devices, then their copy tracks */
  bool *used = calloc((size_t)nd, sizeof *used);
  int nn = clg_graph_num_nodes(g);
  int *slice_of = malloc(sizeof(int) * (size_t)(nn ? nn : 1)); /* node -> slice, this run */
  bool ok = t && track && used && slice_of;
  for (int d = 0; ok && d < 2 * nd; d++)
    track[d] = -1;
  /* Tracks in device order: the devices any kept run used. */
  for (int r = 0; ok && r < n; r++)
    for (int i = 0; i < runs[r]->nslices; i++)
      used[runs[r]->slices[i].dev] = true;
  int steps = ok ? clg_trace_track(t, "steps") : -1;
  ok = ok && steps >= 0;
  for (int d = 0; ok && d < nd; d++)
    if (used[d])
      ok = (track[d] = clg_trace_track(t, clg_devices_get(devs, d)->full_name)) >= 0;
  for (int r = 0; ok && r < n; r++) {
    const clg_run_trace *run = runs[r];
    char name[64];
    snprintf(name, sizeof name, "step %llu", (unsigned long long)run->run);
    /* How each device's clock was put on the host's: device + offset = host, +- error. */
    clg_strbuf b;
    clg_strbuf_init(&b);
    clg_strbuf_printf(&b, "\"run\": %llu, \"ok\": %s, \"clocks\": [", (unsigned long long)run->run,
                      run->ok ? "true" : "false");
    for (int d = 0, k = 0; d < nd && d < run->ndevs; d++) {
      if (!used[d])
        continue;
      clg_strbuf_printf(&b, "%s{\"device\": ", k++ ? ", " : "");
      clg_strbuf_json_string(&b, clg_devices_get(devs, d)->full_name);
      clg_strbuf_printf(&b, ", \"offset_ns\": %lld, \"error_ns\": %llu}", (long long)run->offset[d],
                        (unsigned long long)run->offset_error[d]);
    }
    clg_strbuf_append(&b, "]");
    char *args = clg_strbuf_take(&b);
    ok = args && clg_trace_slice(t, steps, name, "step", run->start_ns, run->end_ns, args) &&
         clg_trace_instant(t, steps, name, run->start_ns);
    free(args);
    for (int i = 0; i < nn; i++)
      slice_of[i] = -1;
    int first_copy = -1; /* copies since the last node: they feed the next one */
    for (int i = 0; ok && i < run->nslices; i++) {
      const clg_run_slice *s = &run->slices[i];
      const clg_node *node = clg_graph_node(g, s->node);
      const char *dev = clg_devices_get(devs, s->dev)->full_name;
      if (s->src_dev >= 0) {
        if (track[nd + s->dev] < 0) {
          char tname[300];
          snprintf(tname, sizeof tname, "copies to %s", dev);
          ok = (track[nd + s->dev] = clg_trace_track(t, tname)) >= 0;
          if (!ok)
            break;
        }
        clg_strbuf b;
        clg_strbuf_init(&b);
        clg_strbuf_printf(&b, "\"value\": \"%s:%d\", \"bytes\": %llu, \"from\": ", node->name,
                          s->out, (unsigned long long)s->bytes);
        clg_strbuf_json_string(&b, clg_devices_get(devs, s->src_dev)->full_name);
        clg_strbuf_append(&b, ", \"to\": ");
        clg_strbuf_json_string(&b, dev);
        clg_strbuf_printf(&b, ", \"run\": %llu", (unsigned long long)run->run);
        char *a = clg_strbuf_take(&b);
        char cname[200];
        snprintf(cname, sizeof cname, "copy %s", node->name);
        ok = a && clg_trace_slice(t, track[nd + s->dev], cname, "copy", s->start_ns, s->end_ns, a);
        free(a);
        int from = slice_of[s->node];
        if (ok && from >= 0)
          ok = clg_trace_flow(t, "copy", track[run->slices[from].dev], mid(&run->slices[from]),
                              track[nd + s->dev], mid(s));
        if (first_copy < 0)
          first_copy = i;
        continue;
      }
      char *a = node_args(node, dev, run->run);
      ok = a && clg_trace_slice(t, track[s->dev], node->name, "op", s->start_ns, s->end_ns, a);
      free(a);
      slice_of[s->node] = i;
      for (int c = first_copy; ok && c >= 0 && c < i; c++)
        ok = clg_trace_flow(t, "copy", track[nd + run->slices[c].dev], mid(&run->slices[c]),
                            track[s->dev], mid(s));
      first_copy = -1;
    }
    /* Memory counters: the allocator's bytes in use and the run's tensors live. */
    for (int i = 0; ok && i < run->nsamples; i++) {
      const clg_run_sample *m = &run->samples[i];
      if (track[m->dev] < 0)
        continue;
      char cname[300];
      const char *dev = clg_devices_get(devs, m->dev)->full_name;
      snprintf(cname, sizeof cname, "%s bytes in use", dev);
      ok = clg_trace_counter(t, track[m->dev], cname, m->ts_ns, (double)m->in_use);
      snprintf(cname, sizeof cname, "%s tensors live", dev);
      ok = ok && clg_trace_counter(t, track[m->dev], cname, m->ts_ns, (double)m->live);
    }
  }
  clg_code code =
      ok ? clg_trace_write(t, path)
         : clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory writing the trace '%s'", path);
  clg_trace_free(t);
  free(track);
  free(used);
  free(slice_of);
  return code;
}

/* --- the profile ------------------------------------------------------------------------------ */

static int cmp_rows(const void *x, const void *y)
{
  const clg_op_profile *a = x, *b = y;
  if (a->total_ms != b->total_ms)
    return a->total_ms < b->total_ms ? 1 : -1;
  int c = strcmp(a->op, b->op);
  return c ? c : strcmp(a->device, b->device);
}

clg_code clg_runs_profile(const clg_graph *g, const clg_devices *devs, clg_run_trace *const *runs,
                          int n, clg_op_profile **rows, int *num_rows)
{
  int cap = 16, nrows = 0;
  clg_op_profile *v = calloc((size_t)cap, sizeof *v);
  uint64_t wall = 0;
  for (int r = 0; v && r < n; r++) {
    wall += runs[r]->end_ns - runs[r]->start_ns;
    for (int i = 0; v && i < runs[r]->nslices; i++) {
      const clg_run_slice *s = &runs[r]->slices[i];
      const char *op = s->src_dev >= 0 ? "copy" : clg_graph_node(g, s->node)->op;
      const char *dev = clg_devices_get(devs, s->dev)->full_name;
      int k = 0;
      while (k < nrows && (strcmp(v[k].op, op) != 0 || strcmp(v[k].device, dev) != 0))
        k++;
      if (k == nrows) {
        if (nrows == cap) {
          clg_op_profile *w = realloc(v, sizeof *w * (size_t)cap * 2);
          if (!w) {
            free(v);
            v = NULL;
            break;
          }
          v = w;
          cap *= 2;
        }
        memset(&v[k], 0, sizeof v[k]);
        snprintf(v[k].op, sizeof v[k].op, "%s", op);
        snprintf(v[k].device, sizeof v[k].device, "%s", dev);
        nrows++;
      }
      v[k].count++;
      v[k].total_ms += (double)(s->end_ns - s->start_ns) / 1e6;
    }
  }
  if (!v)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory for the profile");
  for (int k = 0; k < nrows; k++) {
    v[k].mean_ms = v[k].total_ms / (double)v[k].count;
    v[k].share = wall ? v[k].total_ms * 1e6 / (double)wall : 0.0;
  }
  qsort(v, (size_t)nrows, sizeof *v, cmp_rows);
  *rows = v;
  *num_rows = nrows;
  return CLG_OK;
}

void clg_runs_print_profile(FILE *f, const clg_op_profile *rows, int n, int runs, uint64_t wall_ns)
{
  fprintf(f,
          "Per-op profile of the last %d traced run%s (%.3f ms of wall time; devices work at "
          "once, so shares can add up to more than 100%%)\n",
          runs, runs == 1 ? "" : "s", (double)wall_ns / 1e6);
  /* Columns as wide as their longest entry (SparseSoftmaxCrossEntropyWithLogits is 35). */
  int wop = 20, wdev = 6;
  for (int i = 0; i < n; i++) {
    int lo = (int)strlen(rows[i].op), ld = (int)strlen(rows[i].device);
    wop = lo > wop ? lo : wop;
    wdev = ld > wdev ? ld : wdev;
  }
  fprintf(f, "%-*s %-*s %7s %11s %10s %7s\n", wop, "op type", wdev, "device", "count", "total ms",
          "mean ms", "share");
  for (int i = 0; i < n; i++)
    fprintf(f, "%-*s %-*s %7lld %11.3f %10.4f %6.1f%%\n", wop, rows[i].op, wdev, rows[i].device,
            (long long)rows[i].count, rows[i].total_ms, rows[i].mean_ms, 100.0 * rows[i].share);
}

/* --- the memory map -----------------------------------------------------------------------------
 */

clg_code clg_runs_write_memory_map(clg_process *p, int dev, const clg_run_trace *last,
                                   const char *when, const char *path)
{
  clg_allocator *a;
  clg_code code = clg_process_allocator(p, dev, &a);
  if (code != CLG_OK)
    return code;
  clg_memmap_point *pts = NULL;
  int npts = 0;
  if (last && last->nsamples) {
    pts = malloc(sizeof *pts * (size_t)last->nsamples);
    for (int i = 0; pts && i < last->nsamples; i++)
      if (last->samples[i].dev == dev)
        pts[npts++] = (clg_memmap_point){last->samples[i].ts_ns, last->samples[i].in_use,
                                         last->samples[i].live};
  }
  char *svg = clg_allocator_svg(a, when, pts, npts, NULL);
  free(pts);
  if (!svg)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory drawing the memory map '%s'",
                     path);
  code = clg_file_write_atomic(path, svg, strlen(svg));
  free(svg);
  return code;
}
