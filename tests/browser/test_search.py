"""Search from the page: hits lead to the tab, snippets are text, nothing hidden shows."""

from conftest import agent_rewrite, open_signed_in


def test_a_person_searches_opens_the_hit_and_sees_what_an_agent_just_wrote(server, context, person, agent):
    note = person.note("Zeppelin launch brief")
    person.write(note, "Hangar plans for the zeppelin.\n")
    agent_rewrite(agent, note, lambda t: t + "The zeppelin flies on Friday.\n")
    w = open_signed_in(context, server)
    w.page.fill("#search-q", "zeppelin friday")
    w.page.click("#search-go")
    w.page.wait_for_selector('#main[data-loaded="search:zeppelin friday"]', state="attached")
    hits = w.page.locator("#hits li")
    assert hits.count() == 1
    assert "flies on Friday" in hits.first.inner_text()
    assert hits.first.get_attribute("data-tab-id") == "markdown"
    hits.first.locator("a").click()
    w.page.wait_for_selector('#main[data-loaded="markdown"]', state="attached")
    assert "The zeppelin flies on Friday." in w.page.input_value("#editor")


def test_a_bad_query_is_named_and_a_snippet_with_markup_is_only_text(server, context, person, agent):
    note = person.note("Markup")
    person.write(note, 'dirigible <img src=x onerror="window.__pwned=1;alert(1)"> here\n')
    w = open_signed_in(context, server, '#/search/"dirigible')
    w.page.wait_for_selector("#search-refused")
    assert "not closed" in w.page.inner_text("#search-refused")
    w.page.evaluate("r => { location.hash = r }", "#/search/dirigible")
    w.page.wait_for_selector('#main[data-loaded="search:dirigible"]', state="attached")
    assert "onerror" in w.page.inner_text("#hits")
    assert w.page.locator("#hits img").count() == 0
    assert w.page.evaluate("window.__pwned") is None
    assert w.dialogs == []


def test_a_note_kept_from_agents_is_found_by_people_only(server, context, person, agent):
    note = person.note("Blimp budget", approved=False)
    person.write(note, "blimp money\n")
    w = open_signed_in(context, server, "#/search/blimp")
    w.page.wait_for_selector('#main[data-loaded="search:blimp"]', state="attached")
    assert w.page.locator(f'#hits li[data-note-id="{note}"]').count() == 1
    assert agent.call("search_notes", query="blimp")["hits"] == []
