"""Make the post-test validity set: counterfactual versions of tutorials (wikihowagent/corpus/counterfactual.py).

    python scripts/make_validity_set.py                       # the bundled tutorials -> wikihowagent/data/validity/counterfactual
    python scripts/make_validity_set.py --tutorials MY_CRAWL --out my_validity --seed 3 --transforms names,order

Deterministic: the same input, seed and transforms give byte-identical files. Each article becomes
`OUT/<Domain>/<New title>/<New title>.json` in the crawl layout (`generate --tutorials OUT` reads it), with a
`counterfactual` field recording the source, the seed, the invented names, the quantity factor, each method's
new order and contradicted step, and the transforms not applied (with why). A transform with nothing to
change in an article is printed (`--strict`: an error, exit 2). A method outside 2..30 steps is printed and
left out (`--strict`: an error, exit 2). OUT must be empty or absent, or `--force` replaces its *.json files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wikihowagent.corpus.core import default_tutorials_path, iter_articles  # noqa: E402
from wikihowagent.corpus.counterfactual import (  # noqa: E402
    MAX_STEPS,
    MIN_STEPS,
    TRANSFORMS,
    ValiditySetError,
    check_steps,
    transform_article,
)
from wikihowagent.errors import WikihowagentError  # noqa: E402

PACKAGE = Path(__file__).resolve().parent.parent / "wikihowagent"
DEFAULT_OUT = PACKAGE / "data" / "validity" / "counterfactual"


def path_root(out: Path) -> str:
    """The articles' own `path` prefix: relative to the package for a tree inside it (`data/validity/...`, as the
    bundled tutorials' `data/tutorials/...`, so their tutorial ids do not depend on where the package is), else
    `out` as given."""
    try:
        return out.resolve().relative_to(PACKAGE).as_posix()
    except ValueError:
        return out.as_posix()


def make_set(
    source: Path, out: Path, seed: int, transforms: list[str], strict: bool = False, force: bool = False, say=print
) -> list[Path]:
    """Transform every article of `source` into `out`; returns the files written. Raises ValiditySetError."""
    from wikihowagent.metrics.computational import load_wordnet

    check_out(out)
    existing = sorted(out.rglob("*.json")) if out.exists() else []
    if existing and not force:
        raise ValiditySetError(f"{out}: already holds {len(existing)} *.json files (give --force to replace them)")
    wn = load_wordnet()
    made: list[tuple[Path, dict]] = []
    for art in iter_articles(source, clean_citations=True):
        raw = dict(art.raw)
        methods = []
        for m in raw["methods"]:
            n = len([s for s in m["steps"] if s.strip()])
            try:
                check_steps(art.where, m["title"], n)
            except ValiditySetError as exc:
                if strict:
                    raise
                say(f"skipped: {exc}")
                continue
            methods.append(m)
        if not methods:
            say(f"skipped: {art.where}: no method with {MIN_STEPS} to {MAX_STEPS} steps")
            continue
        raw["methods"] = methods
        root = path_root(out)
        result = transform_article(raw, art.where, seed, wn, transforms, root=root)
        for note in result.notes:
            if strict:
                raise ValiditySetError(note)
            say(f"note: {note}")
        made.append((out / Path(result.article["path"]).relative_to(root), result.article))
    if not made:
        raise ValiditySetError(f"{source}: no method with {MIN_STEPS} to {MAX_STEPS} steps: nothing written")
    paths = [p for p, _ in made]
    if len(set(paths)) != len(paths):
        dup = next(p for p in paths if paths.count(p) > 1)
        raise ValiditySetError(f"{dup}: two articles got the same invented title (try another --seed)")
    inside = out.resolve()
    for path in paths:
        if not path.resolve().is_relative_to(inside):  # folder_name keeps names in OUT; checked once more here
            raise ValiditySetError(f"{path}: outside {out}: nothing written")
    # the new files first, then the old ones that are not among them: a write that fails leaves the old set
    for path, article in made:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(article, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ValiditySetError(f"{path}: cannot write ({exc.strerror or exc})") from None
    for f in existing:
        if f not in paths:
            f.unlink()
    return paths


def check_out(out: Path) -> None:
    """OUT is a folder or can be made one: not a file, not under a file, on a writable file system; else one
    line, before any work. (Run as root, permission bits do not stop a write; a read-only mount does.)"""
    if out.exists() and not out.is_dir():
        raise ValiditySetError(f"{out}: exists and is not a folder")
    probe = out
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ValiditySetError(f"{out}: {probe} is a file, not a folder")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        raise ValiditySetError(f"{out}: {probe} is not writable")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tutorials", type=Path, default=None, help="article tree, JSON or JSONL (default: bundled)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output tree (default: {DEFAULT_OUT})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--transforms", default=",".join(TRANSFORMS), help=f"comma-separated, of {', '.join(TRANSFORMS)} (default: all)"
    )
    ap.add_argument(
        "--strict",
        action="store_true",
        help="a transform with nothing to change, or a method outside 2..30 steps, is an error",
    )
    ap.add_argument("--force", action="store_true", help="replace the *.json files already in --out")
    args = ap.parse_args(argv)
    transforms = [t.strip() for t in args.transforms.split(",") if t.strip()]
    try:
        bad = [t for t in transforms if t not in TRANSFORMS]
        if bad or not transforms:
            raise ValiditySetError(
                f"--transforms: {bad[0] if bad else 'none given'!r} is not a transform (known: {', '.join(TRANSFORMS)})"
            )
        paths = make_set(
            args.tutorials or default_tutorials_path(), args.out, args.seed, transforms, args.strict, args.force
        )
    except WikihowagentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {len(paths)} counterfactual articles to {args.out} (seed {args.seed}, transforms "
        f"{', '.join(transforms)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
