/* Files written atomically: the bytes go to a temporary file beside the real name, are
 * synced, and only then renamed over it (and the folder synced), so a crash or a failed write
 * never leaves a half-written file under the real name. Checkpoints stream into one; traces,
 * memory maps and pages are written in one call. And files opened for reading: regular files
 * only, found out before any call could block on a FIFO. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

/* The status for a failed file call: the reason a user can act on. */
static clg_code file_code(int err)
{
  switch (err) {
  case EACCES:
  case EPERM:
  case EROFS:
    return CLG_PERMISSION_DENIED;
  case ENOENT:
  case ENOTDIR:
    return CLG_NOT_FOUND;
  case ENOSPC:
  case EDQUOT:
  case EMFILE:
  case ENFILE:
  case ENOMEM:
    return CLG_RESOURCE_EXHAUSTED;
  case ENAMETOOLONG:
  case ELOOP:
    return CLG_INVALID_ARGUMENT;
  default:
    return CLG_INTERNAL;
  }
}

/* --- reading ----------------------------------------------------------------------------- */

static const char *file_kind(mode_t m)
{
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "not a file";
}

clg_code clg_file_open_read(const char *path, int *fd)
{
  *fd = -1;
  if (!path || !path[0])
    return clg_error(CLG_INVALID_ARGUMENT, "reading a file: the path is NULL or empty");
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer, forever if none comes. */
  int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (f < 0) {
    int err = errno;
    clg_code code = file_code(err);
    return clg_error(code == CLG_INTERNAL ? CLG_INVALID_ARGUMENT : code, "%s: %s", path,
                     strerror(err));
  }
  struct stat sb;
  clg_code code = CLG_OK;
  int flags;
  if (fstat(f, &sb) != 0)
    code = clg_error(CLG_INTERNAL, "%s: fstat: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    code =
        clg_error(CLG_INVALID_ARGUMENT, "%s: not a regular file (%s)", path, file_kind(sb.st_mode));
  else if ((flags = fcntl(f, F_GETFL)) < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0)
    code = clg_error(CLG_INTERNAL, "%s: fcntl: %s", path, strerror(errno));
  if (code != CLG_OK) {
    close(f);
    return code;
  }
  *fd = f;
  return CLG_OK;
}

clg_code clg_atomic_file_open(clg_atomic_file *f, const char *path)
{
  memset(f, 0, sizeof *f);
  f->fd = -1;
  if (!path || !path[0])
    return clg_error(CLG_INVALID_ARGUMENT, "writing a file: the path is NULL or empty");
  /* "<folder>/.<name>.tmp.XXXXXX": hidden, and on the same file system as the real name. */
  char *a = clg_strdup(path), *b = clg_strdup(path);
  clg_strbuf s;
  clg_strbuf_init(&s);
  if (a && b)
    clg_strbuf_printf(&s, "%s/.%s.tmp.XXXXXX", dirname(a), basename(b));
  free(a);
  free(b);
  f->tmp = clg_strbuf_take(&s);
  f->path = clg_strdup(path);
  if (!f->tmp || !f->path) {
    clg_atomic_file_abort(f);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory writing %s", path);
  }
  if ((f->fd = mkstemp(f->tmp)) < 0) {
    int err = errno;
    clg_code code =
        clg_error(file_code(err), "%s: cannot create a temporary file beside it (%s): %s", path,
                  f->tmp, strerror(err));
    free(f->tmp);
    f->tmp = NULL; /* nothing to remove */
    clg_atomic_file_abort(f);
    return code;
  }
  return CLG_OK;
}

clg_code clg_atomic_file_write(clg_atomic_file *f, const void *data, size_t size)
{
  const char *p = data;
  while (size) {
    ssize_t w = write(f->fd, p, size);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return clg_error(w < 0 ? file_code(errno) : CLG_INTERNAL, "%s: write: %s", f->tmp,
                       w < 0 ? strerror(errno) : "wrote nothing");
    p += w;
    size -= (size_t)w;
  }
  return CLG_OK;
}

clg_code clg_atomic_file_commit(clg_atomic_file *f)
{
  clg_code code = CLG_OK;
  /* The data on disk before the name points at it; mkstemp made the file 0600. */
  if (fsync(f->fd) != 0)
    code = clg_error(file_code(errno), "%s: fsync: %s", f->tmp, strerror(errno));
  else if (fchmod(f->fd, 0644) != 0)
    code = clg_error(file_code(errno), "%s: chmod: %s", f->tmp, strerror(errno));
  int closed = close(f->fd); /* closed even when fsync failed */
  f->fd = -1;
  if (closed != 0 && code == CLG_OK)
    code = clg_error(file_code(errno), "%s: close: %s", f->tmp, strerror(errno));
  if (code == CLG_OK && rename(f->tmp, f->path) != 0)
    code = clg_error(file_code(errno), "%s: renaming %s over it: %s", f->path, f->tmp,
                     strerror(errno));
  if (code != CLG_OK) {
    clg_atomic_file_abort(f);
    return code;
  }
  /* The rename itself on disk; a folder that cannot be opened cannot be synced. */
  char *a = clg_strdup(f->path);
  int dfd = a ? open(dirname(a), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  free(a);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  free(f->tmp);
  free(f->path);
  f->tmp = f->path = NULL;
  return CLG_OK;
}

void clg_atomic_file_abort(clg_atomic_file *f)
{
  if (f->fd >= 0)
    close(f->fd);
  if (f->tmp)
    unlink(f->tmp);
  free(f->tmp);
  free(f->path);
  f->fd = -1;
  f->tmp = f->path = NULL;
}

clg_code clg_file_write_atomic(const char *path, const void *data, size_t size)
{
  clg_atomic_file f;
  clg_code code = clg_atomic_file_open(&f, path);
  if (code != CLG_OK)
    return code;
  if ((code = clg_atomic_file_write(&f, data, size)) != CLG_OK) {
    clg_atomic_file_abort(&f);
    return code;
  }
  return clg_atomic_file_commit(&f);
}
