/*
 * Where rank 0 serves the rendezvous, and who may reach it
 * (docs/launching.md#who-can-join):
 *   - a job with a key: TCP on the rendezvous address, bound to that
 *     address's interface (a loopback address stays loopback); every
 *     connection proves the key (auth.c) before it may say anything;
 *   - a job without a key whose ranks are all on this host (the address
 *     is a loopback one, or the launcher says every rank is local): a
 *     Unix-domain socket in a directory only this user can enter, and
 *     every peer's uid checked again (SO_PEERCRED); no port is opened;
 *   - a job without a key across hosts: TCP as above, unauthenticated,
 *     which rank 0 says once unless RONDO_RENDEZVOUS_OPEN=1.
 * Every rank decides the same way from the same variables.
 */
#define _GNU_SOURCE /* SOCK_CLOEXEC, struct ucred */
#include "launch/launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Whether host is written as a loopback address ("localhost", 127.x.y.z,
 * ::1). A name that merely resolves to one here (Debian maps the host's own
 * name to 127.0.1.1) is not: other hosts resolve it to another address. */
static int loopback_literal(const char *host)
{
  struct in_addr a4;
  struct in6_addr a6;
  if (strcmp(host, "localhost") == 0)
    return 1;
  if (inet_pton(AF_INET, host, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* A whole number in variable name, or -1. */
static long env_number(const char *name)
{
  const char *s = getenv(name);
  char *end = NULL;
  long v = s != NULL && *s != '\0' ? strtol(s, &end, 10) : -1;
  return s != NULL && *s != '\0' && *end == '\0' ? v : -1;
}

rondo_status_t launch_endpoint_decide(launch_vars_t *v)
{
  RONDO_CHECK(launch_key_read(&v->keyed));
  v->local = 0;
  v->path[0] = '\0';
  if (v->keyed)
    return RONDO_SUCCESS;
  /* torchrun sets LOCAL_WORLD_SIZE, srun SLURM_STEP_NUM_NODES. */
  v->local = loopback_literal(v->host) || env_number("LOCAL_WORLD_SIZE") == v->size ||
             (v->source != NULL && strncmp(v->source, "SLURM", 5) == 0 &&
              env_number("SLURM_STEP_NUM_NODES") == 1);
  if (!v->local) {
    rondo__knobs_t k;
    if (v->rank == 0 &&
        rondo__knob_parse("RONDO_RENDEZVOUS_OPEN", getenv("RONDO_RENDEZVOUS_OPEN"), &k) ==
            RONDO_SUCCESS &&
        !k.rendezvous_open)
      LOG_WARN("the rendezvous at %s:%d is not authenticated: anyone who reaches that port "
               "can join or end this job. Give every rank one secret in RONDO_RENDEZVOUS_KEY "
               "or RONDO_RENDEZVOUS_KEY_FILE, or set RONDO_RENDEZVOUS_OPEN=1 to accept this "
               "(docs/launching.md#who-can-join)",
               v->host, v->port);
    return RONDO_SUCCESS;
  }
  snprintf(v->path, sizeof v->path, "/tmp/rondo-%ld/rendezvous-%d", (long)geteuid(), v->port);
  return RONDO_SUCCESS;
}

const char *launch_endpoint_name(const launch_vars_t *v, char *buf, size_t len)
{
  if (v->local)
    snprintf(buf, len, "unix:%s", v->path);
  else
    snprintf(buf, len, strchr(v->host, ':') ? "[%s]:%d" : "%s:%d", v->host, v->port);
  return buf;
}

/* The directory of v->path: made if missing, and refused unless it belongs
 * to this user and nobody else may enter it. */
static rondo_status_t private_dir(const launch_vars_t *v)
{
  char dir[LAUNCH_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", v->path);
  *strrchr(dir, '/') = '\0';
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return rondo__fail(RONDO_ERR_LAUNCH, "rank 0 cannot make %s for the rendezvous: %s", dir,
                       strerror(errno));
  struct stat sb;
  if (lstat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
      (sb.st_mode & 077) != 0)
    return rondo__fail(RONDO_ERR_LAUNCH,
                       "%s is not this user's private directory (it must be a directory of "
                       "mode 700 owned by uid %ld), so the rendezvous cannot be served there: "
                       "remove it, or set RONDO_RENDEZVOUS_KEY",
                       dir, (long)geteuid());
  return RONDO_SUCCESS;
}

static rondo_status_t listen_unix(const launch_vars_t *v, int *out)
{
  RONDO_CHECK(private_dir(v));
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", v->path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return rondo__fail(RONDO_ERR_LAUNCH, "rank 0: no socket for the rendezvous: %s",
                       strerror(errno));
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno == EADDRINUSE) {
    /* Left by a job that died? Only if nobody answers there. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int alive = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof a) == 0;
    if (probe >= 0)
      close(probe);
    if (alive) {
      close(fd);
      return rondo__fail(RONDO_ERR_LAUNCH,
                         "rank 0 cannot serve the rendezvous at %s: another job on this host "
                         "serves its own there (the same port %d, from %s); choose another",
                         v->path, v->port, v->address_from);
    }
    unlink(v->path);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
      int err = errno;
      close(fd);
      return rondo__fail(RONDO_ERR_LAUNCH, "rank 0 cannot serve the rendezvous at %s: %s",
                         v->path, strerror(err));
    }
  }
  if (listen(fd, 1024) != 0) {
    int err = errno;
    close(fd);
    unlink(v->path);
    return rondo__fail(RONDO_ERR_LAUNCH, "rank 0 cannot serve the rendezvous at %s: %s",
                       v->path, strerror(err));
  }
  *out = fd;
  return RONDO_SUCCESS;
}

/* A TCP socket bound to ai (or to every interface when ai is NULL) and
 * listening, or -1 with errno. */
static int bind_tcp(const struct addrinfo *ai, int port)
{
  int family = ai != NULL ? ai->ai_family : AF_INET6;
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 && ai == NULL)
    fd = socket(family = AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  int one = 1, zero = 0, rc;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ai != NULL) {
    rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
  } else if (family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero); /* IPv4 too */
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                             .sin6_addr = in6addr_any};
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  } else {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_ANY)};
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  }
  if (rc != 0 || listen(fd, 1024) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

static int is_loopback(const struct sockaddr *sa)
{
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  return sa->sa_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* TCP on the rendezvous host's interface: a loopback address stays
 * loopback; a name or address of this host is bound where it resolves; a
 * name that resolves to no address of this host but is reached under it
 * from the others (behind NAT, or Debian's 127.0.1.1) takes every
 * interface. */
static rondo_status_t listen_tcp(const launch_vars_t *v, int *out)
{
  char port[16];
  snprintf(port, sizeof port, "%d", v->port);
  struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *res = NULL;
  int loop = loopback_literal(v->host), fd = -1, err = EADDRNOTAVAIL;
  if (getaddrinfo(v->host, port, &hints, &res) == 0) {
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
      if (is_loopback(ai->ai_addr) != loop)
        continue;
      fd = bind_tcp(ai, v->port);
      if (fd < 0 && errno != EADDRNOTAVAIL)
        err = errno;
      if (fd < 0 && errno == EADDRINUSE)
        break;
    }
    freeaddrinfo(res);
  }
  if (fd < 0 && !loop && err != EADDRINUSE) {
    LOG_DEBUG("rendezvous: %s is no address of this host: listening on every interface",
              v->host);
    fd = bind_tcp(NULL, v->port);
    err = errno;
  }
  if (fd < 0)
    return rondo__fail(RONDO_ERR_LAUNCH,
                       "rank 0 cannot listen on port %d for the rendezvous (from %s): %s; "
                       "choose a free one with RONDO_RENDEZVOUS=HOST:PORT",
                       v->port, v->address_from, strerror(err));
  *out = fd;
  return RONDO_SUCCESS;
}

rondo_status_t launch_endpoint_listen(const launch_vars_t *v, int *fd)
{
  return v->local ? listen_unix(v, fd) : listen_tcp(v, fd);
}

void launch_endpoint_close(const launch_vars_t *v, int fd)
{
  if (fd < 0)
    return;
  close(fd);
  if (v->local)
    unlink(v->path);
}

int launch_endpoint_peer(const launch_vars_t *v, int fd, char *buf, size_t len)
{
  if (v->local) {
    struct ucred cred;
    socklen_t clen = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
      snprintf(buf, len, "a local process");
      return -1;
    }
    snprintf(buf, len, "local process %ld of uid %ld", (long)cred.pid, (long)cred.uid);
    return cred.uid == geteuid() ? 0 : -1;
  }
  struct sockaddr_storage ss;
  socklen_t slen = sizeof ss;
  char host[INET6_ADDRSTRLEN] = "?", serv[16] = "?";
  if (getpeername(fd, (struct sockaddr *)&ss, &slen) == 0)
    getnameinfo((struct sockaddr *)&ss, slen, host, sizeof host, serv, sizeof serv,
                NI_NUMERICHOST | NI_NUMERICSERV);
  snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
  return 0;
}

/* One attempt to connect to addr, waiting at most until deadline. */
static int connect_once(int family, const struct sockaddr *addr, socklen_t alen, double deadline)
{
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, addr, alen) != 0) {
    if (errno != EINPROGRESS) {
      int err = errno;
      close(fd);
      errno = err;
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

rondo_status_t launch_endpoint_connect(const launch_vars_t *v, double deadline, int *out)
{
  char port[16], name[LAUNCH_HOST_MAX + 32];
  snprintf(port, sizeof port, "%d", v->port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  struct sockaddr_un un = {.sun_family = AF_UNIX};
  snprintf(un.sun_path, sizeof un.sun_path, "%s", v->path);
  const char *why = "no answer";
  for (;;) {
    if (v->local) {
      int fd = connect_once(AF_UNIX, (struct sockaddr *)&un, sizeof un, deadline);
      if (fd >= 0) {
        *out = fd;
        return RONDO_SUCCESS;
      }
      why = strerror(errno);
    } else {
      int rc = getaddrinfo(v->host, port, &hints, &res);
      if (rc != 0) {
        why = gai_strerror(rc);
      } else {
        for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
          int fd = connect_once(ai->ai_family, ai->ai_addr, ai->ai_addrlen, deadline);
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
    }
    if (rondo__now() + 0.1 >= deadline)
      break;
    struct timespec tenth = {0, 100 * 1000 * 1000};
    nanosleep(&tenth, NULL);
  }
  return rondo__fail(RONDO_ERR_LAUNCH,
                     "rank %d could not reach the rendezvous at %s (%s) within %g s "
                     "(RONDO_RENDEZVOUS_TIMEOUT_SEC): is rank 0 running, and is the address "
                     "right? It came from %s. %s",
                     v->rank, launch_endpoint_name(v, name, sizeof name), why, v->timeout_sec,
                     v->address_from,
                     v->keyed ? "This rank has a key, so it looks for TCP: does rank 0 have "
                                "the same RONDO_RENDEZVOUS_KEY?"
                     : v->local ? "This rank has no key and its job is on one host, so it "
                                  "looks for rank 0's Unix socket: does rank 0 have a "
                                  "RONDO_RENDEZVOUS_KEY this rank lacks?"
                                : "");
}
