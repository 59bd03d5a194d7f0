"""Golden outputs: run `evaluate`, `compare`, `judge-check`, `align` and `report` on fixed inputs and digest
every file they write, so a refactor that changes any output is caught with a readable diff.

    .venv/bin/python tests/golden.py record tests/fixtures/golden   # store the digest of this code
    .venv/bin/python tests/golden.py check tests/fixtures/golden    # compare; every difference printed

Inputs: the fake OpenAI-compatible server of tests/fake_servers.py (deterministic replies with token
log-probabilities), small synthetic runs built like the tests build them (tests/fixtures/*), and, when present,
the paper's stored run files and human sheets (../shared/human-study beside the clone, else $WIKIHOWAGENT_SHARED,
else /work/shared): the scenarios named `paper_*`, skipped (and said so) when the folder is absent. No embedded
model, no network beyond loopback.

The digest (digest.json, one entry per scenario and output file): CSV cells, JSON and JSONL values parsed, numbers
kept as floats and compared to 1e-12 (relative and absolute); JSONL lines sorted (resumable logs are written in
completion order); Markdown/text as lines; HTML as its visible text and table cells (no scripts/styles); the
report's data/*.js as the JSON they carry; PNG figures by presence only (matplotlib's bytes vary by machine).
Run-varying values are normalised before digesting: absolute paths (work dir, repository, shared folder),
the fake server's port, ISO timestamps, and the fields named in VOLATILE_KEYS (times, durations, host, pid...).
The inputs each scenario builds are digested too (`<scenario>/inputs/...`), so a change in how the inputs are
written shows up as such, not as a mysterious output change.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import hashlib
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
FIX = TESTS / "fixtures"
DIGEST_NAME = "digest.json"
FORMAT = 2
REL_TOL = ABS_TOL = 1e-12
RUBRICS = ["Clarity", "Truthfulness", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness"]
# the computational metrics that need no neural model (the embedding ones load sentence-transformers/BERT)
NO_EMBED = [
    "Question Ratio",
    "Completion",
    "Diversity",
    "BLEU",
    "METEOR",
    "ROUGE-1",
    "ROUGE-2",
    "ROUGE-L",
    "Step Coverage",
    "Echo Rate",
]
# keys whose values change from run to run (or machine to machine); their values are replaced by "<volatile>"
VOLATILE_KEYS = frozenset(
    {
        "created",
        "created_at",
        "started",
        "started_at",
        "finished",
        "finished_at",
        "updated",
        "updated_at",
        "time",
        "timestamp",
        "date",
        "when",
        "written",
        "written_at",
        "duration",
        "duration_s",
        "elapsed",
        "elapsed_s",
        "seconds",
        "wall_s",
        "latency",
        "latency_s",
        "host",
        "hostname",
        "node",
        "pid",
        "user",
        "cwd",
        "python",
        "platform",
        "machine",
        "load",
        "load_average",
    }
)
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
PORT = re.compile(r"(127\.0\.0\.1|localhost):\d+")
LONG = 160  # a longer string (a conversation's text...) is digested as its length, sha256 and first characters


def shared_dir() -> Path | None:
    """The paper's human study folder (../shared/human-study beside the clone first), or None."""
    for root in (REPO.parent / "shared", Path(os.environ.get("WIKIHOWAGENT_SHARED", "/work/shared"))):
        folder = root / "human-study"
        if (folder / "judge_1.csv").is_file() and any((folder / "conversations").glob("T-*_L-*_E-*.json")):
            return folder
    return None


# ------------------------------------------------------------------------------------------- normalisation


class Normaliser:
    """Replaces the run-varying parts of a string: absolute paths, the loopback port, timestamps."""

    def __init__(self, roots: dict[str, Path]):
        pairs = []
        for label, p in roots.items():
            for variant in {str(p), str(p.resolve())}:
                pairs.append((variant, f"<{label}>"))
        self.pairs = sorted(pairs, key=lambda kv: -len(kv[0]))  # the longest prefix first

    def text(self, s: str) -> str:
        for path, label in self.pairs:
            s = s.replace(path, label)
        s = PORT.sub(r"\1:<port>", s)
        return ISO_TIME.sub("<time>", s)

    def long_text(self, s: str) -> str:
        """A normalised string; past LONG characters its digest (keeps the golden file small, still exact)."""
        s = self.text(s)
        if len(s) <= LONG:
            return s
        return f"<{len(s)} chars, sha256 {hashlib.sha256(s.encode()).hexdigest()[:20]}> {s[:60]}"

    def value(self, v, key: str | None = None):
        if key is not None and key.lower() in VOLATILE_KEYS:
            return "<volatile>"
        if isinstance(v, dict):
            return {self.text(str(k)): self.value(x, str(k)) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, (int, float)):
            return float(v) if isinstance(v, float) else v
        return self.long_text(str(v))

    def cell(self, s: str):
        """A CSV cell: a number when it parses as one (compared numerically), else normalised text."""
        t = s.strip()
        if t and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", t, re.I):
            return float(t)
        return self.text(s)


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, one entry per text run; a table row is one entry `| cell | cell |`;
    scripts and styles dropped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.row: list[list[str]] | None = None  # the cells of the open <tr>

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        elif tag == "tr":
            self._flush_row()
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.row.append([])
        elif tag == "img":
            a = dict(attrs)
            self._add(f"[img {a.get('src', '')} {a.get('alt') or ''}]")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)
        elif tag in ("tr", "table"):
            self._flush_row()

    def handle_data(self, data):
        if not self.skip:
            t = " ".join(data.split())
            if t:
                self._add(t)

    def _add(self, text: str) -> None:
        if self.row is not None:
            if not self.row:
                self.row.append([])
            self.row[-1].append(text)
        else:
            self.parts.append(text)

    def _flush_row(self) -> None:
        if self.row is not None:
            self.parts.append("| " + " | ".join(" ".join(c) for c in self.row) + " |")
            self.row = None

    def close(self):
        super().close()
        self._flush_row()


def _js_payload(text: str):
    """The JSON a report data file carries (`window.X = {...};` or `reportChunk(k, {...});`)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return {"text": text}
    i = min(starts)
    value, end = json.JSONDecoder().raw_decode(text[i:])
    return {"prefix": text[:i].strip(), "value": value, "suffix": text[i + end :].strip()}


def digest_file(path: Path, norm: Normaliser):
    """A canonical, JSON-serialisable description of one output file."""
    suffix = path.suffix.lower()
    if suffix == ".png" or suffix in (".jpg", ".svg", ".pdf"):
        return {"kind": "figure"}  # presence only: renderer bytes vary across machines
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"kind": "binary", "sha256": hashlib.sha256(raw).hexdigest()}
    if suffix == ".csv":
        rows = list(csv.reader(io.StringIO(text)))
        return {"kind": "csv", "rows": [[norm.cell(c) for c in r] for r in rows]}
    if suffix == ".json":
        try:
            return {"kind": "json", "value": norm.value(json.loads(text))}
        except json.JSONDecodeError:
            pass
    if suffix == ".jsonl":
        lines = []
        for ln in text.splitlines():
            if not ln.strip():
                continue
            try:
                lines.append(norm.value(json.loads(ln)))
            except json.JSONDecodeError:
                lines.append({"unparsed": norm.text(ln)})
        lines.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return {"kind": "jsonl", "lines": lines}
    if suffix == ".js" and path.parent.name == "data":
        return {"kind": "js-data", "value": norm.value(_js_payload(text))}
    if suffix in (".html", ".htm"):
        p = _HTMLText()
        p.feed(text)
        p.close()
        return {"kind": "html", "text": [norm.text(x) for x in p.parts]}
    if suffix in (".js", ".css"):  # static assets copied from the package
        return {"kind": "asset", "sha256": hashlib.sha256(raw).hexdigest()}
    return {"kind": "text", "lines": [norm.text(ln).rstrip() for ln in text.splitlines()]}


def digest_tree(root: Path, norm: Normaliser, skip: Callable[[Path], bool] = lambda p: False) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not skip(rel) and not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = digest_file(p, norm)
    return out


# ------------------------------------------------------------------------------------------- the fakes


def _import_test_helpers():
    for p in (TESTS, FIX / "alignment", FIX / "report"):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))


def _prompt_length(block: str) -> int:
    return len(re.sub(r"\s+", " ", block))


def absolute_judge(prompt: str):
    """p(score) from the length of the conversation shown: a shortened lesson scores lower (test_judge_check)."""
    convo = prompt.split("Conversation:")[-1].split("Criterion:")[0]
    q = min(0.85, _prompt_length(convo) / 600)  # below 0.9: every candidate keeps a positive probability
    return [("4", {"5": q, "4": 0.9 - q, "3": 0.05, "Hmm": 0.05})]


def pair_judge(prompt: str):
    """P(A) from the difference of the two conversations' lengths; the reading probe is even."""
    if "Conversation A:" not in prompt:
        return absolute_judge(prompt) if "Conversation:" in prompt else [("A", {"A": 0.5, "B": 0.5})]
    a = prompt.split("Conversation A:")[1].split("Conversation B:")[0]
    b = prompt.split("Conversation B:")[1].split("Criterion:")[0]
    d = (_prompt_length(a) - _prompt_length(b)) / 200
    pa = min(0.95, max(0.05, 1 / (1 + math.exp(-d))))
    return [("A" if pa >= 0.5 else "B", {"A": pa * 0.9, "B": (1 - pa) * 0.9, "Hmm": 0.1})]


def json_reply(prompt: str) -> str:
    """A JSON rubric reply (for the text/json scoring paths): scores from the prompt's length."""
    n = _prompt_length(prompt)
    return json.dumps({name: 1 + (n // (7 + i)) % 5 for i, name in enumerate(RUBRICS)})


# ------------------------------------------------------------------------------------------- scenarios


def _cli(args: list[str]) -> str:
    """Run the CLI in this process; a non-zero exit is an error (the harness's inputs are all valid)."""
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    res = CliRunner().invoke(app, [str(a) for a in args])
    if res.exit_code != 0:
        exc = res.exception if res.exception and not isinstance(res.exception, SystemExit) else None
        raise RuntimeError(
            f"wikihowagent {' '.join(map(str, args))} exited {res.exit_code}:\n{res.output}"
            + (f"\n{exc!r}" if exc else "")
        )
    return res.output


def _judge_args(srv) -> list[str]:
    return ["--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--concurrency", "4"]


def _compare_conversation(run: str, t: int, quality: int) -> dict:
    from wikihowagent.records import Conversation, Turn

    words = " ".join(["detail"] * (4 * quality))
    turns = [Turn(role="teacher", text="Let's begin. BEGIN", kind="begin"), Turn(role="learner", text="Ready.")]
    for s in range(3):
        turns += [Turn(role="teacher", text=f"Step {s + 1} of tutorial {t}: {words}."), Turn(role="learner", text="OK")]
    turns += [Turn(role="teacher", text="We've reached the end. FINISHED", kind="finish")]
    c = Conversation.from_turns(
        turns,
        ["Do a.", "Do b.", "Do c."],
        f"Tutorial {t}",
        completed=True,
        conversation_id=f"{run}-{t}",
        tutorial_id=f"tut-{t}",
        teacher="local",
        learner="local",
    )
    return c.model_dump(mode="json")


def scenario_evaluate(work: Path, inputs: Path, shared: Path | None) -> None:
    from fake_servers import FakeOpenAI

    run = inputs / "run_small"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    paper = inputs / "T-llama3_L-llama3_E-llama3_123.json"
    shutil.copy(FIX / "evaluation" / paper.name, paper)
    with FakeOpenAI(reply=json_reply, logprobs=absolute_judge) as srv:
        _cli(
            [
                "evaluate",
                run,
                paper,
                "--metrics",
                ",".join(NO_EMBED) + ",rubric",
                "--by",
                "domain",
                "--out",
                work / "weighted",
                "--baseline",
                run,
                "--bootstrap",
                "200",
                *_judge_args(srv),
            ]
        )
        _cli(
            [
                "evaluate",
                run,
                "--metrics",
                "Question Ratio,BLEU,rubric",
                "--judge-scoring",
                "json",
                "--no-figures",
                "--out",
                work / "json",
                "--bootstrap",
                "100",
                *_judge_args(srv),
            ]
        )
    _cli(
        [
            "evaluate",
            paper,
            "--compat",
            "paper",
            "--no-judge",
            "--no-figures",
            "--out",
            work / "paper_compat",
            "--metrics",
            "Question Ratio,Completion,Diversity,BLEU,METEOR,ROUGE",
        ]
    )


def scenario_compare(work: Path, inputs: Path, shared: Path | None) -> None:
    from fake_servers import FakeOpenAI

    runs = []
    for name, q in (("weak", 1), ("strong", 3), ("mid", 2)):
        d = inputs / name
        d.mkdir(parents=True)
        meta = {"name": name, "teacher": "local", "learner": "local", "evaluator": None}
        (d / "run.json").write_text(json.dumps(meta))
        lines = [json.dumps(_compare_conversation(name, t, q)) + "\n" for t in range(5)]
        (d / "conversations.jsonl").write_text("".join(lines))
        runs.append(d)
    with FakeOpenAI(logprobs=pair_judge) as srv:
        _cli(["compare", *runs, "--out", work / "agree", "--bootstrap", "200", "--seed", "3", *_judge_args(srv)])
        _cli(
            [
                "compare",
                *runs[:2],
                "--out",
                work / "average",
                "--bootstrap",
                "100",
                "--metrics",
                "Clarity,Depth",
                "--verdict-rule",
                "average",
                "--tie-band",
                "0.05",
                "--no-figures",
                *_judge_args(srv),
            ]
        )


def scenario_judge_check(work: Path, inputs: Path, shared: Path | None) -> None:
    from fake_servers import FakeOpenAI

    run = inputs / "run_small"
    shutil.copytree(FIX / "evaluation" / "run_small", run)
    with FakeOpenAI(logprobs=pair_judge) as srv:
        base = ["judge-check", run, "--out", work / "check", *_judge_args(srv)]
        _cli(base)
        _cli(base + ["--pairwise"])


def scenario_align(work: Path, inputs: Path, shared: Path | None) -> None:
    import numpy as np
    from builders import make_run, sheet_rows, write_sheet

    rng = np.random.default_rng(42)
    runs = inputs / "runs"
    tuts = [f"tut{i:02d}" for i in range(20)]
    cids, base, runs_of = [], [], []
    for name, model in (("r-qwen", "qwen"), ("r-gemma", "gemma"), ("r-llama", "llama")):
        ids = make_run(runs, name, tuts, teacher=model, learner=model, rng=rng)
        scores = [json.loads(x) for x in (runs / name / "scores.jsonl").read_text().splitlines()]
        for s in scores:
            cids.append(s["conversation_id"])
            base.append([s["metrics"][m] for m in RUBRICS])
            runs_of.append(name)
        assert set(ids.values()) <= set(cids)
    base = np.asarray(base)
    j1 = np.clip(base + rng.integers(-1, 2, base.shape), 1, 5).astype(float)
    j2 = np.clip(base - rng.integers(0, 2, base.shape), 1, 5).astype(float)
    j2[rng.random(j2.shape) < 0.1] = np.nan
    h1 = write_sheet(
        inputs / "judge1.csv", [r | {"filename": run} for r, run in zip(sheet_rows(cids, j1), runs_of, strict=True)]
    )
    h2 = write_sheet(
        inputs / "judge2.csv", [r | {"filename": run} for r, run in zip(sheet_rows(cids, j2), runs_of, strict=True)]
    )
    _cli(
        [
            "align",
            "-H",
            h1,
            "-H",
            h2,
            "--scores",
            runs,
            "--out",
            work / "by_model",
            "--bootstrap",
            "300",
            "--by",
            "model",
            "--seed",
            "0",
        ]
    )
    _cli(
        [
            "align",
            "-H",
            h1,
            "-H",
            h2,
            "--scores",
            runs,
            "--out",
            work / "calibrated",
            "--bootstrap",
            "100",
            "--calibrate",
            "--no-figures",
            "--seed",
            "1",
        ]
    )


def scenario_report(work: Path, inputs: Path, shared: Path | None) -> None:
    from report_builders import make_run

    sweep = inputs / "sweep"
    make_run(sweep, "T-qwen2_L-qwen2", 30, teacher="qwen2", tutorials=10)
    make_run(sweep, "T-gemma_L-gemma", 30, teacher="gemma", tutorials=10, seed=1, bias=-0.5)
    _cli(["report", sweep, "--out", work / "site", "--cases", "2"])


def scenario_paper_evaluate(work: Path, inputs: Path, shared: Path) -> None:
    from fake_servers import FakeOpenAI

    files = sorted((shared / "conversations").glob("T-*_L-*_E-*.json"))
    with FakeOpenAI(reply=json_reply, logprobs=absolute_judge) as srv:
        _cli(
            [
                "evaluate",
                *files,
                "--metrics",
                ",".join(NO_EMBED) + ",rubric",
                "--out",
                work / "scores",
                "--tables",
                "--bootstrap",
                "200",
                "--no-figures",
                *_judge_args(srv),
            ]
        )
    _cli(
        [
            "evaluate",
            *files[:3],
            "--compat",
            "paper",
            "--no-judge",
            "--no-figures",
            "--out",
            work / "paper_compat",
            "--metrics",
            "Question Ratio,Completion,Diversity,BLEU,METEOR,ROUGE",
        ]
    )
    _cli(["report", *files, "--out", work / "report", "--cases", "1"])


def scenario_paper_align(work: Path, inputs: Path, shared: Path) -> None:
    _cli(
        [
            "align",
            "-H",
            shared / "judge_1.csv",
            "-H",
            shared / "judge_2.csv",
            "--scores",
            shared / "paper_llm_scores.csv",
            "--out",
            work / "paper_judges",
            "--bootstrap",
            "300",
            "--seed",
            "0",
            "--no-figures",
        ]
    )


def scenario_paper_compare(work: Path, inputs: Path, shared: Path) -> None:
    from fake_servers import FakeOpenAI

    files = sorted((shared / "conversations").glob("T-*_L-*_E-*.json"))[:3]
    with FakeOpenAI(logprobs=pair_judge) as srv:
        _cli(
            [
                "compare",
                *files,
                "--out",
                work / "compare",
                "--metrics",
                "Clarity,Depth",
                "--bootstrap",
                "200",
                "--no-figures",
                *_judge_args(srv),
            ]
        )
        _cli(
            [
                "judge-check",
                files[0],
                "--out",
                work / "judge_check",
                "--max-conversations",
                "4",
                "--no-figures",
                *_judge_args(srv),
            ]
        )


SCENARIOS: dict[str, tuple[Callable, bool]] = {  # name -> (function, needs the paper's study)
    "evaluate": (scenario_evaluate, False),
    "compare": (scenario_compare, False),
    "judge_check": (scenario_judge_check, False),
    "align": (scenario_align, False),
    "report": (scenario_report, False),
    "paper_evaluate_report": (scenario_paper_evaluate, True),
    "paper_align": (scenario_paper_align, True),
    "paper_compare_judge_check": (scenario_paper_compare, True),
}


def _input_digest(d: dict) -> dict:
    """An input file as the hash of its canonical digest: a changed input is named, its content not stored."""
    blob = json.dumps(d, sort_keys=True, ensure_ascii=False).encode()
    return {"kind": "input", "sha256": hashlib.sha256(blob).hexdigest()}


def run_all(
    root: Path, only: list[str] | None = None, shared: Path | None = None, log=print, paper: bool = True
) -> dict:
    """Run the scenarios under `root` (`shared`: the human study folder, default found by shared_dir();
    paper=False skips the scenarios that need it); returns {"scenarios": {name: {file: digest}}, "skipped": [...]}."""
    _import_test_helpers()
    shared = (shared if shared is not None else shared_dir()) if paper else None
    digest: dict = {"format": FORMAT, "scenarios": {}, "skipped": []}
    for name, (fn, needs_paper) in SCENARIOS.items():
        if only and name not in only:
            continue
        if needs_paper and shared is None:
            digest["skipped"].append(name)
            log(f"{name}: skipped (no paper human study: ../shared/human-study absent, or --no-paper)")
            continue
        work, inputs = root / name / "out", root / name / "inputs"
        work.mkdir(parents=True)
        inputs.mkdir(parents=True)
        t0 = time.perf_counter()
        fn(work, inputs, shared)
        norm = Normaliser(
            {
                "work": root / name,
                "repo": REPO,
                **({"shared": shared} if shared else {}),
                "tmp": Path(tempfile.gettempdir()),
            }
        )
        files = {f"out/{k}": v for k, v in digest_tree(work, norm).items()}
        files.update({f"inputs/{k}": _input_digest(v) for k, v in digest_tree(inputs, norm).items()})
        digest["scenarios"][name] = files
        log(f"{name}: {len(files)} files in {time.perf_counter() - t0:.1f} s")
    return digest


# ------------------------------------------------------------------------------------------- comparing


def _same_number(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _short(v) -> str:
    s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return s if len(s) <= 160 else s[:157] + "..."


def diff_values(expected, actual, where: str, out: list[str], limit: int = 2000) -> None:
    """Every difference between two digests (numbers to 1e-12), as 'where: expected X, got Y' lines."""
    if len(out) >= limit:
        return
    num = (int, float)
    if (
        isinstance(expected, num)
        and isinstance(actual, num)
        and not isinstance(expected, bool)
        and not isinstance(actual, bool)
    ):
        if not _same_number(float(expected), float(actual)):
            out.append(f"{where}: expected {expected!r}, got {actual!r}")
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        if expected.get("kind") == actual.get("kind") == "csv" and expected["rows"] and actual["rows"]:
            _diff_csv(expected["rows"], actual["rows"], where, out, limit)
            return
        for field in ("text", "lines"):  # HTML text, Markdown/text lines: a line diff, not position by position
            if (
                expected.get("kind") == actual.get("kind")
                and isinstance(expected.get(field), list)
                and isinstance(actual.get(field), list)
                and expected["kind"] in ("html", "text")
            ):
                _diff_lines(expected[field], actual[field], f"{where}/{field}", out)
                return
        for k in expected.keys() - actual.keys():
            out.append(f"{where}/{k}: missing (expected {_short(expected[k])})")
        for k in actual.keys() - expected.keys():
            out.append(f"{where}/{k}: new (got {_short(actual[k])})")
        for k in sorted(expected.keys() & actual.keys()):
            diff_values(expected[k], actual[k], f"{where}/{k}", out, limit)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{where}: {len(expected)} entries expected, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):  # lengths told above
            diff_values(e, a, f"{where}[{i}]", out, limit)
        if len(expected) > len(actual):
            out.append(f"{where}: first missing entry [{len(actual)}]: {_short(expected[len(actual)])}")
        elif len(actual) > len(expected):
            out.append(f"{where}: first extra entry [{len(expected)}]: {_short(actual[len(expected)])}")
        return
    if expected != actual or type(expected) is not type(actual):
        out.append(f"{where}: expected {_short(expected)}, got {_short(actual)}")


def _diff_lines(expected: list, actual: list, where: str, out: list[str], context: int = 1, cap: int = 40) -> None:
    """A unified diff of two line lists (numbers inside text compared as text), at most `cap` lines."""
    if expected == actual:
        return
    lines = list(
        difflib.unified_diff(
            [str(x) for x in expected], [str(x) for x in actual], "expected", "got", n=context, lineterm=""
        )
    )[2:]
    shown = [f"    {ln if len(ln) <= 160 else ln[:157] + '...'}" for ln in lines[:cap]]
    more = f" (first {cap} diff lines of {len(lines)})" if len(lines) > cap else ""
    out.append(f"{where}: differs{more}:\n" + "\n".join(shown))


def _diff_csv(expected: list, actual: list, where: str, out: list[str], limit: int) -> None:
    """CSV rows cell by cell, each difference named by its row and column header."""
    header = [str(h) for h in expected[0]]
    if expected[0] != actual[0]:
        out.append(f"{where}: header expected {_short(expected[0])}, got {_short(actual[0])}")
    if len(expected) != len(actual):
        out.append(f"{where}: {len(expected) - 1} rows expected, got {len(actual) - 1}")
    for i, (e, a) in enumerate(zip(expected[1:], actual[1:], strict=False), start=1):
        if len(e) != len(a):
            out.append(f"{where}: row {i}: expected {_short(e)}, got {_short(a)}")
            continue
        for j, (x, y) in enumerate(zip(e, a, strict=True)):
            col = header[j] if j < len(header) else str(j)
            diff_values(x, y, f"{where}: row {i} ({_short(e[0])}), column {col}", out, limit)


def compare_digests(expected: dict, actual: dict) -> list[str]:
    """The differences; scenarios skipped on either side (no paper study here) are not compared."""
    out: list[str] = []
    if expected.get("format") != actual.get("format"):
        return [f"digest format {expected.get('format')} expected, got {actual.get('format')}: record again"]
    exp, act = expected["scenarios"], actual["scenarios"]
    for name in sorted(exp.keys() | act.keys()):
        if name in actual.get("skipped", []) or name in expected.get("skipped", []):
            continue
        if name not in act:
            out.append(f"{name}: scenario missing from this run")
        elif name not in exp:
            out.append(f"{name}: scenario not in the recorded digest (record again)")
        else:
            diff_values(exp[name], act[name], name, out)
    return out


def write_digest(path: Path, digest: dict) -> None:
    """Sorted keys, floats as Python's shortest round-trip repr (the same bytes on every machine for the same
    values), one line per output file so that a re-recorded digest's git diff names the files that changed."""
    dumps = lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False, allow_nan=True)  # noqa: E731
    lines = [
        "{",
        f' "format": {dumps(digest["format"])},',
        f' "skipped": {dumps(sorted(digest["skipped"]))},',
        ' "scenarios": {',
    ]
    names = sorted(digest["scenarios"])
    for i, name in enumerate(names):
        files = digest["scenarios"][name]
        lines.append(f"  {dumps(name)}: {{")
        keys = sorted(files)
        lines += [f"   {dumps(k)}: {dumps(files[k])}{',' if j < len(keys) - 1 else ''}" for j, k in enumerate(keys)]
        lines.append("  }" + ("," if i < len(names) - 1 else ""))
    lines += [" }", "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("action", choices=("record", "check"))
    ap.add_argument("dir", type=Path, help=f"where {DIGEST_NAME} is written (record) or read (check)")
    ap.add_argument("--only", action="append", choices=list(SCENARIOS), help="run only this scenario (repeatable)")
    ap.add_argument("--keep", type=Path, help="run in this (new) directory and keep the outputs")
    ap.add_argument("--no-paper", action="store_true", help="skip the scenarios that need the paper's human study")
    args = ap.parse_args(argv)
    os.environ.setdefault("TZ", "UTC")
    shared = None if args.no_paper else shared_dir()
    t0 = time.perf_counter()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=False)
        root_ctx = None
        root = args.keep.resolve()
    else:
        root_ctx = tempfile.TemporaryDirectory(prefix="golden-")
        root = Path(root_ctx.name)
    try:
        digest = run_all(root, args.only, shared=shared, paper=not args.no_paper)
    finally:
        if root_ctx is not None:
            root_ctx.cleanup()
    path = args.dir / DIGEST_NAME
    if args.action == "record":
        if args.only:
            print("record writes every scenario: drop --only", file=sys.stderr)
            return 2
        args.dir.mkdir(parents=True, exist_ok=True)
        write_digest(path, digest)
        n = sum(len(v) for v in digest["scenarios"].values())
        print(f"recorded {len(digest['scenarios'])} scenarios, {n} files -> {path} ({time.perf_counter() - t0:.1f} s)")
        return 0
    expected = json.loads(path.read_text(encoding="utf-8"))
    if args.only:
        expected["scenarios"] = {k: v for k, v in expected["scenarios"].items() if k in args.only}
    diffs = compare_digests(expected, json.loads(json.dumps(digest)))
    for d in diffs:
        print(d)
    print(f"{len(diffs)} difference(s) against {path} ({time.perf_counter() - t0:.1f} s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
