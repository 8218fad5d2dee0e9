"""KenLM n-gram language models: estimation with ``lmplz``, queries with the ``kenlm`` module.

Estimation and binarization run KenLM's own tools, built from KenLM's source
distribution by ``third_party/build_kenlm.sh`` into ``third_party/kenlm/bin``
(see :func:`find_kenlm_binary`). Queries go through the ``kenlm`` Python
module. Everything returned here is a **natural log** (ARPA files and KenLM
work in log10; we multiply by ln 10).

The literal ``<unk>``
---------------------
Mikolov's PTB text contains the word ``<unk>``, which ``lmplz`` refuses
("Special word <unk> is not allowed in the corpus"). With ``map_unk`` (default
:data:`DEFAULT_MAP_UNK` = ``"_unk_"``, no angle brackets) every *whole-word*
``<unk>`` is rewritten to that ordinary word, both when estimating
(:func:`estimate_arpa`) and when querying (:class:`KenLMScorer`), so the text's
``<unk>`` is a normal vocabulary item with its own n-gram statistics, while
KenLM's real ``<unk>`` still catches words never seen in training. Use the
same ``map_unk`` for both; ``map_unk=None`` turns the rewrite off (then
``skip_symbols=True`` makes ``lmplz`` treat ``<s>``, ``</s>`` and ``<unk>`` as
whitespace instead). Estimation refuses a text that already holds the
replacement word as well as ``<unk>``, since the two would merge.

Command line (``smt-kenlm``)::

    smt-kenlm train --text ptb.train.txt --out-prefix work/lm/ptb5 --order 5
    smt-kenlm eval --model work/lm/ptb5.binary --text ptb.test.txt
"""
from __future__ import annotations

import errno
import gzip
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, NamedTuple, Sequence

from nmt.data.io import GZIP_ERRORS, DataError, atomic_write, iter_lines
from nmt.errors import command, refuse_overwriting_inputs
from nmt.perplexity import LN10, PerplexityResult, format_result, kenlm_perplexity, split_words

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_KENLM_BIN = REPO_ROOT / "third_party" / "kenlm" / "bin"
BUILD_SCRIPT = "third_party/build_kenlm.sh"
DEFAULT_MAP_UNK = "_unk_"
UNK = "<unk>"
DATA_STRUCTURES = ("probing", "trie")

_SPACE_CLASS = rb" \t\n\r\x0b\x0c"  # KenLM's word separators (see nmt.perplexity)


class KenLMError(RuntimeError):
    """A KenLM tool failed; the message carries the command and the tool's stderr."""


class KenLMDataError(DataError, KenLMError):
    """lmplz refused the text itself (too little of it for the discounts, a reserved word): bad input,
    not a failure of the tool. The message starts with the text's path."""


class KenLMNotFoundError(FileNotFoundError):
    """A KenLM executable could not be found."""


def check_input_file(path: str | Path, what: str) -> Path:
    """``path`` as a :class:`Path`; :class:`FileNotFoundError` / :class:`IsADirectoryError` naming it."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{what} is a directory, not a file", str(path))
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, f"{what} not found", str(path))
    return path


_LMPLZ_DISCOUNT_FAILURE = ("BadDiscountException", "Could not calculate Kneser-Ney discounts")
_LMPLZ_SPECIAL_WORD = "Special word "


def _stream_checked(src: IO[bytes], write, path: Path, rewriter: "_UnkRewriter | None") -> tuple[int, int]:
    """Copy the text to lmplz block by block, checking it: strict UTF-8 (:class:`DataError` with the line),
    a leading byte order mark dropped, ``<unk>`` rewritten. Returns ``(lines, lines with a word)``."""
    n_lines = 0
    n_words = 0
    try:
        for block in iter(lambda: src.readlines(1 << 20), []):
            if n_lines == 0 and block[0].startswith(b"\xef\xbb\xbf"):
                block[0] = block[0][3:]
            data = b"".join(block)
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                for k, raw in enumerate(block):
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError as err:
                        raise DataError(path, n_lines + k + 1,
                                        f"invalid UTF-8 byte(s) {raw[err.start:err.end]!r} at byte {err.start} "
                                        "of the line") from None
                raise
            if not n_words:
                n_words = sum(1 for raw in block if raw.split())
            if rewriter is not None:
                data = b"".join(rewriter(raw) for raw in block)
            write(data)
            n_lines += len(block)
    except GZIP_ERRORS as err:  # read a block at a time: the line is not known, the lines before it are
        raise DataError(f"{path}: corrupt or truncated gzip stream after its first {n_lines} line(s) or fewer: "
                        f"{err}") from None
    return n_lines, n_words


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

def _open_binary_text(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


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


def _whole_word(word: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![^" + _SPACE_CLASS + rb"])" + re.escape(word.encode("utf-8"))
                      + rb"(?![^" + _SPACE_CLASS + rb"])")


def _check_map_unk(map_unk: str | None) -> None:
    if map_unk is None:
        return
    if not map_unk or split_words(map_unk) != [map_unk] or map_unk in (UNK, "<s>", "</s>"):
        raise ValueError(f"map_unk must be one ordinary word without whitespace, got {map_unk!r}")


class _UnkRewriter:
    """Streams text to lmplz, rewriting whole-word ``<unk>`` and checking for collisions."""

    def __init__(self, map_unk: str):
        self.pattern = _whole_word(UNK)
        self.repl = map_unk.encode("utf-8")
        self.repl_pattern = _whole_word(map_unk)
        self.unk_count = 0
        self.repl_seen = False

    def __call__(self, line: bytes) -> bytes:
        if self.repl in line and self.repl_pattern.search(line):
            self.repl_seen = True
        if b"<unk>" in line:
            line, n = self.pattern.subn(self.repl, line)
            self.unk_count += n
        return line


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

    The text is checked while it streams: invalid UTF-8 raises :class:`nmt.data.io.DataError` with the
    file and line, a text without a word (empty) raises it with the file; when lmplz refuses the text
    itself (too little data for its discounts, a reserved word) :class:`KenLMDataError` says how to fix it.
    A UTF-8 byte order mark is dropped; CRLF line ends are fine (KenLM reads ``\\r`` as a space).
    """
    arpa_path = Path(arpa_path)
    text_path = check_input_file(text_path, "training text")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    _check_map_unk(map_unk)
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
    rewriter = _UnkRewriter(map_unk) if map_unk is not None else None
    log.info("estimating %d-gram ARPA: %s < %s", order, " ".join(cmd), text_path)
    t0 = time.perf_counter()
    ok = False
    try:
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
            assert proc.stdin is not None
            broken_pipe = False
            try:
                with _open_binary_text(text_path) as src:
                    n_lines, n_word_lines = _stream_checked(src, proc.stdin.write, text_path, rewriter)
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


# --------------------------------------------------------------------------- queries

class TokenScore(NamedTuple):
    ln_prob: float      # natural log of p(token | context)
    ngram_len: int      # length of the n-gram KenLM matched
    is_oov: bool        # the token was scored as <unk>


class KenLMScorer:
    """Natural-log queries of an ARPA or KenLM binary model through the ``kenlm`` module.

    ``map_unk`` rewrites the token ``<unk>`` before lookup; it must match what
    the model was estimated with (see the module docstring). A model that was
    not estimated with the rewrite scores the rewritten word as OOV, which is
    what it would have done with ``<unk>`` anyway.
    """

    def __init__(self, path: str | Path, map_unk: str | None = DEFAULT_MAP_UNK):
        import kenlm  # imported here so importing this module needs no compiled extension

        _check_map_unk(map_unk)
        self.path = check_input_file(path, "KenLM model")
        self._kenlm = kenlm
        try:
            self.model = kenlm.Model(str(self.path))
        except OSError as err:  # kenlm: "Cannot read model '...' (... FormatLoadException ...)"
            detail = str(err)
            if "Cannot read model" not in detail:
                raise
            raise DataError(f"{self.path}: not a KenLM model (ARPA or binary) that KenLM can read: "
                            f"{detail.split('(', 1)[-1].rstrip(')').strip()}") from None
        self.map_unk = map_unk

    @property
    def order(self) -> int:
        return int(self.model.order)

    def _word(self, word: str) -> str:
        return self.map_unk if (self.map_unk is not None and word == UNK) else word

    def _sentence(self, tokens: str | Sequence[str]) -> str:
        words = split_words(tokens) if isinstance(tokens, str) else list(tokens)
        if self.map_unk is not None:
            words = [self._word(w) for w in words]
        sent = " ".join(words)
        if len(split_words(sent)) != len(words):
            raise ValueError("tokens must be non-empty and contain no whitespace")
        return sent

    def score_sentence(self, tokens: str | Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """ln p(tokens [</s>] | [<s>]); by default the whole sentence including ``</s>``."""
        return self.model.score(self._sentence(tokens), bos=bos, eos=eos) * LN10

    def token_scores(self, tokens: str | Sequence[str], bos: bool = True, eos: bool = True) -> list[TokenScore]:
        """One :class:`TokenScore` per token, plus a last one for ``</s>`` when ``eos``."""
        return [TokenScore(lp * LN10, int(n), bool(oov))
                for lp, n, oov in self.model.full_scores(self._sentence(tokens), bos=bos, eos=eos)]

    def begin_state(self):
        """A ``kenlm.State`` for the start of a sentence (context ``<s>``)."""
        state = self._kenlm.State()
        self.model.BeginSentenceWrite(state)
        return state

    def null_state(self):
        """A ``kenlm.State`` with empty context."""
        state = self._kenlm.State()
        self.model.NullContextWrite(state)
        return state

    def score_word(self, state, word: str):
        """``(ln p(word | state), new_state)``; ``state`` is left unchanged.

        States are hashable and comparable (for hypothesis recombination).
        Score ``"</s>"`` at the end of a sentence.
        """
        new_state = self._kenlm.State()
        lp = self.model.BaseScore(state, self._word(word), new_state)
        return lp * LN10, new_state

    def end_sentence(self, state) -> float:
        """ln p(</s> | state)."""
        return self.score_word(state, "</s>")[0]

    def vocab_contains(self, word: str) -> bool:
        """True when ``word`` (after ``map_unk``) is in the model's vocabulary."""
        return self._word(word) in self.model

    def perplexity(self, lines: Iterable[str]) -> PerplexityResult:
        """See :func:`nmt.perplexity.kenlm_perplexity`."""
        return kenlm_perplexity(self, lines)

    def __repr__(self) -> str:
        return f"KenLMScorer({str(self.path)!r}, order={self.order}, map_unk={self.map_unk!r})"


def read_lines(path: str | Path) -> Iterator[str]:
    """Lines of a plain or ``.gz`` text, split on ``\\n`` only (as KenLM does), without it."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as fh:
        for line in fh:
            yield line[:-1] if line.endswith("\n") else line


# --------------------------------------------------------------------------- command line

def _configs():
    from nmt.config import field

    @dataclass
    class KenLMTrainConfig:
        text: str = field("", help="training text, one tokenized sentence per line (plain or .gz)")
        out_prefix: str = field("", help="writes OUT_PREFIX.arpa, OUT_PREFIX.binary and OUT_PREFIX.config.yaml")
        order: int = field(5, help="n-gram order (the tools are built for at most 6)")
        memory: str = field("20%", help="lmplz -S: sorting memory (e.g. 20%, 2G)")
        temp_dir: str = field("", help="lmplz -T: folder for temporary files ('' = lmplz's default)")
        discount_fallback: bool = field(False, help="lmplz --discount_fallback (tiny or deduplicated data)")
        map_unk: str = field(DEFAULT_MAP_UNK, help="rewrite the word <unk> to this ordinary word for lmplz, "
                                                    "which refuses <unk>; '' = no rewrite")
        skip_symbols: bool = field(False, help="lmplz --skip_symbols: read <s>, </s>, <unk> as whitespace")
        data_structure: str = field("probing", help="build_binary structure: probing, trie, or '' for ARPA only")

    @dataclass
    class KenLMEvalConfig:
        model: str = field("", help="ARPA file or KenLM binary")
        text: str = field("", help="text to score, one tokenized sentence per line (plain or .gz)")
        map_unk: str | None = field(None, help="rewrite <unk> to this word before lookup; default: the value "
                                               f"recorded in the model's .config.yaml, else {DEFAULT_MAP_UNK}; "
                                               "'' = no rewrite")
        name: str = field("", help="label of the result line (default: model and text names)")
        json_out: str = field("", help="also write the result as JSON here")

    return KenLMTrainConfig, KenLMEvalConfig


def _sidecar(model_path: Path) -> Path:
    stem = model_path.name
    for suffix in (".binary", ".arpa.gz", ".arpa", ".bin", ".klm"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return model_path.with_name(stem + ".config.yaml")


@command("smt-kenlm")
def cli_main(argv: Sequence[str] | None = None) -> int:
    """``smt-kenlm train|eval``: estimate (text → ARPA → binary) or evaluate a KenLM model."""
    import argparse
    import itertools
    import json

    import yaml

    from nmt import config as nmt_config

    train_cls, eval_cls = _configs()
    parser = argparse.ArgumentParser(prog="smt-kenlm", description=cli_main.__doc__)
    parser.add_argument("--config", help="YAML file with option: value lines (same names as the flags)")
    sub = parser.add_subparsers(dest="command", required=True)
    p_train = sub.add_parser("train", help="lmplz (modified Kneser-Ney) then build_binary")
    nmt_config.add_dataclass_args(p_train, train_cls)
    p_eval = sub.add_parser("eval", help="perplexity of a text (N = words + one </s> per sentence)")
    nmt_config.add_dataclass_args(p_eval, eval_cls)
    args = parser.parse_args(list(argv) if argv is not None else None)
    yaml_values = nmt_config.load_yaml(args.config) if args.config else {}
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    if args.command == "train":
        cfg = nmt_config.build(train_cls, args, yaml_values, source=str(args.config))
        if not cfg.text or not cfg.out_prefix:
            parser.error("train needs --text and --out-prefix")
        prefix = Path(cfg.out_prefix)
        arpa = prefix.with_name(prefix.name + ".arpa")
        binary = prefix.with_name(prefix.name + ".binary")
        sidecar = prefix.with_name(prefix.name + ".config.yaml")
        written = {"--out-prefix's .arpa": arpa, "--out-prefix's .config.yaml": sidecar}
        if cfg.data_structure:
            written["--out-prefix's .binary"] = binary
        refuse_overwriting_inputs(written, {"--text": cfg.text, "--config": args.config})
        if cfg.data_structure and cfg.data_structure not in DATA_STRUCTURES:
            parser.error(f"--data-structure must be one of {', '.join(DATA_STRUCTURES)} or ''")
        t0 = time.perf_counter()
        estimate_arpa(cfg.text, arpa, order=cfg.order, memory=cfg.memory,
                      discount_fallback=cfg.discount_fallback, temp_dir=cfg.temp_dir or None,
                      map_unk=cfg.map_unk or None, skip_symbols=cfg.skip_symbols)
        t_arpa = time.perf_counter() - t0
        outputs = {"arpa": str(arpa)}
        if cfg.data_structure:
            build_binary(arpa, binary, cfg.data_structure)
            outputs["binary"] = str(binary)
        t_all = time.perf_counter() - t0
        record = {**nmt_config.to_dict(cfg), "outputs": outputs,
                  "lmplz_seconds": round(t_arpa, 2), "total_seconds": round(t_all, 2)}
        with atomic_write(sidecar) as fh:
            fh.write(yaml.safe_dump(record, sort_keys=False, allow_unicode=True))
        print(f"wrote {', '.join(outputs.values())} and {sidecar} in {t_all:.1f} s (lmplz {t_arpa:.1f} s)")
        return 0

    cfg = nmt_config.build(eval_cls, args, yaml_values, source=str(args.config))
    if not cfg.model or not cfg.text:
        parser.error("eval needs --model and --text")
    model_path = Path(cfg.model)
    refuse_overwriting_inputs({"--json-out": cfg.json_out or None},
                              {"--model": cfg.model, "--text": cfg.text, "--config": args.config})
    # the text first (cheap): a missing, empty or unreadable text is reported before the model is loaded
    lines = iter_lines(cfg.text, allow_empty=True)  # strict UTF-8 (FILE:LINE); an empty line is a sentence
    first = next(lines, None)
    if first is None:
        raise DataError(f"{cfg.text}: empty file: no sentence to score")
    map_unk = cfg.map_unk
    if map_unk is None:
        side = _sidecar(model_path)
        try:
            recorded = yaml.safe_load(side.read_text(encoding="utf-8")) if side.is_file() else None
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            raise DataError(f"{side}: the model's record is not readable YAML ({err}); "
                            "pass --map-unk to skip it") from None
        map_unk = recorded.get("map_unk", DEFAULT_MAP_UNK) if isinstance(recorded, dict) else DEFAULT_MAP_UNK
    scorer = KenLMScorer(model_path, map_unk=map_unk or None)
    res = kenlm_perplexity(scorer, itertools.chain([first], lines))
    name = cfg.name or f"kenlm {model_path.name} on {Path(cfg.text).name}"
    unk_note = "OOVs included, scored with p(<unk>) times context back-offs"
    if map_unk:
        unk_note += f"; the text's literal <unk> read as the word {map_unk!r}"
    print(format_result(res, name, unk=unk_note))
    if cfg.json_out:
        with atomic_write(cfg.json_out) as fh:
            fh.write(json.dumps({"name": name, "model": str(model_path), "text": cfg.text,
                                 "map_unk": map_unk or None, **res.to_dict()}, indent=2) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(cli_main())
