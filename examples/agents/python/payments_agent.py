#!/usr/bin/env python3
"""The one-line way: the SDK's own ``HumanInTheLoop``, whose ``ask`` is a
strands approval request.

    HumanInTheLoop(ask=ask(server, token, policy="payments"))

Each call of ``pay_invoice`` becomes a request whose details are the call's
arguments, so a policy of the service decides who approves by them (say:
amounts over 10,000 need the CFO and finance, quorum 2). The SDK hands
``ask`` only a prompt: a rejection's reason does not reach the model (it
reads ``CONFIRMATION_FAILED``); use ``ApprovalHandler`` (cleanup_agent.py)
when it should.

    STRANDS_SERVER=… STRANDS_TOKEN=… POLICY=payments python payments_agent.py

Exit 0 when the invoice was paid, 1 when not, 3 when nobody could be asked.
"""

from __future__ import annotations

import os

from _env import asking, async_client, main, model, record
from strands import Agent, tool
from strands.vended_interventions.hitl import HumanInTheLoop

from strands_hitl.strands import ask

PAID: list[str] = []


@tool
def pay_invoice(invoice: str, amount: int) -> str:
    """Pay an invoice (amount in EUR)."""
    record(f"pay_invoice {invoice} {amount}")
    PAID.append(invoice)
    return f"paid {invoice}: {amount} EUR"


def run() -> int:
    agent = Agent(
        model=model(),
        tools=[pay_invoice],
        system_prompt="You are the PAYMENTS agent.",
        callback_handler=None,
        interventions=[HumanInTheLoop(ask=ask(client=async_client(), **asking()))],
    )
    print(agent(os.environ.get("PROMPT", "Pay the open invoices.")))
    return 0 if PAID else 1


if __name__ == "__main__":
    main(run)
