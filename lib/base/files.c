/*
 * Opening the files rondo reads or writes (a tuning table, the timeline):
 * an open never blocks, and only regular files are taken. A FIFO would
 * block open() until a peer opens its other end (forever, for a FIFO no one
 * reads), and a device such as /dev/full accepts the open and fails every
 * write later, far from the knob that named it.
 */
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rondo__open_regular(const char *path, int flags, char *why, size_t len)
{
  int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(why, len, "%s", errno == ENXIO ? "a FIFO no one reads, not a regular file"
                                            : strerror(errno));
    return -1;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    snprintf(why, len, "%s, not a regular file",
             S_ISFIFO(sb.st_mode)  ? "a FIFO"
             : S_ISCHR(sb.st_mode) ? "a character device"
             : S_ISDIR(sb.st_mode) ? "a directory"
                                   : "not a plain file");
    close(fd);
    return -1;
  }
  /* A regular file never blocks anyway; its later reads and writes are
   * plain ones. */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}
