"""Tests of smt_features/decode/: the stack decoder, the compiled core, lexicalized reordering."""
