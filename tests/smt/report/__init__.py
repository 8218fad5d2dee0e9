"""Tests of smt_features/report/: smt-report."""
