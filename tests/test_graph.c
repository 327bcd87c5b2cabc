/* Graph building: the guide's graphs, default names, device scopes, shape and dtype
 * inference, every error text, and sticky errors. No OpenCL needed. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "testutil.h"

static const float V6[6] = {1, 2, 3, 4, 5, 6};
static const float V16[16] = {0};

/* A float32 constant of the given shape (at most 16 elements) with default values. */
static clg_node *cf(clg_graph *g, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2)
{
  int64_t dims[3] = {d0, d1, d2};
  return clg_const_f32(g, name, rank, dims, V16);
}

static bool starts_with(const char *s, const char *prefix)
{
  return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The graph failed with exactly this code and message, also left as the thread's last
 * error; frees g. */
static void expect_error(clg_graph *g, clg_code code, const char *msg, int line)
{
  CHECK_MSG(clg_graph_status(g) == code, "line %d: status %s, want %s", line,
            clg_code_name(clg_graph_status(g)), clg_code_name(code));
  CHECK_MSG(strcmp(clg_graph_error(g), msg) == 0, "line %d:\n  got:  \"%s\"\n  want: \"%s\"", line,
            clg_graph_error(g), msg);
  CHECK_MSG(clg_last_code() == code && strcmp(clg_last_error(), msg) == 0,
            "line %d: last error \"%s\"", line, clg_last_error());
  clg_graph_free(g);
}
#define EXPECT_ERROR(g, code, msg) expect_error(g, code, msg, __LINE__)

static void test_s2(void)
{
  clg_graph *g = clg_graph_new();
  CHECK(g != NULL);
  CHECK_OK(clg_graph_status(g));
  CHECK_STR(clg_graph_error(g), "");
  int64_t da[2] = {2, 3}, db[2] = {3, 2};
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *a = clg_const_f32(g, "a", 2, da, V6);
  clg_node *b = clg_const_f32(g, "b", 2, db, V6);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *c = clg_matmul(g, NULL, a, b, false, false);
  CHECK_OK(clg_graph_status(g));
  CHECK_STR(clg_node_name(c), "MatMul");
  CHECK_STR(clg_node_op(c), "MatMul");
  CHECK(clg_node_dtype(c) == CLG_FLOAT32);
  CHECK(clg_node_rank(c) == 2 && clg_node_dim(c, 0) == 2 && clg_node_dim(c, 1) == 2);
  CHECK(clg_node_num_inputs(c) == 2 && clg_node_input(c, 0) == a && clg_node_input(c, 1) == b);
  CHECK_STR(clg_node_requested_device(a), "/device:CPU:0");
  CHECK_STR(clg_node_requested_device(b), "/device:CPU:0");
  CHECK_STR(clg_node_requested_device(c), "");
  CHECK(a->requested.has_type && strcmp(a->requested.type, "CPU") == 0 && a->requested.has_id &&
        a->requested.id == 0 && !a->requested.has_job);
  CHECK(clg_devname_is_empty(&c->requested));
  /* The Const owns a copy of the values. */
  CHECK(clg_node_value(a) != NULL && clg_tensor_dtype(clg_node_value(a)) == CLG_FLOAT32);
  CHECK(clg_tensor_rank(clg_node_value(a)) == 2 && clg_tensor_dim(clg_node_value(a), 0) == 2 &&
        clg_tensor_dim(clg_node_value(a), 1) == 3);
  CHECK(clg_tensor_const_data(clg_node_value(a)) != (const void *)V6);
  CHECK(memcmp(clg_tensor_const_data(clg_node_value(a)), V6, sizeof V6) == 0);
  CHECK(clg_node_value(c) == NULL && !c->attrs[1].b && !c->attrs[2].b);
  CHECK(clg_graph_num_nodes(g) == 3);
  CHECK(clg_graph_node(g, 0) == a && clg_graph_node(g, 1) == b && clg_graph_node(g, 2) == c);
  CHECK(a->index == 0 && b->index == 1 && c->index == 2 && c->graph == g);
  CHECK(clg_graph_find(g, "MatMul") == c && clg_graph_find(g, "a") == a);
  clg_graph_free(g);
}

static void test_s7(void)
{
  clg_graph *g = clg_graph_new();
  const char *towers[2] = {"/device:GPU:2", "/device:GPU:3"};
  int64_t da[2] = {2, 3}, db[2] = {3, 2};
  clg_node *c[2];
  for (int i = 0; i < 2; i++) {
    CHECK_OK(clg_graph_push_device(g, towers[i]));
    clg_node *a = clg_const_f32(g, NULL, 2, da, V6);
    clg_node *b = clg_const_f32(g, NULL, 2, db, V6);
    c[i] = clg_matmul(g, NULL, a, b, false, false);
    CHECK_OK(clg_graph_pop_device(g));
  }
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  clg_node *sum = clg_add_n(g, NULL, 2, c);
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_OK(clg_graph_status(g));
  const char *names[7] = {"Const", "Const_1", "MatMul", "Const_2", "Const_3", "MatMul_1", "AddN"};
  const char *devs[7] = {"/device:GPU:2", "/device:GPU:2", "/device:GPU:2", "/device:GPU:3",
                         "/device:GPU:3", "/device:GPU:3", "/device:CPU:0"};
  CHECK(clg_graph_num_nodes(g) == 7);
  for (int i = 0; i < 7; i++) {
    clg_node *n = clg_graph_node(g, i);
    CHECK_STR(clg_node_name(n), names[i]);
    CHECK_STR(clg_node_requested_device(n), devs[i]);
    CHECK(clg_graph_find(g, names[i]) == n);
  }
  CHECK_STR(clg_node_op(sum), "AddN");
  CHECK(clg_node_num_inputs(sum) == 2 && clg_node_input(sum, 1) == c[1]);
  CHECK(clg_node_rank(sum) == 2 && clg_node_dim(sum, 0) == 2 && clg_node_dim(sum, 1) == 2);
  CHECK(clg_node_out_count(sum, 0) == 4);
  clg_graph_free(g);
}

static void test_shape_errors(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a = cf(g, "a", 2, 2, 3, 0), *b = cf(g, "b", 2, 3, 2, 0), *c = cf(g, "c", 2, 2, 2, 0);
  CHECK(clg_matmul(g, NULL, a, b, false, false) != NULL);
  CHECK(clg_matmul(g, NULL, a, c, false, false) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "MatMul 'MatMul_1': inner dimensions differ: [2,3] x [2,2]");

  g = clg_graph_new();
  a = cf(g, "a", 2, 3, 2, 0);
  c = cf(g, "c", 2, 2, 2, 0);
  CHECK(clg_matmul(g, NULL, a, c, true, false) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "MatMul 'MatMul': inner dimensions differ: [3,2] (transposed) x [2,2]");

  g = clg_graph_new();
  a = cf(g, "a", 2, 2, 3, 0);
  c = cf(g, "c", 2, 2, 2, 0);
  CHECK(clg_matmul(g, "mm", a, c, false, true) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "MatMul 'mm': inner dimensions differ: [2,3] x [2,2] (transposed)");

  g = clg_graph_new();
  a = cf(g, "a", 2, 2, 3, 0);
  b = cf(g, "b", 2, 2, 3, 0);
  CHECK(clg_matmul(g, NULL, a, b, true, true) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "MatMul 'MatMul': inner dimensions differ: [2,3] (transposed) x [2,3] (transposed)");

  g = clg_graph_new();
  a = cf(g, NULL, 2, 2, 3, 0);
  b = cf(g, NULL, 2, 3, 2, 0);
  CHECK(clg_add(g, NULL, a, b) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Add 'Add': shapes differ: [2,3] vs [3,2]");

  g = clg_graph_new();
  a = cf(g, NULL, 1, 4, 0, 0);
  b = cf(g, NULL, 2, 2, 2, 0);
  CHECK(clg_sub(g, "s", a, b) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Sub 's': shapes differ: [4] vs [2,2]");

  g = clg_graph_new();
  a = cf(g, NULL, 2, 1, 4, 0);
  b = cf(g, NULL, 1, 4, 0, 0);
  CHECK(clg_mul(g, NULL, a, b) == NULL); /* no general broadcasting */
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Mul 'Mul': shapes differ: [1,4] vs [4]");

  g = clg_graph_new();
  clg_node *in[3] = {cf(g, NULL, 2, 2, 3, 0), cf(g, NULL, 2, 2, 2, 0), NULL};
  CHECK(clg_add_n(g, NULL, 2, in) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "AddN 'AddN': input 1 has shape [2,2], input 0 has [2,3]");

  g = clg_graph_new();
  in[0] = cf(g, NULL, 2, 2, 3, 0);
  in[1] = cf(g, NULL, 2, 2, 3, 0);
  in[2] = cf(g, NULL, 0, 0, 0, 0);
  CHECK(clg_add_n(g, "sum", 3, in) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "AddN 'sum': input 2 has shape [], input 0 has [2,3]");

  g = clg_graph_new();
  a = cf(g, "a", 3, 1, 2, 3);
  b = cf(g, "b", 2, 3, 2, 0);
  CHECK(clg_matmul(g, "x", a, b, false, false) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "MatMul 'x': input 'a' is rank 3 [1,2,3]; MatMul needs rank 2");

  g = clg_graph_new();
  a = cf(g, "a", 2, 3, 2, 0);
  b = cf(g, "b", 0, 0, 0, 0);
  CHECK(clg_matmul(g, NULL, a, b, false, false) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "MatMul 'MatMul': input 'b' is rank 0 []; MatMul needs rank 2");

  g = clg_graph_new();
  int64_t d23[2] = {2, 3};
  double v6d[6] = {1, 2, 3, 4, 5, 6};
  a = cf(g, NULL, 2, 2, 3, 0);
  b = clg_const_f64(g, NULL, 2, d23, v6d);
  CHECK(clg_add(g, NULL, a, b) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Add 'Add': dtypes differ: float vs double");

  g = clg_graph_new();
  a = clg_const_f64(g, NULL, 2, d23, v6d);
  b = cf(g, NULL, 2, 3, 2, 0);
  CHECK(clg_matmul(g, NULL, a, b, false, false) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "MatMul 'MatMul': dtypes differ: double vs float");

  g = clg_graph_new();
  in[0] = cf(g, NULL, 2, 2, 3, 0);
  in[1] = clg_const_f64(g, NULL, 2, d23, v6d);
  CHECK(clg_add_n(g, NULL, 2, in) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "AddN 'AddN': input 1 has dtype double, input 0 has float");
}

static void test_default_names(void)
{
  clg_graph *g = clg_graph_new();
  /* A user name "Const_1" is skipped by the default names, as TF's unique_name does. */
  CHECK_STR(clg_node_name(cf(g, "Const_1", 0, 0, 0, 0)), "Const_1");
  clg_node *c0 = cf(g, NULL, 0, 0, 0, 0);
  clg_node *c2 = cf(g, NULL, 0, 0, 0, 0);
  CHECK_STR(clg_node_name(c0), "Const");
  CHECK_STR(clg_node_name(c2), "Const_2");
  /* Const_3 taken by the user before the counter reaches it. */
  CHECK_STR(clg_node_name(cf(g, "Const_3", 0, 0, 0, 0)), "Const_3");
  CHECK_STR(clg_node_name(cf(g, NULL, 0, 0, 0, 0)), "Const_4");
  /* Counting is per base name. */
  CHECK_STR(clg_node_name(clg_add(g, NULL, c0, c2)), "Add");
  CHECK_STR(clg_node_name(clg_sub(g, NULL, c0, c2)), "Sub");
  CHECK_STR(clg_node_name(clg_mul(g, NULL, c0, c2)), "Mul");
  CHECK_STR(clg_node_name(clg_add(g, NULL, c0, c2)), "Add_1");
  CHECK_STR(clg_node_name(clg_identity(g, NULL, c0)), "Identity");
  CHECK_STR(clg_node_name(clg_identity(g, NULL, c0)), "Identity_1");
  CHECK_STR(clg_node_name(clg_placeholder(g, NULL, CLG_FLOAT32, 0, NULL)), "Placeholder");
  CHECK_STR(clg_node_name(clg_placeholder(g, NULL, CLG_FLOAT32, 0, NULL)), "Placeholder_1");
  CHECK_STR(clg_node_name(clg_add_n(g, NULL, 1, &c0)), "AddN");
  /* A user name equal to a base counts as its first use. */
  CHECK_STR(clg_node_name(clg_identity(g, "MatMul", c0)), "MatMul");
  clg_node *m = cf(g, NULL, 2, 2, 2, 0);
  CHECK_STR(clg_node_name(clg_matmul(g, NULL, m, m, false, false)), "MatMul_1");
  /* TF keys its counts lower-cased, so "add_2" also blocks "Add_2". */
  CHECK_STR(clg_node_name(clg_add(g, "add_2", c0, c2)), "add_2");
  CHECK_STR(clg_node_name(clg_add(g, NULL, c0, c2)), "Add_3");
  /* A default name is never a duplicate even after users take the next ones. */
  CHECK_STR(clg_node_name(clg_sub(g, "Sub_1", c0, c2)), "Sub_1");
  CHECK_STR(clg_node_name(clg_sub(g, "Sub_2", c0, c2)), "Sub_2");
  CHECK_STR(clg_node_name(clg_sub(g, NULL, c0, c2)), "Sub_3");
  CHECK_OK(clg_graph_status(g));
  int n = clg_graph_num_nodes(g);
  for (int i = 0; i < n; i++) {
    clg_node *node = clg_graph_node(g, i);
    CHECK(node->index == i && clg_graph_find(g, node->name) == node);
  }
  clg_graph_free(g);

  /* Many nodes: the name tables grow. */
  g = clg_graph_new();
  char want[32];
  for (int i = 0; i < 1000; i++) {
    clg_node *c = cf(g, NULL, 0, 0, 0, 0);
    if (i == 0)
      snprintf(want, sizeof want, "Const");
    else
      snprintf(want, sizeof want, "Const_%d", i);
    CHECK_MSG(c && strcmp(c->name, want) == 0, "node %d named %s", i, c ? c->name : "(null)");
  }
  CHECK(clg_graph_find(g, "Const_999") == clg_graph_node(g, 999));
  CHECK(clg_graph_find(g, "Const_1000") == NULL);
  clg_graph_free(g);
}

static void test_duplicate_and_invalid_names(void)
{
  clg_graph *g = clg_graph_new();
  CHECK(cf(g, "a", 0, 0, 0, 0) != NULL);
  CHECK(cf(g, "A", 0, 0, 0, 0) != NULL); /* names are case-sensitive */
  CHECK(cf(g, "a", 0, 0, 0, 0) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Duplicate node name in graph: 'a'");

  g = clg_graph_new();
  clg_node *c = cf(g, NULL, 0, 0, 0, 0);
  CHECK(clg_identity(g, "Const", c) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Duplicate node name in graph: 'Const'");

  const char *bad[] = {"", "a b", "_a", "-a", "/a", "a\\b", "a:0", "é", "a\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    g = clg_graph_new();
    CHECK(clg_placeholder(g, bad[i], CLG_FLOAT32, 0, NULL) == NULL);
    char msg[256];
    snprintf(msg, sizeof msg,
             "Placeholder: '%s' is not a valid node name (names match "
             "[A-Za-z0-9.][A-Za-z0-9_.\\-/]*)",
             bad[i]);
    EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, msg);
  }
  const char *good[] = {"a", "0", ".", ".a", "a/b", "a-b_c.d", "tower_0/MatMul", "Z9"};
  g = clg_graph_new();
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    CHECK_STR(clg_node_name(clg_placeholder(g, good[i], CLG_FLOAT32, 0, NULL)), good[i]);
  CHECK_OK(clg_graph_status(g));
  clg_graph_free(g);
}

static void test_scopes(void)
{
  clg_graph *g = clg_graph_new();
  CHECK_OK(clg_graph_push_device(g, "/job:localhost"));
  clg_node *n0 = cf(g, NULL, 0, 0, 0, 0);
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:1"));
  clg_node *n1 = cf(g, NULL, 0, 0, 0, 0);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *n2 = cf(g, NULL, 0, 0, 0, 0);
  CHECK_OK(clg_graph_pop_device(g));
  clg_node *n3 = cf(g, NULL, 0, 0, 0, 0);
  CHECK_STR(clg_node_requested_device(n0), "/job:localhost");
  CHECK_STR(clg_node_requested_device(n1), "/job:localhost/device:GPU:1");
  CHECK(n1->requested.has_job && strcmp(n1->requested.job, "localhost") == 0 &&
        n1->requested.has_type && strcmp(n1->requested.type, "GPU") == 0 && n1->requested.has_id &&
        n1->requested.id == 1 && !n1->requested.has_task);
  CHECK_STR(clg_node_requested_device(n2), "/job:localhost");
  CHECK_STR(clg_node_requested_device(n3), "");

  /* Inner fields win: "/cpu:0" inside "/device:GPU:0"; the task stays. */
  CHECK_OK(clg_graph_push_device(g, "/task:1/device:GPU:0"));
  CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "/task:1/device:CPU:0");
  /* Type only: the id of the outer scope stays (make_merged_spec). */
  CHECK_OK(clg_graph_push_device(g, "/device:GPU:*"));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "/task:1/device:GPU:0");
  /* NULL and "" reset to no device, and popping brings the outer scopes back. */
  CHECK_OK(clg_graph_push_device(g, NULL));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "");
  CHECK_OK(clg_graph_push_device(g, "/gpu:3"));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "/device:GPU:3");
  CHECK_OK(clg_graph_push_device(g, ""));
  clg_node *empty = cf(g, NULL, 0, 0, 0, 0);
  CHECK_STR(clg_node_requested_device(empty), "");
  CHECK(clg_devname_is_empty(&empty->requested));
  for (int i = 0; i < 3; i++)
    CHECK_OK(clg_graph_pop_device(g));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "/task:1/device:GPU:0");
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "/task:1/device:CPU:0");
  CHECK_OK(clg_graph_pop_device(g));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "/task:1/device:GPU:0");
  CHECK_OK(clg_graph_pop_device(g));
  /* Deep nesting. */
  for (int i = 0; i < 100; i++)
    CHECK_OK(clg_graph_push_device(g, i % 2 ? "/gpu:1" : "/job:w/replica:2"));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "/job:w/replica:2/device:GPU:1");
  for (int i = 0; i < 100; i++)
    CHECK_OK(clg_graph_pop_device(g));
  CHECK_STR(clg_node_requested_device(cf(g, NULL, 0, 0, 0, 0)), "");
  CHECK_OK(clg_graph_status(g));

  /* Popping with no scope open: FAILED_PRECONDITION, sticky. */
  CHECK_CODE(clg_graph_pop_device(g), CLG_FAILED_PRECONDITION);
  CHECK(cf(g, NULL, 0, 0, 0, 0) == NULL);
  CHECK_CODE(clg_graph_push_device(g, "/cpu:0"), CLG_FAILED_PRECONDITION);
  CHECK_CODE(clg_graph_pop_device(g), CLG_FAILED_PRECONDITION);
  EXPECT_ERROR(g, CLG_FAILED_PRECONDITION, "clg_graph_pop_device: no device scope is open");

  g = clg_graph_new();
  CHECK_CODE(clg_graph_pop_device(g), CLG_FAILED_PRECONDITION);
  EXPECT_ERROR(g, CLG_FAILED_PRECONDITION, "clg_graph_pop_device: no device scope is open");
}

static void test_malformed_scope(void)
{
  const char *bad[] = {"foobar", "/job:foo/replica:-1", "/device:GPU:0/extra", "/gpu:"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    clg_graph *g = clg_graph_new();
    clg_node *a = cf(g, "a", 0, 0, 0, 0);
    CHECK_OK(clg_graph_push_device(g, "/cpu:0"));
    CHECK_CODE(clg_graph_push_device(g, bad[i]), CLG_INVALID_ARGUMENT);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "device scope '%s': Malformed device specification '%s'",
             bad[i], bad[i]);
    CHECK_MSG(starts_with(clg_graph_error(g), prefix), "error \"%s\"", clg_graph_error(g));
    CHECK_STR(clg_last_error(), clg_graph_error(g));
    char *first = clg_strdup(clg_graph_error(g));
    /* Sticky: everything after it fails with the same first error. */
    CHECK(clg_identity(g, NULL, a) == NULL);
    CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
    CHECK_STR(clg_last_error(), first);
    CHECK_CODE(clg_graph_pop_device(g), CLG_INVALID_ARGUMENT);
    CHECK_CODE(clg_graph_push_device(g, NULL), CLG_INVALID_ARGUMENT);
    CHECK(clg_graph_num_nodes(g) == 1);
    EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, first);
    free(first);
  }
}

/* A 10,000-character scope: the quoted spec is shortened, the reason is kept whole at the
 * end (it used to be cut off at 4,095 characters). */
static void test_huge_scope_spec(void)
{
  size_t len = 10000;
  char *spec = malloc(len + 1);
  memcpy(spec, "/job:", 5);
  memset(spec + 5, 'c', len - 5);
  spec[len] = '\0';
  clg_graph *g = clg_graph_new();
  CHECK_CODE(clg_graph_push_device(g, spec), CLG_INVALID_ARGUMENT);
  const char *msg = clg_graph_error(g);
  const char *reason = "is longer than 63 characters";
  size_t n = strlen(msg);
  CHECK_MSG(n >= strlen(reason) && strcmp(msg + n - strlen(reason), reason) == 0,
            "the message does not end with the reason: \"...%s\"", n > 200 ? msg + n - 200 : msg);
  CHECK_MSG(starts_with(msg, "device scope '/job:ccc"), "error \"%.200s\"", msg);
  CHECK_CONTAINS(msg, "(10000 characters)");
  CHECK(n < 1000);
  clg_graph_free(g);
  free(spec);
}

static void test_sticky_after_50(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *prev = cf(g, NULL, 2, 2, 2, 0);
  for (int i = 1; i < 50; i++)
    prev = i % 2 ? clg_add(g, NULL, prev, prev) : clg_matmul(g, NULL, prev, prev, false, true);
  CHECK_OK(clg_graph_status(g));
  CHECK(clg_graph_num_nodes(g) == 50);
  clg_node *wide = cf(g, "wide", 2, 2, 3, 0); /* node 51 */
  clg_node *bad = clg_add(g, "bad", prev, wide);
  CHECK(bad == NULL);
  const char *first = "Add 'bad': shapes differ: [2,2] vs [2,3]";
  CHECK_STR(clg_graph_error(g), first);
  /* Later builders return NULL, including those fed the NULL, and keep the first error. */
  clg_error_clear();
  CHECK(clg_identity(g, NULL, bad) == NULL);
  CHECK_STR(clg_last_error(), first);
  CHECK(cf(g, NULL, 2, 2, 2, 0) == NULL);
  CHECK(clg_matmul(g, NULL, prev, bad, false, false) == NULL);
  CHECK(clg_add_n(g, NULL, 0, NULL) == NULL);
  CHECK(clg_placeholder(g, "p", (clg_dtype)99, 0, NULL) == NULL);
  CHECK(clg_add(g, "a b", prev, prev) == NULL);
  CHECK_CODE(clg_graph_push_device(g, "foobar"), CLG_INVALID_ARGUMENT);
  CHECK(clg_graph_num_nodes(g) == 51);
  CHECK(clg_graph_find(g, "bad") == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, first);
}

static void test_scalar_broadcast(void)
{
  clg_graph *g = clg_graph_new();
  float two = 2;
  clg_node *s = clg_const_f32(g, "s", 0, NULL, &two);
  clg_node *t = clg_const_f32(g, "t", 2, (int64_t[]){2, 3}, V6);
  clg_node *r[4] = {clg_add(g, NULL, s, t), clg_mul(g, NULL, t, s), clg_sub(g, NULL, s, t),
                    clg_sub(g, NULL, t, s)};
  for (int i = 0; i < 4; i++) {
    CHECK(clg_node_rank(r[i]) == 2 && clg_node_dim(r[i], 0) == 2 && clg_node_dim(r[i], 1) == 3);
    CHECK(clg_node_dtype(r[i]) == CLG_FLOAT32);
  }
  CHECK(clg_node_input(r[2], 0) == s && clg_node_input(r[2], 1) == t);
  clg_node *ss = clg_mul(g, NULL, s, s);
  CHECK(clg_node_rank(ss) == 0 && clg_node_out_count(ss, 0) == 1);
  CHECK(clg_node_value(s) && clg_tensor_rank(clg_node_value(s)) == 0 &&
        *(const float *)clg_tensor_const_data(clg_node_value(s)) == 2.0f);
  /* An empty tensor against a scalar keeps its shape. */
  clg_node *e = clg_const_f32(g, NULL, 2, (int64_t[]){0, 5}, NULL);
  clg_node *es = clg_add(g, NULL, e, s);
  CHECK(clg_node_rank(es) == 2 && clg_node_dim(es, 0) == 0 && clg_node_dim(es, 1) == 5);
  CHECK(clg_node_out_count(es, 0) == 0);
  CHECK_OK(clg_graph_status(g));
  clg_graph_free(g);
}

static void test_transposes(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *a32 = cf(g, NULL, 2, 3, 2, 0), *b34 = cf(g, NULL, 2, 3, 4, 0);
  clg_node *a23 = cf(g, NULL, 2, 2, 3, 0), *b43 = cf(g, NULL, 2, 4, 3, 0);
  clg_node *ta = clg_matmul(g, NULL, a32, b34, true, false);
  clg_node *tb = clg_matmul(g, NULL, a23, b43, false, true);
  clg_node *tt = clg_matmul(g, NULL, a32, b43, true, true);
  clg_node *nn = clg_matmul(g, NULL, a23, b34, false, false);
  clg_node *all[4] = {ta, tb, tt, nn};
  for (int i = 0; i < 4; i++) {
    char s[32];
    CHECK_STR(clg_node_shape_string(all[i], s, sizeof s), "[2,4]");
  }
  CHECK(ta->attrs[1].b && !ta->attrs[2].b);
  CHECK(!tb->attrs[1].b && tb->attrs[2].b);
  CHECK(tt->attrs[1].b && tt->attrs[2].b);
  CHECK(!nn->attrs[1].b && !nn->attrs[2].b);
  /* Vectors as matrices: [1,5] x [1,5]^T and [5,1]^T x [5,1] are [1,1]; [5,1] x [1,5] is [5,5]. */
  clg_node *r15 = cf(g, NULL, 2, 1, 5, 0), *c51 = cf(g, NULL, 2, 5, 1, 0);
  clg_node *dot = clg_matmul(g, NULL, r15, r15, false, true);
  clg_node *outer = clg_matmul(g, NULL, c51, r15, false, false);
  clg_node *dot2 = clg_matmul(g, NULL, c51, c51, true, false);
  CHECK(clg_node_dim(dot, 0) == 1 && clg_node_dim(dot, 1) == 1);
  CHECK(clg_node_dim(outer, 0) == 5 && clg_node_dim(outer, 1) == 5);
  CHECK(clg_node_dim(dot2, 0) == 1 && clg_node_dim(dot2, 1) == 1);
  CHECK_OK(clg_graph_status(g));
  clg_graph_free(g);
}

static void test_float64_and_tensor_const(void)
{
  clg_graph *g = clg_graph_new();
  double v[6] = {1, 2, 3, 4, 5, 6};
  clg_node *a = clg_const_f64(g, "a", 2, (int64_t[]){2, 3}, v);
  clg_node *b = clg_const_f64(g, "b", 2, (int64_t[]){3, 2}, v);
  clg_node *c = clg_matmul(g, NULL, a, b, false, false);
  clg_node *d = clg_add_n(g, NULL, 2, (clg_node *[]){c, c});
  clg_node *e = clg_identity(g, "e", d);
  CHECK(clg_node_dtype(a) == CLG_FLOAT64 && clg_node_dtype(c) == CLG_FLOAT64);
  CHECK(clg_node_dtype(d) == CLG_FLOAT64 && clg_node_dtype(e) == CLG_FLOAT64);
  CHECK(clg_tensor_dtype(clg_node_value(a)) == CLG_FLOAT64 &&
        clg_tensor_bytes(clg_node_value(a)) == sizeof v);
  CHECK(memcmp(clg_tensor_const_data(clg_node_value(a)), v, sizeof v) == 0);
  v[0] = 99; /* the node kept a copy */
  CHECK(((const double *)clg_tensor_const_data(clg_node_value(a)))[0] == 1.0);
  char s[32];
  CHECK_STR(clg_node_shape_string(e, s, sizeof s), "[2,2]");
  CHECK(clg_node_input(e, 0) == d);

  /* clg_const copies any tensor, half included, rank 8 included. */
  int64_t dims8[8] = {1, 2, 1, 2, 1, 2, 1, 2};
  clg_tensor *t = clg_tensor_new(CLG_FLOAT16, 8, dims8, NULL);
  CHECK(t != NULL);
  uint16_t *h = clg_tensor_data(t);
  for (int i = 0; i < 16; i++)
    h[i] = (uint16_t)(0x3c00 + i);
  clg_node *k = clg_const(g, NULL, t);
  clg_tensor_free(t);
  CHECK(clg_node_dtype(k) == CLG_FLOAT16 && clg_node_rank(k) == 8 &&
        clg_node_out_count(k, 0) == 16);
  CHECK_STR(clg_node_shape_string(k, s, sizeof s), "[1,2,1,2,1,2,1,2]");
  CHECK(k && ((const uint16_t *)clg_tensor_const_data(clg_node_value(k)))[15] == 0x3c0f);
  clg_node *kk = clg_add(g, NULL, k, k);
  CHECK(clg_node_dtype(kk) == CLG_FLOAT16 && clg_node_rank(kk) == 8);
  CHECK_OK(clg_graph_status(g));
  clg_graph_free(g);
}

static void test_queries_and_placeholder(void)
{
  clg_graph *g = clg_graph_new();
  clg_node *p = clg_placeholder(g, "x", CLG_FLOAT64, 3, (int64_t[]){4, 1, 7});
  clg_node *h = clg_placeholder(g, NULL, CLG_FLOAT16, 1, (int64_t[]){3});
  CHECK_STR(clg_node_op(p), "Placeholder");
  CHECK(clg_node_dtype(p) == CLG_FLOAT64 && clg_node_dtype(h) == CLG_FLOAT16);
  CHECK(clg_node_rank(p) == 3 && clg_node_dim(p, 2) == 7 && clg_node_out_count(p, 0) == 28);
  CHECK(clg_node_dim(p, 3) == -1 && clg_node_dim(p, -1) == -1);
  CHECK(clg_node_value(p) == NULL && clg_node_num_inputs(p) == 0 && clg_node_input(p, 0) == NULL);
  clg_node *id = clg_identity(g, NULL, p);
  CHECK(clg_node_input(id, 0) == p && clg_node_input(id, 1) == NULL &&
        clg_node_input(id, -1) == NULL);
  CHECK(clg_node_rank(id) == 3 && clg_node_dim(id, 0) == 4 && clg_node_dtype(id) == CLG_FLOAT64);
  CHECK(clg_graph_node(g, 3) == NULL && clg_graph_node(g, -1) == NULL);
  CHECK(clg_graph_find(g, "nope") == NULL && clg_graph_find(g, NULL) == NULL);
  char s[8];
  CHECK_STR(clg_node_shape_string(p, s, sizeof s), "[4,1,7]");
  char tiny[5];
  CHECK_STR(clg_node_shape_string(p, tiny, sizeof tiny), "[4,1");
  CHECK(clg_node_shape_string(p, NULL, 0) == NULL);
  CHECK_OK(clg_graph_status(g));
  clg_graph_free(g);

  g = clg_graph_new();
  CHECK(clg_placeholder(g, NULL, (clg_dtype)7, 1, (int64_t[]){3}) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "Placeholder 'Placeholder': dtype 7 is not float (1), double (2), int32 (3), "
               "int64 (9), bool (10) or half (19)");
  g = clg_graph_new();
  CHECK(clg_placeholder(g, "p", CLG_FLOAT32, 9, (int64_t[9]){1}) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Placeholder 'p': rank 9 is out of range [0, 8]");
  g = clg_graph_new();
  CHECK(clg_placeholder(g, "p", CLG_FLOAT32, -1, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Placeholder 'p': rank -1 is out of range [0, 8]");
  g = clg_graph_new();
  CHECK(clg_placeholder(g, "p", CLG_FLOAT32, 2, (int64_t[]){3, -2}) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Placeholder 'p': dims[1] is -2; dimensions must be >= 0");
  g = clg_graph_new();
  CHECK(clg_placeholder(g, "p", CLG_FLOAT32, 2, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Placeholder 'p': dims is NULL for rank 2");
  g = clg_graph_new();
  int64_t huge[3] = {1ll << 31, 1ll << 31, 1ll << 2};
  CHECK(clg_placeholder(g, "p", CLG_FLOAT32, 3, huge) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT,
               "Placeholder 'p': shape [2147483648,2147483648,4] has too many elements");
  g = clg_graph_new();
  int64_t huge0[4] = {1ll << 40, 1ll << 40, 1ll << 40, 0};
  CHECK(clg_node_out_count(clg_placeholder(g, "p", CLG_FLOAT32, 4, huge0), 0) == 0);
  CHECK_OK(clg_graph_status(g));
  clg_graph_free(g);
}

static void test_null_args(void)
{
  int64_t d[2] = {2, 3};
  clg_error_clear();
  CHECK(clg_const_f32(NULL, "a", 2, d, V6) == NULL);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), "Const: graph is NULL");
  CHECK(clg_const_f64(NULL, NULL, 0, NULL, NULL) == NULL);
  CHECK(clg_const(NULL, NULL, NULL) == NULL);
  CHECK(clg_placeholder(NULL, NULL, CLG_FLOAT32, 0, NULL) == NULL);
  CHECK(clg_matmul(NULL, NULL, NULL, NULL, false, false) == NULL);
  CHECK_STR(clg_last_error(), "MatMul: graph is NULL");
  CHECK(clg_add(NULL, NULL, NULL, NULL) == NULL);
  CHECK(clg_sub(NULL, NULL, NULL, NULL) == NULL);
  CHECK(clg_mul(NULL, NULL, NULL, NULL) == NULL);
  CHECK(clg_add_n(NULL, NULL, 0, NULL) == NULL);
  CHECK(clg_identity(NULL, NULL, NULL) == NULL);
  CHECK_STR(clg_last_error(), "Identity: graph is NULL");
  CHECK_CODE(clg_graph_push_device(NULL, "/cpu:0"), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_last_error(), "clg_graph_push_device: graph is NULL");
  CHECK_CODE(clg_graph_pop_device(NULL), CLG_INVALID_ARGUMENT);
  CHECK_CODE(clg_graph_status(NULL), CLG_INVALID_ARGUMENT);
  CHECK_STR(clg_graph_error(NULL), "graph is NULL");
  clg_graph_free(NULL);
  CHECK(clg_graph_num_nodes(NULL) == 0 && clg_graph_node(NULL, 0) == NULL);
  CHECK(clg_graph_find(NULL, "a") == NULL);
  CHECK_STR(clg_node_name(NULL), "");
  CHECK_STR(clg_node_op(NULL), "");
  CHECK_STR(clg_node_requested_device(NULL), "");
  CHECK(clg_node_dtype(NULL) == 0 && clg_node_rank(NULL) == -1 && clg_node_dim(NULL, 0) == -1);
  CHECK(clg_node_num_inputs(NULL) == 0 && clg_node_input(NULL, 0) == NULL);
  CHECK(clg_node_out_count(NULL, 0) == 0);
  char s[8];
  CHECK_STR(clg_node_shape_string(NULL, s, sizeof s), "[]");

  /* A NULL input with no earlier error is the error. */
  clg_graph *g = clg_graph_new();
  clg_node *a = cf(g, "a", 2, 2, 2, 0);
  CHECK(clg_matmul(g, NULL, a, NULL, false, false) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "MatMul 'MatMul': input 1 is NULL");
  g = clg_graph_new();
  CHECK(clg_add(g, "x", NULL, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Add 'x': input 0 is NULL");
  g = clg_graph_new();
  CHECK(clg_identity(g, NULL, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Identity 'Identity': input 0 is NULL");
  g = clg_graph_new();
  a = cf(g, NULL, 2, 2, 2, 0);
  CHECK(clg_add_n(g, NULL, 3, (clg_node *[]){a, a, NULL}) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "AddN 'AddN': input 2 is NULL");
  g = clg_graph_new();
  CHECK(clg_add_n(g, NULL, 0, (clg_node *[]){NULL}) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "AddN 'AddN': needs at least 1 input, got 0");
  g = clg_graph_new();
  CHECK(clg_add_n(g, "s", -3, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "AddN 's': needs at least 1 input, got -3");
  g = clg_graph_new();
  CHECK(clg_add_n(g, NULL, 2, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "AddN 'AddN': inputs is NULL");

  /* An input from another graph. */
  clg_graph *other = clg_graph_new();
  clg_node *foreign = cf(other, "far", 2, 2, 2, 0);
  g = clg_graph_new();
  a = cf(g, "a", 2, 2, 2, 0);
  CHECK(clg_matmul(g, "m", a, foreign, false, false) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "MatMul 'm': input 1 ('far') belongs to another graph");
  CHECK_OK(clg_graph_status(other));
  clg_graph_free(other);

  /* Const arguments. */
  g = clg_graph_new();
  CHECK(clg_const_f32(g, NULL, 2, d, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Const 'Const': values is NULL");
  g = clg_graph_new();
  CHECK(clg_const_f64(g, "c", 2, NULL, (double[6]){0}) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Const 'c': dims is NULL for rank 2");
  g = clg_graph_new();
  CHECK(clg_const_f32(g, "c", 9, (int64_t[9]){1}, V6) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Const 'c': rank 9 is out of range [0, 8]");
  g = clg_graph_new();
  CHECK(clg_const_f32(g, "c", 1, (int64_t[]){-1}, V6) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Const 'c': dims[0] is -1; dimensions must be >= 0");
  g = clg_graph_new();
  CHECK(clg_const(g, NULL, NULL) == NULL);
  EXPECT_ERROR(g, CLG_INVALID_ARGUMENT, "Const 'Const': value is NULL");
  /* A scalar needs no dims; an empty tensor needs no values. */
  g = clg_graph_new();
  CHECK(clg_const_f32(g, NULL, 0, NULL, V6) != NULL);
  CHECK(clg_const_f64(g, NULL, 3, (int64_t[]){2, 0, 4}, NULL) != NULL);
  CHECK(clg_node_out_count(clg_graph_node(g, 1), 0) == 0);
  CHECK_OK(clg_graph_status(g));
  clg_graph_free(g);
}

int main(void)
{
  test_s2();
  test_s7();
  test_shape_errors();
  test_default_names();
  test_duplicate_and_invalid_names();
  test_scopes();
  test_malformed_scope();
  test_huge_scope_spec();
  test_sticky_after_50();
  test_scalar_broadcast();
  test_transposes();
  test_float64_and_tensor_const();
  test_queries_and_placeholder();
  test_null_args();
  return clg_test_summary("test_graph");
}
