/**
 * The HTTP client of `strands serve`'s approvals API: `POST /api/v1/approvals`
 * to ask, `GET /api/v1/approvals/{id}?wait=60` again and again until a human
 * (or the timeout's fallback) decided.
 *
 * It owns three promises the rest of the package builds on:
 * - every request carries an idempotency `key`, and a POST retried after a
 *   broken connection reuses it, so the server makes the request once;
 * - a broken connection, a 5xx or a 429 is retried with capped backoff
 *   within a budget, then fails as {@link ServerUnavailable} naming the URL
 *   and the cause;
 * - an approval asked about an `action` is checked against the
 *   `action_digest` (or `action`) the server returns: an approval of any
 *   other call throws {@link ActionMismatch}.
 *
 * It deliberately holds no state between calls and never decides anything
 * itself: whatever goes wrong is an error, never an approval.
 */

import { actionDigest, jsonEqual, normalize, type Action, type Json } from './digest.js';
import {
  ActionMismatch,
  Forbidden,
  InvalidRequest,
  NotFound,
  ServerUnavailable,
  StrandsHitlError,
  Unauthorized,
  WaitTimedOut,
} from './errors.js';

export type { Action, Json } from './digest.js';

/** Where a request stands. `timed_out`: the fallback applied (see `decision`). */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'timed_out' | 'failed' | 'cancelled';

/** An approval request and what became of it (`GET /api/v1/approvals/{id}`), in camelCase. */
export interface Approval {
  id: string;
  title: string;
  status: ApprovalStatus;
  /** `approved` or `rejected` once decided (a timeout's fallback included), else null. */
  decision: 'approved' | 'rejected' | null;
  /** True exactly when `decision` is `approved`. */
  approved: boolean;
  decidedBy: string | null;
  /** `api`, `slack`, `teams`, `web`, `email`, `cli`, `timeout`, … */
  via: string | null;
  reason: string | null;
  /** RFC 3339, UTC. */
  decidedAt: string | null;
  /** What the approver filled in when the request had a `form` (servers that support forms). */
  values: Record<string, Json> | null;
  /** The approver chose "trust" (servers that support `trust`): approve this tool from now on. */
  trusted: boolean;
  action: Action | null;
  actionDigest: string | null;
  requestedBy: string;
  createdAt: string | null;
  labels: Record<string, string>;
  /** This call created it (false: its key named an existing request). */
  created: boolean;
  links: Record<string, string>;
}

/** What to ask (`POST /api/v1/approvals`); camelCase, sent as the API's snake_case. */
export interface RequestOptions {
  /** One line: "Deploy v1.2 to prod?" (at most 200 characters). */
  title: string;
  /** Markdown, at most 16 KiB; redacted by the server like a gate's preview. */
  body?: string;
  /** Facts shown as fields; a named `policy` decides by them. */
  details?: Record<string, string>;
  /** Who may answer: names, Slack ids, `group:NAME`. Not with `policy`. */
  approvers?: string[];
  /** A named approval policy of the service file. Not with `approvers` or `quorum`. */
  policy?: string;
  /** Approvals needed (default 1). */
  quorum?: number;
  /** A rejection must say why. */
  requireReason?: boolean;
  /** Minutes before `onTimeout` applies (default: the server's). */
  timeoutMinutes?: number;
  onTimeout?: 'reject' | 'approve';
  reminderMinutes?: number;
  escalationMinutes?: number;
  escalateTo?: string[];
  /** `slack:#channel`, `teams:<conversation id>`, `dm`, `email`. */
  notify?: string[];
  /** Idempotency key: the same key (from the same token) returns the same request. Made up when absent. */
  key?: string;
  labels?: Record<string, string>;
  /** The call the approval is of: shown, and bound by its digest. */
  action?: Action;
  /** Offer "trust" (approve this tool from now on); only with `action`. Sent only when true. */
  trust?: boolean;
  /** A flat JSON schema the approver fills in (`values` of the answer). Sent only when set. */
  form?: Record<string, unknown>;
}

/** How long and how often to retry a server that cannot be reached. */
export interface ReconnectOptions {
  /** Give up after failing this long without one good answer (default 60 000). */
  budgetMs?: number;
  /** The first wait before retrying (default 250). */
  initialDelayMs?: number;
  /** The longest wait between two tries (default 5 000). */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** The server: `http://127.0.0.1:3000` (what `STRANDS_SERVER` holds). */
  server: string;
  /** An operator token (`stk_…`) to ask with. */
  token: string;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  reconnect?: ReconnectOptions;
}

export interface WaitOptions {
  /** Stop waiting (throw {@link WaitTimedOut}) after this long; default: wait until decided. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** How long one `?wait=` holds (the server's maximum). */
const WAIT_SECS = 60;
/** A request that does not answer within its wait plus this is treated as a broken connection. */
const SLACK_MS = 30_000;

/** A fresh idempotency key. */
export function newKey(): string {
  return globalThis.crypto.randomUUID();
}

/** The API's snake_case body for `opts`; fields not set are left out. */
export function requestBody(opts: RequestOptions & { key: string }): Record<string, unknown> {
  if (opts.trust && !opts.action) {
    throw new InvalidRequest('trust needs an action (the tool the approver would trust)', {
      status: 0,
      field: 'trust',
    });
  }
  const body: Record<string, unknown> = {
    title: opts.title,
    body: opts.body,
    details: opts.details,
    approvers: opts.approvers,
    policy: opts.policy,
    quorum: opts.quorum,
    require_reason: opts.requireReason,
    timeout_minutes: opts.timeoutMinutes,
    on_timeout: opts.onTimeout,
    reminder_minutes: opts.reminderMinutes,
    escalation_minutes: opts.escalationMinutes,
    escalate_to: opts.escalateTo,
    notify: opts.notify,
    key: opts.key,
    labels: opts.labels,
    action: opts.action ? { tool: opts.action.tool, arguments: normalize(opts.action.arguments) } : undefined,
    trust: opts.trust ? true : undefined,
    form: opts.form,
  };
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  return body;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The API's view of a request, as an {@link Approval}. */
export function toApproval(v: unknown): Approval {
  if (v === null || typeof v !== 'object' || typeof (v as { id?: unknown }).id !== 'string') {
    throw new StrandsHitlError(`the server's answer is not an approval request: ${JSON.stringify(v)?.slice(0, 200)}`);
  }
  const o = v as Record<string, unknown>;
  const decision = o.decision === 'approved' || o.decision === 'rejected' ? o.decision : null;
  const action = o.action as { tool?: unknown; arguments?: unknown } | null | undefined;
  return {
    id: o.id as string,
    title: str(o.title) ?? '',
    status: (str(o.status) ?? 'failed') as ApprovalStatus,
    decision,
    approved: decision === 'approved',
    decidedBy: str(o.decided_by),
    via: str(o.via),
    reason: str(o.reason),
    decidedAt: str(o.decided_at),
    values: o.values && typeof o.values === 'object' ? (o.values as Record<string, Json>) : null,
    trusted: o.trusted === true,
    action:
      action && typeof action === 'object' && typeof action.tool === 'string'
        ? { tool: action.tool, arguments: normalize(action.arguments ?? null) }
        : null,
    actionDigest: str(o.action_digest),
    requestedBy: str(o.requested_by) ?? '',
    createdAt: str(o.created_at),
    labels: (o.labels as Record<string, string> | undefined) ?? {},
    created: o.created === true,
    links: (o.links as Record<string, string> | undefined) ?? {},
  };
}

/**
 * Throws {@link ActionMismatch} unless `approval` is of exactly `action`:
 * its `action_digest` is the digest of `action`, or (when the two sides
 * print a number differently) its `action` equals `action`.
 */
export async function checkAction(approval: Approval, action: Action): Promise<void> {
  const mine = await actionDigest(action);
  if (approval.actionDigest === mine) return;
  if (approval.action && jsonEqual(approval.action, { tool: action.tool, arguments: normalize(action.arguments) })) return;
  if (!approval.action && !approval.actionDigest) {
    throw new ActionMismatch(approval.id, 'the server returned no action for it');
  }
  throw new ActionMismatch(
    approval.id,
    `it approves ${approval.action ? `${approval.action.tool} ${JSON.stringify(approval.action.arguments)}` : 'another call'} (digest ${approval.actionDigest}), asked about ${action.tool} ${JSON.stringify(action.arguments)} (digest ${mine})`,
  );
}

/** One line for people: "approved by alice (via slack)", "rejected by bob: not now", … */
export function describeDecision(a: Approval): string {
  const via = a.via ? ` (via ${a.via})` : '';
  const why = a.reason ? `: ${a.reason}` : '';
  switch (a.status) {
    case 'pending':
      return `request ${a.id} is waiting for an answer`;
    case 'timed_out':
      return `nobody answered in time: ${a.decision ?? 'rejected'} by the timeout's fallback`;
    case 'failed':
      return `request ${a.id} failed on the server${why}`;
    case 'cancelled':
      return `cancelled${a.decidedBy ? ` by ${a.decidedBy}` : ''}${why}`;
    default:
      return `${a.decision ?? a.status} by ${a.decidedBy ?? 'someone'}${a.approved ? via : why}`;
  }
}

/** Why a call did not run, for the model: "rejected by alice: change freeze". */
export function rejectionMessage(a: Approval): string {
  switch (a.status) {
    case 'timed_out':
      return "rejected: nobody answered in time and the timeout's fallback rejected it";
    case 'cancelled':
      return `cancelled${a.decidedBy ? ` by ${a.decidedBy}` : ''}${a.reason ? `: ${a.reason}` : ''}`;
    default:
      return `rejected by ${a.decidedBy ?? 'an approver'}${a.reason ? `: ${a.reason}` : ''}`;
  }
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Why a fetch failed, in words: "connect ECONNREFUSED 127.0.0.1:9". */
function causeOf(e: unknown): string {
  const err = e as { message?: unknown; cause?: { message?: unknown; code?: unknown } };
  const inner = err?.cause;
  if (inner && typeof inner.message === 'string' && inner.message) return inner.message;
  if (inner && typeof inner.code === 'string') return inner.code;
  return typeof err?.message === 'string' ? err.message : String(e);
}

/** A client of one server, with one token. */
export class Client {
  /** The server's origin, as given (no trailing slash). */
  readonly server: string;
  private readonly token: string;
  private readonly fetchFn: typeof globalThis.fetch;
  private readonly budgetMs: number;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(options: ClientOptions) {
    const server = (options?.server ?? '').trim().replace(/\/+$/, '').replace(/\/api\/v1$/, '');
    let url: URL;
    try {
      url = new URL(server);
    } catch {
      throw new StrandsHitlError(`the strands server must be an http(s) URL like http://127.0.0.1:3000, not ${JSON.stringify(options?.server)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new StrandsHitlError(`the strands server must be an http(s) URL, not ${JSON.stringify(options.server)}`);
    }
    if (typeof options.token !== 'string' || !options.token.trim()) {
      throw new StrandsHitlError('no token: pass an operator token (strands tokens create NAME --role operator), e.g. from STRANDS_TOKEN');
    }
    const fetchFn = options.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== 'function') {
      throw new StrandsHitlError('no fetch: this runtime has no global fetch (node >= 20 has one); pass `fetch`');
    }
    this.server = server;
    this.token = options.token.trim();
    this.fetchFn = fetchFn;
    this.budgetMs = options.reconnect?.budgetMs ?? 60_000;
    this.initialDelayMs = options.reconnect?.initialDelayMs ?? 250;
    this.maxDelayMs = options.reconnect?.maxDelayMs ?? 5_000;
  }

  /**
   * Asks: `POST /api/v1/approvals`. Returns the request (pending, or as an
   * earlier request with the same key left it). With an `action`, the
   * returned request must be of exactly that action.
   */
  async request(opts: RequestOptions, signal?: AbortSignal): Promise<Approval> {
    const key = opts.key ?? newKey();
    const body = requestBody({ ...opts, key });
    const approval = toApproval(await this.send('POST', '/api/v1/approvals', body, signal));
    if (opts.action) await checkAction(approval, opts.action);
    return approval;
  }

  /** `GET /api/v1/approvals/{id}`, holding up to `wait` seconds (at most 60) for a decision. */
  async get(id: string, options: { wait?: number; signal?: AbortSignal } = {}): Promise<Approval> {
    const wait = options.wait ? `?wait=${Math.max(1, Math.min(WAIT_SECS, Math.ceil(options.wait)))}` : '';
    return toApproval(
      await this.send('GET', `/api/v1/approvals/${encodeURIComponent(id)}${wait}`, undefined, options.signal),
    );
  }

  /**
   * Waits until request `id` is decided (or failed, or cancelled): long
   * polls of up to 60 s each; a broken connection or a restarting server
   * is waited out (within the reconnect budget) on the same request.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<Approval> {
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new WaitTimedOut(id, options.timeoutMs ?? 0);
      const secs = Number.isFinite(left) ? Math.min(WAIT_SECS, Math.ceil(left / 1000)) : WAIT_SECS;
      const a = await this.get(id, { wait: secs, ...(options.signal ? { signal: options.signal } : {}) });
      if (a.status !== 'pending') return a;
    }
  }

  /**
   * Asks and waits for the decision. With an `action`, the decision must be
   * of exactly that action. Read `approved` (or `decision`) for the answer;
   * a rejection is a result, not an error.
   */
  async ask(opts: RequestOptions, options: WaitOptions = {}): Promise<Approval> {
    const asked = await this.request(opts, options.signal);
    const decided = asked.status === 'pending' ? await this.wait(asked.id, options) : asked;
    if (opts.action) await checkAction(decided, opts.action);
    return decided;
  }

  /** One API call, retried on a broken connection, a 5xx or a 429 within the budget. */
  private async send(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const url = `${this.server}${path}`;
    const waitSecs = Number(/[?&]wait=(\d+)/.exec(path)?.[1] ?? 0);
    const started = Date.now();
    let delay = this.initialDelayMs;
    for (;;) {
      let cause: string;
      let status: number | undefined;
      let error: unknown;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new Error(`no answer within ${waitSecs + SLACK_MS / 1000} s`)), waitSecs * 1000 + SLACK_MS);
      const onAbort = (): void => timeout.abort(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const res = await this.fetchFn(url, {
          method,
          headers: {
            authorization: `Bearer ${this.token}`,
            accept: 'application/json',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: timeout.signal,
        });
        const text = await res.text();
        if (res.ok) {
          try {
            return JSON.parse(text) as unknown;
          } catch {
            throw new StrandsHitlError(`${method} ${url}: the server answered ${res.status} with something that is not JSON: ${text.slice(0, 200)}`, { status: res.status });
          }
        }
        if (res.status < 500 && res.status !== 429) throw refusal(method, url, res.status, text);
        status = res.status;
        cause = `HTTP ${res.status}${errorMessage(text) ? `: ${errorMessage(text)}` : ''}`;
        const retryAfter = Number(res.headers.get('retry-after'));
        if (Number.isFinite(retryAfter) && retryAfter > 0) delay = Math.max(delay, Math.min(retryAfter * 1000, this.maxDelayMs));
      } catch (e) {
        if (e instanceof StrandsHitlError) throw e;
        if (signal?.aborted) throw signal.reason ?? e;
        cause = causeOf(e);
        error = e;
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      }
      if (Date.now() - started + delay > this.budgetMs) {
        throw new ServerUnavailable(url, `${cause} (gave up after ${Math.round((Date.now() - started) / 100) / 10} s of retries)`, {
          ...(status === undefined ? {} : { status }),
          ...(error === undefined ? {} : { cause: error }),
        });
      }
      await sleep(delay, signal);
      delay = Math.min(delay * 2, this.maxDelayMs);
    }
  }
}

/** The `error.message` of an API error body, if it is one. */
function errorMessage(text: string): string | undefined {
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } })?.error?.message;
    return typeof m === 'string' ? m : undefined;
  } catch {
    return text.trim().slice(0, 200) || undefined;
  }
}

/** The error for a 4xx answer. */
function refusal(method: string, url: string, status: number, text: string): StrandsHitlError {
  let code: string | undefined;
  let field: string | undefined;
  let message = text.trim().slice(0, 500);
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown; field?: unknown } })?.error;
    if (e && typeof e === 'object') {
      if (typeof e.code === 'string') code = e.code;
      if (typeof e.message === 'string') message = e.message;
      if (typeof e.field === 'string') field = e.field;
    }
  } catch {
    // not JSON: the text is the message
  }
  const opts = { status, ...(code === undefined ? {} : { code }) };
  switch (status) {
    case 400:
    case 413:
    case 422:
      return new InvalidRequest(message || `HTTP ${status}`, { ...opts, ...(field === undefined ? {} : { field }) });
    case 401:
      return new Unauthorized(`the strands server at ${new URL(url).origin} refused the token${message ? `: ${message}` : ''}`, opts);
    case 403:
      return new Forbidden(`${method} ${new URL(url).pathname} is forbidden for this token${message ? `: ${message}` : ''}`, opts);
    case 404:
      return new NotFound(`${new URL(url).pathname}: not found${message ? `: ${message}` : ''}`, opts);
    default:
      return new StrandsHitlError(`${method} ${url}: HTTP ${status}${message ? `: ${message}` : ''}`, opts);
  }
}
