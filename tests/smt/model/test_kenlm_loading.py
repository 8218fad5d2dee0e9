"""How the decoder brings KenLM in: load methods (lazy / populate / read, ``--lm-load``, ``lazyken=``) and the
per-word bounds sidecar ``X.ubounds`` (smt_features.train.kenlm_bounds) — same scores and translations every
way; lazily mapped models are not read at start.

Tests that build a binary model skip when KenLM's tools are not built (``bash third_party/build_kenlm.sh``).
"""
from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

kenlm = pytest.importorskip("kenlm")

from nmt.core.io import DataError  # noqa: E402
from smt_features.cli.decode import cli_main as decode_main  # noqa: E402
from smt_features.cli.kenlm import cli_main as kenlm_main  # noqa: E402
from smt_features.model.kenlm import LOAD_METHODS, KenLMScorer  # noqa: E402
from smt_features.model.kenlm_feature import KenLMFeature  # noqa: E402
from smt_features.model.moses_ini_build import default_config  # noqa: E402
from smt_features.train.kenlm_bounds import arpa_upper_bounds, bounds_path, read_bounds, write_bounds  # noqa: E402
from smt_features.train.kenlm_build import KenLMNotFoundError, build_binary, estimate_arpa, find_kenlm_binary  # noqa: E402
from tests import TEST_DATA

DECODER = TEST_DATA / "decoder"
TINY = TEST_DATA / "kenlm" / "tiny.txt"


def _tools_missing() -> bool:
    try:
        find_kenlm_binary("lmplz")
        find_kenlm_binary("build_binary")
    except KenLMNotFoundError:
        return True
    return False


needs_tools = pytest.mark.skipif(_tools_missing(), reason="KenLM tools not built: run `bash third_party/build_kenlm.sh`")


def test_bounds_sidecar_reads_back_exactly_and_goes_stale(tmp_path):
    arpa = tmp_path / "toy.arpa"
    shutil.copy(DECODER / "toy.arpa", arpa)
    side = write_bounds(arpa)
    assert side == tmp_path / "toy.ubounds" == bounds_path(tmp_path / "toy.binary") == bounds_path(arpa)
    assert read_bounds(side, arpa) == arpa_upper_bounds(arpa)  # exactly: the same floats
    # an ARPA file changed since: stale; gone: the sidecar serves alone
    st = arpa.stat()
    os.utime(arpa, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert read_bounds(side, arpa) is None
    arpa.unlink()
    assert read_bounds(side, arpa) == arpa_upper_bounds(DECODER / "toy.arpa")
    assert read_bounds(tmp_path / "none.ubounds") is None
    other = tmp_path / "other.ubounds"
    other.write_text("word\t-1.0\n", encoding="utf-8")
    assert read_bounds(other) is None  # no header: not ours
    lines = side.read_text(encoding="utf-8").splitlines()
    (tmp_path / "bad.ubounds").write_text(lines[0] + "\nno-tab-here\n", encoding="utf-8")
    with pytest.raises(DataError, match="bad.ubounds:2"):
        read_bounds(tmp_path / "bad.ubounds")


def test_decoder_takes_its_bounds_from_the_sidecar(tmp_path):
    arpa = tmp_path / "toy.arpa"
    shutil.copy(DECODER / "toy.arpa", arpa)
    from_arpa = KenLMFeature(KenLMScorer(arpa), name="LM0")
    assert from_arpa.load_upper_bounds()
    write_bounds(arpa)
    arpa.unlink()  # only the sidecar is left
    lm = KenLMFeature(KenLMScorer(DECODER / "toy.arpa"), name="LM0", path=str(tmp_path / "toy.arpa"))
    assert lm.load_upper_bounds() and lm._upper == from_arpa._upper


def test_smt_kenlm_bounds_command(tmp_path, capsys):
    out = tmp_path / "b.ubounds"
    assert kenlm_main(["bounds", "--arpa", str(DECODER / "toy.arpa"), "--out", str(out)]) == 0
    assert read_bounds(out) == arpa_upper_bounds(DECODER / "toy.arpa")
    assert kenlm_main(["bounds", "--arpa", str(tmp_path / "missing.arpa")]) == 2
    assert "no such ARPA file" in capsys.readouterr().err


def _decode(tmp_path: Path, name: str, ini: Path, *flags: str) -> tuple[str, str]:
    src = tmp_path / "in.txt"
    src.write_text("a b\nb c a b\n\na q b\n", encoding="utf-8")
    out, nbest = tmp_path / f"{name}.out", tmp_path / f"{name}.nbest"
    assert decode_main(["-f", str(ini), "--input", str(src), "--output", str(out), "--n-best-list", str(nbest), "5",
                        "--progress", "false", *flags]) == 0
    return out.read_text(encoding="utf-8"), nbest.read_text(encoding="utf-8")


@needs_tools
def test_every_load_method_scores_and_decodes_alike(tmp_path, capsys):
    arpa = estimate_arpa(TINY, tmp_path / "tiny3.arpa", order=3, memory="64M", discount_fallback=True,
                         temp_dir=tmp_path / "tmp")
    binary = build_binary(arpa, tmp_path / "tiny3.binary")
    scorers = {m: KenLMScorer(binary, load=m) for m in LOAD_METHODS}
    for line in TINY.read_text(encoding="utf-8").splitlines() + ["the zebra", ""]:
        scores = {m: s.score_sentence(line.split()) for m, s in scorers.items()}
        assert len(set(scores.values())) == 1, scores
    with pytest.raises(ValueError, match="load method"):
        KenLMScorer(binary, load="eager")
    # the decoder: the same translations with each method, through --lm-load and the KENLM line's lazyken=
    ini = tmp_path / "moses.ini"
    default_config(str(DECODER / "toy.phrase-table"), str(binary), lm_order=3).write(ini)
    runs = {m: _decode(tmp_path, m, ini, "--lm-load", m) for m in LOAD_METHODS}
    runs["search-python"] = _decode(tmp_path, "py", ini, "--lm-load", "populate", "--search", "python")
    assert all(r == runs["lazy"] for r in runs.values())
    text = ini.read_text(encoding="utf-8")
    lazyken = tmp_path / "lazyken.ini"
    lazyken.write_text(text.replace("order=3", "order=3 lazyken=0"), encoding="utf-8")
    assert _decode(tmp_path, "lazyken", lazyken) == runs["lazy"]
    bad = tmp_path / "bad.ini"
    bad.write_text(text.replace("order=3", "order=3 lazyken=maybe"), encoding="utf-8")
    capsys.readouterr()
    assert decode_main(["-f", str(bad), "--input", str(tmp_path / "in.txt"), "--progress", "false"]) == 2
    assert f"{bad}:" in capsys.readouterr().err
    assert decode_main(["-f", str(ini), "--input", str(tmp_path / "in.txt"), "--lm-load", "eager"]) == 2


def _mapped_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    target = str(path.resolve())
    with open("/proc/self/smaps", encoding="utf-8") as fh:
        for line in fh:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
                inside = line.rstrip("\n").endswith(target)
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


@needs_tools
@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc/self/smaps")
def test_a_lazily_loaded_model_is_not_read_at_start(tmp_path):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(4000)]
    text = tmp_path / "text.txt"
    text.write_text("\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(5, 15)))
                              for _ in range(30000)) + "\n", encoding="utf-8")
    arpa = estimate_arpa(text, tmp_path / "r.arpa", order=4, memory="64M", discount_fallback=True,
                         temp_dir=tmp_path / "tmp")
    binary = build_binary(arpa, tmp_path / "r.binary")
    size_kib = binary.stat().st_size // 1024
    assert size_kib > 4096  # a model of several MB
    lazy = KenLMScorer(binary, load="lazy")
    lazy.score_sentence(["w1", "w2", "w3"])
    resident_lazy = _mapped_kib(binary)
    populated = KenLMScorer(binary, load="populate")
    resident_both = _mapped_kib(binary)
    assert resident_lazy < 0.25 * size_kib
    assert resident_both - resident_lazy > 0.9 * size_kib  # MAP_POPULATE: the whole file at start
    assert lazy.score_sentence(["w1", "w2"]) == populated.score_sentence(["w1", "w2"])


@needs_tools
def test_smt_kenlm_train_writes_the_bounds_sidecar(tmp_path):
    prefix = tmp_path / "lm" / "tiny3"
    assert kenlm_main(["train", "--text", str(TINY), "--out-prefix", str(prefix), "--order", "3", "--memory", "64M",
                       "--discount-fallback", "--temp-dir", str(tmp_path / "tmp")]) == 0
    arpa = prefix.with_suffix(".arpa")
    assert read_bounds(prefix.with_suffix(".ubounds"), arpa) == arpa_upper_bounds(arpa)
