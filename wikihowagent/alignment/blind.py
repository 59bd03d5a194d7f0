"""Blind annotation sheets: opaque ids in a seeded random order, and the key file that maps them back.

`annotate export` writes, by default, a sheet whose `conversation_id` column holds blind ids (`b` + 10 hex
digits of sha1(seed, run, conversation id)), whose `filename` column is empty, and whose rows are shuffled
with `random.Random(seed)`; the HTML companion shows no run, model or file name. The key file
`<sheet>.key.csv` beside it (`blind_id, conversation_id, run, tutorial_id, title`) is for the study's
organiser, not the judges. `align` maps a filled sheet's blind ids back with it: `--key FILE`, or the one
key file beside a human file whose ids it knows.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from wikihowagent.layout import KEY_SUFFIX

from .csv_dialect import csv_text, read_table
from .problems import AlignInputError, Problems, where
from .schema import norm_key

KEY_COLUMNS = ("blind_id", "conversation_id", "run", "tutorial_id", "title")


def blind_id(seed: int | None, run: str, conversation_id: str) -> str:
    return "b" + hashlib.sha1(f"{seed}\x00{run}\x00{conversation_id}".encode()).hexdigest()[:10]


def key_path(sheet: Path) -> Path:
    return sheet.with_name(sheet.stem + KEY_SUFFIX)


def key_csv(rows: list[tuple[str, str, str, str, str]]) -> str:
    return csv_text(KEY_COLUMNS, rows)


def read_key(path: Path, problems: Problems) -> dict[str, tuple[str, str]]:
    """blind id -> (conversation id, run). A bad row is reported (file:ROW) and left out."""
    header, rows = read_table(path)
    keys = [norm_key(h) for h in header]
    if "blind_id" not in keys or "conversation_id" not in keys:
        raise AlignInputError(f"{path}: not a key file (expected columns {', '.join(KEY_COLUMNS)})")
    b, c = keys.index("blind_id"), keys.index("conversation_id")
    r = keys.index("run") if "run" in keys else None
    out: dict[str, tuple[str, str]] = {}
    for row, cells in rows:
        bid = cells[b] if len(cells) > b else ""  # read_table's cells: as written (`csvcells.read_cell`)
        cid = cells[c] if len(cells) > c else ""
        if not bid or not cid:
            problems.add("bad key", f"{where(path, row)}: empty blind_id or conversation_id; row left out")
            continue
        if bid in out:
            problems.add("bad key", f"{where(path, row)}: blind_id {bid} appears twice; the first row is used")
            continue
        out[bid] = (cid, cells[r] if r is not None and len(cells) > r else "")
    return out


def unblind(judges: list, key_paths: list[Path], problems: Problems) -> None:
    """Replace blind ids in the judges' ratings (annotations.JudgeRatings) by conversation ids, in place.

    Keys: `key_paths`, else the `*.key.csv` files beside each human file that know its ids. Ids a key does
    not know stay as they are (a sheet may be unblinded already)."""
    cache: dict[Path, dict[str, tuple[str, str]]] = {}

    def load(p: Path) -> dict[str, tuple[str, str]]:
        if p not in cache:
            try:
                cache[p] = read_key(p, problems)
            except AlignInputError as exc:
                problems.add("unusable file", str(exc))
                cache[p] = {}
        return cache[p]

    for j in judges:
        candidates = list(key_paths) or sorted(Path(j.source).parent.glob("*" + KEY_SUFFIX))
        key: dict[str, tuple[str, str]] = {}
        for p in candidates:
            k = load(Path(p))
            if key_paths or any(cid in k for cid in j.scores):
                key.update(k)
        if not key or not any(cid in key for cid in j.scores):
            if any(cid.startswith("b") and len(cid) == 11 for cid in j.scores) and not key_paths:
                problems.add(
                    "blind sheet",
                    f"{j.source}: ids look blind but no key file beside it knows them; pass --key SHEET.key.csv",
                )
            continue
        for attr in ("scores", "rows", "runs", "titles"):
            d = getattr(j, attr)
            setattr(j, attr, {key[k][0] if k in key else k: v for k, v in d.items()})
        for cid, run in key.values():
            if cid in j.scores and run and not j.runs.get(cid):
                j.runs[cid] = run
