"""A run's scores, shared by `evaluate`, `compare`, `judge-check` and `report`: the scoring engine that
writes them (`runner`: conversations judged and measured in chunks, resumable; its inputs `inputs`, shards
`shards` and counts `source_stats`) and the summaries that read them back (`summary`: per-metric means and
intervals; `significance`: paired tests; `paper_tables`: the paper's Tables 1 and 2).

Importing this package is cheap: numpy, pandas and matplotlib are imported inside the functions that need
them."""
