"""LangGraph: a graph's ``interrupt()``s answered by people, and the graph
resumed with ``Command(resume={interrupt_id: answer})`` — also after a
restart.

A node asks with ``interrupt(value)``; ``value`` may be text (the
request's title) or a dict with ``title``, ``body``, ``details``,
``action`` ({tool, arguments}) and ``form`` (fields the approver fills).
The node gets back :func:`default_answer`'s dict — ``approved``,
``decision``, ``decided_by``, ``reason``, ``values`` — or whatever
``to_answer`` makes of the decision.

Each request is keyed ``{thread_id}:{interrupt.id}``: a process that
restarts with the same checkpointer and thread reads the pending
interrupts from the graph's state and waits on the requests already made
— nothing is asked twice. (LangGraph re-runs the interrupted node from its
top on resume: keep side effects after the ``interrupt()`` call.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langgraph.types import Command, Interrupt

from ._asking import Asking, request_from_reason
from ._client import Client
from ._model import Approval, Request, Timeout

#: Builds the request for an interrupt (``None``: the default mapping).
ToRequest = Callable[[Interrupt, Asking, str], Request]
#: Turns the decision into what ``interrupt()`` returns in the node.
ToAnswer = Callable[[Interrupt, Approval], Any]


def default_answer(_interrupt: Interrupt, approval: Approval) -> dict[str, Any]:
    return {
        "approved": approval.approved,
        "decision": approval.decision,
        "status": approval.status,
        "decided_by": approval.decided_by,
        "reason": approval.reason,
        "values": approval.values,
        "request": approval.id,
    }


def default_request(interrupt: Interrupt, asking: Asking, key: str) -> Request:
    return request_from_reason(asking, "The graph asks for a decision", interrupt.value, key=key)


def _thread(config: Mapping[str, Any]) -> str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if not thread:
        raise ValueError("config: give configurable.thread_id (a checkpointer keeps the graph's pause under it)")
    return str(thread)


def answer_interrupts(
    graph: Any,
    config: Mapping[str, Any],
    client: Client,
    *,
    approvers: Sequence[str] = (),
    policy: str | None = None,
    quorum: int | None = None,
    notify: Sequence[str] = (),
    timeout: Timeout | None = None,
    on_timeout: Literal["reject", "approve"] = "reject",
    labels: Mapping[str, str] | None = None,
    to_request: ToRequest = default_request,
    to_answer: ToAnswer = default_answer,
    wait_timeout: float | None = None,
) -> Command[Any] | None:
    """The ``Command`` that resumes the graph with people's answers to every
    pending interrupt of ``config``'s thread; None when nothing is pending."""
    pending: Sequence[Interrupt] = graph.get_state(config).interrupts
    if not pending:
        return None
    thread = _thread(config)
    asking = Asking(
        approvers=tuple(approvers),
        policy=policy,
        quorum=quorum,
        notify=tuple(notify),
        timeout=timeout,
        on_timeout=on_timeout,
        labels={"agent": "langgraph", "thread": thread, **(labels or {})},
    )
    made = [client.request(to_request(i, asking, f"{thread}:{i.id}")) for i in pending]
    answers = {
        i.id: to_answer(i, m if not m.pending else client.wait(m.id, timeout=wait_timeout))
        for i, m in zip(pending, made)
    }
    return Command(resume=answers)


def run(
    graph: Any,
    input: Any,
    config: Mapping[str, Any],
    client: Client,
    **options: Any,
) -> Any:
    """Invokes the graph and answers its interrupts until it ends; the last
    ``invoke``'s result. ``input=None`` after a restart: resume what the
    checkpointer says is pending. ``options`` as :func:`answer_interrupts`."""
    result = graph.invoke(input, config) if input is not None else None
    while True:
        command = answer_interrupts(graph, config, client, **options)
        if command is None:
            return result if result is not None else graph.get_state(config).values
        result = graph.invoke(command, config)
