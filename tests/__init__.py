"""The test suite, in folders that mirror the rooms (tests/nmt/<room>/, tests/smt/<room>/, tests/recipes/, …).

A package, so that test modules, helpers and conftest files are named by their path (``tests.nmt.lm...``)
and the repository root is what pytest puts on ``sys.path``; ``tests/`` itself must never be on it (its
``nmt/`` folder would shadow the package). Hand-made fixtures live in ``tests/data/``.
"""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  #: the repository
TEST_DATA = TESTS / "data"  #: the hand-made fixtures
