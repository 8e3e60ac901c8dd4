#!/bin/sh
# A job across two emulated hosts (tests/multihost/netbed.sh), started the
# way torchrun starts one on a cluster: one torchrun per host, --nnodes 2,
# the c10d rendezvous on the first host, 4 ranks. rondo must find 2 nodes of
# 2 ranks and choose as it does for the same job under mpiexec -hosts:
#   - rondo-info's topology, algorithms and choices equal mpiexec's (with
#     RONDO_NET_CALIBRATE=off, so that a measured network cannot differ);
#   - the collectives test passes every check on every rank, and rank 0
#     alone warns once that the rendezvous (no key, across hosts) is not
#     authenticated.
# Skipped (77) without torch, or where the bed cannot be built (not root).
. "${top_srcdir:-.}/tests/launch/common.sh"
needs_torch
needs_mpich
export PYTHONPATH=$rondo_pythonpath${PYTHONPATH:+:$PYTHONPATH}
export RONDO_NET_CALIBRATE=off
bed=$srcdir/tests/multihost/netbed.sh
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }

# on_each_host OUT PROGRAM: one torchrun per host runs PROGRAM on 2 ranks
# there; OUT gets everything.
on_each_host() {
  cat > "$tmp/host.sh" <<EOS
#!/bin/sh
exec timeout --kill-after=10 240 "$python" -m torch.distributed.run $torchrun_flags \\
  --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d \\
  --rdzv_endpoint "\$NETBED_HOST0:29400" --rdzv_id rondo-test --no_python "$(abs "$2")"
EOS
  chmod +x "$tmp/host.sh"
  sh "$bed" -H 2 -e -- "$tmp/host.sh" > "$1" 2>&1
}

on_each_host "$tmp/t" "$info"
s=$?
[ "$s" = 77 ] && { cat "$tmp/t"; exit 77; }
[ "$s" = 0 ] || { cat "$tmp/t"; fail "torchrun rondo-info on two hosts exited with $s"; }
sh "$bed" -H 2 -- -n 4 -ppn 2 "$info" > "$tmp/m" 2>&1 || { cat "$tmp/m"; fail "mpiexec rondo-info on two hosts"; }
same_as_mpiexec "$tmp/t" "$tmp/m" "4 ranks on 2 node(s) of 2-2 ranks"
pass "one torchrun per host, 4 ranks: 2 nodes of 2 ranks, the same topology and choices as mpiexec -hosts"

# Across hosts without a key the rendezvous is unauthenticated: rank 0, and
# only rank 0, says so once at the default log level.
RONDO_LOG=warn on_each_host "$tmp/c" "$builddir/tests/mpi/test_collectives" ||
  { cat "$tmp/c"; fail "torchrun test_collectives on two hosts exited with $?"; }
[ "$(grep -c "rendezvous at .* is not authenticated: anyone who reaches that port can join or end this job" "$tmp/c")" = 1 ] &&
  grep "is not authenticated" "$tmp/c" | grep -q "\[rondo 0\] WARN" ||
  { cat "$tmp/c"; fail "across hosts without a key: not one warning from rank 0 that the rendezvous is unauthenticated"; }
grep -q "test_collectives (4 ranks): [0-9]* checks, 0 failed" "$tmp/c" ||
  { cat "$tmp/c"; fail "torchrun test_collectives on two hosts: no '4 ranks: N checks, 0 failed'"; }
pass "one torchrun per host: rank 0 warns once that the rendezvous is unauthenticated; test_collectives at 4 ranks on 2 nodes, $(grep -o "test_collectives (4 ranks): [0-9]* checks, 0 failed" "$tmp/c" | sed 's/^.*: //')"
