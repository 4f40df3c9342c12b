// The shipped declarations (types/, generated from src/ by `npm run
// types`; make js-check holds them to src/): the client's internals stay
// out of its public API, and the words a caller compares are unions.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const read = (/** @type {string} */ f) => readFileSync(new URL(`../types/${f}`, import.meta.url), "utf8");

test("Client's internals are private in types/client.d.ts", () => {
  const d = read("client.d.ts");
  const cls = d.slice(d.indexOf("export class Client {"));
  const body = cls.slice(0, cls.indexOf("\n}\n"));
  for (const name of ["ws", "pending", "arriving", "incoming", "receive", "deliver", "handle", "failPending", "request"]) {
    const decl = new RegExp(`^    (private )?${name}\\b.*$`, "m").exec(body);
    assert.ok(decl, `${name} is not declared at all`);
    assert.equal(decl[1], "private ", `Client.${name} is public: ${decl[0].trim()}`);
  }
});

test("reason, conn and status are string-literal unions, and ClientOptions is documented as options", () => {
  const client = read("client.d.ts");
  const errors = read("errors.d.ts");
  assert.match(errors, /export type Reason = "invalid" \| /);
  assert.match(errors, /reason: Reason;/);
  assert.match(client, /conn: "connecting" \| "open" \| "reconnecting" \| "unreachable" \| "refused" \| "closed";/);
  assert.match(client, /status: "open" \| "settled" \| "discarded";/);
  assert.doesNotMatch(client, /\bstatus: string;/);
  const opts = client.slice(0, client.indexOf("export type ClientOptions"));
  const doc = opts.slice(opts.lastIndexOf("/**"));
  assert.match(doc, /A Client's options/);
  assert.doesNotMatch(doc, /known|heads/);
});
