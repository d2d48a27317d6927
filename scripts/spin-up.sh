#!/usr/bin/env bash
# Runs Cairn's spin.toml on a real Spin, as `cairn up` runs it on the
# embedded host: a runtime config with the `default` and `cache` stores
# (SQLite files in the state dir, or one Redis server), and the variables
# `cairn up` fills by itself (src/local.rs) filled the same way, through
# SPIN_VARIABLE_<NAME>:
#
# - with no jwks, jwks_url or issuer set: a local Ed25519 signing key (the
#   state dir's `signing-key`, or SPIN_VARIABLE_SIGNING_KEY), its JWKS, the
#   issuer (the origin of the audience), Cairn's own authorization server
#   (signing_key, authorization_server) and the editor's client id;
# - audience: http://<listen>/mcp; identity_secret: the state dir's
#   `identity-secret`.
#
# Variables already set in the environment are kept. Build the components
# first (`cargo run --release -- build`).
#
#   scripts/spin-up.sh [--listen ADDR] [--state-dir DIR] [--redis URL [--cache sqlite]]
#                      [--runtime-config-file FILE] [--print-env] [-- SPIN-UP-ARGS...]
#
# --redis URL puts `default` on database 0 and `cache` on database 1 of that
# server (a URL without a database); with --cache sqlite, `cache` stays a
# SQLite file of this Spin's own. --print-env prints the variables it would
# set (secrets included) and exits. Anything after `--` goes to `spin up`
# (e.g. `-c router -c health`, `--max-instance-reuse-count 1`).
#
# Refused, naming the fault (exit 4): `cache` on Spin's Redis store for a
# tool host (tool_transport=http) or with keys fetched from an issuer (jwks
# empty). That store reports every compare-and-swap failed
# (docs/upstream/spin-redis-swap.md): a tool's check that an identity is
# used once, and the claim of a key fetch, would refuse every call.
#
# The binary: $CAIRN_SPIN if set, else the one in ../shared/spin/ unpacked to
# target/spin/spin. Needs openssl (the JWKS of the local key).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
listen=127.0.0.1:3000
state=$root/target/spin-state
redis=""
cache=""
rc=""
print_env=0
while [ $# -gt 0 ]; do
  case $1 in
    --listen) listen=$2; shift 2 ;;
    --state-dir) state=$2; shift 2 ;;
    --redis) redis=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --runtime-config-file) rc=$2; shift 2 ;;
    --print-env) print_env=1; shift ;;
    --) shift; break ;;
    *) echo "spin-up.sh: unknown argument $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

mkdir -p "$state"
state=$(cd "$state" && pwd)

# A secret file of 32 random bytes in hex, created once (mode 0600).
secret_file() {
  if [ ! -s "$1" ]; then
    (umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$1.tmp.$$" && mv "$1.tmp.$$" "$1")
  fi
  tr -d ' \n' < "$1"
}

b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }

# The public JWKS of an Ed25519 seed (64 hex digits), as cairn_auth's
# LocalKey::jwks writes it: the key id is "cairn-" and 16 characters of the
# base64url SHA-256 of the public key's base64url text.
jwks_of() {
  local der x kid
  der=$(mktemp)
  printf '302e020100300506032b657004220420%s' "$1" | xxd -r -p > "$der"
  x=$(openssl pkey -inform DER -in "$der" -pubout -outform DER | tail -c 32 | b64url)
  rm -f "$der"
  kid=cairn-$(printf '%s' "$x" | openssl dgst -sha256 -binary | b64url | cut -c1-16)
  printf '{"keys":[{"kty":"OKP","crv":"Ed25519","x":"%s","kid":"%s","alg":"EdDSA"}]}' "$x" "$kid"
}

set_default() { # NAME VALUE: SPIN_VARIABLE_NAME unless already set (and not empty)
  local var=SPIN_VARIABLE_$1
  if [ -z "${!var:-}" ]; then export "$var=$2"; fi
}

set_default AUDIENCE "http://$listen/mcp"
if [ -z "${SPIN_VARIABLE_JWKS:-}" ] && [ -z "${SPIN_VARIABLE_JWKS_URL:-}" ] && [ -z "${SPIN_VARIABLE_ISSUER:-}" ]; then
  key=${SPIN_VARIABLE_SIGNING_KEY:-$(secret_file "$state/signing-key")}
  issuer=$(printf '%s' "$SPIN_VARIABLE_AUDIENCE" | sed -E 's#^([a-z]+://[^/]+).*#\1#')
  export SPIN_VARIABLE_SIGNING_KEY=$key SPIN_VARIABLE_JWKS=$(jwks_of "$key") SPIN_VARIABLE_ISSUER=$issuer
  set_default AUTHORIZATION_SERVER "$issuer"
  set_default UI_CLIENT_ID cairn-editor
fi
set_default IDENTITY_SECRET "$(secret_file "$state/identity-secret")"

if [ -n "$redis" ] && [ -z "$rc" ] && [ "$cache" != sqlite ]; then
  why="" fix="add --cache sqlite (this Spin keeps cache in a SQLite file of its own)"
  if [ "${SPIN_VARIABLE_TOOL_TRANSPORT:-}" = http ]; then why="a tool host (tool_transport=http) checks that each signed identity is used once"; fi
  if [ -z "${SPIN_VARIABLE_JWKS:-}" ]; then
    why="keys are fetched from the issuer, and one request claims each fetch"
    fix="$fix, or paste the issuer's JWKS as SPIN_VARIABLE_JWKS"
  fi
  if [ -n "$why" ]; then
    echo "spin-up.sh: refusing to put cache on Spin's Redis store: $why by a compare-and-swap on cache," >&2
    echo "and Spin's Redis store reports every compare-and-swap failed (docs/upstream/spin-redis-swap.md): every call would be refused." >&2
    echo "Instead, $fix." >&2
    exit 4
  fi
fi

if [ "$print_env" = 1 ]; then
  env | grep '^SPIN_VARIABLE_' | sort
  exit 0
fi

if [ -z "$rc" ]; then
  rc=$state/runtime-config.toml
  if [ -n "$redis" ] && [ "$cache" = sqlite ]; then
    printf '[key_value_store.default]\ntype = "redis"\nurl = "%s/0"\n\n[key_value_store.cache]\ntype = "spin"\npath = "kv-cache.db"\n' "${redis%/}" > "$rc"
  elif [ -n "$redis" ]; then
    printf '[key_value_store.default]\ntype = "redis"\nurl = "%s/0"\n\n[key_value_store.cache]\ntype = "redis"\nurl = "%s/1"\n' "${redis%/}" "${redis%/}" > "$rc"
  else
    printf '[key_value_store.default]\ntype = "spin"\npath = "kv-default.db"\n\n[key_value_store.cache]\ntype = "spin"\npath = "kv-cache.db"\n' > "$rc"
  fi
fi

spin=${CAIRN_SPIN:-}
if [ -z "$spin" ]; then
  unpack=$root/../shared/spin/unpack.sh
  if [ ! -x "$unpack" ]; then
    echo "spin-up.sh: no Spin: set CAIRN_SPIN to a spin binary, or provide ../shared/spin/ (unpack.sh)" >&2
    exit 3
  fi
  spin=$("$unpack" "$root/target/spin/spin")
fi
cd "$root"
exec "$spin" up -f "$root/spin.toml" --listen "$listen" --runtime-config-file "$rc" --state-dir "$state" "$@"
