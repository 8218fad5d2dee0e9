#!/usr/bin/env bash
# Build MERT's compiled line-search kernel (smt_features/tune/csrc/mert_kernel.cpp + *.hh) into
#   smt_features/tune/_mert_kernel<EXT_SUFFIX>   (e.g. _mert_kernel.cpython-311-x86_64-linux-gnu.so, git-ignored)
# Plain CPython C API and the buffer protocol: no dependency beyond g++ and the Python headers.
# Without it smt-tune runs the numpy reference of the same line search (same weights, slower).
#
# Usage: third_party/build_mert.sh            (idempotent; exits at once when up to date)
# Environment:
#   CXX              compiler (default g++)
#   CXXFLAGS_EXTRA   appended to the compiler flags
#   FORCE=1          rebuild even if the extension is up to date
set -euo pipefail

START_TS=$(date +%s)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
CSRC="$REPO/smt_features/tune/csrc"
CXX="${CXX:-g++}"
ABI=1  # smt_features/tune/kernel.py ABI_VERSION

log() { echo "[build_mert] $*"; }
die() { echo "[build_mert] ERROR: $*" >&2; exit 1; }

if [[ -x "$REPO/.venv/bin/python" ]]; then PY="$REPO/.venv/bin/python"; else PY="python3"; fi
command -v "$PY" >/dev/null 2>&1 || die "no Python interpreter ($PY); create the venv (.venv) first."
read -r PY_INC EXT_SUFFIX < <("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"], sysconfig.get_config_var("EXT_SUFFIX"))')
[[ -f "$PY_INC/Python.h" ]] || die "Python.h not found in $PY_INC; install the Python development headers (e.g. apt-get install python3-dev) for $PY."
OUT="$REPO/smt_features/tune/_mert_kernel$EXT_SUFFIX"

imports_ok() {
  (cd "$REPO" && "$PY" -c "import smt_features.tune._mert_kernel as m; assert m.ABI_VERSION == $ABI" >/dev/null 2>&1)
}
if [[ "${FORCE:-0}" != 1 && -f "$OUT" ]]; then
  stale=0
  for f in "$CSRC"/*.cpp "$CSRC"/*.hh "$HERE/build_mert.sh"; do
    [[ "$f" -nt "$OUT" ]] && stale=1
  done
  if [[ $stale == 0 ]] && imports_ok; then
    log "$(basename "$OUT") is up to date and imports; nothing to do (FORCE=1 to rebuild)."
    exit 0
  fi
fi

command -v "$CXX" >/dev/null 2>&1 || die "C++ compiler '$CXX' not found; install g++ (apt-get install g++)."
TMP="$OUT.tmp.$$"
trap 'rm -f "$TMP"' EXIT
log "compiling $(basename "$OUT") with $CXX -O2"
# -ffp-contract=off: no fused multiply-add, so every product and sum rounds as numpy's do.
# shellcheck disable=SC2086
nice -n 19 "$CXX" -O2 -std=c++17 -fPIC -shared -fvisibility=hidden -ffp-contract=off -DNDEBUG \
  -I"$PY_INC" ${CXXFLAGS_EXTRA:-} "$CSRC/mert_kernel.cpp" -o "$TMP" -Wl,-O1 \
  || die "compilation failed (see the compiler messages above)"
mv -f "$TMP" "$OUT"
trap - EXIT
imports_ok || die "the built module does not import: $("$PY" -c 'import smt_features.tune._mert_kernel' 2>&1 | tail -1)"
log "built $OUT in $(( $(date +%s) - START_TS )) s"
