"""The language models' room: their data, streams, training task and run, evaluation, scoring and loading."""
