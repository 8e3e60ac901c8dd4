#!/bin/sh
# The datasets:
#   - Fashion-MNIST from Debian's dataset-fashion-mnist trains (a few steps)
#     with the shapes of its IDX files;
#   - broken IDX files (wrong magic, wrong dimension count, truncated pixels,
#     a truncated or corrupted gzip stream, extra bytes, fewer labels than
#     images, a label out of range, a missing file) and broken digits files
#     (a bad line, missing samples) stop both ranks with a message that names
#     the file and what is wrong;
#   - a file missing on one rank only stops the other rank too, and so do
#     data that differ between ranks;
#   - synthetic data has the asked shape.
. "${top_srcdir:-.}/tests/train/common.sh"
fashion=/usr/share/datasets/fashion-mnist

[ -f "$fashion/train-images-idx3-ubyte.gz" ] ||
  fail "$fashion is missing: apt-get install dataset-fashion-mnist (scripts/common.sh does)"
run 2 --dataset fashion-mnist --max-steps 20 --hidden 32 || { show; fail "Fashion-MNIST"; }
grep -q '^data       fashion-mnist: 60000 training and 10000 test samples, 784 features, 10 classes' \
  "$tmp/out" || { show; fail "Fashion-MNIST's shape"; }
pass "Fashion-MNIST: 60000 + 10000 samples of 784 features, 20 steps on 2 ranks"

# broken_idx DIR CASE: a Fashion-MNIST-shaped directory with one defect.
broken_idx() {
  "$py" - "$1" "$2" <<'PY'
import gzip, os, struct, sys
d, case = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)
def idx(path, dims, payload, magic=None, raw=False):
    head = struct.pack(">I", magic if magic is not None else 0x0800 | len(dims))
    head += b"".join(struct.pack(">I", n) for n in dims)
    data = head + payload
    if raw:
        open(path, "wb").write(data)
    else:
        gzip.open(path, "wb").write(data)
n = 6
images = lambda k: bytes((i * 7) % 256 for i in range(k * 28 * 28))
labels = lambda k: bytes(i % 10 for i in range(k))
files = {
    "train-images-idx3-ubyte.gz": ([n, 28, 28], images(n)),
    "train-labels-idx1-ubyte.gz": ([n], labels(n)),
    "t10k-images-idx3-ubyte.gz": ([3, 28, 28], images(3)),
    "t10k-labels-idx1-ubyte.gz": ([3], labels(3)),
}
for name, (dims, payload) in files.items():
    idx(os.path.join(d, name), dims, payload)
ti, tl = os.path.join(d, "train-images-idx3-ubyte.gz"), os.path.join(d, "train-labels-idx1-ubyte.gz")
if case == "magic":
    idx(ti, [n, 28, 28], images(n), magic=0x0000080b)
elif case == "dims":
    idx(ti, [n, 784], images(n), magic=0x00000802)
elif case == "short":
    idx(ti, [n, 28, 28], images(n)[:-100])
elif case == "extra":
    idx(ti, [n, 28, 28], images(n) + b"\0")
elif case == "labels":
    idx(tl, [n - 1], labels(n - 1))
elif case == "label-range":
    idx(tl, [n], labels(n - 1) + b"\x0c")
elif case == "gzip-truncated":
    data = open(ti, "rb").read()
    open(ti, "wb").write(data[: len(data) // 2])
elif case == "gzip-corrupt":
    data = bytearray(open(ti, "rb").read())
    for i in range(20, 40):
        data[i] ^= 0x55
    open(ti, "wb").write(bytes(data))
elif case == "missing":
    os.remove(tl)
PY
}

expect_refusal() { # CASE PATTERN
  dir=$tmp/idx-$1
  broken_idx "$dir" "$1" || fail "making the $1 files"
  run 2 --dataset fashion-mnist --data-dir "$dir"
  rc=$?
  [ $rc = 1 ] || { show; fail "$1: exit $rc, expected 1"; }
  grep -q "^rondo-train: rank 0: $dir/.*$2" "$tmp/err" || { show; fail "$1: rank 0's message"; }
  grep -q "^rondo-train: rank 1: .*$dir/.*$2" "$tmp/err" || { show; fail "$1: rank 1's message"; }
  echo "  $1: $(sed -n 's/^rondo-train: rank 0: //p' "$tmp/err")"
}
expect_refusal magic "train-images-idx3-ubyte.gz: magic number 0x0000080b, expected 0x00000803"
expect_refusal dims "train-images-idx3-ubyte.gz: magic number 0x00000802, expected 0x00000803"
expect_refusal short "train-images-idx3-ubyte.gz: truncated: 4604 of the 4704 bytes"
expect_refusal extra "train-images-idx3-ubyte.gz: data after the end its header gives"
expect_refusal labels "train-labels-idx1-ubyte.gz has 5 labels but .*train-images-idx3-ubyte.gz has 6 images"
expect_refusal label-range "train-labels-idx1-ubyte.gz: label 12 of sample 5 is not below 10"
expect_refusal gzip-truncated "train-images-idx3-ubyte.gz: truncated gzip data: the stream ends early"
expect_refusal gzip-corrupt "train-images-idx3-ubyte.gz: corrupt gzip data: invalid stored block lengths"
expect_refusal missing "train-labels-idx1-ubyte.gz: cannot open: No such file or directory"
pass "9 broken Fashion-MNIST directories are refused on both ranks, naming the file and the defect"

# digits: a bad line and missing samples
mkdir -p "$tmp/digits-bad" "$tmp/digits-short"
gzip -dc "$srcdir/examples/train/data/optdigits.tra.gz" | sed '7s/,16,/,17,/' | gzip >"$tmp/digits-bad/optdigits.tra.gz"
cp "$srcdir/examples/train/data/optdigits.tes.gz" "$tmp/digits-bad/"
gzip -dc "$srcdir/examples/train/data/optdigits.tra.gz" | head -n 100 | gzip >"$tmp/digits-short/optdigits.tra.gz"
cp "$srcdir/examples/train/data/optdigits.tes.gz" "$tmp/digits-short/"
run 2 --data-dir "$tmp/digits-bad"
[ $? = 1 ] && grep -q "rank 1: .*digits-bad/optdigits.tra.gz line 7: not 64 values in 0..16 and a class in 0..9" "$tmp/err" ||
  { show; fail "a digits file with a value of 17"; }
run 2 --data-dir "$tmp/digits-short"
[ $? = 1 ] && grep -q "rank 1: .*digits-short/optdigits.tra.gz: 100 samples, the UCI split has 3823" "$tmp/err" ||
  { show; fail "a digits file with 100 samples"; }
pass "digits files with a bad value or missing samples are refused, naming the file and the line"

# One rank's missing file reaches the other (MPMD: rank 1 gets a directory
# without the files).
timeout --kill-after=10 300 "$mpiexec" -n 1 "$train" : -n 1 "$train" --data-dir "$tmp/empty" \
  </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] && grep -q "^rondo-train: rank 0: stopping: rank 1 reports: $tmp/empty/optdigits.tra.gz: cannot open" "$tmp/err" ||
  { show; fail "a file missing on rank 1 only"; }
pass "a dataset missing on rank 1 only stops rank 0 too, with rank 1's reason"

# Same shape, other contents on rank 1: one value of one sample differs.
mkdir -p "$tmp/digits-other"
gzip -dc "$srcdir/examples/train/data/optdigits.tra.gz" | sed '7s/,16,/,15,/' | gzip >"$tmp/digits-other/optdigits.tra.gz"
cp "$srcdir/examples/train/data/optdigits.tes.gz" "$tmp/digits-other/"
timeout --kill-after=10 300 "$mpiexec" -n 1 "$train" : -n 1 "$train" --data-dir "$tmp/digits-other" \
  </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] && grep -q "^rondo-train: rank 1: .*the ranks loaded different digits data" "$tmp/err" ||
  { show; fail "different data on rank 1"; }
pass "ranks that loaded different data (one value of one sample) stop before training"

run 2 --dataset synthetic --samples 500 --features 33 --classes 7 --hidden 8 --epochs 2 ||
  { show; fail "synthetic"; }
grep -q '^data       synthetic: 500 training and 100 test samples, 33 features, 7 classes' "$tmp/out" ||
  { show; fail "synthetic shape"; }
pass "synthetic: 500 + 100 samples of 33 features in 7 classes"
