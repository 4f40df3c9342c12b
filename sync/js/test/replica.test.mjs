// The replica's document code alone, without a server.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import * as A from "@automerge/automerge/slim";
import { carryBase, carryOver, choose, create, heads, init, load, readState, respliced, setMark, spliceText, stateAt } from "../src/replica.js";

await init(readFileSync(fileURLToPath(new URL("../node_modules/@automerge/automerge/dist/automerge.wasm", import.meta.url))));

/** theirs with the splice r applied (UTF-16 positions). */
function apply(theirs, r) {
  return r ? theirs.slice(0, r.pos) + r.ins + theirs.slice(r.pos + r.del) : theirs;
}

test("a carried written answer keeps every change of theirs that is not where mine is", () => {
  for (const [base, mine, theirs, want] of [
    ["abc", "aXc", "abc", "aXc"],
    ["abc", "abc", "aYc", "aYc"],
    // one line per writer, as several members writing one answer
    ["1:1\n2:1\n3:1\n", "1:1\n2:2\n3:1\n", "1:5\n2:1\n3:7\n", "1:5\n2:2\n3:7\n"],
    ["hello world", "hello brave world", "HELLO world", "HELLO brave world"],
    ["hello world", "hello world!", "hello there world", "hello there world!"],
    ["abc", "abXc", "abYc", "abYXc"], // two insertions at one point: mine after theirs
    ["abcdef", "aXf", "abcYef", "aXf"], // the same span: mine wins there
    ["abcdef", "abXef", "Zabcdef!", "ZabXef!"],
    ["a😀b", "a😀Xb", "Za😀b", "Za😀Xb"], // positions count UTF-16 units
    ["😀😀😀", "😀X😀", "😀😀😀Y", "😀X😀Y"],
  ]) {
    assert.equal(apply(theirs, respliced(base, mine, theirs)), want, JSON.stringify({ base, mine, theirs }));
  }
});

/** A seeded random integer below n (mulberry32), so a failure replays. */
function seeded(seed) {
  return (n) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let z = Math.imul(seed ^ (seed >>> 15), seed | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) % n;
  };
}

test("changes in places apart merge as if made one after the other (random texts)", () => {
  const rand = seeded(7);
  const letters = Array.from("abcdefghijklmnopqrstuvwxyzé😀\n ");
  const word = (n) => Array.from({ length: n }, () => letters[rand(letters.length)]).join("");
  for (let i = 0; i < 500; i++) {
    const cs = Array.from(word(20 + rand(200)));
    // mine changes one span; theirs changes up to five spans, all at least
    // one character away from mine's
    const mp = rand(cs.length - 4) + 2;
    const md = rand(Math.min(3, cs.length - mp - 2));
    const spans = [];
    for (let k = 0; k < 1 + rand(5); k++) {
      const at = rand(cs.length);
      const del = rand(3);
      if (at + del >= mp - 1 && at <= mp + md + 1) continue;
      if (at + del > cs.length || spans.some((s) => at <= s.at + s.del + 1 && s.at <= at + del + 1)) continue;
      spans.push({ at, del, ins: word(rand(4)) });
    }
    spans.sort((x, y) => y.at - x.at);
    const base = cs.join("");
    const mineIns = word(rand(4));
    const mine = [...cs.slice(0, mp), ...Array.from(mineIns), ...cs.slice(mp + md)].join("");
    let theirs = [...cs];
    let both = [...cs];
    const all = [...spans, { at: mp, del: md, ins: mineIns }].sort((x, y) => y.at - x.at);
    for (const s of spans) theirs.splice(s.at, s.del, ...Array.from(s.ins));
    for (const s of all) both.splice(s.at, s.del, ...Array.from(s.ins));
    theirs = theirs.join("");
    if (mine === base) continue;
    assert.equal(apply(theirs, respliced(base, mine, theirs)), both.join(""), JSON.stringify({ base, mine, theirs }));
  }
});

const SERVER = "5e".repeat(16);

/**
 * doc's values as the server rebases them: one change of its own, with
 * no dependencies, whose message names the clock it covers.
 */
function rebased(doc) {
  const clock = new Map();
  for (const c of A.getChangesMetaSince(doc, [])) clock.set(c.actor, Math.max(clock.get(c.actor) ?? 0, c.seq));
  const message = "rebase\n" + [...clock].map(([a, s]) => `${a}:${s}`).join(",");
  const { generation, ...rest } = A.toJS(doc);
  const fresh = A.change(A.init({ actor: SERVER }), { message }, (d) => {
    Object.assign(d, rest);
    d.generation = new A.Uint(Number(doc.generation));
  });
  return A.save(fresh);
}

test("a draft carried onto a rebased document keeps exactly what the rebase did not cover", () => {
  const questions = [
    { id: "w", written: true },
    { id: "c", options: [{ id: "o1", label: "1" }, { id: "o2", label: "2" }], criteria: [{ id: "k1", label: "1" }, { id: "k2", label: "2" }] },
  ];
  let start = create(questions, SERVER);
  start = setMark(start, "c", "o1", "k1", "partly");
  start = spliceText(start, "w", 0, 0, "x");
  const accepted = heads(start);
  const after = (doc, ...edits) => edits.reduce((d, f) => f(d), doc);
  const cases = [
    {
      name: "an edit in flight that the rebase covered is not made twice; the one after it is carried",
      // ana's first edit reached the server before it rebased; her second did not
      ana: (d) => after(d, (x) => spliceText(x, "w", 1, 0, "a"), (x) => setMark(x, "c", "o2", "k2", "no")),
      inFlight: 1,
      server: (d) => d,
      want: { text: "xa", marks: { "o1/k1": "partly", "o2/k2": "no" } },
    },
    {
      name: "the rebase covered another member's change this replica never received",
      ana: (d) => setMark(d, "c", "o2", "k2", "no"),
      inFlight: 0,
      server: (d) => setMark(d, "c", "o1", "k1", "yes"),
      want: { text: "x", marks: { "o1/k1": "yes", "o2/k2": "no" } },
    },
    {
      name: "the rebased document holds another member's change made since the rebase",
      ana: (d) => spliceText(d, "w", 1, 0, "!"),
      inFlight: 0,
      server: (d) => d,
      since: (d) => setMark(d, "c", "o1", "k1", "no"),
      want: { text: "x!", marks: { "o1/k1": "no" } },
    },
  ];
  for (const c of cases) {
    let ana = load(A.save(start));
    ana = c.ana(ana);
    // The changes the server accepted: the start, ben's (if any), and
    // ana's first inFlight changes.
    let srv = load(A.save(start), "be".repeat(16));
    srv = c.server(srv);
    const sent = A.getChangesSince(ana, accepted).slice(0, c.inFlight);
    if (sent.length) srv = A.applyChanges(srv, sent)[0];
    let next = load(rebased(srv));
    if (c.since) next = c.since(next);
    const got = readState(carryOver(ana, carryBase(ana, accepted, next), next).doc).drafts["1"];
    assert.equal(got.w.text, c.want.text, `${c.name}: text`);
    assert.deepEqual(got.c.marks, c.want.marks, `${c.name}: marks`);
  }
});

test("the state at an earlier revision, read from the changes since, is what a view of it reads (random edits)", () => {
  const rand = seeded(11);
  const letters = Array.from("ab😀\né ");
  const opts = ["o1", "o2", "o3"];
  const questions = [
    { id: "w", written: true },
    { id: "s", options: opts.map((id) => ({ id, label: id })), criteria: [{ id: "k1", label: "1" }, { id: "k2", label: "2" }] },
    { id: "m", multiple: true, options: opts.map((id) => ({ id, label: id })) },
  ];
  const edits = [
    (d) => setMark(d, "s", opts[rand(3)], ["k1", "k2"][rand(2)], [null, "yes", "partly", "no"][rand(4)]),
    (d) => choose(d, "s", opts[rand(3)], rand(3) > 0, false),
    (d) => choose(d, "m", opts[rand(3)], rand(2) > 0, true),
    (d) => {
      const t = Array.from(readState(d).drafts["1"].w.text);
      const at = rand(t.length + 1);
      const del = rand(Math.min(3, t.length - at) + 1);
      const ins = Array.from({ length: rand(4) }, () => letters[rand(letters.length)]).join("");
      // positions in UTF-16 units, as the replica's splices take them
      const pos = t.slice(0, at).join("").length;
      return spliceText(d, "w", pos, t.slice(at, at + del).join("").length, ins);
    },
  ];
  for (let run = 0; run < 60; run++) {
    let doc = create(questions, SERVER);
    /** @type {string[][]} */
    const revisions = [heads(doc)];
    for (let i = 0, n = 1 + rand(12); i < n; i++) {
      doc = edits[rand(edits.length)](doc);
      revisions.push(heads(doc));
    }
    const mine = readState(doc);
    for (const at of revisions) {
      assert.deepEqual(stateAt(doc, at, mine), readState(A.view(doc, at)), `run ${run}`);
    }
  }
});
