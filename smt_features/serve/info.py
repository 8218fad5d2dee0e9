"""What a loaded system is (:func:`system_info`): its files with their SHA-256, the decoder's features and
weights, the reranking features and weights, the neural models (architecture, checkpoint), versions. JSON-ready;
file hashes are computed once per file (size and modification time unchanged) and cached."""
from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from nmt.core.paths import resolve_checkpoint
from smt_features.decode.decoder import Decoder
from smt_features.model.moses_ini import check_feature_files, read_moses_ini
from smt_features.neural import rerank as R
from smt_features.serve.layout import SystemFiles

_HASHES: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()


def file_record(path: str | Path) -> dict[str, Any]:
    """``{"path", "bytes", "sha256"}`` of a file (the hash cached while its size and mtime stay the same)."""
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    with _LOCK:
        digest = _HASHES.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
        with _LOCK:
            _HASHES[key] = digest
    return {"path": str(p), "bytes": st.st_size, "sha256": digest}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def model_record(kind: str, item: str, checkpoint: str) -> dict[str, Any]:
    """A neural feature's model: folder, architecture and preset (its config.yaml), checkpoint file and hash."""
    name, path = R.parse_named(item, kind)
    rec: dict[str, Any] = {"name": name, "kind": kind, "path": str(Path(path).resolve())}
    if kind == "kenlm":
        rec["file"] = file_record(path)
        return rec
    cfg_file = Path(path) / "config.yaml"
    if cfg_file.is_file():
        cfg = yaml.safe_load(cfg_file.read_text(encoding="utf-8")) or {}
        model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
        rec["arch"] = cfg.get("arch") or model.get("arch")
        rec["preset"] = (cfg.get("data") or {}).get("preset") if isinstance(cfg.get("data"), dict) else None
    rec["checkpoint"] = file_record(resolve_checkpoint(path, checkpoint))
    return rec


def system_info(files: SystemFiles, decoder: Decoder, *, processes: int,
                rerank_weights: Mapping[str, Sequence[float]] | None, attention: str | None,
                word_alignment: bool) -> dict[str, Any]:
    """See the module docstring."""
    ini = read_moses_ini(files.moses_ini)
    weights = decoder.weight_dict()
    features = [{"name": f.name, "type": type(f).__name__, "values": f.num_values, "tuneable": f.tuneable,
                 "weights": weights[f.name]} for f in decoder.features]
    out: dict[str, Any] = {
        "system": files.name,
        "work": str(files.work) if files.work else None,
        "run": files.run,
        "languages": {"source": files.src_lang, "target": files.tgt_lang},
        "text": {"tokenizer": "moses (sacremoses)", "lowercase": files.lowercase,
                 "truecase": {lang: file_record(p) for lang, p in files.truecase.items()}},
        "decoder": {"moses_ini": file_record(files.moses_ini), "search": decoder.search_kind,
                    "worker_processes": processes, "features": features,
                    "files": {name: file_record(p) for name, p in check_feature_files(ini).items()},
                    "options": {"stack": decoder.options.stack_size,
                                "distortion_limit": decoder.options.distortion_limit,
                                "table_limit": decoder.tm.table_limit,
                                "beam_threshold": decoder.options.beam_threshold}},
        "rerank": None,
        "attention": attention,
        "word_alignment": word_alignment,
        "versions": {"rnnsmt": _version("rnnsmt"), "torch": _version("torch"), "kenlm": _version("kenlm"),
                     "python": platform.python_version()},
    }
    if files.reranked and rerank_weights is not None:
        models = [model_record(kind, item, files.checkpoint)
                  for kind in ("lm", "kenlm", "encdec") for item in getattr(files, kind)]
        out["rerank"] = {"weights_file": file_record(files.rerank_weights), "nbest_size": files.nbest_size,
                         "weights": dict(rerank_weights), "features": models}
    return out
