"""An independent rondo-train: the same synthetic data, shuffles,
initialization, model, loss and SGD, written from docs/train.md in plain
Python (double precision, no BLAS, no MPI), for a few steps.

  reference.py OUT --samples N --features F --classes C --hidden H1,H2
               --batch B --steps K --epochs E --lr X --momentum X
               --weight-decay X --warmup-epochs X --seed S

writes the variables after K steps in rondo-train's weight-file layout
(float32, W then b per layer), for tests/train/weights.py to compare with
rondo-train --save-weights. Only the cosine schedule is implemented.
"""
import argparse
import math
import struct

MASK = (1 << 64) - 1
RNG_INIT, RNG_SHUFFLE, RNG_SYNTHETIC = 1, 2, 3


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


class Rng:
    """xoshiro256** seeded by splitmix64, as examples/train/rng.h."""

    def __init__(self, seed, purpose, index):
        x = (seed ^ (purpose * 0xD1B54A32D192ED03) ^ (index * 0x8CB92BA72F3D8DD7)) & MASK
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & MASK
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
            self.s.append(z ^ (z >> 31))

    def next(self):
        s = self.s
        x = (s[1] * 5) & MASK
        result = ((((x << 7) | (x >> 57)) & MASK) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & MASK
        return result

    def uniform(self):
        return (self.next() >> 40) * 2.0 ** -24

    def below(self, n):
        m = self.next() * n
        low = m & MASK
        if low < n:
            threshold = ((1 << 64) - n) % n
            while low < threshold:
                m = self.next() * n
                low = m & MASK
        return m >> 64


def synthetic(a):
    r = Rng(a.seed, RNG_SYNTHETIC, 0)
    proto = [[r.below(256) for _ in range(a.features)] for _ in range(a.classes)]
    r = Rng(a.seed, RNG_SYNTHETIC, 1)
    xs, ys = [], []
    for _ in range(a.samples):
        c = r.below(a.classes)
        ys.append(c)
        xs.append([min(255, max(0, proto[c][f] + r.below(257) - 128)) for f in range(a.features)])
    return xs, ys


def normalize(xs, features):
    n = len(xs)
    out = [[0.0] * features for _ in xs]
    for f in range(features):
        mean = sum(x[f] for x in xs) / n
        var = sum(x[f] * x[f] for x in xs) / n - mean * mean
        inv = 1.0 / math.sqrt(var) if var > 1e-12 else 0.0
        for i, x in enumerate(xs):
            out[i][f] = (x[f] - mean) * inv
    return out


def init(sizes, seed):
    layers = []
    for l in range(1, len(sizes)):
        fan_in, fan_out = sizes[l - 1], sizes[l]
        last = l == len(sizes) - 1
        limit = math.sqrt(6.0 / (fan_in + fan_out)) if last else math.sqrt(6.0 / fan_in)
        r = Rng(seed, RNG_INIT, l)
        W = [[f32((2.0 * r.uniform() - 1.0) * limit) for _ in range(fan_in)] for _ in range(fan_out)]
        layers.append([W, [0.0] * fan_out])
    return layers


def gradients(layers, xs, ys):
    """Sums over the rows of the loss gradient, per layer [dW, db]."""
    grads = [[[[0.0] * len(W[0]) for _ in W], [0.0] * len(b)] for W, b in layers]
    for x, y in zip(xs, ys):
        acts = [x]
        for i, (W, b) in enumerate(layers):
            z = [b[o] + sum(w * v for w, v in zip(W[o], acts[-1])) for o in range(len(W))]
            acts.append(z if i == len(layers) - 1 else [max(0.0, v) for v in z])
        z = acts[-1]
        top = max(z)
        e = [math.exp(v - top) for v in z]
        s = sum(e)
        delta = [v / s for v in e]
        delta[y] -= 1.0
        for i in range(len(layers) - 1, -1, -1):
            W = layers[i][0]
            a = acts[i]
            dW, db = grads[i]
            for o in range(len(W)):
                db[o] += delta[o]
                for k in range(len(a)):
                    dW[o][k] += delta[o] * a[k]
            if i > 0:
                delta = [sum(delta[o] * W[o][k] for o in range(len(W))) if a[k] > 0 else 0.0
                         for k in range(len(a))]
    return grads


def lr_at(a, e):
    if e < a.warmup_epochs:
        return a.lr * e / a.warmup_epochs
    span = a.epochs - a.warmup_epochs
    t = (e - a.warmup_epochs) / span if span > 0 else 1.0
    return 0.5 * a.lr * (1 + math.cos(math.pi * min(t, 1.0)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    for name in ("samples", "features", "classes", "batch", "steps", "epochs", "seed"):
        p.add_argument("--" + name, type=int, required=True)
    for name in ("lr", "momentum", "weight-decay", "warmup-epochs"):
        p.add_argument("--" + name, type=float, required=True)
    p.add_argument("--hidden", required=True)
    a = p.parse_args()
    raw, ys = synthetic(a)
    xs = normalize(raw, a.features)
    sizes = [a.features] + [int(h) for h in a.hidden.split(",")] + [a.classes]
    layers = init(sizes, a.seed)
    velocity = [[[[0.0] * len(W[0]) for _ in W], [0.0] * len(b)] for W, b in layers]
    n, epoch, offset = a.samples, 0, 0
    for _ in range(a.steps):
        perm = list(range(n))
        r = Rng(a.seed, RNG_SHUFFLE, epoch)
        for i in range(n, 1, -1):
            j = r.below(i)
            perm[i - 1], perm[j] = perm[j], perm[i - 1]
        rows = perm[offset:offset + a.batch]
        grads = gradients(layers, [xs[i] for i in rows], [ys[i] for i in rows])
        lr = lr_at(a, epoch + (offset + len(rows)) / n)
        for (W, b), (dW, db), (vW, vb) in zip(layers, grads, velocity):
            for o in range(len(W)):
                for k in range(len(W[o])):
                    g = dW[o][k] / len(rows) + a.weight_decay * W[o][k]
                    vW[o][k] = a.momentum * vW[o][k] + g
                    W[o][k] -= lr * vW[o][k]
                g = db[o] / len(rows)
                vb[o] = a.momentum * vb[o] + g
                b[o] -= lr * vb[o]
        offset += len(rows)
        if offset == n:
            epoch, offset = epoch + 1, 0
    values = [v for W, b in layers for v in [w for row in W for w in row] + b]
    open(a.out, "wb").write(struct.pack("<%df" % len(values), *values))


main()
