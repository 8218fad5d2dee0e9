"""nmt-significance: paired tests over optimiser runs joined (Clark et al., 2011), with sacreBLEU."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu

from nmt.cli.significance import cli_main
from nmt.core.errors import UsageError
from nmt.translation.significance import paired_test

REFS = [f"the {w} cat sat on the mat number {i} today ." for i, w in enumerate(
    ["black", "white", "grey", "small", "big", "old", "young", "fat", "thin", "red"] * 4)]


def _damaged(refs: list[str], every: int, offset: int = 0) -> list[str]:
    """The references with the last three words of every ``every``-th line (from ``offset``) replaced."""
    return [" ".join(r.split()[:-3] + ["a", "dog", "ran"]) if (i + offset) % every == 0 else r
            for i, r in enumerate(refs)]


def test_a_system_equal_to_the_baseline_is_not_significant() -> None:
    runs = [_damaged(REFS, 2), _damaged(REFS, 3)]
    result = paired_test([("Baseline", runs), ("same", runs)], REFS, trials=200, confidence=0)
    base, same = result.of("BLEU")
    assert same.joined == base.joined and same.p_value == 1.0 and same.p_value_mean == 1.0
    assert base.p_value is None and base.ci95 is None


def test_a_clearly_better_system_is_significant_and_seeded() -> None:
    baseline = [_damaged(REFS, 1), _damaged(REFS, 1, 1)]
    better = [_damaged(REFS, 4), _damaged(REFS, 5)]
    result = paired_test([("Baseline", baseline), ("better", better)], REFS, trials=200, confidence=50, seed=7)
    for metric in ("BLEU", "chrF2"):
        base, sys_ = result.of(metric)
        assert sys_.joined > base.joined
        assert sys_.p_value == pytest.approx(1 / 201)  # no trial reaches the observed difference
        assert sys_.p_value_mean == pytest.approx(1 / 201)  # nor on the mean of the runs' scores
        assert sys_.ci95 is not None and sys_.ci95 > 0
    # the per-run scores are sacreBLEU's corpus scores of each run, as nmt-evaluate reports them
    expected = [sacrebleu.corpus_bleu(run, [REFS]).score for run in better]
    assert result.of("BLEU")[1].per_run == pytest.approx(expected)
    assert result.of("BLEU")[1].mean == pytest.approx(sum(expected) / 2)
    again = paired_test([("Baseline", baseline), ("better", better)], REFS, trials=200, confidence=50, seed=7)
    assert [s.ci95 for s in again.scores] == [s.ci95 for s in result.scores]
    assert "seed:7" in result.signatures["BLEU"] and "ar:200" in result.signatures["BLEU"]


def test_a_small_difference_is_not_significant() -> None:
    baseline = [_damaged(REFS, 3), _damaged(REFS, 3, 1)]
    close = [_damaged(REFS, 3, 2), _damaged(REFS, 3, 1)]  # as bad, on other lines
    result = paired_test([("Baseline", baseline), ("close", close)], REFS, trials=200, metrics=["bleu"])
    assert result.of("BLEU")[1].p_value > 0.2


def test_the_mean_of_runs_is_tested_apart_from_the_joined_runs() -> None:
    """A system with one short and one long run against one that is always long: joined, the long run pays the
    short run's brevity penalty and the system looks far better; the mean of the runs' own scores says it is a
    little worse, and its test does not call that significant."""
    short = [" ".join(r.split()[:-4]) for r in REFS]  # brevity penalty
    long_ = [r + " and then it ate the fish" for r in REFS]  # too long: lower precision, no penalty
    result = paired_test([("Baseline", [long_, long_]), ("swinging", [short, long_])], REFS, trials=300,
                         confidence=0, metrics=["bleu"])
    base, swinging = result.of("BLEU")
    assert swinging.joined - base.joined > 5 and swinging.mean - base.mean < 0
    assert swinging.p_value == pytest.approx(1 / 301) and swinging.p_value_mean > 0.1
    assert "| Δ mean | p (mean) |" in result.markdown()


def test_bootstrap_and_the_refusals() -> None:
    runs = [_damaged(REFS, 2)]
    result = paired_test([("Baseline", runs), ("better", [REFS])], REFS, test="bs", trials=100, metrics=["bleu"])
    assert result.test == "bs" and result.trials == 100 and result.of("BLEU")[1].p_value < 0.05
    assert result.of("BLEU")[1].p_value_mean is None  # the mean-of-runs statistic goes with ar only
    with pytest.raises(UsageError, match="same number of runs"):
        paired_test([("Baseline", runs), ("two", runs * 2)], REFS)
    with pytest.raises(UsageError, match="lines for"):
        paired_test([("Baseline", runs), ("short", [REFS[:-1]])], REFS)
    with pytest.raises(UsageError, match="metrics"):
        paired_test([("Baseline", runs), ("x", runs)], REFS, metrics=["ter"])


def test_cli_tables_and_json(tmp_path: Path, capsys) -> None:
    ref = tmp_path / "ref.fr"
    ref.write_text("".join(r + "\n" for r in REFS), encoding="utf-8")
    files = {}
    for name, run in {"b1": _damaged(REFS, 1), "b2": _damaged(REFS, 2), "s1": _damaged(REFS, 4),
                      "s2": _damaged(REFS, 6)}.items():
        files[name] = tmp_path / f"{name}.fr"
        files[name].write_text("".join(h + "\n" for h in run), encoding="utf-8")
    out = tmp_path / "sig.json"
    assert cli_main(["--ref", str(ref), "--system", f"Baseline={files['b1']},{files['b2']}",
                     f"+X={files['s1']},{files['s2']}", "--trials", "100", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| BLEU | runs |" in printed and "| chrF2 | runs |" in printed and "| +X | 2 |" in printed
    assert "ar:100" in printed and "2 × 40 segments" in printed
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["runs"] == 2 and saved["sentences"] == 40 and len(saved["scores"]) == 4
    assert saved["scores"][1]["p_value"] == pytest.approx(1 / 101)
