"""The metrics: the metric registry and the computational metrics (`computational`), ROUGE (`rouge`), step
coverage (`coverage`), the post-test metrics (`posttest`), the sentence encoder (`encoder`), the worker
processes that compute metrics (`workers`) and the estimate of people's scores from the metrics
(`people_estimate`). Definitions: docs/methodology/metrics.md.

Importing this package is cheap: torch, sentence-transformers, bert-score and nltk are imported inside the
functions that need them."""
