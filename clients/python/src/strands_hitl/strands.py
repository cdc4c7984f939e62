"""Strands Agents (Python SDK): its pauses answered by people through a
strands approval service.

Three ways in, from the lightest to the most durable:

- :func:`ask` — the ``ask`` of the SDK's own ``HumanInTheLoop``:
  ``HumanInTheLoop(ask=strands_hitl.strands.ask(server, token, approvers=["alice"]))``.
  One line; the SDK gives ``ask`` only a prompt, so a rejection's reason
  cannot reach the model (it reads ``CONFIRMATION_FAILED``).
- :class:`ApprovalHandler` — an intervention that sees the tool, its input
  and ``toolUseId``: the call is the request's ``action`` (bound by its
  digest), the key is the session and the call (a retry asks once), the
  human's reason reaches the model (``DENIED: rejected by alice: …``), the
  same call proposed again after a rejection is denied without asking, and
  "trust" stops asking for that tool where allowed. It waits inline, or
  with ``wait=False`` pauses the agent with an interrupt instead.
- :func:`answer_interrupts` / :func:`run` — for services that do not hold a
  process while people decide: given an agent's (or a Swarm's, a Graph's)
  interrupts, ask for each (keyed on the session and the interrupt, so a
  second process after a restart waits on the same requests and never asks
  twice) and build the ``interruptResponse`` blocks to resume with.

Every failure to get an answer raises (:class:`~strands_hitl.StrandsHitlError`);
the SDK then aborts the run. Nothing here approves by default.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from strands.hooks import BeforeToolCallEvent
from strands.interrupt import Interrupt
from strands.interventions import Deny, InterventionHandler, Proceed

from ._asking import Asking, TitleFn, default_title, parse_hitl_prompt, request_from_reason, tool_call_request
from ._client import AsyncClient, check_action
from ._model import Approval, Request, Timeout, action_digest

#: The name of the SDK's ``HumanInTheLoop`` (its interrupts carry it).
HITL_NAME = "strands:human-in-the-loop"
#: Where ``HumanInTheLoop`` (and :class:`ApprovalHandler`) keep trusted tools.
TRUSTED_TOOLS_KEY = "hitl:trusted_tools"
#: Where :class:`ApprovalHandler` remembers the calls people rejected (by
#: their digest): the same call proposed again is denied without asking.
REJECTED_CALLS_KEY = "strands-hitl:rejected_calls"
#: Where :class:`ApprovalHandler` keeps a session id of its own when the
#: agent has no session manager (it is saved with the agent's state).
SESSION_KEY = "strands-hitl:session"

#: Turns an answered request into an interrupt's response.
ToResponse = Callable[[Interrupt, Approval], Any]


def _client(server: str | None, token: str | None, client: AsyncClient | None) -> AsyncClient:
    if client is not None:
        return client
    server = server or os.environ.get("STRANDS_SERVER")
    token = token or os.environ.get("STRANDS_TOKEN")
    if not server or not token:
        raise ValueError("give server and token (or set STRANDS_SERVER and STRANDS_TOKEN)")
    return AsyncClient(server, token)


def ask(
    server: str | None = None,
    token: str | None = None,
    *,
    approvers: Sequence[str] = (),
    policy: str | None = None,
    quorum: int | None = None,
    notify: Sequence[str] = (),
    timeout: Timeout | None = None,
    on_timeout: Literal["reject", "approve"] = "reject",
    require_reason: bool = False,
    labels: Mapping[str, str] | None = None,
    trust: bool = False,
    title: TitleFn = default_title,
    wait_timeout: float | None = None,
    client: AsyncClient | None = None,
) -> Callable[..., Awaitable[str]]:
    """The ``ask`` for ``HumanInTheLoop``: each prompt becomes an approval
    request (its tool call as the ``action``, the arguments as details), and
    the human's decision comes back as the SDK reads it: ``"y"``,
    ``"t"`` (trusted; pass ``trust=True`` here and ``enable_trust=True`` to
    ``HumanInTheLoop``) or ``"n"``. Errors raise: the SDK aborts the run."""
    asking = Asking(
        approvers=tuple(approvers),
        policy=policy,
        quorum=quorum,
        notify=tuple(notify),
        timeout=timeout,
        on_timeout=on_timeout,
        require_reason=require_reason,
        labels={"agent": "strands", **(labels or {})},
    )
    c = _client(server, token, client)

    async def _ask(prompt: str, **_: Any) -> str:
        parsed = parse_hitl_prompt(prompt)
        if parsed is None:
            request = asking.request(prompt.splitlines()[0] if prompt.strip() else "Approve?", body=prompt)
        else:
            request = tool_call_request(asking, parsed.tool, parsed.input, title=title, why=parsed.why, trust=trust)
        # A fresh key per call: the SDK gives no call id to key on, and a
        # key made from the prompt would replay an old answer for a new call.
        request = _with_key(request, f"hitl-ask:{uuid.uuid4()}")
        approval = await c.ask(request, wait_timeout=wait_timeout)
        return _hitl_response(approval, trust)

    return _ask


def _with_key(request: Request, key: str) -> Request:
    from dataclasses import replace

    return replace(request, key=key)


def _hitl_response(approval: Approval, trust: bool) -> str:
    if approval.approved:
        return "t" if trust and approval.trusted else "y"
    return "n"


def denial(approval: Approval) -> str:
    """What the model reads when a call is not approved."""
    who = approval.decided_by or "unknown"
    if approval.status == "timed_out":
        return f"nobody approved in time ({approval.describe()})"
    if approval.decision == "rejected":
        return f"rejected by {who}: {approval.reason}" if approval.reason else f"rejected by {who}"
    return f"not approved: {approval.describe()}"


class ApprovalHandler(InterventionHandler):
    """Asks people before tool calls, through a strands approval service.

    ``allowed_tools`` as ``HumanInTheLoop``'s: tools that run without asking
    (``"*"`` for all, ``"!name"`` to exclude one from ``"*"``); by default
    every call asks. ``enable_trust``: the approver may answer "trust", and
    the tool runs without asking for the rest of the session (kept in the
    agent's state, as ``HumanInTheLoop`` does). ``session_id``: what keys
    the requests with each call's ``toolUseId`` (default: the agent's
    session manager's id, else an id kept in the agent's state).
    ``wait=False``: instead of waiting inline, pause the agent with an
    interrupt (answered by :func:`answer_interrupts`, maybe in another
    process); the handler reads the answer when the agent resumes.
    """

    name = "strands-hitl:approval"

    def __init__(
        self,
        server: str | None = None,
        token: str | None = None,
        *,
        approvers: Sequence[str] = (),
        policy: str | None = None,
        quorum: int | None = None,
        notify: Sequence[str] = (),
        timeout: Timeout | None = None,
        on_timeout: Literal["reject", "approve"] = "reject",
        require_reason: bool = False,
        labels: Mapping[str, str] | None = None,
        allowed_tools: Iterable[str] | None = None,
        enable_trust: bool = False,
        session_id: str | None = None,
        wait: bool = True,
        title: TitleFn = default_title,
        wait_timeout: float | None = None,
        client: AsyncClient | None = None,
    ) -> None:
        if isinstance(allowed_tools, str):
            raise ValueError("allowed_tools must be a list of tool names, not a single string")
        self._asking = Asking(
            approvers=tuple(approvers),
            policy=policy,
            quorum=quorum,
            notify=tuple(notify),
            timeout=timeout,
            on_timeout=on_timeout,
            require_reason=require_reason,
            labels={"agent": "strands", **(labels or {})},
        )
        self._allowed = set(allowed_tools or ())
        self._enable_trust = enable_trust
        self._session_id = session_id
        self._wait = wait
        self._title = title
        self._wait_timeout = wait_timeout
        self._client = _client(server, token, client) if wait else client

    def _needs_approval(self, tool: str, agent: Any) -> bool:
        if f"!{tool}" in self._allowed:
            return True
        if tool in (agent.state.get(TRUSTED_TOOLS_KEY) or []):
            return False
        return not ("*" in self._allowed or tool in self._allowed)

    def _session(self, agent: Any) -> str:
        if self._session_id:
            return self._session_id
        manager = getattr(agent, "_session_manager", None)
        sid = getattr(manager, "session_id", None)
        if sid:
            return f"{sid}:{agent.agent_id}"
        sid = agent.state.get(SESSION_KEY)
        if not sid:
            sid = str(uuid.uuid4())
            agent.state.set(SESSION_KEY, sid)
        return str(sid)

    async def before_tool_call(self, event: BeforeToolCallEvent, **kwargs: Any) -> Proceed | Deny:
        tool = event.tool_use["name"]
        if not self._needs_approval(tool, event.agent):
            return Proceed()
        rejected: dict[str, str] = event.agent.state.get(REJECTED_CALLS_KEY) or {}
        digest = action_digest(tool, event.tool_use["input"])
        if digest in rejected:
            # A rejected call proposed again (a rejection loop) is not asked again.
            return Deny(reason=f"{rejected[digest]} (this exact call was rejected before; it was not asked again)")
        trust = self._enable_trust and f"!{tool}" not in self._allowed
        request = tool_call_request(
            self._asking,
            tool,
            event.tool_use["input"],
            title=self._title,
            trust=trust,
            key=f"{self._session(event.agent)}:{event.tool_use['toolUseId']}",
        )
        if self._wait:
            assert self._client is not None
            approval = await self._client.ask(request, wait_timeout=self._wait_timeout)
        else:
            # First time: pauses the agent (the request travels in the
            # reason); on resume: the answer given to answer_interrupts.
            answer = event.interrupt(self.name, reason={"request": request.to_json(), "tool": tool})
            if not isinstance(answer, Mapping):
                return Deny(reason=f"no approval came back for {tool} (the interrupt's response is not one)")
            approval = Approval.from_json(answer)
            check_action(request, approval)
        if approval.approved:
            if trust and approval.trusted:
                trusted = event.agent.state.get(TRUSTED_TOOLS_KEY) or []
                if tool not in trusted:
                    event.agent.state.set(TRUSTED_TOOLS_KEY, [*trusted, tool])
            return Proceed(reason=approval.describe())
        message = denial(approval)
        if approval.status == "rejected":
            event.agent.state.set(REJECTED_CALLS_KEY, {**rejected, digest: message})
        return Deny(reason=message)


def pending_interrupts(target: Any) -> list[Interrupt]:
    """The interrupts an agent, Swarm or Graph is waiting on — also one
    restored after a restart (a session manager, or ``load_snapshot``)."""
    state = getattr(target, "_interrupt_state", None)
    if state is None or not getattr(state, "activated", False):
        return []
    return [i for i in state.interrupts.values() if i.response is None]


def interrupts_of(result: Any) -> list[Interrupt]:
    """The interrupts of an ``AgentResult`` or a multi-agent result."""
    return list(getattr(result, "interrupts", None) or [])


def is_interrupted(result: Any) -> bool:
    if getattr(result, "stop_reason", None) == "interrupt":
        return True
    status = getattr(result, "status", None)
    return getattr(status, "value", status) == "interrupted"


def default_response(interrupt: Interrupt, approval: Approval) -> Any:
    """``HumanInTheLoop``'s interrupts get ``"y"``/``"t"`` (trusted, where
    it was offered)/``"n"``;
    :class:`ApprovalHandler`'s and every other the request as the service
    returns it (a dict: ``decision``, ``decided_by``, ``reason``, ``values``…)."""
    if interrupt.name == HITL_NAME:
        return _hitl_response(approval, trust=True)
    return approval.raw


def _request_for(interrupt: Interrupt, asking: Asking | None, key: str, trust: bool) -> Request:
    reason = interrupt.reason
    if interrupt.name == ApprovalHandler.name and isinstance(reason, Mapping) and "request" in reason:
        return _with_key(Request.from_json(reason["request"]), key)
    if asking is None:
        raise ValueError(
            f"interrupt {interrupt.name!r} does not say who approves it: "
            "give approvers= or policy= to answer_interrupts"
        )
    if interrupt.name == HITL_NAME and isinstance(reason, str):
        parsed = parse_hitl_prompt(reason)
        if parsed is not None:
            return tool_call_request(asking, parsed.tool, parsed.input, why=parsed.why, trust=trust, key=key)
    return request_from_reason(asking, interrupt.name, reason, key=key)


async def answer_interrupts(
    interrupts: Iterable[Interrupt],
    client: AsyncClient,
    *,
    session_id: str,
    approvers: Sequence[str] = (),
    policy: str | None = None,
    quorum: int | None = None,
    notify: Sequence[str] = (),
    timeout: Timeout | None = None,
    on_timeout: Literal["reject", "approve"] = "reject",
    labels: Mapping[str, str] | None = None,
    trust: bool = False,
    to_response: ToResponse = default_response,
    wait_timeout: float | None = None,
) -> list[dict[str, Any]]:
    """Asks for every interrupt (all at once; people answer in any order)
    and returns the ``interruptResponse`` blocks to resume with:
    ``agent(await answer_interrupts(result.interrupts, client, session_id=…))``.

    Each request's key is ``{session_id}:{interrupt.id}``: run again for the
    same interrupts (a second process after a restart) it waits on the
    requests already made. ``approvers``/``policy``… are for interrupts that
    do not carry their own request (:class:`ApprovalHandler`'s do).
    ``trust=True`` offers the approver "trust" on ``HumanInTheLoop``'s
    interrupts — only when it has ``enable_trust=True``, or a trust would
    read as a denial."""
    if not session_id:
        raise ValueError("session_id: interrupt ids repeat across runs; key them on the run's session")
    asking = (
        Asking(
            approvers=tuple(approvers),
            policy=policy,
            quorum=quorum,
            notify=tuple(notify),
            timeout=timeout,
            on_timeout=on_timeout,
            labels={"agent": "strands", **(labels or {})},
        )
        if approvers or policy
        else None
    )
    todo = list(interrupts)
    requests = [_request_for(i, asking, f"{session_id}:{i.id}", trust) for i in todo]
    made = [await client.request(r) for r in requests]
    decided = await asyncio.gather(
        *(client.wait(m.id, timeout=wait_timeout) if m.pending else _done(m) for m in made)
    )
    return [
        {"interruptResponse": {"interruptId": i.id, "response": to_response(i, a)}}
        for i, a in zip(todo, decided)
    ]


async def _done(a: Approval) -> Approval:
    return a


def run(
    target: Callable[..., Any],
    prompt: Any,
    client: AsyncClient,
    *,
    session_id: str,
    **options: Any,
) -> Any:
    """Invokes an agent (or Swarm, Graph) and answers its interrupts through
    the service until it finishes: what a stateless worker does, in one
    call. ``prompt=None`` resumes a restored target's pending interrupts
    (after a restart). ``options`` as :func:`answer_interrupts`."""

    def answers(interrupts: list[Interrupt]) -> list[dict[str, Any]]:
        return asyncio.run(answer_interrupts(interrupts, client, session_id=session_id, **options))

    if prompt is None:
        pending = pending_interrupts(target)
        if not pending:
            raise ValueError("nothing to resume: the target is not waiting on an interrupt")
        result = target(answers(pending))
    else:
        result = target(prompt)
    while is_interrupted(result):
        result = target(answers(interrupts_of(result)))
    return result
