"""benchmarks/serve_load.py on a tiny experiment: batch smt-decode and the server under 1 and 3 clients, the
table with every column, no failed request, the server's translations = the batch's."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import ROOT
from tests.smt.serve.serve_fixtures import build_tiny_experiment

SCRIPT = ROOT / "benchmarks" / "serve_load.py"


def test_serve_load_benchmark(tmp_path_factory) -> None:
    work = build_tiny_experiment(tmp_path_factory.mktemp("serve"))
    tmp = tmp_path_factory.mktemp("load")
    raw = tmp / "test.en"
    raw.write_text("S3 s1 s2.\ns4 s0, s7!\nS11 s5 s9 s2.\ns1 s2 s4 s4.\ns8 s6 s10 s3 s1.\ns0 qq s2.\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(SCRIPT), "--work", str(work), "--test", str(raw), "--clients", "1", "3",
                          "--threads", "1", "--json", str(tmp / "load.json")], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| Baseline | 3 |" in out.stdout and "| Baseline | batch smt-decode |" in out.stdout
    result = json.loads((tmp / "load.json").read_text())["results"][0]
    assert [s["clients"] for s in result["server"]] == [1, 3] and result["server_exit"] == 0
    for s in result["server"]:
        assert s["failed"] == 0 and s["same_as_batch"] == 6 and s["sentences_per_s"] > 0 and s["p95_s"] >= s["p50_s"]
    assert result["server_peak_pss_mb"] > 0 and result["batch_decode"]["sentences_per_s"] > 0
