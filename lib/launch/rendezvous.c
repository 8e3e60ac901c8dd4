/*
 * The client side of the rendezvous, run by every rank (rank 0 too, over
 * the loopback to its own server): connect to rank 0's server, say who this
 * process is, wait until the whole job has said so, then hand the socket to
 * MPI_Init, which speaks PMI-1 on it (PMI_FD).
 *
 * The hello is one line, "cmd=rondo_hello rank=R size=N host=H run=ID";
 * the answer is "cmd=rondo_welcome rc=0 ..." once every rank has arrived,
 * or "cmd=rondo_welcome rc=1 msg=..." with the reason the job cannot form.
 */
#define _GNU_SOURCE /* SOCK_CLOEXEC, getaddrinfo */
#include "launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One attempt to connect to host:port, waiting at most until deadline. */
static int connect_once(const struct addrinfo *ai, double deadline)
{
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0)
    return -1;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      close(fd);
      return -1;
    }
    struct pollfd p = {fd, POLLOUT, 0};
    int left_ms = (int)((deadline - rondo__now()) * 1000);
    int err = 0;
    socklen_t len = sizeof err;
    if (left_ms <= 0 || poll(&p, 1, left_ms) != 1) {
      close(fd);
      errno = ETIMEDOUT;
      return -1;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      close(fd);
      errno = err;
      return -1;
    }
  }
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

/* Connects to the rendezvous, retrying (rank 0 may not listen yet) until
 * the deadline; 100 ms between attempts. */
static rondo_status_t connect_rendezvous(const launch_vars_t *v, double deadline, int *out)
{
  char port[16];
  snprintf(port, sizeof port, "%d", v->port);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const char *why = "no answer";
  for (;;) {
    int rc = getaddrinfo(v->host, port, &hints, &res);
    if (rc != 0) {
      why = gai_strerror(rc);
    } else {
      for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        int fd = connect_once(ai, deadline);
        if (fd >= 0) {
          freeaddrinfo(res);
          *out = fd;
          return RONDO_SUCCESS;
        }
        why = strerror(errno);
      }
      freeaddrinfo(res);
      res = NULL;
    }
    if (rondo__now() + 0.1 >= deadline)
      break;
    struct timespec tenth = {0, 100 * 1000 * 1000};
    nanosleep(&tenth, NULL);
  }
  return rondo__fail(RONDO_ERR_LAUNCH,
                     "rank %d could not reach the rendezvous at %s:%d (%s) within %g s "
                     "(RONDO_RENDEZVOUS_TIMEOUT_SEC): is rank 0 running, and is the address "
                     "right? It came from %s",
                     v->rank, v->host, v->port, why, v->timeout_sec, v->address_from);
}

/* Reads one line (up to '\n', which is dropped) byte by byte, so that not
 * one byte of what follows is taken from MPI. */
static int read_line(int fd, char *buf, size_t len, double deadline)
{
  size_t n = 0;
  while (n + 1 < len) {
    struct pollfd p = {fd, POLLIN, 0};
    double left = deadline - rondo__now();
    if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) != 1)
      return -1;
    char c;
    ssize_t got = read(fd, &c, 1);
    if (got <= 0)
      return got == 0 ? -2 : -1;
    if (c == '\n') {
      buf[n] = '\0';
      return 0;
    }
    buf[n++] = c;
  }
  return -1;
}

/* A copy of src (not dst itself) without spaces or '=', for the wire. */
static void wire_word(char *dst, size_t len, const char *src)
{
  snprintf(dst, len, "%s", src[0] != '\0' ? src : "-");
  for (char *p = dst; *p != '\0'; p++)
    if (*p == ' ' || *p == '=' || *p == '\n' || *p == '\t')
      *p = '_';
}

rondo_status_t launch_join(const launch_vars_t *v, int *fdp)
{
  double deadline = rondo__now() + v->timeout_sec;
  int fd = -1;
  RONDO_CHECK(connect_rendezvous(v, deadline, &fd));

  char name[LAUNCH_HOST_MAX], host[LAUNCH_HOST_MAX], run[160], line[4096];
  if (gethostname(name, sizeof name) != 0)
    snprintf(name, sizeof name, "unknown");
  name[sizeof name - 1] = '\0';
  wire_word(host, sizeof host, name);
  wire_word(run, sizeof run, v->run_id);
  int n = snprintf(line, sizeof line, "cmd=rondo_hello rank=%d size=%d host=%s run=%s\n", v->rank,
                   v->size, host, run);
  if (write(fd, line, (size_t)n) != n) {
    close(fd);
    return rondo__fail(RONDO_ERR_LAUNCH, "rank %d: the rendezvous at %s:%d closed: %s", v->rank,
                       v->host, v->port, strerror(errno));
  }
  /* The server answers once every rank arrived, or at its own deadline,
   * which is close to ours: give it a little longer to say why. */
  int rc = read_line(fd, line, sizeof line, deadline + 5);
  if (rc != 0) {
    close(fd);
    return rondo__fail(RONDO_ERR_LAUNCH,
                       "rank %d: the rendezvous at %s:%d %s (is another program listening on "
                       "that port?)",
                       v->rank, v->host, v->port,
                       rc == -2 ? "closed the connection without an answer"
                                : "gave no answer in time");
  }
  if (strncmp(line, "cmd=rondo_welcome rc=0", 22) != 0) {
    close(fd);
    const char *msg = strstr(line, "msg=");
    if (strncmp(line, "cmd=rondo_welcome", 17) != 0 || msg == NULL)
      return rondo__fail(RONDO_ERR_LAUNCH,
                         "rank %d: %s:%d is not a rondo rendezvous (it answered '%.60s')",
                         v->rank, v->host, v->port, line);
    return rondo__fail(RONDO_ERR_LAUNCH, "the job could not form: %s", msg + 4);
  }
  char num[32];
  snprintf(num, sizeof num, "%d", fd);
  setenv("PMI_FD", num, 1);
  snprintf(num, sizeof num, "%d", v->rank);
  setenv("PMI_RANK", num, 1);
  snprintf(num, sizeof num, "%d", v->size);
  setenv("PMI_SIZE", num, 1);
  LOG_DEBUG("joined the rendezvous at %s:%d as rank %d of %d", v->host, v->port, v->rank,
            v->size);
  *fdp = fd;
  return RONDO_SUCCESS;
}

void launch_forget_env(void)
{
  unsetenv("PMI_FD");
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
}
