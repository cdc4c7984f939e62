// The client against a fake of the approvals API on 127.0.0.1: the body it
// sends, error mapping, reconnecting with the same idempotency key, waiting,
// and the action check.

import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import {
  ActionMismatch,
  Client,
  Forbidden,
  InvalidRequest,
  NotFound,
  ServerUnavailable,
  StrandsHitlError,
  Unauthorized,
  WaitTimedOut,
  actionDigest,
  canonicalJson,
  describeDecision,
} from '../dist/index.js';
import { fakeStrands } from './fake-strands.mjs';

const fast = { budgetMs: 3_000, initialDelayMs: 10, maxDelayMs: 50 };
const clientOf = (fake, extra = {}) => new Client({ server: fake.url, token: fake.token, reconnect: fast, ...extra });

/** A port nothing listens on. */
async function deadPort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise((r) => s.close(r));
  return port;
}

test('request maps camelCase options to the API snake_case and leaves unset ones out', async (t) => {
  const fake = await fakeStrands();
  t.after(fake.close);
  const a = await clientOf(fake).request({
    title: 'Deploy v1.2?',
    body: '**now**',
    details: { version: '1.2' },
    approvers: ['alice', 'group:sre'],
    quorum: 2,
    requireReason: true,
    timeoutMinutes: 30,
    onTimeout: 'reject',
    notify: ['slack:#deploys'],
    labels: { team: 'a' },
    key: 'run-1',
    action: { tool: 'deploy', arguments: { version: '1.2', when: undefined } },
  });
  assert.equal(a.status, 'pending');
  assert.equal(a.approved, false);
  assert.deepEqual(fake.state.posts[0], {
    title: 'Deploy v1.2?',
    body: '**now**',
    details: { version: '1.2' },
    approvers: ['alice', 'group:sre'],
    quorum: 2,
    require_reason: true,
    timeout_minutes: 30,
    on_timeout: 'reject',
    notify: ['slack:#deploys'],
    labels: { team: 'a' },
    key: 'run-1',
    action: { tool: 'deploy', arguments: { version: '1.2' } },
  });
  assert.equal(fake.state.calls[0].auth, 'Bearer stk_good');
  // trust and form only when set; trust only with an action.
  await clientOf(fake).request({ title: 'x', approvers: ['a'], action: { tool: 't', arguments: {} }, trust: true, form: { type: 'object' } });
  assert.equal(fake.state.posts[1].trust, true);
  assert.deepEqual(fake.state.posts[1].form, { type: 'object' });
  assert.ok(typeof fake.state.posts[1].key === 'string' && fake.state.posts[1].key.length > 10, 'a key is made up');
  await assert.rejects(clientOf(fake).request({ title: 'x', approvers: ['a'], trust: true }), (e) => e instanceof InvalidRequest && e.field === 'trust');
  assert.equal(fake.state.posts.length, 2, 'nothing sent for a local refusal');
});

test('errors: 422 names the field, 401 the refused token, 403, 404; none is an approval', async (t) => {
  const fake = await fakeStrands({ invalid: (b) => (b.approvers?.length ? null : 'approvers') });
  t.after(fake.close);
  const c = clientOf(fake);
  await assert.rejects(c.request({ title: 'x', approvers: [] }), (e) => {
    assert.ok(e instanceof InvalidRequest && e instanceof StrandsHitlError);
    assert.equal(e.field, 'approvers');
    assert.equal(e.status, 422);
    assert.equal(e.code, 'invalid_request');
    assert.match(e.message, /approvers: approvers is wrong/);
    return true;
  });
  const bad = new Client({ server: fake.url, token: 'stk_revoked', reconnect: fast });
  await assert.rejects(bad.ask({ title: 'x', approvers: ['a'] }), (e) => {
    assert.ok(e instanceof Unauthorized);
    assert.match(e.message, /refused the token: unknown token/);
    assert.ok(e.message.includes(fake.url), e.message);
    return true;
  });
  await assert.rejects(c.get('no-such-id'), NotFound);
  const forbidding = await fakeStrands({ forbidden: true });
  t.after(forbidding.close);
  await assert.rejects(clientOf(forbidding).request({ title: 'x', approvers: ['a'] }), Forbidden);
  assert.throws(() => new Client({ server: 'not a url', token: 't' }), /http\(s\) URL/);
  assert.throws(() => new Client({ server: fake.url, token: '' }), /no token/);
});

test('a server that cannot be reached fails within the budget, naming the URL and the cause', async () => {
  const port = await deadPort();
  const c = new Client({ server: `http://127.0.0.1:${port}`, token: 't', reconnect: { budgetMs: 300, initialDelayMs: 20, maxDelayMs: 50 } });
  const started = Date.now();
  await assert.rejects(c.ask({ title: 'x', approvers: ['a'] }), (e) => {
    assert.ok(e instanceof ServerUnavailable, String(e));
    assert.equal(e.url, `http://127.0.0.1:${port}/api/v1/approvals`);
    assert.match(e.message, new RegExp(`cannot reach the strands server at http://127.0.0.1:${port}/api/v1/approvals: .*ECONNREFUSED`));
    return true;
  });
  assert.ok(Date.now() - started < 2_000);
});

test('a POST retried after a dropped connection and a 503 reuses its key: one request', async (t) => {
  const fake = await fakeStrands({ drop: 1, fail5xx: 1 });
  t.after(fake.close);
  const c = clientOf(fake);
  const a = await c.request({ title: 'x', approvers: ['a'] });
  assert.deepEqual(fake.state.calls.map((x) => x.method), ['POST', 'POST', 'POST'], 'dropped, 503, made');
  const keys = new Set(fake.state.calls.map((x) => x.body.key));
  assert.equal(keys.size, 1, `one key for every try: ${[...keys]}`);
  assert.equal(fake.state.views.size, 1);
  // The same key again: the same request.
  const again = await c.request({ title: 'x', approvers: ['a'], key: [...keys][0] });
  assert.equal(again.id, a.id);
  assert.equal(again.created, false);
});

test('wait long-polls until decided and waits out a broken connection on the same request', async (t) => {
  const fake = await fakeStrands();
  t.after(fake.close);
  const c = clientOf(fake);
  const asked = await c.request({ title: 'x', approvers: ['a'] });
  const waiting = c.wait(asked.id);
  await new Promise((r) => setTimeout(r, 50));
  fake.state.drop = 1; // the next GET is cut off
  fake.state.fail5xx = 0;
  // Let the held GET return (pending), then the next is dropped, then decide.
  await new Promise((r) => setTimeout(r, 2_200));
  fake.decide(asked.id, { decision: 'rejected', by: 'bob', reason: 'not now', via: 'api' });
  const a = await waiting;
  assert.equal(a.status, 'rejected');
  assert.equal(a.approved, false);
  assert.equal(a.decidedBy, 'bob');
  assert.equal(a.reason, 'not now');
  assert.equal(describeDecision(a), 'rejected by bob: not now');
  const gets = fake.state.calls.filter((x) => x.method === 'GET');
  assert.ok(gets.length >= 3, `${gets.length} GETs`);
  assert.ok(gets.every((g) => g.path === `/api/v1/approvals/${asked.id}?wait=60`), JSON.stringify(gets));
});

test('wait gives up after timeoutMs with an error, never an answer', async (t) => {
  const fake = await fakeStrands();
  t.after(fake.close);
  const c = clientOf(fake);
  const asked = await c.request({ title: 'x', approvers: ['a'] });
  await assert.rejects(c.wait(asked.id, { timeoutMs: 300 }), WaitTimedOut);
});

test('ask returns the decision; a timeout whose fallback approves is approved', async (t) => {
  const fake = await fakeStrands({
    onCreated: (view) => setTimeout(() => fake.decide(view.id, { decision: 'approved', status: 'timed_out', by: 'timeout', via: 'timeout' }), 20),
  });
  t.after(fake.close);
  const a = await clientOf(fake).ask({ title: 'x', approvers: ['a'], onTimeout: 'approve' });
  assert.equal(a.status, 'timed_out');
  assert.equal(a.approved, true);
});

test('the action digest is the server text: sorted keys at every level, compact', async () => {
  assert.equal(
    await actionDigest({ tool: 'delete_rows', arguments: { table: 'events', days: 90 } }),
    // printf '%s' '{"arguments":{"days":90,"table":"events"},"tool":"delete_rows"}' | sha256sum
    '372e802c86ce7604a2800e8cee876be7c8de9c2077dc2b1945227984fc23b04e',
  );
  assert.equal(canonicalJson({ b: [1, { a: 'é"x', Z: null }], a: true }), '{"a":true,"b":[1,{"Z":null,"a":"é\\"x"}]}');
  assert.equal(
    await actionDigest({ tool: 't', arguments: { b: [1, { a: 'é"x', Z: null }], a: true } }),
    'b42b8f2fa644e58efc621068fbe380024ba0610e4954c1311819956b20970f70',
  );
});

test('an approval of another call is refused (digest and action differ)', async (t) => {
  const fake = await fakeStrands({
    tamper: (v) => {
      if (v.action) {
        v.action.arguments.table = 'users';
        v.action_digest = 'f'.repeat(64);
      }
      return v;
    },
    onCreated: (view) => setTimeout(() => fake.decide(view.id, { decision: 'approved' }), 20),
  });
  t.after(fake.close);
  await assert.rejects(
    clientOf(fake).ask({ title: 'x', approvers: ['a'], action: { tool: 'delete_rows', arguments: { table: 'events' } } }),
    (e) => e instanceof ActionMismatch && /not of the call asked about/.test(e.message),
  );
});

test('a digest printed differently but the same action is accepted (numbers like 1e21)', async (t) => {
  const fake = await fakeStrands({
    tamper: (v) => {
      if (v.action) v.action_digest = '0'.repeat(64); // the server printed 1e21 its own way
      return v;
    },
  });
  t.after(fake.close);
  const a = await clientOf(fake).request({ title: 'x', approvers: ['a'], action: { tool: 't', arguments: { n: 1e21 } } });
  assert.equal(a.status, 'pending');
});
