"""Every metric against people (`align`'s metric_alignment.csv/.md, the people-calibrated estimate, `evaluate
--people-estimate`) and against perturbations (`judge-check --metrics`): statistics with known truth by
simulation, and the bad inputs (a constant metric, a metric for only some conversations, an estimate for
metrics a run lacks or scored in another mode, a sheet whose ids match no scored conversation)."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from wikihowagent.stats import people_estimate as pe
from wikihowagent.stats.association import _wkendall, _wranks, associate
from wikihowagent.stats.correlation import weighted_pearson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import write_sheet  # noqa: E402
from test_alignment import make_app  # noqa: E402

# ------------------------------------------------------------------------------------------ statistics


def clustered(rng, k=12, per=6, rho=0.6, between=1.5):
    """k tutorials x per conversations: a tutorial effect on the people only, and within tutorials x and y
    correlated with rho."""
    g = np.repeat([f"t{i:02d}" for i in range(k)], per)
    u = np.repeat(rng.normal(0, between, k), per)
    x = rng.normal(size=k * per)
    y = rho * x + math.sqrt(1 - rho**2) * rng.normal(size=k * per) + u
    return x, y, list(g)


def test_weighted_resample_equals_the_resampled_data():
    """The cluster bootstrap's weights give exactly the coefficients of the data resampled by tutorial."""
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, 40).astype(float)
    y = x + rng.normal(0, 2, 40).round(1)
    codes = np.repeat(np.arange(8), 5)
    for _ in range(5):
        pick = rng.integers(0, 8, 8)
        W = np.bincount(pick, minlength=8).astype(float)[codes][None, :]
        idx = np.concatenate([np.flatnonzero(codes == j) for j in pick])
        xs, ys = x[idx], y[idx]
        assert weighted_pearson(W, x, y)[0] == pytest.approx(stats.pearsonr(xs, ys).statistic)
        lx, ex = (x[None, :] < x[:, None]).astype(float), (x[None, :] == x[:, None]).astype(float)
        ly, ey = (y[None, :] < y[:, None]).astype(float), (y[None, :] == y[:, None]).astype(float)
        rho = weighted_pearson(W, _wranks(W, lx, ex), _wranks(W, ly, ey))[0]
        assert rho == pytest.approx(stats.spearmanr(xs, ys).statistic)
        s = np.sign(x[None, :] - x[:, None]) * np.sign(y[None, :] - y[:, None])
        assert _wkendall(W, s, ex, ey)[0] == pytest.approx(stats.kendalltau(xs, ys).statistic)


def test_within_r_finds_the_within_tutorial_correlation_and_its_ci_covers_it():
    """Tutorial effects on the people only hide the metric in the pooled r; the within r recovers rho, and its
    cluster-bootstrap CI holds the truth in most simulated studies."""
    rng = np.random.default_rng(0)
    covered, within, pooled = 0, [], []
    sims = 60
    for _ in range(sims):
        x, y, g = clustered(rng, k=20, per=5, rho=0.5)
        a = associate(x, y, g, n_boot=300, seed=1)
        w = a.coefs["within"]
        within.append(w.value)
        pooled.append(a.coefs["pearson"].value)
        covered += w.ci_low <= 0.5 <= w.ci_high
    assert abs(np.mean(within) - 0.5) < 0.05
    assert np.mean(pooled) < 0.35  # diluted by the tutorials' differences
    assert covered / sims >= 0.85


def test_partial_r_removes_what_length_explains():
    """x and y both follow length and nothing else: pooled r clearly positive, partial r near 0."""
    rng = np.random.default_rng(1)
    z = rng.normal(size=300)
    x = z + 0.5 * rng.normal(size=300)
    y = z + 0.5 * rng.normal(size=300)
    g = [f"t{i % 30}" for i in range(300)]
    a = associate(x, y, g, control=z, n_boot=200)
    assert a.coefs["pearson"].value > 0.7
    assert abs(a.coefs["partial"].value) < 0.15
    lo, hi = a.coefs["partial"].ci_low, a.coefs["partial"].ci_high
    assert lo < 0 < hi


def test_a_constant_metric_has_a_note_not_a_number():
    a = associate([0.3] * 10, list(range(10)), ["a"] * 5 + ["b"] * 5)
    assert all(math.isnan(c.value) for c in a.coefs.values())
    assert "constant" in a.note and "no correlation" in a.note


def test_nonnegative_ridge_keeps_signs_and_shrinks():
    """y grows with x1 and falls with x2 (a metric that counts the wrong way): x2's weight stays 0, never negative,
    where least squares would make it negative; more shrinkage, smaller weights; out of fold the estimate still
    tracks y."""
    rng = np.random.default_rng(2)
    n = 120
    x1 = rng.normal(size=n)
    x2 = rng.normal(size=n)
    y = 3 + 0.8 * x1 - 0.4 * x2 + 0.3 * rng.normal(size=n)
    X = np.column_stack([x1, x2])
    assert np.linalg.lstsq(np.column_stack([np.ones(n), X]), y, rcond=None)[0][2] < -0.3
    f = pe.fit(X, y, 0.0)
    assert f.weight[1] == 0.0 and f.weight[0] > 0.6
    assert pe.fit(X, y, 100.0).weight[0] < f.weight[0]
    g = [f"t{i % 12}" for i in range(n)]
    oof = pe.out_of_fold(X, y, g)
    assert np.isfinite(oof).all() and np.corrcoef(oof, y)[0, 1] > 0.7
    # a missing metric with a weight: no estimate; one without a weight does not matter
    assert math.isnan(pe.apply(np.array([[np.nan, 0.0]]), f.intercept, f.mean, f.sd, f.weight)[0])
    assert math.isfinite(pe.apply(np.array([[0.0, np.nan]]), f.intercept, f.mean, f.sd, f.weight)[0])


# ------------------------------------------------------------------------------------------ align end to end


def write_study(root: Path, k: int = 10, per: int = 6, seed: int = 0) -> tuple[Path, Path, Path]:
    """A run scored by `evaluate --no-judge` (METEOR tracks the people within tutorials, Words is length, Completion
    is constant, Question Ratio only for every second conversation), a judge's CSV and one person's sheet."""
    rng = np.random.default_rng(seed)
    run = root / "run"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"name": "run", "teacher": "m", "learner": "m"}))
    sheet_rows, judge_rows = [], []
    with open(run / "scores.jsonl", "w") as fh:
        for t in range(k):
            level = rng.normal(3, 0.6)
            for j in range(per):
                cid = f"c{t:02d}-{j}"
                q = rng.normal()
                people = float(np.clip(level + 0.8 * q + 0.3 * rng.normal(), 1, 5))
                metrics = {
                    "METEOR": round(float(0.3 + 0.05 * q), 4),
                    "Words": float(200 + 30 * rng.normal() + 20 * q),
                    "Completion": 1.0,
                    "Step Coverage": round(float(np.clip(0.5 + 0.1 * rng.normal(), 0, 1)), 4),
                }
                if j % 2 == 0:
                    metrics["Question Ratio"] = round(float(rng.uniform()), 4)
                rec = {
                    "conversation_id": cid,
                    "run": "run",
                    "tutorial_id": f"t{t:02d}",
                    "title": f"How to {t}",
                    "teacher": "m",
                    "learner": "m",
                    "mode": "default",
                    "metrics": metrics,
                }
                fh.write(json.dumps(rec) + "\n")
                sheet_rows.append(
                    {"conversation_id": cid, "filename": "run", "title": f"How to {t}", "clarity": round(people, 1)}
                    | {m: round(people, 1) for m in ("progress", "truthfulness")}
                )
                judge_rows.append(
                    {
                        "conversation_id": cid,
                        "filename": "run",
                        "title": f"How to {t}",
                        "clarity": 2 + j % 3,
                        "progress": 5,
                    }
                )
    cols = ("conversation_id", "filename", "title", "clarity", "progress", "truthfulness")
    sheet = write_sheet(root / "person.csv", sheet_rows, columns=cols)
    judge = write_sheet(root / "judge.csv", judge_rows, columns=cols[:5])
    return run, sheet, judge


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_align_compares_every_metric_with_people(tmp_path):
    run, sheet, judge = write_study(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(
        make_app(),
        [
            "align",
            "-H",
            str(sheet),
            "--scores",
            str(judge),
            "--scores",
            str(run),
            "--out",
            str(out),
            "--bootstrap",
            "200",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = [r for r in read_csv(out / "metric_alignment.csv") if r["human_rubric"] == "Overall"]
    names = [r["metric"] for r in rows]
    # sorted by within-tutorial r: METEOR (the simulated signal) first, the constant metric last
    assert names[0] == "METEOR" and names[-1] == "Completion"
    assert {"Words", "Step Coverage", "Question Ratio", "LLM judge (mean of rubrics)"} <= set(names)
    by = {r["metric"]: r for r in rows}
    assert float(by["METEOR"]["within"]) > 0.8 and float(by["METEOR"]["pair_share"]) > 0.85
    assert float(by["METEOR"]["within_ci_low"]) > 0.5
    assert by["Words"]["baseline"] == "1" and by["Words"]["partial"] == ""
    assert "constant" in by["Completion"]["note"] and by["Completion"]["pearson"] == ""
    assert by["Question Ratio"]["n"] == "30"  # present for every second conversation: its n, not 60
    md = (out / "metric_alignment.md").read_text(encoding="utf-8")
    assert "nan" not in md.lower().replace("nanmean", "")
    assert "conversation length (Words)" in md and "no correlation" in md
    assert (out / "figures" / "metric_alignment.png").stat().st_size > 1000
    assert (out / "figures" / "metric_alignment_within.png").is_file()
    est = json.loads((out / "people_estimate.json").read_text())
    assert est["kind"] == "wikihowagent-people-estimate" and est["mode"] == "default"
    assert all(p["weight"] >= 0 for p in est["predictors"])
    assert "METEOR" in [p["name"] for p in est["predictors"]]
    assert est["out_of_fold"]["within_r"] > 0.7
    assert "Estimated Overall (people)" in (out / "people_estimate.md").read_text(encoding="utf-8")
    # the measured-validity file is written from these outputs by its command, and read back validated
    from wikihowagent.report.validity import load_validity, main

    jc = tmp_path / "jc"
    jc.mkdir()
    (jc / "metric_sensitivity.csv").write_text(
        "metric,better,perturbation,n,accuracy\nMETEOR,higher,terse,10,1.0\nMETEOR,higher,repeat,10,0.8\n"
    )
    target = tmp_path / "validity.json"
    args = ["--align", str(out), "--perturbations", f"demo={jc}", "--study", "a simulated study", "--measured", "today"]
    assert main([*args, "--rename", "LLM judge (mean of rubrics)=the judge", "--out", str(target)]) == 0
    val = load_validity(target)
    assert val.metrics["METEOR"].perturbations == {"demo": 0.9}
    assert val.metrics["METEOR"].within_r == pytest.approx(float(by["METEOR"]["within"]), abs=1e-4)
    assert "the judge" in val.metrics and val.ranked()[0][0] == "METEOR"


def test_a_sheet_whose_ids_match_no_scored_conversation_is_an_error(tmp_path):
    run, _, _ = write_study(tmp_path)
    sheet = write_sheet(
        tmp_path / "other.csv",
        [{"conversation_id": f"x{i}", "filename": "run", "title": "t", "clarity": 3} for i in range(5)],
        columns=("conversation_id", "filename", "title", "clarity"),
    )
    res = CliRunner().invoke(
        make_app(), ["align", "-H", str(sheet), "--scores", str(run), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 1
    assert (
        "no LLM score" in res.output or "contribute nothing" in res.output or "nothing could be computed" in res.output
    )


NOISE = ("BLEU", "ROUGE-1", "ROUGE-2", "ROUGE-L", "Diversity", "Question Ratio", "Completion")


def estimate_study(root: Path, signal: str, seed: int = 0, k: int = 8, runs: int = 3) -> tuple[Path, Path]:
    """Runs scored by `evaluate --no-judge` (METEOR and Step Coverage each one independent part of quality, the
    other cheap metrics noise) and one person's sheet whose Overall follows `signal`: "METEOR" (METEOR's part
    only: the fit of every metric can only add noise), "both" (both parts: only the fit sees both) or "none"
    (ratings unrelated to the conversations)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(runs):
        d = root / "runs" / f"run{r}"
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"name": f"run{r}", "teacher": f"m{r}", "learner": f"m{r}"}))
        with open(d / "scores.jsonl", "w") as fh:
            for t in range(k):
                for j in range(2):
                    cid = f"r{r}-t{t}-{j}"
                    q = rng.normal(size=2)
                    metrics = {m: round(float(rng.uniform(0.2, 0.8)), 4) for m in NOISE}
                    metrics["METEOR"] = round(float(np.clip(0.3 + 0.06 * q[0], 0, 1)), 4)
                    metrics["Step Coverage"] = round(float(np.clip(0.5 + 0.1 * q[1], 0, 1)), 4)
                    truth = {"METEOR": q[0], "both": q.sum(), "none": rng.normal()}[signal]
                    people = round(float(np.clip(3 + 0.8 * truth + 0.4 * rng.normal(), 1, 5)), 1)
                    rec = {"conversation_id": cid, "run": f"run{r}", "tutorial_id": f"t{t}", "title": f"How to {t}"}
                    rec |= {"teacher": f"m{r}", "learner": f"m{r}", "mode": "default", "metrics": metrics}
                    fh.write(json.dumps(rec) + "\n")
                    rows.append(
                        {"conversation_id": cid, "filename": f"run{r}", "title": f"How to {t}", "clarity": people}
                    )
    sheet = write_sheet(root / "people.csv", rows, columns=("conversation_id", "filename", "title", "clarity"))
    return root / "runs", sheet


@pytest.fixture(scope="module")
def aligned(tmp_path_factory):
    """signal -> (align's output folder, its console output), each study aligned once for the tests below."""
    done: dict[str, tuple[Path, str]] = {}

    def run(signal: str) -> tuple[Path, str]:
        if signal not in done:
            root = tmp_path_factory.mktemp(f"study-{signal}")
            runs, sheet = estimate_study(root, signal)
            out = root / "out"
            args = ["align", "-H", str(sheet), "--scores", str(runs), "--out", str(out), "--bootstrap", "200"]
            res = CliRunner().invoke(make_app(), [*args, "--no-figures"])
            assert res.exit_code == 0, res.output
            done[signal] = out, res.output
        return done[signal]

    return run


@pytest.mark.parametrize("signal", ["METEOR", "both"])
def test_align_writes_the_fit_only_when_it_beats_meteor_alone(aligned, signal):
    """The fit of every cheap metric is written when, out of fold, its within-tutorial r and its clear-pair share
    are both at least METEOR alone's; else METEOR alone fitted the same way, said in one line."""
    out, output = aligned(signal)
    est = json.loads((out / "people_estimate.json").read_text())
    rows = {r["score"]: r for r in read_csv(out / "people_estimate.csv")}
    fit, base = rows["estimate (out of fold)"], rows["METEOR alone (out of fold)"]
    beats = float(fit["within_r"]) >= float(base["within_r"]) and float(fit["pair_share"]) >= float(base["pair_share"])
    md = (out / "people_estimate.md").read_text(encoding="utf-8")
    assert "both at least METEOR alone's" in md  # the rule, stated
    if signal == "METEOR":  # noise metrics only add noise: the fit does not beat METEOR alone
        assert not beats and est["basis"] == "METEOR alone" and [p["name"] for p in est["predictors"]] == ["METEOR"]
        assert est["out_of_fold"]["within_r"] == pytest.approx(float(base["within_r"]))
        line = next(x for x in output.splitlines() if "did not beat METEOR alone" in x)
        assert "people_estimate.json holds METEOR alone" in line and "did not beat METEOR alone" in md
    else:  # Step Coverage carries what METEOR misses: the fit wins
        assert beats and est["basis"] == "cheap metrics"
        assert {"METEOR", "Step Coverage"} <= {p["name"] for p in est["predictors"]}
        assert est["out_of_fold"]["within_r"] == pytest.approx(float(fit["within_r"]))
        assert "did not beat" not in output + md


def test_align_writes_no_estimate_when_nothing_tracks_people(aligned):
    """Ratings unrelated to the conversations: no people_estimate.json; why, in people_estimate.md, in
    problems.txt and in one line on the terminal (the comparison is still written)."""
    out, output = aligned("none")
    assert not (out / "people_estimate.json").exists()
    md = (out / "people_estimate.md").read_text(encoding="utf-8")
    assert "No people_estimate.json written: nothing here tracks the people" in md and "includes 0" in md
    assert (out / "people_estimate.csv").is_file()
    assert "nothing here tracks the people" in (out / "problems.txt").read_text(encoding="utf-8")
    assert sum("nothing here tracks the people" in x for x in output.splitlines()) == 1


def test_people_estimate_md_states_the_users_study_not_the_projects(aligned):
    """people_estimate.md says what the user's study was (conversations, tutorials, raters, their agreement) and
    carries no goal of this project nor the caveat of the paper's study."""
    out, _ = aligned("METEOR")
    md = (out / "people_estimate.md").read_text(encoding="utf-8")
    assert "The study: 48 rated conversations of 8 tutorials" in md
    assert "rated by 1 rater (people.csv)" in md and "agreement between raters not measurable" in md
    assert "Goal" not in md and "0.55" not in md and "told to rate" not in md and "Caveat: one study" not in md


def test_align_json_outputs_name_no_path_of_this_machine(tmp_path):
    """calibration.json and people_estimate.json are made to be shared: each input is named (a run's score file
    with its run folder) with the sha256 of its bytes, never by a path of this machine; and so in every JSON
    file align writes."""
    import hashlib

    run, sheet, judge = write_study(tmp_path)
    out = tmp_path / "out"
    args = ["align", "-H", str(sheet), "--scores", str(judge), "--scores", str(run), "--out", str(out)]
    res = CliRunner().invoke(make_app(), [*args, "--bootstrap", "200", "--calibrate", "--no-figures"])
    assert res.exit_code == 0, res.output
    written = sorted(p for p in out.rglob("*") if p.suffix in (".json", ".jsonl"))
    assert {p.name for p in written} >= {"calibration.json", "people_estimate.json"}
    for p in written:
        text = p.read_text(encoding="utf-8")
        assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text, p.name
    sha = {f: hashlib.sha256(f.read_bytes()).hexdigest() for f in (sheet, judge, run / "scores.jsonl")}
    for name in ("calibration.json", "people_estimate.json"):
        doc = json.loads((out / name).read_text())
        assert doc["human_files"] == [{"name": "person.csv", "sha256": sha[sheet]}]
        assert doc["score_sources"] == [
            {"name": "judge.csv", "sha256": sha[judge]},
            {"name": "run/scores.jsonl", "sha256": sha[run / "scores.jsonl"]},
        ]


# ------------------------------------------------------------------------------------------ evaluate --people-estimate


def _table(tmp_path: Path, name: str, mode: str = "default", metrics: dict | None = None):
    from wikihowagent.runs import read_score_table

    p = tmp_path / f"{name}.jsonl"
    with open(p, "w") as fh:
        for i in range(6):
            rec = {
                "conversation_id": f"c{i}",
                "run": "r",
                "tutorial_id": f"t{i % 3}",
                "mode": mode,
                "metrics": metrics if metrics is not None else {"METEOR": 0.2 + 0.02 * i, "Echo Rate": 0.1},
            }
            fh.write(json.dumps(rec) + "\n")
    return read_score_table(p), p


def _estimate(tmp_path: Path) -> Path:
    from wikihowagent.records import EstimatePredictor, PeopleEstimate
    from wikihowagent.records_io import people_estimate_text

    est = PeopleEstimate(
        intercept=3.0,
        predictors=[
            EstimatePredictor(name="METEOR", mean=0.25, sd=0.05, weight=0.5),
            EstimatePredictor(name="Echo Rate", better="lower", mean=-0.1, sd=0.1, weight=0.2),
        ],
    )
    p = tmp_path / "people_estimate.json"
    p.write_text(people_estimate_text(est))
    return p


def test_the_estimate_is_added_and_refused_in_one_line(tmp_path):
    from wikihowagent.metrics import people_estimate as apply_est
    from wikihowagent.records import ESTIMATE_NAME

    path = _estimate(tmp_path)
    est = apply_est.load(path)
    table, src = _table(tmp_path, "ok")
    apply_est.check(est, path, table, str(src))
    added = apply_est.add_estimate(table, est)
    vals = added.column(ESTIMATE_NAME)
    assert vals[0] == pytest.approx(3.0 + 0.5 * (0.2 - 0.25) / 0.05)
    assert vals == sorted(vals)  # METEOR grows, Echo Rate is constant
    lacking, src2 = _table(tmp_path, "lacking", metrics={"METEOR": 0.3})
    with pytest.raises(apply_est.EstimateMismatch) as exc:
        apply_est.check(est, path, lacking, str(src2))
    assert "lacks Echo Rate" in str(exc.value) and "\n" not in str(exc.value)
    paper, src3 = _table(tmp_path, "paper", mode="paper")
    with pytest.raises(apply_est.EstimateMismatch) as exc:
        apply_est.check(est, path, paper, str(src3))
    assert "paper mode" in str(exc.value)
    # before any scoring: the mode evaluate would use, the metrics it would compute
    with pytest.raises(apply_est.EstimateMismatch, match="this evaluate computes them in paper mode"):
        apply_est.check_request(est, path, "paper", ["METEOR", "Echo Rate"])
    with pytest.raises(apply_est.EstimateMismatch, match="--metrics leaves out Echo Rate"):
        apply_est.check_request(est, path, "default", ["METEOR"])
    apply_est.check_request(est, path, "default", ["METEOR", "Echo Rate", "BLEU"])


def test_an_estimate_file_that_is_not_one_is_refused(tmp_path):
    from wikihowagent.metrics import people_estimate as apply_est

    p = tmp_path / "x.json"
    p.write_text(json.dumps({"kind": "wikihowagent-people-estimate", "intercept": 3.0, "predictors": []}))
    with pytest.raises(apply_est.EstimateMismatch, match="no predictor"):
        apply_est.load(p)
    p.write_text(json.dumps({"kind": "something"}))
    with pytest.raises(apply_est.EstimateMismatch, match="not a people-estimate file"):
        apply_est.load(p)


def _tampered(doc: dict, case: str) -> str:
    """A valid estimate file's JSON (`_estimate`) tampered as `case` names."""
    p0 = doc["predictors"][0]
    if case == "huge weight":
        p0["weight"] = 1e300
    elif case == "tiny sd":
        p0["sd"] = 1e-300
    elif case == "weight as a string":
        p0["weight"] = "1e3"
    elif case == "weight as a boolean":
        p0["weight"] = True
    elif case == "a predictor twice":
        doc["predictors"].append(dict(p0))
    elif case == "more predictors than metrics":
        doc["predictors"] = [dict(p0) for _ in range(40)]
    elif case == "mean off the metric's range":
        p0["mean"] = 7.0
    elif case == "a direction the metric does not have":
        p0["better"] = "lower"
    elif case == "a count as a string":
        doc["conversations"] = "70"
    elif case == "a correlation above 1":
        doc["out_of_fold"] = {"within_r": 3.0}
    return json.dumps(doc)


@pytest.mark.parametrize(
    "case, field",
    [
        ("huge weight", "predictors.0"),
        ("tiny sd", "predictors.0"),
        ("weight as a string", "predictors.0.weight"),
        ("weight as a boolean", "predictors.0.weight"),
        ("a predictor twice", "predictors.2"),
        ("more predictors than metrics", "predictors"),
        ("mean off the metric's range", "predictors.0"),
        ("a direction the metric does not have", "predictors.0"),
        ("a count as a string", "conversations"),
        ("a correlation above 1", "out_of_fold.within_r"),
    ],
)
def test_a_tampered_estimate_file_is_refused_in_one_line_naming_the_field(tmp_path, case, field):
    """Strict types, finite values within what the 1-5 scale and each metric's range make sensible, unique
    predictors of known metrics: anything else is refused before any estimate is made, in one line."""
    from wikihowagent.metrics import people_estimate as apply_est

    path = _estimate(tmp_path)
    apply_est.load(path)  # the untampered file is fine
    path.write_text(_tampered(json.loads(path.read_text()), case))
    with pytest.raises(apply_est.EstimateMismatch) as exc:
        apply_est.load(path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{path}: field '{field}'"), msg


def test_an_estimate_file_with_a_bom_is_read_and_a_huge_one_is_not(tmp_path):
    from wikihowagent.metrics import people_estimate as apply_est

    path = _estimate(tmp_path)
    text = path.read_text()
    path.write_text("\ufeff" + text, encoding="utf-8")  # as an editor on Windows saves it
    assert [p.name for p in apply_est.load(path).predictors] == ["METEOR", "Echo Rate"]
    from wikihowagent.runs import PEOPLE_ESTIMATE_MAX_BYTES

    path.write_text(text[:-2] + " " * PEOPLE_ESTIMATE_MAX_BYTES + "}\n")  # valid JSON, too large to be one
    with pytest.raises(apply_est.EstimateMismatch, match="bytes; a wikihowagent-people-estimate file is at most"):
        apply_est.load(path)


# ------------------------------------------------------------------------------------------ judge-check --metrics


def test_metric_cells_follow_the_metric_direction():
    from wikihowagent.judgecheck.metric_check import cells
    from wikihowagent.judgecheck.perturbations import Perturbation

    p = Perturbation("terse", "terse", "", ("Clarity",), {})
    scores = {}
    for i in range(10):
        scores[(str(i), "original")] = {"METEOR": 0.4, "Echo Rate": 0.1, "Words": 100.0}
        scores[(str(i), "terse")] = {"METEOR": 0.2, "Echo Rate": 0.3, "Words": 100.0}
    out = {c.metric: c for c in cells(scores, [str(i) for i in range(10)], [p], ["METEOR", "Echo Rate", "Words"], {})}
    assert out["METEOR"].accuracy == 1.0  # higher is better: the original's higher METEOR is preferred
    assert out["Echo Rate"].accuracy == 1.0  # lower is better: the original's lower echo is preferred
    assert out["Words"].accuracy == 0.5 and out["Words"].ties == 10  # blind: a tie each


def test_judge_check_metrics_runs_without_a_model(tmp_path, monkeypatch):
    """On real perturbed copies of two of the paper's conversations (two tutorials), with the model-free metrics
    only (no embedding model here)."""
    from wikihowagent.cli import app
    from wikihowagent.judgecheck import metric_check

    monkeypatch.setattr(
        metric_check, "check_metrics", lambda: ["METEOR", "Step Coverage", "Echo Rate", "Words", "Question Ratio"]
    )
    paper = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "T-llama3_L-llama3_E-llama3_123.json"
    out = tmp_path / "jc"
    res = CliRunner().invoke(app, ["judge-check", "--metrics", "--no-figures", "--out", str(out), str(paper)])
    assert res.exit_code == 0, res.output
    rows = read_csv(out / "metric_sensitivity.csv")
    cell = {(r["metric"], r["perturbation"]): float(r["accuracy"] or "nan") for r in rows}
    assert cell[("Words", "terse")] == 1.0  # a terse copy is shorter
    assert cell[("METEOR", "terse")] == 1.0 and cell[("METEOR", "off_topic")] == 1.0  # less of this tutorial
    assert cell[("Question Ratio", "passive_learner")] >= 0.5  # "OK." asks nothing
    assert {r["better"] for r in rows if r["metric"] == "Echo Rate"} == {"lower"}
    assert "Step Coverage" in (out / "metric_sensitivity.md").read_text(encoding="utf-8")
    res = CliRunner().invoke(app, ["judge-check", "--metrics", "--pairwise", "--out", str(out), str(paper)])
    assert res.exit_code == 2 and "asks no model" in res.output


# ------------------------------------------------------------------------------------------ measured validity


def test_the_report_leads_with_the_metrics_that_tracked_people():
    from wikihowagent.report.evidence import metrics_trust_html
    from wikihowagent.report.tables import _tracked_note

    text = metrics_trust_html()
    assert text.index("How far to trust the metrics") < text.index("METEOR") < text.index("Not clearly")
    assert "the baseline, conversation length" in text and "two raters" in text
    assert "people: r<sub>w</sub> +0.52" in _tracked_note("METEOR")
    assert _tracked_note("not a metric") == ""


def test_the_bundled_validity_file_loads_and_bad_values_are_refused(tmp_path):
    from wikihowagent.report.validity import ValidityError, load_validity

    val = load_validity()
    assert "METEOR" in val.metrics and val.metrics["METEOR"].within_r is not None
    assert "two raters" in val.caveat
    doc = json.loads(json.dumps(val.model_dump(mode="json")))
    doc["metrics"]["METEOR"]["within_r"] = 1.7
    p = tmp_path / "v.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ValidityError, match="within_r"):
        load_validity(p)


def test_evaluate_people_estimate_end_to_end(tmp_path):
    """`evaluate --people-estimate` adds the column with its CI to the summary; a file asking for a metric the
    evaluate leaves out is refused before any scoring, in one line."""
    import shutil

    from wikihowagent.cli import app
    from wikihowagent.records import ESTIMATE_NAME, EstimatePredictor, PeopleEstimate
    from wikihowagent.records_io import people_estimate_text

    run = tmp_path / "run_small"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "run_small", run)
    est = tmp_path / "est.json"
    est.write_text(
        people_estimate_text(
            PeopleEstimate(
                intercept=3.5,
                predictors=[
                    EstimatePredictor(name="Step Coverage", mean=0.5, sd=0.2, weight=0.4),
                    EstimatePredictor(name="Echo Rate", better="lower", mean=-0.1, sd=0.1, weight=0.1),
                ],
            )
        )
    )
    metrics = "Step Coverage,Echo Rate,Question Ratio"
    res = CliRunner().invoke(
        app, ["evaluate", str(run), "--no-judge", "--metrics", metrics, "--people-estimate", str(est)]
    )
    assert res.exit_code == 0, res.output
    summary = read_csv(run / "summary.csv")
    assert any(ESTIMATE_NAME in k for k in summary[0]), list(summary[0])
    res = CliRunner().invoke(
        app, ["evaluate", str(run), "--no-judge", "--metrics", "Question Ratio", "--people-estimate", str(est)]
    )
    assert res.exit_code == 2
    assert "--metrics leaves out Step Coverage, Echo Rate" in res.output.replace("\n", " ")


@pytest.mark.parametrize("weak", [True, False])
def test_evaluate_people_estimate_shows_its_figures_and_a_prediction_interval(tmp_path, weak):
    """Beside the estimate, the file's out-of-fold figures (and a warning when they are weak); its interval in
    the summary is a prediction interval: the bootstrap CI widened by the estimate's residual spread."""
    import shutil

    from wikihowagent.cli import app
    from wikihowagent.records import ESTIMATE_NAME, EstimatePredictor, PeopleEstimate
    from wikihowagent.records_io import people_estimate_text

    run = tmp_path / "run_small"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "run_small", run)
    low, share_low = (-0.14, 0.49) if weak else (0.32, 0.73)
    est = tmp_path / "est.json"
    est.write_text(
        people_estimate_text(
            PeopleEstimate(
                intercept=3.0,
                predictors=[EstimatePredictor(name="Step Coverage", mean=0.5, sd=0.2, weight=0.01)],
                conversations=70,
                tutorials=10,
                residual_sd=0.5,
                residual_sd_between_runs=0.2,
                out_of_fold={"within_r": 0.5, "within_r_ci_low": low, "within_r_ci_high": 0.6}
                | {"pair_share": 0.8, "pair_share_ci_low": share_low, "pair_share_ci_high": 0.9, "pairs": 106.0},
            )
        )
    )
    args = ["evaluate", str(run), "--no-judge", "--metrics", "Step Coverage", "--people-estimate", str(est)]
    res = CliRunner().invoke(app, [*args, "--no-figures"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert f"within-tutorial r +0.50 [{low:+.2f}, +0.60], clear pairs ordered as the people did 0.800" in out
    assert ("warning: Estimated Overall (people): the within-tutorial r's CI reaches 0" in out) is weak
    row = read_csv(run / "summary.csv")[0]
    n = int(row[f"{ESTIMATE_NAME} n"])
    lo, hi, mean = (float(row[f"{ESTIMATE_NAME} {k}"]) for k in ("ci_low", "ci_high", "mean"))
    half = 1.959963984540054 * math.sqrt(0.2**2 + 0.5**2 / n)  # at least the estimate's own error of a mean
    assert lo <= mean - half + 1e-3 and hi >= mean + half - 1e-3
    assert "95 % prediction interval of the people's mean" in (run / "summary.md").read_text(encoding="utf-8")


def test_the_alignment_section_escapes_metric_names(tmp_path):
    """A metric's name comes from a scores file: the report's alignment section escapes it."""
    from wikihowagent.report.sources import Problems
    from wikihowagent.report.tables import _metric_alignment_html

    d = tmp_path / "align"
    d.mkdir()
    cols = ["human_rubric", "metric", "n", "pearson", "within", "within_ci_low", "within_ci_high", "partial"]
    cols += ["pair_share", "pair_ci_low", "pair_ci_high", "note"]
    with open(d / "metric_alignment.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerow(["Overall", "<script>alert(1)</script>", 70, 0.5, 0.5, 0.4, 0.6, 0.3, 0.8, 0.7, 0.9, ""])
    html = _metric_alignment_html(d, Problems())
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "0.5 [0.4, 0.6]" in html  # within-tutorial r with its CI


def test_metric_and_domain_names_from_a_scores_file_are_escaped_in_the_markdown(tmp_path):
    """metric_alignment.md and correlations.md write outside names as cases.md does (`markdown_text`)."""
    from builders import METRICS, make_run, sheet_rows

    metric, domains = "<img src=x onerror=alert(1)>", ("<b>dom</b>", "Health<script>")
    rng = np.random.default_rng(0)
    tuts = [f"t{i}" for i in range(12)]
    scores = {t: {**{m: float(rng.integers(1, 6)) for m in METRICS}, metric: float(rng.random())} for t in tuts}
    ids = make_run(tmp_path / "runs", "r", tuts, scores)
    path = tmp_path / "runs" / "r" / "scores.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**rec, "domain": domains[i % 2]}) + "\n" for i, rec in enumerate(lines)))
    ratings = np.clip(np.array([[scores[t][m] for m in METRICS] for t in tuts]) + rng.integers(-1, 2, (12, 8)), 1, 5)
    sheet = write_sheet(tmp_path / "judge.csv", sheet_rows([ids[t] for t in tuts], ratings))
    out = tmp_path / "out"
    args = ["align", "-H", str(sheet), "--scores", str(path), "--out", str(out), "--by", "domain"]
    res = CliRunner().invoke(make_app(), [*args, "--bootstrap", "0", "--no-figures"])
    assert res.exit_code == 0, res.output
    table = (out / "metric_alignment.md").read_text(encoding="utf-8")
    assert "<img" not in table and "| &lt;img src=x onerror=alert\\(1\\)&gt; |" in table
    corr = (out / "correlations.md").read_text(encoding="utf-8")
    assert "<b>" not in corr and "<script>" not in corr
    assert "## domain: &lt;b&gt;dom&lt;/b&gt;" in corr and "## domain: Health&lt;script&gt;" in corr
