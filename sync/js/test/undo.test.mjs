// Undo and redo of a member's own edits (docs/PROTOCOL.md, "Undo"),
// against the real Go server (test/server): each kind of group, skips
// that name who set the value since, text undone around and inside
// another member's typing, repeated characters, redo, where the stacks
// clear, and the stacks kept in storage.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import "fake-indexeddb/auto";
import { Client, IndexedDBStorage, automerge as A } from "../src/index.js";
import * as R from "../src/replica.js";
import { finish, step } from "../src/undo.js";
import { TestServer, docName, eventually } from "./helpers.mjs";

/** @type {TestServer} */
let server;
before(async () => {
  server = new TestServer();
  await server.start();
});
after(async () => {
  await server.close();
});

/** A written question, a single choice with a matrix, a multiple choice. */
const DEFINITION = {
  questions: [
    { id: "why", question: "Why this plan?", response: "text", options: [], multiple: false },
    {
      id: "db", question: "Which database?", multiple: false,
      options: [{ id: "pg", label: "Postgres" }, { id: "sq", label: "SQLite" }],
      criteria: [{ id: "cost", label: "Cost" }, { id: "ops", label: "Operations" }],
    },
    { id: "tools", question: "Which tools?", multiple: true, options: [{ id: "ci", label: "CI" }, { id: "lint", label: "Lint" }], criteria: [] },
  ],
};

/** A fresh document with one decision; ana and ben connected to it. */
async function pair(opts = {}) {
  const doc = docName();
  const ana = await server.client(doc, "ana", opts);
  const [rec] = await ana.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
  const ben = await server.client(doc, "ben");
  await ben.open(rec.id);
  return { doc, id: rec.id, ana, ben, stop: () => (ana.stop(), ben.stop()) };
}

/**
 * Waits until ana's edits are accepted and ben holds exactly her
 * replica's revision (a value seen alone may be an earlier one's).
 */
async function converged(/** @type {any} */ ana, /** @type {any} */ ben, /** @type {string} */ id) {
  await ana.flush();
  const heads = (/** @type {any} */ c) => R.heads(c.decisions.get(id).doc).join();
  await eventually(() => heads(ben) === heads(ana), "ben to hold ana's revision");
}

const text = (/** @type {any} */ c, /** @type {string} */ id) => c.state(id).questions.why.text;
const mark = (/** @type {any} */ c, /** @type {string} */ id, /** @type {string} */ cell) => c.state(id).questions.db.marks[cell] ?? null;
const group = (/** @type {string} */ kind, /** @type {string} */ question, /** @type {string} */ cell, /** @type {string} */ from, /** @type {string} */ to) => ({ kind, question, cell, from, to });

test("marks and choices undo and redo, reach the other member, and are skipped naming who changed them since", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    assert.equal(await ana.undo(id), null, "nothing to undo yet");
    assert.deepEqual(ana.undoState(id), { undo: null, redo: null, cleared: "" });
    ana.setMark(id, "db", "pg", "cost", "yes");
    ana.setMark(id, "db", "pg", "cost", "no");
    ana.setMark(id, "db", "pg", "cost", "no"); // changes nothing: no group
    assert.deepEqual(ana.undoState(id).undo, group("mark", "db", "pg/cost", "yes", "no"));

    let r = await ana.undo(id);
    assert.deepEqual(r, { group: group("mark", "db", "pg/cost", "yes", "no"), done: true, by: "ana" });
    assert.equal(mark(ana, id, "pg/cost"), "yes", "ready when it resolves");
    r = await ana.undo(id);
    assert.equal(mark(ana, id, "pg/cost"), null);
    assert.deepEqual(ana.undoState(id), { undo: null, redo: group("mark", "db", "pg/cost", "", "yes"), cleared: "" });
    r = await ana.redo(id);
    assert.deepEqual(r, { group: group("mark", "db", "pg/cost", "", "yes"), done: true, by: "ana" });
    assert.equal(mark(ana, id, "pg/cost"), "yes");
    await eventually(() => mark(ben, id, "pg/cost") === "yes", "ben to see the redo");

    // A single choice, then a multiple choice's option.
    ana.choose(id, "db", "pg", true);
    ana.choose(id, "db", "sq", true);
    ana.choose(id, "tools", "lint", true);
    assert.deepEqual(ana.undoState(id).undo, group("choice", "tools", "lint", "", "chosen"));
    assert.equal(ana.undoState(id).redo, null, "a new group empties redo");
    await ana.undo(id);
    assert.deepEqual(ana.state(id).questions.tools.choices, []);
    assert.deepEqual(ana.undoState(id).undo, group("choice", "db", "", "pg", "sq"));
    await ana.undo(id);
    assert.deepEqual(ana.state(id).questions.db.choices, ["pg"]);
    await ana.undo(id);
    assert.deepEqual(ana.state(id).questions.db.choices, []);
    await ana.redo(id);
    await ana.redo(id);
    await ana.redo(id);
    assert.deepEqual(ana.state(id).questions.db.choices, ["sq"]);
    assert.deepEqual(ana.state(id).questions.tools.choices, ["lint"]);
    await converged(ana, ben, id);
    assert.deepEqual([ben.state(id).questions.tools.choices, ben.state(id).questions.db.choices], [["lint"], ["sq"]]);

    // Ben changes what ana's newest groups set: her undos are skipped and
    // name him, the values stay his, and the groups leave the stack.
    ben.choose(id, "tools", "lint", false);
    ben.setMark(id, "db", "sq", "ops", "partly");
    await eventually(() => ana.state(id).questions.tools.choices.length === 0 && mark(ana, id, "sq/ops") === "partly", "ana to see ben's edits");
    r = await ana.undo(id);
    assert.deepEqual(r, { group: group("choice", "tools", "lint", "", "chosen"), done: false, by: "ben" });
    assert.deepEqual(ana.state(id).questions.tools.choices, []);
    assert.equal(ana.undoState(id).redo, null, "a skipped group is not redone");
    assert.deepEqual(ana.undoState(id).undo, group("choice", "db", "", "pg", "sq"));
    ana.setMark(id, "db", "sq", "ops", "yes");
    await eventually(() => mark(ben, id, "sq/ops") === "yes", "ben to see ana's mark");
    ben.setMark(id, "db", "sq", "ops", "no");
    await eventually(() => mark(ana, id, "sq/ops") === "no", "ana to see ben's mark");
    r = await ana.undo(id);
    assert.deepEqual(r, { group: group("mark", "db", "sq/ops", "partly", "yes"), done: false, by: "ben" });
    assert.equal(mark(ana, id, "sq/ops"), "no");
  } finally {
    stop();
  }
});

test("a typing burst is undone and redone on its own characters, around and inside another member's typing", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    ben.setText(id, "why", "The plan: keep it.");
    await eventually(() => text(ana, id) === "The plan: keep it.", "ana to see ben's text");
    // Backspace over "keep", type "ship": one burst.
    for (let p = 13; p >= 10; p--) ana.spliceText(id, "why", p, 1, "");
    for (const [i, ch] of [..."ship"].entries()) ana.spliceText(id, "why", 10 + i, 0, ch);
    assert.equal(text(ana, id), "The plan: ship it.");
    assert.deepEqual(ana.undoState(id).undo, group("text", "why", "", "keep", "ship"));

    // Ben types before, inside and after ana's word.
    await eventually(() => text(ben, id) === "The plan: ship it.", "ben to see ana's burst");
    ben.spliceText(id, "why", 12, 0, "X");
    ben.spliceText(id, "why", 10, 0, "[");
    ben.spliceText(id, "why", 16, 0, "]");
    assert.equal(text(ben, id), "The plan: [shXip] it.");
    await eventually(() => text(ana, id) === "The plan: [shXip] it.", "ana to see ben's typing");

    const r = await ana.undo(id);
    assert.deepEqual(r, { group: group("text", "why", "", "keep", "ship"), done: true, by: "ana" });
    let t = text(ana, id);
    assert.equal(t.replace("keep", ""), "The plan: [X] it.", `after the undo: ${t}`);
    assert.match(t, /^The plan: .*keep.* it\.$/);
    await eventually(() => text(ben, id) === t, "ben to see the undo");

    // The redo puts ana's characters back where they were among ben's.
    await ana.redo(id);
    assert.equal(text(ana, id), "The plan: [shXip] it.");
    await converged(ana, ben, id);
    assert.equal(text(ben, id), "The plan: [shXip] it.");
    await ana.undo(id);
    assert.equal(text(ana, id).replace("keep", ""), "The plan: [X] it.");
    assert.deepEqual(ana.undoState(id), { undo: null, redo: group("text", "why", "", "keep", "ship"), cleared: "" });
  } finally {
    stop();
  }
});

test("repeated characters: the burst's own characters go, and the ones it deleted come back where they were", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    ben.setText(id, "why", "aa");
    await eventually(() => text(ana, id) === "aa", "ana to see ben's text");
    // Two a's typed at the start: comparing texts would take the last two.
    ana.spliceText(id, "why", 0, 0, "a");
    ana.spliceText(id, "why", 1, 0, "a");
    await eventually(() => text(ben, id) === "aaaa", "ben to see ana's typing");
    ben.spliceText(id, "why", 2, 0, "X"); // after ana's two, before his own
    await eventually(() => text(ana, id) === "aaXaa", "ana to see ben's X");
    await ana.undo(id);
    assert.equal(text(ana, id), "Xaa");
    await ana.redo(id); // two new a's, at the start again
    assert.equal(text(ana, id), "aaXaa");
    await converged(ana, ben, id);

    // A deleted "a" goes back before the "a" that followed it.
    ben.setText(id, "why", "aaa");
    await eventually(() => text(ana, id) === "aaa", "ana to see ben's aaa");
    ana.spliceText(id, "why", 0, 1, "");
    await eventually(() => text(ben, id) === "aa", "ben to see the deletion");
    ben.spliceText(id, "why", 1, 0, "Y");
    await eventually(() => text(ana, id) === "aYa", "ana to see ben's Y");
    await ana.undo(id);
    assert.equal(text(ana, id), "aaYa");
    await eventually(() => text(ben, id) === "aaYa", "ben to see the undo");
  } finally {
    stop();
  }
});

test("a burst ends at a pause, another question or kind, an edit elsewhere, or typing of another member's in its text", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    const undone = async () => (await ana.undo(id))?.group.to;
    ana.setText(id, "why", "one");
    ana.spliceText(id, "why", 3, 0, " two");
    await new Promise((r) => setTimeout(r, 1100)); // a pause
    ana.spliceText(id, "why", 7, 0, " three");
    ana.setMark(id, "db", "pg", "cost", "yes"); // another kind
    ana.spliceText(id, "why", 13, 0, " four");
    ana.spliceText(id, "why", 0, 0, "zero "); // elsewhere
    await eventually(() => text(ben, id) === "zero one two three four", "ben to see ana's typing");
    ben.setMark(id, "db", "sq", "ops", "no"); // not text: the burst goes on
    await eventually(() => mark(ana, id, "sq/ops") === "no", "ana to see ben's mark");
    ana.spliceText(id, "why", 5, 0, "and ");
    await eventually(() => text(ben, id) === "zero and one two three four", "ben to see it");
    ben.spliceText(id, "why", 27, 0, ".");
    await eventually(() => text(ana, id) === "zero and one two three four.", "ana to see ben's full stop");
    ana.spliceText(id, "why", 9, 0, "then "); // after ben's typing arrived
    assert.equal(await undone(), "then ");
    assert.equal(await undone(), "zero and ");
    assert.equal(await undone(), " four");
    assert.equal(await undone(), "yes");
    assert.equal(await undone(), " three");
    assert.equal(await undone(), "one two");
    assert.equal(await undone(), undefined);
    assert.equal(text(ana, id), ".");
  } finally {
    stop();
  }
});

test("a why undoes and redoes through the server, and is skipped when another member's why replaced it", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    ana.setText(id, "why", "Cheap.");
    ana.choose(id, "db", "pg", true);
    ana.choose(id, "tools", "ci", true);
    await ana.save([id]);
    assert.deepEqual(ana.undoState(id), { undo: null, redo: null, cleared: "save" });
    await ana.why(id, "It is cheap.");
    await ana.why(id, "The team runs it.");
    assert.deepEqual(ana.undoState(id), { undo: group("why", "", "", "It is cheap.", "The team runs it."), redo: null, cleared: "" });
    let r = await ana.undo(id);
    assert.deepEqual(r, { group: group("why", "", "", "It is cheap.", "The team runs it."), done: true, by: "ana" });
    assert.equal(ana.state(id).record.why, "It is cheap.");
    await ana.redo(id);
    assert.equal(ana.state(id).record.why, "The team runs it.");
    await eventually(() => ben.state(id).record.why === "The team runs it.", "ben to see ana's why");
    await ben.why(id, "Ben's reason.");
    await eventually(() => ana.state(id).record.why === "Ben's reason.", "ana to see ben's why");
    r = await ana.undo(id);
    assert.deepEqual(r, { group: group("why", "", "", "It is cheap.", "The team runs it."), done: false, by: "ben" });
    assert.equal(ana.state(id).record.why, "Ben's reason.");
    assert.notEqual(ana.state(id).note?.tone, "error", "a skip is no refusal");
    r = await ana.undo(id);
    assert.equal(r?.group.to, "It is cheap.");
    assert.equal(r?.done, false, "Ben's why replaced it too");

    // The server refuses as stale a why that another replaced before the
    // client heard of it: ana's frames are held while ben sets his, and
    // her undo goes out claiming her own.
    await ana.why(id, "Ana again.");
    await eventually(() => ben.state(id).record.why === "Ana again.", "ben to see it");
    const receive = ana.receive;
    /** @type {any[][]} */
    const held = [];
    ana.receive = (/** @type {any[]} */ ...a) => held.push(a);
    await ben.why(id, "Ben again.");
    await eventually(() => held.some(([, m]) => m.kind === "question:meta"), "ben's why to reach ana's socket");
    const undoing = ana.undo(id);
    ana.receive = receive;
    for (const a of held) ana.receive(...a);
    r = await undoing;
    assert.deepEqual(r, { group: group("why", "", "", "Ben's reason.", "Ana again."), done: false, by: "ben" });
    assert.equal(ana.state(id).record.why, "Ben again.");
    assert.equal(ana.state(id).note, null, "a skip is no refusal");

    await ana.reopen(id);
    assert.deepEqual(ana.undoState(id), { undo: null, redo: null, cleared: "reopen" });
  } finally {
    stop();
  }
});

test("the stacks empty on a save, a discard, a reopen and a reset, saying which, and the page is told", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    ana.setText(id, "why", "Ready.");
    ana.choose(id, "tools", "ci", true);
    ana.choose(id, "db", "pg", true);
    await ana.undo(id);
    assert.deepEqual(ana.undoState(id).redo, group("choice", "db", "", "", "pg"));
    /** @type {any[]} */
    const told = [];
    const off = ana.subscribe(() => told.push(ana.undoState(id)));
    // Ben saves: ana's stacks empty as the record leaves open.
    ana.choose(id, "db", "sq", true);
    await ana.flush();
    await eventually(() => ben.state(id).questions.db.choices.join() === "sq" && ben.state(id).questions.tools.choices.join() === "ci" &&
      text(ben, id) === "Ready.", "ben to see ana's answer");
    await ben.save([id]);
    await eventually(() => ana.undoState(id).cleared === "save", "ana's stacks to clear on ben's save");
    assert.deepEqual(ana.undoState(id), { undo: null, redo: null, cleared: "save" });
    off();
    assert.deepEqual(told.at(-1), { undo: null, redo: null, cleared: "save" }, "the listeners are told");
    assert.ok(told.some((s) => s.undo?.to === "sq"), "and were told of the choice");
    await ben.reopen(id);
    await eventually(() => ana.undoState(id).cleared === "reopen", "ana's stacks to clear on ben's reopen");
    await eventually(() => ana.state(id).status === "open" && ana.state(id).generation === 2, "ana to hold the new draft");
    ana.setMark(id, "db", "pg", "ops", "yes");
    assert.equal(ana.undoState(id).cleared, "", "a new group ends what cleared it");

    // A mark on an option the definition does not have is refused with a
    // reset.
    ana.setMark(id, "db", "nope", "cost", "yes");
    await assert.rejects(ana.flush([id]));
    assert.deepEqual(ana.undoState(id), { undo: null, redo: null, cleared: "reset" });

    ana.setMark(id, "db", "pg", "ops", "no");
    await ana.discard(id);
    assert.deepEqual(ana.undoState(id), { undo: null, redo: null, cleared: "discard" });
  } finally {
    stop();
  }
});

test("a stack holds the 100 newest groups, and a rebased document empties it", async () => {
  const { id, ana, stop } = await pair();
  try {
    for (let i = 0; i < 1200; i++) ana.setMark(id, "db", "pg", "cost", i % 2 ? "yes" : "partly");
    assert.equal(ana.decisions.get(id).undo.undo.length, 100);
    await ana.flush();
    await eventually(() => ana.undoState(id).cleared === "rebase", "the rebased document to empty the stacks", 30000);
    assert.equal(A.getAllChanges(ana.decisions.get(id).doc).length < 100, true, "ana holds the rebased history");
    assert.equal(await ana.undo(id), null);
  } finally {
    stop();
  }
});

test("100 undos, then nothing: the stack keeps the 100 newest", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    for (let i = 0; i < 105; i++) ana.setMark(id, "db", "sq", "cost", ["yes", "partly", "no"][i % 3]);
    let n = 0;
    while (await ana.undo(id)) n++;
    assert.equal(n, 100);
    // The five oldest are forgotten: the value is the fifth's.
    assert.equal(mark(ana, id, "sq/cost"), "partly");
    await ana.flush();
    await eventually(() => mark(ben, id, "sq/cost") === "partly", "ben to see it");
  } finally {
    stop();
  }
});

test("the stacks are kept with the drafts in IndexedDB: a client restarted on the same storage undoes and redoes them", async () => {
  const storage = new IndexedDBStorage({ name: `undo-${docName()}` });
  const { doc, id, ana, ben, stop } = await pair({ storage });
  try {
    ben.setText(id, "why", "Base text.");
    await eventually(() => text(ana, id) === "Base text.", "ana to see ben's text");
    ana.spliceText(id, "why", 4, 0, " and more");
    ana.setMark(id, "db", "pg", "cost", "yes");
    ana.choose(id, "db", "sq", true);
    await ana.undo(id);
    const want = ana.undoState(id);
    assert.deepEqual(want, { undo: group("mark", "db", "pg/cost", "", "yes"), redo: group("choice", "db", "", "", "sq"), cleared: "" });
    // A lost connection keeps them: they are the client's.
    ana.resync();
    await eventually(() => !ana.welcomed, "the connection to drop");
    await ana.ready();
    assert.deepEqual(ana.undoState(id), want);
    ana.stop();
    await ana.storing;

    const again = await server.client(doc, "ana", { storage });
    try {
      assert.deepEqual(again.undoState(id), want);
      ben.spliceText(id, "why", 0, 0, ">");
      await eventually(() => text(again, id) === ">Base and more text.", "ana's restarted client to see ben's typing");
      await again.redo(id);
      assert.deepEqual(again.state(id).questions.db.choices, ["sq"]);
      await again.undo(id);
      await again.undo(id);
      assert.equal(mark(again, id, "pg/cost"), null);
      await again.undo(id);
      assert.equal(text(again, id), ">Base text.");
      assert.deepEqual(again.undoState(id).undo, null);
      await eventually(() => text(ben, id) === ">Base text.", "ben to see the undo made after the restart");
    } finally {
      again.stop();
    }
  } finally {
    stop();
  }
});

test("replayed splices revert a burst exactly, and the revert's own replay redoes it", async () => {
  const obj = (/** @type {any} */ d) => /** @type {string} */ (A.getObjectId(d.drafts["1"].w, "text"));
  for (let trial = 0; trial < 300; trial++) {
    const rnd = (/** @type {number} */ n) => Math.floor(Math.random() * n);
    const word = (/** @type {number} */ n) => Array.from({ length: n }, () => "ab"[rnd(2)]).join("");
    let doc = R.create([{ id: "w", written: true }]);
    doc = R.spliceText(doc, "w", 0, 0, word(rnd(10)));
    const start = doc.drafts["1"].w.text;
    /** @type {import("../src/undo.js").Sim} */
    const sim = { start: 0, items: [] };
    for (let k = rnd(8) + 1; k > 0; k--) {
      const t = doc.drafts["1"].w.text;
      const pos = rnd(t.length + 1);
      const del = rnd(Math.min(3, t.length - pos) + 1);
      const ins = word(rnd(3));
      if (!del && !ins) continue;
      step(sim, t, pos, del, ins);
      doc = R.spliceText(doc, "w", pos, del, ins);
    }
    const end = doc.drafts["1"].w.text;
    // Revert on a fork at the burst's end, replaying the revert.
    const { ops } = finish(sim);
    const f = A.getBackend(doc).fork(R.newActor(), A.getHeads(doc));
    /** @type {import("../src/undo.js").Sim} */
    const back = { start: 0, items: [] };
    for (const [pos, del, ins] of ops) {
      step(back, f.text(obj(doc)), pos, del, ins);
      f.splice(obj(doc), pos, del, ins);
    }
    assert.equal(f.text(obj(doc)), start, `undo of ${JSON.stringify(start)} → ${JSON.stringify(end)}`);
    for (const [pos, del, ins] of finish(back).ops) f.splice(obj(doc), pos, del, ins);
    assert.equal(f.text(obj(doc)), end, "redo");
    f.free();
  }
});


test("a burst's characters that a later burst deleted, and its undo put back, are undone and redone with it", async () => {
  const { id, ana, ben, stop } = await pair();
  try {
    ana.spliceText(id, "why", 0, 0, "hello");
    await new Promise((r) => setTimeout(r, 1100)); // a pause: a second burst
    ana.spliceText(id, "why", 4, 1, "");
    ana.spliceText(id, "why", 3, 1, "");
    const seen = [text(ana, id)];
    for (const back of [true, true, false, false, true]) {
      await (back ? ana.undo(id) : ana.redo(id));
      seen.push(text(ana, id));
    }
    assert.deepEqual(seen, ["hel", "hello", "", "hello", "hel", "hello"]);
    await converged(ana, ben, id);
    assert.equal(text(ben, id), "hello");

    // The same with another member's typing between the copies.
    ben.spliceText(id, "why", 4, 0, "-");
    await eventually(() => text(ana, id) === "hell-o", "ana to see ben's dash");
    await ana.undo(id);
    assert.equal(text(ana, id), "-");
    await ana.redo(id);
    assert.equal(text(ana, id).replace("-", ""), "hello");
  } finally {
    stop();
  }
});

test("any run of typing bursts undoes and redoes to exactly the text each group left, whatever another replica types meanwhile (offline, no server)", async () => {
  for (let trial = 0; trial < 150; trial++) {
    const rnd = (/** @type {number} */ n) => Math.floor(Math.random() * n);
    const c = new Client({ doc: "p", member: "ana", url: "ws://127.0.0.1:1/sync", WebSocket: class {} }); // never connects
    const d = c.decision("d1");
    d.doc = R.create([{ id: "w", written: true }]);
    d.record = { ...d.record, status: "open" };
    const t = () => /** @type {string} */ (c.draft(d).questions.w.text);
    /** @type {string[]} the text each number of groups on the stack left */
    const texts = [""];
    for (let b = rnd(6) + 1; b > 0; b--) {
      // A burst: a cursor typing, backspacing and deleting forward.
      let at = rnd(t().length + 1);
      for (let k = rnd(6) + 1; k > 0; k--) {
        const op = rnd(3);
        if (op === 0) c.spliceText("d1", "w", at++, 0, "ab"[rnd(2)]);
        else if (op === 1 && at > 0) c.spliceText("d1", "w", --at, 1, "");
        else if (op === 2 && at < t().length) c.spliceText("d1", "w", at, 1, "");
      }
      if (d.undo) d.undo.burst = null; // as after a pause
      texts[d.undo?.undo.length ?? 0] = t();
    }
    let k = d.undo?.undo.length ?? 0;
    const n = k;
    const trace = [];
    // Ben's replica types X, Y and Z, from what it last heard of ana's.
    let ben = R.load(A.save(d.doc));
    let typed = 0;
    for (let s = 0; s < 12; s++) {
      if (rnd(2)) {
        if (rnd(2)) ben = A.merge(ben, d.doc);
        ben = R.spliceText(ben, "w", rnd(ben.drafts["1"].w.text.length + 1), 0, "XYZ"[rnd(3)]);
        typed++;
        d.doc = A.merge(d.doc, ben);
        trace.push("ben");
      }
      const back = rnd(2) === 0;
      const r = back ? await c.undo("d1") : await c.redo("d1");
      trace.push(back ? "undo" : "redo");
      assert.equal(!!r, back ? k > 0 : k < n, `a group to take after ${trace.join(" ")}`);
      if (r) k += back ? -1 : 1;
      assert.equal(t().replace(/[XYZ]/g, ""), texts[k], `texts ${JSON.stringify(texts)} after ${trace.join(" ")}: ${t()}`);
      assert.equal(t().replace(/[ab]/g, "").length, typed, `ben's characters all stay: ${t()}`);
    }
    c.stop();
  }
});

test("characters past U+FFFF (two UTF-16 code units) are undone and redone whole (offline)", async () => {
  const c = new Client({ doc: "p", member: "ana", url: "ws://127.0.0.1:1/sync", WebSocket: class {} }); // never connects
  const d = c.decision("d1");
  d.doc = R.create([{ id: "w", written: true }]);
  d.record = { ...d.record, status: "open" };
  const t = () => c.draft(d).questions.w.text;
  c.spliceText("d1", "w", 0, 0, "👍abc");
  /** @type {any} */ (d.undo).burst = null; // as after a pause
  c.spliceText("d1", "w", 2, 1, ""); // "a", after the 👍
  c.spliceText("d1", "w", 2, 0, "😀");
  const seen = [t()];
  for (const back of [true, false, true, true, false, false]) {
    await (back ? c.undo("d1") : c.redo("d1"));
    seen.push(t());
  }
  assert.deepEqual(seen, ["👍😀bc", "👍abc", "👍😀bc", "👍abc", "", "👍abc", "👍😀bc"]);
  c.stop();
});
