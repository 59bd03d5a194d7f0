"""The rubric judge and what the stages share about judging: rubrics and the judge (`rubric_judge`), its
prompt variants (`prompt_variants`), the scoring modes and their registry (`modes`, `scoring`), the checklist
(`checklist`), the judge session (`session`), panels of judges (`panel`), calibrated judge scores
(`calibrated`), the judge's and post-test's options as a command was given them (`request`) and the
concurrency helpers (`gather`).

Importing this package is cheap: it imports none of its modules (numpy is loaded by `calibrated` only)."""
