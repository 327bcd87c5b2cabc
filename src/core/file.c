/* Files written atomically: the bytes go to a temporary file beside the real name, are
 * synced, and only then renamed over it (and the folder synced), so a crash or a failed write
 * never leaves a half-written file under the real name. Checkpoints stream into one; traces,
 * memory maps and pages are written in one call. And files opened for reading: regular files
 * only, found out before any call could block on a FIFO. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
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

/* Temporary names are ".clgraph-tmp.<name>.<host>.<pid>.<random>": hashes of the real name
 * and of the host, so that they stay short whatever the name's length (a name of 255 bytes
 * must still be writable) yet say whose they are; the host and the pid tell a later save
 * whether their writer is gone. */
#define TMP_TAG ".clgraph-tmp."
#define HOST_HEX 8

static uint64_t fnv1a(const char *s)
{
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The stem of the temporary names of the file `name` in its folder:
 * ".clgraph-tmp.<name hash>." (*name_len bytes), then "<host hash>.". */
static void temp_stem(const char *name, char out[64], size_t *name_len)
{
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0)
    host[0] = '\0';
  *name_len = (size_t)snprintf(out, 64, TMP_TAG "%016llx.", (unsigned long long)fnv1a(name));
  snprintf(out + *name_len, 64 - *name_len, "%0*lx.", HOST_HEX,
           (unsigned long)(fnv1a(host) & 0xffffffffu));
}

/* path's folder (malloc'd) and the stem of its temporary names; false when out of memory. */
static bool temp_parts(const char *path, char **folder, char stem[64], size_t *name_len)
{
  char *a = clg_strdup(path), *b = clg_strdup(path);
  *folder = NULL;
  if (a && b) {
    temp_stem(basename(b), stem, name_len);
    *folder = clg_strdup(dirname(a));
  }
  free(a);
  free(b);
  return *folder != NULL;
}

char *clg_atomic_file_temp_prefix(const char *path)
{
  char *folder = NULL, stem[64];
  size_t name_len;
  if (!path || !temp_parts(path, &folder, stem, &name_len))
    return NULL;
  clg_strbuf s;
  clg_strbuf_init(&s);
  clg_strbuf_printf(&s, "%s/%s", folder, stem);
  free(folder);
  return clg_strbuf_take(&s);
}

/* When process pid started, in seconds since the epoch; 0 where /proc does not say. */
static long long process_start(long pid)
{
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/%ld/stat", pid);
  FILE *f = fopen(p, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  /* Field 22 (starttime, in clock ticks since boot); the command name before it, in
   * parentheses, may hold spaces and parentheses of its own. */
  char *at = strrchr(buf, ')');
  for (int field = 2; at && field < 22; field++)
    at = strchr(at + 1, ' ');
  long long ticks = at ? strtoll(at + 1, NULL, 10) : 0;
  long long boot = 0;
  f = ticks > 0 ? fopen("/proc/stat", "r") : NULL;
  while (f && fgets(buf, sizeof buf, f))
    if (strncmp(buf, "btime ", 6) == 0)
      boot = strtoll(buf + 6, NULL, 10);
  if (f)
    fclose(f);
  long hz = sysconf(_SC_CLK_TCK);
  return boot > 0 && hz > 0 ? boot + ticks / hz : 0;
}

/* Whether a file last written at mtime was written before a process started at start (0:
 * unknown, so not); 2 s of slack, as the boot time is in whole seconds. */
static bool written_before(time_t mtime, long long start)
{
  return start > 0 && (long long)mtime + 2 < start;
}

/* Removes the temporary files of the same name that a writer now gone left (killed in the
 * middle of a save). Of this host's: those whose process has ended, or whose pid the process
 * that now has it got after they were last written (a reused pid). Of another host's, whose
 * processes cannot be asked: those last written before this process started (a live writer
 * keeps writing; a new container is often a new host name). Best effort: a folder that cannot
 * be listed keeps its files. */
static void remove_stale(const char *folder, const char *stem, size_t name_len)
{
  DIR *d = opendir(folder);
  long long mine = -1; /* this process's start, looked up once */
  for (struct dirent *e; d && (e = readdir(d));) {
    const char *host = e->d_name + name_len, *p = host + HOST_HEX + 1;
    if (strncmp(e->d_name, stem, name_len) != 0 || strlen(host) < HOST_HEX + 1 ||
        host[HOST_HEX] != '.')
      continue;
    char *end = NULL;
    long pid = strtol(p, &end, 10);
    struct stat sb;
    if (pid <= 0 || end == p || *end != '.' ||
        fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
      continue;
    bool stale;
    if (strncmp(host, stem + name_len, HOST_HEX) == 0) {
      stale = (kill((pid_t)pid, 0) != 0 && errno == ESRCH) ||
              written_before(sb.st_mtime, process_start(pid));
    } else {
      if (mine < 0)
        mine = process_start((long)getpid());
      stale = written_before(sb.st_mtime, mine);
    }
    if (stale)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  if (d)
    closedir(d);
}

/* Creates "<prefix><pid>.<random>" with O_EXCL, mode 0666 under the umask (as any new file);
 * another name on a collision. */
static int create_temp(clg_strbuf *name, const char *prefix)
{
  static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  static atomic_uint counter; /* threads saving at the same nanosecond still differ */
  uint64_t x = clg_now_ns() ^ ((uint64_t)getpid() << 32);
  for (int attempt = 0; attempt < 100; attempt++) {
    x ^= (uint64_t)(atomic_fetch_add(&counter, 1) + 1) * 0x9e3779b97f4a7c15ull;
    char rnd[7];
    for (int i = 0; i < 6; i++) {
      x ^= x << 13; /* xorshift64 */
      x ^= x >> 7;
      x ^= x << 17;
      rnd[i] = digits[x % 36];
    }
    rnd[6] = '\0';
    clg_strbuf_free(name);
    clg_strbuf_init(name);
    clg_strbuf_printf(name, "%s%ld.%s", prefix, (long)getpid(), rnd);
    if (name->failed) {
      errno = ENOMEM;
      return -1;
    }
    int fd = open(name->buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
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
  char *folder = NULL, stem[64];
  size_t name_len;
  clg_strbuf s, prefix;
  clg_strbuf_init(&s);
  clg_strbuf_init(&prefix);
  if (temp_parts(path, &folder, stem, &name_len)) {
    remove_stale(folder, stem, name_len);
    clg_strbuf_printf(&prefix, "%s/%s", folder, stem);
  }
  f->path = clg_strdup(path);
  if (!folder || prefix.failed || !f->path) {
    free(folder);
    clg_strbuf_free(&prefix);
    clg_atomic_file_abort(f);
    return clg_error(CLG_RESOURCE_EXHAUSTED, "out of memory writing %s", path);
  }
  free(folder);
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
  /* The data on disk before the name points at it. */
  if (fsync(f->fd) != 0)
    code = clg_error(file_code(errno), "%s: fsync: %s", f->tmp, strerror(errno));
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
