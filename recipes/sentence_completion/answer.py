#!/usr/bin/env python3
"""Answer the MSR Sentence Completion Challenge with language models: each of the five candidates
fills the blank, the sentence is normalised as the training text was (``prepare_holmes.normalize``)
and scored as a whole (ln p of its words and ``</s>`` from a fresh state); the most probable
candidate is the answer.

    answer.py --questions testing_data.csv --answers test_answer.csv \\
        --model lstm=work/lstm --model kenlm=work/kenlm/holmes5.binary [--json OUT] [--predictions DIR]

A model ending in ``.binary`` or ``.arpa`` is read with KenLM (``smt_features.model.kenlm``), anything
else as an ``nmt-lm-train`` folder. Prints one accuracy line per model over the questions
answered (all 1,040 unless ``--max-questions``).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prepare_holmes import normalize  # noqa: E402

BLANK = "_____"
LETTERS = ("a", "b", "c", "d", "e")


def read_questions(path: str | Path, answers: str | Path) -> list[tuple[str, str, list[str], str]]:
    """(id, question, five candidates, correct letter) per question; errors name file and line."""
    with open(answers, encoding="utf-8", newline="") as fh:
        key = {row["id"]: row["answer"].strip() for row in csv.DictReader(fh)}
    out = []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        for line_no, row in enumerate(reader, start=2):
            q = row["question"]
            if q.count(BLANK) != 1:
                raise ValueError(f"{path}, line {line_no}: expected one blank {BLANK!r} in {q!r}")
            if row["id"] not in key:
                raise ValueError(f"{answers}: no answer for question id {row['id']} ({path}, line {line_no})")
            cands = [row[f"{c})"].strip() for c in LETTERS]
            out.append((row["id"], q, cands, key[row["id"]]))
    return out


def filled(question: str, candidate: str) -> list[str]:
    return normalize(question.replace(BLANK, candidate))


class NeuralScorer:
    def __init__(self, path: str, threads: int = 2):
        import torch

        from nmt.lm.data import encode_all
        from nmt.lm.loading import load_language_model
        from nmt.lm.scoring import sentence_token_logprobs

        torch.set_num_threads(threads)
        self.loaded = load_language_model(path)
        self._encode, self._score = encode_all, sentence_token_logprobs

    def score(self, sentences: list[list[str]]) -> list[float]:
        lps = self._score(self.loaded.model, self._encode(self.loaded.vocab, sentences), start=self.loaded.start)
        return [float(lp.sum()) for lp in lps]


class KenLMSentenceScorer:
    def __init__(self, path: str):
        from smt_features.model.kenlm import KenLMScorer

        self.lm = KenLMScorer(path)

    def score(self, sentences: list[list[str]]) -> list[float]:
        return [self.lm.score_sentence(s) for s in sentences]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", required=True)
    p.add_argument("--answers", required=True)
    p.add_argument("--model", action="append", required=True, help="NAME=PATH (repeatable)")
    p.add_argument("--max-questions", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", help="write the accuracies here")
    p.add_argument("--predictions", help="folder for NAME.tsv (id, chosen letter, correct letter, scores)")
    p.add_argument("--summary", help="write the printed accuracy lines here too")
    args = p.parse_args(argv)
    questions = read_questions(args.questions, args.answers)
    if args.max_questions:
        questions = questions[:args.max_questions]
    batch = [filled(q, c) for _, q, cands, _ in questions for c in cands]
    results = {}
    lines = []
    for spec in args.model:
        name, _, path = spec.partition("=")
        if not path:
            raise SystemExit(f"--model {spec!r}: expected NAME=PATH")
        scorer = KenLMSentenceScorer(path) if path.endswith((".binary", ".arpa")) else NeuralScorer(path, args.threads)
        scores = scorer.score(batch)
        right = 0
        rows = []
        for k, (qid, _, _, gold) in enumerate(questions):
            s = scores[5 * k:5 * k + 5]
            pick = LETTERS[max(range(5), key=lambda i: s[i])]
            right += pick == gold
            rows.append(f"{qid}\t{pick}\t{gold}\t" + " ".join(f"{v:.4f}" for v in s))
        acc = 100.0 * right / len(questions)
        results[name] = {"model": path, "correct": right, "questions": len(questions), "accuracy": round(acc, 2)}
        lines.append(f"{name}: {right} / {len(questions)} correct = {acc:.2f}% ({path})")
        print(lines[-1], flush=True)
        if args.predictions:
            Path(args.predictions).mkdir(parents=True, exist_ok=True)
            (Path(args.predictions) / f"{name}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.summary:
        Path(args.summary).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
