"""moses.ini and Moses n-best formats: round trips and errors that name file and line."""
from __future__ import annotations

import pytest

from smt_features.model.moses_ini import (
    MosesIniError, apply_weight_overrides, parse_moses_ini, parse_weight_string, read_moses_ini,
)
from smt_features.model.moses_ini_build import default_config
from nmt.core.formats.nbest import (
    NBestEntry, NBestError, format_nbest_line, iter_nbest, parse_nbest_line, read_nbest, write_nbest,
)

TRAIN_MODEL_INI = """#########################
### MOSES CONFIG FILE ###
#########################

# input factors
[input-factors]
0

# mapping steps
[mapping]
0 T 0

[distortion-limit]
6

# feature functions
[feature]
UnknownWordPenalty
WordPenalty
PhrasePenalty
PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=/m/phrase-table.gz input-factor=0 output-factor=0 table-limit=20
Distortion
KENLM name=LM0 factor=0 path=/m/lm.binary order=5

# dense weights for feature functions
[weight]
# The default weights are NOT optimized for translation quality. You MUST tune the weights.
UnknownWordPenalty0= 1
WordPenalty0= -1
PhrasePenalty0= 0.2
TranslationModel0= 0.2 0.2 0.2 0.2
Distortion0= 0.3
LM0= 0.5
"""


# ----------------------------------------------------------------------------- moses.ini

def test_parse_train_model_ini():
    cfg = parse_moses_ini(TRAIN_MODEL_INI, "moses.ini")
    assert [f.name for f in cfg.features] == ["UnknownWordPenalty0", "WordPenalty0", "PhrasePenalty0",
                                              "TranslationModel0", "Distortion0", "LM0"]
    tm = cfg.feature("TranslationModel0")
    assert tm.type == "PhraseDictionaryMemory"
    assert tm.get("num-features") == "4" and tm.get("table-limit") == "20"
    assert cfg.weights["TranslationModel0"] == [0.2] * 4
    assert cfg.weights["WordPenalty0"] == [-1.0]
    assert cfg.int_option("distortion-limit", 0) == 6
    assert cfg.sections["mapping"] == ["0 T 0"]


def test_round_trip(tmp_path):
    cfg = parse_moses_ini(TRAIN_MODEL_INI, "moses.ini")
    cfg.set_option("stack", 100)
    cfg.weights["LM0"] = [0.123456789]
    path = tmp_path / "moses.ini"
    cfg.write(path)
    again = read_moses_ini(path)
    assert [(f.type, f.args) for f in again.features] == [(f.type, f.args) for f in cfg.features]
    assert again.weights == cfg.weights
    assert again.sections == cfg.sections
    assert again.to_text() == cfg.to_text()
    assert again.int_option("stack", 200) == 100


def test_default_config_matches_train_model():
    cfg = default_config("/m/phrase-table.gz", "/m/lm.binary")
    ref = parse_moses_ini(TRAIN_MODEL_INI)
    assert [(f.type, f.args) for f in cfg.features] == [(f.type, f.args) for f in ref.features]
    assert cfg.weights == ref.weights


def test_weight_overrides():
    cfg = parse_moses_ini(TRAIN_MODEL_INI)
    apply_weight_overrides(cfg, parse_weight_string("LM0= 0.7 TranslationModel0= 0.1 0.2 0.3 0.4"))
    assert cfg.weights["LM0"] == [0.7]
    assert cfg.weights["TranslationModel0"] == [0.1, 0.2, 0.3, 0.4]
    with pytest.raises(MosesIniError, match="needs 4 weight"):
        apply_weight_overrides(cfg, {"TranslationModel0": [1.0]})
    with pytest.raises(MosesIniError, match="no such feature"):
        apply_weight_overrides(cfg, {"LM9": [1.0]})


@pytest.mark.parametrize("bad,line,message", [
    ("[weight]\nLM0= 0.5\n", 2, "no \\[feature\\] line defines it"),
    ("[feature]\nKENLM name=LM0 path=x order=5\n[weight]\nLM0= 0.5 0.1\n", 4, "1 value"),
    ("[feature]\nKENLM name=LM0 path=x\n[weight]\nLM0= abc\n", 4, "not a number"),
    ("[feature]\nKENLM name=LM0 path=x\n[weight]\nLM0=0.5\n", 4, "space after"),
    ("[feature]\nKENLM name=LM0 path\n", 2, "key=value"),
    ("[feature]\nPhraseDictionaryMemory name=TM path=x\n", 2, "num-features"),
    ("[feature]\nDistortion\nDistortion name=Distortion0\n", 3, "two features"),
    ("stray text\n", 1, "outside any"),
    ("[feature\n", 1, "section header"),
    ("[stack]\nlots\n", 1, "integer"),
    ("[feature]\nKENLM name=LM0 path=x\n[weight]\nLM0= 0.5\nLM0= 0.5\n", 5, "twice"),
])
def test_ini_errors_name_file_and_line(bad, line, message):
    with pytest.raises(MosesIniError, match=message) as err:
        parse_moses_ini(bad, "sys/moses.ini")
    assert str(err.value).startswith(f"sys/moses.ini:{line}:")


# ----------------------------------------------------------------------------- n-best

def test_nbest_line_format_is_moses():
    feats = [("Distortion0", [0.0]), ("LM0", [-21.873412]), ("WordPenalty0", [-6.0]),
             ("PhrasePenalty0", [3.0]), ("TranslationModel0", [-2.1, -3.4, -1.9, -2.8])]
    line = format_nbest_line(0, ["un", "homme", "."], feats, -4.58761234)
    assert line == ("0 ||| un homme .  ||| Distortion0= 0 LM0= -21.8734 WordPenalty0= -6 PhrasePenalty0= 3 "
                    "TranslationModel0= -2.1 -3.4 -1.9 -2.8 ||| -4.58761")
    e = parse_nbest_line(line, "f", 1)
    assert e.sent_id == 0 and e.tokens == ["un", "homme", "."]
    assert e.feature_dict()["TranslationModel0"] == [-2.1, -3.4, -1.9, -2.8]
    assert e.value_names()[:2] == ["Distortion0", "LM0"]
    assert e.value_names()[-4:] == [f"TranslationModel0_{i}" for i in range(4)]
    assert e.total == pytest.approx(-4.58761)


def test_nbest_round_trip(tmp_path):
    entries = [NBestEntry(i // 2, f"w{i} x".split(), [("LM0", [-1.5 * i]), ("TranslationModel0", [-0.25, -0.5])],
                          -0.25 * i) for i in range(6)]
    entries.append(NBestEntry(3, [], [("LM0", [-2.0]), ("TranslationModel0", [-1.0, -1.0])], -3.0))
    path = tmp_path / "nbest.txt"
    with open(path, "w", encoding="utf-8") as fh:
        assert write_nbest(fh, entries) == 7
    back = list(iter_nbest(path))
    assert [(e.sent_id, e.tokens, e.features, e.total) for e in back] == \
        [(e.sent_id, e.tokens, e.features, e.total) for e in entries]
    grouped = read_nbest(path)
    assert list(grouped) == [0, 1, 2, 3] and len(grouped[0]) == 2 and len(grouped[3]) == 1
    # extra fields (segmentation / alignment) are kept
    e = parse_nbest_line("2 ||| a b  ||| LM0= -1 ||| -0.5 ||| 0-0 1-1", "f", 1)
    assert e.extra == ["0-0 1-1"]
    # a label is any token ending in '=' (Moses's names have no spaces)
    e = parse_nbest_line("0 ||| a  ||| a=b= 1 2 LM0= -1e-3 ||| -1", "f", 1)
    assert e.features == [("a=b", [1.0, 2.0]), ("LM0", [-0.001])]


@pytest.mark.parametrize("text,line,message", [
    ("0 ||| a ||| LM0= -1\n", 1, "at least 4"),
    ("x ||| a ||| LM0= -1 ||| -1\n", 1, "sentence id"),
    ("0 ||| a ||| -1 LM0= -1 ||| -1\n", 1, "before any"),
    ("0 ||| a ||| LM0= abc ||| -1\n", 1, "not a number"),
    ("0 ||| a ||| LM0= ||| -1\n", 1, "no values"),
    ("0 ||| a ||| LM0= -1 ||| total\n", 1, "total score"),
    ("0 ||| a ||| LM0= -1 LM0= -2 ||| -1\n", 1, "twice"),
    ("0 ||| a ||| LM0= -1 = -2 ||| -1\n", 1, "'=' is not a number"),  # a lone '=' is no label
    ("0 ||| a ||| LM0= -1 ||| -1\n\n", 2, "empty line"),
    ("1 ||| a ||| LM0= -1 ||| -1\n0 ||| a ||| LM0= -1 ||| -1\n", 2, "must not decrease"),
    ("0 ||| a ||| LM0= -1 ||| -1\n0 ||| a ||| LM0= -1 -2 ||| -1\n", 2, "differ"),
])
def test_nbest_bad_lines(tmp_path, text, line, message):
    path = tmp_path / "bad.nbest"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NBestError, match=message) as err:
        list(iter_nbest(path))
    assert str(err.value).startswith(f"{path}:{line}:")


def test_written_ini_keeps_implicit_names_implicit():
    text = parse_moses_ini(TRAIN_MODEL_INI).to_text()
    assert "\nUnknownWordPenalty\n" in text and "\nDistortion\n" in text
    assert "PhraseDictionaryMemory name=TranslationModel0 num-features=4" in text
