"""Tests of nmt/data/: corpora, tokenization, vocabularies, truecasing, nmt-prepare, the synthetic corpus."""
