"""axe-core (pinned in package.json, installed by scripts/test.sh) finds no serious or critical problem."""

from pathlib import Path

import pytest

from conftest import Watched, agent_rewrite, open_signed_in, open_tab

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture
def a11y_context(browser):
    if not AXE.exists():
        pytest.fail("axe-core is not installed: (cd tests/browser && npm ci) — scripts/test.sh does")
    # The page's CSP allows scripts from its origin only: axe is added by the test, past the CSP.
    ctx = browser.new_context(viewport={"width": 1360, "height": 900}, bypass_csp=True)
    yield ctx
    ctx.close()


def serious(page, where):
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("""async () => {
        const r = await axe.run(document, { resultTypes: ['violations'] });
        return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => v.id + ' (' + v.impact + '): ' + v.help + ' — ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
    }""")
    assert found == [], where + ":\n" + "\n".join(found)


def test_sign_in_page(server, a11y_context):
    w = Watched(a11y_context.new_page())
    w.page.goto(server.base + "/")
    w.page.wait_for_selector("#token-input")
    serious(w.page, "sign-in page")


def test_notes_list_and_search(server, a11y_context, person):
    person.note("Listed")
    w = open_signed_in(a11y_context, server)
    w.page.wait_for_selector("#note-list li")
    serious(w.page, "notes list")


def test_a_note_with_the_editor_and_its_history_dialog(server, a11y_context, person, agent):
    note = person.note("Accessible")
    person.write(note, "# Accessible\n\n## Part\n\ntext\n")
    agent_rewrite(agent, note, lambda t: t + "more\n")
    w = open_signed_in(a11y_context, server)
    open_tab(w, note)
    w.page.wait_for_selector("#history li.version")
    w.page.wait_for_selector("#outline li.section")
    serious(w.page, "note editor")
    w.page.locator("#history li.version .diff-version").last.click()
    w.page.wait_for_selector("#diff-view")
    serious(w.page, "history dialog")


def test_the_merge_screen(server, a11y_context, person, agent):
    note = person.note("Merge a11y")
    person.write(note, "a\nb\n")
    w = open_signed_in(a11y_context, server)
    open_tab(w, note)
    w.page.fill("#editor", "a\nB by me\n")
    agent_rewrite(agent, note, lambda t: "a\nb by agent\n")
    w.page.click("#save")
    w.page.wait_for_selector("#merge .conflict")
    serious(w.page, "merge screen")
    w.page.keyboard.press("Escape")
    w.page.wait_for_selector("#merge", state="detached")
    assert w.page.is_visible("#editor")
