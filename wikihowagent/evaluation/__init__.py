"""`wikihowagent evaluate`: computational metrics, the rubric judge, summaries and figures.

Importing this package is cheap: torch, sentence-transformers, bert-score, nltk, pandas and matplotlib are
imported inside the functions that need them. The metric definitions are in docs/methodology/metrics.md.
"""
