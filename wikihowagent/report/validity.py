"""How far each metric tracked people, as measured (`data/metric_validity.json`): read by the report (Table 1's
metric heads and "How far to trust the metrics"), written from `align`'s and `judge-check --metrics`' outputs by

    python -m wikihowagent.report.validity --align ALIGN_DIR --perturbations NAME=JUDGE_CHECK_DIR ... \\
        --study TEXT --measured DATE --out wikihowagent/data/metric_validity.json

never by hand. Read back validated (a correlation or share outside its range, a CI that does not hold its
value, an unknown field: the file is left out with one line, never shown half-read).
"""

from __future__ import annotations

import argparse
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from wikihowagent.config import resource_path
from wikihowagent.errors import WikihowagentError, validation_line
from wikihowagent.jsonlio import JsonInputError, read_json_file
from wikihowagent.layout import METRIC_ALIGNMENT_CSV, METRIC_SENSITIVITY_CSV, METRIC_VALIDITY_JSON
from wikihowagent.runs import OutputReadError, read_people_table

ROUNDING = 0.005
TRACKS = 0.0  # a metric "tracked people" when its within-tutorial r's CI lies above this


class ValidityError(WikihowagentError, ValueError):
    """The measured-validity file cannot be read or holds something out of range."""


def _check(v: float | None, ci: tuple[float, float] | None, lo: float, hi: float, what: str) -> None:
    if v is None:
        return
    if not (math.isfinite(v) and lo <= v <= hi):
        raise ValueError(f"{what} {v!r}: not a number in [{lo:g}, {hi:g}]")
    if ci is not None:
        a, b = ci
        if not (math.isfinite(a) and math.isfinite(b) and lo <= a <= b <= hi and a - ROUNDING <= v <= b + ROUNDING):
            raise ValueError(f"{what} ci {list(ci)!r}: not an interval in [{lo:g}, {hi:g}] holding {v}")


class MetricValidity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=0)  # conversations with the metric and a human rating
    pooled_r: float | None = None
    within_r: float | None = None
    within_ci: tuple[float, float] | None = None
    partial_r: float | None = None  # controlling for log conversation length
    pair_share: float | None = None
    pair_ci: tuple[float, float] | None = None
    pairs: int = Field(default=0, ge=0)
    perturbations: dict[str, float] = Field(default_factory=dict)  # tutorial set -> mean accuracy over perturbations
    note: str = Field(default="", max_length=300)

    @model_validator(mode="after")
    def _ranges(self) -> MetricValidity:
        _check(self.pooled_r, None, -1, 1, "pooled_r")
        _check(self.within_r, self.within_ci, -1, 1, "within_r")
        _check(self.partial_r, None, -1, 1, "partial_r")
        _check(self.pair_share, self.pair_ci, 0, 1, "pair_share")
        for k, v in self.perturbations.items():
            _check(v, None, 0, 1, f"perturbations[{k}]")
        return self

    @property
    def tracked(self) -> bool:
        return self.within_ci is not None and self.within_ci[0] > TRACKS

    def short(self) -> str:
        """ "within r +0.52 [+0.35, +0.66], clear pairs 0.83 (106)"."""
        parts = []
        if self.within_r is not None:
            ci = f" [{self.within_ci[0]:+.2f}, {self.within_ci[1]:+.2f}]" if self.within_ci else ""
            parts.append(f"within-tutorial r {self.within_r:+.2f}{ci}")
        if self.pair_share is not None:
            parts.append(f"clear pairs ordered {self.pair_share:.2f} of {self.pairs}")
        if self.perturbations:
            parts.append(
                "prefers the original to a damaged copy "
                + ", ".join(f"{v:.2f} ({k})" for k, v in self.perturbations.items())
            )
        return "; ".join(parts) or (self.note or "not measured")


class Validity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(pattern="^wikihowagent-metric-validity$")
    version: int = Field(ge=1)
    measured: str = Field(min_length=1, max_length=40)
    study: str = Field(min_length=1, max_length=400)
    caveat: str = Field(min_length=1, max_length=600)
    target: str = Field(default="Overall", max_length=60)
    mode: str = Field(default="default", pattern="^(default|paper)$")  # evaluate's metric mode measured
    command: str = Field(default="", max_length=2000)
    metrics: dict[str, MetricValidity]

    def ranked(self) -> list[tuple[str, MetricValidity]]:
        """Metrics by within-tutorial r, highest first (unmeasured last)."""
        return sorted(self.metrics.items(), key=lambda kv: -(kv[1].within_r if kv[1].within_r is not None else -9))


@lru_cache(maxsize=4)
def load_validity(path: Path | None = None) -> Validity:
    """The bundled file (or `path`); ValidityError with one line when it cannot be used."""
    p = Path(path) if path is not None else resource_path("data", METRIC_VALIDITY_JSON)
    try:
        data = read_json_file(p)
        return Validity.model_validate(data)
    except (OSError, JsonInputError) as exc:
        raise ValidityError(f"{p}: cannot be read ({exc})") from None
    except ValidationError as exc:
        raise ValidityError(f"{p}: {validation_line(exc)}") from None


# --------------------------------------------------------------------------- writing


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _ci(lo: Any, hi: Any) -> tuple[float, float] | None:
    a, b = _num(lo), _num(hi)
    return (round(a, 4), round(b, 4)) if a is not None and b is not None else None


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def build(align_dir: Path, perturbation_dirs: dict[str, Path], target: str = "Overall") -> dict[str, MetricValidity]:
    """Each metric's row of `target` in align's metric_alignment.csv, with its mean accuracy over the perturbations
    in each judge-check --metrics directory."""
    table = read_people_table(align_dir / METRIC_ALIGNMENT_CSV)
    rows = table[table["human_rubric"] == target]
    out: dict[str, MetricValidity] = {}
    for _, r in rows.iterrows():
        out[str(r["metric"])] = MetricValidity(
            n=int(r["n"]),
            pooled_r=_round(_num(r["pearson"])),
            within_r=_round(_num(r["within"])),
            within_ci=_ci(r["within_ci_low"], r["within_ci_high"]),
            partial_r=_round(_num(r["partial"])),
            pair_share=_round(_num(r["pair_share"])),
            pair_ci=_ci(r["pair_ci_low"], r["pair_ci_high"]),
            pairs=int(r["pairs"]),
            note=str(r["note"]) if isinstance(r["note"], str) else "",
        )
    for name, d in perturbation_dirs.items():
        sens = read_people_table(d / METRIC_SENSITIVITY_CSV)
        for metric, g in sens.groupby("metric"):
            acc = [float(a) for a in g["accuracy"] if _num(a) is not None]
            if not acc:
                continue
            entry = out.setdefault(str(metric), MetricValidity(n=0))
            entry.perturbations[name] = round(sum(acc) / len(acc), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wikihowagent.report.validity", description=__doc__.split("\n\n")[0])
    ap.add_argument("--align", type=Path, required=True, help="an `align` output directory (metric_alignment.csv)")
    ap.add_argument(
        "--perturbations",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a `judge-check --metrics` output directory and the name of its tutorial set (repeatable)",
    )
    ap.add_argument("--study", required=True, help="what the human study is (one line)")
    ap.add_argument("--measured", required=True, help="the date measured")
    ap.add_argument(
        "--caveat",
        default="one study, two raters, who were told to rate with the tutorial as the reference (what METEOR and "
        "Step Coverage measure)",
    )
    ap.add_argument("--command", default="", help="the commands that produced the inputs (for the record)")
    ap.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="a row's name in the file, e.g. which judge 'LLM judge (mean of rubrics)' was (repeatable)",
    )
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    dirs = {}
    for item in a.perturbations:
        name, sep, d = item.partition("=")
        if not sep or not name:
            ap.error(f"--perturbations {item!r}: expected NAME=DIR")
        dirs[name] = Path(d)
    try:
        metrics = build(a.align, dirs)
    except (OutputReadError, KeyError) as exc:
        ap.exit(1, f"error: {exc}\n")
    for item in a.rename:
        old, sep, new = item.partition("=")
        if not sep or old not in metrics:
            ap.error(f"--rename {item!r}: expected OLD=NEW with OLD one of: {', '.join(metrics)}")
        metrics = {new if k == old else k: v for k, v in metrics.items()}
    doc = Validity(
        kind="wikihowagent-metric-validity",
        version=1,
        measured=a.measured,
        study=a.study,
        caveat=a.caveat,
        command=a.command,
        metrics=metrics,
    )
    a.out.write_text(json.dumps(doc.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(metrics)} metrics -> {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
