"""Experiment sweeps (`wikihowagent sweep`): cells x shards over `generate`, locally or as a Slurm array."""
