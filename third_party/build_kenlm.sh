#!/usr/bin/env bash
# Build KenLM's command-line tools (lmplz, build_binary, query) from KenLM's
# source distribution on PyPI into the project-local, git-ignored prefix
#   third_party/kenlm/bin/
# Nothing is vendored into git: the sdist is fetched with pip each time it is
# missing from third_party/kenlm/src/.
#
# Usage: third_party/build_kenlm.sh            (idempotent; exits at once when built)
# Environment:
#   KENLM_VERSION    sdist version to fetch (default 0.3.0, the version of the
#                    `kenlm` Python query module the project is tested with;
#                    set to "" for the newest on the index)
#   KENLM_MAX_ORDER  highest n-gram order the tools support (default 6)
#   JOBS             parallel compile jobs (default: nproc)
#   FORCE=1          rebuild even if working binaries are present
set -euo pipefail

START_TS=$(date +%s)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PREFIX="$HERE/kenlm"
SRC_DIR="$PREFIX/src"
BUILD_DIR="$PREFIX/build"
BIN_DIR="$PREFIX/bin"
KENLM_VERSION="${KENLM_VERSION-0.3.0}"
KENLM_MAX_ORDER="${KENLM_MAX_ORDER:-6}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
TOOLS=(lmplz build_binary query)

log() { echo "[build_kenlm] $*"; }
die() { echo "[build_kenlm] ERROR: $*" >&2; exit 1; }

# A tool "runs" when it starts and prints its usage text. Both lmplz --help
# and build_binary without arguments print usage on stderr and exit 1; a
# missing shared library gives 127 and no usage text.
tool_runs() {
  local exe="$1" out
  [[ -x "$exe" ]] || return 1
  case "$(basename "$exe")" in
    lmplz)        out="$("$exe" --help 2>&1 || true)"; grep -q "Kneser-Ney" <<<"$out" ;;
    build_binary) out="$("$exe" 2>&1 || true)"; grep -q "Usage:" <<<"$out" ;;
    query)        out="$("$exe" --help 2>&1 || true)"; grep -q "[Uu]sage" <<<"$out" ;;
    *) return 1 ;;
  esac
}

if [[ "${FORCE:-0}" != 1 ]] && tool_runs "$BIN_DIR/lmplz" && tool_runs "$BIN_DIR/build_binary"; then
  log "lmplz and build_binary already built and working in $BIN_DIR; nothing to do (FORCE=1 to rebuild)."
  exit 0
fi

# ---------------------------------------------------------------- build deps
APT_PKGS=(cmake g++ make libboost-program-options-dev libboost-system-dev
          libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${APT_PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
else
  # Not a Debian system: check the essentials by hand and let CMake report the rest.
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || missing+=(g++)
  [[ -f /usr/include/boost/program_options.hpp ]] || missing+=(boost-dev)
fi
if ((${#missing[@]})); then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing build dependencies with apt: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    die "missing build dependencies: ${missing[*]}
  Install them first, e.g. (Debian/Ubuntu):
    sudo apt-get update && sudo apt-get install -y ${APT_PKGS[*]}
  then rerun $0."
  fi
else
  log "build dependencies present: ${APT_PKGS[*]}"
fi

# ---------------------------------------------------------------- source
if [[ -x "$REPO/.venv/bin/python" ]]; then PY="$REPO/.venv/bin/python"; else PY="python3"; fi
"$PY" -m pip --version >/dev/null 2>&1 || die "no pip for $PY; install python3-pip or create the venv (.venv) first."
spec="kenlm${KENLM_VERSION:+==$KENLM_VERSION}"
mkdir -p "$SRC_DIR"
find_tarballs() {  # sets tarballs=(...) to the existing matching sdists, oldest name first
  local f
  tarballs=()
  for f in "$SRC_DIR"/kenlm-${KENLM_VERSION:-*}.tar.gz; do
    [[ -f "$f" ]] && tarballs+=("$f")
  done
  return 0
}
find_tarballs
if ((${#tarballs[@]} == 0)); then
  # --no-binary :all: forces the sdist. pip still prepares the sdist's metadata;
  # --no-build-isolation makes it do so with the setuptools already installed
  # instead of building the sdist's build requirements (cmake!) from source.
  log "downloading the $spec source distribution with $PY -m pip into $SRC_DIR"
  if ! "$PY" -m pip download --no-binary :all: --no-deps --no-build-isolation \
        --dest "$SRC_DIR" "$spec"; then
    log "retrying with build isolation (build requirements as wheels)"
    "$PY" -m pip download --no-binary kenlm --no-deps --dest "$SRC_DIR" "$spec"
  fi
  find_tarballs
  ((${#tarballs[@]})) || die "pip did not leave a kenlm-*.tar.gz in $SRC_DIR"
else
  log "using the source distribution already in $SRC_DIR: $(basename "${tarballs[-1]}")"
fi
tarball="${tarballs[-1]}"
src="$SRC_DIR/$(basename "$tarball" .tar.gz)"
if [[ ! -f "$src/CMakeLists.txt" ]]; then
  log "unpacking $(basename "$tarball")"
  tar -xzf "$tarball" -C "$SRC_DIR"
fi
[[ -f "$src/CMakeLists.txt" && -f "$src/lm/builder/lmplz_main.cc" ]] \
  || die "$src does not look like KenLM's source tree (no CMakeLists.txt / lm/builder/lmplz_main.cc)"

# ---------------------------------------------------------------- build
log "configuring: cmake Release, KENLM_MAX_ORDER=$KENLM_MAX_ORDER, build dir $BUILD_DIR"
cmake -S "$src" -B "$BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=Release \
  -DKENLM_MAX_ORDER="$KENLM_MAX_ORDER" \
  -DCOMPILE_TESTS=OFF \
  -DENABLE_PYTHON=OFF \
  -DCMAKE_INSTALL_PREFIX="$PREFIX"
log "compiling ${TOOLS[*]} with $JOBS jobs"
cmake --build "$BUILD_DIR" --target "${TOOLS[@]}" --parallel "$JOBS"

mkdir -p "$BIN_DIR"
for t in "${TOOLS[@]}"; do
  [[ -x "$BUILD_DIR/bin/$t" ]] || die "build finished but $BUILD_DIR/bin/$t is missing"
  install -m 0755 "$BUILD_DIR/bin/$t" "$BIN_DIR/$t.tmp.$$"
  mv -f "$BIN_DIR/$t.tmp.$$" "$BIN_DIR/$t"
done
for t in lmplz build_binary; do
  tool_runs "$BIN_DIR/$t" || die "$BIN_DIR/$t was built but does not run"
done
log "installed ${TOOLS[*]} into $BIN_DIR ($(basename "$src"), max order $KENLM_MAX_ORDER) in $(( $(date +%s) - START_TS )) s"
