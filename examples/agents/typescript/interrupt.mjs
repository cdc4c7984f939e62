#!/usr/bin/env node
// Interrupt / resume for a stateless service, across a restart: the agent
// has the SDK's HumanInTheLoop without an `ask`, so it stops with
// stopReason 'interrupt'; strands-hitl asks `strands serve` about each
// interrupt (keyed `${SESSION_ID}:${interrupt.id}`) and resumes with the
// answers. The session lives in SESSION_DIR (the SDK's SessionManager with
// FileStorage): when this process dies while a human thinks, running it
// again with the same SESSION_ID finds the run still paused, waits on the
// same approval request (nobody is asked twice) and resumes — the tool runs
// there, once, and the model is not asked for the call again.
//
//   SESSION_ID=cleanup-1 SESSION_DIR=/tmp/sessions node interrupt.mjs   # asks, waits…
//   # (killed) — run it again: it waits on the same request
//   SESSION_ID=cleanup-1 SESSION_DIR=/tmp/sessions node interrupt.mjs
//
// The rest of the environment and the exit codes are agent.mjs's.

import { appendFileSync } from 'node:fs';
import { Agent, FileStorage, SessionManager, tool } from '@strands-agents/sdk';
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import { HumanInTheLoop } from '@strands-agents/sdk/vended-interventions/hitl';
import { Client, describeDecision, pendingInterrupts, runWithApprovals, StrandsHitlError } from 'strands-hitl';

const env = process.env;
const list = (v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const sessionId = env.SESSION_ID ?? 'cleanup-1';

let ran = 0;
const deleteRows = tool({
  name: 'delete_rows',
  description: 'Deletes the rows of a table older than a number of days. Cannot be undone.',
  inputSchema: {
    type: 'object',
    properties: { table: { type: 'string' }, older_than_days: { type: 'integer' } },
    required: ['table', 'older_than_days'],
  },
  callback: ({ table, older_than_days }) => {
    ran++;
    if (env.ROWS_LOG) appendFileSync(env.ROWS_LOG, `deleted ${table} older than ${older_than_days} days\n`);
    return `deleted 3 rows from ${table} older than ${older_than_days} days`;
  },
});

const agent = new Agent({
  model: new OpenAIModel({
    api: 'chat',
    modelId: env.MODEL_ID ?? 'gpt-4o-mini',
    apiKey: env.OPENAI_API_KEY ?? 'unset',
    ...(env.OPENAI_BASE_URL ? { clientConfig: { baseURL: env.OPENAI_BASE_URL } } : {}),
  }),
  systemPrompt: 'You are a careful database janitor. Use delete_rows to clean up.',
  tools: [deleteRows],
  interventions: [new HumanInTheLoop()],
  sessionManager: new SessionManager({
    sessionId,
    storage: { snapshot: new FileStorage(env.SESSION_DIR ?? './sessions') },
  }),
  printer: false,
});

const decisions = [];
try {
  const client = new Client({ server: env.STRANDS_SERVER ?? '', token: env.STRANDS_TOKEN ?? '' });
  const pending = await pendingInterrupts(agent);
  console.error(pending.length ? `resuming session ${sessionId}: ${pending.length} interrupt(s) pending` : `starting session ${sessionId}`);
  const result = await runWithApprovals(agent, env.PROMPT ?? 'Clean up the events table: delete rows older than 90 days.', client, {
    sessionId,
    ...(env.POLICY ? { policy: env.POLICY } : { approvers: list(env.APPROVERS) }),
    notify: list(env.NOTIFY),
    labels: { agent: 'ts-cleanup-interrupts' },
    onAsked: (approval) => console.error(`asked: request ${approval.id} (key ${sessionId}:…)`),
    onDecided: (approval) => {
      decisions.push(approval);
      console.error(describeDecision(approval));
    },
  });
  console.log(result.lastMessage.content.map((b) => b.text ?? '').join(''));
} catch (e) {
  const cause = e instanceof StrandsHitlError ? e.message : `${e?.message ?? e}`;
  console.error(`error: could not get an approval: ${cause}`);
  process.exit(ran ? 70 : 2);
}
if (ran) process.exit(0);
if (decisions.some((d) => !d.approved)) process.exit(1);
console.error('the model never called delete_rows');
process.exit(3);
