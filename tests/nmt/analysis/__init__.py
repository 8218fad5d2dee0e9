"""Tests of nmt/analysis/: RMN attention and RNNsearch alignment figures."""
