/* Saving a session's variables to a safetensors file, atomically, and restoring them by
 * name, all or nothing. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "runtime/runtime.h"

/* The variables a call names (all of the graph's when num_names is 0), in *out. */
static clg_code select_vars(const clg_session_vars *sv, int num_names, const char *const *names,
                            const clg_node ***out, int *count)
{
  int nn = clg_graph_num_nodes(sv->graph);
  if (num_names < 0 || (num_names > 0 && !names))
    return clg_error(CLG_INVALID_ARGUMENT, "num_names is %d but names is NULL", num_names);
  const clg_node **v = malloc(sizeof *v * (size_t)(num_names > 0 ? num_names : nn > 0 ? nn : 1));
  if (!v)
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory listing variables");
  int k = 0;
  if (num_names == 0) {
    for (int i = 0; i < nn; i++) {
      const clg_node *n = clg_graph_node(sv->graph, i);
      if (n->def->flags & CLG_OP_VARIABLE)
        v[k++] = n;
    }
  } else {
    for (int i = 0; i < num_names; i++) {
      const clg_node *n = names[i] ? clg_graph_find(sv->graph, names[i]) : NULL;
      if (!n || !(n->def->flags & CLG_OP_VARIABLE)) {
        free(v);
        return clg_error(CLG_NOT_FOUND, "no variable named '%.200s' in the session's graph",
                         names[i] ? names[i] : "(NULL)");
      }
      for (int j = 0; j < k; j++)
        if (v[j] == n) {
          free(v);
          return clg_error(CLG_INVALID_ARGUMENT, "variable '%s' is named twice", n->name);
        }
      v[k++] = n;
    }
  }
  *out = v;
  *count = k;
  return CLG_OK;
}

static clg_device *device_of(const clg_session_vars *sv, const clg_node *n)
{
  return clg_devices_at(clg_process_devices(sv->proc), sv->placement[n->index].device);
}

/* --- save -------------------------------------------------------------------------------- */

/* Largest dtype first, then by name: with the header padded to 8 bytes every tensor then
 * starts at a multiple of its element size, and the file is the same for the same values. */
static int save_order(const void *a, const void *b)
{
  const clg_node *x = *(const clg_node *const *)a, *y = *(const clg_node *const *)b;
  size_t sx = clg_dtype_size(x->outs[0].dtype), sy = clg_dtype_size(y->outs[0].dtype);
  if (sx != sy)
    return sx > sy ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* The header of entries e: JSON, padded with spaces to a multiple of 8 bytes after the size. */
static char *make_header(const clg_st_entry *e, int n, size_t *len)
{
  json_t *root = json_object(), *meta = json_object();
  bool ok = root && meta && json_object_set_new(meta, "producer", json_string("clgraph")) == 0 &&
            json_object_set_new(root, "__metadata__", meta) == 0;
  if (!ok)
    json_decref(meta);
  for (int i = 0; ok && i < n; i++) {
    json_t *shape = json_array(), *o = json_object();
    for (int d = 0; shape && d < e[i].rank; d++)
      ok = ok && json_array_append_new(shape, json_integer(e[i].dims[d])) == 0;
    ok =
        ok && shape && o && json_object_set_new(o, "dtype", json_string(e[i].dtype)) == 0 &&
        json_object_set_new(o, "shape", shape) == 0 &&
        json_object_set_new(o, "data_offsets",
                            json_pack("[II]", (json_int_t)e[i].begin, (json_int_t)e[i].end)) == 0 &&
        json_object_set_new(root, e[i].name, o) == 0;
    if (!ok) {
      json_decref(shape);
      json_decref(o);
    }
  }
  char *text = ok ? json_dumps(root, JSON_COMPACT) : NULL;
  json_decref(root);
  if (!text)
    return NULL;
  size_t t = strlen(text), padded = (t + 7) / 8 * 8;
  char *out = realloc(text, padded + 1);
  if (!out) {
    free(text);
    return NULL;
  }
  memset(out + t, ' ', padded - t);
  out[padded] = '\0';
  *len = padded;
  return out;
}

/* The entries of the variables v, in order, checked as a restore will check them: a file
 * that restore would refuse is not written. */
static clg_code make_entries(const char *path, const clg_node **v, int n, clg_st_entry *e)
{
  uint64_t at = 0, bytes;
  for (int i = 0; i < n; i++) {
    const clg_out_desc *d = &v[i]->outs[0];
    e[i] = (clg_st_entry){.name = (char *)v[i]->name,
                          .dtype = clg_st_dtype_name(d->dtype),
                          .elem = clg_dtype_size(d->dtype),
                          .type = d->dtype,
                          .rank = d->rank,
                          .begin = at};
    memcpy(e[i].dims, d->dims, sizeof e[i].dims);
    if (!clg_st_tensor_bytes(e[i].elem, e[i].rank, e[i].dims, &bytes) || bytes > UINT64_MAX - at)
      return clg_error(CLG_INVALID_ARGUMENT, "%s: variable '%s' has more bytes than a file holds",
                       path, v[i]->name);
    e[i].end = at += bytes;
  }
  clg_code code = CLG_OK;
  for (int i = 0; i < n && code == CLG_OK; i++)
    code = clg_st_check_entry(path, &e[i], at);
  return code;
}

/* Device memory goes through a staging buffer this large: small enough to stay in cache
 * between the download and the write. */
#define STAGE_BYTES ((size_t)4 << 20)

/* The variables' bytes into f, in order; host variables straight from their buffers. */
static clg_code write_values(const clg_session_vars *sv, const clg_node **v, int n,
                             clg_atomic_file *f)
{
  void *stage = NULL;
  clg_code code = CLG_OK;
  for (int i = 0; i < n && code == CLG_OK; i++) {
    clg_device *dev = device_of(sv, v[i]);
    const clg_device_ops *ops = clg_device_ops_of(dev);
    clg_block b;
    size_t bytes = clg_node_out_bytes(v[i], 0);
    if ((code = clg_var_store_block(sv->vars, v[i], sv->placement[v[i]->index].device, &b)) !=
        CLG_OK)
      break;
    if (!bytes)
      continue;
    if (ops->host_memory) {
      code = clg_atomic_file_write(f, b.host, bytes);
      continue;
    }
    if (!stage && !(stage = malloc(STAGE_BYTES))) {
      code =
          clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory staging variable '%s'", v[i]->name);
      break;
    }
    for (size_t at = 0; at < bytes && code == CLG_OK; at += STAGE_BYTES) {
      size_t len = bytes - at < STAGE_BYTES ? bytes - at : STAGE_BYTES;
      clg_block part = b;
      part.offset += at;
      part.size = len;
      if ((code = ops->download(dev, &part, stage, len)) != CLG_OK)
        clg_error_prefix("saving variable '%s': ", v[i]->name);
      else
        code = clg_atomic_file_write(f, stage, len);
    }
  }
  free(stage);
  return code;
}

clg_code clg_session_save(clg_session *s, const char *path, int num_names, const char *const *names)
{
  if (!s || !path || !path[0])
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_save: session or path is NULL or empty");
  if (!clg_session_is_chief(s)) /* cluster: the chief (task 0) alone writes checkpoints */
    return CLG_OK;
  clg_session_vars sv;
  clg_code code = clg_session_lock_variables(s, &sv);
  if (code != CLG_OK)
    return code;
  const clg_node **v = NULL;
  int n = 0;
  char *header = NULL;
  size_t hlen = 0;
  clg_st_entry *entries = NULL;
  if ((code = select_vars(&sv, num_names, names, &v, &n)) != CLG_OK)
    goto done;
  for (int i = 0; i < n; i++) {
    if (!clg_st_dtype_name(v[i]->outs[0].dtype)) {
      code = clg_error(CLG_UNIMPLEMENTED, "variable '%s' has dtype %s, which safetensors lacks",
                       v[i]->name, clg_dtype_name(v[i]->outs[0].dtype));
      goto done;
    }
    if (!clg_var_store_initialized(sv.vars, v[i])) {
      code = clg_var_uninitialized(v[i], v[i]);
      clg_error_prefix("saving %s: ", path);
      goto done;
    }
  }
  qsort(v, (size_t)n, sizeof *v, save_order);
  if (!(entries = calloc((size_t)(n ? n : 1), sizeof *entries))) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory writing the header of %s", path);
    goto done;
  }
  if ((code = make_entries(path, v, n, entries)) != CLG_OK)
    goto done;
  if (!(header = make_header(entries, n, &hlen))) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory writing the header of %s", path);
    goto done;
  }
  if ((code = clg_st_check_header_size(path, hlen)) != CLG_OK)
    goto done;
  /* A temporary file beside path, renamed over it once whole and synced. */
  clg_atomic_file f;
  if ((code = clg_atomic_file_open(&f, path)) != CLG_OK)
    goto done;
  uint8_t size8[8];
  for (int i = 0; i < 8; i++)
    size8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
  if ((code = clg_atomic_file_write(&f, size8, 8)) == CLG_OK &&
      (code = clg_atomic_file_write(&f, header, hlen)) == CLG_OK &&
      (code = write_values(&sv, v, n, &f)) == CLG_OK)
    code = clg_atomic_file_commit(&f);
  else
    clg_atomic_file_abort(&f);
done:
  clg_session_unlock_variables(s);
  free(header);
  free(entries);
  free(v);
  return code;
}

/* --- restore ----------------------------------------------------------------------------- */

static clg_code read_exact(int fd, void *dst, uint64_t bytes, uint64_t at, const char *file,
                           const char *name)
{
  char *p = dst;
  while (bytes) {
    ssize_t got = pread(fd, p, (size_t)bytes, (off_t)at);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return clg_error(CLG_DATA_LOSS, "%s: tensor '%.200s': %s", file, name,
                       got < 0 ? strerror(errno) : "the file ends inside its data");
    p += got;
    at += (uint64_t)got;
    bytes -= (uint64_t)got;
  }
  return CLG_OK;
}

clg_code clg_session_restore(clg_session *s, const char *path, int num_names,
                             const char *const *names)
{
  if (!s || !path)
    return clg_error(CLG_INVALID_ARGUMENT, "clg_session_restore: session or path is NULL");
  int fd = -1;
  clg_st *st = NULL;
  clg_code code = clg_st_open(path, &fd, &st);
  if (code != CLG_OK)
    return code;
  clg_session_vars sv;
  if ((code = clg_session_lock_variables(s, &sv)) != CLG_OK) {
    close(fd);
    clg_st_free(st);
    return code;
  }
  const clg_node **v = NULL;
  const clg_st_entry **e = NULL;
  int n = 0;
  void *stage = NULL, *map = MAP_FAILED;
  size_t map_len = 0;
  if ((code = select_vars(&sv, num_names, names, &v, &n)) != CLG_OK)
    goto done;
  e = calloc((size_t)(n ? n : 1), sizeof *e);
  if (!e) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory restoring %s", path);
    goto done;
  }
  /* Every check first: nothing changes unless all of them pass. */
  size_t most = 0;
  for (int i = 0; i < n; i++) {
    const clg_out_desc *d = &v[i]->outs[0];
    char want[96], got[96];
    if (!(e[i] = clg_st_find(st, v[i]->name))) {
      code = clg_error(CLG_INVALID_ARGUMENT,
                       "%s: no tensor '%s' for variable '%s' (the file holds %d tensors)", path,
                       v[i]->name, v[i]->name, st->n);
      goto done;
    }
    if (e[i]->type != d->dtype) {
      code = clg_error(CLG_INVALID_ARGUMENT, "%s: tensor '%s' is %s, but variable '%s' is %s (%s)",
                       path, v[i]->name, e[i]->dtype, v[i]->name, clg_dtype_name(d->dtype),
                       clg_st_dtype_name(d->dtype) ? clg_st_dtype_name(d->dtype) : "?");
      goto done;
    }
    bool same = e[i]->rank == d->rank;
    for (int k = 0; same && k < d->rank; k++)
      same = e[i]->dims[k] == d->dims[k];
    if (!same) {
      clg_out_desc fd_desc = {d->dtype, e[i]->rank, {0}};
      memcpy(fd_desc.dims, e[i]->dims, sizeof fd_desc.dims);
      code =
          clg_error(CLG_INVALID_ARGUMENT, "%s: tensor '%s' has shape %s, but variable '%s' has %s",
                    path, v[i]->name, clg_out_shape_string(&fd_desc, got, sizeof got), v[i]->name,
                    clg_out_shape_string(d, want, sizeof want));
      goto done;
    }
    if (!clg_device_ops_of(device_of(&sv, v[i]))->host_memory && e[i]->end - e[i]->begin > most)
      most = (size_t)(e[i]->end - e[i]->begin);
  }
  /* Buffers next (an allocation failure changes no value either). */
  for (int i = 0; i < n && code == CLG_OK; i++) {
    clg_block b;
    code = clg_var_store_block(sv.vars, v[i], sv.placement[v[i]->index].device, &b);
  }
  /* Device variables upload straight from the file's pages (one copy, as a plain read
   * makes); without a mapping, through a staging buffer. The header check made sure the
   * file holds every byte mapped. */
  if (code == CLG_OK && most) {
    map_len = (size_t)(st->data_start + st->data_size);
    /* Faulting pages in as the upload reads them measured faster than MAP_POPULATE or
     * 4 MiB chunks through a buffer (bench variables on PoCL: 0.9-1.08x a plain read
     * against 0.62-0.70x). */
    map = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED && !(stage = malloc(STAGE_BYTES)))
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory restoring %s", path);
  }
  for (int i = 0; i < n && code == CLG_OK; i++) {
    clg_device *dev = device_of(&sv, v[i]);
    const clg_device_ops *ops = clg_device_ops_of(dev);
    clg_block b;
    uint64_t bytes = e[i]->end - e[i]->begin, from = st->data_start + e[i]->begin;
    code = clg_var_store_block(sv.vars, v[i], sv.placement[v[i]->index].device, &b);
    if (code == CLG_OK && bytes && ops->host_memory)
      code = read_exact(fd, b.host, bytes, from, path, v[i]->name);
    else if (code == CLG_OK && bytes && map != MAP_FAILED)
      code = ops->upload(dev, &b, (const char *)map + from, (size_t)bytes);
    for (uint64_t at = 0;
         code == CLG_OK && bytes && !ops->host_memory && map == MAP_FAILED && at < bytes;
         at += STAGE_BYTES) {
      size_t len = bytes - at < STAGE_BYTES ? (size_t)(bytes - at) : STAGE_BYTES;
      clg_block part = b;
      part.offset += (size_t)at;
      part.size = len;
      code = read_exact(fd, stage, len, from + at, path, v[i]->name);
      if (code == CLG_OK)
        code = ops->upload(dev, &part, stage, len);
    }
    if (code != CLG_OK && clg_last_code() != CLG_DATA_LOSS)
      clg_error_prefix("restoring variable '%s' from %s: ", v[i]->name, path);
    if (code == CLG_OK)
      clg_var_store_set_initialized(sv.vars, v[i]);
  }
done:
  clg_session_unlock_variables(s);
  if (map != MAP_FAILED)
    munmap(map, map_len);
  free(stage);
  free(e);
  free(v);
  close(fd);
  clg_st_free(st);
  return code;
}
