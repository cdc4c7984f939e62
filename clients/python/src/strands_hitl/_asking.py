"""How a pause becomes a request: the settings every integration shares
(who approves, where, how long) and the translation of what the agent SDKs
hand over — a ``HumanInTheLoop`` prompt, a tool call, an interrupt's
reason — into one :class:`~strands_hitl.Request`.

Kept apart from the SDK adapters so that none of this needs an SDK
installed, and each adapter is only the glue its SDK needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ._model import Action, Request, Timeout, flat_details

#: The prompt Strands' ``HumanInTheLoop`` passes to ``ask`` (Python SDK
#: 1.62): ``Approve "TOOL"[ — REASON]?\n  Input: JSON``.
_HITL_PROMPT = re.compile(
    r'\AApprove "(?P<tool>[^"\n]+)"(?: \u2014 (?P<why>.*?))?\?\n  Input: (?P<input>.*)\Z',
    re.DOTALL,
)


@dataclass(frozen=True)
class ParsedPrompt:
    """What a ``HumanInTheLoop`` prompt says: the tool, its input, the
    classifier's reason (if any)."""

    tool: str
    input: Any
    why: str | None


def parse_hitl_prompt(prompt: str) -> ParsedPrompt | None:
    """The tool and input of a ``HumanInTheLoop`` prompt; None when the text
    has another shape (a newer SDK, a custom intervention)."""
    m = _HITL_PROMPT.match(prompt)
    if m is None:
        return None
    try:
        data = json.loads(m.group("input"))
    except ValueError:
        return None
    return ParsedPrompt(tool=m.group("tool"), input=data, why=m.group("why"))


@dataclass(frozen=True)
class Asking:
    """Who answers, where and how long: the part of a request that does not
    depend on the call. ``approvers`` or ``policy`` (a named policy of the
    service, judged on the request's details — the tool's arguments)."""

    approvers: Sequence[str] = ()
    policy: str | None = None
    quorum: int | None = None
    notify: Sequence[str] = ()
    timeout: Timeout | None = None
    on_timeout: Literal["reject", "approve"] = "reject"
    require_reason: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    reminder_minutes: float | None = None
    escalation_minutes: float | None = None
    escalate_to: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.approvers, str):
            raise TypeError("approvers: give a list of names, not one string")
        if not self.approvers and self.policy is None:
            raise ValueError("name approvers (people, group:NAME, Slack ids) or a policy of the service")

    def request(self, title: str, **fields: Any) -> Request:
        return Request(
            title=title,
            approvers=tuple(self.approvers),
            policy=self.policy,
            quorum=self.quorum,
            notify=tuple(self.notify),
            timeout=self.timeout,
            on_timeout=self.on_timeout,
            require_reason=self.require_reason,
            labels=dict(self.labels),
            reminder_minutes=self.reminder_minutes,
            escalation_minutes=self.escalation_minutes,
            escalate_to=tuple(self.escalate_to),
            **fields,
        )


#: Builds a request's title from the tool's name and input.
TitleFn = Callable[[str, Any], str]


def default_title(tool: str, _input: Any) -> str:
    return f"Let the agent run {tool}?"


def tool_call_request(
    asking: Asking,
    tool: str,
    input: Any,
    *,
    title: TitleFn = default_title,
    why: str | None = None,
    trust: bool = False,
    labels: Mapping[str, str] | None = None,
    key: str | None = None,
) -> Request:
    """The request for one tool call: the call is the request's ``action``
    (its digest binds the approval to exactly these arguments) and its
    arguments are the ``details`` (shown as fields; what a policy reads)."""
    body = f"The agent wants to call `{tool}`."
    if why:
        body += f"\n\nWhy it asks: {why}"
    details = flat_details(input)
    details.setdefault("tool", tool)
    merged = {**asking.labels, "tool": tool, **(labels or {})}
    return replace(
        asking.request(
            title(tool, input),
            body=body,
            details=details,
            action=Action(tool=tool, arguments=input if input is not None else {}),
            trust=trust,
            key=key,
        ),
        labels=merged,
    )


def request_from_reason(asking: Asking, name: str, reason: Any, *, key: str) -> Request:
    """The request for an interrupt the agent raised itself
    (``event.interrupt(name, reason=…)``): a reason that is a mapping may
    carry ``title``, ``body``, ``details``, ``action`` ({tool, arguments}),
    ``form``; anything else is shown as the body."""
    if isinstance(reason, Mapping):
        title = str(reason.get("title") or name)
        body = str(reason.get("body") or "")
        details = reason.get("details")
        action = reason.get("action")
        form = reason.get("form")
        return asking.request(
            title,
            body=body,
            details={str(k): str(v) for k, v in details.items()} if isinstance(details, Mapping) else {},
            action=(
                Action(tool=str(action["tool"]), arguments=action.get("arguments", {}))
                if isinstance(action, Mapping) and "tool" in action
                else None
            ),
            form=form if isinstance(form, Mapping) else None,
            key=key,
        )
    text = reason if isinstance(reason, str) else json.dumps(reason, ensure_ascii=False, default=str)
    first = text.strip().splitlines()[0] if text and text.strip() else name
    return asking.request(first, body=text if text != first else "", key=key)
