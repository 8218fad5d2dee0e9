"""The torch-free basics both floors share: config, errors, logs, paths, perplexity, the strict io, the line formats."""
