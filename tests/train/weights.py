"""Compares rondo-train weight files (docs/train.md: every variable as
little-endian float32, layer by layer, W then b), independently of rondo.

  weights.py same A B             A and B hold identical bytes
  weights.py close A B ABS REL    every |a - b| <= ABS + REL * |a|
  weights.py count A N            A holds N float32 values

Prints the largest differences; exits 1 when the check fails.
"""
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    if len(data) % 4:
        sys.exit("%s: %d bytes is not a whole number of float32" % (path, len(data)))
    return struct.unpack("<%df" % (len(data) // 4), data)


def main():
    mode, a_path = sys.argv[1], sys.argv[2]
    a = load(a_path)
    if mode == "count":
        want = int(sys.argv[3])
        print("%s: %d values, expected %d" % (a_path, len(a), want))
        return 0 if len(a) == want else 1
    b = load(sys.argv[3])
    if len(a) != len(b):
        print("%s has %d values, %s has %d" % (a_path, len(a), sys.argv[3], len(b)))
        return 1
    if mode == "same":
        diff = sum(1 for x, y in zip(a, b) if struct.pack("<f", x) != struct.pack("<f", y))
        print("%d of %d values differ in their bits" % (diff, len(a)))
        return 0 if diff == 0 else 1
    abs_tol, rel_tol = float(sys.argv[4]), float(sys.argv[5])
    worst_abs = max(abs(x - y) for x, y in zip(a, b))
    worst_rel = max(abs(x - y) / max(abs(x), 1e-30) for x, y in zip(a, b))
    bad = sum(1 for x, y in zip(a, b) if not abs(x - y) <= abs_tol + rel_tol * abs(x))
    print("%d values: largest |a-b| %.3g, largest |a-b|/|a| %.3g; %d outside %g + %g|a|"
          % (len(a), worst_abs, worst_rel, bad, abs_tol, rel_tol))
    return 0 if bad == 0 else 1


sys.exit(main())
