"""rondo.init() and rondo.shutdown() under torchrun (tests/launch/torchrun.sh):
after shutdown (rondo_finalize, and MPI_Finalize with it) the process has
the threads and sockets it had before init: rank 0's rendezvous thread and
every connection are gone. Prints one line per rank; exits 1 if anything
is left."""
import os
import sys

import rondo


def threads_and_sockets():
    tasks = len(os.listdir("/proc/self/task"))
    sockets = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            sockets += os.readlink("/proc/self/fd/" + fd).startswith("socket:")
        except OSError:  # the directory's own descriptor, gone by now
            pass
    return tasks, sockets


before = threads_and_sockets()
rondo.init()
rank, during = rondo.rank(), threads_and_sockets()
rondo.shutdown()
after = threads_and_sockets()
ok = after == before
# one write per line: the ranks share stdout
sys.stdout.write("rank %d: %s: threads and sockets before init %s, while running %s, after "
                 "shutdown %s\n" % (rank, "ok" if ok else "LEFT", before, during, after))
sys.stdout.flush()
sys.exit(0 if ok else 1)
