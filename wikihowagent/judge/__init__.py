"""The rubric judge and what the stages share about judging: rubrics and the judge (`rubric_judge`), its
prompts (`prompts`), the scoring modes and their registry (`modes`, `scoring`), the checklist (`checklist`),
the judge session (`session`), panels of judges (`panel`), calibrated judge scores (`calibrated`), the judge
and post-test command-line options (`options`) and the concurrency helpers (`gather`).

Importing this package is cheap: it imports none of its modules (numpy is loaded by `calibrated` only)."""
