/*
 * The client side of the rendezvous, run by every rank (rank 0 too, to its
 * own server): connect to rank 0's server (endpoint.c), read its greeting,
 * prove the job's key where it asks (auth.c) and check rank 0's proof in
 * turn, say who this process is, wait until the whole job has said so,
 * then hand the socket to MPI_Init, which speaks PMI-1 on it (PMI_FD).
 *
 * The conversation, one line each:
 *   server  cmd=rondo_greeting version=1 auth=none
 *           (or auth=hmac-sha256 nonce=SERVER_NONCE, and then)
 *   client  cmd=rondo_auth nonce=CLIENT_NONCE mac=CLIENT_MAC
 *   server  cmd=rondo_auth_ok mac=SERVER_MAC (or cmd=rondo_auth_refused)
 *   client  cmd=rondo_hello rank=R size=N host=H run=ID
 *   server  cmd=rondo_welcome rc=0 ... once every rank has arrived, or
 *           cmd=rondo_welcome rc=1 msg=... with the reason it cannot.
 */
#define _GNU_SOURCE
#include "launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

/* A copy of src (not dst itself) for the wire: printable ASCII without
 * spaces or '='. */
static void wire_word(char *dst, size_t len, const char *src)
{
  snprintf(dst, len, "%s", src[0] != '\0' ? src : "-");
  for (unsigned char *p = (unsigned char *)dst; *p != '\0'; p++)
    if (*p <= ' ' || *p > '~' || *p == '=') /* printable ASCII, as the server checks */
      *p = '_';
}

/* The greeting on fd, answered: nothing to do, or the challenge met and
 * rank 0's own proof checked. 1: the server closed the connection without
 * a word, before greeting or after the answer (its strangers' slots were
 * full; connect again). */
static int greet(const launch_vars_t *v, int fd, double deadline, const char *where)
{
  char line[512], nonce[LAUNCH_HEX_LEN + 1], mine[LAUNCH_HEX_LEN + 1];
  char mac[LAUNCH_HEX_LEN + 1], want[LAUNCH_HEX_LEN + 1];
  int rc = read_line(fd, line, sizeof line, deadline);
  if (rc == -2)
    return 1;
  if (rc != 0) {
    rondo__fail(RONDO_ERR_LAUNCH,
                "rank %d: the rendezvous at %s gave no answer in time (is another program "
                "listening on that port?)",
                v->rank, where);
    return -1;
  }
  if (strncmp(line, "cmd=rondo_greeting ", 19) != 0) {
    rondo__fail(RONDO_ERR_LAUNCH, "rank %d: %s is not a rondo rendezvous (it answered '%.60s')",
                v->rank, where, line);
    return -1;
  }
  const char *auth = strstr(line, " auth=");
  if (auth != NULL && strncmp(auth, " auth=none", 10) == 0 && (auth[10] == '\0' || auth[10] == ' ')) {
    if (!v->keyed)
      return 0;
    rondo__fail(RONDO_ERR_LAUNCH,
                "rank %d: the rendezvous at %s asks for no key, but this process has one: "
                "give rank 0 the same RONDO_RENDEZVOUS_KEY (or KEY_FILE), or check that no "
                "other program holds the port",
                v->rank, where);
    return -1;
  }
  const char *n = strstr(line, " nonce=");
  if (auth == NULL || strncmp(auth, " auth=hmac-sha256 ", 18) != 0 || n == NULL ||
      snprintf(nonce, sizeof nonce, "%.64s", n + 7) != LAUNCH_HEX_LEN ||
      !launch_auth_is_hex(nonce)) {
    rondo__fail(RONDO_ERR_LAUNCH,
                "rank %d: the rendezvous at %s asks for an authentication this rondo does not "
                "speak ('%.80s'): is rank 0 another version of rondo?",
                v->rank, where, line);
    return -1;
  }
  if (!v->keyed) {
    rondo__fail(RONDO_ERR_LAUNCH,
                "rank %d: the rendezvous at %s asks for the job's key, and this process has "
                "none: set the same RONDO_RENDEZVOUS_KEY (or RONDO_RENDEZVOUS_KEY_FILE) on "
                "every rank",
                v->rank, where);
    return -1;
  }
  if (launch_auth_nonce(mine) != 0 || launch_auth_mac("client", nonce, mine, mac) != 0 ||
      launch_auth_mac("server", nonce, mine, want) != 0) {
    rondo__fail(RONDO_ERR_LAUNCH, "rank %d: no random bytes or no key for the handshake",
                v->rank);
    return -1;
  }
  int len = snprintf(line, sizeof line, "cmd=rondo_auth nonce=%s mac=%s\n", mine, mac);
  if (write(fd, line, (size_t)len) != len)
    return 1; /* closed meanwhile: connect again */
  rc = read_line(fd, line, sizeof line, deadline);
  if (rc == -2)
    return 1; /* closed without a word: rank 0 was crowded; connect again */
  if (rc != 0 || strcmp(line, "cmd=rondo_auth_refused") == 0) {
    rondo__fail(RONDO_ERR_LAUNCH,
                "rank %d: the rendezvous at %s refused this process's key: give every rank "
                "the same RONDO_RENDEZVOUS_KEY (or RONDO_RENDEZVOUS_KEY_FILE)",
                v->rank, where);
    return -1;
  }
  const char *m = strstr(line, " mac=");
  if (strncmp(line, "cmd=rondo_auth_ok ", 18) != 0 || m == NULL ||
      !launch_auth_equal(m + 5, want)) {
    rondo__fail(RONDO_ERR_LAUNCH,
                "rank %d: the rendezvous at %s could not prove it holds the job's key: it is "
                "not this job's rank 0 (another job's, or an impostor on its port)",
                v->rank, where);
    return -1;
  }
  return 0;
}

rondo_status_t launch_join(const launch_vars_t *v, int *fdp)
{
  double deadline = rondo__now() + v->timeout_sec;
  char where[LAUNCH_HOST_MAX + LAUNCH_PATH_MAX];
  launch_endpoint_name(v, where, sizeof where);
  int fd = -1;
  double handshake = 0; /* connecting and the greeting, for the log */
  for (;;) {
    double t0 = rondo__now();
    RONDO_CHECK(launch_endpoint_connect(v, deadline, &fd));
    int rc = greet(v, fd, deadline, where);
    handshake = rondo__now() - t0;
    if (rc == 0)
      break;
    close(fd);
    if (rc < 0)
      return RONDO_ERR_LAUNCH; /* greet said why */
    if (rondo__now() + 0.1 >= deadline)
      return rondo__fail(RONDO_ERR_LAUNCH,
                         "rank %d: the rendezvous at %s closed the connection without an "
                         "answer until the timeout (is another program listening on that "
                         "port?)",
                         v->rank, where);
    struct timespec tenth = {0, 100 * 1000 * 1000};
    nanosleep(&tenth, NULL); /* closed before its greeting: rank 0 was busy; again */
  }

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
    return rondo__fail(RONDO_ERR_LAUNCH, "rank %d: the rendezvous at %s closed: %s", v->rank,
                       where, strerror(errno));
  }
  /* The server answers once every rank arrived, or at its own deadline,
   * which is close to ours: give it a little longer to say why. */
  int rc = read_line(fd, line, sizeof line, deadline + 5);
  if (rc != 0) {
    close(fd);
    return rondo__fail(RONDO_ERR_LAUNCH, "rank %d: the rendezvous at %s %s", v->rank, where,
                       rc == -2 ? "closed the connection without a welcome"
                                : "gave no welcome in time");
  }
  if (strncmp(line, "cmd=rondo_welcome rc=0", 22) != 0) {
    close(fd);
    const char *msg = strstr(line, "msg=");
    if (strncmp(line, "cmd=rondo_welcome", 17) != 0 || msg == NULL)
      return rondo__fail(RONDO_ERR_LAUNCH,
                         "rank %d: %s is not a rondo rendezvous (it answered '%.60s')",
                         v->rank, where, line);
    return rondo__fail(RONDO_ERR_LAUNCH, "the job could not form: %s", msg + 4);
  }
  char num[32];
  snprintf(num, sizeof num, "%d", fd);
  setenv("PMI_FD", num, 1);
  snprintf(num, sizeof num, "%d", v->rank);
  setenv("PMI_RANK", num, 1);
  snprintf(num, sizeof num, "%d", v->size);
  setenv("PMI_SIZE", num, 1);
  LOG_DEBUG("joined the rendezvous at %s as rank %d of %d (%s: %.3f ms to connect and be "
            "greeted%s; %.3f ms until the welcome)",
            where, v->rank, v->size, v->keyed ? "key proven" : "no key", handshake * 1e3,
            v->keyed ? " and prove the key both ways" : "",
            (rondo__now() - (deadline - v->timeout_sec)) * 1e3);
  *fdp = fd;
  return RONDO_SUCCESS;
}

void launch_forget_env(void)
{
  unsetenv("PMI_FD");
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
}
