"""Tests of smt_features/serve/: the Python API, smt-serve over HTTP, its page, its process."""
