/* The device set's configuration (clg_device_config, CLGRAPH_DEVICE_TYPES,
 * CLGRAPH_VIRTUAL_DEVICES): its texts parsed and its fields checked before the registry
 * (registry.c) enumerates anything; no OpenCL here. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

static const char types_expected[] = "expected a comma list of gpu, accelerator, cpu, or all";

/* --- configuration ----------------------------------------------------------------- */

void clg_device_config_init(clg_device_config *cfg)
{
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
}

clg_code clg_device_types_parse(const char *text, unsigned *mask)
{
  if (!text || !mask)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_device_types_parse: %s is NULL",
                     text ? "mask" : "text");
  if (*text == '\0')
    return clg_error(CLG_INVALID_ARGUMENT, "empty device type list ''; %s", types_expected);
  static const struct {
    const char *word;
    unsigned bits;
  } words[] = {{"gpu", CLG_DEVTYPE_GPU},
               {"accelerator", CLG_DEVTYPE_ACCELERATOR},
               {"cpu", CLG_DEVTYPE_CPU},
               {"all", CLG_DEVTYPE_ALL}};
  unsigned m = 0;
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (n == 0)
      return clg_error(CLG_INVALID_ARGUMENT, "empty device type in '%s'; %s", text, types_expected);
    size_t w = 0;
    while (w < sizeof words / sizeof words[0] &&
           !(strlen(words[w].word) == n && memcmp(words[w].word, p, n) == 0))
      w++;
    if (w == sizeof words / sizeof words[0])
      return clg_error(CLG_INVALID_ARGUMENT, "unknown device type '%.*s' in '%s'; %s", (int)n, p,
                       text, types_expected);
    m |= words[w].bits;
    if (!comma)
      break;
    p = comma + 1;
  }
  *mask = m;
  return CLG_OK;
}

/* The types in effect: the API field, else CLGRAPH_DEVICE_TYPES (unset or empty: default). */
clg_code clg_device_types_resolve(const clg_device_config *cfg, unsigned *mask)
{
  if (cfg && cfg->types) {
    if (cfg->types & ~(unsigned)CLG_DEVTYPE_ALL)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "clg_device_config.types = 0x%x has unknown bits; expected CLG_DEVTYPE_* "
                       "flags (at most 0x%x)",
                       cfg->types, (unsigned)CLG_DEVTYPE_ALL);
    *mask = cfg->types;
    return CLG_OK;
  }
  const char *env = getenv("CLGRAPH_DEVICE_TYPES");
  if (!env || !*env) {
    *mask = CLG_DEVTYPE_DEFAULT;
    return CLG_OK;
  }
  if (clg_device_types_parse(env, mask) != CLG_OK)
    return clg_error_prefix("CLGRAPH_DEVICE_TYPES: ");
  return CLG_OK;
}

/* absl::SimpleAtoi's rules for one entry: surrounding ASCII space, an optional sign, decimal
 * digits, int32 range. */
static bool parse_int32(const char *s, size_t n, long *out)
{
  while (n > 0 && isspace((unsigned char)*s))
    s++, n--;
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    n--;
  bool neg = false;
  if (n > 0 && (*s == '+' || *s == '-')) {
    neg = *s == '-';
    s++, n--;
  }
  if (n == 0)
    return false;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (s[i] - '0');
    if (v > (long)INT32_MAX + 1)
      return false;
  }
  if (neg)
    v = -v;
  if (v > INT32_MAX || v < INT32_MIN)
    return false;
  *out = v;
  return true;
}

/* TensorFlow's ParseVisibleDeviceList: entries map, in order, to GPU ids. */
clg_code clg_device_visible_parse(const char *list, int count, int **order_out, int *n_out)
{
  size_t entries = 1;
  for (const char *c = list; *c; c++)
    entries += *c == ',';
  int *order = malloc(entries * sizeof *order);
  if (!order)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory parsing visible_device_list");
  int n = 0;
  const char *p = list;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    long v;
    if (!parse_int32(p, len, &v)) {
      free(order);
      return clg_error(CLG_INVALID_ARGUMENT,
                       "Could not parse entry in 'visible_device_list': '%.*s'. "
                       "visible_device_list = %s",
                       (int)len, p, list);
    }
    if (v < 0 || v >= count) {
      free(order);
      return clg_error(CLG_INVALID_ARGUMENT,
                       "'visible_device_list' listed an invalid Device id '%ld' but visible "
                       "device count is %d",
                       v, count);
    }
    order[n++] = (int)v;
    if (!comma)
      break;
    p = comma + 1;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (order[i] == order[j]) {
        free(order);
        return clg_error(CLG_INVALID_ARGUMENT,
                         "visible_device_list contained a duplicate entry: %s", list);
      }
  *order_out = order;
  *n_out = n;
  return CLG_OK;
}

/* Largest virtual limit accepted (2^43 MiB = 2^63 bytes would overflow). */
#define CLG_MAX_LIMIT_MB 8796093022207.0

clg_code clg_device_virtual_check(const clg_device_config *cfg, int visible, bool list_given)
{
  if (cfg->num_virtual < 0)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_device_config.num_virtual = %d; expected 0 or the number of visible "
                     "GPUs (%d)",
                     cfg->num_virtual, visible);
  if (cfg->num_virtual == 0)
    return CLG_OK;
  if (!cfg->virtual_devices)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "clg_device_config.virtual_devices is NULL but num_virtual = %d",
                     cfg->num_virtual);
  if (!list_given && cfg->num_virtual > visible)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "Not enough GPUs to create virtual devices. num_gpus_to_use: %d "
                     "#virtual_devices: %d",
                     visible, cfg->num_virtual);
  if (cfg->num_virtual != visible)
    return clg_error(CLG_INVALID_ARGUMENT,
                     "The number of GPUs in visible_device_list doesn't match the number of "
                     "elements in the virtual_devices list.");
  for (int i = 0; i < cfg->num_virtual; i++) {
    const clg_virtual_devices *v = &cfg->virtual_devices[i];
    if (v->count < 1 || v->count > CLG_MAX_VIRTUAL_PER_GPU)
      return clg_error(CLG_INVALID_ARGUMENT,
                       "clg_device_config.virtual_devices[%d].count = %d; expected 1 to %d", i,
                       v->count, CLG_MAX_VIRTUAL_PER_GPU);
    for (int j = 0; j < v->count; j++) {
      double mb = v->memory_limit_mb[j];
      /* TensorFlow truncates to whole MiB before scaling: below 1 MiB is no limit at all. */
      if (!(mb >= 1.0 && mb <= CLG_MAX_LIMIT_MB))
        return clg_error(CLG_INVALID_ARGUMENT,
                         "clg_device_config.virtual_devices[%d].memory_limit_mb[%d] = %g; "
                         "expected a positive memory limit of at least 1 MiB",
                         i, j, mb);
    }
  }
  return CLG_OK;
}

/* --- CLGRAPH_VIRTUAL_DEVICES: physical GPUs split into parts ------------------------- */

static const char split_expected[] =
    "expected N (N equal parts of each GPU), NxMiB (N parts of MiB each) or a comma list of "
    "MiB, with 1 to 16 parts";

/* A whole number in [1, max] spanning exactly [s, s+n) (surrounding spaces allowed). */
static bool parse_count(const char *s, size_t n, unsigned long long max, unsigned long long *out)
{
  while (n > 0 && isspace((unsigned char)*s))
    s++, n--;
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    n--;
  if (n == 0 || n > 20)
    return false;
  unsigned long long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (unsigned long long)(s[i] - '0');
    if (v > max)
      return false;
  }
  *out = v;
  return v >= 1;
}

/* The split that CLGRAPH_VIRTUAL_DEVICES asks for: *count parts of mib[i] MiB each, or
 * mib[i] == 0 for equal parts of whatever the device has. */
clg_code clg_device_split_parse(const char *text, int *count, uint64_t mib[CLG_MAX_VIRTUAL_PER_GPU])
{
  const unsigned long long max_mib = (unsigned long long)CLG_MAX_LIMIT_MB;
  unsigned long long v;
  const char *x = strchr(text, 'x');
  if (!strchr(text, ',') && !x) {
    if (!parse_count(text, strlen(text), CLG_MAX_VIRTUAL_PER_GPU, &v))
      goto bad;
    *count = (int)v;
    memset(mib, 0, sizeof *mib * CLG_MAX_VIRTUAL_PER_GPU);
    return CLG_OK;
  }
  if (x) {
    unsigned long long each;
    if (!parse_count(text, (size_t)(x - text), CLG_MAX_VIRTUAL_PER_GPU, &v) ||
        !parse_count(x + 1, strlen(x + 1), max_mib, &each))
      goto bad;
    *count = (int)v;
    for (int i = 0; i < *count; i++)
      mib[i] = each;
    return CLG_OK;
  }
  int n = 0;
  for (const char *p = text;;) {
    size_t len = strcspn(p, ",");
    if (n == CLG_MAX_VIRTUAL_PER_GPU || !parse_count(p, len, max_mib, &v))
      goto bad;
    mib[n++] = v;
    if (!p[len])
      break;
    p += len + 1;
  }
  *count = n;
  return CLG_OK;
bad:
  return clg_error(CLG_INVALID_ARGUMENT, "CLGRAPH_VIRTUAL_DEVICES='%s': %s", text, split_expected);
}
