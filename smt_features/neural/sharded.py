"""The shard launcher of ``smt-rescore-sharded``: run ``smt-rescore`` as N line-range shards and merge them in order.

It takes ``smt-rescore``'s options (:class:`~smt_features.neural.rescore_config.RescoreConfig`, the same
flags and ``--config`` keys) plus its own (:class:`LaunchConfig`). Example (4 local processes, 1 thread each)::

    smt-rescore-sharded --shards 4 --output pt.rnn.gz --table pt.gz --model work/model --threads 1 --resume

Example (4 hosts sharing the file system; ``{i}`` is the shard number)::

    smt-rescore-sharded --shards 4 --output pt.rnn.gz --launcher "ssh node{i} cd $PWD &&" --table ... --model ...

Shard i runs ``smt-rescore OPTIONS --shard i/N --output OUTPUT.shard-i-of-N[.gz]`` (OPTIONS: the
resolved options that differ from their defaults; its log in
``….log``) and, on success, leaves ``….done``. When all N are done, the parts are concatenated
in shard order into OUTPUT (atomically; gzip members concatenate into one valid gzip file), which
is byte-identical to a single ``smt-rescore`` run with the same settings, and the parts are
removed (``--keep-parts`` keeps them). Re-running the same command skips shards already done;
with ``--resume`` an interrupted shard continues where it stopped. ``--dry-run`` prints
the shard commands (e.g. for a batch scheduler) and the merge step instead of running them.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nmt.core.config import field, flag_name
from nmt.core.io import atomic_write
from nmt.core.errors import EXIT_BAD_INPUT, UsageError, refuse_overwriting_inputs
from nmt.core.paths import resolve_checkpoint

from smt_features.neural.output_lock import OutputLock, remove_stale_temps
from smt_features.neural.rescore import write_rescored_ini
from smt_features.neural.rescore_config import RescoreConfig, appended_columns, check_paths


@dataclass
class LaunchConfig:
    shards: int | None = field(None, required=True, help="number of line-range shards N")
    launcher: str = field("", help="command prefix per shard, {i} = shard number (e.g. 'ssh node{i}'); "
                                   "default: local processes")
    keep_parts: bool = field(False, help="keep the shard outputs and logs after merging")
    dry_run: bool = field(False, help="print the shard commands and exit")


def rescore_flags(cfg: RescoreConfig) -> list[str]:
    """``cfg``'s options that differ from their defaults as ``smt-rescore`` flags (``--output`` and
    ``--shard`` left out: the launcher sets them per shard)."""
    out: list[str] = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name in ("output", "shard") or value == f.default:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else repr(value) if isinstance(
            value, float) else str(value)
        out += [flag_name(f.name), text]
    return out


def part_path(output: str | Path, i: int, n: int) -> Path:
    out = Path(output)
    if out.name.endswith(".gz"):
        return out.with_name(f"{out.name[:-3]}.shard-{i}-of-{n}.gz")
    return out.with_name(f"{out.name}.shard-{i}-of-{n}")


def shard_command(cfg: RescoreConfig, i: int, n: int, launcher: str = "") -> list[str]:
    """The command line of shard ``i`` of ``n``: ``launcher`` (``{i}`` filled in, split like a shell
    would) + ``python -m smt_features.cli.rescore OPTIONS --shard i/n --output PART``."""
    prefix = shlex.split(launcher.replace("{i}", str(i))) if launcher else []
    return [*prefix, sys.executable, "-m", "smt_features.cli.rescore", *rescore_flags(cfg), "--shard", f"{i}/{n}",
            "--output", str(part_path(cfg.output, i, n))]


def merge_parts(output: str | Path, n: int) -> int:
    """Concatenate the N parts in order into ``output`` (atomically); returns the bytes written."""
    parts = [part_path(output, i, n) for i in range(n)]
    missing = [str(p) for p in parts if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"missing shard output(s): {', '.join(missing)}")
    total = 0
    with atomic_write(output, "wb", compress=False) as dst:   # the parts are gzip members already
        for p in parts:
            with open(p, "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 20)
            total += p.stat().st_size
    return total


def _done_marker(output: str | Path, i: int, n: int) -> Path:
    return Path(f"{part_path(output, i, n)}.done")


def run_shards(cfg: RescoreConfig, n: int, *, launcher: str = "", keep_parts: bool = False,
               poll: float = 0.5) -> None:
    """Run the missing shards concurrently, wait for all, merge; ``RuntimeError`` names a failed shard
    and its log (the other shards' outputs are kept for a re-run)."""
    output = cfg.output
    procs: dict[int, tuple[subprocess.Popen, Path, object]] = {}
    for i in range(n):
        if _done_marker(output, i, n).is_file() and part_path(output, i, n).is_file():
            print(f"shard {i}/{n}: already done ({part_path(output, i, n)})", file=sys.stderr)
            continue
        log_path = Path(f"{part_path(output, i, n)}.log")
        log = open(log_path, "w", encoding="utf-8")
        cmd = shard_command(cfg, i, n, launcher)
        print(f"shard {i}/{n}: {shlex.join(cmd)}  (log {log_path})", file=sys.stderr)
        procs[i] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log_path, log)
    failed = []
    bad_input = []  # the messages of shards that refused their input (exit status 2)
    start = time.perf_counter()
    while procs:
        for i in list(procs):
            proc, log_path, log = procs[i]
            rc = proc.poll()
            if rc is None:
                continue
            log.close()  # type: ignore[attr-defined]
            del procs[i]
            if rc == 0 and part_path(output, i, n).is_file():
                _done_marker(output, i, n).write_text("ok\n", encoding="utf-8")
                print(f"shard {i}/{n}: done after {time.perf_counter() - start:.0f} s", file=sys.stderr)
            else:
                lines = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
                said = [ln[len("smt-rescore: "):] for ln in lines if ln.startswith("smt-rescore: ")]
                if rc == EXIT_BAD_INPUT and said:
                    bad_input.append(f"{said[-1]} (shard {i}/{n}, log {log_path})")
                tail = lines[-3:]
                failed.append(f"shard {i}/{n} exited with status {rc} (log {log_path}: {' | '.join(tail)})")
        if procs:
            time.sleep(poll)
    if failed and len(bad_input) == len(failed):  # the input is at fault, not the run: exit 2 with the shard's FILE:LINE
        raise UsageError("; ".join(bad_input))
    if failed:
        raise RuntimeError("; ".join(failed) + " — the finished shards are kept; run the same command again")
    size = merge_parts(output, n)
    print(f"merged {n} shards in order into {output} ({size:,} bytes)", file=sys.stderr)
    if not keep_parts:
        for i in range(n):
            for p in (part_path(output, i, n), _done_marker(output, i, n), Path(f"{part_path(output, i, n)}.log"),
                      Path(f"{part_path(output, i, n)}.rescore.json")):
                p.unlink(missing_ok=True)


def check_inputs(cfg: RescoreConfig, n: int) -> None:
    """What can be judged before the shards start: the table and models exist, the table is not empty, no
    output (the merged table, a shard's part) is an input. Malformed lines are the shards' to report."""
    ckpts = [resolve_checkpoint(cfg.model, cfg.checkpoint)]
    if cfg.reverse_model:
        ckpts.append(resolve_checkpoint(cfg.reverse_model, cfg.checkpoint))
    check_paths(cfg, ckpts)
    for i in range(n):
        part = str(part_path(cfg.output, i, n))
        refuse_overwriting_inputs({f"shard {i}'s output": part}, {"--table": cfg.table, "--moses-ini": cfg.moses_ini})
    if os.path.getsize(cfg.table) == 0:
        raise UsageError(f"{cfg.table}: empty phrase table (no lines to rescore)")


def rescore_sharded(cfg: RescoreConfig, launch: LaunchConfig) -> None:
    """Run ``cfg`` as ``launch.shards`` shards and merge them into ``cfg.output`` (see the module docstring);
    with ``dry_run``, print the shard commands and the merge step instead."""
    n = launch.shards
    if n < 1:
        raise UsageError("--shards must be >= 1")
    if cfg.shard:
        raise UsageError("--shard: the launcher sets --output and --shard of each shard itself")
    if launch.dry_run:
        for i in range(n):
            print(shlex.join(shard_command(cfg, i, n, launch.launcher)))
        parts = " ".join(shlex.quote(str(part_path(cfg.output, i, n))) for i in range(n))
        print(f"cat {parts} > {shlex.quote(cfg.output)}")
        return
    check_inputs(cfg, n)
    with OutputLock(cfg.output, prog="smt-rescore-sharded"):  # one launcher per merged output
        remove_stale_temps(cfg.output, sidecars=(".moses.ini",))
        # a shard that fails on bad input: exit 2 with its message; any other failure: RuntimeError, exit 1
        run_shards(cfg, n, launcher=launch.launcher, keep_parts=launch.keep_parts)
        if cfg.moses_ini:  # the merged table's decoder configuration (the shards themselves write none)
            path = write_rescored_ini(cfg.moses_ini, cfg.output, len(appended_columns(cfg)), cfg.moses_ini_out)
            print(f"decoder configuration: {path}", file=sys.stderr)
