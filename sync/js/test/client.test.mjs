// The package against the real Go server (test/server), over real sockets.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import "fake-indexeddb/auto";
import { decode } from "@msgpack/msgpack";
import WebSocket from "ws";
import { Client, IndexedDBStorage, MemoryStorage, RefusedError, StorageError, automerge } from "../src/index.js";
import { warmUp } from "../src/replica.js";
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

/** Creates one decision in a fresh document; returns [doc, id]. */
async function fresh() {
  const doc = docName();
  const ana = await server.client(doc, "ana");
  const [rec] = await ana.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
  ana.stop();
  return [doc, rec.id];
}

/** Rejects with a RefusedError whose reason is want. */
async function refused(p, want) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof RefusedError, `not a RefusedError: ${e}`);
    assert.equal(e.reason, want, e.message);
    return true;
  });
}

test("edits reach the other member and are ready when each call returns", async () => {
  const [doc, id] = await fresh();
  const ana = await server.client(doc, "ana");
  const ben = await server.client(doc, "ben");
  try {
    assert.deepEqual(ana.list().map((r) => r.id), [id]);
    const st = await ana.open(id);
    assert.equal(st.status, "open");
    ana.setText(id, "why", "It is cheap to run.");
    ana.setMark(id, "db", "pg", "cost", "yes");
    ana.choose(id, "db", "pg", true);
    // ready: the local state shows every edit as soon as the call returns
    let mine = ana.state(id);
    assert.equal(mine.questions.why.text, "It is cheap to run.");
    assert.equal(mine.questions.db.marks["pg/cost"], "yes");
    assert.deepEqual(mine.questions.db.choices, ["pg"]);
    assert.equal(mine.edited, true);
    await eventually(() => ben.state(id)?.questions.why?.text === "It is cheap to run." && ben.state(id).questions.db.marks["pg/cost"] === "yes", "ben to see ana's edits");

    const opt = await ana.appendOption(id, "db", "MySQL");
    ana.setMark(id, "db", opt.id, "ops", "partly"); // marking the new option's cells right away works
    await ana.save([id]);
    assert.equal(ana.state(id).status, "settled");
    await ana.why(id, "Postgres is what the team runs already.");
    assert.equal(ana.state(id).record.why, "Postgres is what the team runs already.");

    const before = ana.state(id).generation;
    await ana.reopen(id);
    mine = ana.state(id);
    assert.equal(mine.status, "open");
    assert.ok(mine.generation > before, "reopen resolves once the fresh draft is here");
    ana.setText(id, "why", "Second thoughts.");
    ana.choose(id, "db", "sq", true);
    await ana.save([id]);
    await eventually(() => ben.state(id)?.status === "settled" && ben.state(id).questions.why.text === "Second thoughts.", "ben to see the second save");
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("refusals are typed errors carrying the protocol's reason and change nothing", async () => {
  const [doc, id] = await fresh();
  const ana = await server.client(doc, "ana");
  const rita = await server.client(doc, "rita");
  try {
    await refused(ana.save([id]), "invalid"); // nothing answered yet
    assert.equal(ana.state(id).status, "open");
    await refused(ana.appendOption(id, "db", "postgres"), "duplicate"); // labels compare without case
    await refused(ana.why(id, "Too early."), "not_settled");
    assert.throws(() => rita.setText(id, "why", "a reader"), (e) => e instanceof RefusedError && e.reason === "forbidden");
    assert.equal(rita.state(id).questions.why.text, "");
    await refused(rita.reopen(id), "forbidden");
    await ana.discard(id);
    assert.throws(() => ana.setText(id, "why", "too late"), (e) => e instanceof RefusedError && e.reason === "resolved");
    await refused(ana.reopen(id), "resolved");
    await refused(ana.save([id]), "resolved");
  } finally {
    ana.stop();
    rita.stop();
  }
});

test("a draft made offline survives the client and a server restart, then reaches the other member and saves", async () => {
  const [doc, id] = await fresh();
  const storage = new IndexedDBStorage({ name: `drafts-${doc}` });
  const problems = [];
  const opts = { storage, onStorageError: (/** @type {any} */ e) => problems.push(e) };
  const ana = await server.client(doc, "ana", opts);
  ana.setText(id, "why", "Before going offline. ");
  await ana.flush();

  await server.stop(); // offline
  await eventually(() => !ana.welcomed, "the client to notice");
  ana.setText(id, "why", "Before going offline. Typed offline.");
  ana.setMark(id, "db", "sq", "ops", "no");
  ana.choose(id, "db", "sq", true);
  ana.stop(); // the tab closes; what was edited last is written
  await ana.storing;

  // Opened again while the server is still down: the draft is there at once.
  const again = await server.client(doc, "ana", { ...opts, background: true });
  try {
    const st = again.state(id);
    assert.ok(st, "the decision is restored before any connection");
    assert.equal(st.questions.why.text, "Before going offline. Typed offline.");
    assert.equal(st.questions.db.marks["sq/ops"], "no");
    assert.equal(st.edited, true);
    assert.equal(st.unsent, true);

    await server.start(); // the server comes back on the same address and data
    await again.ready();
    await again.flush([id]);
    const ben = await server.client(doc, "ben");
    try {
      const seen = ben.state(id);
      assert.equal(seen.questions.why.text, "Before going offline. Typed offline.");
      assert.equal(seen.questions.db.marks["sq/ops"], "no");
      assert.deepEqual(seen.questions.db.choices, ["sq"]);
    } finally {
      ben.stop();
    }
    await again.save([id]);
    assert.equal(again.state(id).status, "settled");
    assert.deepEqual(problems, []);
  } finally {
    again.stop();
  }
});

test("an offline draft met by a rebase on return is carried onto the rebased history, reaches the other member and saves", async () => {
  const [doc, id] = await fresh();
  const storage = new MemoryStorage();
  const ana = await server.client(doc, "ana", { storage });
  const ben = await server.client(doc, "ben");
  try {
    ana.setText(id, "why", "Accepted before. ");
    await ana.flush();
    await ana.flushStorage();
    ana.stop();

    // Offline, ana drafts; meanwhile ben's churn makes the server rebase
    // the decision (a history of over a thousand overwritten marks).
    const offline = new Client({ doc, member: "ana", url: `${server.url}?doc=${doc}`, storage }); // never connects
    await offline.restore();
    offline.setText(id, "why", "Accepted before. Typed offline.");
    offline.setMark(id, "db", "sq", "ops", "no");
    offline.choose(id, "db", "sq", true);
    await offline.flushStorage();
    for (let i = 0; i < 1200; i++) ben.setMark(id, "db", "pg", "cost", i % 2 ? "yes" : "partly");
    await ben.flush();
    await eventually(() => automerge.getAllChanges(ben.decisions.get(id).doc).length < 100, "ben to hold the rebased history");

    const back = await server.client(doc, "ana", { storage });
    try {
      await back.flush([id]);
      const st = back.state(id);
      assert.equal(st.questions.why.text, "Accepted before. Typed offline.");
      assert.equal(st.questions.db.marks["sq/ops"], "no");
      assert.deepEqual(st.questions.db.choices, ["sq"]);
      assert.equal(st.questions.db.marks["pg/cost"], "yes", "ben's last mark stays");
      assert.ok(automerge.getAllChanges(back.decisions.get(id).doc).length < 100, "ana's replica holds the rebased history, not the old one merged in");
      await eventually(() => ben.state(id).questions.why.text === "Accepted before. Typed offline." &&
        ben.state(id).questions.db.marks["sq/ops"] === "no", "ben to see ana's offline draft");
      await back.save([id]);
      assert.equal(back.state(id).status, "settled");
    } finally {
      back.stop();
    }
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("an offline draft met by a reopen on return is dropped, as the server asks, and the client goes on", async () => {
  const [doc, id] = await fresh();
  const storage = new MemoryStorage();
  const ana = await server.client(doc, "ana", { storage });
  const ben = await server.client(doc, "ben");
  try {
    ana.setText(id, "why", "Saved once.");
    ana.choose(id, "db", "pg", true);
    await ana.save([id]);
    await ana.reopen(id);
    await ana.flushStorage();
    ana.stop();

    // Offline, ana drafts on generation 2 while ben saves and reopens it.
    const offline = new Client({ doc, member: "ana", url: `${server.url}?doc=${doc}`, storage }); // never connects
    await offline.restore();
    offline.setText(id, "why", "Drafted offline on an old generation.");
    await offline.flushStorage();
    await eventually(() => ben.state(id)?.status === "open", "ben to see the reopen");
    ben.setText(id, "why", "Ben's answer.");
    ben.choose(id, "db", "pg", true);
    await ben.save([id]);
    await ben.reopen(id);

    const back = await server.client(doc, "ana", { storage });
    try {
      await eventually(() => !back.unsent(back.decisions.get(id)), "the stale edit to be answered");
      const st = back.state(id);
      assert.equal(st.generation, ben.state(id).generation);
      assert.notEqual(st.questions.why.text, "Drafted offline on an old generation.");
      back.setText(id, "why", "A fresh answer.");
      back.choose(id, "db", "sq", true);
      await back.save([id]);
      assert.equal(back.state(id).status, "settled");
    } finally {
      back.stop();
    }
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("a damaged or foreign store is reported and never blocks opening", async () => {
  const [doc, id] = await fresh();
  const ana = await server.client(doc, "ana", { storage: new MemoryStorage() });
  const key = ana.storageKey();
  ana.stop();

  const foreign = new MemoryStorage();
  await foreign.put(key, { hello: "from another app" });
  /** @type {StorageError[]} */
  let problems = [];
  let c = await server.client(doc, "ana", { storage: foreign, onStorageError: (/** @type {StorageError} */ e) => problems.push(e) });
  assert.deepEqual(problems.map((e) => e.reason), ["foreign"]);
  assert.ok(problems[0] instanceof StorageError);
  assert.equal((await c.open(id)).questions.why.text, "");
  c.stop();

  const damaged = new MemoryStorage();
  await damaged.put(key, { v: 1, doc, member: "ana", order: [id], decisions: { [id]: { doc: new Uint8Array([1, 2, 3]), accepted: [], record: { id } } } });
  problems = [];
  c = await server.client(doc, "ana", { storage: damaged, onStorageError: (/** @type {StorageError} */ e) => problems.push(e) });
  assert.deepEqual(problems.map((e) => e.reason), ["damaged"]);
  c.setText(id, "why", "Works from the server's document.");
  await c.flush();
  c.stop();

  // A storage that cannot be read, or does not answer, is not written
  // either: the drafts it may hold are left for a later start.
  let puts = 0;
  const broken = { get: async () => { throw new Error("disk gone"); }, put: async () => { puts++; }, delete: async () => {} };
  problems = [];
  c = await server.client(doc, "ana", { storage: broken, onStorageError: (/** @type {StorageError} */ e) => problems.push(e) });
  assert.deepEqual(problems.map((e) => e.reason), ["unavailable"]);
  assert.equal(c.state(id).questions.why.text, "Works from the server's document.");
  c.setText(id, "why", "Edited while the storage is broken.");
  await c.flush();
  await c.flushStorage();
  c.stop();
  assert.equal(puts, 0);

  const silent = { get: () => new Promise(() => {}), put: async () => { puts++; }, delete: async () => {} };
  problems = [];
  c = await server.client(doc, "ana", { storage: silent, restoreTimeout: 200, onStorageError: (/** @type {StorageError} */ e) => problems.push(e) });
  assert.deepEqual(problems.map((e) => e.reason), ["unavailable"]);
  assert.equal(c.state(id).questions.why.text, "Edited while the storage is broken.");
  c.stop();
  assert.equal(puts, 0);
});

test("a full storage is reported and editing goes on", async () => {
  const [doc, id] = await fresh();
  const full = new MemoryStorage();
  full.put = async () => {
    const e = new Error("the quota has been exceeded");
    e.name = "QuotaExceededError";
    throw e;
  };
  /** @type {StorageError[]} */
  const problems = [];
  const ana = await server.client(doc, "ana", { storage: full, onStorageError: (/** @type {StorageError} */ e) => problems.push(e) });
  try {
    ana.setText(id, "why", "Kept in memory.");
    await ana.flushStorage();
    assert.equal(problems[0]?.reason, "quota");
    await ana.flush();
    assert.equal(ana.state(id).questions.why.text, "Kept in memory.");
  } finally {
    ana.stop();
  }
});

test("the README's quick start is examples/quickstart.mjs, and runs twice in a row, exiting on its own", async () => {
  const { execFile } = await import("node:child_process");
  const dir = new URL("..", import.meta.url).pathname;
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## Quick start (Node)"));
  const block = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  assert.equal(block, readFileSync(new URL("../examples/quickstart.mjs", import.meta.url), "utf8"), "README's quick start block differs from examples/quickstart.mjs");
  for (const run of [1, 2]) {
    const out = await new Promise((resolve, reject) => {
      execFile(process.execPath, ["examples/quickstart.mjs", server.url], { cwd: dir, timeout: 20000 }, (err, stdout, stderr) => {
        if (err?.killed) reject(new Error(`run ${run} did not exit on its own\n${stdout}\n${stderr}`));
        else if (err) reject(new Error(`run ${run}: ${err.message}\n${stderr}`));
        else resolve(stdout);
      });
    });
    assert.match(String(out), /refused: duplicate: That option is already on this question\./, `run ${run}`);
    assert.match(String(out), /ben sees: "The team runs it already\.", settled/, `run ${run}`);
  }
});

test("a stored decision the server no longer has is dropped, and connecting still ends", async () => {
  const [doc, id] = await fresh();
  const storage = new MemoryStorage();
  const ana = await server.client(doc, "ana", { storage });
  ana.setText(id, "why", "Kept.");
  await ana.flush();
  const key = ana.storageKey();
  ana.stop();
  await ana.storing;
  const v = await storage.get(key);
  v.decisions.ghost = { ...v.decisions[id], record: { ...v.decisions[id].record, id: "ghost" } };
  v.order.push("ghost");
  await storage.put(key, v);

  const again = await server.client(doc, "ana", { storage });
  try {
    assert.deepEqual(again.list().map((r) => r.id), [id]);
    assert.equal(again.state(id).questions.why.text, "Kept.");
  } finally {
    again.stop();
  }
});

/**
 * A WebSocket that keeps the hash of every change the client sends in a
 * question:edit, in order.
 */
function spySocket(/** @type {string[]} */ sent) {
  return class extends WebSocket {
    /** @param {any} data */
    send(data) {
      const m = decode(data);
      if (m && m.kind === "question:edit" && m.changes) sent.push(...changeHashes(m.changes));
      super.send(data);
    }
  };
}

/**
 * The hashes of a batch of concatenated change chunks (magic, checksum,
 * type, then the body's length as unsigned LEB128).
 * @param {Uint8Array} batch
 */
function changeHashes(batch) {
  const out = [];
  for (let at = 0; at < batch.length; ) {
    let len = 0;
    let shift = 0;
    let i = at + 9;
    for (;;) {
      const b = batch[i++];
      len += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (b < 0x80) break;
    }
    out.push(automerge.decodeChange(batch.subarray(at, i + len)).hash);
    at = i + len;
  }
  return out;
}

test("an edit carries only this member's changes, each once, also when replies overtake the changes received before them", async () => {
  const [doc, id] = await fresh();
  /** @type {string[]} */
  const anaSent = [];
  /** @type {string[]} */
  const benSent = [];
  const ana = await server.client(doc, "ana", { WebSocket: spySocket(anaSent) });
  const ben = await server.client(doc, "ben", { WebSocket: spySocket(benSent) });
  // Hold ana's received changes as long as the client ever holds them, so
  // that replies to her edits arrive before the changes of ben's that the
  // server accepted first.
  Object.defineProperty(ana, "applied", { get: () => ({ end: performance.now() + 60_000, took: 0 }), set() {} });
  try {
    await ana.open(id);
    await ben.open(id);
    const cells = ["pg/cost", "pg/ops", "sq/cost", "sq/ops"];
    const values = ["yes", "partly", "no"];
    for (let i = 0; i < 60; i++) {
      const [o, c] = cells[i % 4].split("/");
      ben.setMark(id, "db", o, c, values[i % 3]);
      ana.setText(id, "why", `round ${i}`);
      await new Promise((r) => setTimeout(r, i % 7));
    }
    await eventually(() => {
      const a = ana.state(id);
      const b = ben.state(id);
      return a?.questions.why.text === "round 59" && b?.questions.why.text === "round 59" &&
        cells.every((k) => a.questions.db.marks[k] === b.questions.db.marks[k]) && !a.unsent && !b.unsent;
    }, "both members to converge with nothing unsent");
    const bens = new Set(benSent);
    assert.deepEqual(anaSent.filter((h) => bens.has(h)), [], "ana sent changes of ben's back to the server");
    assert.equal(new Set(anaSent).size, anaSent.length, "ana sent a change twice");
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("init's warm-up runs the replica's edit and apply path in slices and leaves the event loop free between them", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  try {
    assert.equal(await warmUp(64), 64);
  } finally {
    clearInterval(timer);
  }
  assert.ok(ticks > 0, "no timer ran while the warm-up did");
});
