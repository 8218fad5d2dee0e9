"""Tests of nmt/lm/: nmt-lm-train, nmt-lm-eval, nmt-lm-score."""
