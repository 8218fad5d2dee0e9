"""``smt-rerank``: add neural-LM / KenLM / encoder–decoder features to a Moses n-best list, tune them
with MERT, write the reranked 1-best.

Examples::

    smt-rerank --nbest dev.nbest --src dev.tok.en --output dev.rr.nbest \\
        --lm LSTM0=work/lm_lstm RMN0=work/lm_rmn --kenlm KENLM0=work/lm.binary --encdec RNN0=work/encdec
    smt-rerank --nbest dev.rr.nbest --src dev.tok.en --tune --ref dev.tok.fr --weights-out rerank.weights
    smt-rerank --nbest test.rr.nbest --src test.tok.en --weights rerank.weights --one-best test.1best

Several models of one kind go after one flag (``--lm A=dir1 B=dir2``). Feature values are natural
logs incl. ``</s>``. Totals in ``--output``: ``Σ λ·h`` with ``--weights`` (or the tuned weights),
otherwise the totals of the input lines unchanged. The run is :mod:`smt_features.neural.rerank_run`;
see ``docs/rerank_report.md``.
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.errors import command
from smt_features.neural.rerank_run import RerankConfig, check_repeats, run


@command("smt-rerank")
def cli_main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    check_repeats(argv)
    cfg = C.parse(RerankConfig, argv, description=__doc__)
    if cfg.lm or cfg.encdec:
        from nmt.scoring import set_threads

        set_threads(cfg.threads)
    run(cfg)  # bad input (NBestError FILE:LINE, a refused output, a missing file): exit 2 via @command
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
