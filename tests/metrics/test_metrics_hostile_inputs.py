"""Every metric's range comes from its entry in the metric registry."""

from __future__ import annotations


def test_every_metric_range_comes_from_its_registry_entry():
    from wikihowagent.metrics import computational as M

    for name in (M.LEARNING_GAIN, M.DETAIL_GAIN, M.ORDER):
        assert M.value_range(name) == (-1.0, 1.0), name
    assert M.value_range(M.STEP_RECALL) == (0.0, 1.0) and M.value_range(M.BERTSCORE) == (-1.0, 1.0)
    for m in M.all_metrics():
        assert M.value_range(m.name)[0] <= m.low and M.value_range(m.name)[1] >= m.high
