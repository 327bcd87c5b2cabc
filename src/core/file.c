/* Files written atomically: the bytes go to a temporary file beside the real name, are
 * synced, and only then renamed over it (and the folder synced), so a crash or a failed write
 * never leaves a half-written file under the real name. Checkpoints stream into one; traces,
 * memory maps and pages are written in one call. And files opened for reading: regular files
 * only, found out before any call could block on a FIFO. */
#define _GNU_SOURCE /* F_OFD_SETLK; libgen.h keeps basename POSIX's */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* --- temporary files --------------------------------------------------------------------- */

/* Temporary names are ".clgraph-tmp.<name hash>.<random>": a hash of the real name, so that
 * they stay short whatever the name's length (a name of 255 bytes must still be writable) yet
 * say whose file they are. Whether a writer still needs one shows in a lock alone: the writer
 * holds an open-file-description lock (F_OFD_SETLK, a write lock on the whole file) from
 * creation to rename, which the kernel drops when the writer dies however it dies. A pid or
 * a host name would tell nothing sure: a pid in another PID namespace (containers sharing a
 * folder) looks dead, another host's writer cannot be asked, and a paused writer writes
 * nothing. OFD locks, not POSIX ones: they belong to the open file, so another thread's save
 * in this process conflicts too, and closing some other descriptor of the file drops none.
 * Where locks are local to each host (NFS mounted nolock), another host's lock is not seen
 * and its writer's temporary may go: share checkpoint folders over locking file systems.
 * Earlier versions named theirs ".<name>.tmp.XXXXXX" (mkstemp) and took no lock. */
#define TMP_TAG ".clgraph-tmp."
#define OLD_TAG ".tmp."
#define OLD_RANDOM 6          /* mkstemp's XXXXXX */
#define OLD_STALE_S (60 * 60) /* an unlocked old-style temporary: stale after an hour */
#define RANDOM_LEN 8

static uint64_t fnv1a(const char *s)
{
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The stem of the temporary names of the file `name` in its folder: ".clgraph-tmp.<name
 * hash>.". */
static void temp_stem(const char *name, char out[64])
{
  snprintf(out, 64, TMP_TAG "%016llx.", (unsigned long long)fnv1a(name));
}

/* path's folder and name (malloc'd); false when out of memory. */
static bool path_parts(const char *path, char **folder, char **name)
{
  char *a = clg_strdup(path), *b = clg_strdup(path);
  *folder = *name = NULL;
  if (a && b) {
    *name = clg_strdup(basename(b));
    *folder = clg_strdup(dirname(a));
  }
  free(a);
  free(b);
  if (*folder && *name)
    return true;
  free(*folder);
  free(*name);
  *folder = *name = NULL;
  return false;
}

char *clg_atomic_file_temp_prefix(const char *path)
{
  char *folder, *name, stem[64];
  if (!path || !path_parts(path, &folder, &name))
    return NULL;
  temp_stem(name, stem);
  clg_strbuf s;
  clg_strbuf_init(&s);
  clg_strbuf_printf(&s, "%s/%s", folder, stem);
  free(folder);
  free(name);
  return clg_strbuf_take(&s);
}

/* Takes a whole-file OFD lock of type (F_WRLCK, F_RDLCK) on fd without waiting; 0, or -1 with
 * errno (EAGAIN: another holds a conflicting lock). */
static int lock_whole(int fd, short type)
{
  struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  return fcntl(fd, F_OFD_SETLK, &l);
}

/* Whether entry is an earlier version's temporary of `name`: ".<name>.tmp." and 6 of
 * mkstemp's letters and digits. */
static bool old_style_temp(const char *entry, const char *name)
{
  size_t n = strlen(name);
  if (entry[0] != '.' || strncmp(entry + 1, name, n) != 0 ||
      strncmp(entry + 1 + n, OLD_TAG, strlen(OLD_TAG)) != 0)
    return false;
  const char *r = entry + 1 + n + strlen(OLD_TAG);
  if (strlen(r) != OLD_RANDOM)
    return false;
  for (; *r; r++)
    if (!((*r >= 'a' && *r <= 'z') || (*r >= 'A' && *r <= 'Z') || (*r >= '0' && *r <= '9')))
      return false;
  return true;
}

/* Removes folder's entry if it is a regular file no one holds a lock on: opened (without
 * following a link or waiting on anything), locked by this open file (a read lock, which any
 * writer's write lock refuses), and unlinked under that lock only if the name still names
 * the locked file. A writer that created it and has yet to lock it finds it gone once it has
 * (create_temp checks), so no writer ever goes on with a removed file. min_age: seconds since
 * it was last written, 0 for any. */
static void remove_if_unlocked(int dirfd_, const char *entry, time_t min_age)
{
  struct stat at, locked;
  if (fstatat(dirfd_, entry, &at, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(at.st_mode) ||
      (min_age > 0 && at.st_mtime > time(NULL) - min_age))
    return;
  int fd = openat(dirfd_, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return;
  if (lock_whole(fd, F_RDLCK) == 0 && fstat(fd, &locked) == 0 &&
      fstatat(dirfd_, entry, &at, AT_SYMLINK_NOFOLLOW) == 0 && at.st_dev == locked.st_dev &&
      at.st_ino == locked.st_ino)
    unlinkat(dirfd_, entry, 0);
  close(fd); /* drops the lock */
}

/* Removes the temporary files of `name` in folder that no writer holds any more (killed in
 * the middle of a save): this version's when unlocked, an earlier version's (which took no
 * lock) when unlocked and not written for an hour. Best effort: a folder that cannot be
 * listed keeps its files, and so does a file system without locks (nothing can be locked). */
static void remove_stale(const char *folder, const char *name)
{
  char stem[64];
  temp_stem(name, stem);
  size_t stem_len = strlen(stem);
  DIR *d = opendir(folder);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, stem, stem_len) == 0 && e->d_name[stem_len])
      remove_if_unlocked(dirfd(d), e->d_name, 0);
    else if (old_style_temp(e->d_name, name))
      remove_if_unlocked(dirfd(d), e->d_name, OLD_STALE_S);
  }
  if (d)
    closedir(d);
}

/* Creates "<prefix><random>" with O_EXCL, mode 0666 under the umask (as any new file), and
 * takes its lock; another name on a collision, or when a cleaner removed it before the lock
 * was taken (the name no longer names the locked file) or holds it. A file system that has
 * no locks leaves the file unlocked; no cleaner can lock it there either. */
static int create_temp(clg_strbuf *name, const char *prefix)
{
  static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  static atomic_uint counter; /* threads saving at the same nanosecond still differ */
  uint64_t x = clg_now_ns() ^ ((uint64_t)getpid() << 32);
  for (int attempt = 0; attempt < 100; attempt++) {
    x ^= (uint64_t)(atomic_fetch_add(&counter, 1) + 1) * 0x9e3779b97f4a7c15ull;
    char rnd[RANDOM_LEN + 1];
    for (int i = 0; i < RANDOM_LEN; i++) {
      x ^= x << 13; /* xorshift64 */
      x ^= x >> 7;
      x ^= x << 17;
      rnd[i] = digits[x % 36];
    }
    rnd[RANDOM_LEN] = '\0';
    clg_strbuf_free(name);
    clg_strbuf_init(name);
    clg_strbuf_printf(name, "%s%s", prefix, rnd);
    if (name->failed) {
      errno = ENOMEM;
      return -1;
    }
    int fd = open(name->buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST)
        continue;
      return -1;
    }
    struct stat mine, named;
    if (lock_whole(fd, F_WRLCK) != 0) {
      int err = errno;
      if (err == EAGAIN || err == EACCES) { /* a cleaner holds it, and removes it */
        close(fd);
        continue;
      }
      /* No locks here (ENOLCK, EINVAL, EOPNOTSUPP...): the file stays, unlocked. */
    } else if (fstat(fd, &mine) != 0 || stat(name->buf, &named) != 0 ||
               mine.st_dev != named.st_dev || mine.st_ino != named.st_ino) {
      close(fd); /* removed by a cleaner between open and lock */
      continue;
    }
    return fd;
  }
  errno = EEXIST;
  return -1;
}

clg_code clg_atomic_file_open(clg_atomic_file *f, const char *path)
{
  memset(f, 0, sizeof *f);
  f->fd = -1;
  if (!path || !path[0])
    return clg_error(CLG_INVALID_ARGUMENT, "writing a file: the path is NULL or empty");
  /* A name the file system refuses is refused before any byte is written (the temporary
   * name is short, so only the rename would find out). */
  struct stat sb;
  if (lstat(path, &sb) != 0 && errno == ENAMETOOLONG)
    return clg_error(CLG_INVALID_ARGUMENT, "%s: cannot create it: %s", path,
                     strerror(ENAMETOOLONG));
  char *folder = NULL, *name = NULL, stem[64];
  clg_strbuf s, prefix;
  clg_strbuf_init(&s);
  clg_strbuf_init(&prefix);
  if (path_parts(path, &folder, &name)) {
    remove_stale(folder, name);
    temp_stem(name, stem);
    clg_strbuf_printf(&prefix, "%s/%s", folder, stem);
  }
  f->path = clg_strdup(path);
  free(folder);
  bool no_memory = !name || prefix.failed || !f->path;
  free(name);
  if (no_memory) {
    clg_strbuf_free(&prefix);
    clg_atomic_file_abort(f);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory writing %s", path);
  }
  f->fd = create_temp(&s, prefix.buf);
  int err = errno;
  clg_strbuf_free(&prefix);
  f->tmp = clg_strbuf_take(&s);
  if (f->fd < 0) {
    clg_code code =
        clg_error(file_code(err), "%s: cannot create a temporary file beside it (%s): %s", path,
                  f->tmp ? f->tmp : "?", strerror(err));
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
  /* The data on disk before the name points at it; renamed while the descriptor, so the
   * lock, is still held (a cleaner would take a closed temporary for a killed writer's). */
  if (fsync(f->fd) != 0)
    code = clg_error(file_code(errno), "%s: fsync: %s", f->tmp, strerror(errno));
  else if (rename(f->tmp, f->path) != 0)
    code = clg_error(file_code(errno), "%s: renaming %s over it: %s", f->path, f->tmp,
                     strerror(errno));
  if (code != CLG_OK) {
    clg_atomic_file_abort(f);
    return code;
  }
  if (close(f->fd) != 0) /* the data was synced, so an error here is a rare one */
    code = clg_error(file_code(errno), "%s: close: %s", f->path, strerror(errno));
  f->fd = -1;
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
  return code;
}

void clg_atomic_file_abort(clg_atomic_file *f)
{
  if (f->tmp) /* removed before the lock goes with the descriptor */
    unlink(f->tmp);
  if (f->fd >= 0)
    close(f->fd);
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
