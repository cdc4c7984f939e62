#!/usr/bin/env node
// A Strands Agents (TypeScript) agent with a dangerous tool that stops for a
// human: before `delete_rows` runs, strands-hitl asks `strands serve`, which
// asks the approvers in Slack, Teams, the web inbox, email or the CLI.
//
//   cd examples/agents/typescript && npm ci
//   OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=anything \
//   STRANDS_SERVER=http://127.0.0.1:3000 STRANDS_TOKEN=stk_… APPROVERS=alice \
//   ROWS_LOG=/tmp/deleted.log node agent.mjs
//
// Environment:
//   OPENAI_BASE_URL, OPENAI_API_KEY, MODEL_ID   the model (any OpenAI-compatible chat API)
//   STRANDS_SERVER, STRANDS_TOKEN               the approval service, an operator token
//   APPROVERS                                   who answers (comma-separated), or POLICY
//   NOTIFY                                      where else to ask (comma-separated, e.g. slack:#ops)
//   HITL_MODE   handler (default): the StrandsApproval intervention — the
//                 approver's reason reaches the model;
//               ask: the SDK's HumanInTheLoop with strands-hitl's one-line ask
//   ROWS_LOG    the file delete_rows appends one line to per run
//   PROMPT      what to ask the agent
//
// Exit codes: 0 the tool ran; 1 a human rejected it (it did not run);
// 2 asking failed (the message names the cause; the tool did not run);
// 3 the model never called the tool. The model's last words go to stdout.

import { appendFileSync } from 'node:fs';
import { Agent, tool } from '@strands-agents/sdk';
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import { HumanInTheLoop } from '@strands-agents/sdk/vended-interventions/hitl';
import { actionDigest, ask, describeDecision, StrandsHitlError } from 'strands-hitl';
import { StrandsApproval } from 'strands-hitl/intervention';

const env = process.env;
const list = (v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);

let ran = 0;
const deleteRows = tool({
  name: 'delete_rows',
  description: 'Deletes the rows of a table older than a number of days. Cannot be undone.',
  inputSchema: {
    type: 'object',
    properties: {
      table: { type: 'string', description: 'the table' },
      older_than_days: { type: 'integer', description: 'rows older than this many days' },
    },
    required: ['table', 'older_than_days'],
  },
  callback: ({ table, older_than_days }) => {
    ran++;
    if (env.ROWS_LOG) appendFileSync(env.ROWS_LOG, `deleted ${table} older than ${older_than_days} days\n`);
    return `deleted 3 rows from ${table} older than ${older_than_days} days`;
  },
});

const decisions = [];
const who = {
  ...(env.POLICY ? { policy: env.POLICY } : { approvers: list(env.APPROVERS) }),
  notify: list(env.NOTIFY),
  labels: { agent: 'ts-cleanup' },
  onAsked: async (approval, call) => {
    // The digest computed here; the server's must be the same (it is checked).
    const digest = await actionDigest({ tool: call.tool, arguments: call.input });
    console.error(`asked: request ${approval.id} for ${call.tool} (digest ${digest})`);
  },
  onDecided: (approval) => {
    decisions.push(approval);
    console.error(describeDecision(approval));
  },
};

const mode = env.HITL_MODE ?? 'handler';
const interventions =
  mode === 'ask'
    ? [new HumanInTheLoop({ ask: ask(who) })]
    : mode === 'handler'
      ? [new StrandsApproval(who)]
      : (console.error(`HITL_MODE must be handler or ask, not ${mode}`), process.exit(2));

const agent = new Agent({
  model: new OpenAIModel({
    api: 'chat',
    modelId: env.MODEL_ID ?? 'gpt-4o-mini',
    apiKey: env.OPENAI_API_KEY ?? 'unset',
    ...(env.OPENAI_BASE_URL ? { clientConfig: { baseURL: env.OPENAI_BASE_URL } } : {}),
  }),
  systemPrompt: 'You are a careful database janitor. Use delete_rows to clean up.',
  tools: [deleteRows],
  interventions,
  printer: false,
});

try {
  const result = await agent.invoke(env.PROMPT ?? 'Clean up the events table: delete rows older than 90 days.');
  console.log(result.lastMessage.content.map((b) => b.text ?? '').join(''));
} catch (e) {
  const cause = e instanceof StrandsHitlError ? e.message : `${e?.message ?? e}`;
  console.error(`error: could not get an approval: ${cause} (delete_rows did not run)`);
  // Exit at once: @strands-agents/sdk 1.19.0 may still drain its loop after rejecting.
  process.exit(ran ? 70 : 2);
}
if (ran) process.exit(0);
if (decisions.some((d) => !d.approved)) process.exit(1);
console.error('the model never called delete_rows');
process.exit(3);
