#!/usr/bin/python3
"""The outsider: a process on rank 0's host that is not part of the job and
talks to rondo's rendezvous (lib/launch/pmi_server.c) the way an attacker
would. tests/launch/outsider.sh starts a real job and runs this next to it.

    outsider.py ATTACK [--port P | --unix PATH] [options]

Every attack prints what it did and saw ("outsider: ..."), each violation on
a line of its own ("outsider: VIOLATION ..."), and exits 0 when the server
held (it admitted nobody, told nothing beyond its greeting, closed what it
should), 1 on a violation, 2 on a usage or setup error.

The protocol (lib/launch/rendezvous.c): on every connection the server first sends
"cmd=rondo_greeting version=1 auth=none" or "cmd=rondo_greeting version=1
auth=hmac-sha256 nonce=<64 hex>"; a client with the key answers
"cmd=rondo_auth nonce=<its 64 hex> mac=<HMAC-SHA256(key, 'rondo rendezvous
client ' + server_nonce + ' ' + client_nonce)>" and hears "cmd=rondo_auth_ok
mac=<HMAC-SHA256(key, 'rondo rendezvous server ' + ...)>"; a wrong answer is
closed without another byte. Then the hello, then PMI-1.

Attacks (before the world forms unless named "after"):
  impostor        "cmd=rondo_hello rank=1 size=2 host=x run=-" with no handshake
  wrong-mac       a well-formed rondo_auth whose mac is random, then a hello
  wrong-key       a rondo_auth computed with another key (--key is the wrong one)
  control         --key is the right one: the handshake must succeed and the
                  server's mac verify; then it leaves without a hello; and
                  that auth line replayed on a new connection is refused
  proven          --key is the right one: prove it, then open --count
                  strangers: the proven connection must stay open
  wrong-hellos    --key is the right one: hellos that cannot be admitted (a
                  rank taken, another size or attempt, out of range): none
                  is welcomed
  pmi             get of PMI_process_mapping, put, abort exitcode=42, each on
                  its own connection without a handshake
  zero            connect and close: without reading, after the greeting, and
                  with a reset (SO_LINGER 0)
  nul             lines holding a NUL byte
  silent          --count connections that send nothing, held --hold seconds
                  (or until --stop-file exists); --refill reopens what the
                  server closes, at most --max-connects in all; --partial:
                  every other one sends half an auth line and stops;
                  --closed-within S: each must be closed by the server
                  within S seconds
  after           from now until --stop-file exists (or --hold s), connect
                  every 20 ms: every attempt must be refused; --action says
                  what an accepted connection does (zero, get, put, abort,
                  silent; pmi is get, put, abort; joined by '-', in turn)
  refused         one connect, which must be refused (a TCP port that must not
                  be open)
  unix-denied     one connect to --unix, which must fail with EACCES (run as
                  another user); --peercred: or be closed by the server
                  without a byte
  fake-server     listen on --port as a false rendezvous; --mode downgrade
                  (greets auth=none), badmac (answers the client's auth with
                  a wrong mac) or goodmac (the right one, with --key: the
                  client's own check); reports whether a client said hello
  fuzz            --count inputs (random and mutated greeting, auth, hello and
                  PMI lines, up to 100 KiB) over --concurrency connections at
                  a time, for at most --seconds; --authed F with --key: that
                  fraction first proves the key (a key holder's bad hellos,
                  never one for rank 1); --expect none: this user's peer on a
                  Unix socket (never a hello for rank 1); --seed repeats a
                  run, --log FILE keeps the inputs
  wait-listen     until --port is listening (TCP, from /proc/net) or --unix
                  exists, without connecting; prints tcp or unix
  listeners       the local addresses listening on --port (from /proc/net)

Only loopback and Unix sockets; every loop bounded in count and time.
"""
import hashlib
import hmac
import os
import random
import re
import secrets
import select
import socket
import sys
import time

GREETING_HMAC = re.compile(rb"^cmd=rondo_greeting version=1 auth=hmac-sha256 nonce=([0-9a-f]{64})$")
GREETING_NONE = b"cmd=rondo_greeting version=1 auth=none"
REFUSED = b"cmd=rondo_auth_refused\n"
HOSTNAME = socket.gethostname().encode()

violations = []


def say(*words):
    print("outsider:", *words, flush=True)


def violation(what):
    violations.append(what)
    say("VIOLATION", what)


def show(data, limit=160):
    """Bytes as one printable line, cut at limit."""
    s = repr(bytes(data[:limit]))[2:-1]
    return s + ("... (%d bytes)" % len(data) if len(data) > limit else "")


def mac(key, side, server_nonce, client_nonce):
    msg = ("rondo rendezvous %s %s %s" % (side, server_nonce, client_nonce)).encode()
    return hmac.new(key.encode(), msg, hashlib.sha256).hexdigest()


def auth_line(key, server_nonce, client_nonce=None):
    cn = client_nonce or secrets.token_hex(32)
    return cn, ("cmd=rondo_auth nonce=%s mac=%s\n" % (cn, mac(key, "client", server_nonce, cn))).encode()


def reveals(data):
    """What a reply tells an outsider, in words."""
    told = []
    if b"rondo_welcome rc=0" in data:
        told.append("a welcome (ADMITTED)")
    elif b"rondo_welcome" in data:
        told.append("a welcome with a reason")
    for word, what in ((b"value=", "a PMI value"), (b"kvsname", "the KVS name"),
                       (b"attempt", "the attempt id"), (b"rank", "ranks"),
                       (b"local_size", "the node layout"), (b"rondo_auth_ok", "an auth_ok")):
        if word in data:
            told.append(what)
    if HOSTNAME and HOSTNAME in data:
        told.append("this host's name")
    return ", ".join(told) or "bytes"


class Target:
    def __init__(self, port=None, unix=None, expect="hmac", host="127.0.0.1"):
        self.port, self.unix, self.expect, self.host = port, unix, expect, host

    def name(self):
        return self.unix if self.unix else "%s:%d" % (self.host, self.port)

    def connect(self, timeout=2.0):
        if self.unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            addr = self.unix
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            addr = (self.host, self.port)
        s.settimeout(timeout)
        try:
            s.connect(addr)
        except BaseException:
            s.close()
            raise
        return s


class Seen:
    """One connection as the outsider saw it."""

    def __init__(self, sock, target, what):
        self.sock, self.target, self.what = sock, target, what
        self.buf = b""
        self.greeting = None   # the first line, without its newline
        self.nonce = None
        self.extra = b""       # every byte after the greeting
        self.closed = False    # the server closed (EOF or reset)
        self.t0 = time.monotonic()
        self.closed_after = None
        self.greet_waited = None  # seconds waited in vain for a greeting on an open connection

    def _recv(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            return None
        try:
            d = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            d = b""
        except socket.timeout:
            return None
        if not d:
            self.closed = True
            self.closed_after = time.monotonic() - self.t0
        return d

    def read_greeting(self, wait=1.5):
        deadline = time.monotonic() + wait
        while b"\n" not in self.buf and not self.closed:
            d = self._recv(deadline)
            if d is None:
                break
            self.buf += d
        if b"\n" in self.buf:
            line, rest = self.buf.split(b"\n", 1)
            self.greeting, self.buf = line, b""
            self.extra += rest
            m = GREETING_HMAC.match(line)
            self.nonce = m.group(1).decode() if m else None
        else:
            self.extra += self.buf
            self.buf = b""
            if not self.closed and wait > 0:
                self.greet_waited = wait
        return self.greeting

    def drain(self, wait, quiet=None):
        """Reads until the server closes, wait seconds pass, or (quiet) that
        long passes without a byte once some arrived."""
        deadline = time.monotonic() + wait
        got_any = False
        while not self.closed:
            d = self._recv(deadline if not (quiet and got_any) else
                           min(deadline, time.monotonic() + quiet))
            if d is None:
                break
            self.extra += d
            got_any = got_any or bool(d)
        return self.extra

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def close(self, reset=False):
        if reset:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
            except OSError:
                pass
        self.sock.close()

    def judge(self, allow_extra=False):
        """The greeting must be the expected one and nothing follow it."""
        t = self.target
        if self.greeting is None:
            if self.greet_waited is not None and not self.extra:
                violation("%s: no greeting within %.1f s of connecting" % (self.what, self.greet_waited))
            elif self.closed and not self.extra:
                say("%s: closed before any greeting" % self.what)
            else:
                violation("%s: no greeting line (got %s)" % (self.what, show(self.extra) or "nothing"))
        elif t.expect == "hmac" and not GREETING_HMAC.match(self.greeting):
            violation("%s: the greeting is not 'cmd=rondo_greeting version=1 auth=hmac-sha256 "
                      "nonce=<64 hex>': %s" % (self.what, show(self.greeting)))
        elif t.expect == "none" and self.greeting != GREETING_NONE:
            violation("%s: the greeting is not '%s': %s" % (self.what, GREETING_NONE.decode(),
                                                             show(self.greeting)))
        if t.expect == "hmac" and self.extra.startswith(REFUSED):
            self.extra = self.extra[len(REFUSED):]  # all a failed challenge hears
        if self.extra and not allow_extra:
            violation("%s: the server told an outsider %s: %s" % (self.what, reveals(self.extra),
                                                                  show(self.extra)))


def exploit(seen):
    """An outsider that was admitted goes on: what does PMI tell it?"""
    seen.send(b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=get_my_kvsname\n")
    seen.drain(1.0, quiet=0.3)
    m = re.search(rb"kvsname=(\S+)", seen.extra)
    kvs = m.group(1) if m else b"x"
    seen.send(b"cmd=get kvsname=" + kvs + b" key=PMI_process_mapping\n")
    seen.drain(1.0, quiet=0.3)


def greet_all(seens, wait):
    """Reads every connection's greeting at once, within wait seconds."""
    deadline = time.monotonic() + wait
    waiting = [x for x in seens if x.greeting is None and not x.closed]
    while waiting and time.monotonic() < deadline:
        r, _, _ = select.select([x.sock for x in waiting], [], [], max(0.0, deadline - time.monotonic()))
        for x in waiting:
            if x.sock in r:
                d = x._recv(time.monotonic() + 0.01)
                if d:
                    x.buf += d
                if b"\n" in x.buf or x.closed:
                    x.read_greeting(0)
        waiting = [x for x in waiting if x.greeting is None and not x.closed]
    for x in waiting:
        x.read_greeting(0)
        x.greet_waited = wait


def close_all(seens, wait):
    """Waits (all at once) until the server closed every connection, or wait
    seconds passed."""
    deadline = time.monotonic() + wait
    open_ = [x for x in seens if not x.closed]
    while open_ and time.monotonic() < deadline:
        r, _, _ = select.select([x.sock for x in open_], [], [], max(0.0, deadline - time.monotonic()))
        for x in open_:
            if x.sock in r:
                d = x._recv(time.monotonic() + 0.01)
                if d:
                    x.extra += d
        open_ = [x for x in open_ if not x.closed]
    for x in seens:
        if not x.closed:
            violation("%s: still open after %.1f s" % (x.what, wait))
        elif x.closed_after is not None and x.closed_after > 1.5:
            say("%s: closed after %.1f s (not at once)" % (x.what, x.closed_after))


def probes(t, items, wait=6.5, greet_wait=1.5):
    """For each (what, payload) at once: connect, read the greeting, send
    payload (bytes, or a function of the server's nonce), and expect the
    server to close having said nothing more. An outsider that is welcomed
    goes on to ask PMI what it can."""
    seens = []
    for what, payload in items:
        try:
            s = t.connect()
        except OSError as e:
            violation("%s: cannot connect to %s: %s" % (what, t.name(), e))
            continue
        x = Seen(s, t, what)
        x.payload = payload
        local = s.getsockname()
        x.local = local if isinstance(local, str) else "%s:%d" % local[:2]
        seens.append(x)
    greet_all(seens, greet_wait)
    for x in seens:
        x.data = x.payload(x.nonce) if callable(x.payload) else x.payload
        x.send(x.data)
    close_all(seens, wait)
    for x in seens:
        if b"rondo_welcome rc=0" in x.extra:
            exploit(x)
        x.judge()
        x.close()
        say("%s (from %s): sent %s; got greeting %s; after it %s; %s" % (
            x.what, x.local, show(x.data, 70), "yes" if x.greeting is not None else "no",
            show(x.extra, 100) or "nothing",
            "the server closed" if x.closed else "still open (closed by the outsider)"))
    return seens


def one(t, what, payload):
    got = probes(t, [(what, payload)])
    return got[0] if got else None


HELLO1 = b"cmd=rondo_hello rank=1 size=2 host=x run=-\n"


def attack_impostor(t, a):
    one(t, "impostor hello", HELLO1)


def attack_wrong_mac(t, a):
    def payload(nonce):
        return ("cmd=rondo_auth nonce=%s mac=%s\n" % (secrets.token_hex(32), secrets.token_hex(32))
                ).encode() + HELLO1
    one(t, "wrong mac", payload)


def attack_wrong_key(t, a):
    key = a.get("key") or secrets.token_hex(32)

    def payload(nonce):
        return auth_line(key, nonce or "0" * 64)[1] + HELLO1
    one(t, "wrong key", payload)


def attack_control(t, a):
    key = a.get("key")
    if not key:
        say("control needs --key")
        sys.exit(2)
    seen = handshake(t, key, "control (the right key)")
    if seen is None:
        return
    say("control: the right key: the server's rondo_auth_ok mac verifies")
    first_nonce, line = seen.nonce, seen.auth_line
    seen.close()  # authenticated, no hello: an unranked peer whose end ends nothing
    # the same auth line on a new connection: a fresh nonce, so refused
    seen2 = one(t, "replayed auth line", line)
    if seen2 is not None and seen2.nonce == first_nonce:
        violation("control: two connections got one nonce %s" % first_nonce)


def attack_proven(t, a):
    """A connection that proved the key (a rank slow to say its hello) must
    not give way to strangers: prove the key, open --count silent
    connections, and see whether the proven one is still open."""
    key, count = a.get("key"), a.get("count", 200)
    proven = handshake(t, key, "proven: the connection that proved the key")
    if proven is None:
        return
    others = []
    for i in range(count):
        try:
            others.append(Seen(t.connect(), t, "stranger %d" % i))
        except OSError:
            break
    greet_all(others, 3.0)
    time.sleep(0.3)
    r, _, _ = select.select([proven.sock], [], [], 0)
    if r and proven._recv(time.monotonic() + 0.1) == b"" and proven.closed:
        violation("proven: after %d strangers connected, the server closed the connection that "
                  "had proved the key (a real rank that is slow between its proof and its hello "
                  "is lost this way; its job cannot form)" % len(others))
    else:
        say("proven: %d strangers connected; the connection that proved the key is still open"
            % len(others))
    for x in others:
        x.close()
    proven.close()


def handshake(t, key, what):
    """A connection that proved the key, or None."""
    try:
        x = Seen(t.connect(), t, what)
    except OSError as e:
        violation("%s: cannot connect: %s" % (what, e))
        return None
    x.read_greeting()
    if x.nonce is None:
        violation("%s: no hmac greeting: %s" % (what, show(x.greeting or b"")))
        x.close()
        return None
    cn, line = auth_line(key, x.nonce)
    x.auth_line = line
    x.send(line)
    deadline = time.monotonic() + 3
    while b"\n" not in x.extra and not x.closed:
        d = x._recv(deadline)
        if d is None:
            break
        x.extra += d
    if not x.extra.startswith(("cmd=rondo_auth_ok mac=%s\n" % mac(key, "server", x.nonce, cn)).encode()):
        violation("%s: the right key got %s" % (what, show(x.extra) or "nothing"))
        x.close()
        return None
    x.extra = x.extra.split(b"\n", 1)[1]
    return x


def attack_wrong_hellos(t, a):
    """Hellos from a key holder that cannot be admitted: a rank already
    taken, another world size, another attempt, a rank out of range. Each is
    turned away (a reason, or a close); none is welcomed."""
    key = a.get("key")
    hellos = [("rank 0 again", b"cmd=rondo_hello rank=0 size=2 host=x run=-\n"),
              ("another world size", b"cmd=rondo_hello rank=1 size=3 host=x run=-\n"),
              ("another attempt", b"cmd=rondo_hello rank=1 size=2 host=x run=other.0\n"),
              ("rank 2 of 2", b"cmd=rondo_hello rank=2 size=2 host=x run=-\n"),
              ("rank -1", b"cmd=rondo_hello rank=-1 size=2 host=x run=-\n"),
              ("rank 2^32+1", b"cmd=rondo_hello rank=4294967297 size=2 host=x run=-\n"),
              ("no host", b"cmd=rondo_hello rank=1 size=2 run=-\n"),
              ("a PMI get instead", b"cmd=get kvsname=x key=PMI_process_mapping\n")]
    for what, hello in hellos:
        x = handshake(t, key, "key holder, " + what)
        if x is None:
            continue
        x.send(hello)
        x.drain(3.0, quiet=0.5)
        if b"rondo_welcome rc=0" in x.extra or b"value=" in x.extra:
            violation("key holder, %s: admitted: %s" % (what, show(x.extra)))
        say("key holder, %s: %s; %s" % (what, show(x.extra, 120) or "no answer",
                                         "closed" if x.closed else "left open"))
        x.close()


def attack_pmi(t, a):
    probes(t, [("get without handshake",
                b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=get_my_kvsname\n"
                b"cmd=get kvsname=rondo_1 key=PMI_process_mapping\n"),
               ("put without handshake",
                b"cmd=put kvsname=rondo_1 key=PMI_process_mapping value=(vector,(0,2,1))\n"
                b"cmd=put kvsname=rondo_1 key=P0-businesscard value=evil\n"),
               ("abort without handshake", b"cmd=abort exitcode=42\n")])


def attack_zero(t, a):
    n = 0
    for i in range(5):
        try:
            t.connect().close()
            n += 1
        except OSError as e:
            violation("zero-byte: connect %d: %s" % (i, e))
    for i in range(2):
        try:
            s = t.connect()
        except OSError as e:
            violation("zero-byte: connect: %s" % e)
            continue
        seen = Seen(s, t, "connect, greeting, close")
        seen.read_greeting(1.0)
        seen.judge()
        seen.close(reset=(i == 1))
        n += 1
    say("zero-byte: %d connections closed without a byte (5 before the greeting, one after, one reset)" % n)


def attack_nul(t, a):
    lines = [b"\x00\n",
             b"cmd=rondo_hello\x00 rank=1 size=2 host=x run=-\n",
             b"cmd=rondo_hello rank=1 size=2 host=x\x00 run=-\n",
             b"cmd=rondo_auth\x00nonce=" + b"a" * 64 + b" mac=" + b"b" * 64 + b"\n",
             b"cmd=get\x00 kvsname=x key=PMI_process_mapping\n",
             b"\x00" * 100 + b"\n"]
    probes(t, [("NUL line %d" % i, l) for i, l in enumerate(lines)])


def attack_silent(t, a):
    count, hold = a.get("count", 1), a.get("hold", 10.0)
    refill, max_connects = a.get("refill", False), a.get("max_connects", 1000)
    stop_file, ready_file = a.get("stop_file"), a.get("ready_file")
    within = a.get("closed_within")
    t0 = time.monotonic()
    open_ = {}
    stats = dict(connects=0, refused=0, greeted=0, closed=0, nonces=set(), dup_nonce=0)
    close_times = []

    def open_one():
        try:
            s = t.connect(timeout=2.0)
        except OSError:
            stats["refused"] += 1
            return
        stats["connects"] += 1
        seen = Seen(s, t, "silent connection %d" % stats["connects"])
        open_[s.fileno()] = seen

    for _ in range(count):
        open_one()
    greet_all(list(open_.values()), 2.0)
    if a.get("partial"):  # every other one starts its answer and stops mid-line
        for k, seen in enumerate(list(open_.values())):
            if k % 2:
                seen.what += " (stopped mid-line)"
                seen.send(b"cmd=rondo_auth nonce=")
    for seen in list(open_.values()):
        if seen.greeting is not None:
            stats["greeted"] += 1
            if seen.nonce:
                if seen.nonce in stats["nonces"]:
                    stats["dup_nonce"] += 1
                stats["nonces"].add(seen.nonce)
    say("silent: holding %d connections (%d refused, %d greeted)" % (len(open_), stats["refused"],
                                                                     stats["greeted"]))
    if ready_file:
        open(ready_file, "w").close()
    done = []
    while time.monotonic() - t0 < hold and not (stop_file and os.path.exists(stop_file)):
        socks = [s.sock for s in open_.values()]
        if not socks:
            if not refill or stats["connects"] >= max_connects:
                break
        r, _, _ = select.select(socks, [], [], 0.05) if socks else ([], [], time.sleep(0.05))
        for sock in r:
            seen = open_[sock.fileno()]
            d = seen._recv(time.monotonic() + 0.01)
            if d and seen.greeting is None:
                seen.buf += d
                if b"\n" in seen.buf:
                    seen.read_greeting(0)
            elif d:
                seen.extra += d
            if seen.closed:
                stats["closed"] += 1
                close_times.append(seen.closed_after)
                del open_[sock.fileno()]
                seen.close()
                done.append(seen)
        while refill and len(open_) < count and stats["connects"] < max_connects:
            open_one()
            if len(open_) < count and stats["refused"] > 3 * max_connects:
                break
    still = list(open_.values())
    for seen in done + still:
        if seen.greeting is None and seen.closed and not seen.extra:
            continue  # dropped before its greeting: told nothing
        seen.judge()
    for seen in still:
        seen.close()
    if stats["dup_nonce"]:
        violation("silent: %d greetings repeated a nonce" % stats["dup_nonce"])
    say("silent: %d connects in %.1f s, %d refused, %d closed by the server (after %s s), %d "
        "still open at the end" % (
            stats["connects"], time.monotonic() - t0, stats["refused"], stats["closed"],
            "%.1f-%.1f" % (min(close_times), max(close_times)) if close_times else "-",
            len(still)))
    if within is not None:
        late = [s for s in still if time.monotonic() - s.t0 > within]
        if late:
            violation("silent: %d connections that never spoke are still open after %.0f s "
                      "(the server closes them after 5 s)" % (len(late), within))


def attack_after(t, a):
    """After the world formed the listener is closed: every connect refused."""
    hold, stop_file = a.get("hold", 30.0), a.get("stop_file")
    actions = []
    for w in a.get("action", "zero").split("-"):
        actions += ["get", "put", "abort"] if w == "pmi" else [w]
    t0 = time.monotonic()
    tries = refused = accepted = 0
    held = []
    while time.monotonic() - t0 < hold and tries < 5000:
        if stop_file and os.path.exists(stop_file):
            break
        tries += 1
        try:
            s = t.connect(timeout=1.0)
        except (ConnectionRefusedError, FileNotFoundError):
            refused += 1
            time.sleep(0.02)
            continue
        except OSError as e:
            say("after: connect: %s" % e)
            refused += 1
            time.sleep(0.02)
            continue
        action = actions[accepted % len(actions)]
        accepted += 1
        seen = Seen(s, t, "after formation (%s)" % action)
        if accepted == 1:
            violation("after formation: %s accepted a connection (the listener should be closed "
                      "once the world forms); %s" % (t.name(), listeners_described(t.port) if t.port else ""))
        seen.read_greeting(0.5)
        payload = {"get": b"cmd=get kvsname=rondo_1 key=PMI_process_mapping\n",
                   "put": b"cmd=put kvsname=rondo_1 key=PMI_process_mapping value=(vector,(0,2,1))\n",
                   "abort": b"cmd=abort exitcode=42\n"}.get(action)
        if payload:
            seen.send(payload)
            seen.drain(0.5)
        if accepted == 1:
            say("after formation: the accepted connection's greeting: %s" % show(seen.greeting or b"(none)"))
        if seen.extra:
            violation("after formation: told %s: %s" % (reveals(seen.extra), show(seen.extra)))
        if action == "silent":
            held.append(seen)
        else:
            seen.close()
        time.sleep(0.02)
    for seen in held:
        seen.close()
    say("after formation: %d connects tried in %.1f s: %d refused, %d accepted" % (
        tries, time.monotonic() - t0, refused, accepted))


def attack_refused(t, a):
    try:
        s = t.connect(timeout=2.0)
    except ConnectionRefusedError:
        say("%s: connection refused" % t.name())
        return
    except OSError as e:
        say("%s: %s" % (t.name(), e))
        return
    seen = Seen(s, t, "%s (must be closed)" % t.name())
    seen.read_greeting(0.5)
    violation("%s accepted a connection (greeting: %s)" % (t.name(), show(seen.greeting or b"none")))
    s.close()


def attack_unix_denied(t, a):
    try:
        s = t.connect(timeout=2.0)
    except PermissionError:
        say("uid %d: connect to %s: EACCES" % (os.getuid(), t.unix))
        return
    except OSError as e:
        violation("uid %d: connect to %s failed with %s, not EACCES" % (os.getuid(), t.unix, e))
        return
    seen = Seen(s, t, "uid %d on %s" % (os.getuid(), t.unix))
    seen.read_greeting(1.0)
    if a.get("peercred"):  # the directory was opened to it: the server's own check
        seen.drain(2.0)
        if seen.greeting is None and not seen.extra and seen.closed:
            say("uid %d reached %s; the server closed it without a byte (its peer check)" % (
                os.getuid(), t.unix))
            s.close()
            return
    violation("uid %d connected to %s (greeting %s)" % (os.getuid(), t.unix,
                                                        show(seen.greeting or b"none")))
    seen.send(HELLO1)
    seen.drain(2.0, quiet=0.5)
    if seen.extra:
        violation("uid %d was told %s: %s" % (os.getuid(), reveals(seen.extra), show(seen.extra)))
    s.close()


def attack_fake_server(t, a):
    """A false rendezvous on the port a rank connects to."""
    mode, key, hold = a.get("mode", "downgrade"), a.get("key"), a.get("hold", 10.0)
    stop_file = a.get("stop_file")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", t.port))
    ls.listen(16)
    if a.get("ready_file"):
        open(a["ready_file"], "w").close()
    t0 = time.monotonic()
    conns = hellos = good_hellos = 0
    while time.monotonic() - t0 < hold and conns < 50:
        if stop_file and os.path.exists(stop_file):
            break
        r, _, _ = select.select([ls], [], [], 0.1)
        if not r:
            continue
        c, _ = ls.accept()
        conns += 1
        sn = secrets.token_hex(32)
        if mode == "downgrade":
            c.sendall(GREETING_NONE + b"\n")
        else:
            c.sendall(b"cmd=rondo_greeting version=1 auth=hmac-sha256 nonce=" + sn.encode() + b"\n")
        seen = Seen(c, t, "client %d" % conns)
        got = b""
        verified = False
        deadline = time.monotonic() + 3
        while not seen.closed and time.monotonic() < deadline:
            d = seen._recv(deadline)
            if d is None:
                break
            got += d
            if mode != "downgrade" and b"rondo_auth " in got and b"\n" in got and b"sent_ok" not in got:
                m = re.match(rb"cmd=rondo_auth nonce=([0-9a-f]{64}) mac=([0-9a-f]{64})\n", got)
                if not m:
                    violation("client %d: its auth line is not 'cmd=rondo_auth nonce=<64 hex> "
                              "mac=<64 hex>': %s" % (conns, show(got)))
                    break
                cn = m.group(1).decode()
                if key and m.group(2).decode() != mac(key, "client", sn, cn):
                    violation("client %d: its mac is not HMAC-SHA256(key, 'rondo rendezvous "
                              "client ' + server nonce + ' ' + client nonce)" % conns)
                elif key:
                    verified = True
                    say("client %d: its auth mac verifies" % conns)
                smac = mac(key, "server", sn, cn) if mode == "goodmac" else secrets.token_hex(32)
                c.sendall(("cmd=rondo_auth_ok mac=%s\n" % smac).encode())
                got += b"sent_ok"
            if b"cmd=rondo_hello" in got and b"\n" in got.split(b"cmd=rondo_hello", 1)[1]:
                break
        if b"cmd=rondo_hello" in got:
            hellos += 1
            line = b"cmd=rondo_hello" + got.split(b"cmd=rondo_hello", 1)[1].split(b"\n", 1)[0]
            if mode == "goodmac" and verified:
                say("client %d: after the right mac it said hello: %s" % (conns, show(line)))
                c.sendall(b"cmd=rondo_welcome rc=1 msg=outsider.py's fake server ends the test\n")
                good_hellos += 1
            else:
                violation("client %d told a false server (%s) its hello: %s" % (conns, mode, show(line)))
        else:
            say("client %d: sent %s to the false server (%s), %s" % (
                conns, show(got.replace(b"sent_ok", b""), 100) or "nothing", mode,
                "then closed" if seen.closed else "and waited"))
        c.close()
        if good_hellos:
            break
    ls.close()
    say("fake server (%s): %d connections, %d hellos" % (mode, conns, hellos))
    if mode == "goodmac" and not good_hellos:
        violation("goodmac: no client authenticated and then said hello")


# ---- fuzz --------------------------------------------------------------------------------

TEMPLATES = [
    b"cmd=rondo_greeting version=1 auth=none",
    b"cmd=rondo_greeting version=1 auth=hmac-sha256 nonce=%(sn)s",
    b"cmd=rondo_auth nonce=%(cn)s mac=%(mac)s",
    b"cmd=rondo_auth_ok mac=%(mac)s",
    b"cmd=rondo_hello rank=%(r)s size=%(n)s host=%(h)s run=%(run)s",
    b"cmd=rondo_welcome rc=0 nodes=1 local_rank=0 local_size=2",
    b"cmd=init pmi_version=1 pmi_subversion=1",
    b"cmd=get_maxes",
    b"cmd=get_appnum",
    b"cmd=get_universe_size",
    b"cmd=get_my_kvsname",
    b"cmd=put kvsname=%(kvs)s key=%(k)s value=%(v)s",
    b"cmd=get kvsname=%(kvs)s key=%(k)s",
    b"cmd=barrier_in",
    b"cmd=finalize",
    b"cmd=abort exitcode=%(r)s",
    b"cmd=spawn nprocs=1 execname=/bin/sh",
    b"cmd=",
    b"=",
    b"cmd=rondo_auth",
    b"cmd=rondo_hello",
]
NUMBERS = [b"0", b"1", b"-1", b"2", b"3", b"2147483647", b"2147483648", b"-2147483649",
           b"4294967296", b"4294967297", b"99999999999999999999", b"0x1", b"+0", b"", b" ", b"1e3",
           b"007", b"nan"]
KEYS = [b"PMI_process_mapping", b"P0-businesscard", b"P1-businesscard", b"rondo", b"",
        b"k" * 63, b"k" * 64, b"k" * 65, b"k" * 5000]


def hexish(rng, n=None):
    n = rng.choice([0, 1, 31, 32, 63, 64, 65, 127, 128, 1000]) if n is None else n
    alphabet = rng.choice(["0123456789abcdef", "0123456789ABCDEF", "0123456789abcdefg", "z"])
    return "".join(rng.choice(alphabet) for _ in range(n)).encode()


def fill(rng, tpl, sn, key):
    cn = hexish(rng, 64) if rng.random() < 0.6 else hexish(rng)
    m = hexish(rng, 64) if rng.random() < 0.6 else hexish(rng)
    if key and sn and rng.random() < 0.2:
        # the key's mac over the wrong text, never the right one: the server's
        # own proof reflected, another server nonce, another client nonce
        m = rng.choice([mac(key, "server", sn, cn.decode()),
                        mac(key, "client", secrets.token_hex(32), cn.decode()),
                        mac(key, "client", sn, secrets.token_hex(32))]).encode()
    vals = dict(sn=(sn.encode() if sn and rng.random() < 0.7 else hexish(rng)), cn=cn, mac=m,
                r=rng.choice(NUMBERS), n=rng.choice(NUMBERS), h=rng.choice([b"x", HOSTNAME, b"h" * 300, b""]),
                run=rng.choice([b"-", b"", b"other.0", b"r" * 200]), kvs=rng.choice([b"rondo_1", b"", b"x" * 100]),
                k=rng.choice(KEYS), v=rng.choice([b"v", b"", b"v" * 1023, b"v" * 1024, b"v" * 70000]))
    return tpl % {k.encode(): v for k, v in vals.items()}


def mutate(rng, line):
    line = bytearray(line)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        p = rng.randrange(len(line) + 1)
        if op == 0 and line:      # flip a bit
            q = rng.randrange(len(line))
            line[q] ^= 1 << rng.randrange(8)
        elif op == 1:             # insert a byte
            line[p:p] = bytes([rng.choice([0, 10, 13, 32, 61, 9, 255, rng.randrange(256)])])
        elif op == 2 and line:    # delete
            del line[p:p + rng.randint(1, 8)]
        elif op == 3:             # duplicate a piece
            q = rng.randrange(len(line) + 1)
            line[p:p] = line[min(p, q):max(p, q)]
        elif op == 4:             # truncate
            del line[p:]
        elif op == 5:             # spaces and separators
            line[p:p] = rng.choice([b"  ", b"\r", b"\t", b"==", b" rank=1", b" key=", b" cmd=get"])
        else:                     # garbage tail
            line += os.urandom(rng.randint(1, 64))
    return bytes(line)


def fuzz_input(rng, sn, key):
    """One input and its kind, at most 100 KiB."""
    kind, data = fuzz_input_any(rng, sn, key)
    return kind, data[:100 * 1024]


def fuzz_input_any(rng, sn, key):
    kind = rng.choice(["random", "printable", "truncated", "huge", "prefix", "hexlen", "wrongmac",
                       "lines", "mutated", "separators", "template"])
    tpl = rng.choice(TEMPLATES)
    if kind == "random":
        return kind, os.urandom(rng.choice([1, 2, 10, 100, 1000, 4096, 70000]))
    if kind == "printable":
        n = rng.choice([1, 10, 100, 5000])
        return kind, bytes(rng.randrange(32, 127) for _ in range(n)) + b"\n"
    if kind == "truncated":
        line = fill(rng, tpl, sn, key)
        return kind, line[:rng.randrange(len(line) + 1)]
    if kind == "huge":
        body = fill(rng, tpl, sn, key) + b" " + rng.choice([b"A", b"k=v ", b"\x00"]) * rng.randint(60000, 100000)
        return kind, body[:100 * 1024] + (b"\n" if rng.random() < 0.5 else b"")
    if kind == "prefix":
        line = fill(rng, tpl, sn, key)
        return kind, line[:rng.randrange(len(line) + 1)] + os.urandom(rng.randint(1, 200)) + b"\n"
    if kind == "hexlen":
        return kind, b"cmd=rondo_auth nonce=" + hexish(rng) + b" mac=" + hexish(rng) + b"\n"
    if kind == "wrongmac":
        cn = secrets.token_hex(32)
        m = mac(secrets.token_hex(32), "client", sn or "0" * 64, cn)
        return kind, ("cmd=rondo_auth nonce=%s mac=%s\n" % (cn, m)).encode() + fill(rng, TEMPLATES[4], sn, key) + b"\n"
    if kind == "lines":
        return kind, b"".join(fill(rng, rng.choice(TEMPLATES), sn, key) + rng.choice([b"\n", b"\r\n"])
                              for _ in range(rng.randint(2, 20)))
    if kind == "mutated":
        return kind, mutate(rng, fill(rng, tpl, sn, key) + b"\n")
    if kind == "separators":
        return kind, rng.choice([b"\n", b"\n" * 1000, b"\r\n", b" \n", b"cmd=rondo_auth  nonce= mac= \n",
                                 b"cmd=rondo_auth nonce=" + b"0" * 64 + b" nonce=" + b"1" * 64 + b" mac=" + b"2" * 64 + b"\n",
                                 b"cmd=rondo_auth mac=" + b"2" * 64 + b" nonce=" + b"0" * 64 + b"\n",
                                 b"cmd=rondo_auth\tnonce=" + b"0" * 64 + b"\tmac=" + b"2" * 64 + b"\n"])
    return kind, fill(rng, tpl, sn, key) + b"\n"


RANK1 = re.compile(rb"rank=[ \t+]*0*1(?![0-9])")


def authed_input(rng, sn, key):
    """What a key holder that is no rank of the job sends after a right
    handshake: mutated hellos and PMI lines, never one that says rank 1 (the
    job's missing rank, which a key holder may legitimately claim)."""
    tpl = rng.choice([TEMPLATES[4]] * 4 + TEMPLATES[6:17])
    line = fill(rng, tpl, sn, key) + b"\n"
    if rng.random() < 0.5:
        line = mutate(rng, line)
    return RANK1.sub(b"rank=0", line)


def attack_fuzz(t, a):
    count, seconds = a.get("count", 300), a.get("seconds", 20.0)
    key, authed = a.get("key"), a.get("authed", 0.0)
    conc = a.get("concurrency", 16)
    seed = a.get("seed")
    if seed is None:
        seed = secrets.randbelow(1 << 31)
    rng = random.Random(seed)
    say("fuzz: seed %d (--seed %d repeats these inputs), %d inputs, at most %.0f s, %d at once%s" % (
        seed, seed, count, seconds, conc, ", %.0f%% after a right handshake" % (100 * authed) if key and authed else ""))
    log = open(a["log"], "wb") if a.get("log") else None
    t0 = time.monotonic()
    sent = conns = closed_by_server = timed_out = no_greeting = refused = 0
    kinds = {}
    active = {}
    bad_conn = 0

    trusted = t.expect == "none"  # this user's peer on a Unix socket: no key to prove

    def finish(c):
        nonlocal bad_conn
        if trusted:  # it may hear why its hello is turned away, never a welcome or a value
            post = c["seen"].extra
            if b"rondo_welcome rc=0" in post or b"value=" in post:
                bad_conn += 1
                violation("fuzz input %d (%s, this user, no key): told %s: %s" % (
                    c["i"], c["kind"], reveals(post), show(post)))
        elif c["seen"].extra not in (b"", REFUSED) and not c["authed"]:
            bad_conn += 1
            if bad_conn <= 5:
                violation("fuzz input %d (%s): an unauthenticated peer was told %s: %s" % (
                    c["i"], c["kind"], reveals(c["seen"].extra), show(c["seen"].extra)))
        if c["authed"] and (b"rondo_welcome rc=0" in c["post"] or b"value=" in c["post"]):
            bad_conn += 1
            violation("fuzz input %d (after a right handshake, no rank): told %s: %s" % (
                c["i"], reveals(c["post"]), show(c["post"])))
        c["seen"].close(reset=c["reset"])

    i = 0
    while (i < count or active) and time.monotonic() - t0 < seconds:
        while i < count and len(active) < conc and time.monotonic() - t0 < seconds:
            try:
                s = t.connect(timeout=2.0)
            except OSError as e:
                refused += 1
                if refused > 50:
                    violation("fuzz: %d connects failed (last: %s): the server stopped serving" % (refused, e))
                    i = count
                break
            seen = Seen(s, t, "fuzz %d" % i)
            active[s.fileno()] = dict(i=i, seen=seen, state="greet", deadline=time.monotonic() + 0.5,
                                      authed=bool(key) and rng.random() < authed, kind=None, post=b"",
                                      reset=rng.random() < 0.2, cn=None)
            conns += 1
            i += 1
        if not active:
            continue
        r, _, _ = select.select([c["seen"].sock for c in active.values()], [], [], 0.02)
        now = time.monotonic()
        for fd, c in list(active.items()):
            seen = c["seen"]
            if seen.sock in r:
                d = seen._recv(now + 0.01)
                if d:
                    if c["state"] == "greet":
                        seen.buf += d
                        if b"\n" in seen.buf:
                            seen.read_greeting(0)
                    elif c["state"] == "auth":
                        c["post"] += d
                    else:
                        seen.extra += d
                        if c["authed"]:
                            c["post"] += d
            ready = False
            if c["state"] == "greet" and (seen.greeting is not None or now > c["deadline"] or seen.closed):
                if seen.greeting is None and not seen.closed:
                    no_greeting += 1
                if seen.closed:
                    closed_by_server += 1
                    finish(c)
                    del active[fd]
                    continue
                if c["authed"] and seen.nonce:
                    cn, line = auth_line(key, seen.nonce)
                    c["cn"] = cn
                    seen.send(line)
                    c["state"], c["deadline"] = "auth", now + 2.0
                else:
                    ready = True
            if c["state"] == "auth":
                if b"\n" in c["post"]:
                    want = ("cmd=rondo_auth_ok mac=%s\n" % mac(key, "server", seen.nonce, c["cn"])).encode()
                    if not c["post"].startswith(want):
                        violation("fuzz %d: the right key's handshake got %s" % (c["i"], show(c["post"])))
                    c["post"] = c["post"][len(want):]
                    ready = True
                elif seen.closed or now > c["deadline"]:
                    violation("fuzz %d: the right key's handshake got no auth_ok" % c["i"])
                    finish(c)
                    del active[fd]
                    continue
            if ready:
                if c["authed"]:
                    kind, data = "authed", authed_input(rng, seen.nonce, key)
                else:
                    kind, data = fuzz_input(rng, seen.nonce, key)
                    if trusted:  # never the job's missing rank 1, which this user may claim
                        data = RANK1.sub(b"rank=0", data)
                c["kind"] = kind
                kinds[kind] = kinds.get(kind, 0) + 1
                if log:
                    log.write(b"--- %d %s\n" % (c["i"], kind.encode()) + data + b"\n")
                seen.send(data)
                sent += 1
                c["state"], c["deadline"] = "sent", now + 0.3
                continue
            if c["state"] == "sent" and (seen.closed or now > c["deadline"]):
                if seen.closed:
                    closed_by_server += 1
                else:
                    timed_out += 1
                finish(c)
                del active[fd]
    for c in active.values():
        finish(c)
    if log:
        log.close()
    el = time.monotonic() - t0
    say("fuzz: %d inputs sent over %d connections in %.1f s: %d closed by the server, %d closed by "
        "the outsider after 0.3 s of silence, %d without a greeting, %d connects failed; %d "
        "connections told more than the greeting" % (sent, conns, el, closed_by_server, timed_out,
                                                     no_greeting, refused, bad_conn))
    say("fuzz: inputs by kind: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    # the server still serves
    try:
        s = t.connect(timeout=2.0)
        seen = Seen(s, t, "after the fuzz")
        seen.read_greeting(2.0)
        say("fuzz: afterwards the server still greets: %s" % show(seen.greeting or b"(no greeting)", 80))
        s.close()
    except OSError as e:
        violation("fuzz: afterwards the server does not answer: %s" % e)
    print("FUZZ_SENT=%d" % sent, flush=True)


# ---- looking without connecting ----------------------------------------------------------

def listening(port, inodes=None):
    """Local addresses in state LISTEN on TCP port, from /proc/net/tcp{,6}
    (their socket inodes appended to inodes)."""
    found = []
    for f, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            rows = open(f).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            parts = row.split()
            addr, p = parts[1].split(":")
            if int(p, 16) != port or parts[3] != "0A":
                continue
            if inodes is not None:
                inodes.append(parts[9])
            raw = bytes.fromhex(addr)
            if v6:
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                found.append(socket.inet_ntop(socket.AF_INET6, raw))
            else:
                found.append(socket.inet_ntop(socket.AF_INET, raw[::-1]))
    return found


def listeners_described(port):
    """Who listens on TCP port: address, pid and command, from /proc."""
    inodes = []
    addrs = listening(port, inodes)
    who = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    comm = open("/proc/%s/comm" % pid).read().strip()
                    who.append("pid %s (%s) fd %s" % (pid, comm, fd))
        except OSError:
            continue
    return "%s listening on port %d: %s" % (" ".join(addrs) or "nobody", port, ", ".join(who) or "no process found")


def unix_listening(path):
    try:
        for row in open("/proc/net/unix").read().splitlines()[1:]:
            parts = row.split()
            if len(parts) >= 8 and parts[7] == path and int(parts[3], 16) & 0x10000:
                return True
    except OSError:
        pass
    return False


def alive(pid):
    """pid runs (a zombie that its parent has not waited for does not)."""
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def attack_wait_listen(t, a):
    deadline = time.monotonic() + a.get("hold", 60.0)
    while time.monotonic() < deadline:
        if t.unix and unix_listening(t.unix):
            print("unix", flush=True)
            return
        if t.port and listening(t.port):
            print("tcp", flush=True)
            return
        if a.get("pid") and not alive(a["pid"]):
            break
        time.sleep(0.05)
    print("none", flush=True)
    sys.exit(1)


def attack_listeners(t, a):
    print(" ".join(listening(t.port)) or "none", flush=True)


ATTACKS = {
    "impostor": attack_impostor, "wrong-mac": attack_wrong_mac, "wrong-key": attack_wrong_key,
    "control": attack_control, "proven": attack_proven, "wrong-hellos": attack_wrong_hellos, "pmi": attack_pmi, "zero": attack_zero, "nul": attack_nul,
    "silent": attack_silent, "after": attack_after, "refused": attack_refused,
    "unix-denied": attack_unix_denied, "fake-server": attack_fake_server, "fuzz": attack_fuzz,
    "wait-listen": attack_wait_listen, "listeners": attack_listeners,
}


def main(argv):
    if len(argv) < 1 or argv[0] not in ATTACKS:
        sys.stderr.write(__doc__)
        return 2
    name, a = argv[0], {}
    conv = {"--port": ("port", int), "--unix": ("unix", str), "--key": ("key", str),
            "--count": ("count", int), "--seconds": ("seconds", float), "--hold": ("hold", float),
            "--max-connects": ("max_connects", int), "--stop-file": ("stop_file", str),
            "--ready-file": ("ready_file", str), "--action": ("action", str), "--mode": ("mode", str),
            "--seed": ("seed", int), "--concurrency": ("concurrency", int), "--log": ("log", str),
            "--authed": ("authed", float), "--expect": ("expect", str), "--pid": ("pid", int),
            "--closed-within": ("closed_within", float), "--host": ("host", str)}
    args = argv[1:]
    while args:
        opt = args.pop(0)
        if opt in ("--refill", "--partial", "--peercred"):
            a[opt[2:]] = True
            continue
        if opt not in conv or not args:
            sys.stderr.write("outsider.py: bad option %s\n" % opt)
            return 2
        k, f = conv[opt]
        a[k] = f(args.pop(0))
    if not a.get("port") and not a.get("unix"):
        sys.stderr.write("outsider.py: --port or --unix\n")
        return 2
    t = Target(a.get("port"), a.get("unix"), a.get("expect", "hmac"), a.get("host", "127.0.0.1"))
    ATTACKS[name](t, a)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
