"""The `generate` stage: command.py (the typer commands `generate`, `merge`), core.py (`run_generation`)."""
