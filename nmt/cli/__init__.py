"""Console entry points (thin ``cli_main`` functions).

On a shared CPU, OpenMP threads that spin while waiting slow a run several-fold
when other processes compete for the cores; the commands default to passive
waiting. This must be set before torch starts its thread pool, hence here.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
