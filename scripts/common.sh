# Shared by scripts/run.sh and scripts/test.sh: install what is missing
# (Debian packages only), then configure and build out of tree.
# Sourced, not run.

# The Debian packages a build and 'make check' need (python3-matplotlib:
# bench/plot.py, which the tests run on a real rondo-bench result;
# libopenblas-dev, zlib1g-dev and dataset-fashion-mnist: rondo-train;
# python3-numpy, python3-torch, python3-pip, python3-venv, python3-dev: the Python
# bindings and their tests, docs/python.md).
RONDO_DEBS="build-essential autoconf automake libtool pkg-config mpich libmpich-dev
libhwloc-dev libcmocka-dev python3 python3-matplotlib libopenblas-dev zlib1g-dev
dataset-fashion-mnist python3-numpy python3-torch python3-pip python3-venv python3-dev"

rondo_install_deps() {
  missing=
  for pkg in $RONDO_DEBS; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' ||
      missing="$missing $pkg"
  done
  [ -z "$missing" ] && return 0
  echo "== installing Debian packages:$missing"
  sudo=
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
}

# MPICH's own wrapper and launcher, even when another MPI owns 'mpicc'.
rondo_mpi_env() {
  if command -v mpicc.mpich >/dev/null 2>&1; then
    RONDO_CC=mpicc.mpich
    RONDO_MPIEXEC=$(command -v mpiexec.mpich)
  else
    RONDO_CC=mpicc
    RONDO_MPIEXEC=$(command -v mpiexec)
  fi
}

# rondo_build DIR [configure args...]: configure (once) and build in DIR.
rondo_build() {
  dir=$1; shift
  [ -x "$RONDO_TOP/configure" ] || (cd "$RONDO_TOP" && ./autogen.sh >/dev/null)
  mkdir -p "$dir"
  if [ ! -f "$dir/Makefile" ]; then
    (cd "$dir" && "$RONDO_TOP/configure" CC="$RONDO_CC" MPIEXEC="$RONDO_MPIEXEC" "$@") \
      > "$dir/configure.out" 2>&1 || { cat "$dir/configure.out"; return 1; }
    sed -n '/^rondo .* configuration/,$p' "$dir/configure.out"
  fi
  make -C "$dir" -j"$(nproc)" >"$dir/make.out" 2>&1 || { tail -n 40 "$dir/make.out"; return 1; }
}
