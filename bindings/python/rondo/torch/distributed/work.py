"""The Work every call of the rondo backend returns, and the threads that
complete the Works whose future someone asked for.

One kind of Work serves every caller, so the backend never asks who called
it. A call is submitted at once (with RONDO_ASYNC_WAIT_NOW when the group's
last call is done: backend.py's _wait_now). Then:

  - wait() waits for the request on the caller's thread, which runs the
    engine's cycles itself when the request is alone in flight and was
    submitted with the hint (docs/engine.md, "Who runs the cycles"): a
    blocking call costs no thread switch. It raises the call's error.
  - get_future() (DDP's buckets and comm hooks, from C++; futures asked
    for in Python) hands the Work to its group's completion threads. One
    of them waits for the request (the engine thread runs it: only the
    submitting thread runs cycles itself), then completes the future, whose
    callbacks run on that thread.
  - a Work that nobody but its group holds when the group's next call
    comes (dropped without a wait) is handed to the completion threads
    then, so its results reach the tensors (as on gloo). One async call
    alone, neither waited for nor followed by another, starts at the
    engine thread's next wake-up (within 50 ms): the hint said someone
    would wait for it.

Lifetime. A C++ caller (DDP) holds only the C++ half of this Python
subclass: pybind11 finds the Python methods only while the Python object
lives. The group therefore keeps each Work until its name comes round,
_NAME_SLOTS calls later; by then every C++ caller in torch has waited for it
or taken its future.
"""
import collections
import threading

from torch._C._distributed_c10d import Work
from torch.futures import Future

# seconds a process group's last completion thread waits with nothing to do
# before it exits
_LINGER = 1.0

_OPEN, _RUNNING, _ADOPTED, _DONE = range(4)


def _as_exception(e):
    return e if isinstance(e, Exception) else RuntimeError(str(e))


class RondoWork(Work):
    """A call's Work. await_request() -> the request's raw result (blocking;
    raises the call's error); post(raw) -> the call's value (the copies
    back into the caller's tensors); adopt(work) hands it to a thread that
    calls work.complete()."""

    # (set on the instance when they change: fewer stores per call)
    _fut = None
    _value = None
    _error = None
    _source = None  # [rank] that await_request fills (recv), or None

    def __init__(self, await_request, post, adopt, source=None):
        super().__init__()
        self._await = await_request
        self._post = post
        self._adopt = adopt
        self._lock = threading.Lock()
        self._state = _OPEN
        if source is not None:
            self._source = source

    # -- completing: by the caller's wait(), a completion thread, or the group
    def _take(self, state):
        """Moves an open Work to state; whether this caller did."""
        with self._lock:
            if self._state != _OPEN:
                return False
            self._state = state
            return True

    def complete(self, before_callbacks=None):
        """Waits for the request and runs post, on this thread (the one that
        took the Work); then the future, if asked for, gets the outcome (its
        callbacks run here, after before_callbacks())."""
        try:
            self._value = self._outcome()
        except BaseException as e:  # noqa: B036 - every failure is the call's
            self._error = _as_exception(e)
        self._await = self._post = self._adopt = None
        with self._lock:
            self._state = _DONE
            fut = self._fut
        if before_callbacks is not None:
            before_callbacks()
        if fut is not None:
            self._settle(fut)

    def _outcome(self):
        """Waits for the request; the call's value (raises its error)."""
        return self._post(self._await())

    def _settle(self, fut):
        if self._error is not None:
            fut.set_exception(self._error)
        else:
            fut.set_result(self._value)

    def settle_quietly(self):
        """Completes the Work if nobody has (the group does so when its name
        comes round) and waits until it is done; never raises."""
        if self._take(_RUNNING):
            self.complete()
        elif self._state != _DONE:
            try:
                self.get_future().wait()
            except Exception:  # noqa: BLE001 - the error is the Work's, kept there
                pass

    def __del__(self):
        if getattr(self, "_state", None) == _OPEN:
            self.get_future()  # dropped before anyone waited: results still reach the tensors

    # -- torch's Work interface
    def wait(self, timeout=None):
        if self._state != _DONE:
            self.settle_quietly()
        if self._error is not None:
            raise self._error
        return True

    def get_future(self):
        adopt = settle = False
        with self._lock:
            if self._fut is None:
                self._fut = Future()
                if self._state == _OPEN:
                    self._state = adopt = _ADOPTED
                settle = self._state == _DONE
            fut = self._fut
        if adopt:
            self._adopt(self)
        elif settle:
            self._settle(fut)
        return fut

    def is_completed(self):
        if self._state == _OPEN:
            self.get_future()  # polled, not waited for: the completion threads take it
        return self._state == _DONE

    def is_success(self):
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error if self.is_completed() else None

    def result(self):
        self.wait()
        return self._value

    def _source_rank(self):
        self.wait()
        return self._source[0] if self._source is not None else -1

    source_rank = _source_rank


class Completer:
    """The threads that complete one process group's adopted Works, in the
    order they were adopted.

    A thread takes the oldest Work and waits for its request. A future's
    callbacks run on the thread that completes it, and some wait for another
    collective (PowerSGD's hook does): so a thread about to complete a
    future leaves another free to take the next Work first (starting one if
    none is): as many threads as callbacks were blocked at once, plus one.
    A thread exits after _LINGER seconds with nothing to do, so an idle or
    forgotten group holds no thread, and back-to-back calls do not pay for
    a new one.

    Holds no reference to the process group. Closing it (the group was
    destroyed, or the interpreter exits) lets the threads finish the Works
    adopted so far: rondo's shutdown fails the requests that cannot
    complete, and their futures get the error."""

    def __init__(self, label):
        self._label = label
        self._cond = threading.Condition()
        self._works = collections.deque()
        self._closing = False
        self._free = 0      # threads taking or waiting for a Work, in no callback
        self._threads = 0

    def _spawn(self):  # under the lock
        self._free += 1
        self._threads += 1
        threading.Thread(target=self._run, name="rondo-c10d-" + self._label,
                         daemon=True).start()

    def adopt(self, work):
        """work.complete() runs on one of the threads."""
        with self._cond:
            if self._closing:
                raise RuntimeError("rondo: this process group was destroyed")
            self._works.append(work)
            if self._free == 0:
                self._spawn()
            self._cond.notify()

    def _run(self):
        while True:
            with self._cond:
                while not self._works and not self._closing:
                    if not self._cond.wait(_LINGER) and not self._works:
                        break  # nothing to do for a while
                if not self._works:
                    self._free -= 1
                    self._threads -= 1
                    return
                work = self._works.popleft()
            work.complete(self._leave_one_free)
            with self._cond:
                self._free += 1  # free again; one with nothing to do exits after _LINGER

    def _leave_one_free(self):
        """Called by a thread about to run a future's callbacks."""
        with self._cond:
            self._free -= 1
            if self._free == 0 and self._works:
                self._spawn()  # someone must take the next Work meanwhile

    def close(self):
        with self._cond:
            self._closing = True
            self._cond.notify_all()
