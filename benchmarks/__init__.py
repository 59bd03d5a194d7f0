"""The benchmarks: `python -m benchmarks NAME [options]` (`python -m benchmarks` lists them); the harness they
share is `benchmarks/harness.py`. Results go to BENCHMARKS.md (docs/developer.md, "Benchmarks")."""
