#!/usr/bin/env node
// Validates Adaptive Cards with Microsoft's own parser, the `adaptivecards`
// package (pinned in package.json / package-lock.json; `npm ci` here), for
// the Teams room's tests. Nothing here touches the network.
//
//   node validate.js [FILE...]     # or the JSON on standard input
//
// The input is JSON: a card, an activity carrying cards as attachments, an
// invoke response (`{type: "application/vnd.microsoft.card.adaptive",
// value}`), or an array of any of these (nested arrays, and `{label, card}`
// pairs, too). Every card found is checked:
//
// - `type: "AdaptiveCard"` and a `version` no later than 1.5 (what Teams
//   renders for bots);
// - Microsoft's parser, at the card's own version: unknown element or
//   action types (e.g. `Action.Execute`, 1.4, in a 1.3 card), bad values
//   — every parse event but hints;
// - the parser's `validateProperties()`: duplicate ids, required inputs
//   without a label or error message, and its other failures;
// - what the parser dropped: a property it does not read at that version
//   (a typo, a property from a later version) is reported, found by
//   comparing the card with the parser's own serialization of it;
// - what Teams needs besides: `Action.Execute` has a `verb` and a
//   `title`, inputs an `id`, the card is under 28 KB.
//
// Prints one line per problem and exits 1 when there is any; 2 when the
// input is not JSON or holds no card; 0 with "N card(s) valid" otherwise.

"use strict";

const fs = require("fs");
const path = require("path");

const AC = require(path.join(__dirname, "node_modules/adaptivecards/dist/adaptivecards.js"));

const CARD_TYPE = "application/vnd.microsoft.card.adaptive";
const MAX_VERSION = [1, 5];
const MAX_BYTES = 28 * 1024;

/// Properties each type must have (beyond the parser's own checks).
const REQUIRED = {
  TextBlock: ["text"],
  FactSet: ["facts"],
  "Input.Text": ["id"],
  "Input.Toggle": ["id", "title"],
  "Input.ChoiceSet": ["id"],
  "Input.Number": ["id"],
  "Input.Date": ["id"],
  "Input.Time": ["id"],
  "Action.OpenUrl": ["url", "title"],
  "Action.ShowCard": ["card", "title"],
  "Action.Submit": ["title"],
  // Teams routes an Action.Execute by its verb.
  "Action.Execute": ["verb", "title"],
};

/// Every card in `v`, with where it was found.
function cardsIn(v, where, out) {
  if (Array.isArray(v)) {
    v.forEach((x, i) => cardsIn(x, `${where}[${i}]`, out));
  } else if (v && typeof v === "object") {
    if (v.type === "AdaptiveCard") {
      out.push({ where, card: v });
    } else if (typeof v.label === "string" && v.card !== undefined) {
      cardsIn(v.card, v.label, out);
    } else if (v.type === CARD_TYPE && v.value !== undefined) {
      cardsIn(v.value, `${where}.value`, out);
    } else if (Array.isArray(v.attachments)) {
      v.attachments.forEach((a, i) => {
        if (a && a.contentType === CARD_TYPE) {
          cardsIn(a.content, `${where}.attachments[${i}]`, out);
        }
      });
    } else if (v.contentType === CARD_TYPE) {
      cardsIn(v.content, `${where}.content`, out);
    }
  }
  return out;
}

function parseVersion(v) {
  const m = typeof v === "string" && /^(\d+)\.(\d+)$/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/// Keys of `input` that the parser dropped (absent from `output`), and the
/// required properties missing, walking both trees in step.
function compare(input, output, at, problems) {
  if (Array.isArray(input)) {
    if (!Array.isArray(output)) {
      problems.push(`${at}: the parser did not keep this list`);
      return;
    }
    if (output.length !== input.length) {
      // Items the parser dropped are reported by its own events.
      problems.push(`${at}: the parser kept ${output.length} of ${input.length} items`);
      return;
    }
    input.forEach((x, i) => compare(x, output[i], `${at}[${i}]`, problems));
    return;
  }
  if (!input || typeof input !== "object") {
    return;
  }
  const type = typeof input.type === "string" ? input.type : null;
  const here = type ? `${at} (${type})` : at;
  for (const key of REQUIRED[type] || []) {
    if (input[key] === undefined || input[key] === null || input[key] === "") {
      problems.push(`${here}: ${type} needs \`${key}\``);
    }
  }
  if (!output || typeof output !== "object" || Array.isArray(output)) {
    problems.push(`${here}: the parser did not keep this object`);
    return;
  }
  for (const key of Object.keys(input)) {
    const value = input[key];
    const empty =
      (Array.isArray(value) && value.length === 0) ||
      (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0);
    if (!(key in output) && !empty) {
      problems.push(
        `${here}: property \`${key}\` is not read by the parser at this version (unknown, misspelt, later than the card's version, or set to its default)`,
      );
      continue;
    }
    if (!(key in output)) {
      continue;
    }
    // `data` is the action's own payload: kept as it is, not read.
    if (key !== "data") {
      compare(input[key], output[key], `${at}.${key}`, problems);
    }
  }
}

/// The problems of one card.
function check(card) {
  const problems = [];
  if (card.type !== "AdaptiveCard") {
    problems.push(`type is ${JSON.stringify(card.type)}, not "AdaptiveCard"`);
    return problems;
  }
  const version = parseVersion(card.version);
  if (!version) {
    problems.push(`version ${JSON.stringify(card.version)} is missing or not "MAJOR.MINOR"`);
    return problems;
  }
  if (version[0] > MAX_VERSION[0] || (version[0] === MAX_VERSION[0] && version[1] > MAX_VERSION[1])) {
    problems.push(`version ${card.version} is later than 1.5, the latest Teams renders for bots`);
  }
  const size = Buffer.byteLength(JSON.stringify(card), "utf8");
  if (size > MAX_BYTES) {
    problems.push(`${size} bytes: over the 28 KB a Teams card may take`);
  }
  const target = AC.Version.parse(card.version, new AC.SerializationContext());
  const parsed = new AC.AdaptiveCard();
  const context = new AC.SerializationContext(target);
  parsed.parse(card, context);
  for (let i = 0; i < context.eventCount; i++) {
    const e = context.getEventAt(i);
    if (e.event !== AC.ValidationEvent.Hint) {
      problems.push(`parser: ${AC.ValidationEvent[e.event]}: ${e.message}`);
    }
  }
  const results = parsed.validateProperties();
  for (const e of results.validationEvents) {
    problems.push(`validateProperties: ${AC.ValidationEvent[e.event]}: ${e.message}`);
  }
  const round = parsed.toJSON(new AC.SerializationContext(target));
  compare(card, round, "card", problems);
  return problems;
}

function main() {
  const files = process.argv.slice(2);
  const inputs = files.length
    ? files.map((f) => ({ where: f, text: fs.readFileSync(f, "utf8") }))
    : [{ where: "stdin", text: fs.readFileSync(0, "utf8") }];
  const cards = [];
  for (const { where, text } of inputs) {
    let v;
    try {
      v = JSON.parse(text);
    } catch (e) {
      console.log(`${where}: not JSON: ${e.message}`);
      process.exit(2);
    }
    cardsIn(v, where, cards);
  }
  if (cards.length === 0) {
    console.log("no Adaptive Card in the input");
    process.exit(2);
  }
  let bad = 0;
  for (const { where, card } of cards) {
    for (const p of check(card)) {
      console.log(`${where}: ${p}`);
      bad++;
    }
  }
  if (bad > 0) {
    console.log(`${bad} problem(s) in ${cards.length} card(s)`);
    process.exit(1);
  }
  const { version } = require(path.join(__dirname, "node_modules/adaptivecards/package.json"));
  console.log(`${cards.length} card(s) valid (adaptivecards ${version})`);
}

main();
