# Two entry points for a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2

.PHONY: venv venv-gpu demo demo-slurm rehearsal test test-fast schema envs lint dag clean-demo bench aligner-production

venv: $(STAMP)

# torch is pinned to the CPU wheel on disk first so that nothing pulls a CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[workflow,test,lint,offline-encoder,ct2]"
	touch $(STAMP)

# The GPU environment (docs/gpus.md#environment): .venv-gpu with a CUDA build of torch, the GPU rules'
# extras, Snakemake with its SLURM plugin and what scripts/gpu_check.sh runs; `.venv-gpu/bin/snakemake`
# runs every rule with it. PyPI's torch for Linux x86_64 is a CUDA build; for an older driver, take
# another from TORCH_INDEX (https://download.pytorch.org/whl/cu126, with TORCH=torch if it lacks .venv's
# version). It stops when pip gave a CPU-only torch; a login node without a GPU can build it.
VENV_GPU := .venv-gpu
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
venv-gpu: $(VENV_GPU)/.installed

$(VENV_GPU)/.installed: pyproject.toml
	test -x $(VENV_GPU)/bin/python || $(PYTHON) -m venv $(VENV_GPU)
	$(VENV_GPU)/bin/pip install -q --upgrade pip
	$(VENV_GPU)/bin/pip install -q "$(TORCH)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(VENV_GPU)/bin/python -c 'import sys, torch; c = torch.version.cuda; print("torch", torch.__version__, "CUDA", c); sys.exit(0 if c else "venv-gpu: pip installed a CPU-only torch: set TORCH_INDEX")'
	$(VENV_GPU)/bin/pip install -q -e ".[gpu,workflow,gpu-check]"
	touch $@

# Rules call the `spanaug` installed beside this Snakemake (see workflow/rules/common.smk).
SNAKEMAKE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/snakemake

demo: $(STAMP)
	$(SNAKEMAKE) --profile profiles/local --configfile config/demo.yaml --cores $(CORES)
	$(SNAKEMAKE) --profile profiles/local --configfile config/demo.yaml --cores $(CORES) \
		--report results/demo/report.html

# The demo through profiles/slurm on a one-node SLURM cluster on this machine (scripts/slurm/cluster.sh:
# Debian 12, root; it installs SLURM when missing). Results go to results/demo-slurm/. Status checks
# every 5 s instead of 40 s: the demo's jobs are short. SLURM's own job logs are kept in
# results/demo-slurm/slurm_logs/ (rule_*/<SLURM job id>.log), and the last lines check that there are some
# and, after `make demo`, that the augmented rows are the local run's. It runs the iterations as production
# does, one job per shard (shard_jobs: chain), where `make demo` runs a job per stage: the rows must agree.
SLURM_RES := results/demo-slurm
demo-slurm: $(STAMP)
	command -v slurmctld >/dev/null || scripts/slurm/cluster.sh install
	scripts/slurm/cluster.sh start
	$(SNAKEMAKE) --profile profiles/slurm --configfile config/demo.yaml --config run_name=demo-slurm shard_jobs=chain \
		--jobs 4 --slurm-init-seconds-before-status-checks 5 --seconds-between-status-checks 5 \
		--slurm-logdir $(SLURM_RES)/slurm_logs --slurm-keep-successful-logs
	@n=$$(find $(SLURM_RES)/slurm_logs -name '[0-9]*.log' | wc -l); \
		echo "demo-slurm: $$n SLURM job logs in $(SLURM_RES)/slurm_logs"; test "$$n" -gt 0
	@if [ -f results/demo/augmented.parquet ]; then \
		$(BIN)/python scripts/same_rows.py results/demo/augmented.parquet $(SLURM_RES)/augmented.parquet; \
	else echo "demo-slurm: no results/demo/augmented.parquet (make demo) to compare the rows with"; fi

# A FrameNet-scale dress rehearsal on the same one-node cluster (not in CI; 5 minutes on 2 cores):
# the FN1.7 dev CoNLL's frame annotations as seeds, 10 iterations, 16 shards, stand-in models, three
# faults injected, then the same config run locally and compared row for row (scripts/rehearsal.py).
rehearsal: $(STAMP)
	command -v slurmctld >/dev/null || scripts/slurm/cluster.sh install
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python scripts/rehearsal.py $(REHEARSAL_ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

# No Snakemake, no real encoder, no shared data, a quarter of the fuzz cases: about a minute on 2 cores.
test-fast: $(STAMP)
	SPANAUG_FUZZ_EXAMPLES=10 $(BIN)/python -m pytest -q -m "not workflow and not integration" tests

# The config schema is generated from src/spanaug/core/config.py (tests check it is current).
schema: $(STAMP)
	$(BIN)/spanaug config schema --out workflow/schemas/config.schema.yaml

# The rules' conda environments are generated from pyproject.toml's dependencies (tests check they are current).
envs: $(STAMP)
	$(BIN)/spanaug config envs --out-dir envs

# Python (ruff's rules and formatting), the rules' formatting (snakefmt), Snakemake's own lints and the
# package's import contracts. CI runs it before the tests.
LINT_PY := src tests scripts
lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PY)
	$(BIN)/ruff format --check $(LINT_PY)
	$(BIN)/snakefmt --check workflow
	$(SNAKEMAKE) --lint --configfile config/demo.yaml
	$(BIN)/lint-imports

# The production span aligner, config/config.yaml's aligner.train, from ../shared/data alone, MiniLM on the CPU:
# `make aligner-production OUT=DIR`, then `spanaug align predict --model DIR ...`. The recipe is read from
# config/config.yaml (`spanaug config options`: the settings it changes, its data/ paths read from SHARED); the
# pre-training instances come from the shared FrameNet dev CoNLL (the workflow makes them from the imported
# corpus, as aligner.train.synthetic_lexicon says) and are written beside DIR.
SHARED ?= ../shared/data
PRODUCTION_ALIGNER = $(shell $(BIN)/spanaug config options --configfile config/config.yaml \
	--keys aligner.kind aligner.train --skip synthetic_lexicon --data-dir $(SHARED)) --encoder minilm
aligner-production: $(STAMP)
	@test -n "$(OUT)" || { echo "usage: make aligner-production OUT=DIR"; exit 2; }
	$(BIN)/spanaug align synthetic --conll $(SHARED)/fn1.7.dev.syntaxnet.conll \
		--lexicon $(SHARED)/framenet17-lexicon.json --out $(OUT).synthetic.jsonl
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/spanaug align train $(PRODUCTION_ALIGNER) \
		--pretrain $(OUT).synthetic.jsonl --out $(OUT) --device cpu

bench: $(STAMP)
	$(BIN)/python scripts/bench_scale.py

dag: $(STAMP)
	$(SNAKEMAKE) --configfile config/demo.yaml --rulegraph | dot -Tpng > docs/rulegraph.png

clean-demo:
	rm -rf results/demo
