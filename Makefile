# libchurn: an allocation-tracing shim (build/libchurn.so) and its offline analyzer
# (build/churn-analyze).  `make demo` and `make check` are the two commands a new user needs;
# both install missing Debian packages first (as root) or print the apt-get line to run.

CC      ?= gcc
CFLAGS  ?= -O2 -g
# CI (CI=true in its environment) makes every warning an error; a local build only warns.
WARN    := -Wall -Wextra $(if $(CI),-Werror)
PREFIX  ?= /usr/local
BUILD   := build

# Build dependencies, and the real components the tests trace or compare against.
# libdebuginfod-dev: the header of elfutils' debuginfod client, which the analyzer loads when
# DEBUGINFOD_URLS is set (docs/analyzer.md), and the library itself; debuginfod: the server
# test/t_debuginfod.sh runs on loopback.  libmicrohttpd-dev: churn serve's HTTP server
# (docs/design.md, "Dependencies"); prometheus: what test/t_serve_prometheus.sh scrapes with.
BUILD_PACKAGES := libunwind-dev libzstd-dev uthash-dev libdw-dev libelf-dev libcapstone-dev zlib1g-dev libdeflate-dev \
                  libdebuginfod-dev libmicrohttpd-dev
TEST_PACKAGES  := zstd python3 heaptrack libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev redis-server rustc g++ libc6-dbg clang sqlite3 \
                  chromium golang-go golang-github-google-pprof-dev valgrind groff-base ruby3.1 perl lua5.4 php8.2-cli jq gawk \
                  nginx-light memcached postgresql-15 lighttpd gdb debuginfod prometheus tmux

# Each program's folders are its layers (HACKING.md draws the map; test/tools/layers.sh checks
# it): sources one folder deep, included by their path from the program's root.
SHIM_SRC     := $(sort $(wildcard shim/*.c shim/*/*.c))
# analyzer/live/ (churn watch, churn serve) is linked into churn alone: churn-analyze never
# follows a running process, and needs no HTTP server.
LIVE_SRC     := $(sort $(wildcard analyzer/live/*.c))
ANALYZER_SRC := $(filter-out $(LIVE_SRC),$(sort $(wildcard analyzer/*.c analyzer/*/*.c)))
SHIM_OBJ     := $(SHIM_SRC:%.c=$(BUILD)/%.o)
ANALYZER_OBJ := $(ANALYZER_SRC:%.c=$(BUILD)/%.o)
LIVE_OBJ     := $(LIVE_SRC:%.c=$(BUILD)/%.o)
HEADERS      := $(wildcard include/*.h include/churn/*.h shim/*.h shim/*/*.h analyzer/*.h analyzer/*/*.h)

# The shim is preloaded into other programs: hidden by default, initial-exec TLS (no
# __tls_get_addr, which may allocate), and no dependency on the traced program's heap.
# Link-time optimisation lets the per-allocation path (way in, stack, live map, ring) inline
# across its files: about 4 % fewer instructions on the traced program's thread.
SHIM_CFLAGS  := $(WARN) -std=gnu11 -fPIC -fvisibility=hidden -ftls-model=initial-exec \
                -fno-omit-frame-pointer -fexceptions -D_GNU_SOURCE -Iinclude -Ishim -flto=auto
# capstone from its static archive, x86 alone and hidden: shim/ways/capstone_x86.c says why.
SHIM_LIBS    := -lunwind-x86_64 -lunwind -lzstd -Wl,-Bstatic -lcapstone -Wl,-Bdynamic \
                -Wl,--exclude-libs,libcapstone.a -ldl -lpthread
ANALYZER_CFLAGS := $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -Ianalyzer -I/usr/include/elfutils
ANALYZER_LIBS   := -lzstd -ldw -lelf -ldeflate -lcapstone -lstdc++ -lm -lz
LIVE_LIBS       := -lmicrohttpd -lpthread

.PHONY: all deps test-deps check demo install clean bench fuzz soak soak-live sanitize docs slow \
        setup

all: $(BUILD)/libchurn.so $(BUILD)/churn-analyze $(BUILD)/churn $(BUILD)/churn-docgen \
     $(BUILD)/churn.bash

$(BUILD)/.deps-build: Makefile
	@CHURN_PACKAGES="$(BUILD_PACKAGES)" sh test/ensure-packages.sh
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/.deps-test: Makefile
	@CHURN_PACKAGES="$(BUILD_PACKAGES) $(TEST_PACKAGES)" sh test/ensure-packages.sh
	@mkdir -p $(BUILD) && touch $@

deps: $(BUILD)/.deps-build
test-deps: $(BUILD)/.deps-test

$(BUILD)/shim/%.o: shim/%.c $(HEADERS) | $(BUILD)/.deps-build
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SHIM_CFLAGS) -c $< -o $@

$(BUILD)/analyzer/%.o: analyzer/%.c $(HEADERS) | $(BUILD)/.deps-build
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ANALYZER_CFLAGS) -c $< -o $@

# Bound at load (-z now): the dynamic linker's lazy resolver saves the vector registers on
# the stack it is called on (xsavec: up to 2.5 KiB with AVX-512 state in use), and libchurn's
# first call of an import may come inside the program's malloc on a coroutine's 2 KiB stack
# (t_coroutine_stacks.sh).
SHIM_LDFLAGS := -Wl,-z,nodelete -Wl,-z,now

$(BUILD)/libchurn.so: $(SHIM_OBJ)
	$(CC) $(CFLAGS) $(SHIM_CFLAGS) -shared -o $@ $^ $(SHIM_LIBS) $(SHIM_LDFLAGS)

$(BUILD)/churn-analyze: $(ANALYZER_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(ANALYZER_LIBS)

# The churn command includes shim/base/options.c for its table and parser (cli/churn.c says
# why), and links the analyzer (without its main) to read a tree's index and traces, and
# analyzer/live/ for churn watch and churn serve.
CLI_CFLAGS := $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -Ishim -Ianalyzer
CLI_ANALYZER_OBJ := $(filter-out $(BUILD)/analyzer/main.o,$(ANALYZER_OBJ))
$(BUILD)/churn: cli/churn.c cli/attach.c cli/commands.h shim/base/options.c shim/ways/patch.h shim/process/seccomp_filter.h $(CLI_ANALYZER_OBJ) $(LIVE_OBJ) $(HEADERS) | $(BUILD)/.deps-build
	$(CC) $(CFLAGS) $(CLI_CFLAGS) -o $@ $< $(CLI_ANALYZER_OBJ) $(LIVE_OBJ) $(ANALYZER_LIBS) \
		$(LIVE_LIBS)

# docs/options.md's option table, the man pages and the bash completion, from the tables in
# shim/base/options.c, analyzer/usage.h and cli/commands.h (cli/docgen.c).  `make docs`
# rewrites the committed copies; test/t_options_doc.sh fails when they differ from the tables.
DOCGEN_DEPS := cli/docgen.c cli/commands.h shim/base/options.c analyzer/usage.h $(HEADERS)
$(BUILD)/churn-docgen: $(DOCGEN_DEPS) | $(BUILD)/.deps-build
	$(CC) $(CFLAGS) $(CLI_CFLAGS) -o $@ $<

$(BUILD)/churn.bash: $(BUILD)/churn-docgen
	$< completion >$@.tmp && mv $@.tmp $@

docs: $(BUILD)/churn-docgen
	$< churn.1 >man/churn.1
	$< churn-analyze.1 >man/churn-analyze.1
	sh test/tools/options_table.sh write $<

# The demo: a request loop with per-request temporaries, a small per-request leak and
# delayed garbage, traced and analyzed; 5 ms between requests, as a server waits for clients.
$(BUILD)/demo-workload: test/programs/request_loop.c include/churn.h | $(BUILD)/.deps-build
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -Iinclude -fno-omit-frame-pointer -o $@ $<

demo: all $(BUILD)/demo-workload
	@rm -f $(BUILD)/demo.zst
	CHURN_OUT=$(BUILD)/demo.zst LD_PRELOAD=$(CURDIR)/$(BUILD)/libchurn.so $(BUILD)/demo-workload 200 5
	$(BUILD)/churn-analyze $(BUILD)/demo.zst

check: all $(BUILD)/.deps-test sanitize slow
	@sh test/run.sh

# The shim under sanitizers (test/t_sanitizers.sh).  An ASan-built interposer cannot be
# preloaded honestly: ASan must own malloc, and the shim is what answers malloc.  So the
# preloaded library gets UndefinedBehaviorSanitizer only (any UB aborts the traced program),
# and AddressSanitizer checks the shim's data structures linked into a test driver whose page
# source is ASan's heap (test/programs/shim_units.c).
SAN      := $(BUILD)/sanitize
UBSAN    := -fsanitize=undefined -fno-sanitize-recover=all
UNIT_SRC := shim/record/livemap.c shim/record/order.c shim/walk/stacks.c shim/record/segstate.c \
            shim/base/arena.c shim/record/thread.c shim/walk/cfi.c shim/walk/cfi_parse.c \
            shim/walk/jitrule.c

sanitize: $(SAN)/libchurn-ubsan.so $(SAN)/shim-units

$(SAN)/shim/%.o: shim/%.c $(HEADERS) | $(BUILD)/.deps-build
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SHIM_CFLAGS) $(UBSAN) -c $< -o $@

$(SAN)/libchurn-ubsan.so: $(SHIM_SRC:%.c=$(SAN)/%.o)
	$(CC) $(CFLAGS) $(SHIM_CFLAGS) $(UBSAN) -shared -o $@ $^ $(SHIM_LIBS) $(SHIM_LDFLAGS)

$(SAN)/shim-units: test/programs/shim_units.c $(UNIT_SRC) $(HEADERS) | $(BUILD)/.deps-build
	@mkdir -p $(dir $@)
	$(CC) -O1 -g $(WARN) -std=gnu11 -fno-omit-frame-pointer -ftls-model=initial-exec \
		-D_GNU_SOURCE -Iinclude -Ishim -fsanitize=address,undefined -fno-sanitize-recover=all \
		-o $@ test/programs/shim_units.c $(UNIT_SRC) -lpthread -ldl

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(BUILD)/libchurn.so $(DESTDIR)$(PREFIX)/lib/libchurn.so
	install -m 0755 $(BUILD)/churn-analyze $(DESTDIR)$(PREFIX)/bin/churn-analyze
	install -m 0755 $(BUILD)/churn $(DESTDIR)$(PREFIX)/bin/churn
	install -m 0644 include/churn.h $(DESTDIR)$(PREFIX)/include/churn.h
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0644 man/churn.1 man/churn-analyze.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(BUILD)/churn.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/churn
	install -m 0644 $(BUILD)/churn.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/churn-analyze

bench: all $(BUILD)/.deps-test
	@sh bench/run.sh

# The analyzer with its decoding shortcuts turned off (analyzer/read/records.c says which): only
# records.o differs.  Tests marked "# decoders: fast and slow" run over it too in a full
# test/run.sh, with CHURN_TEST_DECODER=slow (test/lib.sh); test/t_decoders.sh compares the
# two builds' reports.
SLOW        := $(BUILD)/slow
DECODE_SLOW := -DCHURN_DECODE_SLOW

$(SLOW)/analyzer/read/records.o: analyzer/read/records.c $(HEADERS) | $(BUILD)/.deps-build
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ANALYZER_CFLAGS) $(DECODE_SLOW) -c $< -o $@

$(SLOW)/churn-analyze: $(filter-out $(BUILD)/analyzer/read/records.o,$(ANALYZER_OBJ)) \
                       $(SLOW)/analyzer/read/records.o
	$(CC) $(CFLAGS) -o $@ $^ $(ANALYZER_LIBS)

slow: $(SLOW)/churn-analyze

# libFuzzer over the whole analyzer (test/fuzz/fuzz_trace.c); test/t_fuzz.sh runs it briefly,
# over both decoders, `make fuzz` for FUZZ_SECONDS (default 600).
FUZZ_BUILD = clang -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude -Ianalyzer -I/usr/include/elfutils \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Dmain=churn_analyze_main -o $@ $(ANALYZER_SRC) test/fuzz/fuzz_trace.c $(ANALYZER_LIBS)

$(BUILD)/fuzz/fuzz_trace: test/fuzz/fuzz_trace.c $(ANALYZER_SRC) $(HEADERS) | $(BUILD)/.deps-test
	@mkdir -p $(dir $@)
	$(FUZZ_BUILD)

$(SLOW)/fuzz/fuzz_trace: test/fuzz/fuzz_trace.c $(ANALYZER_SRC) $(HEADERS) | $(BUILD)/.deps-test
	@mkdir -p $(dir $@)
	$(FUZZ_BUILD) $(DECODE_SLOW)

fuzz: all $(BUILD)/fuzz/fuzz_trace
	@f=$${FUZZ_SECONDS:-600}; FUZZ_SECONDS=$$f CHURN_TEST_TIMEOUT=$$((f + 120)) sh test/run.sh fuzz

# Long runs into a bounded ring: file bound, analyzer, libchurn's memory over time.
soak: all $(BUILD)/demo-workload
	@sh bench/soak.sh

# A server traced in sampled mode and scraped for long: throughput against native, churn
# serve's memory and CPU over time, the trace's bytes per hour (bench/live_soak.sh).
soak-live: all $(BUILD)/.deps-test
	@sh bench/live_soak.sh

# The commit message's shape (HACKING.md, "Commits"), checked by .githooks/commit-msg.
setup:
	git config core.hooksPath .githooks

clean:
	rm -rf $(BUILD)

# `make -s print-ANALYZER_LIBS`: a variable's value, for tests that build the analyzer their
# own way (test/t_analyzer_fuzz.sh) and must link what the Makefile links.
print-%:
	@echo $($*)
