"""recipes/lib/evaluate_sets.py (common.sh evaluate_outputs): several sets scored in one process give what one
nmt-evaluate call per set gives: the printed lines, the detokenized files and the JSON scores; a bad set stops
the run with nmt-evaluate's own message."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import ROOT

SCRIPT = ROOT / "recipes" / "lib" / "evaluate_sets.py"
NMT_EVALUATE = Path(sys.executable).parent / "nmt-evaluate"
HYPS = {"a": ["un chat noir .", "le chien dort &apos; ici ."], "b": ["une maison rouge ,", "il pleut ."]}
REFS = {"a": ["Un chat noir.", "Le chien dort ici."], "b": ["Une maison rouge.", "Il pleut."]}


def _sets(folder: Path) -> list[tuple[str, str, str, str, str]]:
    folder.mkdir()
    sets = []
    for name in HYPS:
        (folder / f"{name}.tok.fr").write_text("".join(f"{h}\n" for h in HYPS[name]), encoding="utf-8")
        (folder / f"{name}.ref.fr").write_text("".join(f"{r}\n" for r in REFS[name]), encoding="utf-8")
        sets.append((str(folder / f"{name}.tok.fr"), str(folder / f"{name}.fr"), str(folder / f"{name}.ref.fr"),
                     f"run 1 {name}", str(folder / f"{name}.scores.json")))
    return sets


def test_one_process_equals_one_nmt_evaluate_per_set(tmp_path: Path) -> None:
    batched = _sets(tmp_path / "batched")
    out = subprocess.run([sys.executable, str(SCRIPT), "--detruecase", *[x for s in batched for x in s]],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    single = _sets(tmp_path / "single")
    lines = []
    for hyp, det, ref, name, json_out in single:
        one = subprocess.run([str(NMT_EVALUATE), "--hyp", hyp, "--detruecase", "--detokenize", "fr", "--detok-out",
                              det, "--ref", ref, "--name", name, "--json", json_out],
                             capture_output=True, text=True, cwd=ROOT)
        assert one.returncode == 0, one.stderr
        lines.append(one.stdout)
    assert out.stdout == "".join(lines) and out.stdout.count("BLEU = ") == 2
    for b, s in zip(batched, single):
        for i in (1, 4):  # the detokenized hypotheses and the JSON scores
            assert Path(b[i]).read_bytes() == Path(s[i]).read_bytes()
    assert Path(batched[0][1]).read_text(encoding="utf-8").splitlines()[0] == "Un chat noir."


def test_a_bad_set_stops_with_nmt_evaluates_message(tmp_path: Path) -> None:
    sets = _sets(tmp_path / "sets")
    Path(sets[0][2]).write_text("Un chat noir.\n", encoding="utf-8")  # one reference for two hypotheses
    out = subprocess.run([sys.executable, str(SCRIPT), *[x for s in sets for x in s]],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"nmt-evaluate: {sets[0][2]}:2: 2 hypotheses in {sets[0][0]} but 1 references")
    assert not Path(sets[0][4]).exists() and not Path(sets[1][4]).exists()  # the run stopped at the first set
    wrong = subprocess.run([sys.executable, str(SCRIPT), *sets[0][:4]], capture_output=True, text=True, cwd=ROOT)
    assert wrong.returncode == 2 and wrong.stderr.startswith("evaluate_sets.py: expected")
