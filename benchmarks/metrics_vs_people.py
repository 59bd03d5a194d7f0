"""Every metric against people: the figures README and the docs' home page quote, from the measured-validity
file the report reads (`wikihowagent/data/metric_validity.json`), so no page types them by hand.

The file is written from `align`'s and `judge-check --metrics`' outputs by `python -m wikihowagent.report.validity`
(the commands are in BENCHMARKS.md, "Every metric against people and perturbations", and in the file's
`command`); no model. This benchmark rewrites each page's measured block from it:

    python -m benchmarks metrics_vs_people            # README.md and docs/index.md from the file
"""

from __future__ import annotations

import argparse

from benchmarks.harness import ROOT, sync_pages
from wikihowagent.report.validity import MetricValidity, Validity, load_validity

LABEL = "data/metric_validity.json"  # the pages' block of these figures (harness.measured_block)
PAGES = ("README.md", "docs/index.md")
SHOWN = 3  # the metrics that tracked people best, then the baseline and the judges


def cell(name: str, m: MetricValidity) -> str:
    assert m.within_r is not None and m.within_ci is not None and m.pair_share is not None and m.pair_ci is not None
    partial = f" ({m.partial_r:+.2f} with length controlled)" if m.partial_r is not None and name != "Words" else ""
    return (
        f"**{'conversation length' if name == 'Words' else name}** {m.within_r:+.2f} "
        f"[{m.within_ci[0]:+.2f}, {m.within_ci[1]:+.2f}]{partial}, {m.pair_share:.2f} "
        f"[{m.pair_ci[0]:.2f}, {m.pair_ci[1]:.2f}] of {m.pairs} clear pairs"
    )


def statement(v: Validity) -> str:
    """The best trackers of people, the length baseline and every judge row, as every page quotes them."""
    ranked = [(k, m) for k, m in v.ranked() if m.within_r is not None and m.within_ci and m.pair_ci]
    best = [(k, m) for k, m in ranked if k != "Words" and "judge" not in k][:SHOWN]
    rest = [(k, m) for k, m in ranked if k == "Words" or "judge" in k]
    return (
        f"Measured {v.measured} on {v.study}; against the people's {v.target}, the within-tutorial r and the share "
        "of clearly ordered same-tutorial pairs ordered as the people did, with 95 % CIs resampling tutorials: "
        + "; ".join(cell(k, m) for k, m in best + rest)
        + f". Caveat: {v.caveat}."
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args(argv)
    changed = sync_pages(LABEL, statement(load_validity()), PAGES, ROOT)
    print("rewrote " + ", ".join(str(p.relative_to(ROOT)) for p in changed) if changed else "pages up to date")
