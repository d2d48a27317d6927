#!/usr/bin/env bash
# Everything the tests need, then every test. Safe to re-run: each step
# skips what is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

# Where the time goes: each phase's start, in seconds since the run began
# (docs/testing.md keeps the figures of a fresh run).
step() { echo "[test.sh] at ${SECONDS}s: $*" >&2; }

# Rust: the component target (cairn build would add it too, and says so).
if command -v rustup >/dev/null 2>&1; then
  rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
  rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed | grep -q '^clippy' || rustup component add clippy
fi
# Every scratch file of this run (state directories, Redis and Spin working
# directories, browser profiles: all made under $TMPDIR by Rust, Python,
# Node and mktemp) lives in one directory, removed when the run ends however
# it ends; one a killed run left behind is removed by the next.
rm -rf target/test-tmp
export TMPDIR="$PWD/target/test-tmp/run-$$"
mkdir -p "$TMPDIR"
trap "rc=\$?; rm -rf '$PWD/target/test-tmp'; step \"finished (exit \$rc)\"" EXIT

# The standard formatter first (seconds): the tree is as rustfmt.toml writes it.
step "formatter"
cargo fmt --check

# Debian packages the tests start: redis-server and redis-cli (the
# Redis/Valkey backend's tests and the many-hosts tests run their own servers
# and 3-primary, 3-replica clusters on free loopback ports) and
# chromium (the people's editor's tests drive it headless; Playwright never
# downloads a browser here).
step "system packages"
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# openssl makes the test CA and certificates of the https tests.
command -v openssl >/dev/null 2>&1 || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  as_root=""
  [ "$(id -u)" -eq 0 ] || as_root="sudo"
  $as_root apt-get update
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends "${need[@]}"
fi

step "Python and npm clients"
# The official MCP clients the interop tests drive (pinned in interop/).
if [ ! -x target/interop-venv/bin/python ]; then
  python3 -m venv target/interop-venv
fi
target/interop-venv/bin/pip install --quiet --disable-pip-version-check -r interop/requirements.txt
(cd interop && npm install --prefer-offline --no-audit --no-fund --loglevel=error)
# The test authorization server (oidc-provider, on the Node 22 it pins).
(cd tests/oidc && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)

# The benchmark peers (bench/peer): the plain MCP servers a user would write
# instead, on the official Python and TypeScript SDKs with SQLite; the bench
# tests start both (better-sqlite3 ships its prebuilt binary: nothing compiles).
if [ ! -x target/peer-venv/bin/python ]; then
  python3 -m venv target/peer-venv
fi
target/peer-venv/bin/pip install --quiet --disable-pip-version-check -r bench/peer/requirements.txt
(cd bench/peer/ts && npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error)

# Playwright for Python, for the browser tests (pinned in tests/browser/).
if [ ! -x target/browser-venv/bin/python ]; then
  python3 -m venv target/browser-venv
fi
target/browser-venv/bin/pip install --quiet --disable-pip-version-check -r tests/browser/requirements.txt
(cd tests/browser && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)

# One profile, one target dir and one feature resolution for everything:
# building the tests first also builds the `cairn` binary they use, so
# wasmtime is compiled once (a separate `cargo build --bin cairn` would
# resolve features without the dev-dependencies and compile it twice).
step "building the tests and the host"
cargo test --release --locked --no-run
# The Rust SDK's client for the interop tests (its own feature set, apart
# from the host's, so it never touches wasmtime).
step "building the Rust SDK's MCP client"
cargo build --release --locked -p cairn-rmcp-interop
step "building the components"
./target/release/cairn build
./target/release/cairn build -f tests/fixtures/spin.toml
# The standard linter, every target of every member, components included
# (so after `cairn build`, which installs the editor's npm libraries its
# build script embeds), no warning let through: a check build of its own, a
# few minutes on a fresh clone, seconds after.
step "the linter"
cargo clippy --locked --workspace --all-targets -- -D warnings
# The API documentation builds without a warning (broken or private links,
# ambiguous names): it reuses the dependencies the linter just checked.
step "the API documentation"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace --quiet

step "the tests"
cargo test --release --locked
# The host's modules where instance reuse could show, again with reuse off
# and forced high (the run above has Spin's defaults; tests/host/reuse.rs
# sets its own).
step "the reuse reruns"
for reuse in 1 100000; do
  CAIRN_MAX_INSTANCE_REUSE_COUNT=$reuse cargo test --release --locked --test host -- \
    mcp_protocol notes_e2e tenants claims concurrency exhaustion limits own_oauth \
    front_door guessing stalled_uploads resources history composition
done

# The people's editor in headless Chromium, against a `cairn up` of its own.
step "the browser tests"
target/browser-venv/bin/python -m pytest tests/browser -q -p no:cacheprovider
