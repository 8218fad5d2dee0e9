"""Tests of smt_features/neural/: smt-rescore and smt-rerank."""
