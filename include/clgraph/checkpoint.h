/* clgraph: checkpoints in safetensors, the format PyTorch, NumPy-based tools and Hugging
 * Face's libraries read and write (an 8-byte little-endian header size, a JSON header naming
 * each tensor's dtype, shape and byte range, then the data, little-endian, row-major).
 *
 *   clg_session_save(s, "model.safetensors", 0, NULL);     // every variable
 *   ...
 *   clg_session_restore(s2, "model.safetensors", 0, NULL);  // by variable name
 *
 * A save is atomic: it writes a temporary file in the same folder (".clgraph-tmp.*", short
 * whatever the name's length), syncs it and renames it over the real name, so a crash never
 * leaves a half-written checkpoint there; the next save of that name removes the temporary
 * file a writer killed in the middle left (never a live writer's: a writer holds a lock on
 * its temporary until the rename, so even one in another container or on another host keeps
 * it; a file system without locks keeps every temporary). The file is created as
 * open(path, ..., 0666) creates one, under the umask. A restore reads regular files only (a
 * FIFO is INVALID_ARGUMENT at once, not waited on), and reads back every file a save writes;
 * it checks the whole file (header, every name, dtype and shape) before it changes any
 * variable; a file that lies or is cut short is DATA_LOSS or INVALID_ARGUMENT naming the
 * file and the tensor, and then no variable has changed.
 *
 * dtypes: F32, F64, F16, I64, I32, I16, I8, U64, U32, U16, U8 and BOOL map to clgraph's;
 * files may hold others (BF16, F8_E4M3, F8_E5M2), which clg_checkpoint_open lists but no
 * variable can restore from.
 */
#ifndef CLGRAPH_CHECKPOINT_H
#define CLGRAPH_CHECKPOINT_H

#include <stdint.h>

#include "clgraph/session.h"
#include "clgraph/status.h"
#include "clgraph/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Saves the session's variables (all of the graph's when num_names is 0, else those named)
 * to path. Every variable saved must be initialized (FAILED_PRECONDITION naming it); an
 * unknown name is NOT_FOUND. I/O errors are INTERNAL, PERMISSION_DENIED, NOT_FOUND (no such
 * folder), RESOURCE_EXHAUSTED (disk full) or INVALID_ARGUMENT (a name the file system refuses)
 * naming the file; the file under path is then unchanged. */
clg_code clg_session_save(clg_session *s, const char *path, int num_names,
                          const char *const *names);

/* Sets the session's variables (all of the graph's, or those named) from the tensors of the
 * same names in path, which any safetensors writer may have made; other tensors in the
 * file are ignored. All or nothing: see above. */
clg_code clg_session_restore(clg_session *s, const char *path, int num_names,
                             const char *const *names);

/* --- reading any safetensors file ------------------------------------------------------- */

typedef struct clg_checkpoint clg_checkpoint;

/* One tensor of a file. */
typedef struct clg_checkpoint_tensor {
  const char *name;  /* valid until the checkpoint is closed */
  const char *dtype; /* the file's name for it: "F32", "BF16", ... */
  clg_dtype type;    /* clgraph's dtype, or 0 when clgraph has none for it */
  int rank;
  int64_t dims[CLG_MAX_RANK];
  uint64_t offset; /* from the start of the file */
  uint64_t bytes;
} clg_checkpoint_tensor;

/* Opens path and checks its header and layout (not the values): errors as for a restore.
 * Tensors are listed in the order of their data in the file. */
clg_code clg_checkpoint_open(const char *path, clg_checkpoint **out);
void clg_checkpoint_close(clg_checkpoint *c);
int clg_checkpoint_num_tensors(const clg_checkpoint *c);
/* Tensor i (0 <= i < num_tensors); INVALID_ARGUMENT for a bad index. */
clg_code clg_checkpoint_tensor_info(const clg_checkpoint *c, int i, clg_checkpoint_tensor *out);
/* Reads tensor i into a new host tensor (its dtype must be one clgraph has). */
clg_code clg_checkpoint_read(const clg_checkpoint *c, int i, clg_tensor **out);
/* The header's "__metadata__" value for key, or NULL. */
const char *clg_checkpoint_metadata(const clg_checkpoint *c, const char *key);

#ifdef __cplusplus
}
#endif
#endif
