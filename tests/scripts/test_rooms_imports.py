"""scripts/rooms_imports.py: the flat nmt modules' and the flat tests' names rewritten to the rooms; none is left."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

from tests import ROOT

SPEC = importlib.util.spec_from_file_location("rooms_imports", ROOT / "scripts" / "rooms_imports.py")
rooms_imports = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(rooms_imports)


def test_names_paths_and_helpers_are_rewritten() -> None:
    old = """from nmt import config as C
from nmt.data.io import DataError
from nmt.train_config import LoopConfig
from nmt.lm_task import LMTask  # see nmt/lm_task.py and nmt/formats/nbest.py
log = logging.getLogger("nmt.train")
from conftest import make_toy_data, refused
    from probe.runner import run_in_process
from test_tune_loop import MOSES_INI
# tests/test_mert.py, tests/serve/test_serve_api.py; nmt.training and nmt.translation stay
"""
    new = """from nmt.core import config as C
from nmt.core.io import DataError
from nmt.training.config import LoopConfig
from nmt.lm.task import LMTask  # see nmt/lm/task.py and nmt/core/formats/nbest.py
log = logging.getLogger("nmt.train")
from tests.toy_corpus import make_toy_data
from tests.refusal import refused
    from tests.probe.runner import run_in_process
from tests.smt.tune.test_tune_loop import MOSES_INI
# tests/smt/tune/test_mert.py, tests/smt/serve/test_serve_api.py; nmt.training and nmt.translation stay
"""
    assert rooms_imports.rewrite(old) == new
    assert rooms_imports.rewrite(new) == new


def test_no_flat_name_is_left() -> None:
    """No tracked file names a flat module or a flat test any more (but the few that do on purpose, KEEP)."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "rooms_imports.py"), "--tree", "--check"],
                          cwd=ROOT, capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout + proc.stderr
