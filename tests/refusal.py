"""How a command refuses bad input the toolkit's way: exit status 2, a message, no traceback."""
from __future__ import annotations


def refused(capsys, match: str | None, status: int, *words: str) -> bool:
    """A command refused its input the toolkit's way: exit status 2, ``match`` (a regex) and each of
    ``words`` (plain text) on stderr, no traceback. Use as ``assert refused(capsys, ":3:", main([...]))``."""
    import re

    err = capsys.readouterr().err
    assert status == 2, f"exit status {status}, stderr: {err[-2000:]}"
    assert "Traceback" not in err, err[-2000:]
    assert match is None or re.search(match, err), f"{match!r} not in stderr: {err[-2000:]}"
    for word in words:
        assert word in err, f"{word!r} not in stderr: {err[-2000:]}"
    return True
