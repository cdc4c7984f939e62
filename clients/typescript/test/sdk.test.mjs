// The package inside the real @strands-agents/sdk (the pinned dev
// dependency): a scripted model (no network) calls a tool once and then
// says what the tool result was; the approvals API is the fake on
// 127.0.0.1. Checks the prompt the SDK really sends to `ask`, the three
// ways of asking (HumanInTheLoop's ask, the intervention handler,
// interrupt / resume) and that an error while asking never runs the tool.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent, FileStorage, Model, SessionManager, tool } from '@strands-agents/sdk';
import { HumanInTheLoop } from '@strands-agents/sdk/vended-interventions/hitl';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client, ServerUnavailable, UnreadablePrompt, answerInterrupts, ask, parsePrompt, pendingInterrupts, runWithApprovals } from '../dist/index.js';
import { StrandsApproval, TRUSTED_TOOLS_KEY } from '../dist/intervention.js';
import { fakeStrands } from './fake-strands.mjs';

const fast = { budgetMs: 400, initialDelayMs: 20, maxDelayMs: 50 };

/** A server nobody runs: a port nothing listens on. */
async function deadServer() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

/** A model that asks for `delete_rows` once per user message, then reports the tool's result. */
class ScriptedModel extends Model {
  constructor(input = { table: 'events', older_than_days: 90 }) {
    super();
    this.input = input;
    this.seen = [];
  }
  updateConfig() {}
  getConfig() {
    return { modelId: 'scripted' };
  }
  async *stream(messages) {
    this.seen.push(messages.map((m) => m.toJSON?.() ?? m));
    // A user's text: call the tool; a tool's result: say what it was.
    const results = messages.at(-1).content.filter((b) => b.type === 'toolResultBlock');
    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    if (results.length === 0) {
      yield {
        type: 'modelContentBlockStartEvent',
        start: { type: 'toolUseStart', name: 'delete_rows', toolUseId: `tooluse_${this.seen.length}` },
      };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: JSON.stringify(this.input) } };
      yield { type: 'modelContentBlockStopEvent' };
      yield { type: 'modelMessageStopEvent', stopReason: 'toolUse' };
      return;
    }
    const last = results.at(-1);
    const text = `FINAL ${last.status}: ${last.content.map((c) => c.text ?? JSON.stringify(c)).join(' ')}`;
    yield { type: 'modelContentBlockStartEvent' };
    yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text } };
    yield { type: 'modelContentBlockStopEvent' };
    yield { type: 'modelMessageStopEvent', stopReason: 'endTurn' };
  }
}

function deleteRows(ran) {
  return tool({
    name: 'delete_rows',
    description: 'Deletes rows',
    inputSchema: {
      type: 'object',
      properties: { table: { type: 'string' }, older_than_days: { type: 'number' } },
      required: ['table', 'older_than_days'],
    },
    callback: (input) => {
      ran.push(input);
      return `deleted rows of ${input.table}`;
    },
  });
}

const finalText = (result) => result.lastMessage.content.map((b) => b.text ?? '').join('');

test('the prompt HumanInTheLoop 1.19.0 sends is read back into the tool call', async () => {
  const prompts = [];
  const ran = [];
  const agent = new Agent({
    model: new ScriptedModel(),
    tools: [deleteRows(ran)],
    printer: false,
    interventions: [new HumanInTheLoop({ ask: async (p) => (prompts.push(p), 'y') })],
  });
  await agent.invoke('clean up');
  assert.deepEqual(prompts, ['Approve "delete_rows"?\n  Input: {"table":"events","older_than_days":90}']);
  assert.deepEqual(parsePrompt(prompts[0]), { tool: 'delete_rows', input: { table: 'events', older_than_days: 90 } });
  assert.equal(ran.length, 1);
});

test('parsePrompt: a classifier reason, quotes in the input, and refusals', () => {
  assert.deepEqual(parsePrompt('Approve "rm" — deletes data?\n  Input: {"q":"a?\\n  Input: b"}'), {
    tool: 'rm',
    input: { q: 'a?\n  Input: b' },
    reason: 'deletes data',
  });
  assert.deepEqual(parsePrompt('Approve "t"?\n  Input: undefined'), { tool: 't', input: null });
  for (const bad of ['Delete?', 'Approve "t"?\n  Input: {nope', 'Approve ""?\n  Input: {}', 'Approve "t" now?\n  Input: {}']) {
    assert.throws(() => parsePrompt(bad), UnreadablePrompt, bad);
  }
});

test('HumanInTheLoop with ask: approved runs the tool once, bound to its digest; rejected never runs it', async (t) => {
  const fake = await fakeStrands({
    onCreated: (v, body) =>
      setTimeout(() => fake.decide(v.id, body.details.table === 'events' ? { decision: 'approved' } : { decision: 'rejected', reason: 'no' }), 20),
  });
  t.after(fake.close);
  const client = new Client({ server: fake.url, token: fake.token, reconnect: fast });
  for (const [table, runs] of [
    ['events', 1],
    ['users', 0],
  ]) {
    const ran = [];
    const agent = new Agent({
      model: new ScriptedModel({ table, older_than_days: 90 }),
      tools: [deleteRows(ran)],
      printer: false,
      interventions: [new HumanInTheLoop({ ask: ask({ client, approvers: ['alice'], notify: ['slack:#ops'] }) })],
    });
    const result = await agent.invoke('clean up');
    assert.equal(ran.length, runs, finalText(result));
    if (!runs) assert.match(finalText(result), /CONFIRMATION_FAILED/);
  }
  const [first, second] = fake.state.posts;
  assert.deepEqual(first.action, { tool: 'delete_rows', arguments: { table: 'events', older_than_days: 90 } });
  assert.deepEqual(first.details, { table: 'events', older_than_days: '90' });
  assert.deepEqual(first.approvers, ['alice']);
  assert.deepEqual(first.notify, ['slack:#ops']);
  assert.equal(first.labels.tool, 'delete_rows');
  assert.notEqual(first.key, second.key, 'a fresh key per call');
});

test("HumanInTheLoop with ask: a server error aborts the run (fail closed), the tool never runs", async () => {
  const ran = [];
  const agent = new Agent({
    model: new ScriptedModel(),
    tools: [deleteRows(ran)],
    printer: false,
    interventions: [
      new HumanInTheLoop({ ask: ask({ client: new Client({ server: await deadServer(), token: 't', reconnect: fast }), approvers: ['a'] }) }),
    ],
  });
  await assert.rejects(agent.invoke('clean up'), (e) => {
    const all = `${e}\n${e.cause ?? ''}`;
    assert.ok(e instanceof ServerUnavailable || e.cause instanceof ServerUnavailable || /cannot reach the strands server/.test(all), all);
    return true;
  });
  await new Promise((r) => setTimeout(r, 100)); // the SDK drains its loop after rejecting
  assert.equal(ran.length, 0);
});

test('the intervention handler: a server that cannot be reached stops the run, the tool never runs', async () => {
  const server = await deadServer();
  const ran = [];
  const agent = new Agent({
    model: new ScriptedModel(),
    tools: [deleteRows(ran)],
    printer: false,
    interventions: [
      new StrandsApproval({ client: new Client({ server, token: 't', reconnect: fast }), approvers: ['a'] }),
    ],
  });
  await assert.rejects(agent.invoke('clean up'), (e) => e.message.includes(`cannot reach the strands server at ${server}/api/v1/approvals: connect ECONNREFUSED`));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(ran.length, 0);
});

test('the intervention handler hands the reason to the model, keys on session + toolUseId, and does not ask twice', async (t) => {
  const fake = await fakeStrands({
    onCreated: (v) => setTimeout(() => fake.decide(v.id, { decision: 'rejected', by: 'alice', reason: 'change freeze until Monday' }), 20),
  });
  t.after(fake.close);
  const client = new Client({ server: fake.url, token: fake.token, reconnect: fast });
  const ran = [];
  const agent = new Agent({
    model: new ScriptedModel(),
    tools: [deleteRows(ran)],
    printer: false,
    interventions: [new StrandsApproval({ client, approvers: ['alice'] })],
  });
  const result = await agent.invoke('clean up');
  assert.equal(ran.length, 0);
  assert.match(finalText(result), /DENIED: rejected by alice: change freeze until Monday/);
  assert.equal(fake.state.posts.length, 1);
  assert.equal(fake.state.posts[0].key, `${agent.sessionId}:tooluse_1`);
  // The same call proposed again in the session: denied without asking.
  const again = await agent.invoke('clean up again');
  assert.equal(ran.length, 0);
  assert.match(finalText(again), /rejected by alice: change freeze until Monday \(this exact call was rejected before/);
  assert.equal(fake.state.posts.length, 1, 'not asked twice');
});

test('the intervention handler records trust in the agent state and stops asking', async (t) => {
  const fake = await fakeStrands({ onCreated: (v) => setTimeout(() => fake.decide(v.id, { decision: 'approved', trusted: true }), 20) });
  t.after(fake.close);
  const client = new Client({ server: fake.url, token: fake.token, reconnect: fast });
  const ran = [];
  const agent = new Agent({
    model: new ScriptedModel(),
    tools: [deleteRows(ran)],
    printer: false,
    interventions: [new StrandsApproval({ client, approvers: ['alice'], enableTrust: true })],
  });
  await agent.invoke('clean up');
  assert.equal(fake.state.posts[0].trust, true);
  assert.deepEqual(agent.appState.get(TRUSTED_TOOLS_KEY), ['delete_rows']);
  await agent.invoke('and again');
  assert.equal(ran.length, 2);
  assert.equal(fake.state.posts.length, 1, 'a trusted tool is not asked about');
});

test('interrupt / resume across a restart: the second process waits on the same request', async (t) => {
  const fake = await fakeStrands();
  t.after(fake.close);
  const client = new Client({ server: fake.url, token: fake.token, reconnect: fast });
  const dir = mkdtempSync(join(tmpdir(), 'strands-hitl-'));
  const make = (ran) =>
    new Agent({
      model: new ScriptedModel(),
      tools: [deleteRows(ran)],
      printer: false,
      interventions: [new HumanInTheLoop()],
      sessionManager: new SessionManager({ sessionId: 'conv-7', storage: { snapshot: new FileStorage(dir) } }),
    });
  // Process 1: pauses, asks, and dies while waiting.
  const ran1 = [];
  const first = make(ran1);
  const paused = await first.invoke('clean up');
  assert.equal(paused.stopReason, 'interrupt');
  assert.equal(paused.interrupts.length, 1);
  assert.equal(paused.interrupts[0].id, 'hook:beforeToolCall:tooluse_1:strands:human-in-the-loop');
  const dying = new AbortController();
  const answering = answerInterrupts(paused.interrupts, client, { sessionId: 'conv-7', approvers: ['alice'], signal: dying.signal });
  const id = await fake.nth(1);
  dying.abort(new Error('process 1 died'));
  await assert.rejects(answering);
  // Process 2: restores the session, finds the interrupt, waits on the same request.
  const ran2 = [];
  const second = make(ran2);
  const pending = await pendingInterrupts(second);
  assert.deepEqual(pending.map((i) => i.id), [paused.interrupts[0].id]);
  const decisions = [];
  const done = runWithApprovals(second, 'ignored: a paused run is resumed first', client, {
    sessionId: 'conv-7',
    approvers: ['alice'],
    onDecided: (a) => decisions.push(a),
  });
  while (fake.state.posts.length < 2) await new Promise((r) => setTimeout(r, 10));
  fake.decide(id, { decision: 'approved' });
  const result = await done;
  assert.equal(result.stopReason, 'endTurn');
  assert.equal(ran1.length + ran2.length, 1, 'the tool ran once');
  assert.equal(ran2.length, 1, 'in the second process');
  assert.equal(fake.state.views.size, 1, 'asked once');
  assert.equal(fake.state.posts[1].key, `conv-7:${paused.interrupts[0].id}`);
  assert.equal(decisions[0].id, id);
  assert.match(finalText(result), /FINAL success: deleted rows of events/);
});
