/* Device-name specifications: TensorFlow's DeviceNameUtils vectors (tf-semantics.md 1.5),
 * merging (1.4), matching (1.3), formatting and malformed input. Needs no OpenCL. */
#include <limits.h>
#include <stdlib.h>

#include "device/device.h"
#include "testutil.h"

/* Expected fields: NULL job / type or -1 for a number means "unset". */
static void check_parsed(const char *spec, const char *job, int replica, int task, const char *type,
                         int id)
{
  clg_devname n;
  clg_code code = clg_devname_parse(spec, &n);
  CHECK_MSG(code == CLG_OK, "parse('%s') failed: %s", spec, clg_last_error());
  if (code != CLG_OK)
    return;
  CHECK_MSG(n.has_job == (job != NULL), "'%s': has_job", spec);
  if (job && n.has_job)
    CHECK_STR(n.job, job);
  CHECK_MSG(n.has_replica == (replica >= 0), "'%s': has_replica", spec);
  if (replica >= 0)
    CHECK_MSG(n.replica == replica, "'%s': replica %d, want %d", spec, n.replica, replica);
  CHECK_MSG(n.has_task == (task >= 0), "'%s': has_task", spec);
  if (task >= 0)
    CHECK_MSG(n.task == task, "'%s': task %d, want %d", spec, n.task, task);
  CHECK_MSG(n.has_type == (type != NULL), "'%s': has_type", spec);
  if (type && n.has_type)
    CHECK_STR(n.type, type);
  CHECK_MSG(n.has_id == (id >= 0), "'%s': has_id", spec);
  if (id >= 0)
    CHECK_MSG(n.id == id, "'%s': id %d, want %d", spec, n.id, id);
}

/* A malformed spec: INVALID_ARGUMENT, the message quotes the spec and says why. */
static void check_invalid(const char *spec, const char *why)
{
  clg_devname n;
  clg_code code = clg_devname_parse(spec, &n);
  CHECK_MSG(code == CLG_INVALID_ARGUMENT, "parse('%s') returned %s, want INVALID_ARGUMENT", spec,
            clg_code_name(code));
  char want[512];
  snprintf(want, sizeof want, "Malformed device specification '%s': ", spec);
  CHECK_CONTAINS(clg_last_error(), want);
  if (why)
    CHECK_CONTAINS(clg_last_error(), why);
  CHECK(clg_devname_is_empty(&n));
}

static const char *fmt(const clg_devname *n)
{
  static char buf[4][256];
  static int k;
  k = (k + 1) % 4;
  return clg_devname_format(n, buf[k], sizeof buf[k]);
}

static void check_round_trip(const char *spec, const char *want)
{
  clg_devname n;
  CHECK_OK(clg_devname_parse(spec, &n));
  CHECK_STR(fmt(&n), want);
}

static clg_devname name(const char *spec)
{
  clg_devname n;
  clg_code code = clg_devname_parse(spec, &n);
  CHECK_MSG(code == CLG_OK, "parse('%s'): %s", spec, clg_last_error());
  return n;
}

static void check_merge(const char *a, const char *b, const char *want)
{
  clg_devname t = name(a), o = name(b);
  CHECK_OK(clg_devname_merge(&t, &o, false));
  CHECK_STR(fmt(&t), want);
}

static void check_merge_error(const char *a, const char *b, const char *want_msg)
{
  clg_devname t = name(a), o = name(b), before = t;
  CHECK_CODE(clg_devname_merge(&t, &o, false), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), want_msg);
  CHECK_STR(fmt(&t), fmt(&before)); /* a failed merge leaves the target alone */
}

static void check_merge_soft(const char *a, const char *b, const char *want)
{
  clg_devname t = name(a), o = name(b);
  CHECK_OK(clg_devname_merge(&t, &o, true));
  CHECK_STR(fmt(&t), want);
}

static void check_override(const char *a, const char *b, const char *want)
{
  clg_devname t = name(a), o = name(b);
  clg_devname_merge_override(&t, &o);
  CHECK_STR(fmt(&t), want);
}

static void check_unset(const char *a, const char *b, const char *want)
{
  clg_devname t = name(a), o = name(b);
  clg_devname_merge_unset(&t, &o);
  CHECK_STR(fmt(&t), want);
}

/* SplitDeviceName, built from the parsed fields as TensorFlow does. */
static void check_split(const char *spec, const char *want_task, const char *want_device)
{
  clg_devname n = name(spec);
  CHECK(n.has_type && n.has_id);
  char task[256] = "", dev[128];
  size_t pos = 0;
  if (n.has_job)
    pos += (size_t)snprintf(task + pos, sizeof task - pos, "/job:%s", n.job);
  if (n.has_replica)
    pos += (size_t)snprintf(task + pos, sizeof task - pos, "/replica:%d", n.replica);
  if (n.has_task)
    snprintf(task + pos, sizeof task - pos, "/task:%d", n.task);
  snprintf(dev, sizeof dev, "%s:%d", n.type, n.id);
  CHECK_STR(task, want_task);
  CHECK_STR(dev, want_device);
}

/* CanonicalizeDeviceName: local or full name, unset fields from a complete basename. */
static void check_canonical(const char *spec, const char *basename, const char *want)
{
  clg_devname n, base;
  CHECK_OK(clg_devname_parse_full_or_local(basename, &base));
  CHECK(base.has_job && base.has_replica && base.has_task && base.has_type && base.has_id);
  CHECK_OK(clg_devname_parse_full_or_local(spec, &n));
  clg_devname_merge_unset(&n, &base);
  CHECK_STR(fmt(&n), want);
}

static void test_vectors(void)
{
  /* #1 - #11, #21: ParseFullName */
  check_parsed("/job:foo/replica:1/task:2/device:GPU:3", "foo", 1, 2, "GPU", 3);
  check_parsed("/job:foo_bar/replica:1/task:2/device:GPU:3", "foo_bar", 1, 2, "GPU", 3);
  check_parsed("/job:*/replica:4/gpu:*", NULL, 4, -1, "GPU", -1);
  check_parsed("/job:*/replica:4/device:GPU:*", NULL, 4, -1, "GPU", -1);
  check_parsed("/job:*/device:GPU/replica:4", NULL, 4, -1, "GPU", -1);
  check_parsed("/job:*/replica:4/device:myspecialdevice:13", NULL, 4, -1, "myspecialdevice", 13);
  check_parsed("/", NULL, -1, -1, NULL, -1);
  check_parsed("", NULL, -1, -1, NULL, -1);
  check_parsed("/job:*/replica:4/device:GPU:5", NULL, 4, -1, "GPU", 5);
  check_parsed("/gpu:*/job:*/replica:4", NULL, 4, -1, "GPU", -1);
  check_parsed("/job:foo/replica:1/task:2/cpu:3", "foo", 1, 2, "CPU", 3);
  check_parsed("/job:foo/device:GPU", "foo", -1, -1, "GPU", -1);

  /* #12 - #14: SplitDeviceName */
  check_split("/job:foo/cpu:1/task:2/replica:1", "/job:foo/replica:1/task:2", "CPU:1");
  check_split("/device:GPU:3", "", "GPU:3");
  check_split("/device:myspecialdevice:3", "", "myspecialdevice:3");

  /* #15 - #19: round trips */
  check_round_trip("/job:foo/replica:3/task:2/cpu:3", "/job:foo/replica:3/task:2/device:CPU:3");
  check_round_trip("/job:foo/replica:3/task:2/gpu:3", "/job:foo/replica:3/task:2/device:GPU:3");
  check_round_trip("/job:foo/replica:3/task:2/CPU:3", "/job:foo/replica:3/task:2/device:CPU:3");
  check_round_trip("/job:foo/replica:3/task:2/device:gpu:3",
                   "/job:foo/replica:3/task:2/device:gpu:3");
  check_round_trip("/job:foo/replica:3/task:2/device:someDevice:3",
                   "/job:foo/replica:3/task:2/device:someDevice:3");

  /* #20: every subset of {job, replica, task, device} of #15 - #19 */
  static const char *const devices[][2] = {{"/cpu:3", "/device:CPU:3"},
                                           {"/gpu:3", "/device:GPU:3"},
                                           {"/CPU:3", "/device:CPU:3"},
                                           {"/device:gpu:3", "/device:gpu:3"},
                                           {"/device:someDevice:3", "/device:someDevice:3"}};
  int subsets = 0;
  for (int d = 0; d < 5; d++) {
    for (int mask = 0; mask < 16; mask++) {
      char in[128] = "", want[128] = "";
      const char *parts_in[4] = {"/job:foo", "/replica:3", "/task:2", devices[d][0]};
      const char *parts_out[4] = {"/job:foo", "/replica:3", "/task:2", devices[d][1]};
      for (int b = 0; b < 4; b++) {
        if (mask & (1 << b)) {
          strcat(in, parts_in[b]);
          strcat(want, parts_out[b]);
        }
      }
      check_round_trip(in, want);
      subsets++;
    }
  }
  CHECK(subsets == 80);

  /* #22: ParseLocalName */
  clg_devname n;
  CHECK_OK(clg_devname_parse_full_or_local("CPU:10", &n));
  CHECK(n.has_type && n.has_id && !n.has_job && !n.has_replica && !n.has_task);
  CHECK_STR(n.type, "CPU");
  CHECK(n.id == 10);

  /* #23, #24: CanonicalizeDeviceName */
  check_canonical("CPU:0", "/job:foo/replica:10/task:0/device:CPU:0",
                  "/job:foo/replica:10/task:0/device:CPU:0");
  check_canonical("/job:foo/task:0/replica:10/cpu:1", "/job:foo/replica:10/task:0/device:CPU:0",
                  "/job:foo/replica:10/task:0/device:CPU:1");

  /* #25 - #32: invalid */
  check_invalid("foobar", "unexpected 'foobar'");
  check_invalid("/job:123/replica:1/task:2/device:GPU:3",
                "job name '123' must start with a letter");
  check_invalid("/job:123/replica:1/task:2/gpu:", "job name '123' must start with a letter");
  check_invalid("/job:123/replica:1/task:2/device:gpu:", "job name '123' must start with a letter");
  check_invalid("/job:foo/replica:-1/task:2/device:GPU:3",
                "replica '-1' is not a non-negative number");
  check_invalid("/job:foo/replica:1/task:-2/device:GPU:3",
                "task '-2' is not a non-negative number");
  check_invalid("/job:foo/replica:1/task:2/bar:3", "unexpected '/bar:3'");
  check_invalid("/job:foo/replica:1/task:2/device:GPU:3/extra", "unexpected '/extra'");
  /* exact text of one, as the brief gives it */
  clg_devname_parse("/job:foo/replica:1/task:2/bar:3", &n);
  CHECK_STR(
      clg_last_error(),
      "Malformed device specification '/job:foo/replica:1/task:2/bar:3': unexpected '/bar:3'");
}

static void test_edge_cases(void)
{
  clg_devname n;
  /* the id parts that #27 and #28 would reach with a valid job */
  check_invalid("/job:foo/replica:1/task:2/gpu:", "id of '/gpu:' is missing");
  check_invalid("/job:foo/replica:1/task:2/device:gpu:", "id of '/device:gpu:' is missing");
  check_invalid("/cpu:", "id of '/cpu:' is missing");
  check_invalid("/device:GPU:-1", "id '-1' is not a non-negative number");
  check_invalid("/device:GPU:x", "id 'x' is not a non-negative number");
  check_invalid("/replica:", "replica of '/replica:' is missing");
  check_invalid("/task:/cpu:0", "task of '/task:' is missing");
  check_invalid("/job:", "job name of '/job:' is missing");
  check_invalid("/job:/cpu:0", "job name of '/job:' is missing");
  check_invalid("/device:", "device type of '/device:' is missing");
  check_invalid("/device::0", "device type of '/device:' is missing");
  check_invalid("/device:9x:0", "device type '9x' must start with a letter");
  /* integer overflow is rejected, not wrapped */
  check_invalid("/device:GPU:99999999999", "id '99999999999' is out of range (at most 2147483647)");
  check_invalid("/replica:2147483648", "replica '2147483648' is out of range");
  check_invalid("/task:18446744073709551617", "out of range");
  check_parsed("/task:2147483647", NULL, -1, INT_MAX, NULL, -1);
  check_parsed("/device:GPU:007", NULL, -1, -1, "GPU", 7);
  /* trailing garbage and empty pieces */
  check_invalid("/device:GPU:3extra", "unexpected 'extra'");
  check_invalid("/job:foo-bar", "unexpected '-bar'");
  check_invalid("/cpu:0 ", "unexpected ' '");
  check_invalid("//", "unexpected '/' (empty component)");
  check_invalid("/job:foo//cpu:0", "unexpected '/' (empty component)");
  check_invalid("/job:foo/", "unexpected '/' (empty component)");
  check_invalid("/gpu", "unexpected '/gpu'");
  check_invalid("/tpu:0", "unexpected '/tpu:0'");
  check_invalid("/Gpu:0", "unexpected '/Gpu:0'");
  check_invalid("/job:*x", "unexpected 'x'");
  check_invalid("device:GPU:0", NULL);
  /* wildcards everywhere, and repeated components (the last one wins, as in TF) */
  check_parsed("/job:*/replica:*/task:*/device:*", NULL, -1, -1, NULL, -1);
  check_parsed("/device:*:*", NULL, -1, -1, NULL, -1);
  check_parsed("/job:a/job:b", "b", -1, -1, NULL, -1);
  check_parsed("/gpu:1/cpu:2", NULL, -1, -1, "CPU", 2);
  check_parsed("/job:a1_B2", "a1_B2", -1, -1, NULL, -1);

  /* NULL arguments */
  CHECK_CODE(clg_devname_parse(NULL, &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "device specification is NULL");
  CHECK_CODE(clg_devname_parse("/cpu:0", NULL), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "out is NULL");
  CHECK_CODE(clg_devname_parse_full_or_local(NULL, &n), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_devname_parse_scope(NULL, &n), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_devname_parse_scope("/gpu:0", NULL), CLG_INVALID_ARGUMENT);

  /* very long names: 63 characters fit, 64 are an error, never truncation */
  char spec[2200], name63[64], name64[65], name2000[2001];
  memset(name63, 'a', 63);
  name63[63] = '\0';
  snprintf(spec, sizeof spec, "/job:%s/device:%s:1", name63, name63);
  check_parsed(spec, name63, -1, -1, name63, 1);
  clg_devname big = name(spec);
  char buf[256];
  CHECK_STR(clg_devname_format(&big, buf, sizeof buf), spec);
  memset(name64, 'b', 64);
  name64[64] = '\0';
  snprintf(spec, sizeof spec, "/job:%s", name64);
  check_invalid(spec, "is longer than 63 characters");
  CHECK_CONTAINS(clg_last_error(), "job name 'bbbb");
  snprintf(spec, sizeof spec, "/device:%s:0", name64);
  check_invalid(spec, "device type 'bbbb");
  CHECK_CONTAINS(clg_last_error(), "is longer than 63 characters");
  /* a huge spec is quoted clipped, and the reason is still there */
  memset(name2000, 'c', 2000);
  name2000[2000] = '\0';
  snprintf(spec, sizeof spec, "/job:%s", name2000);
  CHECK_CODE(clg_devname_parse(spec, &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "...' (2005 characters): job name 'ccc");
  CHECK_CONTAINS(clg_last_error(), "is longer than 63 characters");
  CHECK(strlen(clg_last_error()) < 600);
  /* 10,000 characters: the message still ends with the reason */
  char *huge = malloc(10001);
  memcpy(huge, "/job:", 5);
  memset(huge + 5, 'd', 9995);
  huge[10000] = '\0';
  CHECK_CODE(clg_devname_parse(huge, &n), CLG_INVALID_ARGUMENT);
  const char *why = "is longer than 63 characters";
  size_t msg_len = strlen(clg_last_error());
  CHECK(msg_len > strlen(why) && strcmp(clg_last_error() + msg_len - strlen(why), why) == 0);
  CHECK(msg_len < 600);
  free(huge);

  /* formatting: small buffers are truncated but terminated; NULL name is "" */
  clg_devname full = name("/job:localhost/replica:0/task:0/device:GPU:1");
  char small[10];
  CHECK_STR(clg_devname_format(&full, small, sizeof small), "/job:loca");
  CHECK(clg_devname_format(&full, NULL, 0) == NULL);
  CHECK_STR(clg_devname_format(NULL, buf, sizeof buf), "");
  clg_devname empty = name("");
  CHECK_STR(fmt(&empty), "");
  CHECK(clg_devname_is_empty(&empty));
  CHECK(!clg_devname_is_empty(&full));
  CHECK(clg_devname_is_empty(NULL));
  /* an id without a type is not printed; a type without an id prints '*' */
  clg_devname odd = empty;
  odd.has_id = true;
  odd.id = 4;
  CHECK_STR(fmt(&odd), "");
  CHECK_STR(fmt(&(clg_devname){.has_type = true, .type = "GPU"}), "/device:GPU:*");
}

static void test_local_and_scope(void)
{
  clg_devname n;
  CHECK_OK(clg_devname_parse_full_or_local("GPU:0", &n));
  CHECK_STR(fmt(&n), "/device:GPU:0");
  CHECK_OK(clg_devname_parse_full_or_local("/job:foo/gpu:1", &n));
  CHECK_STR(fmt(&n), "/job:foo/device:GPU:1");
  CHECK_CODE(clg_devname_parse_full_or_local("GPU", &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "Malformed device specification 'GPU': ");
  CHECK_CODE(clg_devname_parse_full_or_local("GPU:*", &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "id '*' is not a non-negative number");
  CHECK_CODE(clg_devname_parse_full_or_local("GPU:", &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "id of 'GPU:' is missing");
  CHECK_CODE(clg_devname_parse_full_or_local("GPU:0x", &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "unexpected 'x' after the id");
  CHECK_CODE(clg_devname_parse_full_or_local("0:0", &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "device type '0' must start with a letter");
  CHECK_CODE(clg_devname_parse_full_or_local("/bar:0", &n), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "unexpected '/bar:0'");
  /* plain parse keeps C++ behaviour: local names are not full names */
  CHECK_CODE(clg_devname_parse("GPU:0", &n), CLG_INVALID_ARGUMENT);

  /* scope parsing upper-cases exactly "cpu" and "gpu" */
  CHECK_OK(clg_devname_parse_scope("/device:gpu:1", &n));
  CHECK_STR(fmt(&n), "/device:GPU:1");
  CHECK_OK(clg_devname_parse_scope("/gpu:1", &n));
  CHECK_STR(fmt(&n), "/device:GPU:1");
  CHECK_OK(clg_devname_parse_scope("/device:cpu:0", &n));
  CHECK_STR(fmt(&n), "/device:CPU:0");
  CHECK_OK(clg_devname_parse_scope("gpu:2", &n));
  CHECK_STR(fmt(&n), "/device:GPU:2");
  CHECK_OK(clg_devname_parse_scope("/device:Gpu:1", &n));
  CHECK_STR(fmt(&n), "/device:Gpu:1");
  CHECK_OK(clg_devname_parse_scope("/device:tpu:1", &n));
  CHECK_STR(fmt(&n), "/device:tpu:1");
  CHECK_OK(clg_devname_parse_scope("/device:gpux:1", &n));
  CHECK_STR(fmt(&n), "/device:gpux:1");
  CHECK_OK(clg_devname_parse_scope("", &n));
  CHECK(clg_devname_is_empty(&n));
  CHECK_CODE(clg_devname_parse_scope("/device:GPU:-2", &n), CLG_INVALID_ARGUMENT);
  /* C++ parse keeps the case */
  CHECK_OK(clg_devname_parse("/device:gpu:1", &n));
  CHECK_STR(n.type, "gpu");
}

static void test_merge(void)
{
  /* MergeDevNames (TensorFlow's test cases) */
  check_merge("", "", "");
  check_merge("/job:foo/replica:1/task:2/cpu:1", "/job:foo/replica:1/task:2/cpu:1",
              "/job:foo/replica:1/task:2/device:CPU:1");
  check_merge("", "/job:foo", "/job:foo");
  check_merge("", "/replica:2", "/replica:2");
  check_merge("", "/task:7", "/task:7");
  check_merge("", "/device:GPU:1", "/device:GPU:1");
  check_merge("/job:foo", "/task:7", "/job:foo/task:7");
  check_merge("/job:foo", "/device:GPU:1", "/job:foo/device:GPU:1");
  check_merge("/job:foo/replica:0", "/replica:0/task:1", "/job:foo/replica:0/task:1");
  check_merge("", "/gpu:*", "/device:GPU:*");
  check_merge("/gpu:*", "/gpu:*", "/device:GPU:*");
  check_merge("/device:GPU:1", "/gpu:*", "/device:GPU:1");
  check_merge("/gpu:*", "/device:GPU:1", "/device:GPU:1");

  /* each conflict kind, with TensorFlow's text */
  check_merge_error("/job:foo", "/job:bar",
                    "Cannot merge devices with incompatible jobs: '/job:foo' and '/job:bar'");
  check_merge_error("/replica:0", "/replica:1",
                    "Cannot merge devices with incompatible replicas: '/replica:0' and "
                    "'/replica:1'");
  check_merge_error("/task:0", "/task:1",
                    "Cannot merge devices with incompatible tasks: '/task:0' and '/task:1'");
  check_merge_error("/gpu:*", "/cpu:*",
                    "Cannot merge devices with incompatible types: '/device:GPU:*' and "
                    "'/device:CPU:*'");
  check_merge_error("/device:GPU:0", "/device:GPU:1",
                    "Cannot merge devices with incompatible ids: '/device:GPU:0' and "
                    "'/device:GPU:1'");
  /* the message shows the target as merged so far, as TensorFlow's does */
  check_merge_error("/replica:1", "/job:foo/replica:2",
                    "Cannot merge devices with incompatible replicas: '/job:foo/replica:1' and "
                    "'/job:foo/replica:2'");
  /* case matters: "gpu" is not "GPU" */
  check_merge_error("/device:gpu:0", "/device:GPU:0",
                    "Cannot merge devices with incompatible types: '/device:gpu:0' and "
                    "'/device:GPU:0'");
  /* soft placement never forgives job, replica or task conflicts */
  clg_devname t = name("/job:foo"), o = name("/job:bar");
  CHECK_CODE(clg_devname_merge(&t, &o, true), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "incompatible jobs");
  t = name("/task:1");
  o = name("/task:2");
  CHECK_CODE(clg_devname_merge(&t, &o, true), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "incompatible tasks");

  /* soft placement clears the conflicting type (and id) or id */
  check_merge_soft("/gpu:*", "/cpu:1", "");
  check_merge_soft("/cpu:*", "/gpu:1", "");
  check_merge_soft("/device:GPU:1", "/device:GPU:2", "/device:GPU:*");
  check_merge_soft("/job:foo/device:GPU:1", "/replica:3/device:CPU:0", "/job:foo/replica:3");
  check_merge_soft("/job:foo/gpu:1", "/task:2/gpu:2", "/job:foo/task:2/device:GPU:*");
  check_merge_soft("/gpu:1", "/gpu:1", "/device:GPU:1");
  check_merge_soft("/job:a", "/cpu:0", "/job:a/device:CPU:0");

  /* override: every field set in other wins */
  check_override("/job:foo/replica:1/task:2/cpu:0", "", "/job:foo/replica:1/task:2/device:CPU:0");
  check_override("", "/job:foo/replica:1/task:2/cpu:0", "/job:foo/replica:1/task:2/device:CPU:0");
  check_override("/gpu:*", "/cpu:1", "/device:CPU:1");
  check_override("/device:GPU:1", "/device:GPU:2", "/device:GPU:2");
  check_override("/job:foo/CPU:*", "/device:GPU:1", "/job:foo/device:GPU:1");
  check_override("/job:foo/device:CPU:0", "/device:GPU", "/job:foo/device:GPU:0");
  check_override("/job:foo/replica:1", "/job:bar/task:3", "/job:bar/replica:1/task:3");

  /* unset: only fields unset in the target are copied */
  check_unset("", "", "");
  check_unset("/job:foo/replica:1/task:2/cpu:0", "", "/job:foo/replica:1/task:2/device:CPU:0");
  check_unset("", "/job:foo/replica:1/task:2/cpu:0", "/job:foo/replica:1/task:2/device:CPU:0");
  check_unset("/job:foo", "/job:bar", "/job:foo");
  check_unset("/job:foo/cpu:*", "/job:bar/replica:1/task:2/device:GPU:1",
              "/job:foo/replica:1/task:2/device:CPU:1");
  check_unset("/device:GPU:3", "/device:CPU:0", "/device:GPU:3");

  /* NULL arguments */
  t = name("/cpu:0");
  CHECK_CODE(clg_devname_merge(NULL, &t, false), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "target is NULL");
  CHECK_CODE(clg_devname_merge(&t, NULL, false), CLG_INVALID_ARGUMENT);
  CHECK_CONTAINS(clg_last_error(), "other is NULL");
  clg_devname_merge_override(&t, NULL);
  clg_devname_merge_unset(NULL, &t);
  CHECK_STR(fmt(&t), "/device:CPU:0");
}

static void test_matching(void)
{
  clg_devname dev = name("/job:localhost/replica:0/task:0/device:GPU:1");
  clg_devname cpu = name("/job:localhost/replica:0/task:0/device:CPU:0");
  static const char *const match[] = {"",
                                      "/",
                                      "/gpu:1",
                                      "/device:GPU:1",
                                      "/device:GPU:*",
                                      "/gpu:*",
                                      "/job:localhost",
                                      "/job:*/replica:*/task:*/device:*",
                                      "/replica:0/task:0",
                                      "/job:localhost/replica:0/task:0/device:GPU:1"};
  static const char *const nomatch[] = {
      "/gpu:0",     "/cpu:*",  "/device:gpu:1", "/job:worker",
      "/replica:1", "/task:3", "/device:XPU:1", "/job:localhost/device:GPU:2"};
  for (size_t i = 0; i < sizeof match / sizeof match[0]; i++) {
    clg_devname p = name(match[i]);
    CHECK_MSG(clg_devname_matches(&p, &dev), "'%s' should match the GPU:1", match[i]);
    CHECK_MSG(clg_devname_is_specification(&p, &dev), "'%s' spec of GPU:1", match[i]);
    CHECK_MSG(clg_devname_compatible(&p, &dev) && clg_devname_compatible(&dev, &p),
              "'%s' compatible", match[i]);
  }
  for (size_t i = 0; i < sizeof nomatch / sizeof nomatch[0]; i++) {
    clg_devname p = name(nomatch[i]);
    CHECK_MSG(!clg_devname_matches(&p, &dev), "'%s' should not match GPU:1", nomatch[i]);
    CHECK_MSG(!clg_devname_is_specification(&p, &dev), "'%s' not a spec of GPU:1", nomatch[i]);
    CHECK_MSG(!clg_devname_compatible(&p, &dev), "'%s' not compatible", nomatch[i]);
  }
  clg_devname anycpu = name("/cpu:*");
  CHECK(clg_devname_matches(&anycpu, &cpu));
  CHECK(!clg_devname_matches(&anycpu, &dev));

  /* IsSpecification needs the field set in the more specific name; compatibility only
   * compares fields set in both. */
  clg_devname job = name("/job:foo"), task = name("/task:1"), jobtask = name("/job:foo/task:1");
  CHECK(!clg_devname_is_specification(&job, &task));
  CHECK(clg_devname_compatible(&job, &task));
  CHECK(clg_devname_is_specification(&job, &jobtask));
  CHECK(!clg_devname_is_specification(&jobtask, &job));
  CHECK(clg_devname_compatible(&jobtask, &job));
  clg_devname gpu_any = name("/device:GPU:*"), gpu2 = name("/gpu:2"), cpu2 = name("/cpu:2");
  CHECK(clg_devname_is_specification(&gpu_any, &gpu2));
  CHECK(!clg_devname_is_specification(&gpu2, &gpu_any));
  CHECK(clg_devname_compatible(&gpu2, &gpu_any));
  CHECK(!clg_devname_compatible(&gpu2, &cpu2));
  clg_devname empty = name("");
  CHECK(clg_devname_is_specification(&empty, &empty));
  CHECK(clg_devname_compatible(&empty, &dev));
  /* an incomplete name does not match a pattern naming a field it lacks */
  CHECK(!clg_devname_matches(&gpu2, &job));
  CHECK(!clg_devname_matches(NULL, &dev));
  CHECK(!clg_devname_matches(&dev, NULL));
  CHECK(!clg_devname_is_specification(NULL, &dev));
  CHECK(!clg_devname_compatible(&dev, NULL));
}

int main(void)
{
  test_vectors();
  test_edge_cases();
  test_local_and_scope();
  test_merge();
  test_matching();
  return clg_test_summary("test_devname");
}
