"""``smt-decode --config FILE:SECTION`` with a value of the wrong type or choice: bad input, exit 2."""
from __future__ import annotations

from smt_features.cli.decode import cli_main
from tests.refusal import refused


def test_smt_decode_refuses_a_bad_type_and_a_bad_choice(tmp_path, capsys):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("smt-decode:\n  threads: many\nchoice:\n  lm_load: fast\nempty:\n  threads:\n",
                   encoding="utf-8")
    ini = str(tmp_path / "moses.ini")
    assert refused(capsys, None, cli_main(["--config", f"{cfg}:smt-decode", "-f", ini]),
                   f"smt-decode: {cfg}:smt-decode: threads: expected an integer, got 'many'")
    assert refused(capsys, None, cli_main(["--config", f"{cfg}:choice", "-f", ini]),
                   f"smt-decode: {cfg}:choice: lm_load: expected one of '', lazy, populate, read, got 'fast'")
    assert refused(capsys, None, cli_main(["--config", f"{cfg}:empty", "-f", ini]),
                   f"{cfg}:empty: threads: expected an integer, got nothing")


def test_smt_decode_reads_a_good_config(tmp_path):
    from smt_features.decode.run import parse_decode_args

    cfg = tmp_path / "run.yaml"
    cfg.write_text("smt-decode:\n  threads: 2\n  lm_load: populate\n  beam_threshold: 0\n"
                   "  n_best_list: [nbest.txt, 5, distinct]\n  progress: off\n", encoding="utf-8")
    got, nbest = parse_decode_args(["--config", f"{cfg}:smt-decode", "-f", "m.ini"])
    assert (got.threads, got.lm_load, got.beam_threshold, got.progress) == (2, "populate", 0.0, False)
    assert nbest == ("nbest.txt", 5, True)
