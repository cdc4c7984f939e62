"""Errors: every way an approval can fail to come back says why, by type.

Nothing here ever turns into an approval. A caller that catches
:class:`StrandsHitlError` and carries on must treat it as "not approved".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._model import Approval


class StrandsHitlError(Exception):
    """Base of every error this package raises."""


class InvalidRequest(StrandsHitlError):
    """The service refused the request (HTTP 422): ``field`` names what is wrong.

    Nothing was created. Examples: no approvers, an unknown ``group:`` or
    policy, a quorum larger than the people named, a timeout over the
    service's maximum.
    """

    def __init__(self, field: str, message: str) -> None:
        if message.startswith(f"{field}: "):
            message = message[len(field) + 2 :]
        super().__init__(f"the approval request was refused: {field}: {message}")
        self.field = field
        self.message = message


class Unauthorized(StrandsHitlError):
    """The service refused the token (HTTP 401): missing, unknown or revoked."""


class Forbidden(StrandsHitlError):
    """The token's role may not do this (HTTP 403), e.g. an approver token asking."""


class NotFound(StrandsHitlError):
    """No such approval request (HTTP 404)."""


class ServerUnavailable(StrandsHitlError):
    """The service could not be reached (or kept failing) for the whole retry budget."""


class ServerError(StrandsHitlError):
    """The service answered something this client cannot use."""


class WaitTimedOut(StrandsHitlError):
    """The caller's own wait ran out while the request was still pending.

    The request stays open and answerable; waiting again (same id or same
    key) picks it up. ``approval`` is the request as last seen.
    """

    def __init__(self, message: str, approval: Approval) -> None:
        super().__init__(message)
        self.approval = approval


class ActionMismatch(StrandsHitlError):
    """The request the service holds is not about the call about to run.

    Raised when the service's action (or its digest) differs from the one
    asked about — typically an idempotency key reused for a different call.
    Failing closed: the call must not run on that approval.
    """
