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

test("undo, redo and undoState are public, their results the shapes the Go client's JSON has", () => {
  const client = read("client.d.ts");
  const undo = read("undo.d.ts");
  const cls = client.slice(client.indexOf("export class Client {"));
  assert.match(cls, /^    undo\(id: string\): Promise<UndoResult \| null>;$/m);
  assert.match(cls, /^    redo\(id: string\): Promise<UndoResult \| null>;$/m);
  assert.match(cls, /^    undoState\(id: string\): UndoState;$/m);
  const index = read("index.d.ts");
  for (const t of ["UndoGroup", "UndoResult", "UndoState"]) assert.match(index, new RegExp(`export type ${t} = import\\("./undo.js"\\).${t};`));
  const type = (/** @type {string} */ name) => {
    const m = new RegExp(`export type ${name} = ([^;]*?(?:\\{[\\s\\S]*?\\n\\}|[^;{]*));`).exec(undo);
    assert.ok(m, `${name} is not declared in types/undo.d.ts`);
    return m[1].replace(/\s+/g, " ").trim();
  };
  assert.equal(type("UndoGroup"), '{ kind: "mark" | "choice" | "text" | "why"; question: string; cell: string; from: string; to: string; }');
  assert.equal(type("UndoResult"), "{ group: UndoGroup; done: boolean; by: string; }");
  assert.equal(type("UndoState"), "{ undo: UndoGroup | null; redo: UndoGroup | null; cleared: Cleared; }");
  assert.equal(type("Cleared"), '"" | "save" | "discard" | "reopen" | "rebase" | "reset"');
});
