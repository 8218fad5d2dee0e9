"""Per-word upper bounds of ``ln p(w | any history)`` from a KenLM model's ARPA file, and their sidecar ``X.ubounds``.

The decoder tightens its score bounds with them (bound pruning, exact; ``LM0``'s
:meth:`~smt_features.model.kenlm_feature.KenLMFeature.load_upper_bounds`). Reading them from the ARPA
file takes time in proportion to the ARPA file (gigabytes for a large LM), at every decoder start. So
``smt-kenlm train`` writes them once beside the model, ``OUT_PREFIX.ubounds`` (``smt-kenlm bounds`` for a
model trained before), and the decoder reads that file, whose size is the vocabulary's. Format (text,
UTF-8; values are natural logs written with ``repr``, so they read back exactly)::

    # rnnsmt-ubounds 1 arpa=NAME size=BYTES mtime_ns=NS max_backoff=LN
    word<TAB>bound

``size``/``mtime_ns`` are the ARPA file's when the bounds were taken: a sidecar whose ARPA file has
changed since is stale and not used (an ARPA file that is gone does not make it stale).
"""
from __future__ import annotations

import gzip
import logging
import math
from dataclasses import dataclass
from pathlib import Path

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write
from nmt.core.errors import refuse_overwriting_inputs

log = logging.getLogger(__name__)

LN10 = math.log(10.0)
MAGIC = "# rnnsmt-ubounds 1"
SUFFIX = ".ubounds"
_MODEL_SUFFIXES = (".binary", ".arpa.gz", ".arpa", ".bin", ".klm")


def arpa_upper_bounds(path: str | Path) -> tuple[dict[str, float], float]:
    """Per word, the largest ``ln p`` of any n-gram ending in it; and the largest ``ln`` backoff.

    With backoff weights ≤ 1 (true of modified Kneser–Ney models from
    ``lmplz``), ``p(w | h)`` never exceeds the probability of some stored
    n-gram ending in ``w``, so these are upper bounds over all histories.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    best: dict[bytes, float] = {}
    max_bo = float("-inf")
    in_grams = False
    with opener(path, "rb") as fh:
        for raw in fh:
            if raw.startswith(b"\\"):
                in_grams = raw.rstrip().endswith(b"-grams:")
                continue
            if not in_grams:
                continue
            parts = raw.rstrip(b"\r\n").split(b"\t")
            if len(parts) < 2:
                continue
            lp = float(parts[0])
            w = parts[1].rsplit(b" ", 1)[-1]
            if lp > best.get(w, -1e30):
                best[w] = lp
            if len(parts) > 2:
                bo = float(parts[2])
                if bo > max_bo:
                    max_bo = bo
    bounds = {w.decode("utf-8"): lp * LN10 for w, lp in best.items()}
    return bounds, (max_bo * LN10 if max_bo != float("-inf") else 0.0)


def bounds_path(model: str | Path) -> Path:
    """The sidecar of a model or ARPA file: ``X.binary`` / ``X.arpa`` / ``X.arpa.gz`` → ``X.ubounds``."""
    p = Path(model)
    name = p.name
    for suffix in _MODEL_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return p.with_name(name + SUFFIX)


def write_bounds(arpa: str | Path, out: str | Path | None = None) -> Path:
    """Take the bounds of ``arpa`` and write them (atomically) to ``out`` (default :func:`bounds_path`)."""
    arpa = Path(arpa)
    out = Path(out) if out is not None else bounds_path(arpa)
    st = arpa.stat()
    bounds, max_bo = arpa_upper_bounds(arpa)
    with atomic_write(out) as fh:
        fh.write(f"{MAGIC} arpa={arpa.name} size={st.st_size} mtime_ns={st.st_mtime_ns} max_backoff={max_bo!r}\n")
        fh.write("".join(f"{w}\t{v!r}\n" for w, v in bounds.items()))
    return out


def read_bounds(path: str | Path, arpa: str | Path | None = None) -> tuple[dict[str, float], float] | None:
    """The bounds of a sidecar, or None when there is none, it is not one, or ``arpa`` (the model's ARPA
    file, when it exists) has changed since it was written (logged)."""
    path = Path(path)
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        header = fh.readline()
        if not header.startswith(MAGIC + " "):
            log.warning("%s: not an upper-bounds file (no %r header); ignored", path, MAGIC)
            return None
        fields = dict(item.split("=", 1) for item in header[len(MAGIC) + 1:].split() if "=" in item)
        if arpa is not None and Path(arpa).is_file():
            st = Path(arpa).stat()
            if fields.get("size") != str(st.st_size) or fields.get("mtime_ns") != str(st.st_mtime_ns):
                log.info("%s: taken from another version of %s; reading the ARPA file instead", path, arpa)
                return None
        bounds: dict[str, float] = {}
        for k, line in enumerate(fh, start=2):
            word, sep, value = line.rstrip("\n").rpartition("\t")
            if not sep:
                raise DataError(str(path), k, "expected WORD<TAB>BOUND")
            bounds[word] = float(value)
    return bounds, float(fields.get("max_backoff", "0.0"))


@dataclass
class KenLMBoundsConfig:
    """Options of ``smt-kenlm bounds``."""

    arpa: str = C.field("", help="the model's ARPA file (plain or .gz)", required=True)
    out: str = C.field("", help="where to write them (default: the sidecar the decoder looks for, "
                                "X.ubounds beside X.arpa / X.binary)")


def bounds_command(cfg: KenLMBoundsConfig, config_path: str | None = None) -> int:
    """``smt-kenlm bounds``: write the per-word upper bounds of an ARPA file to its sidecar."""
    out = Path(cfg.out) if cfg.out else bounds_path(cfg.arpa)
    refuse_overwriting_inputs({"--out": out}, {"--arpa": cfg.arpa, "--config": config_path})
    if not Path(cfg.arpa).is_file():
        raise DataError(f"{cfg.arpa}: no such ARPA file")
    write_bounds(cfg.arpa, out)
    print(f"wrote {out}")
    return 0
