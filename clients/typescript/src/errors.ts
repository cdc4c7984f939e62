/**
 * Every way asking a human can fail, as classes a caller can tell apart.
 *
 * None of them is ever turned into an approval: an error while asking is
 * an error for the agent (the Strands SDK aborts the run when an `ask` or
 * an intervention throws), never a silent "yes".
 */

/** The base of every error this package throws. */
export class StrandsHitlError extends Error {
  /** The HTTP status the server answered with, when it answered. */
  readonly status: number | undefined;
  /** The server's stable error code (`invalid_request`, `forbidden`, …), when it sent one. */
  readonly code: string | undefined;

  constructor(message: string, options: { status?: number; code?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
    this.code = options.code;
  }
}

/** 422 (or 400): the server refused the request's content; nothing was created. */
export class InvalidRequest extends StrandsHitlError {
  /** The request's field at fault (`approvers`, `timeout_minutes`, …), when the server named one. */
  readonly field: string | undefined;

  constructor(message: string, options: { status: number; code?: string; field?: string }) {
    super(options.field ? `invalid request: ${options.field}: ${message}` : `invalid request: ${message}`, options);
    this.field = options.field;
  }
}

/** 401: the server refused the token (unknown, revoked or expired). */
export class Unauthorized extends StrandsHitlError {}

/** 403: the token is good but may not do this (asking needs an operator token). */
export class Forbidden extends StrandsHitlError {}

/** 404: no such approval request (or it is a workflow's session). */
export class NotFound extends StrandsHitlError {}

/**
 * The server could not be reached, or kept failing (5xx, 429), for longer
 * than the client's reconnect budget. Names the URL and the last cause.
 */
export class ServerUnavailable extends StrandsHitlError {
  /** The URL that could not be reached. */
  readonly url: string;

  constructor(url: string, cause: string, options: { status?: number; cause?: unknown } = {}) {
    super(`cannot reach the strands server at ${url}: ${cause}`, options);
    this.url = url;
  }
}

/** `wait()` gave up after its `timeoutMs` while the request was still pending. */
export class WaitTimedOut extends StrandsHitlError {
  /** The request still pending. */
  readonly id: string;

  constructor(id: string, timeoutMs: number) {
    super(`approval request ${id} is still pending after ${timeoutMs} ms`);
    this.id = id;
  }
}

/**
 * The approval the server returned is not of the call that was asked
 * about: its `action` or `action_digest` differ (an idempotency key reused
 * for another call, or a tampered answer). Nothing may run on it.
 */
export class ActionMismatch extends StrandsHitlError {
  /** The approval request's id. */
  readonly id: string;

  constructor(id: string, detail: string) {
    super(`approval request ${id} is not of the call asked about (${detail}); refusing to act on it`);
    this.id = id;
  }
}

/** The approval request itself failed on the server (status `failed`). */
export class RequestFailed extends StrandsHitlError {
  readonly id: string;

  constructor(id: string, reason: string | undefined) {
    super(`approval request ${id} failed on the server${reason ? `: ${reason}` : ''}`);
    this.id = id;
  }
}

/** A prompt of the SDK's `HumanInTheLoop` that this package cannot read. */
export class UnreadablePrompt extends StrandsHitlError {}
