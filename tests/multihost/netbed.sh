#!/bin/sh
# The multi-host test bed: emulated hosts on one machine.
#
#   tests/multihost/netbed.sh [-H hosts] [-r rate] -- MPIEXEC-ARGS...
#   tests/multihost/netbed.sh [-H hosts] [-r rate] -e -- COMMAND...
#
# makes HOSTS network namespaces (default 2), each with one veth link to a
# bridge in a switch namespace, and runs "mpiexec MPIEXEC-ARGS" with one
# hydra proxy per namespace (-hosts h1,h2,...; add -ppn N or -n N as usual).
# With -e it runs COMMAND on every host at once instead, as a launcher of
# its own would (torchrun, one per host): NETBED_HOST is the host's index
# (0, 1, ...), NETBED_HOST0 the first host's name; UCX_TLS=tcp as below.
# The hosts know each other's names (an /etc/hosts of their own, which
# "ip netns exec" mounts from /etc/netns/NAME/hosts).
# To MPI each namespace is its own node (MPI_COMM_TYPE_SHARED splits by
# proxy), and traffic between them crosses the links:
#   - UCX is restricted to TCP (UCX_TLS=tcp; with shared memory allowed it
#     would bypass the links between namespaces of one kernel);
#   - -r RATE rate-limits every host's link in both directions with tbf
#     (tc syntax: 1gbit, 10gbit, 500mbit); no delay (netem is absent here).
# Everything lives in namespaces it creates (addresses 10.199.0.0/24 inside
# them; nothing is added to the machine's own namespace), named after this
# process, so several beds can run at once. All of it is removed on exit,
# also after a failure or a signal, which stops mpiexec and whatever still
# runs in the namespaces first (not after SIGKILL: then "ip netns list"
# shows the rb<pid>-* namespaces to delete, and "ip netns pids" what runs
# in them). mpiexec runs inside the switch namespace, where the bridge has
# the gateway address the proxies call back.
#
# Needs root, ip (iproute2) and, with -r, tc; without them it exits 77 (the
# automake code for "skipped") and says why.
# Exit status: mpiexec's, or 99 when the bed cannot be built.
set -u
hosts=2
rate=
here=$(cd "$(dirname "$0")" && pwd)
each=0
while [ $# -gt 0 ]; do
  case $1 in
    -H) hosts=$2; shift 2 ;;
    -e) each=1; shift ;;
    -r) rate=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "netbed: unknown option $1 (usage: netbed.sh [-H hosts] [-r rate] -- mpiexec args)" >&2
       exit 99 ;;
  esac
done
case $hosts in ''|*[!0-9]*) echo "netbed: -H needs a host count, not '$hosts'" >&2; exit 99 ;; esac
[ "$hosts" -ge 1 ] && [ "$hosts" -le 50 ] || { echo "netbed: -H must be 1-50" >&2; exit 99; }

skip() { echo "netbed: skipped: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces"
command -v ip >/dev/null 2>&1 || skip "needs ip (Debian package iproute2)"
[ -z "$rate" ] || command -v tc >/dev/null 2>&1 || skip "needs tc (Debian package iproute2)"

# tc rate (1gbit, 500mbit, 10gbit, 125mbps, 2000000) -> the tbf bucket, bytes.
burst=
if [ -n "$rate" ]; then
  burst=$(echo "$rate" | awk '
    match(tolower($0), /^[0-9]+(\.[0-9]+)?/) {
      v = substr($0, 1, RLENGTH); u = tolower(substr($0, RLENGTH + 1))
      m["bit"] = 1/8; m["kbit"] = 1e3/8; m["mbit"] = 1e6/8; m["gbit"] = 1e9/8
      m[""] = 1/8; m["bps"] = 1; m["kbps"] = 1e3; m["mbps"] = 1e6; m["gbps"] = 1e9
      if (!(u in m)) exit 1
      b = v * m[u] / 2000; if (b < 131072) b = 131072
      printf "%d\n", b; ok = 1 }
    END { if (!ok) exit 1 }') || { echo "netbed: cannot read the rate '$rate' (say 1gbit, 500mbit, 10gbit)" >&2; exit 99; }
fi

tag=rb$$
sw=$tag-sw
names="$sw $(for i in $(seq 1 "$hosts"); do printf '%s ' "$tag-h$i"; done)"
fail() { echo "netbed: $*" >&2; exit 99; }
# A namespace of that name left by a bed that was SIGKILLed (its pid now
# reused) is not this bed's to use or to delete.
for ns in $names; do
  ! ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns" ||
    fail "namespace $ns already exists (left over from an earlier bed?): ip netns del $ns"
done

mpid=
cleanup() {
  # A second signal (timeout sends TERM to the child and then to its whole
  # process group) must not cut the teardown short.
  trap '' HUP INT TERM
  [ -z "$mpid" ] || kill $mpid 2>/dev/null
  # Processes outlive their namespace's name: stop what still runs there.
  left=
  for ns in $names; do left="$left $(ip netns pids "$ns" 2>/dev/null)"; done
  if [ -n "$(echo $left)" ]; then
    kill $left 2>/dev/null
    sleep 1
    kill -9 $left 2>/dev/null
  fi
  for ns in $names; do
    ip netns del "$ns" 2>/dev/null # the switch takes the bridge and veths
    rm -rf "/etc/netns/$ns"
  done
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
# Root without CAP_SYS_ADMIN (a plain container) cannot make namespaces:
# that is a machine without the bed, not a failure.
ip netns add "$sw" 2>/dev/null || skip "cannot make a network namespace (a container without CAP_SYS_ADMIN?)"
ip -n "$sw" link set lo up || fail "cannot bring up lo in $sw"
ip -n "$sw" link add br0 type bridge || fail "cannot make a bridge"
ip -n "$sw" addr add 10.199.0.1/24 dev br0 || fail "cannot address the bridge"
ip -n "$sw" link set br0 up || fail "cannot bring up the bridge"
list=
for i in $(seq 1 "$hosts"); do
  h=$tag-h$i
  ip netns add "$h" || fail "cannot make namespace $h"
  ip -n "$h" link set lo up || fail "cannot bring up lo in $h"
  ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$h" || fail "cannot make a veth pair"
  ip -n "$sw" link set "p$i" master br0 up || fail "cannot attach p$i to the bridge"
  ip -n "$h" addr add "10.199.0.$((10 + i))/24" dev eth0 || fail "cannot address eth0 in $h"
  ip -n "$h" link set eth0 up || fail "cannot bring up eth0 in $h"
  if [ -n "$rate" ]; then
    # tbf on both ends: the switch side limits what reaches the host, the
    # host side what leaves it. The bucket holds about 0.5 ms at the rate,
    # so a burst does not hide the limit for long, and at least 128 KiB: two
    # of the 64 KiB packets the kernel hands a veth (GSO). With a smaller
    # bucket tbf splits each such packet itself and the link falls short of
    # its rate under traffic both ways: at 1gbit (a 62.5 KB bucket) every
    # algorithm lost 10-20% at 4-16 MiB, and the pipelined ring, whose
    # chunks wait on each other, up to 30%.
    tc -n "$sw" qdisc add dev "p$i" root tbf rate "$rate" burst "$burst" latency 50ms ||
      fail "tc cannot limit the link to '$rate'"
    tc -n "$h" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms ||
      fail "tc cannot limit the link to '$rate'"
  fi
  list=${list:+$list,}$h
done
for i in $(seq 1 "$hosts"); do
  mkdir -p "/etc/netns/$tag-h$i" || fail "cannot make /etc/netns/$tag-h$i"
  { echo "127.0.0.1 localhost"
    for j in $(seq 1 "$hosts"); do echo "10.199.0.$((10 + j)) $tag-h$j"; done
  } > "/etc/netns/$tag-h$i/hosts" || fail "cannot write /etc/netns/$tag-h$i/hosts"
done

export NETBED_GATEWAY=10.199.0.1
mpiexec=$here/../mpiexec # MPICH or Open MPI, Hydra syntax
echo "netbed: $hosts hosts ($list)${rate:+, links limited to $rate}"
# In the background, so that a signal runs its trap at once (a shell runs
# traps only between commands, and wait is one). stdin stays the caller's:
# a background command's is /dev/null unless redirected from another fd.
# SIGPIPE ignored, as every process it starts inherits: a launcher or rank
# writing to a connection its peer has just closed (finalize races over
# TCP) gets EPIPE instead of dying; one CI run saw mpiexec end with 141.
exec 3<&0
trap '' PIPE
if [ "$each" = 1 ]; then
  # One COMMAND per host, each in the background; the bed's status is the
  # first failure's, else 0.
  pids=
  for i in $(seq 1 "$hosts"); do
    NETBED_HOST=$((i - 1)) NETBED_HOST0=$tag-h1 UCX_TLS=tcp \
      "$here/nslaunch" "$tag-h$i" "$@" <&3 &
    pids="$pids $!"
  done
  mpid=$pids
  status=0
  for p in $pids; do wait "$p" || { s=$?; [ "$status" != 0 ] || status=$s; }; done
  mpid=
  exit "$status"
fi
ip netns exec "$sw" "$mpiexec" -launcher ssh -launcher-exec "$here/nslaunch" -hosts "$list" \
  -genv UCX_TLS tcp "$@" <&3 3<&- &
mpid=$!
wait "$mpid"
status=$?
mpid=
exit "$status"
