"""Is a system better than the baseline, or is it the optimiser's luck? Paired tests over MERT runs (nmt-significance).

MERT ends in a different optimum for every seed (on newstest here the Baseline's own runs end 1.9 BLEU apart), so
one run per system says little and a mean over runs says nothing of chance. Clark, Dyer, Lavie and Smith (2011,
"Better Hypothesis Testing for Statistical Machine Translation: Controlling for Optimizer Instability"; their
MultEval) test over all the optimiser runs of both systems at once: run ``r`` of the system is paired with run ``r``
of the baseline, the runs are joined into one corpus of ``runs × sentences`` segments, and paired approximate
randomization swaps the two systems' outputs segment by segment. That test is sacreBLEU's own
(:class:`sacrebleu.significance.PairedTest`, ``ar``: two-sided, ``p = (c + 1) / (trials + 1)`` with ``c`` the
trials whose difference exceeds the observed one, MultEval's rule; a system whose outputs are the baseline's gets
p = 1, where that strict count would give its minimum), run here on the joined runs; ``bs`` is
sacreBLEU's paired bootstrap resampling (Koehn, 2004) on the same corpus. Scores are sacreBLEU's on detokenized
text against raw references, in percent; the 95 % confidence interval is sacreBLEU's bootstrap estimate.

BLEU's brevity penalty is computed over the whole corpus, so on the joined runs a long run pays for a short one: a
system whose runs swing around the reference length scores higher joined than its runs' mean (news, a +RNN variant:
22.80 joined against 22.62 mean). With ``ar`` the same randomization is therefore also run on the statistic the
recipes' tables report, the **mean over runs of each run's corpus score** (the swaps stay segment by segment, each
run scored on its own; ``p_value_mean``). It uses sacreBLEU's per-segment statistics
(``_extract_corpus_statistics`` / ``_compute_score_from_stats``, the calls its own paired tests make) and numpy's
generator seeded with ``seed``; p is computed by the same rule.
"""
from __future__ import annotations

import json
import os
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from nmt.core import config as C
from nmt.core.errors import UsageError, refuse_overwriting_inputs
from nmt.core.io import read_lines
from nmt.translation.evaluate import read_hypotheses

METRICS = ("bleu", "chrf")
DEFAULT_TRIALS = {"ar": 10000, "bs": 1000}  # sacreBLEU's (and MultEval's, for AR)


@dataclass
class SignificanceConfig:
    ref: str = C.field("", help="raw reference file (plain or .gz)", required=True)
    system: list[str] = C.field([], required=True,
                                help="NAME=RUN1,RUN2,... ...: each system's detokenized outputs, one file per optimiser "
                                     "run (run r of every system is paired with run r of the others), all after one "
                                     "--system; the first is the baseline the others are tested against")
    test: str = C.field("ar", choices=("ar", "bs"),
                        help="ar: paired approximate randomization (Clark et al., 2011; MultEval); bs: paired "
                             "bootstrap resampling (Koehn, 2004)")
    trials: int = C.field(0, help="AR trials or bootstrap samples (0: sacreBLEU's default, 10,000 for ar and 1,000 "
                                  "for bs)")
    confidence: int = C.field(1000, help="with --test ar: bootstrap resamples for each system's 95 % confidence "
                                         "interval (0: none)")
    seed: int = C.field(12345, help="the random seed of the trials (sacreBLEU's default)")
    metrics: list[str] = C.field(list(METRICS), choices=METRICS, help="the metrics tested")
    detokenize: str = C.field("", help="LANG: the outputs are Moses-tokenized; detokenize them as LANG first")
    json: str | None = C.field(None, help="also write the results and signatures to this JSON file")


@dataclass
class SystemScore:
    """One system under one metric: its score per run, on the runs joined, and the test against the baseline."""

    system: str
    metric: str
    per_run: list[float]
    joined: float
    ci95: float | None = None  # half-width of the bootstrap 95 % interval around the joined score
    p_value: float | None = None  # the test on the runs joined (None for the baseline)
    p_value_mean: float | None = None  # with ar: the same randomization on the mean of the runs' scores

    @property
    def mean(self) -> float:
        return statistics.mean(self.per_run)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.per_run) if len(self.per_run) > 1 else 0.0


@dataclass
class SignificanceResult:
    test: str
    trials: int
    runs: int
    sentences: int
    scores: list[SystemScore] = field(default_factory=list)
    signatures: dict[str, str] = field(default_factory=dict)

    def of(self, metric: str) -> list[SystemScore]:
        return [s for s in self.scores if s.metric == metric]

    def markdown(self) -> str:
        """One table per metric: per-run mean ± sd, the joined runs' score (± its 95 % interval), Δ and p."""
        test = ("paired approximate randomization" if self.test == "ar" else "paired bootstrap resampling")
        lines: list[str] = []
        for metric, signature in self.signatures.items():
            rows = self.of(metric)
            base = rows[0]
            joined = f"{self.runs} runs joined" if self.runs > 1 else "the run"
            lines += [f"| {metric} | runs | per run: mean ± sd | Δ mean | p (mean) | {joined} | Δ joined | p |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|"]
            for row in rows:
                ci = f" ± {row.ci95:.2f}" if row.ci95 is not None else ""
                d_mean = "" if row is base else f"{row.mean - base.mean:+.2f}"
                d_joined = "" if row is base else f"{row.joined - base.joined:+.2f}"
                p_mean = "" if row.p_value_mean is None else f"{row.p_value_mean:.4f}"
                p = "" if row.p_value is None else f"{row.p_value:.4f}"
                lines.append(f"| {row.system} | {len(row.per_run)} | {row.mean:.2f} ± {row.sd:.2f} | {d_mean} | "
                             f"{p_mean} | {row.joined:.2f}{ci} | {d_joined} | {p} |")
            lines += ["", f"{metric} {signature}", ""]
        lines.append(f"p: {test} against {base.system} over the {self.runs} run(s) joined "
                     f"({self.runs} × {self.sentences} segments, {self.trials:,} trials; Clark et al., 2011); "
                     "p (mean): the same randomization on the mean of the runs' own scores; "
                     "± : bootstrap 95 % confidence interval")
        return "\n".join(lines) + "\n"


@contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """sacreBLEU's paired tests read their seed from ``SACREBLEU_SEED`` when built: set it for that moment."""
    before = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if before is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = before


def paired_test(systems: Sequence[tuple[str, Sequence[Sequence[str]]]], references: Sequence[str], *,
                test: str = "ar", trials: int = 0, confidence: int = 1000, seed: int = 12345,
                metrics: Sequence[str] = METRICS) -> SignificanceResult:
    """Test every system of ``systems`` (``(name, runs)``, ``runs[r]`` the detokenized output of optimiser run
    ``r``) against the first, on the runs joined (see the module docstring)."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    systems = [(name, [list(hyps) for hyps in system_runs]) for name, system_runs in systems]
    if test not in DEFAULT_TRIALS:
        raise UsageError(f"test must be one of {', '.join(DEFAULT_TRIALS)}, not {test!r}")
    if len(systems) < 2:
        raise UsageError("give a baseline and at least one system to test against it")
    unknown = sorted(set(metrics) - set(METRICS))
    if unknown or not metrics:
        raise UsageError(f"metrics: {', '.join(METRICS)} (got {', '.join(metrics) or 'none'})")
    runs = {len(r) for _, r in systems}
    if len(runs) != 1 or 0 in runs:
        raise UsageError("every system needs the same number of runs (run r is paired with run r): "
                         + ", ".join(f"{name} {len(r)}" for name, r in systems))
    n_runs = runs.pop()
    for name, system_runs in systems:
        for r, hyps in enumerate(system_runs, 1):
            if len(hyps) != len(references):
                raise UsageError(f"{name} run {r}: {len(hyps)} lines for {len(references)} references")
    if trials < 0 or confidence < 0:
        raise UsageError("trials and confidence must be >= 0")
    trials = trials or DEFAULT_TRIALS[test]
    joined_refs = list(references) * n_runs
    make = {"bleu": BLEU, "chrf": CHRF}
    scorers = {m: make[m](references=[joined_refs]) for m in metrics}
    joined = [(name, [h for hyps in system_runs for h in hyps]) for name, system_runs in systems]
    with _sacrebleu_seed(seed):
        paired = PairedTest(joined, scorers, references=None, test_type=test, n_samples=trials,
                            n_ar_confidence=confidence if test == "ar" and confidence > 0 else -1)
    signatures, table = paired()
    result = SignificanceResult(test, trials, n_runs, len(references),
                                signatures={name: str(sig) for name, sig in signatures.items()})
    for metric, label in zip(metrics, signatures):  # sacreBLEU's names ("BLEU", "chrF2"), in the order given
        scorer = make[metric]()
        stats = [[_segment_stats(scorer, hyps, references) for hyps in system_runs] for _, system_runs in systems]
        for (name, system_runs), runs_stats, res in zip(systems, stats, table[label]):
            per_run = [_score(scorer, x.sum(0)) for x in runs_stats]
            p_value = None if res.p_value is None else float(res.p_value)
            p_mean = None
            if p_value is not None and test == "ar":
                p_mean = _ar_mean_of_runs(scorer, stats[0], runs_stats, trials, seed)
            if p_value is not None and system_runs == systems[0][1]:
                p_value = p_mean = 1.0  # the baseline's own outputs: the strict count would give 1 / (trials + 1)
            result.scores.append(SystemScore(name, label, per_run, float(res.score),
                                             None if res.ci is None else float(res.ci), p_value, p_mean))
    return result


def _segment_stats(scorer: Any, hyps: Sequence[str], references: Sequence[str]) -> Any:
    """sacreBLEU's sufficient statistics of each segment (rows), as float64 (integer counts: sums stay exact)."""
    import numpy as np

    return np.asarray(scorer._extract_corpus_statistics(list(hyps), [list(references)]), dtype=np.float64)


def _score(scorer: Any, summed: Any) -> float:
    """The corpus score of summed segment statistics (sacreBLEU's ``corpus_score`` on those segments)."""
    return float(scorer._compute_score_from_stats([int(round(x)) for x in summed]).score)


def _ar_mean_of_runs(scorer: Any, a: Sequence[Any], b: Sequence[Any], trials: int, seed: int,
                     chunk: int = 1000) -> float:
    """Paired approximate randomization on ``|mean_r S(A_r) − mean_r S(B_r)|``, S a run's corpus score, from each
    run's segment statistics ``a[r]``, ``b[r]``: each trial swaps the two systems' outputs segment by segment (every
    run), scores each run on its own, and averages."""
    import numpy as np

    observed = abs(np.mean([_score(scorer, x.sum(0)) for x in a]) - np.mean([_score(scorer, x.sum(0)) for x in b]))
    rng = np.random.default_rng(seed)
    exceed = 0
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        total_a, total_b = np.zeros(size), np.zeros(size)
        for ra, rb in zip(a, b):
            swap = rng.integers(2, size=(size, len(ra))).astype(np.float64)
            moved = swap @ (rb - ra)  # what the swapped segments add to A's sums (and take from B's)
            sum_a, sum_b = ra.sum(0) + moved, rb.sum(0) - moved
            total_a += [_score(scorer, x) for x in sum_a]
            total_b += [_score(scorer, x) for x in sum_b]
        exceed += int(np.count_nonzero(np.abs(total_a - total_b) / len(a) > observed))
    return (exceed + 1) / (trials + 1)


def _parse_system(item: str) -> tuple[str, list[str]]:
    name, sep, files = item.partition("=")
    paths = [f for f in files.split(",") if f]
    if not sep or not name or not paths:
        raise UsageError(f"--system {item!r}: expected NAME=RUN1[,RUN2,...]")
    return name, paths


def significance_files(cfg: SignificanceConfig) -> SignificanceResult:
    """nmt-significance's run: the tables on stdout and ``cfg.json`` if given."""
    systems = [_parse_system(item) for item in cfg.system]
    names = [name for name, _ in systems]
    if len(systems) < 2:
        raise UsageError("--system: give a baseline and at least one system to test against it")
    if len(set(names)) != len(names):
        raise UsageError(f"--system: a name given twice ({', '.join(names)})")
    if len({len(paths) for _, paths in systems}) != 1:
        raise UsageError("--system: every system needs the same number of runs (run r is paired with run r): "
                         + ", ".join(f"{name} {len(paths)}" for name, paths in systems))
    inputs = {"--ref": cfg.ref} | {f"--system {name} run {r}": path
                                    for name, paths in systems for r, path in enumerate(paths, 1)}
    refuse_overwriting_inputs(outputs={"--json": cfg.json}, inputs=inputs)
    refs = read_lines(cfg.ref)
    outputs = [(name, [read_hypotheses(path, cfg.ref, len(refs), cfg.detokenize) for path in paths])
               for name, paths in systems]
    result = paired_test(outputs, refs, test=cfg.test, trials=cfg.trials, confidence=cfg.confidence,
                         seed=cfg.seed, metrics=cfg.metrics)
    print(result.markdown(), end="")
    if cfg.json:
        from nmt.core.io import atomic_write

        with atomic_write(cfg.json) as fh:
            json.dump(asdict(result), fh, indent=1)
    return result
