/*
 * Rank 0's rendezvous server: a thread that
 *  1. waits until every rank has said hello (rendezvous.c), checks that the
 *     ranks agree (one of each rank, the same world size, the same attempt)
 *     and sends each its welcome, or every rank the reason the job cannot
 *     form, naming the ranks that never came;
 *  2. then answers MPI's process-manager questions in PMI-1, MPICH's simple
 *     wire protocol (one "cmd=... key=value ..." line each way): the world's
 *     size and rank are in the environment, the node map is the
 *     PMI_process_mapping key, and MPI exchanges its own addresses through
 *     put, barrier_in and get;
 *  3. ends when every rank has finalized, or at once when a rank leaves
 *     without finalizing or aborts: it closes every connection, and every
 *     rank's watcher (watch.c) ends that rank, so no rank waits for one
 *     that is gone.
 * It waits in poll() and does nothing between messages.
 */
#define _GNU_SOURCE /* accept4, pipe2, strndup */
#include "launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { LINE_MAX_BYTES = 65536, KEY_MAX = 64, VAL_MAX = 1024 };

typedef struct {
  int fd;
  int rank;        /* -1 until its hello is accepted */
  int hello;       /* it said hello: it hears why the job cannot form */
  int finalized;
  int in_barrier;
  char host[LAUNCH_HOST_MAX];
  char *buf;       /* bytes read and not yet a whole line */
  size_t used;
} client_t;

typedef struct {
  char key[KEY_MAX];
  char *value;
} kv_t;

static struct {
  pthread_t thread;
  int running;
  int listen_fd;
  int stop[2];     /* a byte on stop[1] ends the thread (launch_serve_join's give-up) */
  int size;
  double deadline; /* of the hello phase */
  double timeout_sec;
  char run[160];
  client_t *clients;
  int nclients, cap;
  int welcomed;    /* every rank arrived: PMI from now on */
  int done;        /* the thread's own: its work is over */
  int exited;      /* under lock: the thread is about to return */
  kv_t *kvs;
  int nkv, kvcap;
  char kvsname[64];
  pthread_mutex_t lock;
  pthread_cond_t finished;
} srv = {.listen_fd = -1, .stop = {-1, -1},
         .lock = PTHREAD_MUTEX_INITIALIZER, .finished = PTHREAD_COND_INITIALIZER};

/* Why the job broke, as the server saw it: kept here and asked for by this
 * process's watcher (watch.c, launch_serve_why), which thus depends on the
 * server and not the other way round. */
static struct {
  pthread_mutex_t lock;
  char why[512]; /* "" until the job breaks */
  int status;    /* the exit status to end with (0: the watcher's default) */
} broke = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void note_broke(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_broke(int status, const char *fmt, ...)
{
  pthread_mutex_lock(&broke.lock);
  broke.status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(broke.why, sizeof broke.why, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&broke.lock);
}

int launch_serve_why(char *why, size_t len)
{
  pthread_mutex_lock(&broke.lock);
  snprintf(why, len, "%s", broke.why);
  int status = broke.status;
  pthread_mutex_unlock(&broke.lock);
  return status;
}

static void send_line(client_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void send_line(client_t *c, const char *fmt, ...)
{
  char line[VAL_MAX + 512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n > sizeof line - 2)
    n = (int)sizeof line - 2;
  line[n++] = '\n';
  for (int off = 0; off < n;) {
    ssize_t w = send(c->fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);
    if (w <= 0) {
      if (w < 0 && errno == EINTR)
        continue;
      return; /* it is gone; its end of file tells the loop */
    }
    off += (int)w;
  }
}

static void drop_client(int i)
{
  close(srv.clients[i].fd);
  free(srv.clients[i].buf);
  srv.clients[i] = srv.clients[--srv.nclients];
}

static void close_all(void)
{
  while (srv.nclients > 0)
    drop_client(srv.nclients - 1);
}

/* "1, 3, 5-7": the ranks in [0, size) that no client holds. */
static void missing_ranks(char *buf, size_t len)
{
  char *seen = calloc((size_t)srv.size, 1);
  buf[0] = '\0';
  if (seen == NULL)
    return;
  for (int i = 0; i < srv.nclients; i++)
    if (srv.clients[i].rank >= 0)
      seen[srv.clients[i].rank] = 1;
  size_t n = 0;
  for (int r = 0; r < srv.size && n + 32 < len; r++) {
    if (seen[r])
      continue;
    int e = r;
    while (e + 1 < srv.size && !seen[e + 1])
      e++;
    n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? ", " : "", r);
    if (e > r)
      n += (size_t)snprintf(buf + n, len - n, "-%d", e);
    r = e;
  }
  free(seen);
}

/* The job cannot form: every rank that arrived hears why. */
static void fail_job(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_job(const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (int i = 0; i < srv.nclients; i++)
    if (srv.clients[i].hello)
      send_line(&srv.clients[i], "cmd=rondo_welcome rc=1 msg=%s", msg);
  close_all();
  srv.done = 1;
}

static const char *word(const char *line, const char *key, char *out, size_t len)
{
  size_t klen = strlen(key);
  for (const char *p = line; (p = strstr(p, key)) != NULL; p++) {
    if ((p == line || p[-1] == ' ') && p[klen] == '=') {
      p += klen + 1;
      size_t n = strcspn(p, " ");
      if (n >= len)
        n = len - 1;
      memcpy(out, p, n);
      out[n] = '\0';
      return out;
    }
  }
  return NULL;
}

static int find_host(char (*hosts)[LAUNCH_HOST_MAX], int n, const char *h)
{
  for (int i = 0; i < n; i++)
    if (strcmp(hosts[i], h) == 0)
      return i;
  return -1;
}

static void kv_put(const char *key, const char *value)
{
  for (int i = 0; i < srv.nkv; i++)
    if (strcmp(srv.kvs[i].key, key) == 0) {
      char *v = strdup(value);
      if (v != NULL) {
        free(srv.kvs[i].value);
        srv.kvs[i].value = v;
      }
      return;
    }
  if (srv.nkv == srv.kvcap) {
    int cap = srv.kvcap ? 2 * srv.kvcap : 64;
    kv_t *k = realloc(srv.kvs, (size_t)cap * sizeof *k);
    if (k == NULL)
      return;
    srv.kvs = k;
    srv.kvcap = cap;
  }
  snprintf(srv.kvs[srv.nkv].key, KEY_MAX, "%s", key);
  srv.kvs[srv.nkv].value = strdup(value);
  if (srv.kvs[srv.nkv].value != NULL)
    srv.nkv++;
}

static const char *kv_get(const char *key)
{
  for (int i = 0; i < srv.nkv; i++)
    if (strcmp(srv.kvs[i].key, key) == 0)
      return srv.kvs[i].value;
  return NULL;
}

/* Every rank is here: number the nodes by their hosts in rank order, write
 * the node map MPICH reads, and welcome each rank. */
static void welcome_all(void)
{
  char(*hosts)[LAUNCH_HOST_MAX] = calloc((size_t)srv.size, LAUNCH_HOST_MAX);
  int *node = calloc((size_t)srv.size, sizeof *node);
  int *by_rank = calloc((size_t)srv.size, sizeof *by_rank);
  if (hosts == NULL || node == NULL || by_rank == NULL) {
    free(hosts), free(node), free(by_rank);
    fail_job("out of memory on rank 0");
    return;
  }
  for (int i = 0; i < srv.nclients; i++)
    by_rank[srv.clients[i].rank] = i;
  int nodes = 0;
  for (int r = 0; r < srv.size; r++) {
    const char *h = srv.clients[by_rank[r]].host;
    int n = find_host(hosts, nodes, h);
    if (n < 0) {
      n = nodes++;
      snprintf(hosts[n], LAUNCH_HOST_MAX, "%s", h);
    }
    node[r] = n;
  }
  /* (vector,(node,1,run),...): each run of consecutive ranks on one node.
   * A map too long for one value is left out; MPICH then compares host
   * names itself. */
  char map[VAL_MAX];
  size_t m = (size_t)snprintf(map, sizeof map, "(vector");
  for (int r = 0; r < srv.size && m < sizeof map;) {
    int e = r;
    while (e + 1 < srv.size && node[e + 1] == node[r])
      e++;
    m += (size_t)snprintf(map + m, sizeof map - m, ",(%d,1,%d)", node[r], e - r + 1);
    r = e + 1;
  }
  if (m + 2 < sizeof map) {
    snprintf(map + m, sizeof map - m, ")");
    kv_put("PMI_process_mapping", map);
  }
  for (int i = 0; i < srv.nclients; i++) {
    int r = srv.clients[i].rank, local = 0, local_size = 0;
    for (int q = 0; q < srv.size; q++)
      if (node[q] == node[r]) {
        local_size++;
        local += q < r;
      }
    send_line(&srv.clients[i], "cmd=rondo_welcome rc=0 nodes=%d local_rank=%d local_size=%d",
              nodes, local, local_size);
  }
  LOG_DEBUG("rendezvous: %d ranks on %d nodes arrived; node map %s", srv.size, nodes,
            kv_get("PMI_process_mapping") ? kv_get("PMI_process_mapping") : "(too long)");
  srv.welcomed = 1;
  free(hosts), free(node), free(by_rank);
}

/* A hello from client i. */
static void on_hello(int i, const char *line)
{
  client_t *c = &srv.clients[i];
  char rank[32], size[32], run[160];
  if (word(line, "rank", rank, sizeof rank) == NULL ||
      word(line, "size", size, sizeof size) == NULL ||
      word(line, "host", c->host, sizeof c->host) == NULL ||
      word(line, "run", run, sizeof run) == NULL) {
    drop_client(i); /* not one of ours */
    return;
  }
  int r = atoi(rank), n = atoi(size);
  c->hello = 1;
  if (strcmp(run, srv.run) != 0) {
    /* a process of another attempt (an earlier torchrun restart, say) */
    send_line(c,
              "cmd=rondo_welcome rc=1 msg=this process belongs to attempt %s, but rank 0 "
              "serves attempt %s",
              run, srv.run);
    drop_client(i);
    return;
  }
  if (n != srv.size) {
    fail_job("rank %d (host %s) says the world has %d processes, rank 0 says %d: check "
             "WORLD_SIZE on every rank",
             r, c->host, n, srv.size);
    return;
  }
  for (int j = 0; j < srv.nclients; j++)
    if (srv.clients[j].rank == r) {
      fail_job("two processes say they are rank %d (on hosts %s and %s): check RANK on "
               "every rank",
               r, srv.clients[j].host, c->host);
      return;
    }
  if (r < 0 || r >= srv.size) {
    fail_job("a process on host %s says it is rank %d of %d", c->host, r, srv.size);
    return;
  }
  c->rank = r;
  LOG_DEBUG("rendezvous: rank %d arrived from host %s", r, c->host);
  int arrived = 0;
  for (int j = 0; j < srv.nclients; j++)
    arrived += srv.clients[j].rank >= 0;
  if (arrived == srv.size)
    welcome_all();
}

static void barrier_check(void)
{
  int in = 0;
  for (int i = 0; i < srv.nclients; i++)
    in += srv.clients[i].in_barrier;
  if (in < srv.size)
    return;
  for (int i = 0; i < srv.nclients; i++) {
    srv.clients[i].in_barrier = 0;
    send_line(&srv.clients[i], "cmd=barrier_out");
  }
}

/* One PMI-1 command from client i. */
static void on_pmi(int i, const char *line)
{
  client_t *c = &srv.clients[i];
  char cmd[64], key[KEY_MAX] = "", *value = NULL;
  if (word(line, "cmd", cmd, sizeof cmd) == NULL)
    return;
  if (strcmp(cmd, "init") == 0) {
    send_line(c, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
  } else if (strcmp(cmd, "get_maxes") == 0) {
    send_line(c, "cmd=maxes kvsname_max=%d keylen_max=%d vallen_max=%d", 64, KEY_MAX,
              VAL_MAX);
  } else if (strcmp(cmd, "get_appnum") == 0) {
    send_line(c, "cmd=appnum appnum=0");
  } else if (strcmp(cmd, "get_universe_size") == 0) {
    send_line(c, "cmd=universe_size size=%d", srv.size);
  } else if (strcmp(cmd, "get_my_kvsname") == 0) {
    send_line(c, "cmd=my_kvsname kvsname=%s", srv.kvsname);
  } else if (strcmp(cmd, "put") == 0) {
    const char *v = strstr(line, " value=");
    if (word(line, "key", key, sizeof key) == NULL || v == NULL) {
      send_line(c, "cmd=put_result rc=-1 msg=put needs a key and a value");
      return;
    }
    value = strndup(v + 7, strcspn(v + 7, " "));
    if (value != NULL)
      kv_put(key, value);
    free(value);
    send_line(c, "cmd=put_result rc=0 msg=success");
  } else if (strcmp(cmd, "get") == 0) {
    const char *v = word(line, "key", key, sizeof key) ? kv_get(key) : NULL;
    if (v != NULL)
      send_line(c, "cmd=get_result rc=0 msg=success value=%s", v);
    else
      send_line(c, "cmd=get_result rc=-1 msg=key_%s_not_found", key);
  } else if (strcmp(cmd, "barrier_in") == 0) {
    c->in_barrier = 1;
    barrier_check();
  } else if (strcmp(cmd, "finalize") == 0) {
    c->finalized = 1;
    send_line(c, "cmd=finalize_ack");
  } else if (strcmp(cmd, "abort") == 0) {
    char code[32] = "?";
    word(line, "exitcode", code, sizeof code);
    int status = atoi(code);
    note_broke(status > 0 && status < 256 ? status : 0,
               "rank %d aborted the job (MPI_Abort, exit code %s)", c->rank, code);
    close_all();
    srv.done = 1;
  } else {
    LOG_INFO("rendezvous: rank %d asked for '%s', which rondo's PMI server does not serve",
             c->rank, cmd);
    send_line(c, "cmd=%s_result rc=-1 msg=unsupported", cmd);
  }
}

/* A whole line from client i (which it may drop). */
static void on_line(int i, const char *line)
{
  if (srv.clients[i].rank < 0) {
    if (strncmp(line, "cmd=rondo_hello ", 16) == 0 && !srv.welcomed)
      on_hello(i, line);
    else if (strncmp(line, "cmd=rondo_hello ", 16) == 0) {
      send_line(&srv.clients[i],
                "cmd=rondo_welcome rc=1 msg=the job of attempt %s has already formed without "
                "this process",
                srv.run);
      drop_client(i);
    } else {
      drop_client(i);
    }
    return;
  }
  on_pmi(i, line);
}

/* Reads what client i sent and handles its whole lines. End of file: a rank
 * that finalized is done; one that did not has left the job. */
static void on_readable(int i)
{
  client_t *c = &srv.clients[i];
  if (c->buf == NULL && (c->buf = malloc(LINE_MAX_BYTES)) == NULL) {
    drop_client(i);
    return;
  }
  ssize_t got = read(c->fd, c->buf + c->used, LINE_MAX_BYTES - 1 - c->used);
  if (got <= 0) {
    if (got < 0 && errno == EINTR)
      return;
    int rank = c->rank, finalized = c->finalized;
    drop_client(i);
    if (srv.welcomed && !finalized) {
      note_broke(0, "rank %d left the job before MPI_Finalize (its connection to the "
                    "rendezvous closed)", rank);
      close_all();
      srv.done = 1;
    }
    return;
  }
  c->used += (size_t)got;
  c->buf[c->used] = '\0';
  char *start = c->buf, *nl;
  int fd = c->fd;
  while ((nl = strchr(start, '\n')) != NULL) {
    *nl = '\0';
    on_line(i, start);
    if (srv.done || i >= srv.nclients || srv.clients[i].fd != fd)
      return; /* dropped, or everything closed */
    start = nl + 1;
  }
  c->used = (size_t)(c->buf + c->used - start);
  memmove(c->buf, start, c->used);
  if (c->used >= LINE_MAX_BYTES - 1)
    drop_client(i); /* a line this long is not PMI */
}

static void accept_client(void)
{
  int fd = accept4(srv.listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  if (srv.nclients == srv.cap) {
    int cap = srv.cap ? 2 * srv.cap : srv.size + 8;
    client_t *c = realloc(srv.clients, (size_t)cap * sizeof *c);
    if (c == NULL || cap > 4 * srv.size + 64) {
      if (c != NULL)
        srv.clients = c;
      close(fd);
      return;
    }
    srv.clients = c;
    srv.cap = cap;
  }
  srv.clients[srv.nclients++] = (client_t){.fd = fd, .rank = -1};
}

static int all_finalized(void)
{
  int n = 0;
  for (int i = 0; i < srv.nclients; i++)
    n += srv.clients[i].finalized;
  return srv.welcomed && srv.nclients == n;
}

static void *serve(void *arg)
{
  (void)arg;
  struct pollfd *p = NULL;
  while (!srv.done) {
    if (srv.welcomed && all_finalized())
      break;
    int n = srv.nclients + 2;
    struct pollfd *q = realloc(p, (size_t)n * sizeof *q);
    if (q == NULL)
      break;
    p = q;
    p[0] = (struct pollfd){srv.stop[0], POLLIN, 0};
    p[1] = (struct pollfd){srv.listen_fd, POLLIN, 0};
    for (int i = 0; i < srv.nclients; i++)
      p[i + 2] = (struct pollfd){srv.clients[i].fd, POLLIN, 0};
    int wait_ms = -1;
    if (!srv.welcomed) {
      double left = srv.deadline - rondo__now();
      if (left <= 0) {
        char missing[512];
        missing_ranks(missing, sizeof missing);
        fail_job("rank%s %s did not arrive within %g s (RONDO_RENDEZVOUS_TIMEOUT_SEC)",
                 strchr(missing, ',') || strchr(missing, '-') ? "s" : "", missing,
                 srv.timeout_sec);
        break;
      }
      wait_ms = (int)(left * 1000) + 1;
    }
    int rc = poll(p, (nfds_t)n, wait_ms);
    if (rc < 0 && errno != EINTR)
      break;
    if (rc <= 0)
      continue;
    if (p[0].revents)
      break;
    /* Clients first, by their fds: handling one may drop others. */
    for (int k = 2; k < n && !srv.done; k++) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      for (int i = 0; i < srv.nclients; i++)
        if (srv.clients[i].fd == p[k].fd) {
          on_readable(i);
          break;
        }
    }
    if (!srv.done && (p[1].revents & POLLIN))
      accept_client();
  }
  free(p);
  close_all();
  pthread_mutex_lock(&srv.lock);
  srv.exited = 1;
  pthread_cond_broadcast(&srv.finished);
  pthread_mutex_unlock(&srv.lock);
  return NULL;
}

rondo_status_t launch_serve(const launch_vars_t *v)
{
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int v6 = fd >= 0;
  if (fd < 0)
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return rondo__fail(RONDO_ERR_LAUNCH, "rank 0: no socket for the rendezvous: %s",
                       strerror(errno));
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero); /* IPv4 too */
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)v->port),
                             .sin6_addr = in6addr_any};
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  } else {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)v->port),
                            .sin_addr.s_addr = htonl(INADDR_ANY)};
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  }
  if (rc != 0 || listen(fd, 1024) != 0) {
    int err = errno;
    close(fd);
    return rondo__fail(RONDO_ERR_LAUNCH,
                       "rank 0 cannot listen on port %d for the rendezvous (from %s): %s; "
                       "choose a free one with RONDO_RENDEZVOUS=HOST:PORT",
                       v->port, v->address_from, strerror(err));
  }
  if (pipe2(srv.stop, O_CLOEXEC) != 0) {
    close(fd);
    return rondo__fail(RONDO_ERR_LAUNCH, "rank 0: pipe: %s", strerror(errno));
  }
  srv.listen_fd = fd;
  srv.size = v->size;
  srv.timeout_sec = v->timeout_sec;
  srv.deadline = rondo__now() + v->timeout_sec;
  snprintf(srv.run, sizeof srv.run, "%s", v->run_id[0] ? v->run_id : "-");
  for (char *p = srv.run; *p; p++)
    if (*p == ' ' || *p == '=')
      *p = '_';
  snprintf(srv.kvsname, sizeof srv.kvsname, "rondo_%ld", (long)getpid());
  srv.done = srv.welcomed = srv.exited = 0;
  if (pthread_create(&srv.thread, NULL, serve, NULL) != 0) {
    close(fd), close(srv.stop[0]), close(srv.stop[1]);
    srv.listen_fd = srv.stop[0] = srv.stop[1] = -1;
    return rondo__fail(RONDO_ERR_LAUNCH, "rank 0: cannot start the rendezvous thread");
  }
  srv.running = 1;
  return RONDO_SUCCESS;
}

int launch_serve_join(double timeout_sec)
{
  if (!srv.running)
    return 0;
  int gave_up = 0;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)timeout_sec + 1;
  pthread_mutex_lock(&srv.lock);
  while (!srv.exited)
    if (pthread_cond_timedwait(&srv.finished, &srv.lock, &until) != 0)
      break;
  if (!srv.exited) {
    gave_up = 1;
    if (write(srv.stop[1], "x", 1) < 0) { /* the thread then stops at once */
    }
  }
  pthread_mutex_unlock(&srv.lock);
  pthread_join(srv.thread, NULL);
  close(srv.listen_fd), close(srv.stop[0]), close(srv.stop[1]);
  srv.listen_fd = srv.stop[0] = srv.stop[1] = -1;
  for (int i = 0; i < srv.nkv; i++)
    free(srv.kvs[i].value);
  free(srv.kvs), free(srv.clients);
  srv.kvs = NULL, srv.clients = NULL;
  srv.nkv = srv.kvcap = srv.nclients = srv.cap = 0;
  srv.running = 0;
  return gave_up ? -1 : 0;
}
