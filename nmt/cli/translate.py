"""``nmt-translate``: batched beam search with a trained encoder–decoder; detokenised output."""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write, read_lines
from nmt.core.errors import command, refuse_overwriting_inputs
from nmt.translation.translate import (TranslateConfig, tokenize_lines, translate_lines, write_attention,
                                       write_translations)


@command("nmt-translate")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(TranslateConfig, argv, description=__doc__)
    refuse_overwriting_inputs(outputs={"--output": cfg.output, "--attention": cfg.attention or None},
                              inputs={"--input": cfg.input, "--model": cfg.model})
    source = cfg.input if cfg.input != "-" else "/dev/stdin"
    lines = read_lines(source)
    if not lines:
        raise DataError(f"{source}: empty input (no sentences to translate)")
    records: list[dict] = []
    results = translate_lines(cfg, lines, tokens=tokenize_lines(cfg, lines, source), attention_out=records)
    if cfg.attention:
        with atomic_write(cfg.attention) as fh:
            write_attention(fh, records)
    if cfg.output != "-":
        with atomic_write(cfg.output) as fh:
            write_translations(fh, results, cfg.nbest)
    else:
        write_translations(sys.stdout, results, cfg.nbest)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
