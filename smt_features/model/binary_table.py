"""The binarized, memory-mapped Moses phrase table (``T.gz.bin``): built once by streaming ``T.gz``, opened at once.

File layout (little-endian)::

    [0, 4096)       header: MAGIC, then JSON (format, the source table's name/size/mtime_ns and
                    sample_blake2b (a hash of its first and last MiB), num_scores, num_pairs,
                    num_groups, max_src_len, index offsets, payload_blake2b: a hash of every byte
                    from 4096 to the end), NUL-padded
    [4096, I)       groups in table order; a group = the consecutive lines of one source phrase:
                    u32 len(src), u32 n lines, u32 len(targets), src (UTF-8, words joined by ' '),
                    targets (UTF-8, one per line joined by '\\n', words joined by ' '),
                    n × num_scores float64 (the scores as the strict reader parses them)
    [I, I + 8G)     u64 hash of each group's source phrase (blake2b, 8 bytes), sorted
    [I + 8G, …)     u64 file offset of each group, in the order of the hashes (ties: file order)

Building (:func:`binarize_table`) reads the table once with the strict reader
(:mod:`nmt.core.formats.phrase_table_reader`, so a bad line is refused as ``FILE:LINE``),
writes the groups as they come and spills ``(hash, offset)`` pairs into
:data:`BUCKETS` bucket files by the hash's top byte; each bucket is then sorted
on its own, so memory is bounded by a buffer and one bucket, not by the table.
A lookup (:meth:`BinaryPhraseTable.get`) bisects an in-memory fence of every
:data:`FENCE_STRIDE`-th hash, binary-searches the one block of hashes it points to
(one read), and reads every group of the same source phrase (the source bytes are compared, so a hash
collision is harmless), giving the table-order list the in-memory table gives.

Staleness (:func:`check_current`) is decided from the table's content, not its modification
time alone: a sidecar is current when the table's size and mtime are those recorded (the fast
path), or else when its size and the hash of its first and last :data:`SAMPLE_BYTES` are (a
model folder copied without keeping mtimes). A sidecar written before ``sample_blake2b``
existed falls back to size + mtime. Opening a sidecar does not hash it (start-up time);
:func:`verify_payload` (``smt-binarize-table --check``) reads it whole against ``payload_blake2b``.
"""
from __future__ import annotations

import bisect
import hashlib
import json
import mmap
import os
import struct
import sys
import tempfile
import weakref
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from nmt.core.io import DataError, atomic_write
from nmt.core.formats.phrase_table_reader import PhraseTableReader

MAGIC = b"SMT-BINARY-PHRASE-TABLE\n"
FORMAT = 1
HEADER_SIZE = 4096
BUCKETS = 256
#: (hash, offset) pairs held in memory before they are spilled to the bucket files
SPILL_EVERY = 1 << 20
SUFFIX = ".bin"
#: bytes hashed at each end of the table for its content stamp
SAMPLE_BYTES = 1 << 20
#: one hash in this many is held in memory to find a lookup's block of hashes (8 × this many bytes, one read)
FENCE_STRIDE = 512
_GROUP = struct.Struct("<III")
_PAIR = np.dtype([("h", "<u8"), ("o", "<u8")])


def sidecar_path(table: str | os.PathLike[str]) -> Path:
    """Where the binarized form of ``table`` lives: ``T.gz`` → ``T.gz.bin``."""
    return Path(str(table) + SUFFIX)


def phrase_hash(src_bytes: bytes) -> int:
    """The 64-bit key of a source phrase (its words joined by single spaces, UTF-8)."""
    return int.from_bytes(hashlib.blake2b(src_bytes, digest_size=8).digest(), "little")


def content_sample(table: str | os.PathLike[str], size: int | None = None) -> str:
    """blake2b (hex) of the first and last :data:`SAMPLE_BYTES` of ``table`` (the whole file when it is smaller
    than twice that): what tells a copied table (new mtime) from an edited one, without reading it all."""
    size = os.stat(table).st_size if size is None else size
    h = hashlib.blake2b(digest_size=16)
    with open(table, "rb") as fh:
        if size <= 2 * SAMPLE_BYTES:
            h.update(fh.read())
        else:
            h.update(fh.read(SAMPLE_BYTES))
            fh.seek(size - SAMPLE_BYTES)
            h.update(fh.read(SAMPLE_BYTES))
    return h.hexdigest()


def source_stamp(table: str | os.PathLike[str], *, sample: bool = True) -> dict:
    """What identifies the table a sidecar was built from: its name, size, modification time and (``sample``)
    the hash of its first and last MiB."""
    st = os.stat(table)
    stamp = {"name": Path(table).name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if sample:
        stamp["sample_blake2b"] = content_sample(table, st.st_size)
    return stamp


class _HashingWriter:
    """A file opened for writing whose bytes written from its creation on go through a blake2b (the payload
    checksum); ``tell`` as the file's."""

    def __init__(self, fh) -> None:
        self._fh, self.hash = fh, hashlib.blake2b(digest_size=16)

    def write(self, data) -> int:
        self.hash.update(data)
        return self._fh.write(data)

    def tell(self) -> int:
        return self._fh.tell()


def binarize_table(table: str | os.PathLike[str], output: str | os.PathLike[str], *, progress: bool = False,
                   spill_every: int = SPILL_EVERY) -> dict:
    """Write the binarized form of the Moses table ``table`` to ``output`` (atomically); returns its header."""
    stamp = source_stamp(table)
    reader = PhraseTableReader(table, keep_raw=False)
    out_dir = Path(output).resolve().parent
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".binarize.") as tmp, \
            atomic_write(output, "wb", compress=False) as fh:
        bucket_files = [open(Path(tmp) / f"{b:03d}", "wb") for b in range(BUCKETS)]
        try:
            fh.write(b"\0" * HEADER_SIZE)
            out = _HashingWriter(fh)  # everything after the header
            stats = _write_groups(reader, out, bucket_files, spill_every, progress, table)
        finally:
            for f in bucket_files:
                f.close()
        index_offset = _pad8(out)
        offsets_path = Path(tmp) / "offsets"
        with open(offsets_path, "wb") as off_fh:
            for b in range(BUCKETS):
                pairs = np.fromfile(Path(tmp) / f"{b:03d}", dtype=_PAIR)
                pairs.sort(order=("h", "o"))
                out.write(pairs["h"].astype("<u8").tobytes())
                off_fh.write(pairs["o"].astype("<u8").tobytes())
                del pairs
        with open(offsets_path, "rb") as off_fh:
            while chunk := off_fh.read(1 << 22):
                out.write(chunk)
        header = {"format": FORMAT, "source": stamp, "num_scores": reader.num_scores or 0, **stats,
                  "index_offset": index_offset, "payload_blake2b": out.hash.hexdigest()}
        fh.seek(0)
        fh.write(_header_bytes(header))
    return header


def _pad8(fh) -> int:
    pos = fh.tell()
    if pos % 8:
        fh.write(b"\0" * (8 - pos % 8))
    return fh.tell()


def _header_bytes(header: dict) -> bytes:
    data = MAGIC + json.dumps(header, sort_keys=True).encode("utf-8") + b"\n"
    if len(data) > HEADER_SIZE:  # pragma: no cover - a file name of thousands of bytes
        raise ValueError("binarized table header too long")
    return data + b"\0" * (HEADER_SIZE - len(data))


def _write_groups(reader: PhraseTableReader, fh, bucket_files, spill_every: int, progress: bool, table) -> dict:
    """Stream the table into groups (written to ``fh``) and spill ``(hash, offset)`` pairs to the buckets."""
    from tqdm import tqdm

    pending = (array("Q"), array("Q"))  # hashes, offsets: 16 bytes a group until spilled
    num_pairs = num_groups = max_src_len = 0
    cur_src = None
    tgts: list[str] = []
    scores: list[float] = []

    def flush_group() -> None:
        nonlocal num_groups
        src_b = " ".join(cur_src).encode("utf-8")
        tgt_b = "\n".join(tgts).encode("utf-8")
        pending[0].append(phrase_hash(src_b))
        pending[1].append(fh.tell())
        fh.write(_GROUP.pack(len(src_b), len(tgts), len(tgt_b)))
        fh.write(src_b)
        fh.write(tgt_b)
        fh.write(np.asarray(scores, dtype="<f8").tobytes())
        num_groups += 1
        if len(pending[0]) >= spill_every:
            _spill(pending, bucket_files)

    bar = tqdm(desc=f"binarizing {Path(table).name}", unit=" lines", unit_scale=True, disable=not progress,
               mininterval=1.0)
    for e in reader:
        if e.src is not cur_src and e.src != cur_src:
            if cur_src is not None:
                flush_group()
            cur_src, tgts, scores = e.src, [], []
            max_src_len = max(max_src_len, len(e.src))
        tgts.append(" ".join(e.tgt))
        scores.extend(e.scores)
        num_pairs += 1
        if not num_pairs % 65536:
            bar.update(65536)
    if cur_src is not None:
        flush_group()
    bar.update(num_pairs % 65536)
    bar.close()
    _spill(pending, bucket_files)
    return {"num_pairs": num_pairs, "num_groups": num_groups, "max_src_len": max_src_len}


def _spill(pending: tuple[array, array], bucket_files) -> None:
    if not pending[0]:
        return
    pairs = np.empty(len(pending[0]), dtype=_PAIR)
    pairs["h"] = np.frombuffer(pending[0], dtype=np.uint64)
    pairs["o"] = np.frombuffer(pending[1], dtype=np.uint64)
    for buf in pending:
        del buf[:]
    buckets = (pairs["h"] >> np.uint64(56)).astype(np.int64)
    order = np.argsort(buckets, kind="stable")
    pairs, buckets = pairs[order], buckets[order]
    bounds = np.searchsorted(buckets, np.arange(BUCKETS + 1))
    for b in range(BUCKETS):
        if bounds[b] < bounds[b + 1]:
            bucket_files[b].write(pairs[bounds[b]:bounds[b + 1]].tobytes())


def read_header(path: str | os.PathLike[str]) -> dict:
    """The JSON header of a binarized table (``DataError`` when the file is not one)."""
    with open(path, "rb") as fh:
        head = fh.read(HEADER_SIZE)
    if not head.startswith(MAGIC) or len(head) < HEADER_SIZE:
        raise DataError(f"{path}: not a binarized phrase table (rebuild it with smt-binarize-table)")
    try:
        header = json.loads(head[len(MAGIC):].split(b"\n", 1)[0])
    except ValueError:
        raise DataError(f"{path}: corrupt binarized phrase table header (rebuild it with smt-binarize-table)") \
            from None
    if header.get("format") != FORMAT:
        raise DataError(f"{path}: binarized phrase table format {header.get('format')!r}, this decoder reads "
                        f"format {FORMAT}; rebuild it with smt-binarize-table")
    return header


def check_current(path: str | os.PathLike[str], table: str | os.PathLike[str], header: dict) -> None:
    """Refuse a sidecar that was not built from ``table`` as it is now.

    Current: same size and mtime (fast path), or same size and same hash of the first and last MiB
    (``sample_blake2b``; a copy that did not keep mtimes). A sidecar without ``sample_blake2b`` (written by
    an older smt-binarize-table) needs the same size and mtime, as before."""
    now = source_stamp(table, sample=False)
    was = header.get("source", {})
    rebuild = f"rebuild it with `smt-binarize-table --table {table}` or delete it"
    if was.get("size") != now["size"]:
        raise DataError(f"{path}: stale binarized phrase table: built from {table} of {was.get('size')} bytes, "
                        f"which is now {now['size']} bytes; {rebuild}")
    if was.get("mtime_ns") == now["mtime_ns"]:
        return
    if "sample_blake2b" not in was:
        raise DataError(f"{path}: stale binarized phrase table: built from {table} of {was.get('size')} bytes "
                        f"(mtime_ns {was.get('mtime_ns')}), which is now {now['size']} bytes (mtime_ns "
                        f"{now['mtime_ns']}; this sidecar predates content stamps, so the time decides); {rebuild}")
    if content_sample(table, now["size"]) != was["sample_blake2b"]:
        raise DataError(f"{path}: stale binarized phrase table: {table} has the same size ({now['size']} bytes) "
                        f"but not the content it was built from (the hash of its first and last MiB differs); "
                        f"{rebuild}")


def verify_payload(path: str | os.PathLike[str], header: dict | None = None) -> None:
    """Read the whole sidecar and compare its bytes after the header with ``payload_blake2b`` (``DataError``
    naming ``path`` when they differ, when the file is truncated, or when the sidecar has no checksum)."""
    header = read_header(path) if header is None else header
    want = header.get("payload_blake2b")
    if want is None:
        raise DataError(f"{path}: binarized phrase table without a payload checksum (written by an older "
                        f"smt-binarize-table); rebuild it to check it")
    size = os.stat(path).st_size
    expected = int(header["index_offset"]) + 16 * int(header["num_groups"])
    if size != expected:
        raise DataError(f"{path}: corrupt binarized phrase table: {size} bytes, its header says {expected}; "
                        f"rebuild it with smt-binarize-table")
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        fh.seek(HEADER_SIZE)
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    if h.hexdigest() != want:
        raise DataError(f"{path}: corrupt binarized phrase table: its content does not match its checksum "
                        f"(payload_blake2b); rebuild it with smt-binarize-table")


class _SortedKeys:
    """The sorted u64 column of source-phrase hashes in the file, searched with a small in-memory fence.

    ``fence`` holds every :data:`FENCE_STRIDE`-th hash (8 bytes per stride: 16 bytes per thousand groups). A
    search bisects the fence, then reads the one block of :data:`FENCE_STRIDE` hashes where the key can be, with
    a single ``os.pread`` (4 KiB), instead of one ``pread`` per bisection step (about 2 log2 G of them per
    lookup). Reads go through ``pread``, not the mapping, so that the hash pages do not stay in this process's
    RSS."""

    def __init__(self, fd: int, start: int, n: int) -> None:
        self._fd, self._start, self._n = fd, start, n
        self._fence = [self._read(i, 1)[0] for i in range(0, n, FENCE_STRIDE)]

    def _read(self, i: int, count: int) -> array:
        """``count`` hashes from index ``i`` (fewer at the end of the column)."""
        count = max(0, min(count, self._n - i))
        values = array("Q", os.pread(self._fd, 8 * count, self._start + 8 * i))
        if sys.byteorder != "little":
            values.byteswap()
        return values

    def equal_range(self, key: int) -> range:
        """The indices of the hashes equal to ``key`` (``bisect_left`` … ``bisect_right`` of the column)."""
        k = bisect.bisect_left(self._fence, key)  # fence[k-1] < key <= fence[k]: the first equal one is after k-1
        base = max(k - 1, 0) * FENCE_STRIDE
        block = self._read(base, FENCE_STRIDE)
        lo = base + bisect.bisect_left(block, key)
        hi = base + bisect.bisect_right(block, key)
        while hi == base + len(block) and hi < self._n:  # the key at the next block's start, or a run past it
            base = hi
            block = self._read(base, FENCE_STRIDE)
            hi = base + bisect.bisect_right(block, key)
        return range(lo, hi)


class BinaryPhraseTable:
    """A binarized table, memory-mapped; the interface of :class:`smt_features.decode.table.PhraseTable`
    (``get``, ``num_scores``, ``max_src_len``, ``path``, ``len``, ``entries``) without holding the entries."""

    def __init__(self, path: str | os.PathLike[str], *, source: str | os.PathLike[str] | None = None) -> None:
        self.bin_path = str(path)
        header = read_header(path)
        if source is not None:
            check_current(path, source, header)
        self.header = header
        self.path = str(source) if source is not None else str(path)
        self.num_scores = int(header["num_scores"])
        self.num_pairs = int(header["num_pairs"])
        self.max_src_len = int(header["max_src_len"])
        n = int(header["num_groups"])
        with open(path, "rb") as fh:
            self._mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # for the sequential iter_groups
        start = int(header["index_offset"])
        if len(self._mm) != start + 16 * n:
            raise DataError(f"{path}: truncated binarized phrase table (rebuild it with smt-binarize-table)")
        # lookups read with pread, not through the mapping: a mapped page (and the kernel's fault-around of
        # its neighbours) would stay in this process's RSS, which would then grow with the table's size
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        self._n = n
        self._hashes = _SortedKeys(self._fd, start, n)
        self._offsets_at = start + 8 * n

    def _group(self, off: int) -> tuple[bytes, int, int, int]:
        """(source bytes, line count, start of the targets, length of the targets) of the group at ``off``."""
        ls, n, lt = _GROUP.unpack_from(self._mm, off)
        p = off + _GROUP.size
        return self._mm[p:p + ls], n, p + ls, lt

    def _entries_at(self, n: int, tp: int, lt: int) -> list[tuple[tuple[str, ...], tuple[float, ...]]]:
        tgts = self._mm[tp:tp + lt].decode("utf-8").split("\n")
        k = self.num_scores
        vals = struct.unpack_from(f"<{n * k}d", self._mm, tp + lt)
        return [(tuple(t.split(" ")), vals[i * k:(i + 1) * k]) for i, t in enumerate(tgts)]

    def get(self, src: tuple[str, ...]):
        """``[(target tuple, scores tuple), …]`` of ``src`` in table order, or ``None``."""
        key = " ".join(src).encode("utf-8")
        h = phrase_hash(key)
        found = None
        k = self.num_scores
        for i in self._hashes.equal_range(h):
            off = int.from_bytes(os.pread(self._fd, 8, self._offsets_at + 8 * i), "little")
            ls, n, lt = _GROUP.unpack(os.pread(self._fd, _GROUP.size, off))
            body = os.pread(self._fd, ls + lt + 8 * n * k, off + _GROUP.size)
            if body[:ls] == key:
                tgts = body[ls:ls + lt].decode("utf-8").split("\n")
                vals = struct.unpack_from(f"<{n * k}d", body, ls + lt)
                found = (found or []) + [(tuple(t.split(" ")), vals[j * k:(j + 1) * k]) for j, t in enumerate(tgts)]
        return found

    def iter_groups(self) -> Iterator[tuple[tuple[str, ...], list]]:
        """Every group ``(source tuple, entries)`` in table order (a source split over several runs of lines
        comes once per run)."""
        off, end = HEADER_SIZE, int(self.header["index_offset"])
        k = self.num_scores
        while off + _GROUP.size <= end and self._n:
            src_b, n, tp, lt = self._group(off)
            if not n:
                break
            yield tuple(src_b.decode("utf-8").split(" ")), self._entries_at(n, tp, lt)
            off = tp + lt + 8 * n * k

    @property
    def entries(self) -> "_LazyEntries":
        return _LazyEntries(self)

    def __len__(self) -> int:
        return self.num_pairs


class _LazyEntries(Mapping):
    """``table.entries`` of a binarized table: looked up or walked on demand, never held."""

    def __init__(self, table: BinaryPhraseTable) -> None:
        self._t = table

    def __getitem__(self, src):
        got = self._t.get(tuple(src))
        if got is None:
            raise KeyError(src)
        return got

    def __iter__(self):
        return (src for src, _ in self._t.iter_groups())

    def items(self):  # type: ignore[override]
        return self._t.iter_groups()

    def __len__(self) -> int:
        return int(self._t.header["num_groups"])
