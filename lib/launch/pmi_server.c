/*
 * Rank 0's rendezvous server: a thread that
 *  1. admits the job's ranks and nobody else (docs/launching.md#who-can-join):
 *     every connection first hears a greeting; with a key it must answer
 *     the challenge in it (auth.c) and then say hello, within
 *     HANDSHAKE_SEC; a Unix-domain peer must be this user (endpoint.c).
 *     Until then it is a stranger: strangers have slots of their own (the
 *     oldest gives way to a newcomer), and nothing a stranger does, closing
 *     included, touches the job. A hello that names a rank already taken,
 *     another world size or another attempt is turned away and logged, and
 *     the job waits on for the real rank;
 *  2. once every rank has arrived, sends each its welcome (or, at the
 *     timeout, every rank the reason the job cannot form, naming the ranks
 *     that never came), and stops listening;
 *  3. then answers MPI's process-manager questions in PMI-1, MPICH's simple
 *     wire protocol (one "cmd=... key=value ..." line each way): the world's
 *     size and rank are in the environment, the node map is the
 *     PMI_process_mapping key, and MPI exchanges its own addresses through
 *     put, barrier_in and get (a rank writes only its own keys);
 *  4. ends when every rank has finalized, or at once when a rank leaves
 *     without finalizing or aborts: it closes every connection, and every
 *     rank's watcher (watch.c) ends that rank, so no rank waits for one
 *     that is gone.
 * Every value from the wire is checked before use; no send blocks (a peer
 * that does not read is dropped). It waits in poll() and does nothing
 * between messages.
 */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
  LINE_MAX_BYTES = 65536, /* a longer line is nobody's */
  KEY_MAX = 64,           /* PMI key and value sizes, as told to MPI */
  VAL_MAX = 1024,
  STRANGERS_MAX = 64,     /* connections not yet admitted */
  HANDSHAKE_SEC = 5,      /* a stranger's time to prove the key and say hello */
  REFUSED_LOGGED = 8      /* refusals logged one by one; the rest are counted */
};

typedef enum {
  AWAIT_AUTH,  /* greeted with a challenge: the answer comes next */
  AWAIT_HELLO, /* the hello comes next */
  RANKED       /* admitted: one of the job's ranks */
} phase_t;

typedef struct {
  int fd;
  phase_t phase;
  int rank;        /* -1 until admitted */
  int finalized;
  int in_barrier;
  const char *dead; /* why it is to be dropped (the loop's sweep does it), or NULL */
  double since;    /* when it connected */
  char nonce[LAUNCH_HEX_LEN + 1]; /* the challenge it was sent */
  char peer[128];  /* who connected, for the log */
  char host[LAUNCH_HOST_MAX];
  char *buf;       /* bytes read and not yet a whole line */
  size_t used;
} client_t;

typedef struct {
  char key[KEY_MAX];
  char *value;
  int owner; /* the rank that put it; -1: the server's */
} kv_t;

static struct {
  pthread_t thread;
  int running;
  int listen_fd;
  int stop[2];     /* a byte on stop[1] ends the thread (launch_serve_join's give-up) */
  launch_vars_t v; /* where it serves, and the job's size */
  int size;
  double deadline; /* of the hello phase */
  char run[160];
  client_t *clients;
  int nclients, cap;
  int welcomed;    /* every rank arrived: PMI from now on */
  int finalized;   /* ranks that said finalize */
  int done;        /* the thread's own: its work is over */
  int exited;      /* under lock: the thread is about to return */
  int refused;     /* connections that did not prove the key, or another user's */
  char turned_away[512]; /* the last hello turned away, for the timeout's message */
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

/* One line to client c, never blocking: a client that does not take it
 * whole (it stopped reading, or left) is marked to be dropped. */
static void send_line(client_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void send_line(client_t *c, const char *fmt, ...)
{
  char line[VAL_MAX + 512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0 || c->dead != NULL)
    return;
  if ((size_t)n > sizeof line - 2)
    n = (int)sizeof line - 2;
  line[n++] = '\n';
  for (int off = 0; off < n;) {
    ssize_t w = send(c->fd, line + off, (size_t)(n - off), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      c->dead = errno == EAGAIN ? "it stopped reading from the rendezvous"
                                : "its connection to the rendezvous closed";
      return;
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

/* A refused connection: logged one by one up to REFUSED_LOGGED, then
 * counted (said at the end of the hello phase). One that failed the
 * challenge hears that it did (and nothing about the job), so that a rank
 * with the wrong key stops instead of connecting again. */
static void refuse(client_t *c, const char *why)
{
  if (c->phase == AWAIT_AUTH && c->nonce[0] != '\0') /* it was challenged */
    send_line(c, "cmd=rondo_auth_refused");
  srv.refused++;
  if (srv.refused <= REFUSED_LOGGED)
    LOG_WARN("rendezvous: refused %s: %s%s", c->peer, why,
             srv.refused == REFUSED_LOGGED ? " (further refusals are only counted)" : "");
  c->dead = why;
}

/* "1, 3, 5-7": the ranks in [0, size) no admitted client holds. */
static void missing_ranks(char *buf, size_t len)
{
  char *seen = calloc((size_t)srv.size, 1);
  buf[0] = '\0';
  if (seen == NULL)
    return;
  for (int i = 0; i < srv.nclients; i++)
    if (srv.clients[i].phase == RANKED)
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

/* The job cannot form: every admitted rank hears why. */
static void fail_job(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_job(const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (int i = 0; i < srv.nclients; i++)
    if (srv.clients[i].phase == RANKED)
      send_line(&srv.clients[i], "cmd=rondo_welcome rc=1 msg=%s", msg);
  close_all();
  srv.done = 1;
}

/* The value of " key=" in line into out (len bytes with its NUL), or NULL
 * when it is missing or does not fit. */
static const char *word(const char *line, const char *key, char *out, size_t len)
{
  size_t klen = strlen(key);
  for (const char *p = line; (p = strstr(p, key)) != NULL; p++) {
    if ((p == line || p[-1] == ' ') && p[klen] == '=') {
      p += klen + 1;
      size_t n = strcspn(p, " ");
      if (n >= len)
        return NULL;
      memcpy(out, p, n);
      out[n] = '\0';
      return out;
    }
  }
  return NULL;
}

/* A whole decimal number in [lo, hi] from text, or -1. */
static int number(const char *text, long lo, long hi, int *out)
{
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (text[0] == '\0' || end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

/* A host name as a hello may carry it: 1 to LAUNCH_HOST_MAX - 1 printable
 * bytes (the client replaced spaces and '='). */
static int plain_word(const char *s)
{
  if (s[0] == '\0')
    return 0;
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
    if (*p <= ' ' || *p > '~' || *p == '=')
      return 0;
  return 1;
}

static int find_host(char (*hosts)[LAUNCH_HOST_MAX], int n, const char *h)
{
  for (int i = 0; i < n; i++)
    if (strcmp(hosts[i], h) == 0)
      return i;
  return -1;
}

static kv_t *kv_find(const char *key)
{
  for (int i = 0; i < srv.nkv; i++)
    if (strcmp(srv.kvs[i].key, key) == 0)
      return &srv.kvs[i];
  return NULL;
}

/* Stores key = value for owner (a rank, or -1 for the server); NULL when
 * stored, else why not. A rank writes its own keys only, and the store
 * holds at most 64 keys a rank. */
static const char *kv_put(const char *key, const char *value, int owner)
{
  kv_t *kv = kv_find(key);
  if (kv != NULL && kv->owner != owner)
    return "another rank's key";
  char *copy = strdup(value);
  if (copy == NULL)
    return "out of memory";
  if (kv != NULL) {
    free(kv->value);
    kv->value = copy;
    return NULL;
  }
  if (srv.nkv >= 64 * srv.size + 64) {
    free(copy);
    return "the store is full";
  }
  if (srv.nkv == srv.kvcap) {
    int cap = srv.kvcap ? 2 * srv.kvcap : 64;
    kv_t *k = realloc(srv.kvs, (size_t)cap * sizeof *k);
    if (k == NULL) {
      free(copy);
      return "out of memory";
    }
    srv.kvs = k;
    srv.kvcap = cap;
  }
  snprintf(srv.kvs[srv.nkv].key, KEY_MAX, "%s", key);
  srv.kvs[srv.nkv].value = copy;
  srv.kvs[srv.nkv].owner = owner;
  srv.nkv++;
  return NULL;
}

static const char *kv_get(const char *key)
{
  kv_t *kv = kv_find(key);
  return kv != NULL ? kv->value : NULL;
}

/* Every rank is here: number the nodes by their hosts in rank order, write
 * the node map MPICH reads, welcome each rank, and let nobody else in. */
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
    if (srv.clients[i].phase == RANKED)
      by_rank[srv.clients[i].rank] = i;
    else
      srv.clients[i].dead = "the job formed without it";
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
    kv_put("PMI_process_mapping", map, -1);
  }
  for (int r = 0; r < srv.size; r++) {
    int local = 0, local_size = 0;
    for (int q = 0; q < srv.size; q++)
      if (node[q] == node[r]) {
        local_size++;
        local += q < r;
      }
    send_line(&srv.clients[by_rank[r]],
              "cmd=rondo_welcome rc=0 nodes=%d local_rank=%d local_size=%d", nodes, local,
              local_size);
  }
  LOG_DEBUG("rendezvous: %d ranks on %d nodes arrived; node map %s", srv.size, nodes,
            kv_get("PMI_process_mapping") ? kv_get("PMI_process_mapping") : "(too long)");
  if (srv.refused > REFUSED_LOGGED)
    LOG_WARN("rendezvous: refused %d connections in all while the job formed", srv.refused);
  launch_endpoint_close(&srv.v, srv.listen_fd);
  srv.listen_fd = -1;
  srv.welcomed = 1;
  free(hosts), free(node), free(by_rank);
}

/* The answer to the challenge client c was sent: "cmd=rondo_auth nonce=N mac=M". */
static void on_auth(client_t *c, const char *line)
{
  char cmd[32], nonce[LAUNCH_HEX_LEN + 1], mac[LAUNCH_HEX_LEN + 1];
  char want[LAUNCH_HEX_LEN + 1], proof[LAUNCH_HEX_LEN + 1];
  if (word(line, "cmd", cmd, sizeof cmd) == NULL || strcmp(cmd, "rondo_auth") != 0 ||
      word(line, "nonce", nonce, sizeof nonce) == NULL || !launch_auth_is_hex(nonce) ||
      word(line, "mac", mac, sizeof mac) == NULL || !launch_auth_is_hex(mac)) {
    refuse(c, "it did not answer the key's challenge");
    return;
  }
  if (launch_auth_mac("client", c->nonce, nonce, want) != 0 ||
      launch_auth_mac("server", c->nonce, nonce, proof) != 0) {
    LOG_ERROR("rendezvous: rank 0 holds no key to check %s's with", c->peer);
    c->dead = "rank 0 holds no key";
    return;
  }
  if (!launch_auth_equal(mac, want)) {
    refuse(c, "it does not hold the job's key (RONDO_RENDEZVOUS_KEY)");
    return;
  }
  send_line(c, "cmd=rondo_auth_ok mac=%s", proof);
  c->phase = AWAIT_HELLO;
}

/* A hello that cannot be admitted: client c hears why, rank 0's log too,
 * and the job waits on for the real rank. */
static void turn_away(client_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void turn_away(client_t *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(srv.turned_away, sizeof srv.turned_away, fmt, ap);
  va_end(ap);
  LOG_WARN("rendezvous: turned away %s: %s", c->peer, srv.turned_away);
  send_line(c, "cmd=rondo_welcome rc=1 msg=%s", srv.turned_away);
  c->dead = "turned away";
}

/* "cmd=rondo_hello rank=R size=N host=H run=ID" from client c. */
static void on_hello(client_t *c, const char *line)
{
  char cmd[32], rank[32], size[32], run[160];
  int r = -1, n = -1;
  if (word(line, "cmd", cmd, sizeof cmd) == NULL || strcmp(cmd, "rondo_hello") != 0 ||
      word(line, "rank", rank, sizeof rank) == NULL ||
      word(line, "size", size, sizeof size) == NULL ||
      word(line, "host", c->host, sizeof c->host) == NULL || !plain_word(c->host) ||
      word(line, "run", run, sizeof run) == NULL || !plain_word(run) ||
      number(rank, 0, INT_MAX, &r) != 0 || number(size, 1, INT_MAX, &n) != 0) {
    refuse(c, "it did not say a rondo hello");
    return;
  }
  if (strcmp(run, srv.run) != 0) {
    /* a process of another attempt (an earlier torchrun restart, say) */
    turn_away(c, "rank %d (host %s) belongs to attempt %s, not to the one rank 0 serves", r,
              c->host, run);
    return;
  }
  if (n != srv.size) {
    turn_away(c, "rank %d (host %s) says the world has %d processes, rank 0 says %d: check "
                 "WORLD_SIZE on every rank",
              r, c->host, n, srv.size);
    return;
  }
  if (r >= srv.size) {
    turn_away(c, "a process on host %s says it is rank %d of %d", c->host, r, srv.size);
    return;
  }
  for (int j = 0; j < srv.nclients; j++)
    if (srv.clients[j].phase == RANKED && srv.clients[j].rank == r) {
      turn_away(c, "two processes say they are rank %d (on hosts %s and %s): check RANK on "
                   "every rank",
                r, srv.clients[j].host, c->host);
      return;
    }
  c->rank = r;
  c->phase = RANKED;
  LOG_DEBUG("rendezvous: rank %d arrived from host %s (%s)", r, c->host, c->peer);
  int arrived = 0;
  for (int j = 0; j < srv.nclients; j++)
    arrived += srv.clients[j].phase == RANKED;
  if (arrived == srv.size)
    welcome_all();
}

static void barrier_check(void)
{
  int in = 0;
  for (int i = 0; i < srv.nclients; i++)
    in += srv.clients[i].phase == RANKED && srv.clients[i].in_barrier;
  if (in < srv.size)
    return;
  for (int i = 0; i < srv.nclients; i++) {
    srv.clients[i].in_barrier = 0;
    send_line(&srv.clients[i], "cmd=barrier_out");
  }
}

/* One PMI-1 command from rank client c. */
static void on_pmi(client_t *c, const char *line)
{
  char cmd[64], key[KEY_MAX] = "", value[VAL_MAX];
  if (word(line, "cmd", cmd, sizeof cmd) == NULL) {
    LOG_INFO("rendezvous: rank %d sent a line that is no PMI command", c->rank);
    return;
  }
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
    const char *why = word(line, "key", key, sizeof key) == NULL ||
                              word(line, "value", value, sizeof value) == NULL
                          ? "put needs a key of at most 63 bytes and a value of at most 1023"
                          : kv_put(key, value, c->rank);
    if (why != NULL)
      LOG_INFO("rendezvous: rank %d's put of '%s' refused: %s", c->rank, key, why);
    send_line(c, why == NULL ? "cmd=put_result rc=0 msg=success" : "cmd=put_result rc=-1 msg=%s",
              why);
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
    srv.finalized += !c->finalized;
    c->finalized = 1;
    send_line(c, "cmd=finalize_ack");
  } else if (strcmp(cmd, "abort") == 0) {
    char code[32] = "";
    int status = 0;
    if (word(line, "exitcode", code, sizeof code) == NULL || number(code, 1, 255, &status) != 0)
      status = 0;
    note_broke(status, "rank %d aborted the job (MPI_Abort, exit code %s)", c->rank,
               code[0] ? code : "?");
    close_all();
    srv.done = 1;
  } else {
    LOG_INFO("rendezvous: rank %d asked for '%s', which rondo's PMI server does not serve",
             c->rank, cmd);
    send_line(c, "cmd=%s_result rc=-1 msg=unsupported", cmd);
  }
}

/* A whole line (n bytes, NUL-terminated) from client c. */
static void on_line(client_t *c, const char *line, size_t n)
{
  if (strlen(line) != n) {
    if (c->phase == RANKED)
      LOG_INFO("rendezvous: rank %d sent a line with a NUL byte; ignored", c->rank);
    else
      refuse(c, "it sent a NUL byte");
    return;
  }
  switch (c->phase) {
  case AWAIT_AUTH:
    on_auth(c, line);
    break;
  case AWAIT_HELLO:
    on_hello(c, line);
    break;
  case RANKED:
    if (srv.welcomed)
      on_pmi(c, line);
    else
      LOG_INFO("rendezvous: rank %d spoke before the job formed; ignored", c->rank);
    break;
  }
}

/* Reads what client c sent and handles its whole lines. End of file marks
 * it to be dropped; the sweep decides what that means. */
static void on_readable(client_t *c)
{
  if (c->buf == NULL && (c->buf = malloc(LINE_MAX_BYTES)) == NULL) {
    c->dead = "out of memory";
    return;
  }
  ssize_t got = read(c->fd, c->buf + c->used, LINE_MAX_BYTES - 1 - c->used);
  if (got < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (got <= 0) {
    c->dead = "its connection to the rendezvous closed";
    return;
  }
  c->used += (size_t)got;
  c->buf[c->used] = '\0';
  char *start = c->buf, *nl;
  while (!srv.done && c->dead == NULL &&
         (nl = memchr(start, '\n', (size_t)(c->buf + c->used - start))) != NULL) {
    *nl = '\0';
    on_line(c, start, (size_t)(nl - start));
    start = nl + 1;
  }
  if (srv.done)
    return; /* every client is closed */
  c->used = (size_t)(c->buf + c->used - start);
  memmove(c->buf, start, c->used);
  if (c->used >= LINE_MAX_BYTES - 1 && c->dead == NULL) {
    if (c->phase == RANKED)
      LOG_WARN("rendezvous: rank %d sent a line longer than %d bytes", c->rank,
               LINE_MAX_BYTES);
    c->dead = "a line this long is not PMI";
  }
}

/* Whether client c has proved nothing yet: with a key, it has not met the
 * challenge; without one, it has not said its hello. */
static int unproven(const client_t *c)
{
  return c->phase == AWAIT_AUTH || (!srv.v.keyed && c->phase == AWAIT_HELLO);
}

/* A new connection: greeted at once, with a challenge when the job has a
 * key. When the strangers' slots are full, the oldest unproven stranger
 * gives way (one that proved the key keeps its slot). */
static void accept_client(void)
{
  int fd = accept4(srv.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0)
    return;
  int strangers = 0, oldest = -1;
  for (int i = 0; i < srv.nclients; i++)
    if (unproven(&srv.clients[i]) && srv.clients[i].dead == NULL) {
      strangers++;
      if (oldest < 0 || srv.clients[i].since < srv.clients[oldest].since)
        oldest = i;
    }
  if (strangers >= STRANGERS_MAX) {
    LOG_INFO("rendezvous: %d connections wait for their handshake; %s gives way",
             strangers, srv.clients[oldest].peer);
    drop_client(oldest);
  }
  if (srv.nclients == srv.cap) {
    int cap = srv.cap ? 2 * srv.cap : srv.size + 8;
    client_t *c = realloc(srv.clients, (size_t)cap * sizeof *c);
    if (c == NULL) {
      close(fd);
      return;
    }
    srv.clients = c;
    srv.cap = cap;
  }
  client_t *c = &srv.clients[srv.nclients++];
  *c = (client_t){.fd = fd, .rank = -1, .since = rondo__now()};
  if (launch_endpoint_peer(&srv.v, fd, c->peer, sizeof c->peer) != 0) {
    refuse(c, "another user's process");
    return;
  }
  if (!srv.v.keyed) {
    c->phase = AWAIT_HELLO;
    send_line(c, "cmd=rondo_greeting version=1 auth=none");
  } else if (launch_auth_nonce(c->nonce) != 0) {
    c->dead = "no random bytes for its challenge";
  } else {
    c->phase = AWAIT_AUTH;
    send_line(c, "cmd=rondo_greeting version=1 auth=hmac-sha256 nonce=%s", c->nonce);
  }
}

/* Drops what is to be dropped: strangers that closed, failed or ran out of
 * time go quietly; an admitted rank that leaves before it finalized ends
 * the job once it has formed. */
static void sweep(void)
{
  double now = rondo__now();
  for (int i = srv.nclients - 1; i >= 0 && !srv.done; i--) {
    client_t *c = &srv.clients[i];
    if (c->dead == NULL && c->phase != RANKED && now - c->since >= HANDSHAKE_SEC) {
      LOG_INFO("rendezvous: %s did not finish its handshake within %d s; closed", c->peer,
               HANDSHAKE_SEC);
      c->dead = "too slow";
    }
    if (c->dead == NULL)
      continue;
    int rank = c->phase == RANKED ? c->rank : -1, finalized = c->finalized;
    const char *why = c->dead;
    drop_client(i);
    if (rank >= 0 && srv.welcomed && !finalized) {
      note_broke(0, "rank %d left the job before MPI_Finalize (%s)", rank, why);
      close_all();
      srv.done = 1;
    }
  }
}

/* Milliseconds until the next deadline: the hello phase's, or a stranger's
 * handshake; -1 when none. */
static int next_wait_ms(void)
{
  double next = srv.welcomed ? -1 : srv.deadline;
  for (int i = 0; i < srv.nclients; i++)
    if (srv.clients[i].phase != RANKED) {
      double t = srv.clients[i].since + HANDSHAKE_SEC;
      if (next < 0 || t < next)
        next = t;
    }
  if (next < 0)
    return -1;
  double left = next - rondo__now();
  return left <= 0 ? 0 : (int)(left * 1000) + 1;
}


static void *serve(void *arg)
{
  (void)arg;
  struct pollfd *p = NULL;
  while (!srv.done) {
    if (srv.welcomed && srv.finalized == srv.size)
      break; /* every rank finalized (some may have closed since) */
    if (!srv.welcomed && rondo__now() >= srv.deadline) {
      char missing[512];
      missing_ranks(missing, sizeof missing);
      fail_job("rank%s %s did not arrive within %g s (RONDO_RENDEZVOUS_TIMEOUT_SEC)%s%s",
               strchr(missing, ',') || strchr(missing, '-') ? "s" : "", missing,
               srv.v.timeout_sec, srv.turned_away[0] ? "; rank 0 turned away: " : "",
               srv.turned_away);
      break;
    }
    int n = srv.nclients + 2;
    struct pollfd *q = realloc(p, (size_t)n * sizeof *q);
    if (q == NULL)
      break;
    p = q;
    p[0] = (struct pollfd){srv.stop[0], POLLIN, 0};
    p[1] = (struct pollfd){srv.listen_fd, POLLIN, 0}; /* -1 once formed: not polled */
    for (int i = 0; i < srv.nclients; i++)
      p[i + 2] = (struct pollfd){srv.clients[i].fd, POLLIN, 0};
    int rc = poll(p, (nfds_t)n, next_wait_ms());
    if (rc < 0 && errno != EINTR)
      break;
    if (rc > 0 && p[0].revents)
      break;
    /* Clients first, by their fds (handling one may mark others). */
    for (int k = 2; rc > 0 && k < n && !srv.done; k++) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      for (int i = 0; i < srv.nclients; i++)
        if (srv.clients[i].fd == p[k].fd) {
          if (srv.clients[i].dead == NULL)
            on_readable(&srv.clients[i]);
          break;
        }
    }
    if (rc > 0 && !srv.done && srv.listen_fd >= 0 && (p[1].revents & POLLIN))
      accept_client();
    sweep();
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
  int fd = -1;
  RONDO_CHECK(launch_endpoint_listen(v, &fd));
  if (pipe2(srv.stop, O_CLOEXEC) != 0) {
    launch_endpoint_close(v, fd);
    return rondo__fail(RONDO_ERR_LAUNCH, "rank 0: pipe: %s", strerror(errno));
  }
  srv.v = *v;
  srv.listen_fd = fd;
  srv.size = v->size;
  srv.deadline = rondo__now() + v->timeout_sec;
  snprintf(srv.run, sizeof srv.run, "%s", v->run_id[0] ? v->run_id : "-");
  for (unsigned char *p = (unsigned char *)srv.run; *p; p++)
    if (*p <= ' ' || *p > '~' || *p == '=') /* as the clients' wire_word */
      *p = '_';
  snprintf(srv.kvsname, sizeof srv.kvsname, "rondo_%ld", (long)getpid());
  srv.done = srv.welcomed = srv.exited = srv.refused = srv.finalized = 0;
  srv.turned_away[0] = '\0';
  if (pthread_create(&srv.thread, NULL, serve, NULL) != 0) {
    launch_endpoint_close(v, fd), close(srv.stop[0]), close(srv.stop[1]);
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
  launch_endpoint_close(&srv.v, srv.listen_fd);
  close(srv.stop[0]), close(srv.stop[1]);
  srv.listen_fd = srv.stop[0] = srv.stop[1] = -1;
  for (int i = 0; i < srv.nkv; i++)
    free(srv.kvs[i].value);
  free(srv.kvs), free(srv.clients);
  srv.kvs = NULL, srv.clients = NULL;
  srv.nkv = srv.kvcap = srv.nclients = srv.cap = 0;
  srv.running = 0;
  return gave_up ? -1 : 0;
}
