"""Tests of smt_features/tune/: MERT, kbMIRA, PRO and the smt-tune loop."""
