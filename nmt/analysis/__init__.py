"""Analyses of trained models (attention maps, representations)."""
