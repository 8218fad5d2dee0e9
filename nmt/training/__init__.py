"""The one trainer: options, checkpoints, exact resume, streamed data, precision, DDP, weight averaging."""
