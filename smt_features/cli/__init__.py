"""Thin console entry points of the SMT floor (``smt-*``): parse the config, call the room that does the work."""
