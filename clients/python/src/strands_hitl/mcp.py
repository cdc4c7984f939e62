"""MCP elicitation answered by a person: an ``elicitation_callback`` for the
``mcp`` client (``ClientSession(..., elicitation_callback=…)``) and for the
Strands SDK's ``MCPClient(transport, elicitation_callback=…)``.

When an MCP server asks its client for input (``elicitation/create``, form
mode), the callback turns the request into an approval request whose
``form`` is the server's ``requestedSchema``: the approver sees the
server's message and its fields (typed inputs in Slack, Teams and the web
inbox) and fills them in. Filled and approved → ``accept`` with the values;
rejected → ``decline``; no answer in time (or the request cancelled) →
``cancel``. URL mode: the approver is shown the link (strands never opens
it); approving means "done" → ``accept``.

The callback waits inside the tool call (the MCP client gives no way to
pause and resume it), so an elicitation does not survive a restart of the
agent's process; the tool call is re-made and asks again.

A request the service refuses (a schema it cannot show, an unknown
approver) and an unreachable service come back to the MCP server as an
error naming the cause; never as an ``accept``.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, ElicitRequestParams, ElicitResult, ErrorData

from ._asking import Asking
from ._client import AsyncClient
from ._errors import InvalidRequest, StrandsHitlError
from ._model import Timeout

log = logging.getLogger(__name__)


def elicitation_callback(
    server: str | None = None,
    token: str | None = None,
    *,
    approvers: Sequence[str] = (),
    policy: str | None = None,
    quorum: int | None = None,
    notify: Sequence[str] = (),
    timeout: Timeout | None = None,
    labels: Mapping[str, str] | None = None,
    wait_timeout: float | None = None,
    client: AsyncClient | None = None,
) -> ElicitationFnT:
    """An elicitation callback that asks people through the service."""
    asking = Asking(
        approvers=tuple(approvers),
        policy=policy,
        quorum=quorum,
        notify=tuple(notify),
        timeout=timeout,
        on_timeout="reject",
        labels={"source": "mcp-elicitation", **(labels or {})},
    )
    if client is None:
        server = server or os.environ.get("STRANDS_SERVER")
        token = token or os.environ.get("STRANDS_TOKEN")
        if not server or not token:
            raise ValueError("give server and token (or set STRANDS_SERVER and STRANDS_TOKEN)")
        client = AsyncClient(server, token)
    c = client

    async def callback(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        message = params.message or "The tool asks for input"
        title = message.strip().splitlines()[0] if message.strip() else "The tool asks for input"
        mode: Literal["form", "url"] = "url" if getattr(params, "mode", "form") == "url" else "form"
        if mode == "url":
            url = str(getattr(params, "url", ""))
            request = asking.request(
                title,
                body=f"{message}\n\nThe tool asks you to open this link and finish there: {url}\n"
                "(strands does not open it.) Approve once you are done; reject to decline.",
                details={"link": url},
            )
        else:
            schema: Any = getattr(params, "requested_schema", None)
            if hasattr(schema, "model_dump"):
                schema = schema.model_dump(by_alias=True, exclude_none=True)
            request = asking.request(title, body=message, form=dict(schema or {}))
        # One request per elicitation: the protocol gives nothing stable to
        # key on (request ids repeat), and the callback cannot be resumed.
        from dataclasses import replace

        request = replace(request, key=f"mcp-elicitation:{uuid.uuid4()}")
        try:
            approval = await c.ask(request, wait_timeout=wait_timeout)
        except InvalidRequest as e:
            return ErrorData(code=INVALID_PARAMS, message=f"strands cannot ask for this input: {e}")
        except StrandsHitlError as e:
            log.error("elicitation not answered: %s", e)
            return ErrorData(code=INTERNAL_ERROR, message=f"nobody could be asked: {e}")
        if approval.approved:
            if mode == "url":
                return ElicitResult(action="accept")
            return ElicitResult(action="accept", content=dict(approval.values or {}))
        if approval.decision == "rejected" and approval.status == "rejected":
            return ElicitResult(action="decline")
        return ElicitResult(action="cancel")

    return callback
