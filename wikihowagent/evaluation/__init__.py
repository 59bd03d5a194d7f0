"""`wikihowagent evaluate`: the stage that scores runs (`command`: its options; `core`: the work). The judge
is in `wikihowagent.judge`, the metrics in `wikihowagent.metrics`, the scoring engine and the summaries in
`wikihowagent.scores`. The metric definitions are in docs/methodology/metrics.md.
"""
