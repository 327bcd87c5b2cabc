/* A tiny program embedding clgraph: the guide's matmul on /cpu:0, then on the first GPU
 * when there is one. Prints where each ran and the value, numpy style. ci/consumer.sh
 * builds it against the installed package (CMake, then pkg-config) and checks the output. */
#include <clgraph.h>
#include <stdio.h>
#include <stdlib.h>

/* Builds c = a x b on `device`, runs it, prints "<node>: <device>" and the value. */
static int run_on(clg_graph *g, const char *device)
{
  const int64_t da[2] = {2, 3}, db[2] = {3, 2};
  const float v[6] = {1, 2, 3, 4, 5, 6};
  clg_graph_push_device(g, device);
  clg_node *a = clg_const_f32(g, NULL, 2, da, v);
  clg_node *b = clg_const_f32(g, NULL, 2, db, v);
  clg_node *c = clg_matmul(g, NULL, a, b, false, false);
  clg_graph_pop_device(g);
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  clg_code code = clg_session_new(g, NULL, &s);
  if (code == CLG_OK)
    code = clg_session_run(s, 0, NULL, NULL, 1, &c, &out);
  if (code == CLG_OK) {
    char *text = clg_tensor_to_string(out);
    printf("%s: %s\n%s\n", clg_node_name(c), clg_session_node_device(s, c), text);
    free(text);
  } else {
    fprintf(stderr, "%s: %s: %s\n", clg_code_error_class(code), clg_code_title(code),
            clg_last_error());
  }
  clg_tensor_free(out);
  clg_session_free(s);
  return code == CLG_OK ? 0 : 1;
}

int main(void)
{
  clg_devices *devs = NULL;
  if (clg_devices_new(NULL, &devs) != CLG_OK) {
    fprintf(stderr, "clg_devices_new: %s\n", clg_last_error());
    return 1;
  }
  int gpus = clg_devices_count(devs) - 1;
  clg_devices_free(devs);
  printf("clgraph consumer: %d GPU%s\n", gpus, gpus == 1 ? "" : "s");
  clg_graph *g = clg_graph_new();
  int rc = run_on(g, "/cpu:0");
  if (gpus > 0)
    rc |= run_on(g, "/device:GPU:0");
  clg_graph_free(g);
  return rc;
}
