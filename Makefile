# The two commands of the README: `make report` (the main job) and `make test`.
# Each sets up what it needs on first use, idempotently: OS packages (when root), a virtual
# environment in .venv, and the Python packages.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PROFILE ?= quick
OS_PACKAGES := mariadb-server sysbench chromium chromium-driver linux-perf valgrind patchelf debian-archive-keyring \
               fonts-noto-cjk iproute2
PYTEST_ARGS ?=
# MySQL 5.7 and 8.0 come as generic Linux tarballs from a mirror (CLAIMLAB_MYSQL_MIRROR: a folder or
# URL with a SHA256SUMS; default MySQL's own site). Where a mirror sits beside the clone, it is used.
MYSQL_MIRROR_DIR := $(abspath ../shared/mysql-mirror)
ifneq ($(wildcard $(MYSQL_MIRROR_DIR)/SHA256SUMS),)
export CLAIMLAB_MYSQL_MIRROR ?= file://$(MYSQL_MIRROR_DIR)
endif
# The suite runs in four worker processes (pytest-xdist), each taking whole modules so that a
# module's fixtures are built once: its tests mostly start servers and wait on them, so four
# workers keep two vCPUs busy (three left them idle a tenth of the time). TEST_WORKERS=0 runs it
# in one process.
TEST_WORKERS ?= 4
# Python caches compiled modules, and pytest its rewritten tests, in __pycache__/ (ignored by git).
# Where PYTHONDONTWRITEBYTECODE is set, every process of a report or of the suite (each test
# worker, command and notebook kernel) would compile claimlab again, and each test worker every
# test module: the two commands keep the caches.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup os-packages mysql flamegraph-tool report test lint clean help

help:
	@echo "make report   run every claim on every server available here (PROFILE=$(PROFILE)), and render reports/"
	@echo "make test     run the test suite (unit, integration on real MariaDB and MySQL, notebooks)"
	@echo "make setup    only install what the two above need (MariaDB, MySQL 9.7 from Debian, tools; MySQL 5.7/8.0 archives are extracted on first use)"

setup: os-packages $(VENV)/.installed flamegraph-tool mysql

# Oracle MySQL 9.7 from Debian's archive (sid), unpacked into ~/.cache/claimlab with this host's apt
# tools (private package lists; signatures checked). On hosts without apt-get/dpkg-deb (not Debian or
# Ubuntu) or without network it says why in one line, and MySQL targets are reported unavailable.
mysql: os-packages $(VENV)/.installed
	$(VENV)/bin/claimlab setup-mysql --if-possible

# Flame graphs are drawn by inferno (a maintained Rust port of FlameGraph); no OS package has it.
# Without a Rust toolchain this says so in one line and set-up goes on: reports and profiles
# skip the flame graphs only.
flamegraph-tool:
	@command -v inferno-flamegraph >/dev/null 2>&1 || test -x "$$HOME/.cargo/bin/inferno-flamegraph" || { \
	  cargo=$$(command -v cargo || echo "$$HOME/.cargo/bin/cargo"); \
	  if [ -x "$$cargo" ]; then echo "installing inferno (cargo install, about 2 minutes)"; \
	    "$$cargo" install --locked --quiet inferno; \
	  else echo "flame graphs skipped: no cargo here (to draw them: install Rust with rustup, then cargo install inferno)"; fi; }

os-packages:
	@missing=""; for p in $(OS_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing OS packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else \
	    echo "claimlab needs OS packages:$$missing. Install them with: sudo apt-get install$$missing" >&2; exit 1; \
	  fi; \
	fi

# uv installs the packages: about 16 s from a warm cache where pip takes 35 s. Their bytecode is
# compiled at install, and claimlab's and the tests' are cached as they are first imported (below).
$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q uv
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) -e '.[dev]'
	@touch $@

report: setup
	$(VENV)/bin/claimlab report --profile $(PROFILE)

test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check lib tests bench notebooks

clean:
	rm -rf reports work
