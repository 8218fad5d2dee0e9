"""The MERT loop of ``smt-tune``: decode the dev set, merge the n-best lists, optimise, repeat (``mert-moses.pl``).

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
   random starting points) on the merged candidates -- or kbMIRA / PRO
   (``--optimizer``, :mod:`smt_features.tune.optimizers`);
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
repeated. The random restarts of iteration ``i`` use seed ``--seed + i``
(``1 + i`` without ``--seed``); with ``--seed`` the first iteration starts
from random weights drawn from it (:mod:`smt_features.tune.start`), recorded
before the first decode, so a resumed run ends with the same weights as an
uninterrupted one.

The decoding step is :mod:`smt_features.tune.decoding`, the resume file
:mod:`smt_features.tune.state`, the options :class:`smt_features.tune.options.TuneConfig`
(``smt-tune --moses-ini FILE``, the moses.ini as for ``mert-moses.pl``; a YAML
recipe section is given with ``--config FILE[:SECTION]``).

Example::

    smt-tune --moses-ini model/moses.ini --dev-src data/val.tok.en --dev-ref data/val.tok.fr \\
        --work-dir work/tune --nbest 100 --threads 2
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from nmt.core import config as nmt_config
from nmt.core.io import DataError, read_lines, read_parallel
from nmt.core.errors import UsageError, refuse_overwriting_inputs
from nmt.core.logs import add_file_log, remove_file_log
from smt_features.model.moses_ini import check_feature_files, read_moses_ini
from smt_features.model.weights import Weights, parse_ranges, value_names
from smt_features.tune.bleu_stats import bleu_from_stats
from smt_features.tune.decoding import decode, decoder_command, one_best_from_nbest
from smt_features.tune.filtered import decoding_model
from smt_features.tune.mert import mert, normalise_l1
from smt_features.tune.optimizers import IMPLS, OPTIMIZERS, optimise_step, record_key
from smt_features.tune.options import TuneConfig, TuneResult
from smt_features.tune.pool import NBestPool
from smt_features.tune.start import DEFAULT_SEED, random_start, tuneable_groups
from smt_features.tune.state import STATE_FILE, RunState

log = logging.getLogger("smt_features.tune")


def check_inputs(cfg: TuneConfig, work: Path) -> tuple[Any, list[str]]:
    """Read and check every input before the work folder is touched; returns the moses.ini and the references.

    The dev files are read strictly and must be line-aligned and non-empty; every feature file of the
    moses.ini must exist; no input may be one of the files the run writes into ``--work-dir``.
    """
    if work.exists() and not work.is_dir():
        raise UsageError(f"{work}: --work-dir exists and is not a folder")
    inputs = {"--moses-ini": cfg.moses_ini, "--dev-src": cfg.dev_src, "--dev-ref": cfg.dev_ref}
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
    base = read_moses_ini(cfg.moses_ini)
    cmd = decoder_command(cfg.decoder_cmd)
    if Path(cmd[0]).name == "smt-decode" or "smt_features.cli.decode" in cmd:
        # our decoder opens every path= as a file; other decoders (Moses) have their own conventions
        check_feature_files(base)
    return base, [ref for _, ref in pairs]


def tune(cfg: TuneConfig) -> TuneResult:
    """Run (or resume) the tuning loop; see the module docstring."""
    if cfg.nbest < 1 or cfg.max_iterations < 1 or cfg.restarts < 0 or cfg.threads < 1:
        raise UsageError("--nbest, --max-iterations and --threads must be >= 1, --restarts >= 0")
    if cfg.weights_mode not in ("ini", "override"):
        raise UsageError(f"--weights-mode must be 'ini' or 'override', not {cfg.weights_mode!r}")
    if cfg.optimizer not in OPTIMIZERS:
        raise UsageError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, not {cfg.optimizer!r}")
    if cfg.optimizer_impl not in IMPLS:
        raise UsageError(f"--optimizer-impl must be one of {', '.join(IMPLS)}, not {cfg.optimizer_impl!r}")
    ranges = parse_ranges(cfg.ranges)
    work = Path(cfg.work_dir)
    state_path = work / STATE_FILE
    if state_path.exists() and not cfg.resume:
        raise UsageError(f"{work}: holds a previous run ({STATE_FILE}); pass --resume to continue it "
                         "or choose another --work-dir")
    base, refs = check_inputs(cfg, work)
    work.mkdir(parents=True, exist_ok=True)
    handler = add_file_log(work / "mert.log", log.name, "%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S")
    try:
        return _tune(cfg, work, state_path, ranges, base, refs)
    finally:
        remove_file_log(handler, log.name)


def _tune(cfg: TuneConfig, work: Path, state_path: Path, ranges: dict[str, tuple[float, float]],
          base: Any, refs: list[str]) -> TuneResult:
    state = RunState.load_or_new(state_path, cfg)
    nmt_config.save(cfg, work / "config.yaml")
    resumed = bool(state.iterations)
    log.info("smt-tune: %d dev sentences, n-best %d, at most %d iterations, %d restarts, seed %d%s%s",
             len(refs), cfg.nbest, cfg.max_iterations, cfg.restarts, DEFAULT_SEED if cfg.seed is None else cfg.seed,
             "" if cfg.seed is None and cfg.optimizer == "mert" else
             f" (random first start: {cfg.seed is not None}, optimizer {cfg.optimizer})",
             f" (resuming after {len(state.iterations)} iteration(s))" if resumed else "")
    pool = NBestPool(refs, ref_length=cfg.ref_length)
    weights: dict[str, list[float]] = Weights(base.weights)
    stop_reason = "max-iterations"
    dev_bleus: list[float] = []
    final_weights = weights
    dec_base, dec_ini = decoding_model(cfg, base, work)
    it = 0
    for it in range(1, cfg.max_iterations + 1):
        if it <= len(state.iterations):
            rec = state.iterations[it - 1]
            weights = rec["weights"]
        else:
            if it == 1 and cfg.seed is not None:
                weights = random_start(weights, tuneable_groups(base), cfg.seed, fixed=cfg.fixed, ranges=ranges)
                log.info("iteration 1: random start from seed %d: %s", cfg.seed, Weights(weights).override_string())
            rec = {"iteration": it, "weights": weights}
            state.iterations.append(rec)
            state.save()
        # ---- decode and merge
        nbest_path, out_path, dec_seconds = decode(cfg, work, it, weights, dec_base, dec_ini)
        t0 = time.perf_counter()
        n_read, n_new = pool.add_nbest_file(nbest_path)
        missing = pool.missing_sentences()
        if missing:
            raise DataError(f"{nbest_path}: no hypotheses for {len(missing)} dev sentence(s) (first ids: "
                            f"{missing[:5]}); dev has {len(refs)} sentences")
        hyps = read_lines(out_path, allow_empty=True) if out_path.exists() else \
            one_best_from_nbest(nbest_path, len(refs))
        if len(hyps) != len(refs):
            raise DataError(f"{out_path}: {len(hyps)} lines for {len(refs)} dev sentences")
        dev_bleu = float(bleu_from_stats(pool.scorer.corpus_stats(hyps)))
        dev_bleus.append(dev_bleu)
        read_seconds = time.perf_counter() - t0
        if "decode" not in rec:
            rec["decode"] = {"nbest": nbest_path.name, "seconds": round(dec_seconds, 3)}
        rec["decode"].update({"lines": n_read, "new": n_new, "pool": len(pool), "dev_bleu": dev_bleu,
                              "read_seconds": round(read_seconds, 3)})
        state.save()
        log.info("iteration %d: dev BLEU %.2f (tokenized, decoder 1-best) | n-best %d lines, %d new, pool %d "
                 "| decode %.1f s, read %.1f s", it, dev_bleu, n_read, n_new, len(pool), dec_seconds,
                 read_seconds)
        layout = pool.layout or []
        current = np.array(Weights(weights).to_vector(layout, where=str(nbest_path)), dtype=np.float64)
        if n_new == 0:
            stop_reason = "no-new-hypotheses"
            final_weights = weights
            log.info("iteration %d: no new hypotheses: stop", it)
            break
        # ---- optimise
        key = record_key(cfg)
        if key in rec:
            new_weights = rec[key]["weights"]
            log.info("iteration %d: %s already done (resumed): BLEU %.2f", it, OPTIMIZERS[cfg.optimizer],
                     rec[key]["bleu"])
        else:
            step = optimise_step(cfg, pool, current, it, ranges, mert_fn=mert)
            new_weights = Weights.from_vector(step.weights, layout, base=weights)
            rec[key] = {**step.record, "weights": new_weights}
            state.save()
            log.info("iteration %d: %s", it, step.message)
        vec_new = np.array(Weights(new_weights).to_vector(layout, where="MERT"), dtype=np.float64)
        log.info("iteration %d: weights %s", it, " ".join(f"{n}={v:.6g}" for n, v in
                                                          zip(value_names(layout), vec_new)))
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
