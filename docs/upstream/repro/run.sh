#!/usr/bin/env bash
# Builds the tiny app and shows each Spin fault of docs/upstream/ against a
# real Spin: `./run.sh sqlite` (Spin's `spin` SQLite store) or
# `./run.sh redis` (Spin's `redis` store; starts its own redis-server on a
# free port). SPIN: the spin binary (default: `spin` on PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
store=${1:-sqlite}
spin=${SPIN:-spin}
cargo build --quiet --target wasm32-wasip2 --release
work=$(mktemp -d)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
if [ "$store" = redis ]; then
  rport=$(port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --dir "$work" --daemonize no >/dev/null &
  pids+=($!)
  until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.1; done
  printf '[key_value_store.default]\ntype = "redis"\nurl = "redis://127.0.0.1:%s"\n' "$rport" > "$work/rc.toml"
else
  printf '[key_value_store.default]\ntype = "spin"\npath = "kv.db"\n' > "$work/rc.toml"
fi
listen=127.0.0.1:$(port)
RUST_LOG=spin_trigger_http=trace "$spin" up -f spin.toml --listen "$listen" --runtime-config-file "$work/rc.toml" --state-dir "$work/state" > "$work/spin.log" 2>&1 &
pids+=($!)
until grep -qs "^Serving" "$work/spin.log"; do sleep 0.2; done
get() { # PATH: prints the path, the status and the body on one line
  local out; out=$(curl -s -w '\n%{http_code}' "http://$listen$1")
  printf '%-20s [%s] %s\n' "$1" "${out##*$'\n'}" "$(printf '%s' "${out%$'\n'*}" | tr -d '\n')"
}
echo "== routes (store: $store)"
get /exact
get /.well-known/thing
get /anything
echo "== key-value"
get /kv/swap
get /kv/two-creators
get /kv/stale-swap
get /kv/get-many-two
get /kv/get-many-one
get /kv/increment-text
get /kv/get
echo "== Spin's log: which component ran each request, and panics"
grep -o 'url.path="[^"]*".*for component [a-z-]*' "$work/spin.log" | sed -E 's/url.path="([^"]*)".*for component (.*)/\1 -> \2/'
grep -oE 'panicked at [^ ]+|panicked with message "[^"]*"|PoisonError[^"]{0,60}' "$work/spin.log" | sort | uniq -c || true
