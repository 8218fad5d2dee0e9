"""The options of ``smt-tune`` (:class:`TuneConfig`) and what a run returns (:class:`TuneResult`)."""
from __future__ import annotations

from dataclasses import dataclass

from nmt.core.config import field


@dataclass
class TuneConfig:
    moses_ini: str = field("", help="moses.ini with the features and the starting weights", required=True)
    dev_src: str = field("", help="tokenized dev source, one sentence per line", required=True)
    dev_ref: str = field("", help="tokenized dev reference, line-aligned with --dev-src", required=True)
    work_dir: str = field("", help="folder for the n-best lists, logs and moses.tuned.ini", required=True)
    nbest: int = field(100, help="n-best list size per sentence and iteration")
    max_iterations: int = field(25, help="most decode + optimise iterations")
    restarts: int = field(20, help="random starting points of each MERT run (besides the current weights)")
    random_directions: int = field(0, help="random search directions per MERT round, besides the coordinate ones")
    threads: int = field(2, help="decoder threads (--threads of the decoder), and the processes MERT climbs its "
                                    "restarts in (the same weights for any number)")
    seed: int | None = field(None, help="experiment run's seed: the first iteration starts from random weights "
                                        "drawn from it (uniform in --ranges, Σ|λ| = 1) and iteration i's optimiser "
                                        "uses seed + i (MERT's restarts, kbMIRA's shuffling, PRO's sampling); "
                                        "unset: start from the moses.ini weights, iteration i uses seed 1 + i")
    decoder_cmd: str = field("smt-decode", help="decoder command (split like a shell would)")
    decoder_flags: str = field("", help="extra flags appended to every decoder call (split like a shell would; "
                                        "write --decoder-flags='--stack 100')")
    weights_mode: str = field("ini", help="how the decoder gets the weights: 'ini' (--moses-ini run<i>.moses.ini) "
                                          "or 'override' (--moses-ini <original> --weights-override '...')")
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
    filter_table: bool = field(True, help="filter the phrase table to the dev set's phrases once (WORK/filtered/), "
                                          "so no iteration's decoder reads the whole table; same results")
    optimizer: str = field("mert", help="optimiser of each iteration: mert (Och, Moses mert), kbmira (k-best batch "
                                        "MIRA, Cherry & Foster 2012) or pro (Hopkins & May 2011)")
    optimizer_impl: str = field("auto", help="the optimiser's code: auto (MERT's compiled line search when built, "
                                             "else numpy; kbMIRA's and PRO's fast loops), compiled (error if MERT's "
                                             "kernel is not built), reference (the plain numpy code: the same "
                                             "weights, slower)")
    historic_interpolation: float = field(0.1, help="pro only: from iteration 4 on the weights are ψ·PRO's + (1 − ψ)·the "
                                                    "current ones (mert-moses.pl --historic-interpolation; Hopkins & "
                                                    "May 2011 §5.4.3: 0.1); 0: no interpolation")


@dataclass
class TuneResult:
    weights: dict[str, list[float]]
    iterations: int
    stop_reason: str
    dev_bleu: list[float]
    tuned_ini: str
