"""Tests of the ground floor (nmt/), one folder per room."""
