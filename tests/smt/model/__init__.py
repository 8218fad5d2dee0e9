"""Tests of smt_features/model/: the binarized and filtered phrase table, moses.ini and n-best formats."""
