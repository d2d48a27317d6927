"""Live across hosts: a page served by one host learns within two seconds of
an agent's write over MCP on another host, both hosts on one Redis."""

import socket
import subprocess
import time

import pytest

from conftest import Agent, Person, Server, agent_rewrite, free_port, open_signed_in, open_tab


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """Two `cairn up` on one Redis (default on db 0, cache on db 1), one shared state dir."""
    d = tmp_path_factory.mktemp("redis")
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                              "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.time() < deadline, "redis-server did not start"
            time.sleep(0.05)
    rc = d / "runtime-config.toml"
    rc.write_text(f'[key_value_store.default]\ntype = "redis"\nurl = "redis://127.0.0.1:{port}/0"\n\n'
                  f'[key_value_store.cache]\ntype = "redis"\nurl = "redis://127.0.0.1:{port}/1"\n')
    state = tmp_path_factory.mktemp("shared-state")
    started = []
    try:
        for _ in range(2):
            started.append(Server(state, args=["--runtime-config-file", str(rc)]))
        yield started
    finally:
        for s in started:
            s.stop()
        redis.terminate()
        redis.wait(10)


def test_a_page_on_one_host_shows_an_agents_write_on_another_within_two_seconds(hosts, context):
    near, far = hosts
    person = Person(near)
    note = person.note("Across hosts")
    person.write(note, "first\n")
    agent = Agent(far, far.token("agent-far", "Far agent"))
    w = open_signed_in(context, near)
    open_tab(w, note)
    # Without a draft: the text changes in place.
    agent_rewrite(agent, note, lambda t: t + "from the other host\n")
    w.page.wait_for_function("() => document.querySelector('#editor').value.includes('from the other host')", timeout=2500)
    # Over a draft: the banner names the agent, and one click merges.
    w.page.fill("#editor", "first, by the person\nfrom the other host\n")
    agent_rewrite(agent, note, lambda t: t + "and more\n")
    w.page.wait_for_selector("#remote-banner:visible", timeout=2500)
    assert "Far agent (agent) changed this note" in w.page.inner_text("#remote-banner")
    w.page.click("#merge-theirs")
    w.page.wait_for_function("() => document.querySelector('#editor').value.includes('and more')")
    assert w.page.input_value("#editor") == "first, by the person\nfrom the other host\nand more\n"
    assert w.errors == []
