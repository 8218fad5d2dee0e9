"""Tests of scripts/: the rewrite of the flat names to the rooms."""
