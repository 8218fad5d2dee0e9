"""The neural room: phrase-table rescoring, its shard launcher, n-best reranking, phrase inspection (through nmt.scoring)."""
