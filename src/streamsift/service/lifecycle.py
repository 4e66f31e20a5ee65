"""The lifecycle of a pipeline in the service: its states and the transitions between them.

The states and transitions are GlassFlow's, so that one vocabulary serves both APIs, plus
`Retrying`: a transient fault (a broker or ClickHouse that does not answer, a worker process
that died) is being retried with back-off; the pipeline needs nothing from its user.

    Created     -> Running | Retrying | Terminating | Failed
    Running     -> Stopping | Retrying | Terminating | Failed
    Resuming    -> Running | Retrying | Terminating | Failed
    Retrying    -> Running | Retrying | Stopping | Terminating | Failed
    Stopping    -> Stopped | Terminating | Failed
    Stopped     -> Resuming | Failed
    Terminating -> Stopped | Failed
    Failed      -> Resuming

`check_transition` refuses a request that does not fit the current state with a
ConflictError whose details name the current state and what is allowed from it.
"""

from __future__ import annotations

from streamsift.errors import ConflictError
from streamsift.wire.pipelines import DesiredState, State

__all__ = [
    "AT_REST",
    "TRANSITIONS",
    "DesiredState",
    "State",
    "can_transition",
    "check_at_rest",
    "check_transition",
    "valid_transitions",
]

TRANSITIONS: dict[State, tuple[State, ...]] = {
    State.CREATED: (State.RUNNING, State.RETRYING, State.TERMINATING, State.FAILED),
    State.RUNNING: (State.STOPPING, State.RETRYING, State.TERMINATING, State.FAILED),
    State.RESUMING: (State.RUNNING, State.RETRYING, State.TERMINATING, State.FAILED),
    State.RETRYING: (
        State.RUNNING,
        State.RETRYING,
        State.STOPPING,
        State.TERMINATING,
        State.FAILED,
    ),
    State.STOPPING: (State.STOPPED, State.TERMINATING, State.FAILED),
    State.STOPPED: (State.RESUMING, State.FAILED),
    State.TERMINATING: (State.STOPPED, State.FAILED),
    State.FAILED: (State.RESUMING,),
}

# States in which the pipeline has no worker process: it may be edited or deleted.
AT_REST: tuple[State, ...] = (State.STOPPED, State.FAILED)


def valid_transitions(current: State) -> tuple[State, ...]:
    return TRANSITIONS[current]


def can_transition(current: State, requested: State) -> bool:
    return requested in TRANSITIONS[current]


def check_transition(pipeline_id: str, current: State, requested: State) -> None:
    """Raise ConflictError unless `current -> requested` is a transition of the machine."""
    if can_transition(current, requested):
        return
    allowed = valid_transitions(current)
    raise ConflictError(
        f"pipeline {pipeline_id} is {current.value}: it cannot become {requested.value}",
        _hint(current, allowed),
        details={
            "current_status": current.value,
            "requested_status": requested.value,
            "valid_transitions": [s.value for s in allowed],
        },
    )


def check_at_rest(pipeline_id: str, current: State, action: str) -> None:
    """Raise ConflictError unless the pipeline has no worker (Stopped or Failed): `action`
    (edit, delete) needs it at rest."""
    if current in AT_REST:
        return
    raise ConflictError(
        f"pipeline {pipeline_id} is {current.value}: only a stopped pipeline can be {action}",
        "stop it first (or terminate it), then try again",
        details={
            "current_status": current.value,
            "requested_action": action,
            "allowed_in": [s.value for s in AT_REST],
            "valid_transitions": [s.value for s in valid_transitions(current)],
        },
    )


def _hint(current: State, allowed: tuple[State, ...]) -> str:
    names = ", ".join(s.value for s in allowed)
    return f"from {current.value} a pipeline can become: {names}"
