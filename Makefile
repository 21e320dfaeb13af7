# nodetune — build, test, install, demo.
#
#   make            build build/nodetune (and the harness once it exists)
#   make check      deps, build, unit + integration tests, then both again under ASan+UBSan
#   make demo       deps, build, run the main job on this machine
#   make install    PREFIX=/usr/local DESTDIR=
#
# Everything is built out of tree into $(BUILD).  Entry points that need the
# Debian packages run scripts/install-deps.sh first (a quick no-op when they
# are installed).

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
SAN      ?=

PKGS      := hwloc jansson libcgroup numa
# -D_GNU_SOURCE: openat/faccessat, vasprintf, getopt_long and sched_* come
# from glibc's GNU set.  -Wformat=2 -Wshadow catch printf and scoping bugs
# that -Wall -Wextra let through.
WARN      := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wstrict-prototypes
CFLAGS    ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -MMD -MP -Iagent \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS       = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

ifeq ($(SAN),1)
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

# The agent's core library: everything but main.c.
LIB_SRCS  := $(filter-out agent/main.c,$(wildcard agent/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libnodetune.a
NODETUNE  := $(BUILD)/nodetune

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_LIBS  = $(shell pkg-config --libs cmocka 2>/dev/null) $(LIBS)

.PHONY: all deps check unit integration asan demo install clean

all: $(NODETUNE)

deps:
	@scripts/install-deps.sh core

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(NODETUNE): $(BUILD)/agent/main.o $(LIB)
	$(CC) $(LDSAN) -o $@ $^ $(LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(LDSAN) $(UNIT_LIBS)

unit: $(UNIT_BINS) $(NODETUNE)
	@tests/run-unit.sh $(UNIT_BINS)

integration: $(NODETUNE)
	@NODETUNE=$(abspath $(NODETUNE)) tests/run-integration.sh tests/integration/test_*.sh

asan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SAN=1 unit integration

check: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory integration
	@$(MAKE) --no-print-directory asan
	@echo "make check: all test suites passed"

demo: deps all
	@scripts/demo.sh $(abspath $(BUILD))

install: all
	install -D -m 0755 $(NODETUNE) $(DESTDIR)$(PREFIX)/bin/nodetune
	install -d -m 0755 $(DESTDIR)$(PREFIX)/share/nodetune/policies
	install -m 0644 policies/*.conf $(DESTDIR)$(PREFIX)/share/nodetune/policies/
	install -D -m 0644 docs/policy-keys.md $(DESTDIR)$(PREFIX)/share/doc/nodetune/policy-keys.md

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
