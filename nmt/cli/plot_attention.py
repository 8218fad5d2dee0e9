"""``nmt-plot-attention``: alignment heat-maps of ``nmt-translate --attention`` output (Bahdanau et al. 2015, Fig. 3).

Reads the JSON-lines file ``nmt-translate --attention FILE`` writes for an attention model
(RNNsearch) and writes ``--out-dir DIR/attention.LINE.png`` for each chosen input line: source
words along the top, the 1-best translation down the side, α_ij in grey scale (0 black, 1 white).
``--lines 1 5 9`` picks input lines; without it the first ``--max-sentences`` records (3) are drawn.
Every record of the file is checked first (``FILE:LINE: what is wrong``, exit 2, nothing written).

    nmt-translate --model work/rnnsearch --input test.tok.en --tokenized true --output hyp.fr \\
        --attention hyp.attn.jsonl
    nmt-plot-attention --attention hyp.attn.jsonl --out-dir work/alignments --lines 1 2 3
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.analysis.translation_attention import PlotAttentionConfig, plot_attention_file
from nmt.core.errors import command


@command("nmt-plot-attention")
def cli_main(argv: list[str] | None = None) -> int:
    plot_attention_file(C.parse(PlotAttentionConfig, argv, description=__doc__))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
