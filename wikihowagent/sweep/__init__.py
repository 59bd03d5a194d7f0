"""Experiment sweeps (`wikihowagent sweep`): cells x shards over `generate`, locally or as a Slurm array."""

MAX_CELLS = 10_000  # a larger sweep is refused unless --max-cells allows it (a typo like 100x100x100 is 1M cells)
