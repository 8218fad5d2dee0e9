"""Tests of recipes/: every recipe's --quick run and the WMT'14 recipe's helpers."""
