"""The smt-serve process: a file that fails to load stops it at start (``smt-serve: FILE: reason``, exit 2); on
SIGTERM it refuses new connections, finishes the request in flight and exits 0."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.refusal import refused
from tests.smt.serve.serve_fixtures import build_tiny_experiment

from smt_features.cli.serve import cli_main as serve_main

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return build_tiny_experiment(tmp_path_factory.mktemp("serve"))


def _copy(work: Path, tmp: Path) -> Path:
    dst = tmp / "work"
    shutil.copytree(work, dst)
    for ini in dst.rglob("moses.tuned.ini"):  # the copy's tables and LM, not the original's
        ini.write_text(ini.read_text(encoding="utf-8").replace(str(work), str(dst)), encoding="utf-8")
    return dst


def test_a_model_that_fails_to_load_stops_the_server(work: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    async def started(*args) -> int:
        raise AssertionError("the server started: the system loaded")  # fail, rather than serve for ever

    monkeypatch.setattr("smt_features.serve.server._serve", started)
    bad = _copy(work, tmp_path)
    args = ["--work", str(bad), "--system", "+all+RNNsearch", "--port", "0", "--threads", "1"]
    weights = bad / "rerank" / "allrs.1" / "weights"
    good = weights.read_text(encoding="utf-8")
    weights.write_text("[weight]\nLM0= x\n", encoding="utf-8")
    assert refused(capsys, f"^smt-serve: {re.escape(str(weights))}:2: ", serve_main(args))
    weights.write_text(good.replace("RNNS0= 12.0\n", ""), encoding="utf-8")
    assert refused(capsys, f"^smt-serve: {re.escape(str(weights))}: no weights for RNNS0", serve_main(args))
    weights.write_text(good, encoding="utf-8")
    ckpt = bad / "rnnsearch" / "model" / "checkpoint_last.pt"
    ckpt.write_bytes(ckpt.read_bytes()[:200])  # truncated
    assert refused(capsys, f"^smt-serve: {re.escape(str(ckpt))}: ", serve_main(args), "checkpoint")
    ckpt.unlink()
    assert refused(capsys, f"^smt-serve: {re.escape(str(ckpt))}: checkpoint not found", serve_main(args))
    (bad / "smt" / "lm" / "fr.arpa").write_text("\\data\\\nngram 1=2\n", encoding="utf-8")
    assert refused(capsys, "^smt-serve: .*moses.tuned.ini:[0-9]+: cannot load KenLM model .*fr.arpa",
                   serve_main(["--work", str(bad), "--port", "0"]))
    shutil.rmtree(bad / "smt" / "tune.1")
    assert refused(capsys, f"^smt-serve: {re.escape(str(bad / 'smt' / 'tune.1' / 'moses.tuned.ini'))}: no tuned",
                   serve_main(["--work", str(bad), "--port", "0"]))
    assert refused(capsys, "unknown system '\\+RNN\\+XX'", serve_main(["--work", str(work), "--system", "+RNN+XX"]))
    assert refused(capsys, "--work names the system's files; do not also give --moses-ini",
                   serve_main(["--work", str(work), "--moses-ini", "x.ini"]))


def _read_until(stream, needle: str, lines: list[str]) -> str:
    for line in stream:
        lines.append(line)
        if needle in line:
            return line
    raise AssertionError(f"the server ended before {needle!r}: {''.join(lines)[-3000:]}")


@pytest.mark.parametrize("how", ["SIGTERM to the server", "SIGINT to its process group", "SIGTERM to its process group"])
def test_sigterm_finishes_the_request_in_flight(work: Path, how: str) -> None:
    """SIGTERM to the server, or to the server and its decoder workers (a service manager's stop; Ctrl-C sends SIGINT
    so): it finishes the request whose body is still arriving, then stops (no connection accepted), exit 0."""
    proc = subprocess.Popen([sys.executable, "-m", "smt_features.cli.serve", "--work", str(work), "--port", "0",
                             "--threads", "2"], stderr=subprocess.PIPE, text=True, start_new_session=True)
    sig = signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGINT
    group = how.endswith("process group")
    lines: list[str] = []
    try:
        ready = _read_until(proc.stderr, "smt-serve: serving", lines)
        port = int(ready.split("http://127.0.0.1:")[1].split("/")[0])
        body = json.dumps({"text": "S3 s1 s2."}).encode("utf-8")
        conn = socket.create_connection(("127.0.0.1", port), timeout=120)
        conn.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:5])  # the request is in flight
        assert json.loads(_health(port))["in_flight"] == 2  # the request above, and this one
        if group:
            os.killpg(proc.pid, sig)  # the server and its decoder workers
        else:
            proc.send_signal(sig)
        _read_until(proc.stderr, f"{sig.name}: no new connections; finishing 1 request(s) in flight", lines)
        conn.sendall(body[5:])
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
        conn.close()
        head, data = answer.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200") and json.loads(data)["translations"][0]["translation"]
        assert proc.wait(timeout=120) == 0
        rest = proc.stderr.read()
        assert "smt-serve: stopped (1 sentence(s) translated)" in rest, rest
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _health(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=120) as c:
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := c.recv(65536):
            data += chunk
    return data.split(b"\r\n\r\n", 1)[1].decode()


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 30
