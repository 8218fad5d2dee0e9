"""The smt-tune loop against a fake decoder: convergence, the tuned moses.ini, weights modes, resume."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from smt_features.cli import tune as cli_tune
from smt_features.tune import loop as tune_loop

FAKE_DECODER = r'''
"""A fake decoder: a fixed pool of candidates per input line; n-best by the given weights."""
import argparse, random, sys, zlib
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("--moses-ini"); p.add_argument("--input"); p.add_argument("--output")
p.add_argument("--n-best-list", nargs=2); p.add_argument("--threads")
p.add_argument("--weights-override", default=None)
p.add_argument("--fail-after", type=int, default=None); p.add_argument("--counter", default=None)
a = p.parse_args()
if a.fail_after is not None:
    c = Path(a.counter); n = int(c.read_text()) + 1 if c.exists() else 1
    c.write_text(str(n))
    if n > a.fail_after:
        print("fake decoder: failing on purpose", file=sys.stderr); sys.exit(3)

def parse_weights(tokens, out):
    name = None
    for t in tokens:
        if t.endswith("="):
            name = t[:-1]; out[name] = []
        else:
            out[name].append(float(t))

weights, section = {}, None
for line in open(a.moses_ini, encoding="utf-8"):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    if line.startswith("["):
        section = line[1:-1]; continue
    if section == "weight":
        parse_weights(line.split(), weights)
if a.weights_override:
    parse_weights(a.weights_override.split(), weights)

VOCAB = ["t%d" % i for i in range(10)]
ORDER = ["Distortion0", "LM0", "WordPenalty0", "TranslationModel0"]
nbest_file, n = a.n_best_list[0], int(a.n_best_list[1])
with open(a.input, encoding="utf-8") as fin, open(a.output, "w") as fout, open(nbest_file, "w") as fnb:
    for sid, line in enumerate(fin):
        ref = ["t" + w[1:] for w in line.split()]
        rng = random.Random(zlib.crc32(line.encode()))
        cands = []
        for k in range(16):
            errors = 0 if k == 0 else rng.randint(1, 4)
            hyp = list(ref)
            for _ in range(errors):
                op = rng.randrange(3)
                if op == 0 and len(hyp) > 1:
                    del hyp[rng.randrange(len(hyp))]
                elif op == 1:
                    hyp[rng.randrange(len(hyp))] = rng.choice(VOCAB)
                else:
                    i = rng.randrange(len(hyp)); hyp.insert(i, hyp[i])
            feats = {"Distortion0": [-float(rng.randint(0, 3))],
                     "LM0": [round(-0.4 * len(hyp) - rng.random(), 4)],
                     "WordPenalty0": [-float(len(hyp))],
                     "TranslationModel0": [round(-errors + 0.6 * rng.random(), 4),
                                           round(-0.5 * errors * rng.random() - rng.random(), 4)]}
            score = sum(w * v for name in ORDER for w, v in zip(weights[name], feats[name]))
            cands.append((score, k, hyp, feats))
        cands.sort(key=lambda c: (-c[0], c[1]))
        fout.write(" ".join(cands[0][2]) + "\n")
        for score, k, hyp, feats in cands[:n]:
            ftxt = " ".join(name + "= " + " ".join("%g" % v for v in feats[name]) for name in ORDER)
            fnb.write("%d ||| %s  ||| %s ||| %g\n" % (sid, " ".join(hyp), ftxt, score))
'''

MOSES_INI = """[input-factors]
0

[distortion-limit]
6

[feature]
UnknownWordPenalty
WordPenalty
PhraseDictionaryMemory name=TranslationModel0 num-features=2 path=phrase-table.gz input-factor=0 output-factor=0
Distortion
KENLM name=LM0 factor=0 path=lm.arpa order=3

[weight]
UnknownWordPenalty0= 1
WordPenalty0= 1
TranslationModel0= 0.05 0.05
Distortion0= 0.3
LM0= 0.5
"""


@pytest.fixture
def tune_setup(tmp_path):
    rng = random.Random(0)
    src, ref = [], []
    for _ in range(15):
        words = [f"s{rng.randrange(10)}" for _ in range(rng.randint(4, 9))]
        src.append(" ".join(words))
        ref.append(" ".join("t" + w[1:] for w in words))
    (tmp_path / "dev.src").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp_path / "dev.ref").write_text("\n".join(ref) + "\n", encoding="utf-8")
    (tmp_path / "moses.ini").write_text(MOSES_INI, encoding="utf-8")
    (tmp_path / "fake_decoder.py").write_text(FAKE_DECODER, encoding="utf-8")
    return tmp_path


def _tune_args(root: Path, work: str, *extra: str, decoder_extra: str = "") -> list[str]:
    cmd = f"{sys.executable} {root / 'fake_decoder.py'} {decoder_extra}".strip()
    return ["--moses-ini", str(root / "moses.ini"), "--dev-src", str(root / "dev.src"), "--dev-ref",
            str(root / "dev.ref"), "--work-dir", str(root / work), "--nbest", "3", "--max-iterations", "8",
            "--restarts", "3", "--seed", "7", "--decoder-cmd", cmd, *extra]


def test_tune_loop_converges_and_writes_tuned_ini(tune_setup, capsys):
    from smt_features.model.moses_ini import read_moses_ini

    root = tune_setup
    assert cli_tune.cli_main(_tune_args(root, "work")) == 0
    work = root / "work"
    state = json.loads((work / "iterations.json").read_text())
    final = state["final"]
    dev = final["dev_bleu"]
    assert len(dev) >= 2 and final["stop_reason"] in ("no-new-hypotheses", "weights-converged", "max-iterations")
    assert max(dev) > dev[0] + 20  # tuning moves the 1-best towards the references
    assert max(dev) > 80
    tuned = read_moses_ini(work / "moses.tuned.ini")
    assert tuned.weights["UnknownWordPenalty0"] == [1.0]  # not in the n-best lists: kept
    assert tuned.weights != read_moses_ini(root / "moses.ini").weights
    tuned_vec = [v for name in ("Distortion0", "LM0", "WordPenalty0", "TranslationModel0")
                 for v in tuned.weights[name]]
    assert sum(abs(v) for v in tuned_vec) == pytest.approx(1.0)
    assert tuned.features[2].args["path"] == "phrase-table.gz"  # the tuned ini keeps the original paths
    log_text = (work / "mert.log").read_text()
    assert "iteration 1: dev BLEU" in log_text and "MERT BLEU" in log_text
    for rec in state["iterations"]:
        assert (work / rec["decode"]["nbest"]).exists()
    # decoding with the tuned weights gives the BLEU MERT predicted for the last optimised weights
    if final["stop_reason"] == "no-new-hypotheses":
        assert dev[-1] == pytest.approx(state["iterations"][-2]["mert"]["bleu"], abs=1e-6)
    # a second run into the same folder needs --resume
    assert cli_tune.cli_main(_tune_args(root, "work")) == 2  # a refusal: bad usage
    assert "--resume" in capsys.readouterr().err


def test_tune_weights_override_mode(tune_setup):
    root = tune_setup
    args = _tune_args(root, "work_ov", "--weights-mode", "override", "--max-iterations", "2")
    assert cli_tune.cli_main(args) == 0
    state = json.loads((root / "work_ov" / "iterations.json").read_text())
    assert len(state["iterations"]) == 2
    ref = _tune_args(root, "work_ini", "--max-iterations", "2")
    assert cli_tune.cli_main(ref) == 0
    state_ini = json.loads((root / "work_ini" / "iterations.json").read_text())
    assert state["final"]["weights"] == state_ini["final"]["weights"]


def test_tune_resume_after_decoder_crash_and_mert_interrupt(tune_setup, monkeypatch):
    root = tune_setup
    assert cli_tune.cli_main(_tune_args(root, "full")) == 0
    full = json.loads((root / "full" / "iterations.json").read_text())["final"]

    # 1. the decoder dies on its third call: two iterations are complete
    counter = root / "calls"
    crash = f"--fail-after 2 --counter {counter}"
    assert cli_tune.cli_main(_tune_args(root, "crash", decoder_extra=crash)) == 1
    state = json.loads((root / "crash" / "iterations.json").read_text())
    assert len(state["iterations"]) == 3 and "decode" not in state["iterations"][2]
    assert not any(p.name.startswith("run3.best") and not p.name.endswith(".tmp")
                   for p in (root / "crash").iterdir())
    assert cli_tune.cli_main(_tune_args(root, "crash", "--resume")) == 0
    resumed = json.loads((root / "crash" / "iterations.json").read_text())["final"]
    assert resumed["weights"] == full["weights"] and resumed["dev_bleu"] == full["dev_bleu"]

    # 2. killed during the second MERT run (after its decode): MERT is redone, decodes are not
    real_mert = tune_loop.mert
    calls = {"n": 0}

    def flaky_mert(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real_mert(*args, **kwargs)

    monkeypatch.setattr(tune_loop, "mert", flaky_mert)
    assert cli_tune.cli_main(_tune_args(root, "kill")) == 130
    monkeypatch.setattr(tune_loop, "mert", real_mert)
    state = json.loads((root / "kill" / "iterations.json").read_text())
    assert "decode" in state["iterations"][1] and "mert" not in state["iterations"][1]
    decodes_before = sorted(p.name for p in (root / "kill").glob("run*.best3.out"))
    assert cli_tune.cli_main(_tune_args(root, "kill", "--resume")) == 0
    resumed = json.loads((root / "kill" / "iterations.json").read_text())
    assert resumed["final"]["weights"] == full["weights"]
    assert "resumed), not decoding again" in (root / "kill" / "mert.log").read_text()
    assert decodes_before == ["run1.best3.out", "run2.best3.out"]


def test_tune_stops_when_no_new_hypotheses(tune_setup):
    root = tune_setup
    assert cli_tune.cli_main(_tune_args(root, "nonew", "--min-weight-change", "-1")) == 0
    state = json.loads((root / "nonew" / "iterations.json").read_text())
    final = state["final"]
    assert final["stop_reason"] == "no-new-hypotheses"
    its = state["iterations"]
    assert its[-1]["decode"]["new"] == 0 and "mert" not in its[-1]
    # the last decode used the previous MERT weights; its 1-best BLEU is what MERT predicted on the pool
    assert final["dev_bleu"][-1] == pytest.approx(its[-2]["mert"]["bleu"], abs=1e-6)
    assert final["weights"] == its[-1]["weights"] == its[-2]["mert"]["weights"]
