"""The approvals API's shapes, typed: what is asked (:class:`Request`) and
what became of it (:class:`Approval`), plus the action digest both sides
compute.

The service's contract is ``POST /api/v1/approvals`` and
``GET /api/v1/approvals/{id}?wait=N`` (see the strands book, "Approvals
from any code": docs/src/approvals.md); field names here are the API's.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

Status = Literal["pending", "approved", "rejected", "timed_out", "failed", "cancelled"]

#: A timeout: a ``timedelta``, whole minutes (as the API), or text as the
#: CLI takes it: ``"30m"``, ``"2h"``, ``"1d"`` (bare digits: minutes).
Timeout = timedelta | int | str

MAX_TITLE_CHARS = 200


def action_digest(tool: str, arguments: Any) -> str:
    """SHA-256 (hex) of ``{"arguments", "tool"}`` as compact JSON with sorted
    keys: what the service returns as ``action_digest``, binding an approval
    to exactly one call."""
    canonical = json.dumps(
        {"arguments": arguments, "tool": tool},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def timeout_minutes(timeout: Timeout | None) -> int | None:
    """Whole minutes (rounded up, at least 1) for the API's ``timeout_minutes``."""
    if timeout is None:
        return None
    if isinstance(timeout, bool):
        raise TypeError("timeout: give a timedelta, minutes or text such as '30m'")
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, int):
        seconds = timeout * 60.0
    elif isinstance(timeout, str):
        m = re.fullmatch(r"\s*(\d+)\s*([smhd]?)\s*", timeout)
        if not m:
            raise ValueError(f"timeout {timeout!r}: use e.g. '30m', '2h', '1d' or minutes")
        n, unit = int(m.group(1)), m.group(2) or "m"
        seconds = n * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    else:
        raise TypeError("timeout: give a timedelta, minutes or text such as '30m'")
    if seconds <= 0:
        raise ValueError("timeout: must be positive")
    return max(1, math.ceil(seconds / 60.0))


def flat_details(arguments: Any) -> dict[str, str]:
    """A call's arguments as the request's ``details``: top-level values as
    text (nested ones as JSON), so people see them as fields and a service
    policy can decide by them (``{{ details.amount > 10000 }}``)."""
    if not isinstance(arguments, Mapping):
        return {} if arguments is None else {"input": _text(arguments)}
    return {str(k): _text(v) for k, v in arguments.items()}


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Action:
    """What will be done once approved: a tool and its arguments."""

    tool: str
    arguments: Any = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return action_digest(self.tool, self.arguments)

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "arguments": self.arguments}


@dataclass(frozen=True)
class Request:
    """One approval request, as ``POST /api/v1/approvals`` takes it.

    ``approvers`` (names, ``group:NAME``, Slack ids, e-mail addresses) or
    ``policy`` (a named policy of the service) decide who answers.
    """

    title: str
    body: str = ""
    details: Mapping[str, str] = field(default_factory=dict)
    approvers: Sequence[str] = ()
    policy: str | None = None
    quorum: int | None = None
    require_reason: bool = False
    timeout: Timeout | None = None
    on_timeout: Literal["reject", "approve"] = "reject"
    notify: Sequence[str] = ()
    key: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    action: Action | None = None
    #: A flat JSON schema (MCP elicitation's ``requestedSchema``): the
    #: approver fills these fields; the answer's ``values`` carry them.
    form: Mapping[str, Any] | None = None
    #: The approver may answer "trust": approve, and stop asking for this
    #: ``action.tool`` in the requester's session.
    trust: bool = False
    reminder_minutes: float | None = None
    escalation_minutes: float | None = None
    escalate_to: Sequence[str] = ()

    @staticmethod
    def from_json(v: Mapping[str, Any]) -> Request:
        """The request a body describes (the inverse of :meth:`to_json`): how
        a request travels inside an interrupt's reason to whichever process
        answers it."""
        action = v.get("action")
        minutes = v.get("timeout_minutes")
        return Request(
            title=str(v.get("title", "")),
            body=str(v.get("body", "")),
            details=dict(v.get("details") or {}),
            approvers=tuple(v.get("approvers") or ()),
            policy=v.get("policy"),
            quorum=v.get("quorum"),
            require_reason=bool(v.get("require_reason", False)),
            timeout=int(minutes) if minutes is not None else None,
            on_timeout="approve" if v.get("on_timeout") == "approve" else "reject",
            notify=tuple(v.get("notify") or ()),
            key=v.get("key"),
            labels=dict(v.get("labels") or {}),
            action=(
                Action(tool=str(action["tool"]), arguments=action.get("arguments", {}))
                if isinstance(action, Mapping) and "tool" in action
                else None
            ),
            form=v.get("form"),
            trust=bool(v.get("trust", False)),
            reminder_minutes=v.get("reminder_minutes"),
            escalation_minutes=v.get("escalation_minutes"),
            escalate_to=tuple(v.get("escalate_to") or ()),
        )

    def to_json(self) -> dict[str, Any]:
        """The request body; optional fields only when set."""
        title = " ".join(self.title.split())
        if len(title) > MAX_TITLE_CHARS:
            title = title[: MAX_TITLE_CHARS - 1] + "…"
        body: dict[str, Any] = {"title": title}
        if self.body:
            body["body"] = self.body
        if self.details:
            body["details"] = {str(k): str(v) for k, v in self.details.items()}
        if self.approvers:
            body["approvers"] = list(self.approvers)
        if self.policy is not None:
            body["policy"] = self.policy
        if self.quorum is not None:
            body["quorum"] = self.quorum
        if self.require_reason:
            body["require_reason"] = True
        minutes = timeout_minutes(self.timeout)
        if minutes is not None:
            body["timeout_minutes"] = minutes
            body["on_timeout"] = self.on_timeout
        if self.notify:
            body["notify"] = list(self.notify)
        if self.key is not None:
            body["key"] = self.key
        if self.labels:
            body["labels"] = {str(k): str(v) for k, v in self.labels.items()}
        if self.action is not None:
            body["action"] = self.action.to_json()
        if self.form is not None:
            body["form"] = dict(self.form)
        if self.trust:
            body["trust"] = True
        if self.reminder_minutes is not None:
            body["reminder_minutes"] = self.reminder_minutes
        if self.escalation_minutes is not None:
            body["escalation_minutes"] = self.escalation_minutes
        if self.escalate_to:
            body["escalate_to"] = list(self.escalate_to)
        return body


@dataclass(frozen=True)
class Approval:
    """An approval request and what became of it (``GET /api/v1/approvals/{id}``)."""

    id: str
    status: Status
    title: str
    decision: Literal["approved", "rejected"] | None
    decided_by: str | None
    via: str | None
    reason: str | None
    decided_at: str | None
    requested_by: str
    action: dict[str, Any] | None
    action_digest: str | None
    #: What the approver filled in, for a request with a ``form``.
    values: dict[str, Any] | None
    #: Approved with "trust": the requester may stop asking for this tool.
    trusted: bool
    #: True when this call created it; False: the key named an existing one.
    created: bool
    labels: dict[str, str]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def approved(self) -> bool:
        """Decided yes (by a person, or by an ``on_timeout: approve`` fallback)."""
        return self.decision == "approved"

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    def describe(self) -> str:
        """One line: "approved by alice (via slack)", "rejected by bob: freeze"."""
        if self.pending:
            return f"request {self.id} is still pending"
        if self.status == "timed_out":
            head = f"timed out; {self.decision or 'no decision'} by its fallback"
        elif self.decision:
            head = f"{self.decision} by {self.decided_by or 'unknown'}"
            if self.via:
                head += f" (via {self.via})"
        else:
            head = f"{self.status}"
        if self.reason:
            head += f": {self.reason}"
        return head

    @staticmethod
    def from_json(v: Mapping[str, Any]) -> Approval:
        def opt(k: str) -> Any:
            x = v.get(k)
            return None if x is None else x

        status = str(v.get("status", ""))
        if status not in ("pending", "approved", "rejected", "timed_out", "failed", "cancelled"):
            raise ValueError(f"unknown status {status!r}")
        decision = opt("decision")
        if decision not in (None, "approved", "rejected"):
            raise ValueError(f"unknown decision {decision!r}")
        action = opt("action")
        values = opt("values")
        return Approval(
            id=str(v["id"]),
            status=status,  # type: ignore[arg-type]
            title=str(v.get("title", "")),
            decision=decision,
            decided_by=opt("decided_by"),
            via=opt("via"),
            reason=opt("reason"),
            decided_at=opt("decided_at"),
            requested_by=str(v.get("requested_by", "")),
            action=action if isinstance(action, dict) else None,
            action_digest=opt("action_digest"),
            values=values if isinstance(values, dict) else None,
            trusted=bool(v.get("trusted", False)),
            created=bool(v.get("created", False)),
            labels=dict(v.get("labels") or {}),
            raw=dict(v),
        )
