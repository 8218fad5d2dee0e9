"""``nmt-lm-attention``: where a Recurrent Memory Network looks (Tran et al. 2016, Fig. 3 and 4).

Reads a text sentence by sentence from a fresh state with one or more RM/RMR models and writes
into ``--out-dir``:

* ``mean_attention.png`` — average attention per memory position (0 = the current word) over
  every step whose memory is full (t ≥ n − 1), one line per model (Fig. 3);
* ``heatmap_<model>_<i>.png`` — the attention of ``--samples`` sampled sentences (Fig. 4);
* ``attention.json`` — the averages, the number of steps averaged, the sampled line numbers;
* ``attention_<model>.npz`` (``--save-arrays``) — every step's weights [tokens, n] with the
  sentence offsets, for other plots.
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.analysis.attention_report import LMAttentionConfig, write_attention_report
from nmt.core.errors import command


@command("nmt-lm-attention")
def cli_main(argv: list[str] | None = None) -> int:
    write_attention_report(C.parse(LMAttentionConfig, argv, description=__doc__))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
