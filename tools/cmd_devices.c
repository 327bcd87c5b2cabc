/* `clgraph devices`: the devices clgraph finds, as a table or as JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "clgraph.h"
#include "tool.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: clgraph devices [--json] [--types LIST] [--visible LIST]\n"
             "\n"
             "Lists the devices clgraph finds: the host as /device:CPU:0, then the OpenCL devices\n"
             "of the chosen types as /device:GPU:0..N-1, ordered by platform (as the ICD loader\n"
             "returns them), then by device within the platform. The table ends with TensorFlow's\n"
             "\"Device mapping:\" block.\n"
             "\n"
             "options:\n"
             "  --json          print JSON instead of a table\n"
             "  --types LIST    OpenCL device types that become GPUs: a comma list of gpu,\n"
             "                  accelerator, cpu, or all (overrides CLGRAPH_DEVICE_TYPES)\n"
             "  --visible LIST  visible GPUs and their order, e.g. 2,0 (indices into the physical\n"
             "                  order; overrides CLGRAPH_VISIBLE_DEVICES)\n"
             "  -h, --help      show this help\n"
             "\n"
             "environment:\n"
             "  CLGRAPH_DEVICE_TYPES     default gpu,accelerator; cpu makes CPU OpenCL devices\n"
             "                           (PoCL) stand in as GPUs\n"
             "  CLGRAPH_VISIBLE_DEVICES  like TensorFlow's visible_device_list, e.g. 2,0\n"
             "  OCL_ICD_VENDORS          where the ICD loader looks for OpenCL platforms\n"
             "  POCL_DEVICES             PoCL's devices, e.g. \"pthread pthread\" for two\n"
             "\n"
             "exit status: 0 on success, 1 when the devices cannot be listed (the reason goes to\n"
             "stderr), 2 on a usage error.\n");
}

/* "2.0 GiB", "512.0 MiB", ... */
static void human_bytes(uint64_t n, char *buf, size_t size)
{
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%" PRIu64 " B", n);
  else
    snprintf(buf, size, "%.1f %s", v, units[u]);
}

static void print_json(FILE *f, const clg_devices *devs, const char *mapping)
{
  fputs("{\n  \"devices\": [", f);
  for (int i = 0; i < clg_devices_count(devs); i++) {
    const clg_device_info *d = clg_devices_get(devs, i);
    fputs(i ? ",\n    {" : "\n    {", f);
    const struct {
      const char *key, *value;
    } strs[] = {{"name", d->name},
                {"full_name", d->full_name},
                {"type", d->type},
                {"cl_name", d->cl_name},
                {"cl_vendor", d->cl_vendor},
                {"cl_type", d->cl_type},
                {"driver_version", d->driver_version},
                {"cl_version", d->cl_version},
                {"platform_name", d->platform_name},
                {"pci_bus_id", d->pci_bus_id}};
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
      fprintf(f, "%s\"%s\": ", k ? ", " : "", strs[k].key);
      clg_tool_json_string(f, strs[k].value);
    }
    fprintf(f,
            ", \"index\": %d, \"id\": %d, \"physical_index\": %d, \"compute_units\": %u, "
            "\"global_mem\": %" PRIu64 ", \"max_alloc\": %" PRIu64 ", \"base_addr_align\": %u, "
            "\"memory_limit\": %" PRIu64 ", \"has_fp64\": %s, \"has_fp16\": %s",
            d->index, d->id, d->physical_index, d->compute_units, d->global_mem, d->max_alloc,
            d->base_addr_align, d->memory_limit, d->has_fp64 ? "true" : "false",
            d->has_fp16 ? "true" : "false");
    /* Where clgraph looks for this card's CLBlast tuning (README "CLBlast tuned per card"). */
    char tuning[4096];
    if (i > 0 &&
        clg_clblast_tuning_path(d->cl_name, d->driver_version, tuning, sizeof tuning) == CLG_OK) {
      fputs(", \"clblast_tuning_file\": ", f);
      clg_tool_json_string(f, tuning);
    }
    fputs("}", f);
  }
  fputs("\n  ],\n  \"device_mapping\": ", f);
  clg_tool_json_string(f, mapping);
  fputs("\n}\n", f);
}

#define NCOLS 8

static void print_table(FILE *f, const clg_devices *devs, const char *mapping)
{
  static const char *const heads[NCOLS] = {"NAME", "OPENCL DEVICE", "TYPE",  "MEMORY", "MAX ALLOC",
                                           "CU",   "PCI BUS ID",    "DRIVER"};
  int n = clg_devices_count(devs);
  char(*cells)[NCOLS][128] = calloc((size_t)n, sizeof *cells);
  if (!cells) {
    fprintf(stderr, "clgraph devices: out of memory\n");
    return;
  }
  size_t width[NCOLS];
  for (int c = 0; c < NCOLS; c++)
    width[c] = strlen(heads[c]);
  for (int i = 0; i < n; i++) {
    const clg_device_info *d = clg_devices_get(devs, i);
    bool host = strcmp(d->cl_type, "host") == 0;
    snprintf(cells[i][0], sizeof cells[i][0], "%s", d->name);
    snprintf(cells[i][1], sizeof cells[i][1], "%s", host ? "(host)" : d->cl_name);
    snprintf(cells[i][2], sizeof cells[i][2], "%s", d->cl_type);
    human_bytes(d->memory_limit ? d->memory_limit : d->global_mem, cells[i][3], sizeof cells[i][3]);
    if (d->memory_limit)
      strncat(cells[i][3], " (limit)", sizeof cells[i][3] - strlen(cells[i][3]) - 1);
    human_bytes(d->max_alloc, cells[i][4], sizeof cells[i][4]);
    snprintf(cells[i][5], sizeof cells[i][5], "%u", d->compute_units);
    snprintf(cells[i][6], sizeof cells[i][6], "%s", *d->pci_bus_id ? d->pci_bus_id : "-");
    snprintf(cells[i][7], sizeof cells[i][7], "%s", *d->driver_version ? d->driver_version : "-");
    for (int c = 0; c < NCOLS; c++)
      if (strlen(cells[i][c]) > width[c])
        width[c] = strlen(cells[i][c]);
  }
  for (int c = 0; c < NCOLS - 1; c++)
    fprintf(f, "%-*s  ", (int)width[c], heads[c]);
  fprintf(f, "%s\n", heads[NCOLS - 1]);
  for (int i = 0; i < n; i++) {
    for (int c = 0; c < NCOLS - 1; c++)
      fprintf(f, "%-*s  ", (int)width[c], cells[i][c]);
    fprintf(f, "%s\n", cells[i][NCOLS - 1]);
  }
  free(cells);
  fprintf(f, "\n%s", mapping);
}

int clg_tool_devices(int argc, char **argv)
{
  bool json = false;
  const char *types = NULL;
  clg_device_config cfg;
  clg_device_config_init(&cfg);
  clg_tool_opt opts[] = {
      {"--json", CLG_TOOL_FLAG, .flag = &json},
      {"--types", CLG_TOOL_STRING, .meta = "LIST", .text = &types},
      {"--visible", CLG_TOOL_STRING, .meta = "LIST", .text = &cfg.visible_device_list},
      {NULL}};
  clg_tool_cmd cmd = {.name = "devices", .usage = usage, .opts = opts};
  int parsed = clg_tool_parse(&cmd, argc, argv);
  if (parsed != CLG_TOOL_RUN)
    return parsed;
  if (types && clg_device_types_parse(types, &cfg.types) != CLG_OK) {
    fprintf(stderr, "clgraph devices: --types: %s\n", clg_last_error());
    return 1;
  }

  clg_devices *devs = NULL;
  if (clg_devices_new(&cfg, &devs) != CLG_OK) {
    fprintf(stderr, "clgraph devices: %s\n", clg_last_error());
    return 1;
  }
  char *mapping = clg_devices_mapping_string(devs);
  if (!mapping) {
    fprintf(stderr, "clgraph devices: %s\n", clg_last_error());
    clg_devices_free(devs);
    return 1;
  }
  if (json)
    print_json(stdout, devs, mapping);
  else
    print_table(stdout, devs, mapping);
  free(mapping);
  clg_devices_free(devs);
  return fflush(stdout) == 0 ? 0 : 1;
}
