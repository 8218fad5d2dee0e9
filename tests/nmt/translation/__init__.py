"""Tests of nmt/translation/: the batched beam search."""
