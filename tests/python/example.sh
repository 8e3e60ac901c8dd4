#!/bin/sh
# The Python examples train at 2 ranks, a short run each (1 epoch on the
# first 6000 images): a test accuracy above 0.6 (they get 0.68-0.69; an
# untrained or broken model gets about 0.1), and both ranks must have
# trained.
# - examples/python/train_fashion_mnist.py: rondo.torch as Horovod;
# - examples/python/train_ddp.py: DistributedDataParallel on the "rondo"
#   backend, then on gloo: the same loss and accuracy to the last digit
#   (at 2 ranks every sum is a + b, so the backends agree bit for bit).
# Skipped (77) without torch or numpy for /usr/bin/python3, without the
# Fashion-MNIST files (Debian: apt-get install dataset-fashion-mnist), or
# with a sanitizer build of the library.
set -u
. "${top_srcdir:-.}/tests/python/common.sh"
rondo_python_env numpy torch
data=/usr/share/datasets/fashion-mnist
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
         t10k-labels-idx1-ubyte; do
  [ -f "$data/$f.gz" ] || { echo "skipped: no $data/$f.gz (dataset-fashion-mnist)"; exit 77; }
done
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "FAIL: $*"; exit 1; }

# run_example SCRIPT [ARGS]: runs it at 2 ranks and checks its output; sets
# $acc (the final accuracy) and $loss (rank 0's train loss).
run_example() {
  script=$1
  shift
  # timeout: a hang (a rank stuck in a collective) fails instead of blocking
  # make check.
  PYTHONPATH=$rondo_pythonpath${PYTHONPATH:+:$PYTHONPATH} \
    timeout --kill-after=10 "${RONDO_TEST_TIMEOUT:-180}" "$srcdir/tests/mpiexec" -n 2 "$python" \
    "$srcdir/examples/python/$script" --epochs 1 --limit 6000 --data "$data" "$@" \
    > "$out" 2>&1 || fail "$script exited with status $?"
  # Each rank prints its shard: both must be there, with half the images each.
  for r in 0 1; do
    # (not anchored: the two ranks' lines can share one line of mpiexec's output)
    grep -q "rank $r of 2: 3000 training images" "$out" ||
      fail "$script: no line from rank $r of 2"
  done
  acc=$(sed -n 's/^final test accuracy: \([0-9.]*\) (2 ranks, 1 epochs, .*/\1/p' "$out")
  [ -n "$acc" ] || fail "$script: no 'final test accuracy: ... (2 ranks, 1 epochs' line"
  loss=$(sed -n 's/^epoch 1: train loss \([0-9.]*\) .*/\1/p' "$out")
  # awk compares as numbers: exit 0 when acc > 0.6.
  awk -v a="$acc" 'BEGIN { exit !(a + 0 > 0.6) }' ||
    fail "$script: test accuracy $acc is not above 0.6"
  cat "$out"
  echo "ok: $script $*: 2 ranks, 1 epoch on 6000 images: test accuracy $acc > 0.6"
}

run_example train_fashion_mnist.py

run_example train_ddp.py
grep -q "images per epoch on rondo" "$out" || fail "train_ddp.py did not run on rondo"
rondo_acc=$acc rondo_loss=$loss
run_example train_ddp.py --backend gloo
[ "$acc" = "$rondo_acc" ] && [ "$loss" = "$rondo_loss" ] ||
  fail "DDP on rondo (loss $rondo_loss, accuracy $rondo_acc) and on gloo" \
    "(loss $loss, accuracy $acc) differ"
echo "ok: DDP on rondo and on gloo: the same loss ($loss) and accuracy ($acc)"
exit 0
