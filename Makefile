# SPDX-License-Identifier: MIT
# nodetune — build, test, install, demo.
#
#   make            build build/nodetune and build/nodetune-harness
#   make check      deps, build, each fuzz target for FUZZ_SMOKE_TIME seconds with the lint beside
#                   them, the unit tests, again under ASan+UBSan, then the integration scripts of
#                   both builds in one run
#   make fuzz       each libFuzzer target (tests/fuzz/fuzz_*.c) for FUZZ_TIME seconds
#   make demo       deps, build, run the main job on this machine
#   make demo-fleet deps, build, roll policies over 12 simulated hosts on a local etcd
#   make docs-ab    the sample A/B report and its screenshot in docs/ (root, chromium)
#   make install    PREFIX=/usr/local DESTDIR= (UNITDIR, SYSCONFDIR, SPANKDIR, PYTHONDIR: see "install")
#   make deb        the Debian packages nodetune and nodetune-slurm, in build/deb
#   make man        the man pages, in build/man
#   make mutation   the mutation score of the security- and correctness-critical modules (slow)
#
# Everything is built out of tree into $(BUILD).  Entry points that need the
# Debian packages run scripts/install-deps.sh first (a quick no-op when they
# are installed).

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
SAN      ?=
# libFuzzer targets: tests/fuzz/fuzz_<name>.c, seeds in tests/fuzz/corpus/<name>/
FUZZ_TIME       ?= 60
# make check's smoke: each target replays its seeds, then mutates for the
# rest of FUZZ_SMOKE_TIME.  6 s, where it was 10: 17 targets two at a time,
# about 60 s of both CPUs where 10 s took 102, the largest share of make
# check's CPU time outside the integration scripts (bench/RESULTS.md
# section 19.7); the seeds still all run, and 60 s a target is `make fuzz`.
FUZZ_SMOKE_TIME ?= 6

PKGS      := hwloc jansson libcgroup libcurl libmd libmicrohttpd libsodium libsystemd numa
# -D_GNU_SOURCE: openat/faccessat, vasprintf, getopt_long and sched_* come
# from glibc's GNU set.  -Wformat=2 -Wshadow catch printf and scoping bugs
# that -Wall -Wextra let through.
WARN      := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wstrict-prototypes
CFLAGS    ?= -O2 -g
# -fPIC: the library is linked into the Slurm plugin (a shared object) too
# CPPFLAGS and LDFLAGS: the build's own (dpkg-buildflags' hardening, for the .debs)
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC $(WARN) $(CPPFLAGS) $(CFLAGS) -MMD -MP -Icommon -Iagent/lib \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS       = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

# SAN=1: ASan + UBSan.  SAN=fuzz: the same, plus libFuzzer's coverage
# instrumentation (clang only; see "fuzzing" below).
ifneq ($(filter 1 fuzz,$(SAN)),)
ALL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDSAN      := -fsanitize=address,undefined
# hwloc dlopen()s its pci plugin and dlclose()s it at exit; libpciaccess goes
# with it, and the memory its globals still point to then looks leaked to
# LeakSanitizer.  Keeping libpciaccess loaded removes that false report
# without suppressing anything (a real leak under hwloc would still show).
ifneq ($(shell ldconfig -p 2>/dev/null | grep -c 'libpciaccess.so.0 '),0)
LDSAN      += -Wl,--no-as-needed -l:libpciaccess.so.0 -Wl,--as-needed
endif
endif
ifeq ($(SAN),fuzz)
ALL_CFLAGS += -fsanitize=fuzzer-no-link
endif

# One version for every binary (and the packages): the file VERSION, passed
# as -DNODETUNE_VERSION to the CLI and the harness; a change rebuilds them.
VERSION   := $(shell cat VERSION)

# libnodetune: the agent's engine (agent/lib/, no main(), no exit()), linked
# by the CLI (agent/cli/), the tests and the fuzz targets.
LIB_SRCS  := $(wildcard agent/lib/*/*.c) common/nt_err.c common/nt_duration.c
CLI_SRCS  := $(wildcard agent/cli/*.c)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libnodetune.a
NODETUNE  := $(BUILD)/nodetune

# ---- the harness: C + OpenBLAS + zstd, MPI when found, CUDA when nvcc is
# found (never under the sanitizers: cudart does not run under ASan) --------
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(if $(SAN),,$(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null)))
HAVE_MPI  := $(shell pkg-config --exists ompi-c 2>/dev/null && echo 1)
HPKGS     := openblas libzstd numa $(if $(HAVE_MPI),ompi-c)
H_CFLAGS   = $(ALL_CFLAGS) $(shell pkg-config --cflags $(HPKGS) 2>/dev/null) \
             $(if $(HAVE_MPI),-DHAVE_MPI) $(if $(NVCC),-DHAVE_CUDA -I$(CUDA_HOME)/include)
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lnccl -lstdc++
H_LIBS     = $(shell pkg-config --libs $(HPKGS) 2>/dev/null) -lpthread -lm $(if $(NVCC),$(CUDA_LIBS))
NVFLAGS   := -O2 -std=c++17 -MD -MP -Xcompiler -Wall,-Wextra -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90,code=[sm_90,compute_90]
H_SRCS    := $(filter-out harness/main.c $(if $(NVCC),harness/cuda_none.c),$(wildcard harness/*.c)) \
             $(wildcard kernels/cpu/*.c) common/nt_err.c common/nt_duration.c
H_CU      := $(if $(NVCC),$(wildcard harness/*.cu kernels/cuda/*.cu))
H_OBJS    := $(H_SRCS:%.c=$(BUILD)/h/%.o) $(H_CU:%.cu=$(BUILD)/h/%.cu.o)
HLIB      := $(BUILD)/libharness.a
HARNESS   := $(BUILD)/nodetune-harness

# ---- what the build found: $(BUILD)/config.mk ---------------------------
# MPI, CUDA and libslurm are looked for when make reads this file; what was
# found (and CC, the flags, SAN) is written to $(BUILD)/config.mk, rewritten
# only when it changes.  What depends on a finding depends on that file: the
# harness's objects and link, and the Slurm plugin.  So a dependency that
# arrives after the first build (libopenmpi-dev) rebuilds exactly those at
# the next `make`, and `make` says in one line what it found.
CONFIG_MK   := $(BUILD)/config.mk
CONFIG_LINE  = config: MPI $(if $(HAVE_MPI),yes,no (pkg-config has no ompi-c: libopenmpi-dev)), CUDA \
               $(if $(NVCC),yes ($(NVCC)),no ($(if $(SAN),not under SAN,$(if $(filter command line,$(origin NVCC)),NVCC= given,no nvcc in $(CUDA_HOME)/bin or PATH)))), Slurm plugin \
               $(if $(PLUGIN),yes,no ($(if $(SPANK_H),not under SAN,no /usr/include/slurm/spank.h: libslurm-dev)))

$(CONFIG_MK): FORCE
	@mkdir -p $(BUILD)
	@printf '%s\n' '# what $(BUILD) was built with: written by the Makefile, rewritten when it changes' \
		'HAVE_MPI = $(HAVE_MPI)' 'HAVE_CUDA = $(if $(NVCC),1)' 'NVCC = $(NVCC)' 'HAVE_SLURM = $(if $(PLUGIN),1)' \
		'CC = $(CC)' 'CFLAGS = $(CFLAGS)' 'CPPFLAGS = $(CPPFLAGS)' 'LDFLAGS = $(LDFLAGS)' 'SAN = $(SAN)' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; echo '$(CONFIG_LINE)'; \
	else echo '$(CONFIG_LINE)$(if $(wildcard $@), (changed: the harness and the Slurm plugin are rebuilt))'; \
		mv $@.tmp $@; fi

$(BUILD)/h/%.o: %.c $(CONFIG_MK) | deps
	@mkdir -p $(dir $@)
	$(CC) $(H_CFLAGS) $(OBJ_CFLAGS) -c $< -o $@

$(BUILD)/h/%.cu.o: %.cu $(CONFIG_MK)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -I$(dir $<) -Iharness -Icommon -c $< -o $@

$(HLIB): $(H_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(HARNESS): $(BUILD)/h/harness/main.o $(HLIB) $(CONFIG_MK)
	$(CC) $(LDFLAGS) $(LDSAN) -o $@ $(filter-out $(CONFIG_MK),$^) $(H_LIBS)

# ---- the Slurm SPANK plugin: built when <slurm/spank.h> is there (the
# slurm group of install-deps.sh), over libnodetune.  Only the plugin's
# slurm_spank_* entry points are exported, and the library's symbols are
# bound inside it (-Bsymbolic, --exclude-libs): slurmstepd's own log_* and
# friends never interpose.  Never under the sanitizers: slurmstepd, which
# dlopen()s it, is not instrumented, so an ASan plugin cannot load there
# (the ASan pass of test_slurm.sh uses build/nodetune_spank.so).
# Its default nodetune= (the binary the job prolog/epilog run) is the one
# `make install` puts in $(PREFIX)/bin: a stamp holding PREFIX rebuilds it
# when PREFIX changes.
SPANK_H   := $(wildcard /usr/include/slurm/spank.h)
PLUGIN    := $(if $(SPANK_H),$(if $(SAN),,$(BUILD)/nodetune_spank.so))

$(BUILD)/.prefix: FORCE
	@mkdir -p $(BUILD); echo '$(PREFIX)' | cmp -s - $@ || echo '$(PREFIX)' >$@

# Its checks that need no Slurm (deploy/slurm/spank_check.c) are built into
# it and into their unit test, tests/unit/slurm/test_spank_check.c.
$(BUILD)/nodetune_spank.so: deploy/slurm/nodetune_spank.c deploy/slurm/spank_check.c $(LIB) $(BUILD)/.prefix \
		$(CONFIG_MK) | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -DNODETUNE_BIN='"$(PREFIX)/bin/nodetune"' -shared -Wl,-Bsymbolic \
		-Wl,--exclude-libs,ALL -o $@ $(filter %.c,$^) $(LIB) $(LIBS)

# ---- man pages and bash completion, from the option tables ---------------
# man/*.[158] are mdoc(7), one source per page: the prose, the examples and
# markers.  scripts/opts-mdoc.py fills in each '.\" @SYNOPSIS VERB@' and
# '.\" @OPTIONS VERB@' from `nodetune help --json` (the tables VERB --help
# prints), '.\" @LIMITS@' from `nodetune keys --json` (the keys limits.conf
# may bound) and @VERSION@; a page's '.\" @KEYS@' line becomes the policy
# keys of `nodetune keys --markdown` (nodetune.conf.5).  The completion is
# contrib/bash-completion/nodetune.in with the table of `nodetune
# --dump-options` in it.  tests/lint/test_man.sh and test_completion.sh
# check both against the binary.
MAN_PAGES := $(patsubst man/%,$(BUILD)/man/%,$(wildcard man/*.[158]))
COMPLETION := $(BUILD)/bash-completion/nodetune

$(BUILD)/man-help.json: $(NODETUNE)
	$(NODETUNE) help --json >$@.tmp && mv $@.tmp $@

$(BUILD)/man-keys.json: $(NODETUNE)
	$(NODETUNE) keys --json >$@.tmp && mv $@.tmp $@

$(BUILD)/man/%: man/% $(BUILD)/man-help.json $(BUILD)/man-keys.json scripts/opts-mdoc.py $(NODETUNE) \
		scripts/keys-mdoc.awk
	@mkdir -p $(dir $@)
	$(NODETUNE) keys --markdown | awk -f scripts/keys-mdoc.awk >$@.keys
	python3 scripts/opts-mdoc.py $(BUILD)/man-help.json $< $(BUILD)/man-keys.json >$@.opts
	sed -e '/^\.\\" @KEYS@$$/{r $@.keys' -e 'd}' $@.opts >$@.tmp && rm -f $@.keys $@.opts && mv $@.tmp $@

$(COMPLETION): contrib/bash-completion/nodetune.in $(NODETUNE) scripts/gen-completion.sh
	@mkdir -p $(dir $@)
	scripts/gen-completion.sh $(NODETUNE) $< '$(POLICY_PATH)' >$@.tmp && mv $@.tmp $@

man: $(MAN_PAGES)

all: $(NODETUNE) $(HARNESS) $(PLUGIN) $(MAN_PAGES) $(COMPLETION)

UNIT_SRCS := $(wildcard tests/unit/*/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_LIBS  = $(shell pkg-config --libs cmocka 2>/dev/null) $(LIBS)

.PHONY: all man deb deps deps-check deps-fuzz check lint unit integration asan fuzz fuzz-smoke fuzz-build fuzz-bins \
	unit-bins integration-bins asan-unit asan-integration integration-both \
	docs-discover docs-ab demo demo-fleet install clean mutation
.DEFAULT_GOAL := all

# INSTALL_DEPS=true: leave apt alone (a package build has its Build-Depends)
INSTALL_DEPS ?= scripts/install-deps.sh
deps:
	@$(INSTALL_DEPS) core

# the tests also open an HTML report in headless Chromium, run the fuzz
# targets (clang + libFuzzer), check deploy/ (systemd-analyze, YAML, the
# Kubernetes schemas through npm), the /metrics text with promtool, and
# the etcd client against a real 3-member etcd cluster, and the SPANK
# plugin on a real one-node Slurm (test_slurm.sh), and launch `nodetune
# exec` under torch's elastic agent (python3-torch), and lint the man pages
# and build, install, upgrade and purge the .debs (pkg)
deps-check:
	@$(INSTALL_DEPS) core browser fuzz deploy daemon fleet slurm torch pkg

deps-fuzz:
	@$(INSTALL_DEPS) core fuzz

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS) -c $< -o $@

# the objects are rebuilt when the flags change (-fPIC, SAN): a stamp
# holding them
$(BUILD)/.cflags: FORCE
	@mkdir -p $(BUILD); echo '$(ALL_CFLAGS)' | cmp -s - $@ || echo '$(ALL_CFLAGS)' >$@
$(LIB_OBJS) $(CLI_OBJS): $(BUILD)/.cflags
.PHONY: FORCE

# The policy search path (tune/policy.h): /etc's directory, the install's
# share directory when PREFIX is not /usr (`make install` puts the policies
# there), then /usr/share's (the package's).
POLICY_PATH := /etc/nodetune/policies$(if $(filter /usr,$(PREFIX)),,:$(PREFIX)/share/nodetune/policies):/usr/share/nodetune/policies
# (OBJ_CFLAGS: one object's own definitions)
$(BUILD)/agent/lib/tune/policy.o: OBJ_CFLAGS = -DPOLICY_PATH_DEFAULT='"$(POLICY_PATH)"'
$(BUILD)/agent/lib/tune/policy.o: $(BUILD)/.prefix
$(BUILD)/agent/cli/main.o $(BUILD)/h/harness/engine.o: VERSION
$(BUILD)/agent/cli/main.o $(BUILD)/h/harness/engine.o: OBJ_CFLAGS = -DNODETUNE_VERSION='"$(VERSION)"'

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(NODETUNE): $(CLI_OBJS) $(LIB)
	$(CC) $(LDFLAGS) $(LDSAN) -o $@ $^ $(LIBS)

# each unit test counts its assertions (tests/unit/assert_count.c): one
# that returns having made none fails; and its heap's bytes, exactly
# (tests/unit/heap_count.c), for its leak checks
UNIT_WRAP = $(patsubst %,-Wl$(comma)--wrap=%,_cmocka_run_group_tests _assert_true _assert_return_code \
	_assert_int_equal _assert_int_not_equal _assert_float_equal _assert_float_not_equal _assert_string_equal \
	_assert_string_not_equal _assert_memory_equal _assert_memory_not_equal _assert_in_range _assert_not_in_range \
	_assert_in_set _assert_not_in_set)
comma := ,
$(BUILD)/tests/%: tests/unit/%.c tests/unit/assert_count.c tests/unit/heap_count.c $(LIB) $(HLIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(H_CFLAGS) -Iharness -Itests/unit -o $@ $< $(UNIT_EXTRA) tests/unit/assert_count.c tests/unit/heap_count.c \
		$(LIB) $(HLIB) \
		$(LDSAN) $(UNIT_LIBS) $(H_LIBS) $(UNIT_WRAP)

# a unit test of code outside the library: its sources (UNIT_EXTRA)
$(BUILD)/tests/slurm/test_spank_check: deploy/slurm/spank_check.c
$(BUILD)/tests/slurm/test_spank_check: UNIT_EXTRA = -Ideploy/slurm deploy/slurm/spank_check.c

$(BUILD)/tests/wdiff: tests/tools/wdiff.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDSAN) -o $@ $< -lm

# sign and verify time per fleet document (issue 24, "Measure")
$(BUILD)/tests/signbench: tests/tools/signbench.c $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(LDSAN) $(LIBS)

# N fleet hosts in one process running fleet_host's code, for
# bench/fleet_scale.sh and its smoke run (issue 43)
$(BUILD)/tests/fleetsim: tests/tools/fleetsim.c $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(LDSAN) $(LIBS)

# real remote TLB flushes on demand, made by the library's own probe
# (tlb_probe_storm), for test_inject.sh
$(BUILD)/tests/tlbstorm: tests/tools/tlbstorm.c $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(LDSAN) $(LIBS)

# checks of the source itself (tests/lint/test_*.sh): the layering of
# agent/lib (scripts/check-layout.sh), the man pages and the bash completion
# against the option tables, and the integration tests' shell patterns that
# make a check unable to fail (scripts/lint-tests.sh), each shown to fail on
# planted faults
lint: $(NODETUNE) $(HARNESS) $(MAN_PAGES) $(COMPLETION)
	@fail=0; for t in tests/lint/test_*.sh; do \
		BUILD=$(abspath $(BUILD)) NODETUNE=$(abspath $(NODETUNE)) $$t || fail=1; done; exit $$fail

# what the unit and the integration tests run (make -jN unit-bins builds
# them in parallel; the tests themselves then run without make's -j)
unit-bins: $(UNIT_BINS) $(NODETUNE) $(HARNESS)
integration-bins: $(NODETUNE) $(HARNESS) $(PLUGIN) $(BUILD)/tests/wdiff $(BUILD)/tests/tlbstorm

unit: unit-bins
	@tests/run-unit.sh $(UNIT_BINS)

# make integration TESTS=tests/integration/test_slurm.sh runs those files only.
# INTEGRATION_JOBS scripts at a time, each under the locks its "# host:"
# line names (tests/run-integration.sh); started longest first by the last
# run's times, kept in $(BUILD)/integration-times.txt.
# it_env DIR: what the integration scripts take from the build in DIR (an
# absolute path): the binaries, and its times file for the runner's order
it_env = NODETUNE=$(1)/nodetune HARNESS=$(1)/nodetune-harness WDIFF=$(1)/tests/wdiff TLBSTORM=$(1)/tests/tlbstorm \
	FLEETSIM=$(1)/tests/fleetsim INTEGRATION_TIMES=$(1)/integration-times.txt
integration: integration-bins $(BUILD)/tests/fleetsim
	@$(call it_env,$(abspath $(BUILD))) \
		tests/run-integration.sh $(or $(TESTS),$(wildcard tests/integration/test_*.sh))

# The unit tests run with LeakSanitizer (they cover all of our library
# code).  The integration tests start whole programs under mpirun, where Open
# MPI and OpenBLAS leave allocations they never free at exit; leak reports
# there are theirs and turn every exit status into 1, so LeakSanitizer is off
# for them (AddressSanitizer and UBSan still stop on any memory error).
# SANITIZED=1 tells the statistical end-to-end tests that everything runs
# several times slower and noisier, so they inject a larger effect.
# The ASan pass runs every integration script but those that
# tests/integration/asan-out.txt names, each with what covers its code under
# ASan already or why ASan finds nothing there; make check's last line names
# them.  Its binaries are built with make's -j$(BUILD_JOBS), its tests run
# as the plain pass runs them.
#
# Each step of `check` and `asan` runs even when an earlier one failed (a
# red integration step must not hide what the ASan pass would find); the
# target fails at the end, naming the steps that failed.  The clang build of
# the fuzz targets comes first: clang warns where gcc does not (a positional
# initializer inside a designated one), and that must not wait 30 minutes.
# The fuzz smoke comes next, with the lint beside it: each target runs for a
# fixed time whatever else runs (the lint only costs it executions), and
# the lint, half its time waiting on one CPU, no longer adds its 28 to 42 s.
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# The ASan pass's scripts, all of them but the A/B ones, wait on etcd, the
# daemons and Slurm more than they compute: three at a time on 2 vCPUs it
# took 232 s where two took 322, with 36% of the CPUs still idle and no
# script slower (bench/RESULTS.md section 19.7); make check runs both
# passes in one run at this width (integration-both).  `make integration`
# stays at two, where the A/B scripts that hold the CPUs alone are most of
# the time.
ASAN_INTEGRATION_JOBS ?= $(shell echo $$(( $(BUILD_JOBS) + 1 )))
ASAN_MAKE   = $(MAKE) --no-print-directory BUILD=$(BUILD)/asan SAN=1
ASAN_OUT   := $(shell sed -n 's|^\(test_[^ ]*\.sh\) .*|tests/integration/\1|p' tests/integration/asan-out.txt)
ASAN_TESTS := $(filter-out $(ASAN_OUT),$(wildcard tests/integration/test_*.sh))

asan:
	@fail=""; \
	$(MAKE) --no-print-directory asan-unit || fail="$$fail asan-unit"; \
	$(MAKE) --no-print-directory asan-integration || fail="$$fail asan-integration"; \
	if [ -n "$$fail" ]; then echo "make asan: failed:$$fail" >&2; exit 1; fi

asan-unit:
	@$(ASAN_MAKE) -j$(BUILD_JOBS) unit-bins && NODETUNE_SKIP_TAG=asan- $(ASAN_MAKE) unit

asan-integration:
	@[ -z "$${NODETUNE_SKIP_LOG:-}" ] || \
		echo "asan-integration: not in the ASan pass (tests/integration/asan-out.txt says why): $(notdir $(ASAN_OUT))" \
		>>"$$NODETUNE_SKIP_LOG"
	@$(ASAN_MAKE) -j$(BUILD_JOBS) integration-bins && NODETUNE_SKIP_TAG=asan- ASAN_OPTIONS=detect_leaks=0 SANITIZED=1 \
		INTEGRATION_JOBS=$(ASAN_INTEGRATION_JOBS) $(ASAN_MAKE) integration TESTS="$(or $(TESTS),$(ASAN_TESTS))"

# make check's integration step: both passes in one run of the runner, the
# ASan scripts given as asan:FILE with the ASan build's binaries in
# INTEGRATION_ENV_asan (tests/run-integration.sh, "another pass"), so that
# they fill the slots the plain pass leaves while its scripts that hold a
# lock the next one needs run (from a fresh clone: 1,458 and 1,477 s,
# where the two passes one after the other took 1,331 + 205 = 1,536;
# bench/RESULTS.md section 19.7).  The scripts that hold the CPUs still
# run alone.
ASAN_BUILD = $(abspath $(BUILD)/asan)
integration-both: integration-bins $(BUILD)/tests/fleetsim
	@$(ASAN_MAKE) -j$(BUILD_JOBS) integration-bins $(BUILD)/asan/tests/fleetsim
	@[ -z "$${NODETUNE_SKIP_LOG:-}" ] || \
		echo "asan-integration: not in the ASan pass (tests/integration/asan-out.txt says why): $(notdir $(ASAN_OUT))" \
		>>"$$NODETUNE_SKIP_LOG"
	@$(call it_env,$(abspath $(BUILD))) INTEGRATION_JOBS=$(ASAN_INTEGRATION_JOBS) \
		INTEGRATION_ENV_asan="$(call it_env,$(ASAN_BUILD)) NODETUNE_SKIP_TAG=asan- ASAN_OPTIONS=detect_leaks=0 SANITIZED=1" \
		tests/run-integration.sh $(wildcard tests/integration/test_*.sh) $(addprefix asan:,$(ASAN_TESTS))

# make mutation: the mutation score of the modules where a wrong answer is a
# hole (tests/mutation/modules.conf; scripts/mutate.py says how mutants are
# made and judged).  Outside make check: it builds and tests once per
# mutant.  MUTATION_ARGS: e.g. --only limits --no-integration --max 10.
# The table goes to $(BUILD)/mutation/score.md, each module's survivors'
# diffs to $(BUILD)/mutation/MODULE.survivors.
mutation: all $(UNIT_BINS)
	/usr/bin/python3 scripts/mutate.py --reuse $(BUILD) --build $(BUILD) --out $(BUILD)/mutation $(MUTATION_ARGS)

# The last line names every skip (each suite's runner appends its skips,
# "SUITE FILE.TEST: KIND: REASON", to $(BUILD)/skips.txt), so a green check
# never hides one; a red one says every failed check of every suite again
# just before its last line ($(BUILD)/failed.txt, the first 40 lines), so a
# CI log that keeps only its end still names them.  Before it: the time of
# each suite and the ten slowest integration scripts of both passes (the
# runner appends "SUITE FILE SECONDS" to $(BUILD)/times.txt).  The builds run with make's
# -j$(BUILD_JOBS); the tests as their runners run them.
check: deps-check
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) all unit-bins integration-bins
	@start=$$(date +%s); fail=""; b=$(abspath $(BUILD)); suites=""; \
	NODETUNE_SKIP_LOG=$$b/skips.txt NODETUNE_TIME_LOG=$$b/times.txt NODETUNE_FAIL_LOG=$$b/failed.txt; \
	export NODETUNE_SKIP_LOG NODETUNE_TIME_LOG NODETUNE_FAIL_LOG; \
	: >"$$NODETUNE_SKIP_LOG"; : >"$$NODETUNE_TIME_LOG"; : >"$$NODETUNE_FAIL_LOG"; \
	suite() { s=$$(date +%s); n=$$1; shift; "$$@" || fail="$$fail $$n"; suites="$$suites$${suites:+, }$$n $$(( $$(date +%s) - s )) s"; }; \
	beside() { n=$$1; shift; ( s=$$(date +%s); "$$@" >"$$b/$$n.log" 2>&1; echo "$$? $$(( $$(date +%s) - s ))" >"$$b/$$n.rc" ) & }; \
	joined() { wait; cat "$$b/$$1.log"; read -r rc t <"$$b/$$1.rc"; [ "$$rc" -eq 0 ] || fail="$$fail $$1"; \
		suites="$$suites$${suites:+, }$$1 $$t s (beside $$2)"; }; \
	suite fuzz-build $(MAKE) --no-print-directory -j$(BUILD_JOBS) fuzz-build; \
	beside lint $(MAKE) --no-print-directory lint; \
	suite fuzz-smoke $(MAKE) --no-print-directory fuzz-smoke; \
	joined lint fuzz-smoke; \
	suite unit $(MAKE) --no-print-directory unit; \
	suite asan-unit $(MAKE) --no-print-directory asan-unit; \
	suite integration+asan $(MAKE) --no-print-directory integration-both; \
	took=$$(( $$(date +%s) - start )); \
	echo "make check: time per suite: $$suites"; \
	echo "make check: the ten slowest scripts: $$(sort -k3,3nr "$$NODETUNE_TIME_LOG" | head -n 10 | \
		awk '{ printf "%s%s %s (%s s)", (NR > 1 ? ", " : ""), $$1, $$2, $$3 }')"; \
	if [ -n "$$fail" ]; then \
		[ ! -s "$$NODETUNE_FAIL_LOG" ] || { echo "make check: the failed checks:"; head -n 40 "$$NODETUNE_FAIL_LOG"; }; \
		echo "make check: failed:$$fail (after $$took s)" >&2; exit 1; fi; \
	skipped=$$(awk 'BEGIN { ORS = "" } { print (NR > 1 ? "; " : "") $$0 }' "$$NODETUNE_SKIP_LOG"); \
	echo "make check: all test suites passed in $$took s; skipped: $${skipped:-none}"

# ---- fuzzing ---------------------------------------------------------------
# Each parser of untrusted input has a libFuzzer target,
# tests/fuzz/fuzz_<name>.c, with seeds in tests/fuzz/corpus/<name>/.  Both
# libraries are built again with clang into $(BUILD)/fuzz (SAN=fuzz: ASan,
# UBSan and coverage; no CUDA, as under SAN=1), and each target is linked
# with libFuzzer's main into $(BUILD)/fuzz/fuzz_<name>.  The runner works on
# a copy of the seeds and leaves crash reproducers in $(BUILD)/fuzz/artifacts.
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS  := $(addprefix $(BUILD)/fuzz/,$(FUZZ_NAMES))

fuzz-build: deps-fuzz
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz CC=clang SAN=fuzz CFLAGS='-g -O1' fuzz-bins

fuzz: fuzz-build
	@tests/fuzz/run-fuzz.sh $(FUZZ_TIME) $(FUZZ_BINS)

# the smoke run: FUZZ_JOBS runners at once (each target on a CPU of its
# own for FUZZ_SMOKE_TIME, as when they ran one after the other)
FUZZ_JOBS ?= $(BUILD_JOBS)
fuzz-smoke: fuzz-build
	@printf '%s\n' $(FUZZ_BINS) | xargs -P $(FUZZ_JOBS) -n $$(( ($(words $(FUZZ_BINS)) + $(FUZZ_JOBS) - 1) / $(FUZZ_JOBS) )) \
		tests/fuzz/run-fuzz.sh $(FUZZ_SMOKE_TIME) || { echo "fuzz-smoke: a target failed (above)" >&2; exit 1; }

# (inside the SAN=fuzz make that fuzz-build starts, where $(BUILD) is
# the outer $(BUILD)/fuzz)
ifeq ($(SAN),fuzz)
fuzz-bins: $(addprefix $(BUILD)/,$(FUZZ_NAMES))

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(LIB) $(HLIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(H_CFLAGS) -Iharness -o $@ $< $(LIB) $(HLIB) -fsanitize=fuzzer $(LDSAN) $(LIBS) $(H_LIBS)
endif

demo: deps all
	@scripts/demo.sh $(abspath $(BUILD))

demo-fleet: deps all
	@scripts/demo-fleet.sh $(abspath $(BUILD))

# docs/img/discover-hgx.{svg,png}: discover --svg on the HGX fixture with
# gpu-train's ranks, and headless Chromium's screenshot of it at its size
# (test_discover_svg.sh checks that the SVG is current)
DISCOVER_IMG := docs/img/discover-hgx
docs-discover: $(NODETUNE)
	@mkdir -p $(dir $(DISCOVER_IMG))
	$(NODETUNE) discover --topology tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml \
		--policy policies/gpu-train.conf --svg $(DISCOVER_IMG).svg
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--window-size=$$(sed -n 's/^<svg [^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' $(DISCOVER_IMG).svg) \
		--screenshot=$(abspath $(DISCOVER_IMG)).png file://$(abspath $(DISCOVER_IMG)).svg 2>/dev/null
	@test -s $(DISCOVER_IMG).png

# the sample A/B report in docs/ and its screenshot, from a real `nodetune
# ab` on this machine (root, chromium): docs/examples/ab-report.html,
# docs/img/ab-report.png
docs-ab: $(NODETUNE) $(HARNESS)
	@scripts/docs-ab.sh $(BUILD)

# ---- install ---------------------------------------------------------------
# The systemd unit goes to $(PREFIX)/lib/systemd/system: /usr/local/lib/...
# for the default PREFIX (a directory systemd searches), /usr/lib/... for
# PREFIX=/usr (the same directory as /lib/systemd/system on Debian 12's
# merged /usr); UNITDIR= overrides it.  Its ExecStart names the installed
# binary ($(PREFIX)/bin, without DESTDIR).  The default policy goes to
# /etc/nodetune/policy.conf (the daemon's default, whatever PREFIX), from
# policies/gpu-train.conf, mode 0644, and never over an existing one: that
# is the admin's.  The SPANK plugin (when built) goes to $(PREFIX)/lib/slurm,
# or for PREFIX=/usr to Debian's PluginDir, /usr/lib/MULTIARCH/slurm-wlm
# (where slurmd finds a plugstack.conf line that names it without a
# directory); SPANKDIR= overrides it.
UNITDIR    ?= $(PREFIX)/lib/systemd/system
MULTIARCH  := $(shell $(CC) -print-multiarch 2>/dev/null)
SPANKDIR   ?= $(if $(and $(filter /usr,$(PREFIX)),$(MULTIARCH)),/usr/lib/$(MULTIARCH)/slurm-wlm,$(PREFIX)/lib/slurm)
SYSCONFDIR ?= /etc
DOCDIR     ?= $(PREFIX)/share/doc/nodetune
MANDIR     ?= $(PREFIX)/share/man
# bash-completion loads /usr/share/bash-completion/completions/NAME on
# demand; for another PREFIX it reads $(PREFIX)/share/... only when that
# is in XDG_DATA_DIRS
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# the step-report client (contrib/python/nodetune_steps.py) goes where
# Debian's python3 finds it: /usr/lib/python3/dist-packages for PREFIX=/usr,
# else PREFIX/lib/python3.X/dist-packages (X: /usr/bin/python3's; Debian's
# python3 searches /usr/local/lib/python3.X/dist-packages)
PY3VER      = $(shell /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYTHONDIR  ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3,$(PREFIX)/lib/python$(or $(PY3VER),3))/dist-packages

$(BUILD)/nodetune.service: deploy/systemd/nodetune.service.in Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@DOCDIR@|$(DOCDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@.tmp && mv $@.tmp $@

# the unit depends on PREFIX: regenerated on every install
.PHONY: $(BUILD)/nodetune.service

install: all $(BUILD)/nodetune.service
	install -D -m 0755 $(NODETUNE) $(DESTDIR)$(PREFIX)/bin/nodetune
	install -D -m 0755 $(HARNESS) $(DESTDIR)$(PREFIX)/bin/nodetune-harness
	install -d -m 0755 $(DESTDIR)$(PREFIX)/share/nodetune/policies
	install -m 0644 policies/*.conf $(DESTDIR)$(PREFIX)/share/nodetune/policies/
	install -D -m 0644 docs/policy-keys.md $(DESTDIR)$(DOCDIR)/policy-keys.md
	install -D -m 0644 $(BUILD)/nodetune.service $(DESTDIR)$(UNITDIR)/nodetune.service
	install -d -m 0755 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 $(filter %.1,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(filter %.5,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(filter %.8,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man8/
	install -D -m 0644 $(COMPLETION) $(DESTDIR)$(COMPLETIONDIR)/nodetune
	install -D -m 0644 contrib/python/nodetune_steps.py $(DESTDIR)$(PYTHONDIR)/nodetune_steps.py
	install -D -m 0644 deploy/grafana/nodetune.json $(DESTDIR)$(PREFIX)/share/nodetune/grafana/nodetune.json
	install -D -m 0644 deploy/prometheus/nodetune-rules.yml $(DESTDIR)$(PREFIX)/share/nodetune/prometheus/nodetune-rules.yml
	$(if $(PLUGIN),install -D -m 0755 $(PLUGIN) $(DESTDIR)$(SPANKDIR)/nodetune_spank.so)
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/nodetune
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/nodetune/policy.conf ]; then \
		echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/nodetune/policy.conf (exists)"; \
	else \
		echo "install -m 0644 policies/gpu-train.conf $(DESTDIR)$(SYSCONFDIR)/nodetune/policy.conf"; \
		install -m 0644 policies/gpu-train.conf $(DESTDIR)$(SYSCONFDIR)/nodetune/policy.conf; \
	fi

# ---- Debian packages -------------------------------------------------------
# make deb: nodetune_VERSION_ARCH.deb and nodetune-slurm_VERSION_ARCH.deb
# (debian/, debhelper) in $(BUILD)/deb.  dpkg-buildpackage writes its
# results next to the source tree, so it runs in a copy of the tree in
# $(BUILD)/deb/src (the checkout's parent is left alone); the .debs,
# .buildinfo and .changes are moved up to $(BUILD)/deb.  Needs the pkg
# group of install-deps.sh and the Build-Depends (the slurm group's
# libslurm-dev among them).
DEB_DIR := $(BUILD)/deb
deb:
	@$(INSTALL_DEPS) core slurm pkg
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src/nodetune
	tar -cf - --exclude=./$(BUILD) --exclude=./build --exclude=./.git . | tar -C $(DEB_DIR)/src/nodetune -xf -
	cd $(DEB_DIR)/src/nodetune && dpkg-buildpackage -us -uc -b
	mv $(DEB_DIR)/src/*.deb $(DEB_DIR)/src/*.buildinfo $(DEB_DIR)/src/*.changes $(DEB_DIR)/
	rm -rf $(DEB_DIR)/src
	@ls -l $(DEB_DIR)/*.deb

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
