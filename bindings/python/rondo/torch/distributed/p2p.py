"""Point-to-point calls of the rondo backend: rondo_isend/rondo_irecv on
the group's comm, started in the order they are made. The caller's wait()
waits for the request; where a future is asked for, or the Work is dropped
before anyone waited, a short-lived thread completes it.

A send whose wait times out (the group's timeout) cannot be withdrawn from
MPI: it stays open, with its buffer, until the receive comes."""
import ctypes
import threading

import torch

from rondo import _core, _lib

from .._codes import CODES, UINT8
from .tensors import _bytes_of, _copy_back, _host, _nbytes, _one, _ptr
from .work import RondoWork


def _raise(st, rank):
    if st != 0:
        _core.raise_status(st, rank)


def _complete_on_a_thread(work):
    threading.Thread(target=work.complete, name="rondo-p2p", daemon=True).start()


class PointToPoint:
    """ProcessGroupRondo's send and recv (self._comm, self._open_sends and
    self._open_lock are the group's)."""

    def send(self, tensors, dst, tag):
        t = _one(tensors, "send")
        return self._p2p(t, dst, tag, True)

    def recv(self, tensors, src, tag):
        t = _one(tensors, "recv")
        return self._p2p(t, src, tag, False)

    def recv_anysource(self, tensors, tag):
        t = _one(tensors, "recv")
        return self._p2p(t, _lib.ANY_SOURCE, tag, False)

    def _reap_open_sends(self):
        """Frees the timed-out sends that completed since."""
        with self._open_lock:
            left = []
            for req, buf in self._open_sends:
                done = ctypes.c_int(0)
                if _lib.p2p_test(req, ctypes.byref(done)) == 0 and done.value:
                    _lib.p2p_wait(ctypes.byref(req), None)
                else:
                    left.append((req, buf))
            self._open_sends = left

    def _p2p(self, t, peer, tag, send):
        if not isinstance(tag, int) or not 0 <= tag <= _lib.TAG_MAX:
            raise ValueError("rondo: tag %r is outside 0..%d" % (tag, _lib.TAG_MAX))
        if self._open_sends:
            self._reap_open_sends()
        # counts in elements where rondo knows the dtype (a mismatch then
        # names elements), else in bytes
        code = CODES.get(t.dtype)
        if code is None:
            code, buf = UINT8, _bytes_of(t) if send else torch.empty(_nbytes(t),
                                                                     dtype=torch.uint8)
        else:
            buf = _host(t) if send else (t if t.device.type == "cpu" and t.is_contiguous()
                                         else torch.empty(t.shape, dtype=t.dtype))
        req = ctypes.c_void_p()
        fn = _lib.isend if send else _lib.irecv
        _raise(fn(self._comm._h, _ptr(buf), buf.numel(), code, int(peer), int(tag),
                  ctypes.byref(req)), self._comm.rank)
        source = [-1]

        def await_request():
            r, src = ctypes.c_void_p(req.value), ctypes.c_int(-1)
            st = _lib.p2p_wait(ctypes.byref(r), ctypes.byref(src))
            if st != 0 and r.value:  # a send past the group's timeout stays open
                with self._open_lock:
                    self._open_sends.append((r, buf))
            _raise(st, self._comm.rank)
            source[0] = src.value

        def post(_):
            if not send and buf is not t:
                _copy_back(t, buf.view(t.dtype).view(t.shape) if t.numel() else buf)
            return [t]
        return RondoWork(await_request, post, _complete_on_a_thread, source)
