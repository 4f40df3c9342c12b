// Requests sent again after a lost connection, against the real Go server
// (test/server): connections cut before the server reads a request, after
// it committed the request and before its reply reaches the client, and
// right after the client took the reply. A request pending when its
// connection is lost is sent again, unchanged, once the next connection is
// welcomed, and the server answers one that had taken effect as it did
// (docs/PROTOCOL.md, "Outcomes of a resent request"); an ask alone fails
// with disconnected. Every outcome the clients report is checked against
// what a fresh client then reads from the server.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { decode, encode } from "@msgpack/msgpack";
import WebSocket from "ws";
import { Client, RefusedError, automerge } from "../src/index.js";
import * as R from "../src/replica.js";
import { DEFINITION, TestServer, docName, eventually } from "./helpers.mjs";

/** @type {TestServer} */
let server;
before(async () => {
  server = new TestServer();
  await server.start();
});
after(async () => {
  await server.close();
});

/** The request kinds whose frames may be cut around. */
const REQUESTS = new Set(["question:edit", "question:submit", "question:reopen", "question:why", "question:option", "question:explore"]);

/**
 * Where a connection is cut around one request frame: before the server
 * reads it (the frame is dropped and the socket closed instead), when its
 * reply arrives (the server committed it; the client never sees the
 * reply), or right after the client took the reply.
 * @typedef {"before"|"reply"|"after"} Cut
 */

/**
 * What a cutting WebSocket records and obeys: plan decides, for each
 * request frame sent (resent ones too), where to cut around it, if at all.
 * @typedef {object} Wire
 * @property {(m: any) => Cut|null} plan
 * @property {any[]} sent every data frame the client sent (or tried to), decoded
 * @property {{at: Cut, kind: string, rid: string}[]} cuts
 * @property {any[]} repeated the replies with repeated: true the client took
 * @property {boolean} blocked while set, dials go nowhere (the client redials with its backoff)
 * @property {(() => void)[]} waiters called at the next cut
 */

/**
 * A WebSocket constructor for one client that cuts its connections where
 * wire.plan says.
 * @param {Wire} wire
 */
function cutting(wire) {
  return class extends WebSocket {
    /** @param {[string, any]} args */
    constructor(...args) {
      // A refused dial: port 1 has no listener on this machine.
      super(wire.blocked ? "ws://127.0.0.1:1/" : args[0], args[1]);
      /** @type {Map<string, Cut>} where to cut once the reply of rid arrives */
      this.cutAt = new Map();
      this.gone = false;
      /** @type {((ev: any) => void)|null} the client's handler */
      this.handler = null;
      super.onmessage = (/** @type {any} */ ev) => this.arrive(ev);
    }

    set onmessage(fn) {
      this.handler = fn;
    }

    get onmessage() {
      return this.handler;
    }

    /** @param {any} ev */
    arrive(ev) {
      if (this.gone) return; // frames behind the cut never reach the client
      const m = decode(new Uint8Array(ev.data));
      const at = m && typeof m.rid === "string" ? this.cutAt.get(m.rid) : undefined;
      if (at === "reply") return this.cut(at, m);
      if (m?.repeated === true || m?.results?.some((/** @type {any} */ r) => r.repeated)) wire.repeated.push(m);
      this.handler?.(ev);
      if (at === "after") this.cut(at, m);
    }

    /** @param {any} data */
    send(data) {
      if (this.gone) return;
      const m = decode(data);
      wire.sent.push(m);
      const at = REQUESTS.has(m?.kind) ? wire.plan(m) : null;
      if (at === "before") return this.cut(at, m);
      if (at) this.cutAt.set(m.rid, at);
      super.send(data);
    }

    /**
     * @param {Cut} at
     * @param {any} m
     */
    cut(at, m) {
      this.gone = true;
      wire.cuts.push({ at, kind: m.kind, rid: m.rid });
      this.terminate();
      for (const fn of wire.waiters.splice(0)) fn();
    }
  };
}

/**
 * A client of doc for member whose connections are cut where plan says.
 * It redials within 10 to 200 ms.
 * @param {string} doc
 * @param {string} member
 * @param {(m: any) => Cut|null} plan
 */
async function cutClient(doc, member, plan) {
  /** @type {Wire} */
  const wire = { plan, sent: [], cuts: [], repeated: [], blocked: false, waiters: [] };
  const client = await server.client(doc, member, { WebSocket: cutting(wire), minBackoff: 10, maxBackoff: 200 });
  return { client, wire };
}

/**
 * Resolves at wire's next cut.
 * @param {Wire} wire
 */
function nextCut(wire) {
  return new Promise((resolve) => wire.waiters.push(() => resolve(undefined)));
}

/** A deterministic PRNG (mulberry32) in [0, 1). */
function prng(/** @type {number} */ seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The frames of kind sent after the first n.
 * @param {Wire} wire
 * @param {number} n
 * @param {string} kind
 */
function sentSince(wire, n, kind) {
  return wire.sent.slice(n).filter((m) => m.kind === kind);
}

/**
 * The written answers ("why") of every draft a decision's document holds.
 * @param {any} doc
 */
function drafts(doc) {
  return Object.values(R.readState(doc).drafts).map((qs) => qs.why?.text ?? "");
}

test("an edit committed before its reply was lost, then saved by another member, is accepted when the client reconnects", async () => {
  const doc = docName();
  const setup = await server.client(doc, "ana");
  const [{ id }] = await setup.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
  setup.stop();
  // Ana loses the reply to her first edit: the server has committed it.
  let armed = true;
  const { client: ana, wire } = await cutClient(doc, "ana", (m) => {
    if (!armed || m.kind !== "question:edit") return null;
    armed = false;
    return "reply";
  });
  const ben = await server.client(doc, "ben");
  try {
    const words = "The team runs Postgres already.";
    const cut = nextCut(wire);
    wire.blocked = true; // she stays away until Ben has saved
    ana.edit(id, (d) => R.choose(R.setText(d, "why", words), "db", "pg", true, false));
    const flushed = ana.flush([id]);
    await cut;
    assert.deepEqual(wire.cuts.map((c) => c.at + " " + c.kind), ["reply question:edit"]);

    // Ben sees her words (the server committed them) and saves them.
    await ben.until(() => ben.state(id)?.questions.why?.text === words, 10000, "ben to see ana's words");
    await ben.save([id]);
    const saved = ben.state(id)?.record;
    assert.equal(saved?.status, "settled");
    assert.equal(saved?.answer?.by, "ben");
    assert.equal(saved?.answer?.answers.find((a) => a.question === "why")?.text, words);

    // Ana reconnects: her flush resolves as accepted, not resolved.
    wire.blocked = false;
    await flushed;
    const st = ana.state(id);
    assert.equal(st?.status, "settled");
    assert.equal(st?.questions.why?.text, words);
    assert.equal(st?.unsent, false);
    assert.ok(st?.note?.tone !== "error", `ana's note: ${st?.note?.text}`);
    assert.equal(ana.conn, "open");
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("a save claims the revision shown when it was called, not others' changes that arrive while its edits are sent", async () => {
  const doc = docName();
  const setup = await server.client(doc, "ana");
  const [{ id }] = await setup.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
  setup.stop();
  // Ana's next edit never reaches the server, and she stays away.
  let armed = true;
  const { client: ana, wire } = await cutClient(doc, "ana", (m) => {
    if (!armed || m.kind !== "question:edit") return null;
    armed = false;
    return "before";
  });
  const ben = await server.client(doc, "ben");
  try {
    const cut = nextCut(wire);
    wire.blocked = true;
    ana.edit(id, (d) => R.choose(R.setText(d, "why", "Passkeys."), "db", "pg", true, false));
    await cut;
    const saving = ana.save([id]);
    saving.catch(() => {}); // judged below
    // Ben changes the answer meanwhile; Ana never sees it before she saves.
    ben.edit(id, (d) => R.setText(d, "why", "Email links."));
    await ben.flush([id]);
    wire.blocked = false;
    await assert.rejects(saving, (/** @type {any} */ err) => err instanceof RefusedError && err.reason === "stale");
    const rec = ana.state(id)?.record;
    assert.equal(rec?.status, "open", "a save of a draft Ana never saw must not settle it");
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("a why resent after its reply was lost leaves the newer why another member set", async () => {
  const doc = docName();
  const setup = await server.client(doc, "ben");
  const [{ id }] = await setup.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
  setup.edit(id, (d) => R.choose(R.setText(d, "why", "Postgres."), "db", "pg", true, false));
  await setup.save([id]);
  setup.stop();
  let armed = true;
  const { client: ana, wire } = await cutClient(doc, "ana", (m) => {
    if (!armed || m.kind !== "question:why") return null;
    armed = false;
    return "reply";
  });
  const ben = await server.client(doc, "ben");
  try {
    await ana.until(() => ana.state(id)?.record?.status === "settled", 10000, "ana to see the saved answer");
    const cut = nextCut(wire);
    wire.blocked = true;
    const setting = ana.why(id, "It is the cheapest.");
    setting.catch(() => {}); // judged below
    await cut;
    await ben.until(() => ben.state(id)?.record?.why === "It is the cheapest.", 10000, "ben to see ana's why");
    await ben.why(id, "Phones need it.");
    wire.blocked = false;
    await assert.rejects(setting, (/** @type {any} */ err) => err instanceof RefusedError && err.reason === "stale");
    for (const c of [ana, ben]) {
      await c.until(() => c.state(id)?.record?.why === "Phones need it.", 10000, "ben's why to stay");
    }
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("a save, a reopen and a why whose replies were lost resolve as they took effect, a reopen never read is stale once saved over, an ask fails", async () => {
  const doc = docName();
  const setup = await server.client(doc, "ana");
  const [{ id }] = await setup.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
  setup.stop();
  /** @type {Map<string, Cut>} the next cut around each kind's frame */
  const next = new Map();
  const { client: ana, wire } = await cutClient(doc, "ana", (m) => {
    const at = next.get(m.kind) ?? null;
    next.delete(m.kind);
    return at;
  });
  const ben = await server.client(doc, "ben");
  try {
    ana.edit(id, (d) => R.choose(R.setText(d, "why", "Cheap to run."), "db", "pg", true, false));
    await ana.flush([id]);

    // The save's reply is lost, and Ben reopens the decision before Ana is
    // back: her save had taken effect, and is answered so.
    next.set("question:submit", "reply");
    wire.blocked = true;
    const cut = nextCut(wire);
    const saving = ana.save([id]);
    await cut;
    await ben.until(() => ben.state(id)?.status === "settled", 10000, "ben to see ana's save");
    await ben.reopen(id);
    const repeats = wire.repeated.length;
    wire.blocked = false;
    await saving;
    const submits = wire.sent.filter((m) => m.kind === "question:submit");
    assert.equal(submits.length, 2, "the save went out twice");
    assert.deepEqual(submits[1], submits[0], "unchanged");
    assert.equal(wire.repeated.length, repeats + 1);
    assert.equal(wire.repeated.at(-1).results[0].repeated, true);
    await ana.until(() => ana.state(id)?.status === "open", 10000, "ana to see ben's reopen");

    // Ben saves again; Ana reopens (generation 2) and loses the reply; Ben
    // saves the fresh draft and Ana's resent reopen is known as hers.
    ben.edit(id, (d) => R.choose(R.setText(d, "why", "Second look."), "db", "sq", true, false));
    await ben.save([id]);
    await ana.until(() => ana.state(id)?.status === "settled", 10000, "ana to see ben's save");
    const shown = ana.state(id)?.record.generation;
    next.set("question:reopen", "reply");
    const cut2 = nextCut(wire);
    wire.blocked = true;
    const reopening = ana.reopen(id);
    await cut2;
    await ben.until(() => ben.state(id)?.status === "open", 10000, "ben to see ana's reopen");
    ben.edit(id, (d) => R.choose(R.setText(d, "why", "Third look."), "db", "pg", true, false));
    await ben.save([id]);
    wire.blocked = false;
    await reopening;
    const reopens = wire.sent.filter((m) => m.kind === "question:reopen");
    assert.equal(reopens.length, 2);
    assert.equal(reopens[0].generation, shown);
    assert.deepEqual(reopens[1], reopens[0]);
    assert.equal(wire.repeated.at(-1).kind, "question:reopen");

    await ana.until(() => ana.state(id)?.status === "settled", 10000, "ana to see the third save");

    // Ana's why loses its reply and Ben reopens before she is back: the
    // why, now in the history, is known as hers.
    next.set("question:why", "reply");
    const cut3 = nextCut(wire);
    wire.blocked = true;
    const why = ana.why(id, "Postgres won on cost.");
    await cut3;
    await ben.reopen(id);
    wire.blocked = false;
    await why;
    const whys = wire.sent.filter((m) => m.kind === "question:why");
    assert.equal(whys.length, 2);
    assert.equal(whys[0].generation, shown + 1);
    assert.deepEqual(whys[1], whys[0]);
    assert.equal(wire.repeated.at(-1).kind, "question:why");
    ben.edit(id, (d) => R.choose(R.setText(d, "why", "Fourth look."), "db", "pg", true, false));
    await ben.save([id]);
    await ana.until(() => ana.state(id)?.status === "settled", 10000, "ana to see the fourth save");
    assert.equal(ana.state(id)?.record.history?.find((h) => h.generation === shown + 1)?.why, "Postgres won on cost.");

    // A reopen the server never read, sent again after Ben reopened and
    // saved that answer over, did not take effect: it is refused as stale.
    const shownNow = ana.state(id)?.record.generation;
    next.set("question:reopen", "before");
    const cut4 = nextCut(wire);
    wire.blocked = true;
    const late = ana.reopen(id);
    await cut4;
    await ben.reopen(id);
    ben.edit(id, (d) => R.choose(R.setText(d, "why", "Fifth look."), "db", "sq", true, false));
    await ben.save([id]);
    wire.blocked = false;
    await assert.rejects(late, (e) => e instanceof RefusedError && e.reason === "stale");
    const lates = wire.sent.filter((m) => m.kind === "question:reopen").slice(2);
    assert.equal(lates.length, 2);
    assert.equal(lates[0].generation, shownNow);
    assert.deepEqual(lates[1], lates[0]);
    assert.equal(ana.state(id)?.status, "settled");

    // An ask whose frame never reached the server fails, and is not sent again.
    next.set("question:explore", "before");
    const cut5 = nextCut(wire);
    wire.blocked = true;
    const asking = ana.explore(id, { member: "ben" });
    await cut5;
    wire.blocked = false;
    await assert.rejects(asking, (e) => e instanceof RefusedError && e.reason === "disconnected");
    await ana.ready();
    assert.equal(wire.sent.filter((m) => m.kind === "question:explore").length, 1);
  } finally {
    ana.stop();
    ben.stop();
  }
});

/**
 * @typedef {object} Op one request a member made, and what the client reported
 * @property {string} member
 * @property {number} k its number among the member's
 * @property {"edit"|"save"|"reopen"|"why"|"option"} what
 * @property {string} id the decision
 * @property {number} start the clock when it began
 * @property {number} end the clock when its outcome came
 * @property {boolean} ok
 * @property {string} reason the refusal's, "" when ok
 * @property {string} text the edit's token, the why, or the option's label
 * @property {string} heads a save's claimed revision ("" when none was sent)
 * @property {number} generation a reopen's or why's generation (0: none sent)
 * @property {boolean} sent whether a frame went out for it
 */

/**
 * Operation weights by the status the member's client shows: mostly what
 * that status allows, sometimes what it does not (refused by the client,
 * or by the server when the client's view is behind).
 */
const WEIGHTS = /** @type {Record<string, [Op["what"], number][]>} */ ({
  open: [["edit", 6], ["save", 3], ["option", 1], ["reopen", 0.5], ["why", 0.5]],
  settled: [["reopen", 3], ["why", 3], ["edit", 1], ["save", 1], ["option", 0.5]],
});

/**
 * @param {() => number} rng
 * @param {string} status
 * @returns {Op["what"]}
 */
function pickOp(rng, status) {
  const ws = WEIGHTS[status] || WEIGHTS.open;
  let r = rng() * ws.reduce((n, [, w]) => n + w, 0);
  for (const [what, w] of ws) if ((r -= w) < 0) return what;
  return "edit";
}

/** @param {string[]|string|undefined} h */
function headsKey(h) {
  return (Array.isArray(h) ? h : String(h || "").split(",")).filter(Boolean).sort().join(",");
}

/**
 * Runs n random requests of one member, one after the other, each once
 * the client is connected, and logs what the client reported.
 * @param {import("../src/index.js").Client} c
 * @param {Wire} wire
 * @param {() => number} rng
 * @param {string[]} ids
 * @param {number} n
 * @param {Op[]} log
 * @param {{t: number}} clock
 */
async function member(c, wire, rng, ids, n, log, clock) {
  for (let k = 0; k < n; k++) {
    await c.until(() => c.welcomed, 20000, "the connection");
    const id = ids[Math.floor(rng() * ids.length)];
    /** @type {Op} */
    const op = { member: c.member, k, what: pickOp(rng, c.state(id)?.status || "open"), id, start: ++clock.t, end: 0, ok: false, reason: "", text: "", heads: "", generation: 0, sent: false };
    const mark = wire.sent.length;
    try {
      switch (op.what) {
        case "edit": {
          // One batch: a token at the end of the written answer, and a choice.
          op.text = `${c.member}#${k};`;
          const opt = rng() < 0.5 ? "pg" : "sq";
          c.edit(id, (d) => R.choose(R.spliceText(d, "why", R.currentDraft(d, "why")?.text.length ?? 0, 0, " " + op.text), "db", opt, true, false));
          await c.flush([id]);
          break;
        }
        case "save":
          await c.save([id]);
          break;
        case "reopen":
          await c.reopen(id);
          break;
        case "why":
          op.text = `Because ${c.member} ${k} said so.`;
          await c.why(id, op.text);
          break;
        case "option":
          op.text = `Option ${c.member} ${k}`;
          await c.appendOption(id, "db", op.text);
          break;
      }
      op.ok = true;
    } catch (e) {
      if (!(e instanceof RefusedError)) throw e;
      op.reason = e.reason;
    }
    op.end = ++clock.t;
    const kind = { edit: "question:edit", save: "question:submit", reopen: "question:reopen", why: "question:why", option: "question:option" }[op.what];
    const frames = sentSince(wire, mark, kind);
    op.sent = frames.length > 0;
    if (op.what === "save" && frames.length) op.heads = headsKey(frames[0].items[0].heads);
    if ((op.what === "reopen" || op.what === "why") && frames.length) op.generation = Number(frames[0].generation || 0);
    log.push(op);
  }
}

/**
 * Checks every reported outcome against the server's records and
 * documents: nothing reported refused took effect, nothing reported ok
 * did not. Returns the problems found.
 * @param {Op[]} log
 * @param {any[]} records as a fresh client holds them
 * @param {Map<string, any>} docs each decision's document, as a fresh client holds it
 */
function verify(log, records, docs) {
  /** @type {string[]} */
  const bad = [];
  const say = (/** @type {Op} */ op, /** @type {string} */ what) =>
    bad.push(`${op.member} #${op.k} ${op.what} ${op.id}${op.text ? ` "${op.text}"` : ""}: reported ${op.ok ? "ok" : op.reason}, ${what}`);
  const byId = new Map(records.map((r) => [r.id, r]));
  for (const op of log) if (op.reason === "timeout") say(op, "no outcome in time");

  // Edits: the token is in a draft the server holds (every generation's
  // is kept) or a saved answer exactly when the edit was accepted.
  for (const op of log.filter((o) => o.what === "edit")) {
    const rec = byId.get(op.id);
    const texts = [...drafts(docs.get(op.id)), ...[rec.answer, ...(rec.history || [])].filter(Boolean).flatMap((a) => a.answers.map((/** @type {any} */ x) => x.text || ""))];
    const held = texts.some((t) => t.includes(op.text));
    if (held !== op.ok) say(op, held ? "yet the server holds it" : "yet the server does not hold it");
  }

  // Saves: the answers saved, each by its member and claimed revision, are
  // those of the saves reported ok.
  /** @type {Map<string, number>} */
  const answers = new Map();
  for (const rec of records) {
    for (const a of [rec.answer, ...(rec.history || [])].filter(Boolean)) {
      const key = `${rec.id} ${a.by} ${headsKey(a.heads)}`;
      answers.set(key, (answers.get(key) || 0) + 1);
    }
  }
  const okSaves = new Set(log.filter((o) => o.what === "save" && o.ok).map((o) => `${o.id} ${o.member} ${o.heads}`));
  for (const op of log.filter((o) => o.what === "save")) {
    const key = `${op.id} ${op.member} ${op.heads}`;
    if (op.ok && !answers.has(key)) say(op, "yet no answer of that revision by the member was saved");
    if (!op.ok && op.sent && answers.has(key) && !okSaves.has(key)) say(op, "yet the server saved it");
  }
  for (const [key, n] of answers) {
    if (n > 1) bad.push(`answer ${key} saved ${n} times`);
    if (!okSaves.has(key)) bad.push(`answer ${key} saved, by no save reported ok`);
  }

  // Reopens: each member's reopens in the history are those reported ok,
  // of the generation each named.
  for (const rec of records) {
    for (const m of ["ana", "ben"]) {
      const entries = (rec.history || []).filter((/** @type {any} */ h) => h.reopenedBy === m);
      const ok = log.filter((o) => o.what === "reopen" && o.id === rec.id && o.member === m && o.ok);
      if (entries.length !== ok.length) bad.push(`${rec.id}: ${m} reopened ${entries.length} times, ${ok.length} reported ok`);
      for (const op of log.filter((o) => o.what === "reopen" && o.id === rec.id && o.member === m && o.generation)) {
        const held = entries.some((/** @type {any} */ h) => h.generation === op.generation);
        const claimed = ok.some((o) => o.generation === op.generation);
        if (op.ok && !held) say(op, `yet generation ${op.generation} is not reopened by ${m}`);
        if (!op.ok && held && !claimed) say(op, `yet generation ${op.generation} was reopened by ${m}`);
      }
    }
  }

  // Whys: every why the server holds was reported ok; one reported ok is
  // held unless another why on the decision may have replaced it.
  /** @type {{id: string, text: string, by: string}[]} */
  const whys = [];
  for (const rec of records) {
    if (rec.why) whys.push({ id: rec.id, text: rec.why, by: rec.whyBy });
    for (const h of rec.history || []) if (h.why) whys.push({ id: rec.id, text: h.why, by: h.whyBy });
  }
  for (const w of whys) {
    if (!log.some((o) => o.what === "why" && o.ok && o.id === w.id && o.text === w.text && o.member === w.by)) bad.push(`why "${w.text}" by ${w.by} held, by no why reported ok`);
  }
  for (const op of log.filter((o) => o.what === "why")) {
    const held = whys.some((w) => w.id === op.id && w.text === op.text);
    if (!op.ok && held) say(op, "yet the server holds it");
    const replaced = log.some((o) => o !== op && o.what === "why" && o.id === op.id && o.ok && o.end > op.start);
    if (op.ok && !held && !replaced) say(op, "yet the server does not hold it");
  }

  // Options: the label is on the question exactly when the append was ok.
  for (const op of log.filter((o) => o.what === "option")) {
    const q = byId.get(op.id).definition.questions.find((/** @type {any} */ x) => x.id === "db");
    const held = (q.options || []).some((/** @type {any} */ o) => o.label === op.text);
    if (held !== op.ok) say(op, held ? "yet the option is there" : "yet the option is not there");
  }
  return bad;
}

test("random requests of two members, cut before the server reads them, before their replies and after: every outcome reported is what the server holds", async (t) => {
  const seed = Number(process.env.ACCORD_SEED) || (Date.now() ^ (process.pid << 8)) >>> 0;
  t.diagnostic(`seed ${seed} (ACCORD_SEED=${seed} repeats the requests and the cuts)`);
  const rounds = 3;
  const perMember = 30;
  /** @type {Record<Cut, number>} */
  const cuts = { before: 0, reply: 0, after: 0 };
  let repeated = 0;
  /** @type {Record<string, number>} outcomes by request and reason */
  const tally = {};
  for (let round = 0; round < rounds; round++) {
    const doc = docName();
    const setup = await server.client(doc, "ana");
    const recs = await setup.create([
      { key: "one", origin: "workflow", definition: DEFINITION },
      { key: "two", origin: "workflow", definition: DEFINITION },
    ]);
    setup.stop();
    const ids = recs.map((r) => r.id);
    /** @param {string} who */
    const planner = (who) => {
      const rng = prng(seed + round * 7919 + (who === "ana" ? 1 : 2));
      // Edits are the most frequent frames: the other requests are cut more often.
      return (/** @type {any} */ m) => (rng() < (m.kind === "question:edit" ? 0.2 : 0.4) ? /** @type {Cut[]} */ (["before", "reply", "after"])[Math.floor(rng() * 3)] : null);
    };
    const ana = await cutClient(doc, "ana", planner("ana"));
    const ben = await cutClient(doc, "ben", planner("ben"));
    /** @type {Op[]} */
    const log = [];
    const clock = { t: 0 };
    try {
      await Promise.all([
        member(ana.client, ana.wire, prng(seed + round * 7919 + 11), ids, perMember, log, clock),
        member(ben.client, ben.wire, prng(seed + round * 7919 + 12), ids, perMember, log, clock),
      ]);
    } finally {
      ana.client.stop();
      ben.client.stop();
    }
    for (const w of [ana.wire, ben.wire]) {
      for (const c of w.cuts) cuts[c.at]++;
      repeated += w.repeated.length;
    }
    for (const o of log) {
      const k = `${o.what} ${o.ok ? "ok" : o.reason}${o.sent ? "" : " (not sent)"}`;
      tally[k] = (tally[k] || 0) + 1;
    }

    // What the server holds, as a fresh client reads it.
    const rita = await server.client(doc, "rita");
    try {
      const docs = new Map(ids.map((id) => [id, rita.decisions.get(id)?.doc]));
      const bad = verify(log, rita.list(), docs);
      const summary = log.map((o) => `${o.member}#${o.k} ${o.what} ${o.id.slice(-4)} ${o.ok ? "ok" : o.reason}`).join("; ");
      assert.deepEqual(bad, [], `seed ${seed}, round ${round}: ${bad.length} outcomes differ from the server's state\n${summary}`);
    } finally {
      rita.stop();
    }
  }
  t.diagnostic(`cuts before the server read ${cuts.before}, before the reply ${cuts.reply}, after it ${cuts.after}; ${repeated} replies repeated`);
  t.diagnostic(`outcomes: ${Object.entries(tally).sort().map(([k, n]) => `${k} ${n}`).join(", ")}`);
  for (const at of /** @type {Cut[]} */ (["before", "reply", "after"])) assert.ok(cuts[at] > 0, `seed ${seed}: no cut ${at}`);
});

/**
 * A WebSocket stand-in that opens at once, records every frame the client
 * sends (decoded) and hands the test the latest socket, to deliver frames
 * (frame) or close it (socket().close()).
 */
function fakeSockets() {
  /** @type {any[]} */
  const sent = [];
  /** @type {any} */
  let sock = null;
  class Fake {
    /** @param {string} _url */
    constructor(_url) {
      sock = this;
      this.readyState = 0;
      /** @type {any} */ this.onopen = null;
      /** @type {any} */ this.onmessage = null;
      /** @type {any} */ this.onclose = null;
      /** @type {any} */ this.onerror = null;
      queueMicrotask(() => {
        this.readyState = 1;
        this.onopen?.();
      });
    }

    /** @param {Uint8Array} data */
    send(data) {
      sent.push(decode(data));
    }

    close() {
      this.readyState = 3;
      this.onclose?.({ code: 1000 });
    }
  }
  return { sent, Fake, socket: () => sock, frame: (/** @type {any} */ m) => sock.onmessage({ data: encode(m) }) };
}

test("an edit answered ok with repeated is accepted like any other", async () => {
  const { sent, Fake, socket, frame } = fakeSockets();
  const c = new Client({ doc: "d", member: "ana", url: "ws://fake/sync", WebSocket: Fake });
  c.start();
  try {
    await c.until(() => sent.some((m) => m.kind === "hello"), 5000, "the hello");
    const record = { id: "q1", status: "open", generation: 1, definition: { questions: [{ id: "why", question: "Why?", response: "text" }] } };
    frame({ kind: "welcome", member: "ana", write: true, records: [record] });
    const doc = R.create([{ id: "why", written: true }]);
    frame({ kind: "question:doc", id: "q1", doc: automerge.save(doc), heads: R.heads(doc) });
    await c.ready(5000);
    c.setText("q1", "why", "Sent before the connection dropped.");
    const edit = sent.find((m) => m.kind === "question:edit");
    assert.ok(edit, "the edit went out");
    const flushed = c.flush(["q1"]);
    frame({ kind: "question:edit", rid: edit.rid, id: "q1", ok: true, repeated: true, heads: R.heads(c.decisions.get("q1")?.doc) });
    await flushed;
    const st = c.state("q1");
    assert.equal(st?.unsent, false);
    assert.equal(st?.note, null);
    assert.equal(st?.questions.why?.text, "Sent before the connection dropped.");
  } finally {
    c.stop();
  }
});

test("a resent request refused as unavailable is sent again, and settles with the repeat's outcome", async () => {
  const { sent, Fake, socket, frame } = fakeSockets();
  const welcome = () => frame({ kind: "welcome", member: "ana", write: true, records: [record] });
  const record = { id: "q1", status: "open", generation: 1, definition: { questions: [{ id: "why", question: "Why?", response: "text" }] } };
  const c = new Client({ doc: "d", member: "ana", url: "ws://fake/sync", WebSocket: Fake, minBackoff: 5, maxBackoff: 20 });
  c.start();
  try {
    await eventually(() => sent.some((m) => m.kind === "hello"), "the hello");
    welcome();
    const doc = R.create([{ id: "why", written: true }]);
    frame({ kind: "question:doc", id: "q1", doc: automerge.save(doc), heads: R.heads(doc) });
    await c.ready(5000);
    const discarded = c.discard("q1");
    await eventually(() => sent.some((m) => m.kind === "question:discard"), "the discard");
    // The connection drops before the reply; the next one is welcomed and
    // the discard goes out again, unchanged.
    const first = sent.length;
    socket().close();
    await eventually(() => sent.slice(first).some((m) => m.kind === "hello"), "the redial's hello");
    welcome();
    await eventually(() => sent.slice(first).some((m) => m.kind === "question:discard"), "the resent discard");
    const resent = sent.slice(first).find((m) => m.kind === "question:discard");
    // Its commit fails (the first send's write, landing late, fenced it).
    const refusedAt = sent.length;
    frame({ kind: "question:discard", rid: resent.rid, id: "q1", ok: false, reason: "unavailable", message: "the change could not be saved" });
    // Sending is no change of the client's state: poll for it.
    await eventually(() => sent.slice(refusedAt).some((m) => m.kind === "question:discard"), "the discard sent once more");
    const again = sent.slice(refusedAt).find((m) => m.kind === "question:discard");
    assert.deepEqual(again, resent, "the request went out again unchanged");
    frame({ kind: "question:discard", rid: again.rid, id: "q1", ok: true, repeated: true, record: { ...record, status: "discarded", discardedBy: "ana" } });
    await discarded;
    assert.equal(c.state("q1")?.status, "discarded");
  } finally {
    c.stop();
  }
});
