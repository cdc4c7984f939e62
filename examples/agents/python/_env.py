"""What every example reads from its environment, in one place.

- ``STRANDS_SERVER``, ``STRANDS_TOKEN``: the approval service and an
  operator token (``strands tokens create agent --role operator``).
- ``APPROVERS`` (comma-separated names, ``group:NAME``, Slack ids) or
  ``POLICY`` (a named policy of the service); ``NOTIFY`` (``slack:#channel``,
  ``teams:…``, ``dm``, ``email``), ``QUORUM``.
- The model: the SDK's OpenAI model (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``
  as the ``openai`` library reads them; ``MODEL_ID``). Any model the SDK
  supports works the same.
- ``TOOL_LOG``: a file the examples' dangerous tools append one line to per
  run (the tests count them).
- ``STRANDS_RECONNECT_SECS``: how long an unreachable service is retried.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from strands_hitl import AsyncClient, Client, StrandsHitlError


def _list(name: str) -> list[str]:
    return [x.strip() for x in os.environ.get(name, "").split(",") if x.strip()]


def asking() -> dict[str, Any]:
    """Who answers and where, as keyword arguments for strands_hitl."""
    out: dict[str, Any] = {"notify": _list("NOTIFY")}
    if os.environ.get("POLICY"):
        out["policy"] = os.environ["POLICY"]
    else:
        out["approvers"] = _list("APPROVERS") or ["alice"]
    if os.environ.get("QUORUM"):
        out["quorum"] = int(os.environ["QUORUM"])
    return out


def _service() -> tuple[str, str, float]:
    return (
        os.environ.get("STRANDS_SERVER", "http://127.0.0.1:3000"),
        os.environ.get("STRANDS_TOKEN", ""),
        float(os.environ.get("STRANDS_RECONNECT_SECS", "300")),
    )


def async_client() -> AsyncClient:
    server, token, budget = _service()
    return AsyncClient(server, token, reconnect_for=budget)


def client() -> Client:
    server, token, budget = _service()
    return Client(server, token, reconnect_for=budget)


def model() -> Any:
    from strands.models.openai import OpenAIModel

    return OpenAIModel(model_id=os.environ.get("MODEL_ID", "gpt-4o-mini"))


def record(line: str) -> None:
    """What a dangerous tool does here: one line in TOOL_LOG."""
    path = os.environ.get("TOOL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {line}\n")


def main(run: Callable[[], int]) -> None:
    """Runs an example: its exit code, or 3 naming why nobody could be asked
    (the service refused the request or the token, or could not be reached)."""
    try:
        code = run()
    except Exception as e:  # the SDKs wrap what a hook raised
        cause: BaseException | None = e
        while cause is not None and not isinstance(cause, StrandsHitlError):
            cause = cause.__cause__
        if cause is None:
            raise
        print(f"not asked: {cause}", file=sys.stderr)
        sys.exit(3)
    sys.exit(code)
