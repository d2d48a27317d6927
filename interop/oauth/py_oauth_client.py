"""The official Python MCP SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`)
against a Cairn that is its own authorization server: discovery, registration
(dynamic, or a Client ID Metadata Document URL as client_id), authorization
code + PKCE through a person's consent (the redirect handler prints the URL,
the callback handler waits on a loopback server), the token, then the note
steps; then refresh: with the access token's expiry passed, the SDK refreshes
before its next request, and the refresh token rotates.

usage: python py_oauth_client.py MCP_URL
env: CAIRN_NOTE, CALLBACK_PORT, CLIENT_METADATA_URL (optional), CLIENT_NAME,
     AUTH_TIMEOUT_MS (default 60000), MODE (legacy or auto; default legacy)
Prints JSON lines as interop/oauth/common.mjs describes; exits non-zero on any surprise.
"""

import asyncio
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


def say(obj):
    print(json.dumps(obj), flush=True)


def field(obj, *names):
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(names[0])


class Memory:
    """TokenStorage in memory: one session; every token answer kept in order."""

    def __init__(self):
        self.tokens = None
        self.client = None
        self.history = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken):
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull):
        self.client = client_info


def callback_server(port, loop, answer):
    """A loopback server on `port` that hands the first /callback query to `answer` (a future)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            if url.path != "/callback":
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.end_headers()
            self.wfile.write(b"You may close this page.")
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            loop.call_soon_threadsafe(lambda: answer.done() or answer.set_result(query))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def main(url):
    env = os.environ
    note = env["CAIRN_NOTE"]
    metadata_url = env.get("CLIENT_METADATA_URL") or None
    timeout = int(env.get("AUTH_TIMEOUT_MS", "60000")) / 1000
    loop = asyncio.get_running_loop()
    answer = loop.create_future()
    server = callback_server(int(env.get("CALLBACK_PORT", "0")), loop, answer)
    redirect = f"http://127.0.0.1:{server.server_address[1]}/callback"
    storage = Memory()
    authorization_urls = []
    requests = []

    async def redirect_handler(authorization_url):
        authorization_urls.append(authorization_url)
        say({"authorize": authorization_url})

    async def callback_handler():
        query = await asyncio.wait_for(answer, timeout)
        if "error" in query:
            raise RuntimeError(f"authorization refused: {query}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name=env.get("CLIENT_NAME", "Cairn interop (Python SDK)"),
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=metadata_url,
    )

    async def log_request(request):
        requests.append({"method": request.method, "path": request.url.path})

    async def log_response(response):
        requests[-1]["status"] = response.status_code if requests else None

    try:
        async with httpx2.AsyncClient(auth=provider, timeout=30,
                                      event_hooks={"request": [log_request], "response": [log_response]}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=env.get("MODE", "legacy")) as client:
                names = [t.name for t in (await client.list_tools()).tools]

                async def call(name, args):
                    result = await client.call_tool(name, args)
                    return {"isError": bool(field(result, "is_error", "isError")),
                            "structuredContent": field(result, "structured_content", "structuredContent")}

                steps = await note_steps(call, note, env.get("LINE", "python oauth"))

                # Refresh, the SDK's own way: once the access token's expiry has
                # passed, the provider refreshes before the next request.
                first = storage.tokens
                provider.context.token_expiry_time = time.time() - 1
                listed = await call("list_notes", {})
                second = storage.tokens
                refresh = {
                    "call_after_refresh_ok": not listed["isError"],
                    "rotated_refresh_token": bool(second.refresh_token) and second.refresh_token != first.refresh_token,
                    "new_access_token": second.access_token != first.access_token,
                    "token_answers": len(storage.history),
                }
        say({"result": {
            "client": "python-sdk",
            "registration": "metadata-document" if metadata_url else "dynamic",
            "client_id": storage.client.client_id if storage.client else None,
            "authorization_urls": authorization_urls,
            "granted_scope": first.scope,
            "tools": names,
            **steps,
            "refresh": refresh,
            "requests": requests,
        }})
    finally:
        server.shutdown()


async def note_steps(call, note, line):
    """The steps of common.mjs's noteSteps, in Python."""
    read = await call("read_note_tab", {"note_id": note, "tab_id": "markdown"})
    assert not read["isError"], read
    version = read["structuredContent"]["version"]
    edit = {"note_id": note, "tab_id": "markdown", "operation": "append_text", "text": f"{line}\n",
            "expected_version": version}
    wrote = await call("edit_note_tab", {**edit, "idempotency_key": f"{line}-1"})
    assert not wrote["isError"], wrote
    stale = await call("edit_note_tab", {**edit, "text": f"{line} (stale)\n", "idempotency_key": f"{line}-2"})
    back = await call("read_note_tab", {"note_id": note, "tab_id": "markdown"})
    return {
        "read_version": version,
        "written_version": (wrote["structuredContent"] or {}).get("version"),
        "conflict": (stale["structuredContent"] or {}).get("error") if stale["isError"] else None,
        "conflict_current_version": (stale["structuredContent"] or {}).get("current_version"),
        "read_back": (back["structuredContent"] or {}).get("text"),
        "read_back_version": (back["structuredContent"] or {}).get("version"),
    }


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except BaseException as e:  # noqa: BLE001 - a failure is a message and an exit code
        import traceback

        traceback.print_exc()
        sys.exit(1)
