"""Human alignment study (paper §3.2, §5.3): annotation sheets for human judges, and the agreement
between the LLM judge's rubric scores and human ratings.

Modules (all plain, importable; nothing heavy happens at import of this package):

- `schema`       the rubric names (from wikihowagent/data/rubrics.json), the sheet's layout, known column names
- `problems`     the problem log (one located line per thing left out) and the input errors
- `tables`       reading CSV/TSV (delimiter sniffing, spreadsheet row numbers), CSV cells, stars
- `score_cells`  one score cell -> a 1-5 number or NaN (reported)
- `sources`      reading run directories, `scores.jsonl`, wide score CSVs and the paper's run files
- `annotations`  reading and validating human annotation files (one per judge, or one long file)
- `export`       selecting tutorials and writing the annotation sheet + its HTML companion
- `stats`        correlations with bootstrap CIs, descriptives, inter-annotator agreement
- `figures`      box plots (paper Figures 6/8) and the coefficient heatmap (Figure 7)
- `core`         the `align` stage: `run_alignment` (compute, write CSV/Markdown/figures), render (rich)
- `command`      thin typer command functions registered by `wikihowagent.cli`
"""
