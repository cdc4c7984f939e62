"""The client of a strands approval service: ask, wait, read the decision.

Two faces over one set of rules: :class:`Client` (blocking, for scripts,
LangGraph, ``HumanInTheLoop``'s sync paths) and :class:`AsyncClient` (for
the Strands SDK's async hooks and MCP callbacks). Both

- send every request with an idempotency ``key`` (a fresh one when the
  caller gives none), so a POST retried after a broken connection creates
  nothing twice, and a process that restarts with the same key waits on
  the same request;
- wait with ``GET /approvals/{id}?wait=60`` again and again (the service
  holds the answer open; no polling), reconnecting with capped backoff on a
  broken connection or a 5xx, for at most ``reconnect_for`` seconds of
  consecutive failures;
- check that the request the service holds is about the call being asked
  about (:class:`~strands_hitl.ActionMismatch` otherwise);
- map every refusal to a typed error. Nothing here ever returns an
  approval that a person (or the request's own ``on_timeout: approve``)
  did not give.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

import httpx

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
from ._model import Approval, Request

#: The longest the service holds a ``?wait=`` open, in seconds.
WAIT_SECS = 60
#: Backoff between reconnects: first, factor, cap (seconds).
BACKOFF = (0.25, 2.0, 5.0)


def _base(server: str) -> str:
    server = server.strip().rstrip("/")
    if not server.startswith(("http://", "https://")):
        raise ValueError(f"server {server!r}: give the service's URL, e.g. http://127.0.0.1:3000")
    return server


def _headers(token: str) -> dict[str, str]:
    if not token or not token.strip():
        raise ValueError("token: give an API token of the service (strands tokens create NAME --role operator)")
    return {
        "Authorization": f"Bearer {token.strip()}",
        "Accept": "application/json",
        "User-Agent": "strands-hitl-python/0.1.0",
    }


def _refusal(server: str, r: httpx.Response) -> StrandsHitlError | None:
    """The typed error for a refused response; None when it may be retried."""
    try:
        body = r.json()
    except ValueError:
        body = {}
    err = body.get("error", {}) if isinstance(body, dict) else {}
    message = str(err.get("message") or r.text[:300] or r.reason_phrase)
    if r.status_code == 401:
        return Unauthorized(f"the service at {server} refused the token: {message}")
    if r.status_code == 403:
        return Forbidden(f"the service at {server} does not allow this: {message}")
    if r.status_code == 404:
        return NotFound(f"{server}: {message}")
    if r.status_code in (400, 413, 422):
        return InvalidRequest(str(err.get("field") or "request"), message)
    if r.status_code == 429 or r.status_code >= 500:
        return None
    return ServerError(f"{server} answered HTTP {r.status_code}: {message}")


def _approval(server: str, r: httpx.Response) -> Approval:
    try:
        return Approval.from_json(r.json())
    except (ValueError, KeyError, TypeError) as e:
        raise ServerError(f"{server} answered something that is not an approval request: {e}") from e


def check_action(asked: Request, got: Approval) -> None:
    """Raises :class:`ActionMismatch` unless ``got`` is about ``asked``'s action."""
    if asked.action is None:
        return
    want = asked.action
    if got.action_digest == want.digest:
        return
    same = (
        got.action is not None
        and got.action.get("tool") == want.tool
        and _canonical(got.action.get("arguments")) == _canonical(want.arguments)
    )
    if not same:
        raise ActionMismatch(
            f"request {got.id} is about {got.action!r}, not the call about to run "
            f"({want.tool} {want.arguments!r}); key {asked.key!r} was used for another call"
        )


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Budget:
    """Consecutive failures allowed for ``reconnect_for`` seconds, with backoff."""

    def __init__(self, reconnect_for: float) -> None:
        self.reconnect_for = reconnect_for
        self.first_failure: float | None = None
        self.delay = BACKOFF[0]

    def ok(self) -> None:
        self.first_failure = None
        self.delay = BACKOFF[0]

    def failed(self, server: str, cause: str) -> float:
        """The wait before the next try; raises once the budget is spent."""
        now = time.monotonic()
        if self.first_failure is None:
            self.first_failure = now
        if now - self.first_failure >= self.reconnect_for:
            raise ServerUnavailable(
                f"cannot reach the strands service at {server} ({cause}); "
                f"gave up after {self.reconnect_for:g} s"
            )
        d = self.delay
        self.delay = min(self.delay * BACKOFF[1], BACKOFF[2])
        return d


class _Rules:
    """What both clients share: the URL, headers, and how to read answers."""

    def __init__(self, server: str, token: str, reconnect_for: float) -> None:
        self.server = _base(server)
        self.headers = _headers(token)
        self.reconnect_for = reconnect_for

    def url(self, path: str) -> str:
        return f"{self.server}/api/v1{path}"

    @staticmethod
    def keyed(request: Request) -> Request:
        if request.key is not None:
            return request
        from dataclasses import replace

        return replace(request, key=str(uuid.uuid4()))

    def read(self, r: httpx.Response) -> Approval | None:
        """The approval in a good answer; None to retry; raises a refusal."""
        if r.status_code in (200, 201):
            return _approval(self.server, r)
        err = _refusal(self.server, r)
        if err is not None:
            raise err
        return None


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _wait_secs(deadline: float | None) -> int:
    if deadline is None:
        return WAIT_SECS
    return max(0, min(WAIT_SECS, int(deadline - time.monotonic())))


class Client:
    """A blocking client of a strands approval service.

    ``server``: its URL (``STRANDS_SERVER``); ``token``: an operator token
    (``STRANDS_TOKEN``) — the requester, who may not approve its own
    requests. ``reconnect_for``: seconds of consecutive connection failures
    tolerated before :class:`~strands_hitl.ServerUnavailable`.
    """

    def __init__(
        self,
        server: str,
        token: str,
        *,
        reconnect_for: float = 300.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._rules = _Rules(server, token, reconnect_for)
        self._http = httpx.Client(
            headers=self._rules.headers,
            timeout=httpx.Timeout(10.0, read=WAIT_SECS + 30.0),
            transport=transport,
        )

    @property
    def server(self) -> str:
        return self._rules.server

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Approval:
        budget = _Budget(self._rules.reconnect_for)
        while True:
            try:
                r = self._http.request(method, self._rules.url(path), json=body)
            except httpx.TransportError as e:
                time.sleep(budget.failed(self.server, f"{type(e).__name__}: {e}"))
                continue
            got = self._rules.read(r)
            if got is not None:
                return got
            time.sleep(budget.failed(self.server, f"HTTP {r.status_code}"))

    def request(self, request: Request) -> Approval:
        """Creates the request (or, with a key already used, returns that one)."""
        request = self._rules.keyed(request)
        got = self._call("POST", "/approvals", request.to_json())
        check_action(request, got)
        return got

    def get(self, id: str) -> Approval:
        return self._call("GET", f"/approvals/{id}")

    def wait(self, id: str, *, timeout: float | None = None) -> Approval:
        """Waits until request ``id`` is decided; ``timeout`` (seconds) bounds
        this wait only (:class:`~strands_hitl.WaitTimedOut`; the request stays)."""
        deadline = _deadline(timeout)
        while True:
            got = self._call("GET", f"/approvals/{id}?wait={_wait_secs(deadline)}")
            if not got.pending:
                return got
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimedOut(f"request {id} is still pending after {timeout:g} s", got)

    def ask(self, request: Request, *, wait_timeout: float | None = None) -> Approval:
        """Asks and waits for the decision (see :meth:`request`, :meth:`wait`)."""
        made = self.request(request)
        if not made.pending:
            return made
        return self.wait(made.id, timeout=wait_timeout)


class AsyncClient:
    """The same client for async code (see :class:`Client`)."""

    def __init__(
        self,
        server: str,
        token: str,
        *,
        reconnect_for: float = 300.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._rules = _Rules(server, token, reconnect_for)
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def server(self) -> str:
        return self._rules.server

    def _client(self) -> httpx.AsyncClient:
        # An httpx.AsyncClient belongs to one event loop; the Strands SDK
        # may run each invocation on a loop of its own.
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            self._http = httpx.AsyncClient(
                headers=self._rules.headers,
                timeout=httpx.Timeout(10.0, read=WAIT_SECS + 30.0),
                transport=self._transport,
            )
            self._loop = loop
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Approval:
        budget = _Budget(self._rules.reconnect_for)
        while True:
            try:
                r = await self._client().request(method, self._rules.url(path), json=body)
            except httpx.TransportError as e:
                await asyncio.sleep(budget.failed(self.server, f"{type(e).__name__}: {e}"))
                continue
            got = self._rules.read(r)
            if got is not None:
                return got
            await asyncio.sleep(budget.failed(self.server, f"HTTP {r.status_code}"))

    async def request(self, request: Request) -> Approval:
        request = self._rules.keyed(request)
        got = await self._call("POST", "/approvals", request.to_json())
        check_action(request, got)
        return got

    async def get(self, id: str) -> Approval:
        return await self._call("GET", f"/approvals/{id}")

    async def wait(self, id: str, *, timeout: float | None = None) -> Approval:
        deadline = _deadline(timeout)
        while True:
            got = await self._call("GET", f"/approvals/{id}?wait={_wait_secs(deadline)}")
            if not got.pending:
                return got
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimedOut(f"request {id} is still pending after {timeout:g} s", got)

    async def ask(self, request: Request, *, wait_timeout: float | None = None) -> Approval:
        made = await self.request(request)
        if not made.pending:
            return made
        return await self.wait(made.id, timeout=wait_timeout)
