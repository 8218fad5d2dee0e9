"""Console script ``nmt-prepare`` (see :mod:`nmt.data.prepare`)."""
from nmt.core import config as nmt_config
from nmt.core.errors import command
from nmt.core.logs import setup_logging
from nmt.data.prepare import PrepareConfig, prepare_parallel

ALIASES = {"--src": "--src-lang", "--tgt": "--tgt-lang"}  # fairseq-preprocess' short forms


@command("nmt-prepare")
def cli_main(argv: list[str] | None = None) -> int:
    """Bad input (a malformed corpus file, a missing corpus, bad options) is ``nmt-prepare: FILE:LINE: ...``
    with exit status 2, through the toolkit's error wrapper."""
    from nmt.data import prepare

    argv = [ALIASES.get(a.split("=")[0], a.split("=")[0]) + a[len(a.split("=")[0]):] for a in argv or []]
    cfg = nmt_config.parse(PrepareConfig, argv, description=prepare.__doc__.splitlines()[0])
    setup_logging(verbose=True)
    prepare_parallel(cfg)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(cli_main())
