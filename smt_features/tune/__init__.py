"""The tuning room: BLEU statistics, MERT (pool, exact line search, optimiser) and the tuning loop as a library."""
