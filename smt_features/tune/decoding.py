"""The decoding step of ``smt-tune``: write ``run<i>.moses.ini``, run the decoder, keep its n-best list.

The decoder is called as::

    <decoder-cmd> --moses-ini run<i>.moses.ini --input DEV_SRC --output run<i>.out.tmp \\
        --n-best-list run<i>.best<N>.out.tmp N --threads T [--decoder-flags ...]

(``--weights-mode override`` instead passes the original ``--moses-ini`` and
``--weights-override "Name= v … Name2= v"``, Moses's ``-weight-overwrite``
syntax.) The n-best list is renamed into place only when the decoder
succeeded, so its presence marks a finished decode (a resumed run re-reads it).
"""
from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nmt.core.io import DataError
from nmt.core.errors import UsageError
from nmt.core.formats.nbest import iter_nbest
from smt_features.model.moses_ini import apply_weight_overrides
from smt_features.model.weights import Weights
from smt_features.tune.options import TuneConfig

log = logging.getLogger("smt_features.tune")


def absolute_paths(cfg: Any) -> Any:
    """A copy of a MosesConfig whose feature ``path=`` arguments are absolute (resolved like the decoder:
    from the working directory, else from the moses.ini's folder), so it can be written elsewhere."""
    out = cfg.copy()
    ini_dir = Path(cfg.path).parent if cfg.path else Path.cwd()
    for fl in out.features:
        p = fl.args.get("path")
        if not p or Path(p).is_absolute():
            continue
        cand = Path(p)
        if not cand.exists() and (ini_dir / p).exists():
            cand = ini_dir / p
        fl.args["path"] = str(cand.resolve())
    return out


def decode(cfg: TuneConfig, work: Path, it: int, weights: dict[str, list[float]], base: Any,
           override_ini: str | None = None) -> tuple[Path, Path, float]:
    """Run the decoder for iteration ``it``; returns (n-best, 1-best, seconds). Skips a finished decode.
    ``override_ini``: the moses.ini given with ``--weights-mode override`` (default ``--moses-ini``)."""
    nbest_path = work / f"run{it}.best{cfg.nbest}.out"
    out_path = work / f"run{it}.out"
    if nbest_path.exists():
        log.info("iteration %d: n-best list %s already there (resumed), not decoding again", it, nbest_path.name)
        return nbest_path, out_path, 0.0
    run_cfg = absolute_paths(base)
    apply_weight_overrides(run_cfg, weights, source=f"iteration {it} weights")
    run_ini = work / f"run{it}.moses.ini"
    run_cfg.write(run_ini)
    nbest_tmp = work / f"run{it}.best{cfg.nbest}.out.tmp"
    out_tmp = work / f"run{it}.out.tmp"
    cmd = decoder_command(cfg.decoder_cmd)
    if cfg.weights_mode == "ini":
        cmd += ["--moses-ini", str(run_ini)]
    else:
        cmd += ["--moses-ini", str(Path(override_ini or cfg.moses_ini).resolve()), "--weights-override",
                Weights(weights).override_string()]
    cmd += ["--input", str(Path(cfg.dev_src).resolve()), "--output", str(out_tmp),
            "--n-best-list", str(nbest_tmp), str(cfg.nbest), "--threads", str(cfg.threads)]
    cmd += shlex.split(cfg.decoder_flags)
    log.info("iteration %d: decoding: %s", it, shlex.join(cmd))
    dlog = work / f"run{it}.decode.log"
    t0 = time.perf_counter()
    with open(dlog, "w", encoding="utf-8") as fh:
        try:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise RuntimeError(f"decoder command not found: {cmd[0]!r} (--decoder-cmd)") from None
    seconds = time.perf_counter() - t0
    if proc.returncode == 2:  # the toolkit's "bad input" status: pass the decoder's FILE:LINE message on
        refusal = decoder_refusal(dlog.read_text(encoding="utf-8", errors="replace"))
        if refusal:
            raise DataError(f"{refusal} (the decoder refused its input in iteration {it}; see {dlog})")
    if proc.returncode != 0:
        tail = dlog.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        raise RuntimeError(f"decoder failed (exit {proc.returncode}) in iteration {it}; {dlog}:\n  "
                           + "\n  ".join(tail))
    if not nbest_tmp.exists():
        raise RuntimeError(f"decoder wrote no n-best list {nbest_tmp} (see {dlog})")
    if out_tmp.exists():
        os.replace(out_tmp, out_path)
    os.replace(nbest_tmp, nbest_path)  # last: its presence marks a finished decode
    return nbest_path, out_path, seconds


_PROG_MESSAGE = re.compile(r"^[\w.-]+: (?!internal error)(.+)$")


def decoder_refusal(log_text: str) -> str | None:
    """The last ``PROG: message`` line of a decoder's log (the toolkit's error line), without ``PROG: ``."""
    found = None
    for line in log_text.splitlines():
        m = _PROG_MESSAGE.match(line)
        if m:
            found = m.group(1)
    return found


def decoder_command(text: str) -> list[str]:
    """``--decoder-cmd`` split like a shell; a bare ``smt-decode`` that is not on ``PATH`` is looked up
    beside this Python (the virtual environment's ``bin``), else run as ``python -m smt_features.cli.decode``."""
    cmd = shlex.split(text)
    if not cmd:
        raise UsageError("--decoder-cmd is empty")
    if cmd[0] == "smt-decode" and shutil.which("smt-decode") is None:
        sibling = Path(sys.executable).parent / "smt-decode"
        cmd[:1] = [str(sibling)] if sibling.exists() else [sys.executable, "-m", "smt_features.cli.decode"]
    elif shutil.which(cmd[0]) is None:
        raise UsageError(f"--decoder-cmd: {cmd[0]!r} is not an executable command")
    return cmd


def one_best_from_nbest(path: Path, n_sent: int) -> list[str]:
    """The first hypothesis of each sentence of an n-best list (for a decoder that wrote no 1-best file)."""
    best: list[str | None] = [None] * n_sent
    for e in iter_nbest(path):
        if 0 <= e.sent_id < n_sent and best[e.sent_id] is None:
            best[e.sent_id] = e.hypothesis
    return [b or "" for b in best]
