"""The service's pipeline lifecycle: GlassFlow's states and transitions, and the refusals."""

from __future__ import annotations

import pytest

from streamsift.errors import ConflictError
from streamsift.service.lifecycle import (
    TRANSITIONS,
    State,
    can_transition,
    check_at_rest,
    check_transition,
)

ALLOWED = {
    ("Created", "Running"),
    ("Created", "Terminating"),
    ("Created", "Failed"),
    ("Running", "Stopping"),
    ("Running", "Terminating"),
    ("Running", "Failed"),
    ("Resuming", "Running"),
    ("Resuming", "Terminating"),
    ("Resuming", "Failed"),
    ("Stopping", "Stopped"),
    ("Stopping", "Terminating"),
    ("Stopping", "Failed"),
    ("Stopped", "Resuming"),
    ("Stopped", "Failed"),
    ("Terminating", "Stopped"),
    ("Terminating", "Failed"),
    ("Failed", "Resuming"),
}
# streamsift's own: a transient fault being retried by the pipeline itself
RETRYING = {
    ("Created", "Retrying"),
    ("Running", "Retrying"),
    ("Resuming", "Retrying"),
    ("Retrying", "Running"),
    ("Retrying", "Retrying"),
    ("Retrying", "Stopping"),
    ("Retrying", "Terminating"),
    ("Retrying", "Failed"),
}


@pytest.mark.parametrize("current", list(State))
@pytest.mark.parametrize("requested", list(State))
def test_exactly_the_glassflow_transitions_are_allowed(current: State, requested: State) -> None:
    expected = (current.value, requested.value) in ALLOWED | RETRYING
    assert can_transition(current, requested) is expected
    if expected:
        check_transition("p", current, requested)
    else:
        with pytest.raises(ConflictError):
            check_transition("p", current, requested)


def test_every_state_has_its_transitions() -> None:
    assert set(TRANSITIONS) == set(State)


def test_a_refusal_names_the_current_state_and_the_allowed_ones() -> None:
    with pytest.raises(ConflictError) as caught:
        check_transition("orders", State.STOPPED, State.STOPPING)
    err = caught.value
    assert err.details == {
        "current_status": "Stopped",
        "requested_status": "Stopping",
        "valid_transitions": ["Resuming", "Failed"],
    }
    assert "orders is Stopped" in err.message
    assert err.hint is not None and "Resuming, Failed" in err.hint


@pytest.mark.parametrize("state", [State.STOPPED, State.FAILED])
def test_edit_and_delete_need_a_pipeline_at_rest(state: State) -> None:
    check_at_rest("p", state, "edited")


@pytest.mark.parametrize(
    "state", [State.CREATED, State.RUNNING, State.RESUMING, State.STOPPING, State.TERMINATING]
)
def test_edit_of_a_pipeline_with_a_worker_is_refused(state: State) -> None:
    with pytest.raises(ConflictError) as caught:
        check_at_rest("p", state, "edited")
    assert caught.value.details["current_status"] == state.value
    assert caught.value.details["valid_transitions"] == [s.value for s in TRANSITIONS[state]]
