/* Process-wide device state: a later session with the same configuration as the first gets
 * no warning, one with another configuration gets one. */
#include <string.h>

#include "testutil.h"

static const char *const config_warning = "different from the one the devices of this process";

/* Fills the struct's every byte (padding after count, unused slots) with fill, then sets
 * the used fields: equal configurations that differ only in bytes nobody reads. */
static void virtual_pair(clg_virtual_devices *vd, int fill)
{
  memset(vd, fill, sizeof *vd);
  vd->count = 2;
  vd->memory_limit_mb[0] = 64;
  vd->memory_limit_mb[1] = 32;
}

static clg_session *open_session(clg_graph *g, clg_virtual_devices *vd)
{
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.visible_device_list = "0";
  opt.num_virtual = 1;
  opt.virtual_devices = vd;
  clg_session *s = NULL;
  CHECK_OK(clg_session_new(g, &opt, &s));
  return s;
}

static void test_same_virtual_devices_no_warning(void)
{
  clg_graph *g = clg_graph_new();
  int64_t d[1] = {2};
  CHECK(clg_placeholder(g, "x", CLG_FLOAT32, 1, d) != NULL);
  clg_virtual_devices first, same, other;
  virtual_pair(&first, 0x00);
  virtual_pair(&same, 0xA5);
  virtual_pair(&other, 0x00);
  other.memory_limit_mb[1] = 48;

  clg_session *a = open_session(g, &first);
  clg_test_log_capture_start(CLG_LOG_WARNING);
  clg_session *b = open_session(g, &same);
  const char *log = clg_test_log_capture_stop();
  CHECK_MSG(strstr(log, config_warning) == NULL, "same configuration warned:\n%s", log);
  clg_session_free(b);

  clg_test_log_capture_start(CLG_LOG_WARNING);
  clg_session *c = open_session(g, &other);
  log = clg_test_log_capture_stop();
  CHECK_CONTAINS(log, config_warning);
  clg_session_free(c);
  clg_session_free(a);
  clg_graph_free(g);
}

int main(void)
{
  if (!clg_test_require_gpus(1))
    return clg_test_summary("test_process");
  test_same_virtual_devices_no_warning();
  return clg_test_summary("test_process");
}
