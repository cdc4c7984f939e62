// A fake of `strands serve`'s approvals API on 127.0.0.1 for the unit
// tests: POST /api/v1/approvals (idempotent by key), GET
// /api/v1/approvals/{id}?wait=N (held until the test decides or N passes),
// with faults to inject: dropped connections, 5xx, refused tokens, 422s.
// Its digest is computed here independently of the package (sorted keys by
// a JSON.stringify replacer, node:crypto).

import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

/** Compact JSON with every object's keys sorted (an independent implementation). */
export function sortedJson(v) {
  return JSON.stringify(v, (_k, val) =>
    val && typeof val === 'object' && !Array.isArray(val)
      ? Object.fromEntries(Object.keys(val).sort().map((k) => [k, val[k]]))
      : val,
  );
}

export const digestOf = (action) =>
  createHash('sha256').update(sortedJson({ arguments: action.arguments ?? null, tool: action.tool })).digest('hex');

/**
 * Starts the fake. `faults`: `drop` (the next N requests have their
 * connection destroyed), `fail5xx` (the next N get 503), `token` (the good
 * one; others get 401), `invalid` (a function of the body: a field name
 * makes a 422 naming it), `tamper` (a function that changes the view sent).
 */
export async function fakeStrands(faults = {}) {
  const token = faults.token ?? 'stk_good';
  const state = {
    calls: [], // every request: {method, path, body, auth}
    posts: [], // the POST bodies
    byKey: new Map(),
    views: new Map(),
    waiters: new Map(),
    drop: faults.drop ?? 0,
    fail5xx: faults.fail5xx ?? 0,
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => handle(req, res, raw));
  });
  const send = (res, status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const out = (view) => (faults.tamper ? faults.tamper(structuredClone(view)) : view);
  function handle(req, res, raw) {
    const url = new URL(req.url, 'http://x');
    const body = raw ? JSON.parse(raw) : undefined;
    state.calls.push({ method: req.method, path: url.pathname + url.search, body, auth: req.headers.authorization });
    if (state.drop > 0) {
      state.drop--;
      req.socket.destroy();
      return;
    }
    if (state.fail5xx > 0) {
      state.fail5xx--;
      return send(res, 503, { error: { code: 'unavailable', message: 'restarting' } });
    }
    if (req.headers.authorization !== `Bearer ${token}`) {
      return send(res, 401, { error: { code: 'unauthorized', message: 'unknown token' } });
    }
    if (req.method === 'POST' && url.pathname === '/api/v1/approvals') {
      state.posts.push(body);
      const field = faults.invalid?.(body);
      if (field) return send(res, 422, { error: { code: 'invalid_request', field, message: `${field} is wrong` } });
      if (faults.forbidden) return send(res, 403, { error: { code: 'forbidden', message: 'needs an operator token' } });
      const existing = body.key && state.byKey.get(body.key);
      if (existing) return send(res, 200, out({ ...state.views.get(existing), created: false }));
      const id = randomUUID();
      if (body.key) state.byKey.set(body.key, id);
      const view = {
        id,
        title: body.title,
        status: 'pending',
        decision: null,
        decided_by: null,
        decided_at: null,
        via: null,
        reason: null,
        requested_by: 'ci-bot',
        created_at: new Date().toISOString(),
        labels: body.labels ?? {},
        action: body.action ?? null,
        action_digest: body.action ? digestOf(body.action) : null,
        created: true,
        links: { self: `/api/v1/approvals/${id}` },
      };
      state.views.set(id, view);
      faults.onCreated?.(view, body);
      return send(res, 201, out(view));
    }
    const m = /^\/api\/v1\/approvals\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const view = state.views.get(decodeURIComponent(m[1]));
      if (!view) return send(res, 404, { error: { code: 'not_found', message: 'no such request' } });
      const wait = Number(url.searchParams.get('wait') ?? 0);
      if (view.status !== 'pending' || !wait) return send(res, 200, out(view));
      const timer = setTimeout(() => {
        state.waiters.get(view.id)?.delete(reply);
        send(res, 200, out(view));
      }, Math.min(wait, 2) * 1000);
      const reply = () => {
        clearTimeout(timer);
        send(res, 200, out(state.views.get(view.id)));
      };
      if (!state.waiters.has(view.id)) state.waiters.set(view.id, new Set());
      state.waiters.get(view.id).add(reply);
      return;
    }
    send(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${url.pathname}` } });
  }
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    token,
    state,
    /** Decides request `id`: `{decision: 'approved'|'rejected', by, reason, via, status?, trusted?}`. */
    decide(id, { decision, by = 'alice', reason = null, via = 'slack', status, trusted } = {}) {
      const view = state.views.get(id);
      Object.assign(view, {
        status: status ?? decision,
        decision,
        decided_by: by,
        reason,
        via,
        decided_at: new Date().toISOString(),
        ...(trusted === undefined ? {} : { trusted }),
      });
      for (const w of state.waiters.get(id) ?? []) w();
      state.waiters.delete(id);
    },
    /** Resolves with the id of the n-th request made (1-based), once it is. */
    async nth(n) {
      for (;;) {
        const ids = [...state.views.keys()];
        if (ids.length >= n) return ids[n - 1];
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections?.();
        server.close(r);
      }),
  };
}
