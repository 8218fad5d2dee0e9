"""``nmt-translate``: batched beam search with a trained encoder–decoder; detokenised output."""
from __future__ import annotations

import sys

from nmt import config as C
from nmt.data.io import DataError, atomic_write, read_lines
from nmt.errors import command, refuse_overwriting_inputs
from nmt.translate import TranslateConfig, tokenize_lines, translate_lines, write_translations


@command("nmt-translate")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(TranslateConfig, argv, description=__doc__)
    refuse_overwriting_inputs(outputs={"--output": cfg.output}, inputs={"--input": cfg.input, "--model": cfg.model})
    source = cfg.input if cfg.input != "-" else "/dev/stdin"
    lines = read_lines(source)
    if not lines:
        raise DataError(f"{source}: empty input (no sentences to translate)")
    results = translate_lines(cfg, lines, tokens=tokenize_lines(cfg, lines, source))
    out = sys.stdout if cfg.output == "-" else None
    if out is None:
        with atomic_write(cfg.output) as fh:
            write_translations(fh, results, cfg.nbest)
    else:
        write_translations(out, results, cfg.nbest)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
