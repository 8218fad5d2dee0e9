#!/usr/bin/env bash
# Build the compiled search core of smt-decode (smt_features/decode/csrc/search.cpp) into
#   smt_features/decode/_search<EXT_SUFFIX>   (e.g. _search.cpython-311-x86_64-linux-gnu.so, git-ignored)
# against KenLM's headers and static libraries as third_party/build_kenlm.sh leaves them:
#   third_party/kenlm/src/kenlm-*/            (headers)
#   third_party/kenlm/build/lib/libkenlm.a, libkenlm_util.a
# Plain CPython C API: no build dependency beyond g++, the Python headers and KenLM.
#
# Usage: third_party/build_search.sh            (idempotent; exits at once when up to date)
# Environment:
#   KENLM_MAX_ORDER  must match the KenLM build (default 6, build_kenlm.sh's default)
#   CXX              compiler (default g++)
#   CXXFLAGS_EXTRA   appended to the compiler flags
#   FORCE=1          rebuild even if the extension is up to date
set -euo pipefail

START_TS=$(date +%s)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
KENLM_PREFIX="$HERE/kenlm"
LIB_DIR="$KENLM_PREFIX/build/lib"
CSRC="$REPO/smt_features/decode/csrc"
KENLM_MAX_ORDER="${KENLM_MAX_ORDER:-6}"
CXX="${CXX:-g++}"

log() { echo "[build_search] $*"; }
die() { echo "[build_search] ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------- python
if [[ -x "$REPO/.venv/bin/python" ]]; then PY="$REPO/.venv/bin/python"; else PY="python3"; fi
command -v "$PY" >/dev/null 2>&1 || die "no Python interpreter ($PY); create the venv (.venv) first."
read -r PY_INC EXT_SUFFIX < <("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"], sysconfig.get_config_var("EXT_SUFFIX"))')
[[ -f "$PY_INC/Python.h" ]] || die "Python.h not found in $PY_INC; install the Python development headers (e.g. apt-get install python3-dev) for $PY."
OUT="$REPO/smt_features/decode/_search$EXT_SUFFIX"

# ---------------------------------------------------------------- kenlm
KENLM_SRC=""
for d in "$KENLM_PREFIX"/src/kenlm-*/; do
  [[ -f "$d/lm/model.hh" ]] && KENLM_SRC="${d%/}"
done
[[ -n "$KENLM_SRC" ]] || die "KenLM sources not found under $KENLM_PREFIX/src/ (lm/model.hh); run 'bash third_party/build_kenlm.sh' first."
for lib in libkenlm.a libkenlm_util.a; do
  [[ -f "$LIB_DIR/$lib" ]] || die "$LIB_DIR/$lib is missing; run 'bash third_party/build_kenlm.sh' first (it builds KenLM's static libraries)."
done
if [[ -f "$KENLM_PREFIX/build/CMakeCache.txt" ]]; then
  built_order="$(sed -n 's/^KENLM_MAX_ORDER:[A-Z]*=//p' "$KENLM_PREFIX/build/CMakeCache.txt" | head -n1)"
  if [[ -n "$built_order" && "$built_order" != "$KENLM_MAX_ORDER" ]]; then
    die "KenLM was built with KENLM_MAX_ORDER=$built_order but this build would use $KENLM_MAX_ORDER; set KENLM_MAX_ORDER=$built_order."
  fi
fi

# ---------------------------------------------------------------- up to date?
SOURCES=("$CSRC"/*.cpp "$CSRC"/*.hh "$HERE/build_search.sh" "$LIB_DIR/libkenlm.a" "$LIB_DIR/libkenlm_util.a")
imports_ok() {
  (cd "$REPO" && "$PY" -c 'import smt_features.decode._search as m; assert m.ABI_VERSION == 3' >/dev/null 2>&1)
}
if [[ "${FORCE:-0}" != 1 && -f "$OUT" ]]; then
  stale=0
  for f in "${SOURCES[@]}"; do
    [[ "$f" -nt "$OUT" ]] && stale=1
  done
  if [[ $stale == 0 ]] && imports_ok; then
    log "$(basename "$OUT") is up to date and imports; nothing to do (FORCE=1 to rebuild)."
    exit 0
  fi
fi

# ---------------------------------------------------------------- system libraries KenLM links to
command -v "$CXX" >/dev/null 2>&1 || die "C++ compiler '$CXX' not found; install g++ (apt-get install g++)."
LIBS=()
missing=()
for l in z bz2 lzma; do
  if echo "int main(){return 0;}" | nice -n 19 "$CXX" -x c++ - -o /dev/null "-l$l" >/dev/null 2>&1; then
    LIBS+=("-l$l")
  else
    missing+=("lib$l")
  fi
done
if ((${#missing[@]})); then
  # KenLM's util library only needs them when it was configured with them; the link tells.
  log "note: not found: ${missing[*]} (zlib1g-dev libbz2-dev liblzma-dev); linking without them"
fi

# ---------------------------------------------------------------- compile (one job)
TMP="$OUT.tmp.$$"
trap 'rm -f "$TMP"' EXIT
log "compiling $(basename "$OUT") with $CXX -O2 against $(basename "$KENLM_SRC") (KENLM_MAX_ORDER=$KENLM_MAX_ORDER)"
# -ffp-contract=off: no fused multiply-add, so every sum and product rounds as in Python.
# --exclude-libs,ALL + hidden visibility: KenLM's symbols stay private to this module (the kenlm
# Python module carries its own copy).
# shellcheck disable=SC2086
nice -n 19 "$CXX" -O2 -std=c++17 -fPIC -shared -fvisibility=hidden -ffp-contract=off \
  -DKENLM_MAX_ORDER="$KENLM_MAX_ORDER" -DNDEBUG \
  -I"$KENLM_SRC" -I"$CSRC" -I"$PY_INC" \
  ${CXXFLAGS_EXTRA:-} \
  "$CSRC/search.cpp" -o "$TMP" \
  -L"$LIB_DIR" -lkenlm -lkenlm_util "${LIBS[@]}" -lpthread -lrt \
  -Wl,--exclude-libs,ALL -Wl,-O1 \
  || die "compilation failed (see the compiler messages above)"

# a module with an unresolved symbol fails here, not at the first decode
cp "$TMP" "$OUT.check.$$"
if ! (cd "$REPO" && "$PY" - "$OUT.check.$$" <<'EOF'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.ExtensionFileLoader("smt_features.decode._search", sys.argv[1])
spec = importlib.util.spec_from_loader("smt_features.decode._search", loader)
mod = importlib.util.module_from_spec(spec)
loader.exec_module(mod)
assert mod.ABI_VERSION == 3 and mod.KENLM_MAX_ORDER > 0
EOF
); then
  rm -f "$OUT.check.$$"
  die "the built module does not import (missing library at link time? see the error above)"
fi
rm -f "$OUT.check.$$"
mv -f "$TMP" "$OUT"
trap - EXIT
log "built $OUT in $(( $(date +%s) - START_TS )) s"
