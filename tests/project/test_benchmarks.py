"""The benchmark harness (benchmarks/harness.py): resumable jobs, the model lock, numbers with CIs, BENCHMARKS.md
sections and their rows at the top; the measured figures every page quotes come from one file; the structure
measurement. No model: the jobs here are functions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import harness, interrupt, judge_vs_people, structure
from benchmarks.harness import GLANCE, GLANCE_END, Job, Results, Section, measured_block, run_jobs, write_section
from wikihowagent.report.measured import Figure, Measured, load_measured

REPO = Path(__file__).resolve().parents[2]


def _jobs(log: list[str], fail_on: str | None = None) -> list[Job]:
    def run(name: str) -> dict:
        if name == fail_on:
            raise RuntimeError(f"{name} failed")
        log.append(name)
        return {"value": len(name)}

    return [Job({"name": n}, lambda n=n: run(n)) for n in ("a", "bb", "ccc")]


def test_jobs_resume_after_a_failure_and_a_torn_line(tmp_path):
    results = Results(tmp_path / "r.jsonl")
    log: list[str] = []
    with pytest.raises(RuntimeError):
        run_jobs(_jobs(log, fail_on="bb"), results, say=lambda *_: None)
    assert log == ["a"] and results.rows() == [{"name": "a", "value": 1}]
    with open(results.path, "a", encoding="utf-8") as fh:
        fh.write('{"name": "bb", "val')  # a kill in the middle of a line
    assert results.rows() == [{"name": "a", "value": 1}]  # the torn line is no result
    assert run_jobs(_jobs(log), results, say=lambda *_: None) is True
    assert log == ["a", "bb", "ccc"]  # only the missing ones ran
    assert [r["name"] for r in results.rows()] == ["a", "bb", "ccc"]
    assert all(json.loads(line) for line in results.path.read_text().splitlines())  # whole lines again
    assert run_jobs(_jobs(log), results, say=lambda *_: None) is True and len(log) == 3  # nothing left to do


def test_no_job_starts_after_the_time_budget(tmp_path):
    log: list[str] = []
    said: list[str] = []
    assert run_jobs(_jobs(log), Results(tmp_path / "r.jsonl"), minutes=-1, say=said.append) is False
    assert log == [] and said == ["3 jobs left after -1 minutes: rerun to continue"]


def _lock_free(path: Path) -> bool:
    """Can another process take the lock at once (flock(1) -n, as a shell user would)?"""
    return subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0


def test_the_model_lock_keeps_other_model_processes_out_and_is_taken_once(tmp_path, monkeypatch):
    lock = tmp_path / "model.lock"
    monkeypatch.delenv(harness.LOCK_HELD, raising=False)
    assert _lock_free(lock)
    with harness.model_lock(lock):
        assert not _lock_free(lock)  # another process (`flock LOCK cmd`, another benchmark) waits
        assert os.environ[harness.LOCK_HELD] == "1"  # the children this process starts run under it
        with harness.model_lock(lock):  # a nested call does not wait for itself
            assert not _lock_free(lock)
    assert _lock_free(lock) and harness.LOCK_HELD not in os.environ
    monkeypatch.setenv(harness.LOCK_HELD, "1")  # `flock LOCK env WIKIHOWAGENT_MODEL_LOCK_HELD=1 python -m ...`
    with harness.model_lock(lock):
        assert _lock_free(lock)  # the caller holds it: nothing taken here


def test_jobs_under_the_lock_hold_it_while_they_run(tmp_path, monkeypatch):
    lock = tmp_path / "model.lock"
    monkeypatch.delenv(harness.LOCK_HELD, raising=False)
    monkeypatch.setattr(harness, "MODEL_LOCK", lock)
    seen = []
    job = Job({"k": 1}, lambda: seen.append(_lock_free(lock)) or {})
    run_jobs([job], Results(tmp_path / "r.jsonl"), lock=True, say=lambda *_: None)
    assert seen == [False] and _lock_free(lock)


def test_interrupt_jobs_take_the_code_versions_in_turn(tmp_path):
    jobs = interrupt.jobs([("before", tmp_path / "a"), ("after", tmp_path / "b")], ["generate", "evaluate"], 2)
    keys = [(j.key["rep"], j.key["command"], j.key["code"]) for j in jobs]
    assert keys[:4] == [(0, "generate", "before"), (0, "generate", "after"), (0, "evaluate", "before"),
                        (0, "evaluate", "after")]  # fmt: skip
    assert len(keys) == len(set(keys)) == 8


def test_mean_ci_and_formatting():
    mean, low, high = harness.mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == 3.0 and 1.0 <= low < 3.0 < high <= 5.0
    assert harness.mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0, 2.0)
    assert harness.with_ci(3.0, 1.84, 4.2, 1, " s") == "3.0 s [1.8, 4.2]"
    assert harness.table(["a", "b"], [[1, "x|y"]]) == "| a | b |\n| :-- | --: |\n| 1 | x\\|y |\n"
    assert harness.anchor("interrupt: Ctrl-C on the embedded model") == "interrupt-ctrl-c-on-the-embedded-model"


def _skeleton(tmp_path: Path) -> Path:
    p = tmp_path / "BENCHMARKS.md"
    p.write_text(
        f"# Benchmarks\n\nIntro.\n\n{GLANCE}\n\n| command | measurement | figure | measured | reproduce |\n"
        f"| :-- | :-- | :-- | :-- | :-- |\n{GLANCE_END}\n\n## History\n\n- old finding\n",
        encoding="utf-8",
    )
    return p


def test_a_section_and_its_row_at_the_top_are_written_once_and_replaced(tmp_path):
    p = _skeleton(tmp_path)
    first = Section("speed: one", "generate", "1.0 s [0.9, 1.1]", "python -m benchmarks one", "Body one.")
    write_section(first, p, day="2026-01-01", rev="aaaaaaa")
    write_section(Section("speed: two", "align", "2 s", "python -m benchmarks two", "Body two."), p, "2026-01-02", "b")
    write_section(
        Section("speed: one", "generate", "0.5 s [0.4, 0.6]", first.reproduce, "New body."), p, "2026-01-03", "c"
    )
    text = p.read_text(encoding="utf-8")
    assert text.count("## speed: one") == 1 and "Body one." not in text and "New body." in text
    assert text.index("## speed: one") < text.index("## History") and text.endswith("- old finding\n")
    rows = [r for r in text[text.index(GLANCE) : text.index(GLANCE_END)].splitlines() if r.startswith("| ")]
    assert rows[2:] == [
        f"| align | [speed: two](#speed-two) | 2 s | 2026-01-02, b, {harness.machine()} | `python -m benchmarks two` |",
        f"| generate | [speed: one](#speed-one) | 0.5 s [0.4, 0.6] | 2026-01-03, c, {harness.machine()} | "
        "`python -m benchmarks one` |",
    ]
    assert "_Measured 2026-01-03 on revision c" in text and "**0.5 s [0.4, 0.6]**" in text


def test_the_interrupt_section_gives_n_and_ci_per_code_version():
    rows = [
        {"code": c, "command": "evaluate", "rep": i // 2, "seconds": s, "rc": 130, "status": None, "whole": True}
        for i, (c, s) in enumerate([("before", 4.0), ("after", 3.0), ("before", 5.0), ("after", 2.0)])
    ]
    sec = interrupt.section(rows)
    assert "`evaluate` mean 2.5 s [2.0, 3.0], median 2.5 s (n 2)" in sec.headline  # the last code version's figure
    assert "| evaluate | before | 2 | 4.5 [4.0, 5.0] | 4.5 | 4.0–5.0 | 130 | - | yes |" in sec.body
    assert "after − before, paired by repetition: `evaluate` -2.0 s [-3.0, -1.0] (n 2 pairs)." in sec.body


def test_the_measured_figures_have_one_source():
    """README, the docs' home page and BENCHMARKS.md quote the embedded judge's figures from
    data/embedded_judge.json (the report reads the file itself): each page's measured block is the file's."""
    m = load_measured()
    statement = judge_vs_people.statement(m)
    for rel in judge_vs_people.PAGES:
        blocks = judge_vs_people.BLOCK.findall((REPO / rel).read_text(encoding="utf-8"))
        assert [b[1] for b in blocks] == [statement], f"{rel}: run `python -m benchmarks judge_vs_people report`"
    bench = (REPO / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert f"## {judge_vs_people.TITLE}\n" in bench and f"**{judge_vs_people.headline(m)}**" in bench
    assert statement in bench and m.source == f'BENCHMARKS.md, "{judge_vs_people.TITLE}"'
    assert m.modes["checklist"][0].value == pytest.approx(0.838)  # the figures themselves are the file's
    assert "0.84 [0.80, 0.88]" in statement


def test_new_figures_reach_every_page_at_once(tmp_path):
    for rel in judge_vs_people.PAGES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO / rel).read_text(encoding="utf-8"), encoding="utf-8")
    m = load_measured()
    fig = Figure(what="judge-check accuracy", value=0.912, ci=(0.85, 0.95), n=30, of="conversations")
    new = Measured(model=m.model, measured="2027-01-01", source=m.source, modes={**m.modes, "checklist": [fig]})
    changed = judge_vs_people.sync_pages(new, tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in changed) == sorted(judge_vs_people.PAGES)
    for rel in judge_vs_people.PAGES:
        text = (tmp_path / rel).read_text(encoding="utf-8")
        assert "judge-check accuracy 0.91 [0.85, 0.95] (30 conversations)" in text and "0.84 [0.80" not in text
        assert text.count("<!-- measured: data/embedded_judge.json -->") == 1
    assert judge_vs_people.sync_pages(new, tmp_path) == []  # nothing left to change


def test_the_structure_measurement_sees_long_functions_and_loops_between_rooms(tmp_path):
    pkg = tmp_path / "wikihowagent"
    (pkg / "corpus").mkdir(parents=True)
    for f in ("__init__.py", "corpus/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "corpus" / "core.py").write_text("from wikihowagent import runs\n")
    (pkg / "runs.py").write_text("from wikihowagent.paper_format import x\n")
    body = "\n".join(f"    y{i} = {i}" for i in range(85))
    (pkg / "paper_format.py").write_text(f"from wikihowagent.corpus import core\n\n\ndef x():\n{body}\n")
    assert structure.upward_arrows(tmp_path) != [] and len(structure.upward_arrows(tmp_path)) == 1
    (pkg / "paper_format.py").write_text(f"def x():\n{body}\n")
    assert structure.upward_arrows(tmp_path) == []
    assert structure.long_definitions(tmp_path, 80) == [("wikihowagent/paper_format.py:x", 86, 85)]
    assert structure.long_definitions(tmp_path, 90) == []
    lines = structure.package_lines(tmp_path)
    assert lines["wikihowagent/*.py"] == 87 and lines["wikihowagent/corpus/"] == 1


def test_the_benchmarks_command_lists_them():
    done = subprocess.run([sys.executable, "-m", "benchmarks"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0
    from benchmarks.__main__ import BENCHMARKS, MAKE_BENCH

    for name in BENCHMARKS:
        assert re.search(rf"^  {name} .*{'make bench' if name in MAKE_BENCH else ''}", done.stdout, re.M), name


def test_the_people_figures_are_aligns_and_reproduce_the_recorded_figure_of_the_papers_judges():
    """judge_vs_people takes r and the pair order from align's own computation: on the paper's 7B judges' scores
    of the human study it gives the figure recorded for them (Overall r 0.11 [-0.15, 0.33] on all 70)."""
    study = judge_vs_people.STUDY
    if not (study / "paper_llm_scores.csv").exists():
        pytest.skip(f"no human study at {study}")
    r, pairs = judge_vs_people.people_figures(study, [study / "paper_llm_scores.csv"])
    assert (r.value, r.n) == (pytest.approx(0.11, abs=0.005), 70)
    assert r.ci == (pytest.approx(-0.15, abs=0.005), pytest.approx(0.33, abs=0.005))
    assert pairs.n > 100 and 0.5 < pairs.value < 0.6 and pairs.ci[0] < pairs.value < pairs.ci[1]


def test_the_judge_check_figure_is_judge_checks_own_mean_accuracy(tmp_path):
    """judge_vs_people's judge-check figure comes from judge-check's judgments through its own functions: the
    same mean accuracy its summary prints, with a CI resampling conversations (the golden scenario's run)."""
    import golden

    golden.run_all(tmp_path, only=["judge_check"], log=lambda *a: None, paper=False)
    check = tmp_path / "judge_check" / "out" / "check"
    fig = judge_vs_people.check_figure(check, "weighted", "openai:fake-model")
    assert f"**{fig.value:.3f}**" in (check / "summary.md").read_text(encoding="utf-8")
    assert fig.n == 3 and fig.ci is not None and fig.ci[0] <= fig.value <= fig.ci[1]


def test_the_metric_figures_have_one_source(tmp_path):
    """README and the docs' home page quote every metric's agreement with people from the measured-validity
    file the report reads: each page's block is the file's statement, and new figures reach both at once."""
    from benchmarks import metrics_vs_people
    from wikihowagent.report.validity import load_validity

    v = load_validity()
    statement = metrics_vs_people.statement(v)
    block = measured_block(metrics_vs_people.LABEL)
    for rel in metrics_vs_people.PAGES:
        found = block.findall((REPO / rel).read_text(encoding="utf-8"))
        assert [b[1] for b in found] == [statement], f"{rel}: run `python -m benchmarks metrics_vs_people`"
    assert "**METEOR** +0.52 [+0.39, +0.64]" in statement and "conversation length" in statement
    assert v.caveat in statement  # a claim about people carries its caveat
    for rel in metrics_vs_people.PAGES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO / rel).read_text(encoding="utf-8"), encoding="utf-8")
    meteor = v.metrics["METEOR"].model_copy(update={"within_r": 0.6, "within_ci": (0.5, 0.7)})
    new = v.model_copy(update={"metrics": {**v.metrics, "METEOR": meteor}})
    changed = metrics_vs_people.sync_pages(
        metrics_vs_people.LABEL, metrics_vs_people.statement(new), metrics_vs_people.PAGES, tmp_path
    )
    assert sorted(p.relative_to(tmp_path).as_posix() for p in changed) == sorted(metrics_vs_people.PAGES)
    for rel in metrics_vs_people.PAGES:
        assert "**METEOR** +0.60 [+0.50, +0.70]" in (tmp_path / rel).read_text(encoding="utf-8")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _study(root: Path, tutorials: int = 3) -> Path:
    """A human study in the paper's layout: 7 models' run files over the same `tutorials` tutorials."""
    from benchmarks.paper_scale import MODELS

    (root / "conversations").mkdir(parents=True)
    for m, model in enumerate(MODELS[:7]):
        records = [
            {
                "conversation_id": f"{model}-{t}",
                "doc_id": 10 + t,
                "method_id": 0,
                "source_tutorial_path": f"./data/wikihow/Pets/Do {t}/Do {t}.json",
                "title": f"How to Do {t}",
                "categories": ["Categories", "Pets and Animals", "Dogs"],
                "summary": "About it.",
                "tutorial": {"title": f"Method 1 of 1:Doing {t}", "steps": [f"First {t}.", f"Then {t}."]},
                "conversation": [
                    f"Teacher: Let's begin: Method 1 of 1:Doing {t}. BEGIN",
                    "Learner: Ready.",
                    f"Teacher: First {t}, {model} says.",
                    "Learner: Why first?",
                    "Teacher: Because it comes first.",
                    "Learner: Got it.",
                    f"Teacher: Then {t}." + " More words." * m,
                    "Learner: Next.",
                    "Teacher: We've reached the end of the tutorial. Bye! FINISHED",
                    "Learner: Thanks!",
                ],
                "evaluation": {},
            }
            for t in reversed(range(tutorials))
        ]
        path = root / "conversations" / f"T-{model}_L-{model}_E-{model}_1_corrected.json"
        path.write_text(json.dumps({"total_conversations": records}), encoding="utf-8")
    return root


def test_paper_scale_builds_runs_as_generate_writes_them_with_the_study_inside(tmp_path):
    """8 runs of copies: records `generate` could have written (typed, structured turns), every slot a tutorial
    of its own except the study's slots, the study's conversations under their own ids in their model's run,
    new ids unique; the sample is lines of the runs, the study's among them."""
    from benchmarks import paper_scale as ps
    from wikihowagent.records import ConversationRecord
    from wikihowagent.runs import read_run_info

    study, n = _study(tmp_path / "study"), 40
    ps.build(tmp_path, study, n)
    ps.write_sample(tmp_path, study, n, 30)
    runs = sorted((tmp_path / "runs").iterdir())
    assert [r.name for r in runs] == sorted(ps.run_name(m) for m in ps.MODELS)
    records = {
        r.name: [ConversationRecord.model_validate_json(x) for x in _lines(r / "conversations.jsonl")] for r in runs
    }
    assert all(
        len(v) == n and read_run_info(r).status == "complete" for r, v in zip(runs, records.values(), strict=True)
    )
    every = [rec for recs in records.values() for rec in recs]
    assert len({r.conversation_id for r in every}) == len(every)  # new ids, none twice
    assert {r.conversation_id for r in every} >= {f"{m}-{t}" for m in ps.MODELS[:7] for t in range(3)}
    gemma = records[ps.run_name("gemma")]
    assert [r.teacher for r in gemma] == ["gemma"] * n and {r.tutorial_id for r in gemma} == {
        r.tutorial_id for r in records[ps.run_name("gpt-4")]
    }  # slot k teaches one tutorial in every run
    assert len({r.tutorial.title for r in gemma}) == n  # no reference text twice within a run
    kinds = {t.kind for r in gemma for t in r.turns}
    assert kinds == {"begin", "model", "clarification", "finish"} and all(
        r.conversation[0].startswith(f"Teacher: Let's begin: {r.tutorial.title}") for r in gemma
    )
    sample = (tmp_path / "sample" / "sample" / "conversations.jsonl").read_text().splitlines()
    lines = {x for r in runs for x in (r / "conversations.jsonl").read_text().splitlines()}
    assert len(sample) == 30 and set(sample) <= lines
    assert {json.loads(x)["conversation_id"] for x in sample} >= {f"{m}-{t}" for m in ps.MODELS[:7] for t in range(3)}


def test_paper_scale_writes_score_shards_as_evaluate_does_and_merge_takes_them(tmp_path):
    """Each run's copied scores in 50 shards: shard K holds the blocks of 64 `evaluate --shard K/50` scores
    (scores/shards.py's own filter), each conversation with the scores of the study conversation its text
    copies; `merge` accepts them (fingerprints, the conversations file's state)."""
    from benchmarks import paper_scale as ps
    from wikihowagent.scores.shards import shard_filter
    from wikihowagent.shards import merge_run

    study, n = _study(tmp_path / "study"), 300
    ps.build(tmp_path, study, n)
    sample = tmp_path / "sample" / "sample"
    sources = ps.load_sources(study)
    sample.joinpath("score-shards", "0-of-4").mkdir(parents=True)
    sample.joinpath("score-shards", "0-of-4", "shard.json").write_text(json.dumps({"fingerprint": {"mode": "default"}}))
    with open(sample / "scores.jsonl", "w") as fh:
        for m, recs in enumerate(sources):
            for t, src in enumerate(recs):
                line = {"conversation_id": src["conversation_id"], "run": "sample", "metrics": {"BLEU": m + t / 10}}
                fh.write(json.dumps(line) + "\n")
    ps.copy_scores(tmp_path, study, n)
    plan = ps.Plan.make(n, 3)
    for m, model in enumerate(ps.MODELS):
        run = tmp_path / "runs" / ps.run_name(model)
        ids = [json.loads(x)["conversation_id"] for x in _lines(run / "conversations.jsonl")]
        for k in (0, 7, 49):
            shard = [json.loads(x) for x in _lines(run / "score-shards" / f"{k}-of-50" / "scores.jsonl")]
            assert [s["conversation_id"] for s in shard] == list(shard_filter(iter(ids), (k, 50), 64))
        assert list(merge_run(run)) == [f"{run}: merged 50 score shards into {n} score records"]
        merged = {json.loads(x)["conversation_id"]: json.loads(x) for x in _lines(run / "scores.jsonl")}
        for k in (0, 150, 299):
            sm, st = plan.source(m, k)
            assert merged[ids[k]]["metrics"] == {"BLEU": sm + st / 10} and merged[ids[k]]["run"] == run.name


def test_the_slurm_rehearsal_script_fails_one_task_once_and_is_valid_bash(tmp_path):
    from benchmarks.paper_scale_slurm import array_script

    text = array_script(tmp_path / "run", 3, "/py", tmp_path / "logs", (1, tmp_path / "mark"), "--no-judge")
    assert "#SBATCH --array=0-2\n" in text and text.count("--shard $SLURM_ARRAY_TASK_ID/3 --no-judge") == 2
    assert f'[ "$SLURM_ARRAY_TASK_ID" = "1" ] && [ ! -e {tmp_path / "mark"} ]' in text and "exit 1" in text
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    assert "exit 1" not in array_script(tmp_path / "run", 3, "/py", tmp_path / "logs", None)


def test_the_paper_scale_guide_shows_the_figures_of_benchmarks_md():
    """docs/guides/paper-scale.md quotes the stage table inside its measured block only, the same block as the
    "paper scale" section of BENCHMARKS.md (both written by `python -m benchmarks paper_scale --write-md`)."""
    from benchmarks import paper_scale

    block = measured_block(paper_scale.LABEL)
    found = [block.findall((REPO / rel).read_text(encoding="utf-8")) for rel in (*paper_scale.PAGES, "BENCHMARKS.md")]
    assert [len(f) for f in found] == [1] * len(found), "run `python -m benchmarks paper_scale --write-md`"
    assert len({f[0][1] for f in found}) == 1 and "| `merge`" in found[0][0][1]
