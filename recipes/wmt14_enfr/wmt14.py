#!/usr/bin/env python
"""WMT'14 En→Fr data for ``recipes/wmt14_enfr/run.sh``: download, extract, SGML → text, concatenate.

Subcommands (each prints what it does; ``run.sh --dry-run`` shows the exact calls):

  download --cache DIR [--dry-run]       the public WMT'14 files (FILES) into DIR, atomically
                                         (a temp file, then renamed); files already there are skipped.
                                         ``$WMT14_URL_BASE`` replaces every URL by BASE/NAME (a mirror).
  extract --cache DIR --out DIR          the en-fr members (PARALLEL, DEVTEST) of the archives
  sgm --out FILE IN [IN ...]             the <seg> texts of WMT SGML files, entities unescaped,
                                         concatenated in order (a plain-text IN is copied as is)
  concat --extract DIR --out-dir DIR     the five parallel corpora → pool.en / pool.fr + pool.json
  cuda                                   exit status 0 when torch sees a CUDA device, 1 otherwise

The plain files these write (WORK/corpus/wmt14_enfr/{train,newstest2012-2013,newstest2014}.{en,fr})
are the ``files`` of config.yaml's ``experiment`` section: the generic recipe prepares and uses them.

The URLs and archive member names are those of the WMT'14 translation task page
(https://www.statmt.org/wmt14/translation-task.html) as we know them; they have not been
fetched from here (no internet): check them before a long run.
"""
from __future__ import annotations

import argparse
import gzip
import html
import json
import os
import re
import sys
import tarfile
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from nmt.core.io import atomic_write

STATMT = "http://www.statmt.org"
# file name → URL (statmt.org; the 10^9 corpus is still served from the WMT'10 folder)
FILES: dict[str, str] = {
    "training-parallel-europarl-v7.tgz": f"{STATMT}/wmt13/training-parallel-europarl-v7.tgz",
    "training-parallel-commoncrawl.tgz": f"{STATMT}/wmt13/training-parallel-commoncrawl.tgz",
    "training-parallel-un.tgz": f"{STATMT}/wmt13/training-parallel-un.tgz",
    "training-parallel-nc-v9.tgz": f"{STATMT}/wmt14/training-parallel-nc-v9.tgz",
    "training-giga-fren.tar": f"{STATMT}/wmt10/training-giga-fren.tar",
    "dev.tgz": f"{STATMT}/wmt14/dev.tgz",
    "test-full.tgz": f"{STATMT}/wmt14/test-full.tgz",
}
# corpus → (archive, English member, French member), in concatenation order
PARALLEL: dict[str, tuple[str, str, str]] = {
    "europarl-v7": ("training-parallel-europarl-v7.tgz",
                    "training/europarl-v7.fr-en.en", "training/europarl-v7.fr-en.fr"),
    "commoncrawl": ("training-parallel-commoncrawl.tgz", "commoncrawl.fr-en.en", "commoncrawl.fr-en.fr"),
    "un": ("training-parallel-un.tgz", "un/undoc.2000.fr-en.en", "un/undoc.2000.fr-en.fr"),
    "news-commentary-v9": ("training-parallel-nc-v9.tgz",
                           "training/news-commentary-v9.fr-en.en", "training/news-commentary-v9.fr-en.fr"),
    "giga-fren": ("training-giga-fren.tar", "giga-fren.release2.fixed.en.gz", "giga-fren.release2.fixed.fr.gz"),
}
# tuning / test set → [(archive, English source SGML, French reference SGML)]
DEVTEST: dict[str, list[tuple[str, str, str]]] = {
    "newstest2012-2013": [("dev.tgz", "dev/newstest2012-src.en.sgm", "dev/newstest2012-ref.fr.sgm"),
                          ("dev.tgz", "dev/newstest2013-src.en.sgm", "dev/newstest2013-ref.fr.sgm")],
    "newstest2014": [("test-full.tgz", "test-full/newstest2014-fren-src.en.sgm",
                      "test-full/newstest2014-fren-ref.fr.sgm")],
}
CHUNK = 1 << 20


def url_of(name: str) -> str:
    base = os.environ.get("WMT14_URL_BASE")
    return f"{base.rstrip('/')}/{name}" if base else FILES[name]


def _say(msg: str) -> None:
    print(f"wmt14: {msg}", flush=True)


def _fail(cmd: str, msg: str) -> int:
    print(f"wmt14 {cmd}: error: {msg}", file=sys.stderr, flush=True)
    return 1


# --------------------------------------------------------------------------- download

def _fetch(url: str, dest: Path) -> int:
    """Stream ``url`` into ``dest`` (atomically), checking the length; returns the bytes."""
    t0, done = time.time(), 0
    last = t0
    with urllib.request.urlopen(url, timeout=60) as response, atomic_write(dest, "wb", compress=False) as out:
        total = int(response.headers.get("Content-Length") or 0)
        while block := response.read(CHUNK):
            out.write(block)
            done += len(block)
            if time.time() - last > 30:
                last = time.time()
                pct = f" ({100 * done / total:.0f}%)" if total else ""
                print(f"  {dest.name}: {done / 1e6:,.0f} MB{pct}", file=sys.stderr, flush=True)
        if total and done != total:
            raise OSError(f"truncated: {done} of {total} bytes")
    _say(f"{dest.name}: {done / 1e6:,.1f} MB in {time.time() - t0:.0f} s")
    return done


def cmd_download(args: argparse.Namespace) -> int:
    cache = Path(args.cache).expanduser()
    missing = []
    for name in FILES:
        dest = cache / name
        state = "present, skipped" if dest.is_file() else ("would download" if args.dry_run else "missing, downloading")
        print(f"  {url_of(name)} -> {dest} [{state}]", flush=True)
        if not dest.is_file():
            missing.append(name)
    if args.dry_run or not missing:
        return 0
    cache.mkdir(parents=True, exist_ok=True)
    for name in missing:
        url = url_of(name)
        try:
            _fetch(url, cache / name)
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            return _fail("download", f"cannot download {url}: {reason}\n"
                         f"  No network, or the URL moved (check https://www.statmt.org/wmt14/translation-task.html)."
                         f"\n  Put the files {', '.join(missing)} into {cache} yourself, or set WMT14_URL_BASE to a "
                         f"mirror holding them under these names. Nothing partial was left in {cache}.")
    return 0


# --------------------------------------------------------------------------- extract

def _members() -> dict[str, list[str]]:
    wanted: dict[str, list[str]] = {}
    for archive, en, fr in PARALLEL.values():
        wanted.setdefault(archive, []).extend([en, fr])
    for sets in DEVTEST.values():
        for archive, en, fr in sets:
            wanted.setdefault(archive, []).extend([en, fr])
    return wanted


def _strip_top(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def cmd_extract(args: argparse.Namespace) -> int:
    cache, out = Path(args.cache).expanduser(), Path(args.out)
    for archive, members in _members().items():
        todo = {m for m in members if not (out / m).is_file()}
        if not todo:
            _say(f"{archive}: members present, skipped")
            continue
        path = cache / archive
        if not path.is_file():
            return _fail("extract", f"{path} is missing: run the download step first")
        t0 = time.time()
        seen: list[str] = []
        with tarfile.open(path, "r:*") as tar:
            for info in tar:  # streamed, in archive order; stop once everything is out
                name = _strip_top(info.name)
                seen.append(name)
                if name not in todo or not info.isfile():
                    continue
                dest = out / name
                src = tar.extractfile(info)
                assert src is not None
                with src, atomic_write(dest, "wb", compress=False) as fh:
                    while block := src.read(CHUNK):
                        fh.write(block)
                todo.discard(name)
                _say(f"{archive}: {name} ({info.size / 1e6:,.1f} MB)")
                if not todo:
                    break
        if todo:
            near = [s for s in seen if "fr" in s and not s.endswith("/")][:20]
            return _fail("extract", f"{archive} has no member(s) {sorted(todo)}; members with 'fr' in the name: "
                         f"{near}. Fix PARALLEL/DEVTEST in {__file__}.")
        _say(f"{archive}: extracted in {time.time() - t0:.0f} s")
    return 0


# --------------------------------------------------------------------------- SGML → text

_SEG = re.compile(r"<seg\b[^>]*>(.*?)</seg>", re.S | re.I)
# characters Python's str.splitlines() treats as line ends: never inside a line of ours
_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\n\t]")


def clean_line(text: str) -> str:
    """One line: line-breaking characters and tabs → space, outer whitespace stripped."""
    return _BREAKS.sub(" ", text).strip()


def sgm_segments(text: str) -> list[str]:
    """The texts of the <seg> elements in order, entities unescaped, one line each."""
    return [clean_line(html.unescape(m.group(1))) for m in _SEG.finditer(text)]


def cmd_sgm(args: argparse.Namespace) -> int:
    lines: list[str] = []
    for name in args.inputs:
        text = Path(name).read_text(encoding="utf-8")
        segs = sgm_segments(text) if name.endswith((".sgm", ".xml")) else [clean_line(s) for s in text.splitlines()]
        if not segs:
            return _fail("sgm", f"{name}: no <seg> elements")
        empty = [i + 1 for i, s in enumerate(segs) if not s]
        if empty:
            return _fail("sgm", f"{name}: empty segment(s) {empty[:10]} (dev/test sets must have no empty lines)")
        lines += segs
    out = Path(args.out)
    with atomic_write(out, compress=False) as fh:
        fh.write("".join(s + "\n" for s in lines))
    _say(f"{out}: {len(lines)} segments from {len(args.inputs)} file(s)")
    return 0


# --------------------------------------------------------------------------- concatenate

def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="\n") if path.suffix == ".gz" else \
        open(path, encoding="utf-8", errors="replace", newline="\n")


def cmd_concat(args: argparse.Namespace) -> int:
    extract, out = Path(args.extract), Path(args.out_dir)
    stats_path = out / "pool.json"
    if stats_path.is_file() and (out / "pool.en").is_file() and (out / "pool.fr").is_file():
        _say(f"{stats_path} present, skipped")
        return 0
    stats: dict[str, dict[str, int]] = {}
    t0 = time.time()
    try:
        with ExitStack() as stack:  # both sides are committed together, or neither
            out_en = stack.enter_context(atomic_write(out / "pool.en", compress=False))
            out_fr = stack.enter_context(atomic_write(out / "pool.fr", compress=False))
            for corpus, (_, en_member, fr_member) in PARALLEL.items():
                en_path, fr_path = extract / en_member, extract / fr_member
                for p in (en_path, fr_path):
                    if not p.is_file():
                        raise FileNotFoundError(f"{p} is missing: run the extract step first")
                n = kept = words_en = words_fr = 0
                with _open(en_path) as fe, _open(fr_path) as ff:
                    while True:
                        e, f = fe.readline(), ff.readline()
                        if not e or not f:
                            if e or f:
                                longer = en_path if e else fr_path
                                raise ValueError(f"{corpus}: {longer} has more lines than its other side "
                                                 f"(after {n} pairs)")
                            break
                        n += 1
                        e, f = clean_line(e), clean_line(f)
                        if not e or not f:
                            continue
                        kept += 1
                        words_en += len(e.split())
                        words_fr += len(f.split())
                        out_en.write(e + "\n")
                        out_fr.write(f + "\n")
                stats[corpus] = {"pairs": n, "kept": kept, "dropped_empty": n - kept,
                                 "words_en": words_en, "words_fr": words_fr}
                _say(f"{corpus}: {kept:,} pairs ({n - kept:,} with an empty side dropped), "
                     f"{words_en:,} / {words_fr:,} words en / fr")
    except (OSError, ValueError) as err:
        return _fail("concat", str(err))
    total = {k: sum(s[k] for s in stats.values()) for k in ("pairs", "kept", "words_en", "words_fr")}
    record = {"corpora": stats, "total": total, "seconds": round(time.time() - t0, 1),
              "words": "whitespace-separated tokens of the raw text"}
    with atomic_write(stats_path) as fh:
        fh.write(json.dumps(record, indent=2) + "\n")
    _say(f"pool: {total['kept']:,} pairs, {total['words_en']:,} / {total['words_fr']:,} words en / fr")
    return 0


def cmd_cuda(args: argparse.Namespace) -> int:
    import torch

    return 0 if torch.cuda.is_available() else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("download")
    p.add_argument("--cache", required=True)
    p.add_argument("--dry-run", action="store_true", help="list URLs and destinations, fetch nothing")
    p = sub.add_parser("extract")
    p.add_argument("--cache", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("sgm")
    p.add_argument("--out", required=True)
    p.add_argument("inputs", nargs="+")
    p = sub.add_parser("concat")
    p.add_argument("--extract", required=True)
    p.add_argument("--out-dir", required=True)
    sub.add_parser("cuda")
    args = parser.parse_args(argv)
    return {"download": cmd_download, "extract": cmd_extract, "sgm": cmd_sgm, "concat": cmd_concat,
            "cuda": cmd_cuda}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
