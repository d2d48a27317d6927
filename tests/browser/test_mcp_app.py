"""The merge view (MCP Apps, ui://cairn/merge) in Chromium, driven by the
official SDK's host side (`AppBridge` of @modelcontextprotocol/ext-apps,
bundled by esbuild): a person settles an agent's refused edit inside the
chat. The view reaches Cairn only through the host, which calls the tools
with the agent's token, as a chat client does; the host may refuse a call."""

import json
import subprocess
from pathlib import Path

import pytest

from conftest import Refused

HERE = Path(__file__).resolve().parent
HOST_PAGE = "<!doctype html><meta charset=utf-8><title>host</title><script type=module src=/apps_host.js></script>"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("apps") / "apps_host.js"
    subprocess.run([str(HERE / "node_modules" / ".bin" / "esbuild"), str(HERE / "apps_host.mjs"), "--bundle", "--format=esm",
                    "--log-level=warning", f"--outfile={out}"], check=True, cwd=HERE)
    return out.read_text()


class Chat:
    """A host page with the merge view of one refused (or written) edit."""

    def __init__(self, context, bundle, agent):
        self.agent = agent
        self.refuse = None
        self.calls = []
        self.page = context.new_page()
        self.errors = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def serve(route):
            path = route.request.url.split("apps.test", 1)[1]
            if path == "/apps_host.js":
                route.fulfill(body=bundle, content_type="text/javascript")
            else:
                route.fulfill(body=HOST_PAGE, content_type="text/html")

        self.page.route("http://apps.test/**", serve)
        self.page.expose_function("hostCallTool", self.call_tool)
        self.page.goto("http://apps.test/host.html")

    def call_tool(self, params):
        params = json.loads(params)
        self.calls.append(params["name"])
        if self.refuse and params["name"] == "edit_note_tab":
            return json.dumps({"refused": self.refuse})
        return json.dumps(self.agent.rpc("tools/call", params))

    def show(self, arguments, result):
        html = self.agent.rpc("resources/read", {"uri": "ui://cairn/merge"})["contents"][0]["text"]
        app = self.page.evaluate("([h, i, r]) => startHost(h, i, r)", [html, arguments, result])
        assert app["name"] == "cairn-merge", app
        return self.page.frame_locator("iframe")


def conflict(person, agent, before, theirs, mine):
    """A note holding `before`, then `theirs` written by a person while the
    agent proposes `mine` on `before`: the agent's arguments and its refused result."""
    note = person.note("Settled in the chat")
    version = person.write(note, before)
    person.write(note, theirs)
    args = {"note_id": note, "tab_id": "markdown", "operation": "replace_text", "text": mine,
            "expected_version": version, "idempotency_key": "agent-" + note}
    result = agent.rpc("tools/call", {"name": "edit_note_tab", "arguments": args})
    assert result["isError"] and result["structuredContent"]["error"] == "version_conflict", result
    return note, args, result


def text_of(agent, note):
    return agent.call("read_note_tab", note_id=note, tab_id="markdown")["text"]


def test_a_clean_merge_is_written_when_the_person_allows_it(server, context, bundle, person, agent):
    note, args, result = conflict(person, agent, "intro\nmiddle\nend\n", "intro by person\nmiddle\nend\n", "intro\nmiddle\nend by agent\n")
    chat = Chat(context, bundle, agent)
    view = chat.show(args, result)
    view.locator("#explain:has-text('do not overlap')").wait_for()
    assert view.locator("#result").input_value() == "intro by person\nmiddle\nend by agent\n"
    assert text_of(agent, note) == "intro by person\nmiddle\nend\n", "nothing is written before the person chooses"
    view.locator("#write").click()
    view.locator("#status:has-text('Written')").wait_for()
    assert text_of(agent, note) == "intro by person\nmiddle\nend by agent\n"
    assert chat.calls == ["merge_note_tab", "edit_note_tab"]
    assert chat.errors == []


def test_a_conflict_is_settled_by_picking_a_side_or_editing_the_text(server, context, bundle, person, agent):
    note, args, result = conflict(person, agent, "a\nb\nc\n", "a\nb by person\nc\n", "a\nb by agent\nc\n")
    view = Chat(context, bundle, agent).show(args, result)
    view.locator("li[data-source='conflict']").wait_for()
    assert view.locator("#result").input_value() == "a\nb by person\nc\n", "a conflict keeps what is stored until a pick"
    view.locator(".pick-mine").click()
    assert view.locator("#result").input_value() == "a\nb by agent\nc\n"
    view.locator(".pick-both").click()
    assert view.locator("#result").input_value() == "a\nb by person\nb by agent\nc\n"
    view.locator("#result").fill("a\nb, as the person settled it\nc\n")
    assert view.locator(".pick-theirs").is_disabled(), "picks no longer apply to a text edited by hand"
    view.locator("#write").click()
    view.locator("#status:has-text('Written')").wait_for()
    assert text_of(agent, note) == "a\nb, as the person settled it\nc\n"


def test_cancel_writes_nothing(server, context, bundle, person, agent):
    note, args, result = conflict(person, agent, "x\n", "x by person\n", "x by agent\n")
    chat = Chat(context, bundle, agent)
    view = chat.show(args, result)
    view.locator("li[data-source='conflict']").wait_for()
    view.locator("#cancel").click()
    view.locator("#status:has-text('nothing was written')").wait_for()
    assert text_of(agent, note) == "x by person\n"
    assert "edit_note_tab" not in chat.calls


def test_a_merge_gone_stale_is_refused_then_merged_again_and_written(server, context, bundle, person, agent):
    note, args, result = conflict(person, agent, "one\ntwo\nthree\n", "one by person\ntwo\nthree\n", "one\ntwo\nthree by agent\n")
    view = Chat(context, bundle, agent).show(args, result)
    view.locator("#explain:has-text('do not overlap')").wait_for()
    person.write(note, "one, again\ntwo\nthree\n")
    view.locator("#write").click()
    view.locator("#explain:has-text('Someone wrote the tab again')").wait_for()
    assert text_of(agent, note) == "one, again\ntwo\nthree\n", "the stale write was refused: nothing lost"
    assert view.locator("#result").input_value() == "one, again\ntwo\nthree by agent\n"
    view.locator("#write").click()
    view.locator("#status:has-text('Written')").wait_for()
    assert text_of(agent, note) == "one, again\ntwo\nthree by agent\n"


def test_a_write_the_host_refuses_leaves_the_note_as_it_was(server, context, bundle, person, agent):
    note, args, result = conflict(person, agent, "p\n", "p by person\n", "p\nq by agent\n")
    chat = Chat(context, bundle, agent)
    chat.refuse = "the person did not allow this call"
    view = chat.show(args, result)
    view.locator("#explain").wait_for()
    view.locator("#write").click()
    view.locator("#status:has-text('the host did not make the call')").wait_for()
    assert 'did not allow' in view.locator('#status').inner_text()
    assert text_of(agent, note) == "p by person\n"


def test_an_edit_that_was_written_is_shown_as_written(server, context, bundle, person, agent):
    note = person.note("Written at once")
    version = person.write(note, "v\n")
    args = {"note_id": note, "tab_id": "markdown", "operation": "replace_text", "text": "v by agent\n",
            "expected_version": version, "idempotency_key": "agent-ok-" + note}
    result = agent.rpc("tools/call", {"name": "edit_note_tab", "arguments": args})
    with pytest.raises(Refused):
        agent.call("edit_note_tab", **{**args, "idempotency_key": "other", "text": "late\n"})
    view = Chat(context, bundle, agent).show(args, result)
    view.locator(f"#status:has-text('version {result['structuredContent']['version']}')").wait_for()
    assert view.locator("#merge").is_hidden()
