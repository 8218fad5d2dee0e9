"""Tests of the smt-* console scripts on unusual but valid input."""
