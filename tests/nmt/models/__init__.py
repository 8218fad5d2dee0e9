"""Tests of nmt/models/: the gated unit, RNNenc, RNNsearch and the neural LMs."""
