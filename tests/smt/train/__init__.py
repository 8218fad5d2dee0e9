"""Tests of smt_features/train/: alignment, phrase extraction and scoring, reordering tables, KenLM."""
