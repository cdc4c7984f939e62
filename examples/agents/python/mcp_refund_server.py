#!/usr/bin/env python3
"""An MCP server (official ``mcp`` SDK, stdio) whose tool asks its client to
fill in a form: ``issue_refund`` elicits the amount, the reason and whether
to tell the customer, then refunds (or reports the decline / cancel).

It uses the SDK's ``Resolve``/``Elicit`` form, which works on every
protocol version (on 2026-07-28 a plain ``ctx.elicit()`` has no back-channel).
``TOOL_LOG``: one line per refund made.
"""

from __future__ import annotations

import os
from typing import Annotated

from mcp.server.elicitation import AcceptedElicitation, DeclinedElicitation, ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field


class RefundForm(BaseModel):
    amount: int = Field(description="Amount to refund, in EUR", ge=1, le=5000)
    reason: str = Field(description="Why the customer gets it back")
    notify_customer: bool = Field(default=True, description="Send the customer an e-mail")


def refund_form(order: str) -> Elicit[RefundForm]:
    return Elicit(f"Fill in the refund for order {order}", RefundForm)


server = MCPServer("refunds")


@server.tool()
def issue_refund(order: str, form: Annotated[ElicitationResult[RefundForm], Resolve(refund_form)]) -> str:
    """Refund an order; a person fills in the amount and the reason."""
    if isinstance(form, AcceptedElicitation):
        r = form.data
        path = os.environ.get("TOOL_LOG")
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()} refund {order} {r.amount} {r.notify_customer} {r.reason}\n")
        return f"refunded {r.amount} EUR for order {order} ({r.reason}); customer notified: {r.notify_customer}"
    if isinstance(form, DeclinedElicitation):
        return f"the refund for order {order} was declined"
    return f"the refund for order {order} was cancelled"


if __name__ == "__main__":
    server.run()
