"""Tests of nmt/core/: the strict io, perplexity accounting, the line formats."""
