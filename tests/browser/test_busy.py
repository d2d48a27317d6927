"""A person over their budget waits, and the page still loads what it shows."""

import pytest

from conftest import Person, Server, open_signed_in, open_tab


@pytest.fixture(scope="module")
def tight(tmp_path_factory):
    """A `cairn up` whose callers may make 120 calls a minute (a burst of 20)."""
    s = Server(tmp_path_factory.mktemp("cairn-tight"), env={"SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE": "120"})
    yield s
    s.stop()


def test_a_page_opened_over_budget_waits_and_loads_the_note(tight, context):
    person = Person(tight)
    note = person.note("Busy minute")
    person.write(note, "still here\n")
    refused = 0
    for _ in range(100):
        status, _ = person.call("GET", "/api/v1/notes?limit=1", retry=False)
        refused += status == 429
        if refused >= 3:
            break
    assert refused >= 3, "the budget never ran out, so this test proves nothing"
    w = open_signed_in(context, tight)
    open_tab(w, note)
    assert w.page.input_value("#editor") == "still here\n"
    assert w.errors == []
