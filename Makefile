# Quick start:  make bench-quick   |   make bench-all (REPEAT=3 for intervals: ~35 h)   |   make test
# Overrides:    TOOLS=wrk,ab  SCENARIOS=scenarios/shootout.yaml:vu20-rtt0.1  RUNTIME=docker|host  DURATION=5
#               SHAPER=auto|netem|toxiproxy  RESUME=results/<folder> [FORCE=1]  RESULTS_ROOT=results
#               CAPTURE=1 (tcpdump: wire latency next to each tool's)
#               SCENARIOS=scenarios/targets.yaml (keep-alive off, HTTPS, proxies, a slow backend: docs/targets.md)
#               CPUS_TARGET=0  CPUS_TOOL=1  ISOLATION=0 (target and tool share every CPU)  GRACE=30 (s past the duration)
#               TARGET_HOST=ssh://root@host|CONTEXT (Nginx on another machine; docs/machines.md)
#               GENERATOR_HOST=ssh://root@a|CONTEXT[,...] (the tools there, with TARGET_HOST; several: merged)
#               GENERATORS=1|2 (make bench-lab: generator and target hosts made here; RUNTIME=host there by default)
#               RUNTIME=swarm GENERATORS=2 SWARM_INIT=1 (generators as Docker Swarm tasks; docs/engines.md)
#               make bench-capacity (RUNTIME defaults to host there): STEP_DURATION=5  SLO_P99_MS=  RESOLUTION=0.02
#               MAX_STEPS=12  START_RPS=1000  VUS=1000  (and TOOLS, CAPTURE, RESUME, RESULTS_ROOT, CPUS_*, ISOLATION, GRACE)
PY        := .venv/bin/python
# The command every target calls (harness/cli.py; `python -m harness` is the same). A variable's name is its flag's
# (RESULTS_ROOT is --results-root) and its default the flag's (tests/test_options.py checks both).
LTH       := .venv/bin/lth
.DEFAULT_GOAL := help
# Python caches each module's bytecode on first import (the venv's installer writes none): a machine that sets
# PYTHONDONTWRITEBYTECODE compiled pandas, numpy and matplotlib afresh in every process here (~4 s of CPU each
# on 2 cores, 10 times that in the netem VM, which reads the caches the host wrote).
unexport PYTHONDONTWRITEBYTECODE
TOOLS     ?= all
SCENARIOS ?= scenarios/shootout.yaml
RUNTIME   ?= docker
DURATION  ?=
SHAPER    ?= auto
# The test suite runs every tool end to end (tests/test_tools_e2e.py), so it installs them all.
TEST_TOOLS := all

REPEAT    ?= 1
RESULTS_ROOT ?= results
RESUME    ?=
FORCE     ?=
CAPTURE   ?=
CPUS_TARGET ?=
CPUS_TOOL ?=
ISOLATION ?= 1
GRACE     ?=
TARGET_HOST ?=
GENERATOR_HOST ?=
SLO       ?=
SWARM_INIT ?=
CPU_ARGS = $(if $(CPUS_TARGET),--cpus-target $(CPUS_TARGET)) $(if $(CPUS_TOOL),--cpus-tool $(CPUS_TOOL)) \
           $(if $(filter 0,$(ISOLATION)),--no-isolation,--isolation) $(if $(GRACE),--grace $(GRACE))
RUN_ARGS = --tools $(TOOLS) --scenarios $(SCENARIOS) --runtime $(RUNTIME) --shaper $(SHAPER) --repeat $(REPEAT) \
           --results-root $(RESULTS_ROOT) \
           $(if $(DURATION),--duration $(DURATION)) $(if $(RESUME),--resume $(RESUME)) $(if $(FORCE),--force) \
           $(CPU_ARGS) $(if $(CAPTURE),--capture) $(if $(TARGET_HOST),--target-host $(TARGET_HOST)) \
           $(if $(GENERATOR_HOST),--generator-host $(GENERATOR_HOST)) $(if $(SLO),--slo $(SLO)) $(SWARM_ARGS)
# RUNTIME=swarm (docs/engines.md): GENERATORS tasks per run; SWARM_INIT=1 makes a single-node swarm, left as found.
SWARM_ARGS = $(if $(filter swarm,$(RUNTIME)),$(if $(GENERATORS),--generators $(GENERATORS)) $(if $(SWARM_INIT),--swarm-init))

.PHONY: deps bench-all bench-quick bench-capacity bench-lab test test-netem compare-shapers test-unit test-tools test-e2e list-tools clean-state report rederive compare

# Bare `make`: this list, and nothing installed or started. Each target's line is the `##` comment beside it.
help:
	@echo "lth: which load generator should I trust, and how much does it cost me?  (README.md, docs/)"
	@echo "make TARGET [VARIABLE=value ...]; the command behind them: .venv/bin/lth --help"
	@echo
	@grep -E '^[a-z][a-z0-9-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z0-9-]+):.*## (.*)$$/  \1|\2/' | \
	  awk -F'|' '{ printf "  %-16s %s\n", $$1, $$2 }' | sed 's/^    /  /'
	@echo
	@echo "variables: TOOLS=wrk,ab SCENARIOS=FILE[:id,...] RUNTIME=docker|host DURATION=10 REPEAT=3 CAPTURE=1 SLO=p99_ms=25"
	@echo "           RESULTS_ROOT=results RESUME=results/<folder> (docs/options.md: every one)"

# What the chosen runtime runs: RUNTIME=docker the engine (the tools are installed in their images, when the
# suite builds them), RUNTIME=host the tools on this machine (docs/runtimes.md).
deps:
	NEED_DOCKER=$(if $(filter host,$(RUNTIME)),0,1) NEED_TOOLS=$(if $(filter docker swarm,$(RUNTIME)),0,1) scripts/deps.sh $(TOOLS)

# The report is written even when some runs failed (exit status 1) or the run was interrupted (130);
# not when nothing ran (2: bad input or another benchmark running, said in one line). The exit status
# is the harness's either way. SVG=1: every chart as SVG too (the page shows the PNGs).
REPORT_ARGS = $(if $(filter-out 0,$(SVG)),--svg)
REPORT_AFTER = status=$$?; [ $$status -eq 2 ] || $(LTH) report $(REPORT_ARGS) $(or $(RESUME),$(RESULTS_ROOT)/latest); exit $$status

bench-all: deps  ## the whole shootout (scenarios/shootout.yaml), every tool, then its report
	$(LTH) run $(RUN_ARGS); $(REPORT_AFTER)

bench-quick: SCENARIOS = scenarios/quick.yaml
bench-quick: deps  ## two scenarios, 10 s each, every tool: the quick start
	$(LTH) run $(RUN_ARGS); $(REPORT_AFTER)

# Each tool's highest sustained arrival rate against Nginx, by search (harness/capacity/run.py;
# docs/capacity.md): every step an ordinary row, the results in capacity.json. RUNTIME=docker to run it in Docker.
STEP_DURATION ?=
SLO_P99_MS ?=
RESOLUTION ?=
MAX_STEPS ?=
START_RPS ?=
VUS       ?=
CAPACITY_ARGS = --tools $(TOOLS) --runtime $(RUNTIME) --results-root $(RESULTS_ROOT) \
                $(if $(STEP_DURATION),--step-duration $(STEP_DURATION)) $(if $(SLO_P99_MS),--slo-p99-ms $(SLO_P99_MS)) \
                $(if $(RESOLUTION),--resolution $(RESOLUTION)) $(if $(MAX_STEPS),--max-steps $(MAX_STEPS)) \
                $(if $(START_RPS),--start-rps $(START_RPS)) $(if $(VUS),--vus $(VUS)) \
                $(if $(CAPTURE),--capture) $(if $(RESUME),--resume $(RESUME)) $(CPU_ARGS)
bench-capacity: RUNTIME = host
bench-capacity: deps  ## each tool's highest sustained arrival rate, by search
	$(LTH) capacity $(CAPACITY_ARGS); $(REPORT_AFTER)

# What the harness costs the figure it measures (issue 53, docs/overhead.md): each tool through the harness
# against the same command by hand, each side with its own Nginx (the same config, workers and CPUs), in
# interleaved pairs of DURATION s (3), until the ratio's 95% interval is within +-PRECISION (0.02), or PAIRS pairs.
# RESUME=results/<UTC>-overhead adds pairs to that check (one stopped, or not yet precise) until the goal.
# BY_HAND_TOP=1 runs the harness's top beside the tool by hand too: the ratio leaves top's cost out.
.PHONY: bench-overhead
bench-overhead: RUNTIME = both
bench-overhead: TOOLS = wrk,oha
bench-overhead:  ## harness vs the same tool by hand: RPS ratio with its interval, until +-2% (RUNTIME=both, host or docker)
	NEED_DOCKER=$(if $(filter host,$(RUNTIME)),0,1) NEED_TOOLS=$(if $(filter docker swarm,$(RUNTIME)),0,1) scripts/deps.sh $(TOOLS)
	$(LTH) overhead --runtime $(RUNTIME) --tools $(TOOLS) $(if $(PAIRS),--pairs $(PAIRS)) \
	  $(if $(PRECISION),--precision $(PRECISION)) $(if $(MAX_PAIRS),--max-pairs $(MAX_PAIRS)) \
	  $(if $(DURATION),--duration $(DURATION)) $(if $(RESUME),--resume $(RESUME)) $(if $(BY_HAND_TOP),--by-hand-top) \
	  --results-root $(RESULTS_ROOT)

# bench-quick across "machines" made on this one for the run (harness/lab.py: sshd in network
# namespaces on one bridge): the tools on GENERATORS test hosts, Nginx on another (docs/machines.md).
# RUNTIME=docker: every test host gets its own Docker engine; Nginx and the tools run in containers there.
GENERATORS ?=
bench-lab: SCENARIOS = scenarios/quick.yaml
bench-lab: RUNTIME = host
bench-lab:  ## bench-quick with the tools and Nginx on test hosts made here (GENERATORS=2, RUNTIME=docker)
	NEED_DOCKER=$(if $(filter docker,$(RUNTIME)),1,0) NEED_SSHD=1 scripts/deps.sh $(TOOLS)
	$(LTH) lab $(if $(GENERATORS),--generators $(GENERATORS)) $(if $(filter docker,$(RUNTIME)),--docker) -- $(RUN_ARGS); $(REPORT_AFTER)

# RESULTS="results/A results/B" overlays several results folders (two machines, host vs docker...).
RESULTS ?= $(RESULTS_ROOT)/latest
report:  ## the report of results/latest (RESULTS="A B": several folders in one)
	$(LTH) report $(REPORT_ARGS) $(RESULTS)

# B against A, per tool and scenario: the change with its 95% interval and a verdict (analysis/compare.py),
# and the report of both folders beside it.
A ?=
B ?=
FAIL_ON ?=
compare:  ## B against A with intervals: make compare A=results/<one> B=results/<other> [FAIL_ON=slower]
	@[ -n "$(A)" ] && [ -n "$(B)" ] || { echo "error: make compare needs two results folders: A=results/<one> B=results/<other>" >&2; exit 2; }
	@DEPS_VENV_ONLY=1 scripts/deps.sh
	$(LTH) compare $(A) $(B) $(if $(FAIL_ON),--fail-on $(FAIL_ON))

# runs.csv and meta.json derived again from a results folder's raw files (harness/row), e.g. after a parser fix.
rederive:  ## runs.csv and meta.json derived again from a folder's raw files (RESULTS=...)
	@DEPS_VENV_ONLY=1 scripts/deps.sh
	$(LTH) rederive $(RESULTS)

# The whole suite, as CI runs it (.ci/run): root, Docker, every tool, Chromium and the VM kernel installed
# first, the Docker images built beside the installs (BUILD_IMAGES=1: their first Docker run finds them), then its tiers (scripts/run-tests.py): unit (in parallel), the as-typed and end-to-end tests (one
# at a time), the netem VM tier; it fails if any does, and ends with each tier's wall time against the
# budget (tests/README.md). What an earlier run killed with -9 left on this machine (a session's stop, a
# shared CI host) is swept first and listed: the suite's own leak checks are about what the suite leaves.
test:  ## the whole test suite, as CI runs it (installs what it needs)
	BUILD_IMAGES=1 NEED_BROWSER=1 NEED_SSHD=1 scripts/deps.sh $(TEST_TOOLS)
	scripts/install-vm.sh
	$(PY) scripts/run-tests.py --installed-since $(shell date +%s)   # make expands it before the first line runs

# netem on a real kernel: Debian's stock kernel booted with virtme-ng (scripts/install-vm.sh,
# scripts/in-vm), the tests in tests/netem_vm run inside it in the host runtime; their results stay in
# results/netem-vm (docs/shaping.md). compare-shapers: the same runs with Toxiproxy beside them,
# the table in results/netem-vm/shapers.md.
NETEM_TOOLS := wrk,ab,oha
IN_VM = scripts/in-vm --rwdir $(CURDIR)/results/netem-vm -- env LTH_IN_VM=1 LTH_VM_OUT=$(CURDIR)/results/netem-vm \
        LTH_TEST_TOOLS=$(NETEM_TOOLS) $(PY) -m pytest -q -rs -p no:cacheprovider tests/netem_vm
test-netem compare-shapers:
	NEED_DOCKER=0 scripts/deps.sh $(NETEM_TOOLS)
	scripts/install-vm.sh
	mkdir -p results/netem-vm
	$(IN_VM) --durations=0 --junitxml=$(CURDIR)/results/netem-vm/junit.xml $(if $(filter compare-shapers,$@),-m shapers,-m "not shapers")

# The quick loop: no root, Docker, tools or network (only the venv is made or updated); a test file
# per worker (pytest-xdist; a module's fixture runs once), one worker more than CPUs because many
# unit tests wait (top's 1 s frames, a fake tool's start-up) rather than compute.
test-unit:  ## the fast tests: no root, Docker, tools or network
	@DEPS_VENV_ONLY=1 scripts/deps.sh
	$(PY) -m pytest -q -rs -m "not e2e" -n $$(( $$(nproc) + 1 )) --dist loadfile tests

# A tool folder's checks (tools/README.md, adding a tool, step 7): every tool's parser tests on its captured
# outputs, the manifests, Dockerfiles and README table, discovery; seconds where the unit tier takes minutes.
test-tools:  ## the tool folders' checks and every parser test
	@DEPS_VENV_ONLY=1 scripts/deps.sh
	$(PY) -m pytest -q -rs -m "not e2e" tests/tools tests/test_registry.py

# The end-to-end tests of the selected tools only (TOOLS=wrk,ab; all: every end-to-end test).
test-e2e:  ## the end-to-end tests of TOOLS=... only
	NEED_BROWSER=1 NEED_SSHD=1 scripts/deps.sh $(TOOLS)
	LTH_TEST_TOOLS=$(TOOLS) $(PY) -m pytest -q -rs -m e2e tests

list-tools:  ## every tool, its version and what it can do
	$(LTH) tools

# Remove what a killed (kill -9) harness left: namespaces, veths, containers, networks, proxies.
clean-state:  ## remove what a killed run left (namespaces, containers, networks)
	$(LTH) clean-state $(if $(TARGET_HOST),--target-host $(TARGET_HOST)) \
	    $(if $(GENERATOR_HOST),--generator-host $(GENERATOR_HOST))

# The README's tool table, from tools/<id>/tool.toml (tests/tools/test_manifests.py checks it).
.PHONY: readme-tools go-lock deps-wait
readme-tools:
	$(LTH) tools --readme

# A Go tool's go.mod/go.sum from its tool.toml (tools/README.md, compiled tools); OLDER=1: the newest earlier
# release whose every module the proxy serves, written back into tool.toml.
TOOL ?=
OLDER ?=
go-lock:  ## a Go tool's go.mod/go.sum: make go-lock TOOL=<id> [OLDER=1]
	@[ -n "$(TOOL)" ] || { echo "error: make go-lock needs the tool's id: make go-lock TOOL=<id>" >&2; exit 2; }
	scripts/go-lock.sh $(TOOL) $(if $(OLDER),--older)

deps-wait:  ## wait for make deps' background compile; says done or failed
	@scripts/wait-compiles.sh

# The three fuzzers of tests/test_fuzz.py (every parser, the capture reader, the scenario loader) run longer by
# hand: FUZZ_INPUTS inputs each (the unit tier runs a few hundred), FUZZ_SEED to vary them. No load is started.
FUZZ_INPUTS ?= 6600
FUZZ_SEED ?= 54
.PHONY: fuzz
fuzz:  ## the parser, capture and scenario fuzzers, longer than in the unit tier
	LTH_FUZZ_INPUTS=$(FUZZ_INPUTS) LTH_FUZZ_SEED=$(FUZZ_SEED) LTH_FUZZ_EXAMPLES=$(FUZZ_INPUTS) \
	  $(PY) -m pytest -q -s -m "not e2e" tests/test_fuzz.py tests/test_bad_input.py -k fuzz

# Container against bare metal in one command (lth host-vs-docker, harness/suite/interleave.py): the same scenarios
# (default: the quick start's) with the same tools on the host and in Docker, interleaved: run by run (scenario, tool,
# repeat), both runtimes one right after the other, the one going first alternating; each runtime its own
# results folder, resumed step by step. Then B = Docker against A = host with intervals where REPEAT=3 ran
# (analysis/compare.py) and the report of both folders, whose "Container vs bare metal" section holds the ratios.
# The answer: results/compare-<timestamp>/report/index.html#ratios. Stopped half way: RESUME_HOST= RESUME_DOCKER=
# (the two folders it printed) goes on.
RESUME_HOST ?=
RESUME_DOCKER ?=
.PHONY: bench-compare help
bench-compare: SCENARIOS = scenarios/quick.yaml
bench-compare: RUNTIME = both
bench-compare: deps  ## container vs bare metal: both runtimes interleaved on the same scenarios, then the comparison report
	$(LTH) host-vs-docker --tools $(TOOLS) --scenarios $(SCENARIOS) --shaper $(SHAPER) --repeat $(REPEAT) \
	  --results-root $(RESULTS_ROOT) $(if $(DURATION),--duration $(DURATION)) $(if $(CAPTURE),--capture) $(CPU_ARGS) \
	  $(if $(RESUME_HOST),--resume-host $(RESUME_HOST)) $(if $(RESUME_DOCKER),--resume-docker $(RESUME_DOCKER))
