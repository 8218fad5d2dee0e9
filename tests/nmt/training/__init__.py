"""Tests of nmt/training/: the trainer, checkpoints, exact resume, streamed data, DDP."""
