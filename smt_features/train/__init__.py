"""The training room: word alignment, phrase extraction and scoring, KenLM estimation."""
