"""``smt-tune``: MERT of a moses.ini's weights on a dev set, the loop of Moses's ``mert-moses.pl``.

Each iteration ``i`` (from 1):

1. write ``run<i>.moses.ini`` (the configuration with the current weights)
   and decode the dev source with the decoder (``--decoder-cmd``, default
   ``smt-decode``) into ``run<i>.out`` (1-best) and ``run<i>.best<N>.out``
   (Moses n-best list, ``--nbest`` entries per sentence);
2. merge the n-best list into the candidates of all earlier iterations and
   log the dev BLEU of the decoder's 1-best (tokenized, see
   :mod:`smt_features.tune.bleu_stats`);
3. stop when the n-best list brought no new candidate; otherwise run MERT
   (:func:`smt_features.tune.mert.mert`: the current weights plus ``--restarts``
   random starting points) on the merged candidates;
4. stop when the optimised weights equal the current ones (largest change
   of the Σ|λ| = 1 normalised weights below ``--min-weight-change``) or after
   ``--max-iterations``; else continue with the new weights.

The result is ``moses.tuned.ini`` in ``--work-dir``: the input configuration
with the last optimised weights (``--return-best-dev``: the weights whose
decoded 1-best had the best dev BLEU) for every feature of the n-best
lists; features that are not tuned (``UnknownWordPenalty0``) keep theirs.
Also written: ``mert.log`` (the log), ``iterations.json`` (per iteration
weights, dev BLEU, pool size, MERT BLEU and timings), ``config.yaml``.

Each step is saved as soon as it is done (the n-best list is renamed into
place only when the decoder succeeded; ``iterations.json`` is rewritten
atomically), so after a kill ``--resume`` continues where it stopped:
finished decodes are re-read, not rerun, and finished MERT runs are not
repeated. The random restarts of iteration ``i`` use seed ``--seed + i``,
so a resumed run ends with the same weights as an uninterrupted one.

The decoder is called as::

    <decoder-cmd> --config run<i>.moses.ini --input DEV_SRC --output run<i>.out.tmp \\
        --n-best-list run<i>.best<N>.out.tmp N --threads T [--decoder-flags ...]

(``--weights-mode override`` instead passes the original ``--config`` and
``--weights-override "Name= v … Name2= v"``, Moses's ``-weight-overwrite``
syntax.)

``--config`` is the moses.ini (as for ``mert-moses.pl``), so a YAML recipe
section is given with ``--yaml FILE[:SECTION]``.

Example::

    smt-tune --config model/moses.ini --dev-src data/val.tok.en --dev-ref data/val.tok.fr \\
        --work-dir work/tune --nbest 100 --threads 2
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nmt import config as nmt_config
from nmt.config import field
from nmt.data.io import DataError, atomic_write, read_lines, read_parallel
from nmt.errors import UsageError, command, refuse_overwriting_inputs
from smt_features.tune.bleu_stats import bleu_from_stats
from smt_features.tune.mert import MertOptions, NBestPool, layout_names, mert, normalise_l1

log = logging.getLogger("smt_features.tune")

STATE_FILE = "iterations.json"
STATE_VERSION = 1
#: options that must not change when a run is resumed
_RESUME_KEYS = ("config", "dev_src", "dev_ref", "nbest", "seed", "restarts", "random_directions", "ref_length",
                "fixed", "ranges", "clip_to_ranges")


@dataclass
class TuneConfig:
    config: str = field("", help="moses.ini with the features and the starting weights")
    dev_src: str = field("", help="tokenized dev source, one sentence per line")
    dev_ref: str = field("", help="tokenized dev reference, line-aligned with --dev-src")
    work_dir: str = field("", help="folder for the n-best lists, logs and moses.tuned.ini")
    nbest: int = field(100, help="n-best list size per sentence and iteration")
    max_iterations: int = field(25, help="most decode + optimise iterations")
    restarts: int = field(20, help="random starting points of each MERT run (besides the current weights)")
    random_directions: int = field(0, help="random search directions per MERT round, besides the coordinate ones")
    threads: int = field(2, help="decoder threads (--threads of the decoder)")
    seed: int = field(1, help="seed of the random restarts (iteration i uses seed + i)")
    decoder_cmd: str = field("smt-decode", help="decoder command (split like a shell would)")
    decoder_flags: str = field("", help="extra flags appended to every decoder call (split like a shell would; "
                                        "write --decoder-flags='--stack 100')")
    weights_mode: str = field("ini", help="how the decoder gets the weights: 'ini' (--config run<i>.moses.ini) or "
                                          "'override' (--config <original> --weights-override '...')")
    resume: bool = field(False, help="continue the run found in --work-dir")
    ref_length: str = field("closest", help="effective reference length: closest, shortest or average")
    min_weight_change: float = field(1e-5, help="stop when no normalised weight changes by more than this")
    return_best_dev: bool = field(False, help="write the weights of the iteration with the best dev 1-best BLEU "
                                              "instead of the last optimised ones")
    fixed: list[str] = field([], help="features kept at their starting weight (value names like LM0, "
                                      "TranslationModel0_2, or a group name like TranslationModel0)")
    ranges: list[str] = field([], help="Moses --range: NAME:LO..HI intervals for random restarts "
                                       "(default -1..1), e.g. LM0:0..1")
    clip_to_ranges: bool = field(False, help="also keep the optimised weights inside the ranges")
    tol: float = field(1e-3, help="MERT stops a start when BLEU (percent) improves less than this")


@dataclass
class TuneResult:
    weights: dict[str, list[float]]
    iterations: int
    stop_reason: str
    dev_bleu: list[float]
    tuned_ini: str


# =============================================================================== helpers

def parse_ranges(items: list[str]) -> dict[str, tuple[float, float]]:
    """``["LM0:-1..1", "TranslationModel0:0..2"]`` → ``{"LM0": (-1, 1), …}``."""
    out = {}
    for item in items:
        name, sep, rng = item.rpartition(":")
        lo_hi = rng.split("..")
        if not sep or not name or len(lo_hi) != 2:
            raise ValueError(f"--ranges: expected NAME:LO..HI, got {item!r}")
        try:
            lo, hi = float(lo_hi[0]), float(lo_hi[1])
        except ValueError:
            raise ValueError(f"--ranges: bad numbers in {item!r}") from None
        if lo > hi:
            raise ValueError(f"--ranges: {item!r} has LO > HI")
        out[name] = (lo, hi)
    return out


def _absolute_paths(cfg: Any) -> Any:
    """A copy of a MosesConfig whose feature ``path=`` arguments are absolute (resolved like the decoder:
    from the working directory, else from the moses.ini's folder), so it can be written elsewhere."""
    out = cfg.copy()
    ini_dir = Path(cfg.path).parent if cfg.path else Path.cwd()
    for fl in out.features:
        p = fl.args.get("path")
        if not p or Path(p).is_absolute():
            continue
        cand = Path(p)
        if not cand.exists() and (ini_dir / p).exists():
            cand = ini_dir / p
        fl.args["path"] = str(cand.resolve())
    return out


def _weights_to_vector(weights: dict[str, list[float]], layout: list[tuple[str, int]], where: str) -> np.ndarray:
    vec: list[float] = []
    for name, k in layout:
        if name not in weights:
            raise ValueError(f"{where}: the n-best lists have feature {name}, but the moses.ini has no weights "
                             f"for it ([weight] names: {' '.join(weights)})")
        if len(weights[name]) != k:
            raise ValueError(f"{where}: {name} has {k} value(s) in the n-best lists but {len(weights[name])} "
                             "weight(s) in the moses.ini")
        vec.extend(weights[name])
    return np.array(vec, dtype=np.float64)


def _vector_to_weights(vec: np.ndarray, layout: list[tuple[str, int]], base: dict[str, list[float]]
                       ) -> dict[str, list[float]]:
    out = {k: list(v) for k, v in base.items()}
    i = 0
    for name, k in layout:
        out[name] = [float(x) for x in vec[i:i + k]]
        i += k
    return out


def _weight_string(weights: dict[str, list[float]]) -> str:
    from smt_features.model.moses_ini import format_weight_line

    return " ".join(format_weight_line(n, v) for n, v in weights.items())


class _State:
    """``iterations.json``: every finished step, rewritten atomically."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def load_or_new(cls, path: Path, cfg: TuneConfig) -> "_State":
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"{path}: unknown state version {data.get('version')}")
            saved = data.get("config", {})
            changed = [k for k in _RESUME_KEYS if k in saved and saved[k] != asdict(cfg)[k]]
            if changed:
                raise ValueError(f"{path}: cannot resume, options changed since the run started: "
                                 + ", ".join(f"{k} {saved[k]!r} -> {asdict(cfg)[k]!r}" for k in changed))
            data["config"] = asdict(cfg)
            return cls(path, data)
        return cls(path, {"version": STATE_VERSION, "config": asdict(cfg), "iterations": []})

    @property
    def iterations(self) -> list[dict[str, Any]]:
        return self.data["iterations"]

    def save(self) -> None:
        with atomic_write(self.path) as fh:
            json.dump(self.data, fh, indent=1, ensure_ascii=False)
            fh.write("\n")


# =============================================================================== the loop

def _decode(cfg: TuneConfig, work: Path, it: int, weights: dict[str, list[float]], base: Any) -> tuple[Path, Path, float]:
    """Run the decoder for iteration ``it``; returns (n-best, 1-best, seconds). Skips a finished decode."""
    nbest_path = work / f"run{it}.best{cfg.nbest}.out"
    out_path = work / f"run{it}.out"
    if nbest_path.exists():
        log.info("iteration %d: n-best list %s already there (resumed), not decoding again", it, nbest_path.name)
        return nbest_path, out_path, 0.0
    from smt_features.model.moses_ini import apply_weight_overrides

    run_cfg = _absolute_paths(base)
    apply_weight_overrides(run_cfg, weights, source=f"iteration {it} weights")
    run_ini = work / f"run{it}.moses.ini"
    run_cfg.write(run_ini)
    nbest_tmp = work / f"run{it}.best{cfg.nbest}.out.tmp"
    out_tmp = work / f"run{it}.out.tmp"
    cmd = _decoder_command(cfg.decoder_cmd)
    if cfg.weights_mode == "ini":
        cmd += ["--config", str(run_ini)]
    else:
        cmd += ["--config", str(Path(cfg.config).resolve()), "--weights-override", _weight_string(weights)]
    cmd += ["--input", str(Path(cfg.dev_src).resolve()), "--output", str(out_tmp),
            "--n-best-list", str(nbest_tmp), str(cfg.nbest), "--threads", str(cfg.threads)]
    cmd += shlex.split(cfg.decoder_flags)
    log.info("iteration %d: decoding: %s", it, shlex.join(cmd))
    dlog = work / f"run{it}.decode.log"
    t0 = time.perf_counter()
    with open(dlog, "w", encoding="utf-8") as fh:
        try:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise RuntimeError(f"decoder command not found: {cmd[0]!r} (--decoder-cmd)") from None
    seconds = time.perf_counter() - t0
    if proc.returncode == 2:  # the toolkit's "bad input" status: pass the decoder's FILE:LINE message on
        refusal = _decoder_refusal(dlog.read_text(encoding="utf-8", errors="replace"))
        if refusal:
            raise DataError(f"{refusal} (the decoder refused its input in iteration {it}; see {dlog})")
    if proc.returncode != 0:
        tail = dlog.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        raise RuntimeError(f"decoder failed (exit {proc.returncode}) in iteration {it}; {dlog}:\n  "
                           + "\n  ".join(tail))
    if not nbest_tmp.exists():
        raise RuntimeError(f"decoder wrote no n-best list {nbest_tmp} (see {dlog})")
    if out_tmp.exists():
        os.replace(out_tmp, out_path)
    os.replace(nbest_tmp, nbest_path)  # last: its presence marks a finished decode
    return nbest_path, out_path, seconds


_PROG_MESSAGE = re.compile(r"^[\w.-]+: (?!internal error)(.+)$")


def _decoder_refusal(log_text: str) -> str | None:
    """The last ``PROG: message`` line of a decoder's log (the toolkit's error line), without ``PROG: ``."""
    found = None
    for line in log_text.splitlines():
        m = _PROG_MESSAGE.match(line)
        if m:
            found = m.group(1)
    return found


def _decoder_command(text: str) -> list[str]:
    """``--decoder-cmd`` split like a shell; a bare ``smt-decode`` that is not on ``PATH`` is looked up
    beside this Python (the virtual environment's ``bin``), else run as ``python -m smt_features.cli.decode``."""
    cmd = shlex.split(text)
    if not cmd:
        raise UsageError("--decoder-cmd is empty")
    if cmd[0] == "smt-decode" and shutil.which("smt-decode") is None:
        sibling = Path(sys.executable).parent / "smt-decode"
        cmd[:1] = [str(sibling)] if sibling.exists() else [sys.executable, "-m", "smt_features.cli.decode"]
    elif shutil.which(cmd[0]) is None:
        raise UsageError(f"--decoder-cmd: {cmd[0]!r} is not an executable command")
    return cmd


def _check_inputs(cfg: TuneConfig, work: Path) -> tuple[Any, list[str]]:
    """Read and check every input before the work folder is touched; returns the moses.ini and the references.

    The dev files are read strictly and must be line-aligned and non-empty; every feature file of the
    moses.ini must exist; no input may be one of the files the run writes into ``--work-dir``.
    """
    from smt_features.model.moses_ini import check_feature_files, read_moses_ini

    if work.exists() and not work.is_dir():
        raise UsageError(f"{work}: --work-dir exists and is not a folder")
    inputs = {"--config": cfg.config, "--dev-src": cfg.dev_src, "--dev-ref": cfg.dev_ref}
    outputs = {f"--work-dir's {name}": work / name for name in ("moses.tuned.ini", "mert.log", "config.yaml")}
    if not cfg.resume:
        outputs[f"--work-dir's {STATE_FILE}"] = work / STATE_FILE
    refuse_overwriting_inputs(outputs, inputs)
    for flag, path in inputs.items():
        p = Path(path)
        if re.match(r"run\d+\.", p.name) and p.resolve().parent == work.resolve():
            raise UsageError(f"{path}: {flag} is in --work-dir under the name of a file the run writes; "
                             "refusing to overwrite an input")
    pairs = read_parallel(cfg.dev_src, cfg.dev_ref)  # strict: bad UTF-8, empty lines, different lengths
    if not pairs:
        raise DataError(f"{cfg.dev_src}: empty file: no dev sentence to tune on")
    base = read_moses_ini(cfg.config)
    cmd = _decoder_command(cfg.decoder_cmd)
    if Path(cmd[0]).name == "smt-decode" or "smt_features.cli.decode" in cmd:
        # our decoder opens every path= as a file; other decoders (Moses) have their own conventions
        check_feature_files(base)
    return base, [ref for _, ref in pairs]


def _one_best_from_nbest(path: Path, n_sent: int) -> list[str]:
    from nmt.formats.nbest import iter_nbest

    best: list[str | None] = [None] * n_sent
    for e in iter_nbest(path):
        if 0 <= e.sent_id < n_sent and best[e.sent_id] is None:
            best[e.sent_id] = e.hypothesis
    return [b or "" for b in best]


def tune(cfg: TuneConfig) -> TuneResult:
    """Run (or resume) the tuning loop; see the module docstring."""
    for name in ("config", "dev_src", "dev_ref", "work_dir"):
        if not getattr(cfg, name):
            raise UsageError(f"--{name.replace('_', '-')} is required")
    if cfg.nbest < 1 or cfg.max_iterations < 1 or cfg.restarts < 0 or cfg.threads < 1:
        raise UsageError("--nbest, --max-iterations and --threads must be >= 1, --restarts >= 0")
    if cfg.weights_mode not in ("ini", "override"):
        raise UsageError(f"--weights-mode must be 'ini' or 'override', not {cfg.weights_mode!r}")
    ranges = parse_ranges(cfg.ranges)
    work = Path(cfg.work_dir)
    state_path = work / STATE_FILE
    if state_path.exists() and not cfg.resume:
        raise UsageError(f"{work}: holds a previous run ({STATE_FILE}); pass --resume to continue it "
                         "or choose another --work-dir")
    base, refs = _check_inputs(cfg, work)
    work.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(work / "mert.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        return _tune(cfg, work, state_path, ranges, base, refs)
    finally:
        log.removeHandler(handler)
        handler.close()


def _tune(cfg: TuneConfig, work: Path, state_path: Path, ranges: dict[str, tuple[float, float]],
          base: Any, refs: list[str]) -> TuneResult:
    state = _State.load_or_new(state_path, cfg)
    nmt_config.save(cfg, work / "config.yaml")
    resumed = bool(state.iterations)
    log.info("smt-tune: %d dev sentences, n-best %d, at most %d iterations, %d restarts, seed %d%s",
             len(refs), cfg.nbest, cfg.max_iterations, cfg.restarts, cfg.seed,
             f" (resuming after {len(state.iterations)} iteration(s))" if resumed else "")
    pool = NBestPool(refs, ref_length=cfg.ref_length)
    weights: dict[str, list[float]] = {k: list(v) for k, v in base.weights.items()}
    stop_reason = "max-iterations"
    dev_bleus: list[float] = []
    final_weights = weights
    it = 0
    for it in range(1, cfg.max_iterations + 1):
        if it <= len(state.iterations):
            rec = state.iterations[it - 1]
            weights = rec["weights"]
        else:
            rec = {"iteration": it, "weights": weights}
            state.iterations.append(rec)
            state.save()
        # ---- decode and merge
        nbest_path, out_path, dec_seconds = _decode(cfg, work, it, weights, base)
        t0 = time.perf_counter()
        n_read, n_new = pool.add_nbest_file(nbest_path)
        missing = pool.missing_sentences()
        if missing:
            raise DataError(f"{nbest_path}: no hypotheses for {len(missing)} dev sentence(s) (first ids: "
                            f"{missing[:5]}); dev has {len(refs)} sentences")
        hyps = read_lines(out_path, allow_empty=True) if out_path.exists() else \
            _one_best_from_nbest(nbest_path, len(refs))
        if len(hyps) != len(refs):
            raise DataError(f"{out_path}: {len(hyps)} lines for {len(refs)} dev sentences")
        dev_bleu = float(bleu_from_stats(pool.scorer.corpus_stats(hyps)))
        dev_bleus.append(dev_bleu)
        if "decode" not in rec:
            rec["decode"] = {"nbest": nbest_path.name, "seconds": round(dec_seconds, 3)}
        rec["decode"].update({"lines": n_read, "new": n_new, "pool": len(pool), "dev_bleu": dev_bleu})
        state.save()
        log.info("iteration %d: dev BLEU %.2f (tokenized, decoder 1-best) | n-best %d lines, %d new, pool %d "
                 "| decode %.1f s, read %.1f s", it, dev_bleu, n_read, n_new, len(pool), dec_seconds,
                 time.perf_counter() - t0)
        layout = pool.layout or []
        current = _weights_to_vector(weights, layout, str(nbest_path))
        if n_new == 0:
            stop_reason = "no-new-hypotheses"
            final_weights = weights
            log.info("iteration %d: no new hypotheses: stop", it)
            break
        # ---- optimise
        if "mert" in rec:
            new_weights = rec["mert"]["weights"]
            log.info("iteration %d: MERT already done (resumed): BLEU %.2f", it, rec["mert"]["bleu"])
        else:
            opts = MertOptions(restarts=cfg.restarts, random_directions=cfg.random_directions, seed=cfg.seed + it,
                               fixed=cfg.fixed, ranges=ranges, clip_to_ranges=cfg.clip_to_ranges, tol=cfg.tol,
                               progress=sys.stderr.isatty())
            res = mert(pool, current, opts)
            new_weights = _vector_to_weights(res.weights, layout, weights)
            rec["mert"] = {"bleu": res.bleu, "init_bleu": res.init_bleu, "best_start": res.best_start,
                           "line_searches": res.line_searches, "seconds": round(res.seconds, 3),
                           "weights": new_weights}
            state.save()
            log.info("iteration %d: MERT BLEU %.2f on the pool of %d candidates (%.2f at the current weights; "
                     "best of %d starts: #%d) | %d line searches, %.1f s", it, res.bleu, len(pool), res.init_bleu,
                     len(res.start_bleus), res.best_start, res.line_searches, res.seconds)
        vec_new = _weights_to_vector(new_weights, layout, "MERT")
        log.info("iteration %d: weights %s", it, " ".join(f"{n}={v:.6g}" for n, v in
                                                          zip(layout_names(layout), vec_new)))
        change = float(np.max(np.abs(normalise_l1(vec_new) - normalise_l1(current))))
        final_weights = new_weights
        if change < cfg.min_weight_change:
            stop_reason = "weights-converged"
            log.info("iteration %d: weights changed by %.3g < %.3g: stop", it, change, cfg.min_weight_change)
            break
        weights = new_weights
    if cfg.return_best_dev and dev_bleus:
        best = int(np.argmax(dev_bleus))
        final_weights = state.iterations[best]["weights"]
        log.info("--return-best-dev: weights of iteration %d (dev BLEU %.2f)", best + 1, dev_bleus[best])
    tuned = base.copy()
    for name, values in final_weights.items():
        tuned.weights[name] = list(values)
    tuned_path = work / "moses.tuned.ini"
    tuned.write(tuned_path)
    state.data["final"] = {"iterations": it, "stop_reason": stop_reason, "weights": final_weights,
                           "dev_bleu": dev_bleus, "tuned_ini": tuned_path.name,
                           "bleu_note": "tokenized corpus BLEU (percent) of the decoder 1-best on the dev set"}
    state.save()
    log.info("done after %d iteration(s) (%s); dev BLEU per iteration: %s; wrote %s", it, stop_reason,
             " ".join(f"{b:.2f}" for b in dev_bleus), tuned_path)
    return TuneResult(final_weights, it, stop_reason, dev_bleus, str(tuned_path))


# =============================================================================== entry point

@command("smt-tune")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-tune``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--yaml", help="YAML file (or FILE:SECTION) with option: value lines, same names as the "
                                       "flags; flags given on the command line win")
    nmt_config.add_dataclass_args(parser, TuneConfig)
    args = parser.parse_args(argv)
    try:
        yaml_values = nmt_config.load_yaml(args.yaml) if args.yaml else {}
        cfg = nmt_config.build(TuneConfig, args, yaml_values, source=str(args.yaml))
    except ValueError as err:
        parser.error(str(err))
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        result = tune(cfg)
    except KeyboardInterrupt:
        print("smt-tune: interrupted; rerun with --resume to continue", file=sys.stderr)
        return 130
    print(f"smt-tune: {result.iterations} iteration(s), {result.stop_reason}; wrote {result.tuned_ini}")
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
