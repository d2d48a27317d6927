"""The people's editor in a real browser.

One `cairn up` per test session (its own state dir and free loopback port),
headless Chromium from Debian's `chromium` package driven by Playwright
(`executable_path`; no browser is ever downloaded), and agents that talk MCP
over HTTP to the same server with tokens minted by `cairn token`.

Each test creates its own note, so tests do not share documents.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CAIRN = ROOT / "target" / "release" / "cairn"
SHOTS = ROOT / "docs"


def chromium_path():
    path = os.environ.get("CAIRN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.exit("chromium is not installed: apt-get install chromium (scripts/test.sh does)", returncode=2)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running `cairn up`: its base URL, its log, the one-time sign-in link
    it printed (`one_time_link`, when it printed one), and `sign_in_link`: a
    link signing in the local person (a human admin of tenant `local`) with
    a token minted by `cairn token`, as operators and tests do."""

    def __init__(self, state_dir, port=None, env=None, sign_in=True, args=()):
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.state_dir = state_dir
        self.log = []
        # The compile cache the host tests share: each component is compiled
        # to machine code once a run, not once a server (22 components take a
        # minute and more of both cores to compile).
        if "--cache-dir" not in args:
            args = ["--cache-dir", str(ROOT / "target" / "test-cache"), *args]
        self.proc = subprocess.Popen(
            [str(CAIRN), "up", "--listen", f"127.0.0.1:{self.port}", "--state-dir", str(state_dir), *args],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "NO_COLOR": "1", **(env or {})},
        )
        # Serving, the page's line is printed last but for the one-time
        # sign-in link (printed until someone has used one).
        found = threading.Event()
        linked = threading.Event()
        serving = []
        self.one_time_link = None
        self.sign_in_link = None

        def drain():
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"(http://127\.0\.0\.1:\d+/#/sign-in/\S+)", line)
                if m:
                    self.one_time_link = m.group(1)
                    linked.set()
                if "cairn is serving" in line:
                    serving.append(time.time())
                if "for the people's editor" in line or (not sign_in and serving):
                    found.set()

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.time() + 120
        while time.time() < deadline and not found.is_set():
            if self.proc.poll() is not None:
                raise RuntimeError("cairn up exited:\n" + "".join(self.log[-30:]))
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=2)
            except OSError:
                pass
            found.wait(0.2)
            if serving and time.time() > serving[0] + 3:
                break  # serving, and no line for the page (a host without the ui component)
        if not found.is_set() and not serving:
            raise RuntimeError("cairn up did not say it serves:\n" + "".join(self.log[-30:]))
        if sign_in:
            linked.wait(2)
            self.sign_in_link = self.base + "/#token=" + self.person_token()

    def person_token(self, sub="local-person", name="Local person", role="admin", ttl=86400):
        """A person's token (a human of tenant `local`), minted by `cairn token`."""
        out = subprocess.run(
            [str(CAIRN), "token", "--tenant", "local", "--sub", sub, "--name", name, "--actor", "human",
             "--role", role, "--scope", "notes:read notes:write notes:delete audit:read", "--ttl", str(ttl),
             "--audience", self.base + "/mcp", "--state-dir", str(self.state_dir)],
            check=True, capture_output=True, text=True,
        )
        return out.stdout.strip()

    def token(self, sub, name, actor="agent", scope="notes:read notes:write"):
        out = subprocess.run(
            [str(CAIRN), "token", "--tenant", "local", "--sub", sub, "--name", name, "--actor", actor,
             "--scope", scope, "--audience", self.base + "/mcp", "--state-dir", str(self.state_dir)],
            check=True, capture_output=True, text=True,
        )
        return out.stdout.strip()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Refused(Exception):
    """A tool result with isError: the refusal's structured content."""

    def __init__(self, body):
        super().__init__(json.dumps(body))
        self.body = body


class Agent:
    """An MCP client over Streamable HTTP (stateless JSON-RPC posts)."""

    def __init__(self, server, token):
        self.server = server
        self.token = token
        self.next_id = 0

    def rpc(self, method, params):
        """One JSON-RPC request: its result (a JSON-RPC error raises)."""
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
        req = urllib.request.Request(self.server.base + "/mcp", data=body, method="POST", headers={
            "authorization": "Bearer " + self.token, "content-type": "application/json",
            "accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(req, timeout=30) as r:
            reply = json.load(r)
        if "error" in reply:
            raise RuntimeError(json.dumps(reply["error"]))
        return reply["result"]

    def call(self, tool, **arguments):
        result = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise Refused(result["structuredContent"])
        return result["structuredContent"]


class Person:
    """The local person's REST calls, for setting up what a test then does in the page."""

    def __init__(self, server):
        self.server = server
        self.token = server.sign_in_link.split("#token=", 1)[1]

    def call(self, method, path, body=None, retry=True):
        """One REST call. The whole session is one person, whose pages poll
        too: a 429 (nothing done) is asked again after its Retry-After, as the
        page does, unless `retry` is off (a test of the budget itself)."""
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(5):
            req = urllib.request.Request(self.server.base + path, data=data, method=method, headers={
                "authorization": "Bearer " + self.token, "content-type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return r.status, json.load(r)
            except urllib.error.HTTPError as e:
                wait = e.headers.get("retry-after")
                if e.code != 429 or not retry or attempt == 4 or not wait:
                    return e.code, json.load(e)
                time.sleep(min(float(wait), 10) + 0.1)

    def note(self, title, approved=True):
        status, body = self.call("POST", "/api/v1/notes", {"title": title, "approved_for_agents": approved})
        assert status == 201, body
        return body["note_id"]

    def write(self, note_id, text, tab="markdown"):
        _, head = self.call("GET", f"/api/v1/notes/{note_id}")
        status, body = self.call("PUT", f"/api/v1/notes/{note_id}/tabs/{tab}", {"expected_version": head["version"], "text": text})
        assert status == 200, body
        return body["version"]


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    # The whole suite acts as one person in a few minutes, far faster than a
    # person types: a budget of 6,000 calls a minute keeps it from waiting on
    # 429s (test_busy.py checks the budget on a host of its own).
    s = Server(tmp_path_factory.mktemp("cairn-state"), env={"SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE": "6000"})
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


class Watched:
    """A page with every script dialog, page error and console error recorded."""

    def __init__(self, page):
        self.page = page
        self.dialogs = []
        self.errors = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        # A refused call (409, 404) is logged by the browser as a failed load: not a page error.
        page.on("console", lambda m: m.type == "error" and not m.text.startswith("Failed to load resource") and self.errors.append(m.text))


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1360, "height": 900})
    yield ctx
    ctx.close()


@pytest.fixture
def person(server):
    return Person(server)


@pytest.fixture
def agent(server):
    return Agent(server, server.token("agent-1", "Drafting agent"))


def open_signed_in(context, server, route="#/"):
    """A page signed in with the printed link, then at `route`."""
    w = Watched(context.new_page())
    w.page.goto(server.sign_in_link)
    w.page.wait_for_selector("#new-note-title")
    if route != "#/":
        w.page.evaluate("r => { location.hash = r }", route)
    return w


def screenshot(page, name):
    """Refresh the README's screenshots with CAIRN_SCREENSHOTS=1."""
    if os.environ.get("CAIRN_SCREENSHOTS"):
        page.screenshot(path=str(SHOTS / name))


def agent_rewrite(agent, note_id, change, tab="markdown"):
    """The agent reads the tab and writes `change(text)` back, conditionally and keyed."""
    tab_now = agent.call("read_note_tab", note_id=note_id, tab_id=tab)
    agent.next_id += 1
    return agent.call("edit_note_tab", note_id=note_id, tab_id=tab, operation="replace_text",
                      text=change(tab_now["text"]), expected_version=tab_now["version"],
                      idempotency_key=f"agent-{note_id}-{agent.next_id}")


def opened(context, server, person, title, text):
    """A new note of `person` holding `text`, open in a signed-in page: (note id, version, page)."""
    note = person.note(title)
    version = person.write(note, text)
    w = open_signed_in(context, server)
    open_tab(w, note)
    return note, version, w


def open_tab(w, note_id, tab="markdown"):
    """Opens a tab of a note in the page and waits until it has loaded."""
    w.page.evaluate("r => { location.hash = r }", f"#/n/{note_id}/{tab}")
    w.page.wait_for_selector(f'#main[data-loaded="{tab}"]', state="attached")


def typed_while_the_agent_writes(context, server, person, agent, title, base, mine, theirs):
    """A note holding `base`, opened in a page where the person types `mine`
    while the agent rewrites the stored text with `theirs`: the page's draft is stale."""
    note = person.note(title)
    person.write(note, base)
    w = open_signed_in(context, server)
    open_tab(w, note)
    w.page.fill("#editor", mine)
    agent_rewrite(agent, note, theirs)
    return note, w


def wait_until_no_claims(agent, note_id, seconds=10):
    """Polls `list_claims` until the note has no live claim (or time is up); returns what is left."""
    deadline = time.time() + seconds
    while (claims := agent.call("list_claims", note_id=note_id)["claims"]) and time.time() < deadline:
        time.sleep(0.2)
    return claims


def add_tab_in_page(w, kind, label, ready):
    """Adds a tab of `kind` from the tab strip's form; returns the new tab's id once `ready` shows."""
    w.page.select_option("#new-tab-kind", kind)
    w.page.fill("#new-tab-label", label)
    w.page.click("#create-tab")
    w.page.wait_for_selector(ready)
    return w.page.get_attribute('#tabs button[aria-selected="true"]', "data-tab-id")
