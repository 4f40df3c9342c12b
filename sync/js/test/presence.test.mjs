// Presence, provenance and overwrite notices against the real Go server
// (test/server), over real sockets.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { decode } from "@msgpack/msgpack";
import WebSocket from "ws";
import { RefusedError } from "../src/index.js";
import { DEFINITION, TestServer, docName, eventually } from "./helpers.mjs";

/** @type {TestServer} */
let server;
/** @type {TestServer} a server whose presence goes silent after 1 s without a frame */
let quiet;
before(async () => {
  server = new TestServer();
  quiet = new TestServer(["-presence-silence", "1s"]);
  await Promise.all([server.start(), quiet.start()]);
});
after(async () => {
  await Promise.all([server.close(), quiet.close()]);
});

/**
 * Creates one decision in a fresh document on srv; returns [doc, id].
 * @param {TestServer} [srv]
 */
async function fresh(srv = server) {
  const doc = docName();
  const ana = await srv.client(doc, "ana");
  const [rec] = await ana.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
  ana.stop();
  return [doc, rec.id];
}

/** The others' states as [member, state] pairs, by member. */
function seen(client, id) {
  return [...client.others(id).values()].map((p) => [p.member, p.state]).sort(([a], [b]) => a.localeCompare(b));
}

/** A WebSocket that records the presence frames it sends. */
function countingSocket() {
  const sent = [];
  class Counting extends WebSocket {
    send(data, ...rest) {
      const m = decode(data);
      if (m.kind === "question:presence") sent.push({ at: performance.now(), state: m.state });
      return super.send(data, ...rest);
    }
  }
  return { WebSocket: Counting, sent };
}

test("two clients see each other's presence, a reader's too, and one that leaves drops out", async () => {
  const [doc, id] = await fresh();
  const ana = await server.client(doc, "ana");
  const ben = await server.client(doc, "ben");
  const rita = await server.client(doc, "rita");
  let changes = 0;
  const off = ben.onPresence(() => changes++);
  try {
    ana.setPresence({ decision: id, question: "why", field: "text", selection: [3, 3], editing: true });
    ben.setPresence({ decision: id, question: "db", field: "pg/cost" });
    rita.setPresence({ decision: id, field: "choice" }); // a reader may publish
    await eventually(() => ben.others(id).size === 2 && ana.others(id).size === 2, "both to see the others");
    assert.deepEqual(seen(ben, id), [
      ["ana", { decision: id, question: "why", field: "text", selection: [3, 3], editing: true }],
      ["rita", { decision: id, field: "choice" }],
    ]);
    assert.deepEqual(seen(ana, id).map(([m]) => m), ["ben", "rita"], "a client never lists itself");
    assert.ok(changes > 0, "onPresence was called");

    // The same map until something changes; another decision's is empty.
    assert.equal(ben.others(id), ben.others(id));
    assert.equal(ben.others("elsewhere").size, 0);
    ana.setPresence({ decision: "elsewhere" });
    await eventually(() => ben.others("elsewhere").size === 1 && ben.others(id).size === 1, "ana to move");
    assert.equal(ben.others().size, 2, "others() lists every other connection");

    rita.stop(); // the tab closes: the server says she left
    await eventually(() => ben.others().size === 1, "rita to drop out");
    assert.deepEqual([...ben.others().values()].map((p) => p.member), ["ana"]);

    ben.resync(); // a lost connection forgets everyone until the server says again
    assert.equal(ben.others().size, 0);
    await eventually(() => ben.others("elsewhere").size === 1, "the standing states after the reconnect");
    await eventually(() => seen(ana, id).map(([m]) => m).join() === "ben", "ben's state published again on his new connection");
  } finally {
    off();
    ana.stop();
    ben.stop();
    rita.stop();
  }
});

test("a connection that publishes nothing for the server's silence drops out, and is back when it publishes", async () => {
  const [doc, id] = await fresh(quiet);
  const ana = await quiet.client(doc, "ana");
  const ben = await quiet.client(doc, "ben");
  // Every state Ben hears, in order: a state stands only 1 s, which a
  // busy machine could let pass between two polls.
  const heard = [];
  const off = ben.onPresence(() => heard.push([...ben.others(id).values()].map((p) => p.state.field).join()));
  try {
    ana.setPresence({ decision: id, field: "choice" });
    await eventually(() => heard.includes("choice") && ben.others(id).size === 0, "ana to be seen, then go silent after 1 s");
    ana.setPresence({ decision: id, field: "text" });
    await eventually(() => heard.includes("text"), "ana to be back");
    assert.deepEqual(heard.slice(0, 3), ["choice", "", "text"]);
  } finally {
    off();
    ana.stop();
    ben.stop();
  }
});

test("states set faster than the server relays are paced to one frame per 100 ms, the latest always sent", async () => {
  const [doc, id] = await fresh();
  const socket = countingSocket();
  const ana = await server.client(doc, "ana", { WebSocket: socket.WebSocket });
  const ben = await server.client(doc, "ben");
  try {
    const start = performance.now();
    for (let i = 0; i <= 100; i++) {
      ana.setPresence({ decision: id, question: "why", field: "text", selection: [i, i], editing: true });
      await new Promise((r) => setTimeout(r, 5));
    }
    const took = performance.now() - start;
    await eventually(() => [...ben.others(id).values()][0]?.state.selection?.[0] === 100, "ben to see the last state");
    const { sent } = socket;
    assert.ok(sent.length >= 2, `${sent.length} frames`);
    assert.ok(sent.length <= Math.ceil(took / 100) + 2, `${sent.length} frames in ${Math.round(took)} ms: not paced`);
    for (let i = 1; i < sent.length; i++) {
      assert.ok(sent[i].at - sent[i - 1].at >= 99, `frames ${i - 1} and ${i} ${sent[i].at - sent[i - 1].at} ms apart`);
    }
    assert.deepEqual(sent.at(-1).state.selection, [100, 100], "the latest state goes out");
  } finally {
    ana.stop();
    ben.stop();
  }
});

test("a state the server would refuse is refused before it is sent", async () => {
  const [doc, id] = await fresh();
  const socket = countingSocket();
  const ana = await server.client(doc, "ana", { WebSocket: socket.WebSocket });
  try {
    for (const bad of [
      { decision: "d".repeat(65) },
      { question: "é".repeat(33) }, // 66 bytes
      { field: "f".repeat(201) },
      { selection: [1] },
      { selection: [-1, 2] },
      { selection: [0, 400001] },
      { selection: [0.5, 1] },
      { editing: "yes" },
      { decision: 7 },
      null,
    ]) {
      assert.throws(() => ana.setPresence(/** @type {any} */ (bad)), (e) => e instanceof RefusedError && e.reason === "invalid" && e.kind === "question:presence", JSON.stringify(bad));
    }
    ana.setPresence({ decision: id, question: "q".repeat(64), field: "f".repeat(200), selection: [0, 400000] }); // at the bounds
    await eventually(() => socket.sent.length === 1, "the state at the bounds to go out");
    assert.deepEqual(socket.sent[0].state, { decision: id, question: "q".repeat(64), field: "f".repeat(200), selection: [0, 400000] });
  } finally {
    ana.stop();
  }
});

test("provenance names who set each value, when, and what it replaced; a reader may ask", async () => {
  const [doc, id] = await fresh();
  const ana = await server.client(doc, "ana");
  const ben = await server.client(doc, "ben");
  const rita = await server.client(doc, "rita");
  try {
    const before = Date.now();
    ana.setMark(id, "db", "pg", "cost", "partly");
    ana.choose(id, "db", "sq", true);
    await ana.flush();
    await eventually(() => ben.state(id).questions.db.marks["pg/cost"] === "partly", "ben to see ana's mark");
    ben.setMark(id, "db", "pg", "cost", "yes");
    ben.setText(id, "why", "Cheap.");
    await ben.flush();
    const entries = await rita.provenance(id);
    const by = Object.fromEntries(entries.map((e) => [`${e.kind} ${e.question} ${e.cell}`, e]));
    assert.deepEqual(Object.keys(by).sort(), ["choice db ", "mark db pg/cost", "text why "]);
    const mark = by["mark db pg/cost"];
    assert.deepEqual({ ...mark, at: null, change: "" }, {
      generation: 1, question: "db", kind: "mark", cell: "pg/cost", value: "yes", by: "ben", at: null, change: "", was: "partly", wasBy: "ana",
    });
    assert.ok(mark.at instanceof Date && mark.at.getTime() >= before - 1000, `at ${mark.at}`);
    assert.match(mark.change, /^[0-9a-f]{64}$/);
    assert.equal(by["choice db "].value, "sq");
    assert.equal(by["choice db "].by, "ana");
    assert.equal(by["text why "].by, "ben");
    assert.equal(by["text why "].value, "");

    await assert.rejects(rita.provenance("no-such-decision"), (e) => e instanceof RefusedError && e.reason === "not_found");
    rita.stop();
    await assert.rejects(rita.provenance(id), (e) => e instanceof RefusedError && e.reason === "disconnected");
  } finally {
    ana.stop();
    ben.stop();
    rita.stop();
  }
});

test("an overwrite is reported once, to the member whose value was replaced only", async () => {
  const [doc, id] = await fresh();
  const ana = await server.client(doc, "ana");
  const ben = await server.client(doc, "ben");
  const rita = await server.client(doc, "rita");
  /** @type {Record<string, import("../src/index.js").Overwrite[]>} */
  const heard = { ana: [], ben: [], rita: [] };
  const offs = [ana, ben, rita].map((c) => c.onOverwritten((o) => heard[c.member].push(o)));
  try {
    ana.setMark(id, "db", "pg", "cost", "yes");
    await ana.flush();
    await eventually(() => ben.state(id).questions.db.marks["pg/cost"] === "yes", "ben to see ana's Yes");
    ben.setMark(id, "db", "pg", "cost", "no");
    await ben.flush();
    await eventually(() => heard.ana.length === 1, "ana to hear of it");
    const [o] = heard.ana;
    assert.equal(o.id, id);
    assert.equal(o.by, "ben");
    assert.deepEqual([o.cell.kind, o.cell.question, o.cell.cell, o.cell.value, o.cell.was, o.cell.wasBy], ["mark", "db", "pg/cost", "no", "yes", "ana"]);

    // A reconnect's catch-up carries no cells: nothing is reported again.
    ana.resync();
    await ana.ready();
    await eventually(() => rita.state(id).questions.db.marks["pg/cost"] === "no", "rita to see ben's No");

    // Ana replaces Ben's No in turn: now Ben hears, once.
    ana.setMark(id, "db", "pg", "cost", "partly");
    await ana.flush();
    // Overwrites are reported as the frame is applied: once Rita and Ben
    // show Ana's Partly, anything reported twice would be here.
    await eventually(() => heard.ben.length === 1 && rita.state(id).questions.db.marks["pg/cost"] === "partly", "ben to hear of it");
    assert.deepEqual([heard.ana.length, heard.ben.length, heard.rita.length], [1, 1, 0]);
    assert.equal(heard.ben[0].by, "ana");
  } finally {
    offs.forEach((off) => off());
    ana.stop();
    ben.stop();
    rita.stop();
  }
});
