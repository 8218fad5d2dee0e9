"""benchmarks/serve_load.py on a tiny experiment: batch smt-decode and the server under 1 and 3 clients, the
table with every column, no failed request, the server's translations = the batch's; a reranked row served with
and without the prefix-tree scoring (--prefix-tree both), both = the batch chain's."""
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
                          "--system", "Baseline", "--system", "+all+RNNsearch", "--prefix-tree", "both", "--threads", "1", "--json", str(tmp / "load.json")], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| Baseline | 3 |" in out.stdout and "| Baseline | batch smt-decode |" in out.stdout
    assert "| +all+RNNsearch (prefix tree false) | 3 |" in out.stdout and "| +all+RNNsearch | batch chain |" in out.stdout
    baseline, full = json.loads((tmp / "load.json").read_text())["results"]
    assert [server["prefix_tree"] for server in baseline["servers"]] == [True]  # no neural feature: served once
    assert [server["prefix_tree"] for server in full["servers"]] == [False, True]
    for result in (baseline, full):
        for server in result["servers"]:
            assert [s["clients"] for s in server["passes"]] == [1, 3] and server["exit"] == 0
            for s in server["passes"]:
                assert s["failed"] == 0 and s["same_as_batch"] == 6 and s["sentences_per_s"] > 0
                assert s["p95_s"] >= s["p50_s"]
            assert server["peak_pss_mb"] > 0
        assert result["batch_decode"]["sentences_per_s"] > 0
    assert full["batch_chain"]["sentences_per_s"] > 0
