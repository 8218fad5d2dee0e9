"""Tests of nmt/fairseq_plugin/: the models as fairseq architectures."""
