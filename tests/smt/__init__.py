"""Tests of the upper floor (smt_features/), one folder per room."""
