#!/usr/bin/env python3
"""A Strands agent using an MCP server whose tool asks for a form — filled
in by a person through the strands service.

``MCPClient(..., elicitation_callback=strands_hitl.mcp.elicitation_callback(...))``:
the server's ``elicitation/create`` becomes an approval request showing its
message and fields; the approver fills them in (Slack, Teams, the web inbox)
and the tool call completes with those values. Rejected → the server hears
``decline``; no answer in time → ``cancel``.

    STRANDS_SERVER=… STRANDS_TOKEN=… APPROVERS=alice python mcp_refund_agent.py

Prints the model's last answer; exit 0.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from _env import asking, async_client, main, model
from mcp import StdioServerParameters, stdio_client
from strands import Agent
from strands.tools.mcp import MCPClient

from strands_hitl.mcp import elicitation_callback

SERVER = Path(__file__).with_name("mcp_refund_server.py")


def work() -> int:
    refunds = MCPClient(
        lambda: stdio_client(
            StdioServerParameters(command=sys.executable, args=[str(SERVER)], env=dict(os.environ))
        ),
        elicitation_callback=elicitation_callback(client=async_client(), **asking()),
    )
    with refunds:
        agent = Agent(
            model=model(),
            tools=refunds.list_tools_sync(),
            system_prompt="You are the REFUNDS agent.",
            callback_handler=None,
        )
        print(agent(os.environ.get("PROMPT", "Refund order A-1042.")))
    return 0


if __name__ == "__main__":
    main(work)
