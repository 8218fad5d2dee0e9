"""Building moses.ini configurations: train-model.perl's default for a phrase table and an LM, a copy for a rescored table.

Reading and writing them is :mod:`smt_features.model.moses_ini`.
"""
from __future__ import annotations

from smt_features.model.moses_ini import MosesConfig, MosesIniError, parse_moses_ini


def with_rescored_table(cfg: MosesConfig, table: str, new_columns: int, *, feature: str = "TranslationModel0",
                        weight: float = 0.2) -> MosesConfig:
    """A copy of ``cfg`` whose phrase table ``feature`` reads ``table``, which has ``new_columns`` more scores.

    ``num-features`` grows by ``new_columns`` and each new score gets the starting weight ``weight``
    (0.2, as ``train-model.perl`` gives every phrase-table score); the other weights are kept.
    """
    if new_columns < 1:
        raise ValueError("new_columns must be >= 1")
    out = cfg.copy()
    try:
        f = out.feature(feature)
    except KeyError:
        raise MosesIniError(cfg.path or "<moses.ini>", 1, f"no phrase-table feature named {feature}") from None
    if not f.type.startswith("PhraseDictionary"):
        raise MosesIniError(cfg.path or "<moses.ini>", f.line_no, f"{feature} is a {f.type}, not a phrase table")
    old = int(f.get("num-features", "0") or 0)
    f.args["num-features"] = str(old + new_columns)
    f.args["path"] = table
    out.weights[feature] = list(out.weights.get(feature, [0.2] * old)) + [weight] * new_columns
    return out


def default_config(phrase_table: str, lm: str, *, num_tm_features: int = 4, lm_order: int = 5,
                   table_limit: int = 20, distortion_limit: int = 6, reordering_table: str | None = None) -> MosesConfig:
    """The moses.ini ``train-model.perl`` writes for a distance-reordering system, with its default weights;
    with ``reordering_table`` (``reordering-table.wbe-msd-bidirectional-fe.gz``) also its
    ``msd-bidirectional-fe`` lexicalized reordering line (after the phrase table) and weights (0.3 each)."""
    lr_line = lr_weights = ""
    if reordering_table is not None:
        lr_line = ("LexicalReordering name=LexicalReordering0 num-features=6 type=wbe-msd-bidirectional-fe-allff "
                   f"input-factor=0 output-factor=0 path={reordering_table}\n")
        lr_weights = "LexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3\n"
    lines = f"""
[input-factors]
0

[mapping]
0 T 0

[distortion-limit]
{distortion_limit}

[feature]
UnknownWordPenalty
WordPenalty
PhrasePenalty
PhraseDictionaryMemory name=TranslationModel0 num-features={num_tm_features} path={phrase_table} input-factor=0 output-factor=0 table-limit={table_limit}
{lr_line}Distortion
KENLM name=LM0 factor=0 path={lm} order={lm_order}

[weight]
UnknownWordPenalty0= 1
WordPenalty0= -1
PhrasePenalty0= 0.2
TranslationModel0= {' '.join(['0.2'] * num_tm_features)}
{lr_weights}Distortion0= 0.3
LM0= 0.5
"""
    return parse_moses_ini(lines, "<default moses.ini>")
