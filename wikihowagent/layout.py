"""The names of the files and folders the stages write and read, in one place: a run directory's files, the
folders under a runs directory, and every output a stage writes that another stage (or the same one, later) reads
back. Each name is spelled here once, with the command that writes it; the code that reads or writes the file is
the stage's own (a run directory's readers and writers are in `runs.py`). Package data (wikihowagent/configs/,
wikihowagent/data/) is named by its loader (`config.resource_path`). Names only: this module imports nothing.
"""

RUN_INFO = "run.json"  # `generate` (`merge`, `chat`): what a run is (runs.RunInfo)
CONVERSATIONS = "conversations.jsonl"  # `generate`: one ConversationRecord per line
SCORES = "scores.jsonl"  # `evaluate`
SCORES_PAPER = "scores-paper.jsonl"  # `evaluate --compat paper`
SCORE_FILES = (SCORES, SCORES_PAPER)  # a run directory's score files, preferred first
RUN_FILES = (RUN_INFO, CONVERSATIONS, *SCORE_FILES)  # any of them makes a directory a run directory
PRETESTS = "pretests.jsonl"  # the pre-test cache: one answer per (learner model, tutorial)
POSTTESTS = "posttests.jsonl"  # `evaluate --posttest-learner`: post-tests of conversations that had none
SHARDS_DIR = "shards"  # <run>/shards/K-of-N/ (`generate --shard K/N`)
RESCORED_DIR = "rescored"  # <runs_dir>/rescored/<paper file stem>/ (`evaluate` on a paper run file)
PANEL_DIR = "panel"  # `judge-check --evaluator A --evaluator B --out OUT`: the panel's judgments in OUT/panel/
JUDGES_DIR = (
    "judges"  # <scores dir>/judges/<judge>/scores.jsonl: each judge of a panel (`evaluate --evaluator A --evaluator B`)
)
SUMMARY_DIR = "summary"  # <runs_dir>/summary/ (`evaluate` on several runs)
ALIGNMENT_DIR = "alignment"  # <runs_dir>/alignment/ (`align`)
COMPARE_DIR = "compare"  # <runs_dir>/compare/ (`compare`)
CHECKLIST_SCORES = "checklist-scores.jsonl"  # `compare --judge-scoring checklist`: each conversation's own scores
PAIR_JUDGMENTS = "pair-judgments.jsonl"  # `compare` / `judge-check --pairwise`: one PairwiseRecord per judge pass
OUTPUT_DIRS = frozenset({SUMMARY_DIR, ALIGNMENT_DIR, COMPARE_DIR})  # output directories under runs/, never a run
JUDGMENTS = "judgments.jsonl"  # `judge-check --out DIR`
SCORE_SHARDS_DIR = "score-shards"  # <run>/score-shards/K-of-N/scores.jsonl (`evaluate --shard K/N`)
SHARD_INFO = "shard.json"  # beside a score shard: its fingerprint

# What the stages write besides the run files: every name spelled here once; the stage that writes a file and
# any stage that reads it (e.g. `report` reading `align`'s output) use these.
FIGURES_DIR = "figures"
PROBLEMS_TXT = "problems.txt"
# in every folder a command replaces as a whole (align, report): what it wrote there (outdir.py)
OUTPUT_MANIFEST = ".wikihowagent-manifest.json"
SUMMARY_MD = "summary.md"  # evaluate, judge-check, compare
# evaluate
SUMMARY_CSV = "summary.csv"
BY_DOMAIN_CSV, BY_PERSONA_CSV = "by_domain.csv", "by_persona.csv"
CALIBRATED_SCORES_CSV = "calibrated_scores.csv"
RUBRICS_PNG, COMPUTATIONAL_PNG, BY_DOMAIN_PNG = "rubrics.png", "computational.png", "by_domain.png"
# judge-check
SENSITIVITY_CSV, CONSISTENCY_CSV, SENSITIVITY_PNG = "sensitivity.csv", "consistency.csv", "sensitivity.png"
PAIRWISE_SENSITIVITY_CSV, PAIRWISE_SUMMARY_MD = "pairwise_sensitivity.csv", "pairwise_summary.md"
PAIRWISE_SENSITIVITY_PNG = "pairwise_sensitivity.png"
POSTTEST_VALIDITY_CSV, POSTTEST_VALIDITY_MD = "posttest_validity.csv", "posttest_validity.md"  # --posttest-learner
POSTTEST_VALIDITY_SETS_CSV = "posttest_validity_by_set.csv"  # judge-check --posttest-learner --tutorials
POSTTEST_LIKELIHOOD_CSV = "posttest_likelihood_validity.csv"  # ... --posttest-likelihood
POSTTEST_LIKELIHOOD_SETS_CSV = "posttest_likelihood_validity_by_set.csv"  # ... with --tutorials
JUDGE_CHECK_LOCK = ".judge-check.lock"
# annotate export / align
ANNOTATION_SHEET = "annotation_sheet.csv"
KEY_SUFFIX = ".key.csv"  # a blind sheet's key: <sheet stem>.key.csv
CORRELATIONS_CSV, CORRELATIONS_MD = "correlations.csv", "correlations.md"
DESCRIPTIVES_CSV, PAIRED_SCORES_CSV = "descriptives.csv", "paired_scores.csv"
AGREEMENT_CSV, AGREEMENT_PAIRS_CSV = "agreement.csv", "agreement_pairs.csv"
AUTOMATIC_CSV = "automatic.csv"  # the post-test's metrics vs the human ratings
EMBEDDED_JUDGE_JSON = "embedded_judge.json"  # data/: the embedded judge's measured figures (report/measured.py)
METRIC_ALIGNMENT_CSV = "metric_alignment.csv"  # align: every metric against people
METRIC_ALIGNMENT_MD = "metric_alignment.md"
METRIC_ALIGNMENT_PNG = "metric_alignment.png"  # figures/: metrics x human rubrics, Pearson r (the paper's Fig. 7)
METRIC_ALIGNMENT_WITHIN_PNG = "metric_alignment_within.png"  # figures/: the same, within-tutorial r
PEOPLE_ESTIMATE_JSON = "people_estimate.json"  # align: the people-calibrated estimate (`evaluate --people-estimate`)
PEOPLE_ESTIMATE_MD = "people_estimate.md"
PEOPLE_ESTIMATE_CSV = "people_estimate.csv"  # its out-of-fold figures beside METEOR alone and the judge
METRIC_SENSITIVITY_CSV = "metric_sensitivity.csv"  # judge-check --metrics: every metric against the perturbations
METRIC_SENSITIVITY_MD = "metric_sensitivity.md"
METRIC_SENSITIVITY_PNG = "metric_sensitivity.png"
METRIC_VALIDITY_JSON = "metric_validity.json"  # data/: each metric's measured validity (report/validity.py)
PAIR_ORDER_CSV = "pair_order.csv"  # align: pairs of one tutorial the people clearly ordered, as the judge ordered them
SCORE_DISTRIBUTIONS_PNG, CORRELATION_HEATMAP_PNG = "score_distributions.png", "correlation_heatmap.png"
CALIBRATION_CSV, CALIBRATION_MD, CALIBRATION_JSON = "calibration.csv", "calibration.md", "calibration.json"
# align --fit-checklist (alignment/checklist_fit.py): uniform vs fitted item weights, and the weights file
CHECKLIST_FIT_CSV, CHECKLIST_FIT_MD, CHECKLIST_WEIGHTS_JSON = (
    "checklist_fit.csv",
    "checklist_fit.md",
    "checklist_weights.json",
)
CALIBRATION_PREDICTIONS_CSV, CALIBRATION_PNG = "calibration_predictions.csv", "calibration.png"
PPI_CSV, PPI_MD = "ppi.csv", "ppi.md"
JUDGES_CSV, JUDGES_MD = "judges.csv", "judges.md"  # `align`: every judge (a panel's too) beside the humans
# compare
PAIRWISE_CSV, WIN_RATES_CSV, POSITION_CSV = "pairwise.csv", "win_rates.csv", "position.csv"
BRADLEY_TERRY_CSV, HEAD_TO_HEAD_PNG = "bradley_terry.csv", "head_to_head.png"
OVERALL = "overall"  # the rubric column's value of compare's rows of every rubric pooled (read back by report)
HEAD_TO_HEAD_HTML = "head-to-head.html"  # `report --compare DIR`
# stats
STATS_DOMAINS_CSV, STATS_TOPICS_CSV, STATS_MD = "domains.csv", "topics.csv", "stats.md"
SUNBURST_PNG, STEPS_HISTOGRAM_PNG = "sunburst.png", "steps_histogram.png"
# report
INDEX_HTML, CONVERSATION_HTML = "index.html", "conversation.html"
PAGE_SUFFIX = ".html"  # a report page added to report.core.PAGES writes <its name>.html
CASES_MD, CASES_HTML = "cases.md", "cases.html"
REPORT_CSS, REPORT_JS, CONVERSATION_JS = "report.css", "report.js", "conversation.js"
REPORT_ASSETS = (REPORT_CSS, REPORT_JS, CONVERSATION_JS)  # bundled in wikihowagent/report/assets/
REPORT_INDEX_JS = "index.js"  # data/index.js
REPORT_VALUES_JS = "values.js"  # data/values.js
RADAR_RUBRICS_PNG, RADAR_COMPUTATIONAL_PNG, DOMAIN_BARS_PNG = (
    "radar_rubrics.png",
    "radar_computational.png",
    "domain_bars.png",
)
# sweep
SWEEP_INFO = "sweep.json"  # written into the sweep's out directory: marks it as a sweep for `evaluate` / `report`
SWEEP_MODELS = "models.yaml"  # the sweep's aliases (model -> spec + endpoints), given to every task
SWEEP_CONFIG = "config.yaml"  # the config every task runs with (the user's config + the aliases above)
SWEEP_SBATCH = "sweep.sbatch"
MERGE_LOCK = ".merge.lock"
