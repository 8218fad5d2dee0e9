"""Tests of the nmt-* console scripts as a user calls them."""
