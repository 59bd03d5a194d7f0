"""The embedded judge's measured figures (`wikihowagent/data/embedded_judge.json`), the report's statement of how far to trust
it: written by `python -m benchmarks judge_vs_people --write-md` from the same numbers as its BENCHMARKS.md section,
read back here validated (a number outside its range, a CI that does not hold its value, an unknown field: the
file is left out with one line, never shown half-read)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wikihowagent.config import resource_path
from wikihowagent.errors import WikihowagentError, validation_line
from wikihowagent.jsonlio import JsonInputError, read_json_file
from wikihowagent.layout import EMBEDDED_JUDGE_JSON

MODE_NAME = re.compile(r"[a-z][a-z0-9+_-]{0,39}")  # a `--judge-scoring` mode ("checklist", "weighted+rationale")
ROUNDING = 0.005  # a CI written to 2 decimals may miss its 3-decimal value by this much


class MeasuredError(WikihowagentError, ValueError):
    """The measured-figures file cannot be read or holds something out of range."""


class Figure(BaseModel):
    """One measured figure of one scoring mode: what, its value, its 95 % CI, on how many of what."""

    model_config = ConfigDict(extra="forbid")

    what: str = Field(min_length=1, max_length=200)
    value: float
    ci: tuple[float, float] | None = None
    n: int = Field(ge=1, le=10**9)
    of: str = Field(min_length=1, max_length=200)  # what n counts

    @field_validator("value")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not (math.isfinite(v) and -1.0 <= v <= 1.0):  # accuracies, shares and correlations alike
            raise ValueError(f"value {v!r}: not a number in [-1, 1]")
        return v

    @model_validator(mode="after")
    def _ci_holds_value(self) -> Figure:
        if self.ci is not None:
            lo, hi = self.ci
            ok = all(math.isfinite(x) and -1.0 <= x <= 1.0 for x in (lo, hi))
            if not (ok and lo - ROUNDING <= self.value <= hi + ROUNDING):
                raise ValueError(f"ci {list(self.ci)!r}: not an interval in [-1, 1] holding the value {self.value}")
        return self

    def line(self) -> str:
        ci = f" [{self.ci[0]:.2f}, {self.ci[1]:.2f}]" if self.ci else ""
        return f"{self.what} {self.value:.2f}{ci} ({self.n} {self.of})"


class Measured(BaseModel):
    """The file: which model, when, where the figures come from, and the figures per `--judge-scoring` mode."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=200)
    measured: str = Field(min_length=1, max_length=40)  # a date
    source: str = Field(min_length=1, max_length=300)
    modes: dict[str, list[Figure]] = Field(min_length=1, max_length=10)

    @field_validator("modes")
    @classmethod
    def _modes(cls, v: dict[str, list[Figure]]) -> dict[str, list[Figure]]:
        for mode, figures in v.items():
            if not MODE_NAME.fullmatch(mode):
                raise ValueError(f"mode {mode[:40]!r}: not a scoring mode's name")
            if not 1 <= len(figures) <= 20:
                raise ValueError(f"mode {mode!r}: {len(figures)} figures (1 to 20)")
        return v

    def lines(self, scoring: str | None) -> list[str]:
        """The statement for a run judged in `scoring` (its figures, then the other modes' for comparison)."""
        base = scoring.split("+")[0] if scoring else None
        order = ([base] if base in self.modes else []) + [m for m in self.modes if m != base]
        head = f"Measured for the embedded judge ({self.model}; {self.source}, {self.measured})"
        out = []
        for m in order:
            mark = " (this run's scoring)" if m == base else ""
            out.append(f"{head}, scoring {m}{mark}: " + "; ".join(f.line() for f in self.modes[m]))
        if base and base not in self.modes:
            out.insert(0, f"{head}: nothing measured for scoring {base}; measured: {', '.join(self.modes)}")
        return out


def measured_path() -> Path:
    return resource_path("data", EMBEDDED_JUDGE_JSON)


def load_measured(path: Path | None = None) -> Measured:
    """The figures file (default wikihowagent/data/embedded_judge.json); MeasuredError naming the file and what is wrong."""
    p = Path(path) if path is not None else measured_path()
    try:
        raw: Any = read_json_file(p)
        return Measured.model_validate(raw)
    except FileNotFoundError:
        raise MeasuredError(f"{p}: not found") from None
    except (OSError, JsonInputError) as exc:
        raise MeasuredError(f"{p}: not readable JSON ({exc})") from None
    except ValidationError as exc:
        raise MeasuredError(f"{p}: {validation_line(exc)}") from None


def write_measured(figures: Measured, path: Path | None = None) -> Path:
    """Write the figures (validated by construction) as indented JSON; -> the path."""
    p = Path(path) if path is not None else measured_path()
    p.write_text(json.dumps(figures.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return p
