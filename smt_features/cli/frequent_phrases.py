"""``smt-frequent-phrases``: a phrase table's source phrases with the most target options, one a line.

Example: ``smt-frequent-phrases --table work/smt/model/phrase-table.gz --output phrases.txt --limit 200``
(the ``--phrases`` input of ``smt-report``). See :mod:`smt_features.report.frequent_phrases`.
"""
from __future__ import annotations

from dataclasses import dataclass

from nmt.core import config as C
from nmt.core.io import write_output
from nmt.core.errors import command, refuse_overwriting_inputs
from smt_features.report.frequent_phrases import frequent_source_phrases


@dataclass
class FrequentPhrasesConfig:
    table: str = C.field("", help="Moses phrase table (plain or .gz)", required=True)
    output: str = C.field("-", help="the phrases, one a line ('-' = stdout)")
    limit: int = C.field(200, help="how many phrases (the most frequent first)")
    min_words: int = C.field(2, help="shortest phrase kept, in words")
    max_words: int = C.field(4, help="longest phrase kept, in words")


@command("smt-frequent-phrases")
def cli_main(argv: list[str] | None = None) -> int:
    args, values = C.parse_args([FrequentPhrasesConfig], argv, __doc__.splitlines()[0])
    cfg = C.build(FrequentPhrasesConfig, args, values)
    refuse_overwriting_inputs({"--output": cfg.output}, {"--table": cfg.table})
    phrases = frequent_source_phrases(cfg.table, cfg.limit, cfg.min_words, cfg.max_words)
    write_output(cfg.output, "".join(f"{p}\n" for p in phrases))
    return 0
