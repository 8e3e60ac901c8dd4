"""An impostor rank 0 for tests/launch/variables.sh: it listens where a
job's rank 0 would (TCP on 127.0.0.1:PORT, or the Unix socket PATH) and
answers the first connection the way MODE says, so that a real rank's
client-side checks can be seen to refuse it:

  none      greets without asking for a key
  badproof  asks for a key, then "proves" it with a MAC it cannot know
  keyed     asks for a key (a keyless rank must say it has none)
  http      answers like a web server

usage: fake_rank0.py MODE (tcp PORT | unix PATH)
Prints "listening" once it listens; ends after one connection or 60 s.
"""
import os
import secrets
import socket
import sys

mode, kind, where = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "unix":
    os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
    if os.path.exists(where):
        os.unlink(where)
    s = socket.socket(socket.AF_UNIX)
    s.bind(where)
else:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(where)))
s.listen(4)
s.settimeout(60)
print("listening", flush=True)
c, _ = s.accept()
c.settimeout(30)
nonce = secrets.token_hex(32)
greeting = {
    "none": "cmd=rondo_greeting version=1 auth=none\n",
    "badproof": "cmd=rondo_greeting version=1 auth=hmac-sha256 nonce=%s\n" % nonce,
    "keyed": "cmd=rondo_greeting version=1 auth=hmac-sha256 nonce=%s\n" % nonce,
    "http": "HTTP/1.1 400 Bad Request\r\n\r\n",
}[mode]
c.sendall(greeting.encode())
if mode == "badproof":
    c.recv(4096)  # the rank's answer, whatever it is
    c.sendall(("cmd=rondo_auth_ok mac=%s\n" % ("0" * 64)).encode())
try:
    c.recv(4096)  # until the rank closes
except OSError:
    pass
c.close()
if kind == "unix":
    os.unlink(where)
