"""Console script ``nmt-prepare`` (see :mod:`nmt.data.prepare`)."""
from nmt.data.prepare import cli_main as _prepare_main
from nmt.errors import command


@command("nmt-prepare")
def cli_main(argv: list[str] | None = None) -> int:
    return _prepare_main(argv)


if __name__ == "__main__":
    import sys

    sys.exit(cli_main())
