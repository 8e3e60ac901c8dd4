/*
 * The public API's own state and helpers (lib/api, the top floor): the
 * library's lifecycle and the registry of live comms (lifecycle.c), and the
 * local argument checks every entry point shares (coll.c). Internal
 * (prefix api_).
 */
#ifndef RONDO_API_H
#define RONDO_API_H

#include "base/comm.h"

/* RONDO_SUCCESS if the library is usable and comm is a live handle. */
rondo_status_t api_enter(rondo_comm_t comm);
/* 1 while the library is initialized and not finalized. */
int api_lib_active(void);
/* Lazily initializes the library state (logging) when the application
 * initialized MPI itself and calls rondo_comm_create() without rondo_init(). */
rondo_status_t api_lib_init(void);
/* Adds a comm to the registry of live comms / takes it out (0 if it was not
 * there). */
void api_register(rondo_comm_t comm);
int api_unregister(rondo_comm_t comm);

/* Destroys the comm's engine, then the comm (rondo_comm_destroy, and
 * rondo_finalize for the comms left). */
void api_comm_free(rondo_comm_t comm, int mpi_usable);
/* rondo_finalize: frees every comm of list (linked by next) as
 * api_comm_free does, but leaves them all at once, so that a rank waiting on
 * any of them, in any order, learns that this rank is leaving. */
void api_comms_free(struct rondo_comm *list, int mpi_usable);
/* Whether finalize needs MPICH's UCX workaround (mpich_ucx.c): 1 when
 * librondo was built against MPICH, 0 for any other MPI library. */
int api_mpich_ucx_workaround(void);
/* While on, MPICH's UCX endpoint closes at finalize are skipped; its
 * worker's destruction closes them (mpich_ucx.c). A no-op off MPICH. */
void api_mpich_skip_close(int on);
/* The ending of every call that writes a text into (buf, len): *needed (if
 * needed) = want + 1; buf NULL and len 0 is a size query (success); a text
 * that did not fit is RONDO_ERR_TRUNCATED (buf holds its start). want is
 * snprintf's result; fn names the call in the message. */
rondo_status_t api_text_result(const char *fn, int want, char *buf, size_t len,
                               size_t *needed);

/* Local argument checks, in the order every entry point applies them. */
rondo_status_t api_check_dtype(rondo_dtype_t dtype);
rondo_status_t api_check_op(rondo_op_t op);
rondo_status_t api_check_algo(rondo_algo_t algo);
/* RONDO_ERR_UNSUPPORTED for op ADASUM: the calls other than all-reduce
 * (fn names the call). */
rondo_status_t api_check_elementwise_op(const char *fn, rondo_op_t op);
rondo_status_t api_check_buffer(const void *buf, size_t count, const char *name);
/* Buffers that overlap without being the same pointer (in place): the
 * data would be read after it was overwritten. */
rondo_status_t api_check_overlap(const char *fn, const void *sendbuf, size_t sbytes,
                                 const void *recvbuf, size_t rbytes);
/* The same, with in_place as the one overlapping sendbuf allowed
 * (allgather: this rank's block of recvbuf). */
rondo_status_t api_check_overlap_except(const char *fn, const void *sendbuf, size_t sbytes,
                                        const void *recvbuf, size_t rbytes,
                                        const void *in_place);
/* bytes = count * dtype size, or RONDO_ERR_COUNT_OVERFLOW. */
rondo_status_t api_bytes(size_t count, size_t esize, size_t *bytes);
/* RONDO_ERR_UNSUPPORTED if buf is device memory: fn's name
 * (buffer name) in the message. The calls without a device path. */
rondo_status_t api_host_only(const char *fn, const void *buf, const char *name);

#endif /* RONDO_API_H */
