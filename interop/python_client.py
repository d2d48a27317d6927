"""Drive a running Cairn with the official Python MCP SDK (PyPI `mcp`).

usage: python_client.py URL MODE   (MODE: legacy = initialize handshake,
auto = server/discover at 2026-07-28 first). Needs CAIRN_TOKEN and CAIRN_NOTE.
Lists the tools, reads the markdown tab, writes it with the version read,
then writes again with the stale version and expects a version_conflict;
then lists the resources and reads the markdown tab as one.
Prints one JSON line with what it saw; exits non-zero on any surprise.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def field(obj, *names):
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(names[0])


async def main(url: str, mode: str) -> None:
    token, note = os.environ["CAIRN_TOKEN"], os.environ["CAIRN_NOTE"]
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "edit_note_tab" in names and "read_note_tab" in names, names
            read = await client.call_tool("read_note_tab", {"note_id": note, "tab_id": "markdown"})
            tab = field(read, "structured_content", "structuredContent")
            version = tab["version"]
            args = {"note_id": note, "tab_id": "markdown", "expected_version": version,
                    "operation": "replace_text", "text": tab["text"] + f"python {mode}\n"}
            wrote = await client.call_tool("edit_note_tab", {**args, "idempotency_key": f"py-{mode}-1"})
            assert not field(wrote, "is_error", "isError"), wrote
            stale = await client.call_tool("edit_note_tab", {**args, "idempotency_key": f"py-{mode}-2"})
            refusal = field(stale, "structured_content", "structuredContent")
            assert field(stale, "is_error", "isError") and refusal["error"] == "version_conflict", stale
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = field(await client.list_resource_templates(), "resource_templates", "resourceTemplates")
            contents = (await client.read_resource(f"cairn://notes/{note}/tabs/markdown")).contents
            markdown = next(c.text for c in contents if field(c, "mime_type", "mimeType") == "text/markdown")
            print(json.dumps({"client": "python", "mode": mode, "tools": len(names),
                              "protocol": str(getattr(client, "protocol_version", "")),
                              "read_version": version, "conflict": refusal["error"],
                              "current_version": refusal["current_version"],
                              "note_listed_as_resource": f"cairn://notes/{note}" in uris,
                              "templates": len(templates), "resource_text": markdown,
                              "written_text": args["text"]}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
