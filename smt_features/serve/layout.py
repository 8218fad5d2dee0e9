"""Which files make a servable system (:class:`SystemFiles`): named explicitly, or found in an experiment's work
folder by the layout ``recipes/lib/experiment.sh`` writes (:func:`from_work`).

A system is the tuned moses.ini (its tables and KenLM), and for a reranked row the neural features added to its
n-best lists (``smt-rerank --lm/--kenlm/--encdec NAME=PATH``, in that order) with the tuned reranking weights
and the n-best size they were tuned on. The rows of the experiment table, run ``R`` (MERT seed):

========================  ==============================  ==============================  =========================
row                       moses.ini                       rerank weights                  features
========================  ==============================  ==============================  =========================
Baseline                  smt/tune.R/moses.tuned.ini
+RNN, +RNN+WP             rnn/{rnn,rnnwp}.tune.R/…
+LSTM-LM, +RMN-LM,        smt/tune.R/…                    rerank/{lstm,rmn,mog}.R/weights  LSTM0 / RMN0 / MOG0
+Mogrifier-LM
+all                      rnn/rnnwp.tune.R/…              rerank/all.R/weights            LSTM0 RMN0 MOG0, RNN0
+RNNsearch                smt/tune.R/…                    rerank/rnnsearch.R/weights      RNNS0
+all+RNNsearch            rnn/rnnwp.tune.R/…              rerank/allrs.R/weights          LSTM0 RMN0 MOG0, RNN0, RNNS0
========================  ==============================  ==============================  =========================

(``lm/lstm-1x128``, ``lm/rm+tM-g``, ``lm/mogrifier``; RNN0 = ``rnn/phrase_model``, RNNS0 = ``rnnsearch/model``,
or the folders given as ``encdec`` / ``rnnsearch``, as ``experiment.sh --encdec/--rnnsearch``.) Tokenization and
truecasing follow ``smt/data/prepare.json`` (languages, lowercasing, ``truecase-model.<lang>``).
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from nmt.core.errors import UsageError

#: row → (moses.ini's tuning folder under WORK, the rerank row key or None, the base lists' key, features)
ROWS: dict[str, tuple[str, str | None, str | None, tuple[str, ...]]] = {
    "Baseline": ("smt/tune", None, None, ()),
    "+RNN": ("rnn/rnn.tune", None, None, ()),
    "+RNN+WP": ("rnn/rnnwp.tune", None, None, ()),
    "+LSTM-LM": ("smt/tune", "lstm", "baseline", ("LSTM0",)),
    "+RMN-LM": ("smt/tune", "rmn", "baseline", ("RMN0",)),
    "+Mogrifier-LM": ("smt/tune", "mog", "baseline", ("MOG0",)),
    "+all": ("rnn/rnnwp.tune", "all", "rnnwp", ("LSTM0", "RMN0", "MOG0", "RNN0")),
    "+RNNsearch": ("smt/tune", "rnnsearch", "baseline.rnnsearch", ("RNNS0",)),
    "+all+RNNsearch": ("rnn/rnnwp.tune", "allrs", "rnnwp.rnnsearch", ("LSTM0", "RMN0", "MOG0", "RNN0", "RNNS0")),
}
LM_FOLDERS = {"LSTM0": "lm/lstm-1x128", "RMN0": "lm/rm+tM-g", "MOG0": "lm/mogrifier"}
OPTIMIZERS = ("mert", "kbmira", "pro")


@dataclass
class SystemFiles:
    """The files of one system. Feature items are ``NAME=PATH`` as ``smt-rerank`` takes them."""

    moses_ini: Path
    name: str = "system"
    src_lang: str = "en"
    tgt_lang: str = "fr"
    lowercase: bool = False
    truecase: dict[str, Path] = field(default_factory=dict)  # lang → truecase-model.<lang> (empty: not truecased)
    lm: list[str] = field(default_factory=list)
    kenlm: list[str] = field(default_factory=list)
    encdec: list[str] = field(default_factory=list)
    rerank_weights: Path | None = None
    nbest_size: int = 0  # the n-best size the reranking weights were tuned on (0: no reranking)
    checkpoint: str = "auto"
    work: Path | None = None
    run: int | None = None

    @property
    def reranked(self) -> bool:
        return self.rerank_weights is not None

    def check(self) -> None:
        """Refuse an inconsistent set of files (before anything is loaded)."""
        if (self.lm or self.kenlm or self.encdec) and self.rerank_weights is None:
            raise UsageError("neural features (--lm/--kenlm/--encdec) need the reranking weights (--rerank-weights)")
        if self.rerank_weights is not None and self.nbest_size < 1:
            raise UsageError("a reranked system needs its n-best size (--nbest-size N, the N it was tuned on)")
        if set(self.truecase) - {self.src_lang, self.tgt_lang}:
            raise UsageError(f"truecase models for {sorted(self.truecase)}, but the languages are "
                             f"{self.src_lang} and {self.tgt_lang}")


def _need(path: Path, what: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(2, f"no {what} here (is the experiment finished for this system and run?)", str(path))
    return path


def data_settings(data_dir: Path) -> dict:
    """Languages, lowercasing and truecase models of a prepared data folder (``nmt-prepare``'s prepare.json)."""
    prep = _need(data_dir / "prepare.json", "prepare.json of nmt-prepare")
    try:
        stats = json.loads(prep.read_text(encoding="utf-8"))
        cfg_file = data_dir / "config.yaml"
        cfg = (yaml.safe_load(cfg_file.read_text(encoding="utf-8")) if cfg_file.exists() else None) or {}
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise UsageError(f"{prep}: cannot read the data folder's settings: {err}") from None
    if stats.get("tokenizer", "moses") != "moses":
        raise UsageError(f"{prep}: tokenizer {stats.get('tokenizer')!r}: the phrase-based system needs Moses tokens")
    langs = (stats.get("src_lang"), stats.get("tgt_lang"))
    if not all(isinstance(x, str) and x for x in langs):
        raise UsageError(f"{prep}: no src_lang / tgt_lang recorded")
    truecase = {lang: data_dir / name for lang, name in (stats.get("truecase") or {}).items()}
    for path in truecase.values():
        _need(path, "truecase model")
    return {"src_lang": langs[0], "tgt_lang": langs[1], "truecase": truecase, "lowercase": cfg.get("lowercase") is True}


def tuned_nbest_size(lists: Path) -> int:
    """The n-best size of the lists a reranking was tuned on: the most hypotheses any sentence has in the first
    ``*.nbest.feat.gz`` of ``lists`` (smt-decode's lists are not distinct: a sentence gets N unless its search
    graph has fewer paths)."""
    found = sorted(lists.glob("*.nbest.feat.gz"))
    if not found:
        raise FileNotFoundError(2, "no *.nbest.feat.gz here to read the n-best size from (give it)", str(lists))
    counts: dict[bytes, int] = {}
    with gzip.open(found[0], "rb") as fh:
        for line in fh:
            key = line.split(b" ||| ", 1)[0]
            counts[key] = counts.get(key, 0) + 1
    return max(counts.values(), default=0)


def from_work(work: str | Path, system: str = "Baseline", run: int = 1, *, optimizer: str = "mert",
              encdec: str | Path | None = None, rnnsearch: str | Path | None = None,
              nbest_size: int | None = None) -> SystemFiles:
    """The files of row ``system``, MERT run ``run``, of the experiment in ``work`` (see the module docstring);
    ``optimizer``: the rerank weights tuned by kbmira or pro (``lm_rerank.sh --optimizer``) instead of MERT."""
    work = Path(work)
    if system not in ROWS:
        raise UsageError(f"unknown system {system!r}: one of {', '.join(ROWS)}")
    if optimizer not in OPTIMIZERS:
        raise UsageError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {optimizer!r}")
    if run < 1:
        raise UsageError(f"run must be >= 1 (the MERT seed), not {run}")
    _need(work, "experiment work folder")
    tune_dir, row_key, base, names = ROWS[system]
    files = SystemFiles(moses_ini=_need(work / f"{tune_dir}.{run}" / "moses.tuned.ini", "tuned moses.ini"),
                        name=system, work=work, run=run, **data_settings(work / "smt" / "data"))
    if row_key is None:
        return files
    suffix = "" if optimizer == "mert" else f".{optimizer}"
    files.rerank_weights = _need(work / "rerank" / f"{row_key}{suffix}.{run}" / "weights", "rerank weights")
    folders = {**{n: work / p for n, p in LM_FOLDERS.items()},
               "RNN0": Path(encdec) if encdec else work / "rnn" / "phrase_model",
               "RNNS0": Path(rnnsearch) if rnnsearch else work / "rnnsearch" / "model"}
    for n in names:
        item = f"{n}={_need(folders[n], 'model folder')}"
        (files.lm if n in LM_FOLDERS else files.encdec).append(item)
    files.nbest_size = nbest_size or tuned_nbest_size(work / "rerank" / f"{base}.{run}")
    return files
