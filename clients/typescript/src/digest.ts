/**
 * The action digest the server binds an approval to: SHA-256 (hex) of the
 * compact JSON `{"arguments": …, "tool": …}` with the keys of every object
 * sorted — the same text `strands serve` hashes — and the deep equality
 * used when the two sides print a number differently (`1e21` vs `1e+21`).
 */

/** A JSON value as it travels. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** An action (a tool call) an approval is about. */
export interface Action {
  tool: string;
  arguments: Json;
}

/** `value` as JSON would carry it: `undefined` fields dropped, dates as strings, … */
export function normalize(value: unknown): Json {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as Json);
}

/** Code point order, which is the UTF-8 byte order the server's sorted maps use. */
function byCodePoint(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i]!.codePointAt(0) ?? 0) - (y[i]!.codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** Compact JSON with the keys of every object sorted. */
export function canonicalJson(value: unknown): string {
  const write = (v: Json): string => {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return `[${v.map(write).join(',')}]`;
    const keys = Object.keys(v).sort(byCodePoint);
    return `{${keys.map((k) => `${JSON.stringify(k)}:${write(v[k]!)}`).join(',')}}`;
  };
  return write(normalize(value));
}

/** SHA-256 of `text` (UTF-8), lowercase hex. */
export async function sha256Hex(text: string): Promise<string> {
  const bytes = new TextEncoder().encode(text);
  const hash = await globalThis.crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The digest `strands serve` returns as `action_digest` for `action`. */
export function actionDigest(action: Action): Promise<string> {
  return sha256Hex(canonicalJson({ arguments: action.arguments, tool: action.tool }));
}

/** Whether two JSON values are equal (object key order aside). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
