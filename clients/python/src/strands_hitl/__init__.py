"""strands-hitl: people answer your agents' interrupts.

A small client of a strands approval service (``strands serve``): an agent
asks, the right people answer in Slack, Teams, the web inbox or email —
under the service's approver rules, quorum, policies, timeouts and a
tamper-evident audit trail — and the agent gets the decision, who made it
and why.

- :class:`Client` / :class:`AsyncClient`: ask (``POST /api/v1/approvals``
  with an idempotency key), wait (``?wait=``, reconnecting), read the
  decision.
- :mod:`strands_hitl.strands` (extra ``strands``): ``HumanInTheLoop``'s
  ``ask``, an ``ApprovalHandler`` intervention, and interrupt / resume for
  stateless services — single agents, Swarms and Graphs.
- :mod:`strands_hitl.mcp` (extra ``mcp``): an MCP ``elicitation_callback``
  whose form a person fills in.
- :mod:`strands_hitl.langgraph` (extra ``langgraph``): a graph's
  ``interrupt()``s answered and resumed with ``Command(resume=…)``.
"""

from ._client import AsyncClient, Client
from ._errors import (
    ActionMismatch,
    Forbidden,
    InvalidRequest,
    NotFound,
    ServerError,
    ServerUnavailable,
    StrandsHitlError,
    Unauthorized,
    WaitTimedOut,
)
from ._model import Action, Approval, Request, action_digest

__version__ = "0.1.0"

__all__ = [
    "Action",
    "ActionMismatch",
    "Approval",
    "AsyncClient",
    "Client",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "Request",
    "ServerError",
    "ServerUnavailable",
    "StrandsHitlError",
    "Unauthorized",
    "WaitTimedOut",
    "__version__",
    "action_digest",
]
