"""KenLM n-gram estimation: the ``lmplz`` and ``build_binary`` wrappers, their refusals, ``smt-kenlm train``.

Estimation and binarization run KenLM's own tools, built from KenLM's source
distribution by ``third_party/build_kenlm.sh`` into ``third_party/kenlm/bin``
(see :func:`find_kenlm_binary`). Queries are :mod:`smt_features.model.kenlm`'s job.

The literal ``<unk>``
---------------------
Mikolov's PTB text contains the word ``<unk>``, which ``lmplz`` refuses
("Special word <unk> is not allowed in the corpus"). With ``map_unk`` (default
:data:`DEFAULT_MAP_UNK` = ``"_unk_"``, no angle brackets) every *whole-word*
``<unk>`` is rewritten to that ordinary word, both when estimating
(:func:`estimate_arpa`) and when querying (:class:`smt_features.model.kenlm.KenLMScorer`), so the
text's ``<unk>`` is a normal vocabulary item with its own n-gram statistics, while
KenLM's real ``<unk>`` still catches words never seen in training. Use the
same ``map_unk`` for both; ``map_unk=None`` turns the rewrite off (then
``skip_symbols=True`` makes ``lmplz`` treat ``<s>``, ``</s>`` and ``<unk>`` as
whitespace instead). Estimation refuses a text that already holds the
replacement word as well as ``<unk>``, since the two would merge.

Command line: ``smt-kenlm train`` (:mod:`smt_features.cli.kenlm`) runs :func:`train_lm`.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence

import yaml

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write
from nmt.core.errors import UsageError, refuse_overwriting_inputs

from smt_features.train.kenlm_bounds import bounds_path, write_bounds
from smt_features.train.kenlm_text import (DEFAULT_MAP_UNK, UNK, UnkRewriter, check_input_file, check_map_unk,
                                           open_binary_text, stream_checked)

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_KENLM_BIN = REPO_ROOT / "third_party" / "kenlm" / "bin"
BUILD_SCRIPT = "third_party/build_kenlm.sh"
DATA_STRUCTURES = ("probing", "trie")


class KenLMError(RuntimeError):
    """A KenLM tool failed; the message carries the command and the tool's stderr."""


class KenLMDataError(DataError, KenLMError):
    """lmplz refused the text itself (too little of it for the discounts, a reserved word): bad input,
    not a failure of the tool. The message starts with the text's path."""


class KenLMNotFoundError(FileNotFoundError):
    """A KenLM executable could not be found."""


_LMPLZ_DISCOUNT_FAILURE = ("BadDiscountException", "Could not calculate Kneser-Ney discounts")
_LMPLZ_SPECIAL_WORD = "Special word "


def _lmplz_refusal(stderr: str, text_path: Path, order: int, map_unk: str | None,
                   skip_symbols: bool) -> KenLMDataError | None:
    """A :class:`KenLMDataError` when lmplz's stderr says the text itself is the problem."""
    if any(key in stderr for key in _LMPLZ_DISCOUNT_FAILURE):
        return KenLMDataError(f"{text_path}: too little (or too repetitive) text for lmplz to estimate "
                              f"{order}-gram Kneser-Ney discounts; use --discount-fallback (discount_fallback=True), "
                              "a lower --order or more text")
    if _LMPLZ_SPECIAL_WORD in stderr:
        line = next((ln for ln in stderr.splitlines() if _LMPLZ_SPECIAL_WORD in ln), "").strip()
        hint = ""
        if UNK in stderr and map_unk is None and not skip_symbols:
            hint = (f"\nhint: the text contains the literal {UNK}; pass map_unk={DEFAULT_MAP_UNK!r} "
                    "(or skip_symbols=True)")
        return KenLMDataError(f"{text_path}: lmplz refuses the text: {line} (--map-unk, --skip-symbols){hint}")
    return None


# --------------------------------------------------------------------------- binaries

def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_kenlm_binary(name: str) -> Path:
    """Path of KenLM tool ``name`` (``lmplz``, ``build_binary``, ``query``).

    Looked for, in order: the directory ``$KENLM_BIN``, the project's
    ``third_party/kenlm/bin`` (where ``third_party/build_kenlm.sh`` installs),
    then ``PATH``. Raises :class:`KenLMNotFoundError` telling how to build it.
    """
    searched = []
    env_dir = os.environ.get("KENLM_BIN")
    if env_dir:
        cand = Path(env_dir) / name
        searched.append(f"$KENLM_BIN={env_dir}")
        if _executable(cand):
            return cand
    cand = REPO_KENLM_BIN / name
    searched.append(str(REPO_KENLM_BIN))
    if _executable(cand):
        return cand
    found = shutil.which(name)
    searched.append("PATH")
    if found:
        return Path(found)
    raise KenLMNotFoundError(
        f"KenLM tool {name!r} not found (looked in {', '.join(searched)}). "
        f"Build KenLM's tools with `bash {BUILD_SCRIPT}` from the repository root "
        f"(installs into {REPO_KENLM_BIN}), or set KENLM_BIN to a directory that holds {name}.")


# --------------------------------------------------------------------------- helpers

def _tmp_sibling(path: Path) -> Path:
    """An empty temporary file beside ``path``, with the mode a plain ``open(path, "w")`` would give."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
    finally:
        os.close(fd)
    return Path(tmp)


def _stderr_tail(fh: IO[bytes], limit: int = 6000) -> str:
    fh.flush()
    fh.seek(0)
    text = fh.read().decode("utf-8", "replace")
    return text if len(text) <= limit else "...\n" + text[-limit:]


# --------------------------------------------------------------------------- estimation

def estimate_arpa(text_path: str | Path, arpa_path: str | Path, order: int = 5, memory: str = "20%",
                  discount_fallback: bool | Sequence[float] = False, temp_dir: str | Path | None = None,
                  extra_args: Sequence[str] = (), *, map_unk: str | None = DEFAULT_MAP_UNK,
                  skip_symbols: bool = False, lmplz: str | Path | None = None) -> Path:
    """Estimate a modified Kneser–Ney ``order``-gram ARPA model with ``lmplz``.

    * ``text_path``: one tokenized sentence per line, plain or ``.gz`` (streamed
      to lmplz's stdin).
    * ``memory``: lmplz ``-S`` (sorting memory, e.g. ``"20%"``, ``"1G"``).
    * ``discount_fallback``: ``True`` passes ``--discount_fallback`` (lmplz's
      default discounts 0.5 1 1.5, needed on tiny or deduplicated data), or
      give the discounts explicitly.
    * ``temp_dir``: lmplz ``-T`` (created if missing); default lmplz's own.
    * ``map_unk``: rewrite whole-word ``<unk>`` to this word (module docstring);
      ``None`` to pass the text through unchanged.
    * ``skip_symbols``: lmplz ``--skip_symbols``.

    The ARPA file (plain text) is written to a temporary file beside
    ``arpa_path`` and renamed into place only when lmplz succeeded. On failure
    :class:`KenLMError` carries lmplz's stderr.

    The text is checked while it streams: invalid UTF-8 raises :class:`nmt.core.io.DataError` with the
    file and line, a text without a word (empty) raises it with the file; when lmplz refuses the text
    itself (too little data for its discounts, a reserved word) :class:`KenLMDataError` says how to fix it.
    A UTF-8 byte order mark is dropped; CRLF line ends are fine (KenLM reads ``\\r`` as a space).
    """
    arpa_path = Path(arpa_path)
    text_path = check_input_file(text_path, "training text")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    check_map_unk(map_unk)
    exe = Path(lmplz) if lmplz else find_kenlm_binary("lmplz")
    arpa_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_sibling(arpa_path)
    cmd = [str(exe), "-o", str(order), "-S", str(memory), "--arpa", str(tmp)]
    if temp_dir is not None:
        Path(temp_dir).mkdir(parents=True, exist_ok=True)
        cmd += ["-T", str(temp_dir)]
    if discount_fallback is True:
        cmd.append("--discount_fallback")
    elif discount_fallback:
        cmd += ["--discount_fallback", *(str(float(d)) for d in discount_fallback)]
    if skip_symbols:
        cmd.append("--skip_symbols")
    cmd += [str(a) for a in extra_args]
    # the text always goes through Python: strict UTF-8 with the line of a bad byte, BOM dropped, <unk> mapped
    rewriter = UnkRewriter(map_unk) if map_unk is not None else None
    log.info("estimating %d-gram ARPA: %s < %s", order, " ".join(cmd), text_path)
    t0 = time.perf_counter()
    ok = False
    try:
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
            assert proc.stdin is not None
            broken_pipe = False
            try:
                with open_binary_text(text_path) as src:
                    n_lines, n_word_lines = stream_checked(src, proc.stdin.write, text_path, rewriter)
                if n_word_lines == 0:
                    raise DataError(f"{text_path}: " + ("empty file" if n_lines == 0 else
                                                         f"{n_lines} line(s) but not one word")
                                    + ": nothing to estimate a language model from")
                proc.stdin.close()
            except BrokenPipeError:
                broken_pipe = True  # lmplz died early; its stderr says why
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            rc = proc.wait()
            if rc != 0 or broken_pipe:
                refusal = _lmplz_refusal(_stderr_tail(err), text_path, order, map_unk, skip_symbols)
                if refusal is not None:
                    raise refusal
                msg = f"lmplz failed (exit {rc}): {' '.join(cmd)}\n--- lmplz stderr ---\n{_stderr_tail(err)}"
                if UNK in msg and map_unk is None and not skip_symbols:
                    msg += (f"\nhint: the text contains the literal {UNK}; pass map_unk={DEFAULT_MAP_UNK!r} "
                            "(or skip_symbols=True)")
                raise KenLMError(msg)
            log.debug("lmplz stderr:\n%s", _stderr_tail(err))
        if rewriter is not None and rewriter.unk_count and rewriter.repl_seen:
            raise DataError(f"{text_path}: contains both {UNK} and the replacement word {map_unk!r}; "
                            "they would become one word: choose another map_unk (--map-unk)")
        os.replace(tmp, arpa_path)
        ok = True
    finally:
        if not ok:
            tmp.unlink(missing_ok=True)
    log.info("wrote %s in %.1f s%s", arpa_path, time.perf_counter() - t0,
             f" ({rewriter.unk_count} {UNK} rewritten to {map_unk})" if rewriter and rewriter.unk_count else "")
    return arpa_path


def build_binary(arpa_path: str | Path, bin_path: str | Path, data_structure: str = "probing",
                 extra_args: Sequence[str] = (), *, build_binary_exe: str | Path | None = None) -> Path:
    """Convert an ARPA file to KenLM's binary format (``probing`` or ``trie``), atomically."""
    arpa_path, bin_path = Path(arpa_path), Path(bin_path)
    if data_structure not in DATA_STRUCTURES:
        raise ValueError(f"data_structure must be one of {DATA_STRUCTURES}, got {data_structure!r}")
    if not arpa_path.is_file():
        raise FileNotFoundError(f"ARPA file not found: {arpa_path}")
    exe = Path(build_binary_exe) if build_binary_exe else find_kenlm_binary("build_binary")
    bin_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_sibling(bin_path)
    cmd = [str(exe), *map(str, extra_args), data_structure, str(arpa_path), str(tmp)]
    log.info("binarizing: %s", " ".join(cmd))
    ok = False
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            out = (proc.stdout + proc.stderr).decode("utf-8", "replace")[-6000:]
            raise KenLMError(f"build_binary failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                             f"--- build_binary output ---\n{out}")
        os.replace(tmp, bin_path)
        ok = True
    finally:
        if not ok:
            tmp.unlink(missing_ok=True)
    return bin_path


# --------------------------------------------------------------------------- smt-kenlm train

@dataclass
class KenLMTrainConfig:
    """Options of ``smt-kenlm train``."""

    text: str = C.field("", help="training text, one tokenized sentence per line (plain or .gz)", required=True)
    out_prefix: str = C.field("", help="writes OUT_PREFIX.arpa, OUT_PREFIX.binary, OUT_PREFIX.ubounds (the "
                                       "decoder's per-word LM bounds) and OUT_PREFIX.config.yaml", required=True)
    order: int = C.field(5, help="n-gram order (the tools are built for at most 6)")
    memory: str = C.field("20%", help="lmplz -S: sorting memory (e.g. 20%, 2G)")
    temp_dir: str = C.field("", help="lmplz -T: folder for temporary files ('' = lmplz's default)")
    discount_fallback: bool = C.field(False, help="lmplz --discount_fallback (tiny or deduplicated data)")
    map_unk: str = C.field(DEFAULT_MAP_UNK, help="rewrite the word <unk> to this ordinary word for lmplz, "
                                                 "which refuses <unk>; '' = no rewrite")
    skip_symbols: bool = C.field(False, help="lmplz --skip_symbols: read <s>, </s>, <unk> as whitespace")
    data_structure: str = C.field("probing", help="build_binary structure: probing, trie, or '' for ARPA only")


def train_lm(cfg: KenLMTrainConfig, config_path: str | None = None) -> int:
    """``smt-kenlm train``: text → OUT_PREFIX.arpa → OUT_PREFIX.binary, OUT_PREFIX.ubounds, and the
    OUT_PREFIX.config.yaml record."""
    prefix = Path(cfg.out_prefix)
    arpa = prefix.with_name(prefix.name + ".arpa")
    binary = prefix.with_name(prefix.name + ".binary")
    sidecar = prefix.with_name(prefix.name + ".config.yaml")
    ubounds = bounds_path(arpa)
    written = {"--out-prefix's .arpa": arpa, "--out-prefix's .config.yaml": sidecar,
               "--out-prefix's .ubounds": ubounds}
    if cfg.data_structure:
        written["--out-prefix's .binary"] = binary
    refuse_overwriting_inputs(written, {"--text": cfg.text, "--config": config_path})
    if cfg.data_structure and cfg.data_structure not in DATA_STRUCTURES:
        raise UsageError(f"--data-structure must be one of {', '.join(DATA_STRUCTURES)} or ''")
    t0 = time.perf_counter()
    estimate_arpa(cfg.text, arpa, order=cfg.order, memory=cfg.memory,
                  discount_fallback=cfg.discount_fallback, temp_dir=cfg.temp_dir or None,
                  map_unk=cfg.map_unk or None, skip_symbols=cfg.skip_symbols)
    t_arpa = time.perf_counter() - t0
    outputs = {"arpa": str(arpa)}
    if cfg.data_structure:
        build_binary(arpa, binary, cfg.data_structure)
        outputs["binary"] = str(binary)
    outputs["ubounds"] = str(write_bounds(arpa, ubounds))
    t_all = time.perf_counter() - t0
    record = {**C.to_dict(cfg), "outputs": outputs,
              "lmplz_seconds": round(t_arpa, 2), "total_seconds": round(t_all, 2)}
    with atomic_write(sidecar) as fh:
        fh.write(yaml.safe_dump(record, sort_keys=False, allow_unicode=True))
    print(f"wrote {', '.join(outputs.values())} and {sidecar} in {t_all:.1f} s (lmplz {t_arpa:.1f} s)")
    return 0
