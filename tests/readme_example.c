/* The guide's multi-tower example: two matmuls on GPU:2 and GPU:3, summed on the CPU. */
#include <clgraph.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
  const char *towers[2] = {"/device:GPU:2", "/device:GPU:3"};
  const int64_t da[2] = {2, 3}, db[2] = {3, 2};
  const float v[6] = {1, 2, 3, 4, 5, 6};
  clg_graph *g = clg_graph_new();
  clg_node *c[2];
  for (int i = 0; i < 2; i++) {
    clg_graph_push_device(g, towers[i]); /* with tf.device(d): */
    clg_node *a = clg_const_f32(g, NULL, 2, da, v);
    clg_node *b = clg_const_f32(g, NULL, 2, db, v);
    c[i] = clg_matmul(g, NULL, a, b, false, false);
    clg_graph_pop_device(g);
  }
  clg_graph_push_device(g, "/cpu:0");
  clg_node *sum = clg_add_n(g, NULL, 2, c);
  clg_graph_pop_device(g);
  clg_session_options opt;
  clg_session_options_init(&opt);
  opt.log_device_placement = 1; /* the placement lines go to stderr */
  clg_session *s = NULL;
  clg_tensor *out = NULL;
  clg_code code = clg_session_new(g, &opt, &s);
  if (code == CLG_OK && (code = clg_session_run(s, 0, NULL, NULL, 1, &sum, &out)) == CLG_OK) {
    char *text = clg_tensor_to_string(out);
    printf("%s\n", text); /* [[  44.   56.]\n [  98.  128.]] */
    free(text);
  } else {
    fprintf(stderr, "%s: %s\n", clg_code_error_class(code), clg_last_error());
  }
  clg_tensor_free(out);
  clg_session_free(s);
  clg_graph_free(g);
  return code == CLG_OK ? 0 : 1;
}
