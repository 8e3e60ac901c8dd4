# Shared by scripts/run.sh and scripts/test.sh (and build-smpi.sh, for its
# shell): install what is missing (Debian packages only), then configure
# and build out of tree.
# Sourced, not run.

# The Debian packages a build and 'make check' need (python3-matplotlib:
# bench/plot.py, which the tests run on a real rondo-bench result;
# libopenblas-dev, zlib1g-dev and dataset-fashion-mnist: rondo-train;
# libssl-dev: OpenSSL's libcrypto for the rendezvous's key;
# python3-numpy, python3-torch, python3-pip, python3-venv, python3-dev: the Python
# bindings and their tests, docs/python.md).
RONDO_DEBS="build-essential autoconf automake libtool pkg-config mpich libmpich-dev
libhwloc-dev libssl-dev libcmocka-dev python3 python3-matplotlib libopenblas-dev zlib1g-dev
dataset-fashion-mnist python3-numpy python3-torch python3-pip python3-venv python3-dev"

# rondo_apt_install PKG...: installs those of the packages that are missing.
rondo_apt_install() {
  missing=
  for pkg in "$@"; do
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

rondo_install_deps() { rondo_apt_install $RONDO_DEBS; }

# Open MPI beside MPICH, for scripts/test.sh's Open MPI stage. Installing
# it makes Debian point the MPI alternatives at Open MPI: 'mpi' (mpicc and
# its kin), 'mpirun' (mpiexec) and 'mpi-<multiarch>' (the <mpi.h> of
# /usr/include/<multiarch>/mpi). They are set back to what they were, so
# that the system keeps MPICH as its default MPI.
RONDO_OPENMPI_DEBS="openmpi-bin libopenmpi-dev"
rondo_install_openmpi() {
  # What each alternative points at now (set explicitly afterwards: one in
  # 'auto' mode would follow Open MPI's higher priority).
  mpi_alts=$(for a in $(update-alternatives --get-selections 2>/dev/null |
    awk '$1 ~ /^mpi(run|-[^ ]+)?$/ {print $1}'); do
    printf '%s %s\n' "$a" "$(update-alternatives --query "$a" | sed -n 's/^Value: //p')"
  done)
  rondo_apt_install $RONDO_OPENMPI_DEBS || return 1
  sudo=
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "$mpi_alts" | while read -r a v; do
    [ -z "$v" ] || $sudo update-alternatives --quiet --set "$a" "$v"
  done
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

# rondo_autogen: makes ./configure where it is missing (a clean clone).
rondo_autogen() {
  [ -x "$RONDO_TOP/configure" ] || (cd "$RONDO_TOP" && ./autogen.sh >/dev/null)
}

# rondo_unwrap: the compiler the MPI wrapper $RONDO_CC calls, called
# directly, with the wrapper's flags as configure's CPPFLAGS, LDFLAGS and
# LIBS (RONDO_CPPFLAGS, RONDO_LDFLAGS, RONDO_LIBS; rondo_configure passes
# them). The same compile and link; the wrapper's shell costs about 0.13 s
# a file here (scripts/test.sh's stages; scripts/run.sh keeps the wrapper,
# as a user's ./configure does). MPICH says its command with -show, Open
# MPI with --showme; a wrapper that says neither is kept.
rondo_unwrap() {
  show=$("$RONDO_CC" -show 2>/dev/null) || show=$("$RONDO_CC" --showme 2>/dev/null) ||
    { echo "rondo_unwrap: $RONDO_CC says neither -show nor --showme: building with it" >&2; return 0; }
  cc= RONDO_CPPFLAGS= RONDO_LDFLAGS= RONDO_LIBS=
  for word in $show; do
    case $word in
      -I* | -D*) RONDO_CPPFLAGS="$RONDO_CPPFLAGS $word" ;;
      -L* | -Wl,*) RONDO_LDFLAGS="$RONDO_LDFLAGS $word" ;;
      -l*) RONDO_LIBS="$RONDO_LIBS $word" ;;
      *) cc="${cc:+$cc }$word" ;;
    esac
  done
  RONDO_CC=$cc
}

# The shell configure, make and libtool run: dash where there is one. Under
# bash, libtool's start-up costs more than the compile it wraps (the
# library, -j2 here: 27-31 s in dash, 35-50 in bash, both unwrapped; 40-44
# and 52-60 with the wrapper). The tests' scripts are POSIX sh.
RONDO_SHELL=/bin/sh
[ -x /bin/dash ] && RONDO_SHELL=/bin/dash

# rondo_configure DIR [configure args...]: configure DIR (once) with
# $RONDO_CC (and rondo_unwrap's flags, once called) and $RONDO_MPIEXEC;
# prints the configuration's summary.
rondo_configure() {
  dir=$1; shift
  rondo_autogen
  mkdir -p "$dir"
  if [ ! -f "$dir/Makefile" ]; then
    (cd "$dir" && CONFIG_SHELL=$RONDO_SHELL $RONDO_SHELL "$RONDO_TOP/configure" \
      CONFIG_SHELL=$RONDO_SHELL CC="$RONDO_CC" MPIEXEC="$RONDO_MPIEXEC" \
      ${RONDO_CPPFLAGS:+CPPFLAGS="$RONDO_CPPFLAGS"} ${RONDO_LDFLAGS:+LDFLAGS="$RONDO_LDFLAGS"} \
      ${RONDO_LIBS:+LIBS="$RONDO_LIBS"} "$@") \
      > "$dir/configure.out" 2>&1 || { cat "$dir/configure.out"; return 1; }
  fi
  sed -n '/^rondo .* configuration/,$p' "$dir/configure.out" 2>/dev/null
}

# rondo_build DIR [configure args...]: configure (once) and build in DIR.
rondo_build() {
  rondo_configure "$@" || return 1
  make -C "$1" -j"$(nproc)" >"$1/make.out" 2>&1 || { tail -n 40 "$1/make.out"; return 1; }
}
