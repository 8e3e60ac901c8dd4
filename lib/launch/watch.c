/*
 * No rank waits for one that is gone. Under mpiexec, the launcher ends the
 * whole job when one process dies before MPI_Finalize; under torchrun and
 * the other launchers rondo's rendezvous stands in for it, and does the
 * same:
 *   - rank 0's server (pmi_server.c) sees a rank's connection close before
 *     that rank finalized, notes who (launch_serve_why) and closes every
 *     connection;
 *   - every rank, rank 0 included, watches its own connection from a thread
 *     that sleeps in poll(); a connection that closes before this rank
 *     began MPI_Finalize means the job broke (rank 0 died, or the server
 *     closed it): the rank says why on stderr and ends at once with exit
 *     status 75 (EX_TEMPFAIL: try again), or the exit code a rank gave
 *     MPI_Abort. An MPI job cannot continue
 *     without one of its processes, and a launcher that restarts failed
 *     workers (torchrun --max_restarts) then starts the next attempt.
 * The watcher polls a duplicate of the socket MPI reads PMI from, for a
 * hang-up only: it never reads, so MPI's conversation is undisturbed.
 */
#define _GNU_SOURCE /* POLLRDHUP, pipe2 */
#include "launch/launch.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { WATCH_EXIT = 75 };

static struct {
  pthread_t thread;
  int running;
  int fd;          /* a duplicate of the rendezvous connection */
  int stop[2];     /* a byte on stop[1] ends the thread */
  int rank;
  int finalizing;  /* MPI_Finalize began: the connection closing is the end */
  pthread_mutex_t lock;
} w = {.fd = -1, .stop = {-1, -1}, .lock = PTHREAD_MUTEX_INITIALIZER};

static void *watch(void *arg)
{
  (void)arg;
  struct pollfd p[2] = {{w.stop[0], POLLIN, 0}, {w.fd, POLLRDHUP, 0}};
  for (;;) {
    int rc = poll(p, 2, -1);
    if (rc < 0)
      continue; /* EINTR */
    if (p[0].revents)
      return NULL;
    if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
      break;
  }
  pthread_mutex_lock(&w.lock);
  int finalizing = w.finalizing;
  pthread_mutex_unlock(&w.lock);
  char why[512]; /* what rank 0's server saw, or "" (every other rank) */
  int status = launch_serve_why(why, sizeof why);
  if (status <= 0)
    status = WATCH_EXIT;
  if (finalizing)
    return NULL;
  /* Said whatever the log level: the process ends here. */
  fprintf(stderr,
          "[rondo %d] ERROR RONDO_ERR_LAUNCH: %s; MPI cannot go on without a process, so this "
          "rank ends too (exit status %d), as mpiexec ends a job when one of its processes "
          "dies\n",
          w.rank,
          why[0] != '\0' ? why
                         : "the rendezvous closed this rank's connection before MPI_Finalize: "
                           "rank 0 left the job, or saw another rank leave",
          status);
  fflush(stdout);
  launch_serve_join(1); /* rank 0: its server has ended; nothing is left unjoined */
  _exit(status);
}

rondo_status_t launch_watch_start(int fd, int rank)
{
  w.rank = rank;
  w.finalizing = 0;
  w.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (w.fd < 0 || pipe2(w.stop, O_CLOEXEC) != 0) {
    if (w.fd >= 0)
      close(w.fd);
    w.fd = -1;
    return rondo__fail(RONDO_ERR_LAUNCH, "rank %d: cannot watch the rendezvous connection",
                       rank);
  }
  if (pthread_create(&w.thread, NULL, watch, NULL) != 0) {
    close(w.fd), close(w.stop[0]), close(w.stop[1]);
    w.fd = w.stop[0] = w.stop[1] = -1;
    return rondo__fail(RONDO_ERR_LAUNCH, "rank %d: cannot start the watcher thread", rank);
  }
  w.running = 1;
  return RONDO_SUCCESS;
}

void launch_finalizing(void)
{
  pthread_mutex_lock(&w.lock);
  w.finalizing = 1;
  pthread_mutex_unlock(&w.lock);
}

void launch_watch_stop(void)
{
  if (!w.running)
    return;
  if (write(w.stop[1], "x", 1) < 0) { /* the thread then returns at once */
  }
  pthread_join(w.thread, NULL);
  close(w.fd), close(w.stop[0]), close(w.stop[1]);
  w.fd = w.stop[0] = w.stop[1] = -1;
  w.running = 0;
}
