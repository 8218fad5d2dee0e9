"""BLEU and chrF with sacreBLEU on detokenised text, reported with their signatures (nmt-evaluate's run)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import sacrebleu

from nmt.core import config as C
from nmt.core.io import DataError, read_lines
from nmt.core.errors import UsageError, refuse_overwriting_inputs


@dataclass
class EvaluateConfig:
    hyp: str = C.field("", help="detokenised system output, one sentence per line", required=True)
    ref: str = C.field("", help="raw reference file (plain or .gz)", required=True)
    detokenize: str = C.field("", help="LANG: the hypothesis is Moses-tokenized (e.g. smt-decode output); "
                                       "detokenize it as LANG (sacremoses, Moses entities unescaped) before "
                                       "scoring; written to --detok-out if given")
    detok_out: str = C.field("", help="with --detokenize: also write the detokenized hypothesis here")
    detruecase: bool = C.field(False, help="with --detokenize: the hypothesis is truecased (nmt-prepare --truecase); "
                                           "detruecase it first (Moses's detruecase.perl: the first letter of "
                                           "every sentence uppercased)")
    name: str = C.field("", help="label printed before the scores")
    json: str | None = C.field(None, help="also write the scores and signatures to this JSON file")


@dataclass
class EvalResult:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    num_sentences: int

    def format(self, name: str = "") -> str:
        label = f"{name}: " if name else ""
        return (f"{label}BLEU = {self.bleu:.2f} ({self.bleu_signature}) | chrF2 = {self.chrf:.2f} "
                f"({self.chrf_signature}) | {self.num_sentences} sentences")


def evaluate(hypotheses: Sequence[str], references: Sequence[str]) -> EvalResult:
    """Corpus BLEU (13a, mixed case) and chrF2 of detokenised hypotheses against raw references."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("no sentences to evaluate (sacreBLEU needs at least one)")
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    b = bleu.corpus_score(list(hypotheses), [list(references)])
    c = chrf.corpus_score(list(hypotheses), [list(references)])
    return EvalResult(b.score, c.score, str(bleu.get_signature()), str(chrf.get_signature()), len(hypotheses))


def read_hypotheses(hyp_path: str, ref_path: str, num_refs: int, detokenize: str = "",
                    detruecase: bool = False) -> list[str]:
    """The lines of ``hyp_path``, one per reference line of ``ref_path`` (a :class:`DataError` naming the shorter
    file otherwise); an empty line is an (empty) translation. ``detokenize`` (LANG): the lines are
    Moses-tokenized; detokenize them as LANG (sacremoses, Moses entities unescaped), after detruecasing them
    when ``detruecase`` (Moses's detruecase.perl)."""
    hyps = read_lines(hyp_path, allow_empty=True)
    if not hyps and not num_refs:
        raise DataError(f"{hyp_path}: empty file, and so is {ref_path} (nothing to evaluate)")
    if len(hyps) != num_refs:
        shorter = hyp_path if len(hyps) < num_refs else ref_path
        raise DataError(shorter, min(len(hyps), num_refs) + 1,
                        f"{len(hyps)} hypotheses in {hyp_path} but {num_refs} references in {ref_path} "
                        "(one line each per sentence)")
    if detruecase:
        from nmt.data.truecase import detruecase as detruecase_line

        hyps = [detruecase_line(h) for h in hyps]
    if detokenize:
        from nmt.data.tokenize import MosesTokenizer

        detok = MosesTokenizer(detokenize)
        hyps = [detok.detokenize(h.split()) for h in hyps]
    return hyps


def evaluate_files(cfg: EvaluateConfig) -> None:
    """Score ``cfg.hyp`` against ``cfg.ref``: the line on stdout, ``cfg.json`` and ``cfg.detok_out`` if given."""
    if cfg.detok_out and not cfg.detokenize:
        raise UsageError("--detok-out needs --detokenize LANG")
    if cfg.detruecase and not cfg.detokenize:
        raise UsageError("--detruecase needs --detokenize LANG (it works on Moses-tokenized text)")
    refuse_overwriting_inputs(outputs={"--json": cfg.json, "--detok-out": cfg.detok_out},
                              inputs={"--hyp": cfg.hyp, "--ref": cfg.ref})
    if cfg.json and cfg.detok_out:
        refuse_overwriting_inputs(outputs={"--json": cfg.json}, inputs={"--detok-out": cfg.detok_out})
    refs = read_lines(cfg.ref)
    hyps = read_hypotheses(cfg.hyp, cfg.ref, len(refs), cfg.detokenize, cfg.detruecase)
    result = evaluate(hyps, refs)
    if cfg.detok_out:
        from nmt.core.io import write_output

        write_output(cfg.detok_out, "".join(h + "\n" for h in hyps))
    print(result.format(cfg.name))
    if cfg.json:
        from nmt.core.io import atomic_write

        with atomic_write(cfg.json) as fh:
            json.dump(asdict(result), fh, indent=1)
