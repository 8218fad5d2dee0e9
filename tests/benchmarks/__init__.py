"""Tests of benchmarks/: the device check's CPU dry run."""
