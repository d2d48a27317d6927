#!/usr/bin/env bash
# How long the README's two commands take on a fresh machine: a fresh clone
# of this tree's HEAD (beside it, so ../shared is where the tests look) and
# an empty cargo registry (every crate is downloaded), then
#   1. `cargo run --release -- up --build`, timed until /healthz answers;
#   2. `./scripts/test.sh`, timed to its end, its phases in its log.
# Prints both figures; the clone, its logs and its registry are left in
# ../cairn-feedback-<pid> to read (remove it after). docs/testing.md keeps
# the figures of the last measured run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(dirname "$root")/cairn-feedback-$$"
git clone --quiet "$root" "$work"
cd "$work"
# An empty registry; rustup's toolchains stay where they are (RUSTUP_HOME).
export CARGO_HOME="$work/.cargo-home"
mkdir -p "$CARGO_HOME"
export PATH="$HOME/.cargo/bin:$PATH"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
started=$SECONDS
cargo run --release -- up --build --listen "127.0.0.1:$port" > up.log 2>&1 &
up=$!
until curl -sf "http://127.0.0.1:$port/healthz" > /dev/null; do
  if ! kill -0 "$up" 2> /dev/null; then
    echo "feedback: the first command ended before serving; see $work/up.log" >&2
    exit 1
  fi
  if [ $((SECONDS - started)) -gt 3600 ]; then
    kill "$up"
    echo "feedback: the first command did not serve within an hour; see $work/up.log" >&2
    exit 1
  fi
  sleep 1
done
serve=$((SECONDS - started))
echo "feedback: the first command serves after $((serve / 60)) min $((serve % 60)) s"
# `cargo run` replaced itself with `cairn up`: stop it as Ctrl-C would.
kill -INT "$up"
wait "$up" || true

started=$SECONDS
status=0
./scripts/test.sh > test.log 2>&1 || status=$?
took=$((SECONDS - started))
echo "feedback: the test command then took $((took / 60)) min $((took % 60)) s (exit $status); phases:"
grep '^\[test.sh\]' test.log
echo "feedback: logs in $work"
exit "$status"
