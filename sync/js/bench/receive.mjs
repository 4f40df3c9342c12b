// What the client's receive path costs per received change, beside what
// automerge itself costs to apply the same bytes. Recorded change streams
// (made here with automerge, choices seeded) are applied, in one run:
//   client     as a page receives them: each question:changes frame
//              given to the client's socket (onmessage, as an ArrayBuffer)
//              and the client's microtasks and timers run (the queued
//              apply, notify, the storage write), with
//              its drafts kept in storage: MemoryStorage, whose write
//              costs what a browser's IndexedDB put costs its page (the
//              structured clone of the value); STORAGE=indexeddb for
//              IndexedDBStorage over fake-indexeddb (as some Node tests
//              use it: IndexedDB itself in JavaScript, about 160 µs more
//              a write), STORAGE=none for none
//   automerge  the same frame's bytes given to a bare automerge handle
//              (its wasm loadIncremental, no JavaScript document, no
//              patches) and, as separate changes, to another one
//              (applyChanges); the cheaper of the two counts
// The three take the frames in turn, CHUNK at a time (1), each chunk
// starting with another, so that a machine busy with other work weighs on
// all alike. Time is the process's CPU time, so that other processes are
// not counted.
//
// Streams, on a decision of the peers' harness shape (../../shared/peers,
// README "Accord": a choice question of 10 options × 5 criteria, the
// written question meta and the written questions p0..p17 that hold each
// writer's progress line), each change one mark and the writer's own
// progress line, as the harness's writes:
//   w2  16 writers writing at once, round by round (W2 with 2,000 writes),
//       frames of 1 and of 12 changes (the batch the peers' apply-cost
//       bench gives W2, bench/apply-cost/multi.mjs), one frame every 20 ms
//       (the server's group wait while several members edit)
//   w5  5 members writing in turn at human rates (W5: one write a second
//       each), one change per frame, a frame every 200 ms
// Time between frames is virtual: the bench replaces setTimeout and
// clearTimeout, and runs the client's timers when the clock passes them,
// so a storage write lands where it would among the frames.
//
// It prints a table and, with JSON=1, one JSON object: per stream and
// batch, µs per change of the client and of automerge's cheaper path (the
// median over RUNS runs, after as many changes' warm-up: V8 optimises the
// client's code over the first thousand or so frames; a stream shorter
// than W2's runs as many times more), and their ratio (the median of the
// runs' ratios, and their range).
//
//   npm run bench:receive                RUNS=3 W2=2000 W5=300
//   STREAMS=w5 RUNS=5 node bench/receive.mjs
//   READ=1 node bench/receive.mjs        a page reading state() after every frame
//   node --cpu-prof bench/receive.mjs    a CPU profile (bench/profile.mjs reads it)

import "fake-indexeddb/auto";
import { readFileSync } from "node:fs";
import { encode } from "@msgpack/msgpack";
import * as R from "../src/replica.js";
import { Client } from "../src/client.js";
import { IndexedDBStorage, MemoryStorage } from "../src/storage.js";

const A = R.A;
// The client only reads WebSocket.OPEN; Node 20 has no WebSocket.
globalThis.WebSocket ??= /** @type {any} */ ({ OPEN: 1 });
// automerge alone: R.init would also warm the replica in idle tasks,
// which must not run among the measured ones. The warm-up run does that.
await A.initializeWasm(readFileSync(new URL("../node_modules/@automerge/automerge/dist/automerge.wasm", import.meta.url)));

const env = (/** @type {string} */ k, /** @type {string} */ d) => process.env[k] ?? d;
const RUNS = Math.max(1, Number(env("RUNS", "3")));
const W2_WRITES = Number(env("W2", "2000"));
const W5_WRITES = Number(env("W5", "300"));
const W2_BATCH = Number(env("W2_BATCH", "12"));
const STREAMS = env("STREAMS", "w2,w5").split(",");
const CHUNK = Math.max(1, Number(env("CHUNK", "1")));
const STORAGE = env("STORAGE", "memory");
const READ = env("READ", "") === "1";
/** the client's storeDelay (ms); its default when unset */
const STORE_DELAY = process.env.STORE_DELAY ? Number(process.env.STORE_DELAY) : undefined;

// ---- virtual time: the client's timers run when the clock passes them

/** @type {{at: number, fn: () => void, off: boolean}[]} */
let timers = [];
let clock = 0;
const realClearTimeout = globalThis.clearTimeout;
globalThis.setTimeout = /** @type {any} */ ((/** @type {Function} */ fn, /** @type {number} */ ms = 0, /** @type {any[]} */ ...args) => {
  const t = { at: clock + Math.max(0, Number(ms) || 0), fn: () => fn(...args), off: false };
  timers.push(t);
  return t;
});
globalThis.clearTimeout = /** @type {any} */ ((/** @type {any} */ t) => {
  if (t && typeof t === "object" && "off" in t) t.off = true;
  else realClearTimeout(t);
});
// The client's clock (how long its last apply took, when it was) reads
// the same time: a frame arriving 200 ms after the last finds the
// replica idle, as it would.
performance.now = () => clock;

/**
 * Runs the timers due until the clock reads to, in order, each followed
 * by what it started (microtasks, the storage write).
 * @param {Client} c
 * @param {number} to
 */
async function advance(c, to) {
  for (;;) {
    if (timers.some((t) => t.off)) timers = timers.filter((t) => !t.off);
    let next = null;
    for (const t of timers) if (t.at <= to && (!next || t.at < next.at)) next = t;
    if (!next) break;
    clock = next.at;
    next.off = true;
    next.fn();
    await settle(c);
  }
  clock = to;
}

/** Lets the client's microtasks and its storage write under way finish. @param {Client} c */
async function settle(c) {
  // the queued apply, then notify's listeners and scheduleStore
  for (let i = 0; i < 3; i++) await null;
  await c.storing;
}

// ---- the decision and the writers

const SERVER = "5e".repeat(16);
const OPTIONS = Array.from({ length: 10 }, (_, i) => ({ id: `o${i}`, label: `Option ${i}` }));
const CRITERIA = Array.from({ length: 5 }, (_, j) => ({ id: `c${j}`, label: `Criterion ${j}` }));
const LINES = ["meta", ...Array.from({ length: 18 }, (_, i) => `p${i}`)];
const DEFINITION = {
  questions: [
    { id: "marks", question: "Bench matrix", options: OPTIONS, criteria: CRITERIA, multiple: false },
    ...LINES.map((id) => ({ id, question: `Bench ${id}`, response: "text", options: [], multiple: false })),
  ],
};
const MARKS = ["yes", "partly", "no"];
const T0 = 1_800_000_000; // change timestamps (s), fixed

/** A seeded generator of numbers in [0, 1) (mulberry32). @param {number} seed */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The decision as the server creates it, with the harness's seed edit: 50 unmarked cells and seq:0. */
function initial() {
  let doc = R.create([
    { id: "marks", options: OPTIONS, criteria: CRITERIA },
    ...LINES.map((id) => ({ id, written: true })),
  ], SERVER);
  doc = A.change(doc, { message: "seed", time: T0 }, (d) => {
    const q = d.drafts["1"];
    for (const o of OPTIONS) for (const c of CRITERIA) q.marks.marks[`${o.id}/${c.id}`] = null;
    A.splice(d, ["drafts", "1", "meta", "text"], 0, 0, "seq:0\n");
  });
  return A.save(doc);
}

/** @param {number} k */
const actor = (k) => (k + 1).toString(16).padStart(2, "0").repeat(16);

/**
 * Writer k's next write on its replica: one mark and its own progress
 * line (appended at its first write), one change.
 * @param {any} doc
 * @param {number} k
 * @param {number} n the write's number, from 1
 * @param {() => number} rnd
 * @param {number} time
 * @returns {{doc: any, change: Uint8Array, cell: string, mark: string, line: string}}
 */
function write(doc, k, n, rnd, time) {
  const cell = `${OPTIONS[Math.floor(rnd() * 10)].id}/${CRITERIA[Math.floor(rnd() * 5)].id}`;
  const mark = MARKS[Math.floor(rnd() * 3)];
  const line = `p${k % 18}`;
  const next = A.change(doc, { message: "edit", time }, (d) => {
    const q = d.drafts["1"];
    q.marks.marks[cell] = new A.ImmutableString(mark);
    const text = q[line].text.toString();
    const head = `${k}:`;
    const at = text.startsWith(head) ? 0 : text.indexOf(`\n${head}`) + 1;
    if (at === 0 && !text.startsWith(head)) A.splice(d, ["drafts", "1", line, "text"], text.length, 0, `${head}${n}\n`);
    else A.splice(d, ["drafts", "1", line, "text"], at + head.length, text.indexOf("\n", at) - at - head.length, String(n));
  });
  return { doc: next, change: /** @type {Uint8Array} */ (A.getLastLocalChange(next)), cell, mark, line };
}

/**
 * The cells a frame carries for one change (the server's provenance).
 * @param {{doc: any, cell: string, mark: string, line: string}} w
 * @param {number} k
 * @param {number} time
 */
function cells(w, k, time) {
  const hash = A.getHeads(w.doc)[0]; // a local change is its replica's one head
  const at = new Date(time * 1000);
  return [
    { generation: 1, question: "marks", kind: "mark", cell: w.cell, value: w.mark, by: `m${k}`, at, change: hash },
    { generation: 1, question: w.line, kind: "text", by: `m${k}`, at, change: hash, pos: 2 },
  ];
}

/**
 * The w2 stream: K writers, each round every one writes on its own
 * replica, then takes the round's other writes.
 * @param {Uint8Array} start
 * @param {number} writes
 */
function w2Stream(start, writes) {
  const K = 16;
  const rnd = random(2);
  const reps = Array.from({ length: K }, (_, k) => A.load(start, { actor: actor(k) }));
  /** @type {{change: Uint8Array, cells: any[]}[]} */
  const out = [];
  for (let r = 1; out.length < writes; r++) {
    const round = [];
    for (let k = 0; k < K && out.length + round.length < writes; k++) {
      const w = write(reps[k], k, r, rnd, T0 + r);
      reps[k] = w.doc;
      round.push({ change: w.change, cells: cells(w, k, T0 + r) });
    }
    for (let k = 0; k < K; k++) [reps[k]] = A.applyChanges(reps[k], round.filter((_, i) => i !== k).map((x) => x.change));
    out.push(...round);
  }
  return out;
}

/**
 * The w5 stream: M members writing in turn (in a seeded order each
 * round), each having seen every write before its own.
 * @param {Uint8Array} start
 * @param {number} writes
 */
function w5Stream(start, writes) {
  const M = 5;
  const rnd = random(5);
  const reps = Array.from({ length: M }, (_, k) => A.load(start, { actor: actor(k) }));
  /** @type {number[]} how many of the stream's changes each member holds */
  const seen = reps.map(() => 0);
  /** @type {{change: Uint8Array, cells: any[]}[]} */
  const out = [];
  for (let r = 1; out.length < writes; r++) {
    const order = Array.from({ length: M }, (_, k) => k).sort(() => rnd() - 0.5);
    for (const k of order) {
      if (out.length >= writes) break;
      // the writes made since its last one, before its own
      [reps[k]] = A.applyChanges(reps[k], out.slice(seen[k]).map((x) => x.change));
      const w = write(reps[k], k, r, rnd, T0 + out.length);
      reps[k] = w.doc;
      out.push({ change: w.change, cells: cells(w, k, T0 + out.length) });
      seen[k] = out.length;
    }
  }
  return out;
}

/**
 * @typedef {{data: ArrayBuffer, changes: Uint8Array, parts: Uint8Array[], n: number}} Frame
 * a question:changes frame (data) and the changes it holds, concatenated and one by one
 */

/**
 * The frames a server sends for stream, batch changes each, with the
 * heads after them (as the server's replica holds them).
 * @param {Uint8Array} start
 * @param {{change: Uint8Array, cells: any[]}[]} stream
 * @param {number} batch
 */
function frames(start, stream, batch) {
  const server = A.getBackend(A.load(start, { actor: SERVER }));
  /** @type {Frame[]} */
  const out = [];
  for (let i = 0; i < stream.length; i += batch) {
    const part = stream.slice(i, i + batch);
    const changes = R.concat(part.map((x) => x.change));
    server.loadIncremental(changes);
    const heads = [...server.getHeads()].sort();
    const m = { kind: "question:changes", id: "d1", changes, heads, by: part[part.length - 1].cells[0].by, cells: part.flatMap((x) => x.cells) };
    out.push({ data: buffer(encode(m, { ignoreUndefined: true })), changes, parts: part.map((x) => x.change), n: part.length });
  }
  return out;
}

// ---- one run

/** A frame as a browser's socket gives it (binaryType "arraybuffer"). @param {Uint8Array} b */
const buffer = (b) => b.slice().buffer;

/** JSON with sorted keys: automerge materializes keys in the order they arrived. */
const canon = (/** @type {any} */ v) => JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));
/**
 * The process's CPU time (µs, getrusage: precise to the microsecond): on a
 * shared machine, time other processes take is not counted. It counts
 * V8's helper threads too (the collector's and the compiler's), whichever
 * pass's frame they run beside.
 */
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** What one measurement of nothing reads (µs): taken off each one. */
const NOTHING = (() => {
  let sum = 0;
  for (let i = 0; i < 2000; i++) sum -= cpu() - cpu();
  return sum / 2000;
})();

let runs = 0;

/**
 * Applies the frames through a fresh client and through bare automerge.
 * @param {Uint8Array} start
 * @param {ReturnType<typeof frames>} fs
 * @param {number} gap ms between frames
 * @param {any} want the final state (readState)
 */
async function run(start, fs, gap, want) {
  runs++;
  timers = [];
  clock = 0;
  const storage = STORAGE === "none" ? null : STORAGE === "memory" ? new MemoryStorage() : new IndexedDBStorage({ name: `receive-${process.pid}-${runs}` });
  let writes = 0;
  if (storage) {
    const put = storage.put.bind(storage);
    storage.put = (k, v) => (writes++, put(k, v));
  }
  /** @type {any} the client's socket */
  let ws = null;
  const Socket = function () {
    ws = { readyState: 1, send() {}, close() {} };
    return ws;
  };
  const c = new Client({ doc: "bench", member: "reader", url: "ws://bench.invalid/sync", storage, storeDelay: STORE_DELAY, WebSocket: Socket });
  if (storage) await c.restore();
  c.connect();
  ws.onopen();
  if (READ) c.subscribe(() => c.state("d1"));
  const frame = (/** @type {any} */ m) => ws.onmessage({ data: buffer(encode(m, { ignoreUndefined: true })) });
  frame({ kind: "welcome", v: 1, doc: "bench", member: "reader", write: true, records: [{ id: "d1", status: "open", generation: 1, definition: DEFINITION }] });
  const first = A.load(start, { actor: SERVER });
  frame({ kind: "question:doc", id: "d1", doc: start, heads: R.heads(first) });
  A.free(first);
  await settle(c);
  await advance(c, 1000);
  const loads = A.getBackend(A.load(start));
  const applies = A.getBackend(A.load(start));

  const passes = {
    /** @param {Frame[]} part */
    async client(part) {
      for (const f of part) {
        ws.onmessage({ data: f.data });
        await settle(c);
        await advance(c, clock + gap);
      }
    },
    /** @param {Frame[]} part */
    async load(part) {
      for (const f of part) loads.loadIncremental(f.changes);
    },
    /** @param {Frame[]} part */
    async apply(part) {
      for (const f of part) applies.applyChanges(f.parts);
    },
  };
  const took = { client: 0, load: 0, apply: 0 };
  const order = /** @type {(keyof typeof passes)[]} */ (Object.keys(passes));
  for (let at = 0, k = runs; at < fs.length; at += CHUNK, k++) {
    const part = fs.slice(at, at + CHUNK);
    for (let i = 0; i < order.length; i++) {
      const name = order[(i + k) % order.length]; // each chunk starts with another
      const t = cpu();
      await passes[name](part);
      took[name] += cpu() - t - NOTHING;
    }
  }
  await c.flushStorage();
  const d = /** @type {any} */ (c.decisions.get("d1"));
  const heads = [...loads.getHeads()].sort().join();
  if (R.heads(d.doc).join() !== heads || d.accepted.join() !== heads) throw new Error("the client did not converge with the stream");
  if (canon(R.readState(d.doc)) !== canon(want)) throw new Error("the client reads other values than the stream's");
  if ([...applies.getHeads()].sort().join() !== heads) throw new Error("applyChanges did not converge with loadIncremental");
  if (storage) {
    const kept = await storage.get(c.storageKey());
    const back = R.load(kept.decisions.d1.doc);
    if (R.heads(back).join() !== heads) throw new Error("the stored draft is not the client's");
    A.free(back);
  }
  c.stop();
  await c.storing;
  // automerge's memory is freed when the collector finds a document
  // unreachable; a page holds its documents, so the bench frees its own
  A.free(d.doc);
  loads.free();
  applies.free();
  // one database at a time, as a page has: fake-indexeddb keeps them all in memory
  if (storage instanceof IndexedDBStorage) {
    (await storage.db()).close();
    await new Promise((resolve) => Object.assign(indexedDB.deleteDatabase(storage.name), { onsuccess: resolve, onerror: resolve }));
  }
  const changes = fs.reduce((n, f) => n + f.n, 0);
  return { client: took.client / changes, load: took.load / changes, apply: took.apply / changes, writes: writes / changes };
}

// ---- the streams, and the table

const start = initial();
/** @type {[string, number, number, any[]][]} stream, batch, gap (ms), changes */
const cases = [];
if (STREAMS.includes("w2")) {
  const s = w2Stream(start, W2_WRITES);
  cases.push(["w2", 1, 20, s], ["w2", W2_BATCH, 20, s]);
}
if (STREAMS.includes("w5")) cases.push(["w5", 1, 200, w5Stream(start, W5_WRITES)]);

const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round1 = (/** @type {number} */ x) => Math.round(x * 10) / 10;
const rows = [];
for (const [name, batch, gap, stream] of cases) {
  const fs = frames(start, stream, batch);
  const end = A.load(start);
  const want = R.readState(A.applyChanges(end, stream.map((x) => x.change))[0]);
  // as many changes for a short stream as for a long one, warm-up too
  const warm = Math.max(1, Math.round(W2_WRITES / stream.length));
  const times = Math.max(RUNS, Math.round((RUNS * W2_WRITES) / stream.length));
  for (let i = 0; i < warm; i++) await run(start, fs, gap, want);
  const got = [];
  for (let i = 0; i < times; i++) got.push(await run(start, fs, gap, want));
  if (process.env.VERBOSE) {
    console.log(got.map((g) => `${g.client.toFixed(0)}/${g.load.toFixed(0)}/${g.apply.toFixed(0)}`).join(" "));
    const sum = (/** @type {"client"|"load"|"apply"} */ k) => got.reduce((n, g) => n + g[k], 0);
    console.log("ratio of sums", (sum("client") / Math.min(sum("load"), sum("apply"))).toFixed(3));
  }
  const client = median(got.map((g) => g.client));
  const load = median(got.map((g) => g.load));
  const apply = median(got.map((g) => g.apply));
  /** @type {"load"|"apply"} automerge's cheaper path for these frames */
  const path = load <= apply ? "load" : "apply";
  const ratios = got.map((g) => g.client / g[path]);
  rows.push({
    stream: name, batch, changes: stream.length, runs: times,
    client_us: round1(client), automerge_us: round1(Math.min(load, apply)),
    ratio: Math.round(median(ratios) * 100) / 100,
    ratio_min: Math.round(Math.min(...ratios) * 100) / 100, ratio_max: Math.round(Math.max(...ratios) * 100) / 100,
    load_us: round1(load), apply_us: round1(apply),
    writes_per_change: Math.round(median(got.map((g) => g.writes)) * 1000) / 1000,
  });
}
if (env("JSON", "") === "1") {
  console.log(JSON.stringify({ runs: RUNS, storage: STORAGE, read: READ, rows }));
} else {
  console.log(`receive path, µs of CPU per change (median of ${RUNS}+ runs; storage ${STORAGE}${READ ? ", state() read after every frame" : ""})`);
  console.log("stream  batch  changes   client  automerge  ratio  (runs' range; loadIncremental / applyChanges; storage writes per change)");
  for (const r of rows) {
    console.log(`${r.stream.padEnd(6)}  ${String(r.batch).padStart(5)}  ${String(r.changes).padStart(7)}  ${r.client_us.toFixed(1).padStart(7)}  ${r.automerge_us.toFixed(1).padStart(9)}  ${r.ratio.toFixed(2).padStart(5)}  (${r.ratio_min}–${r.ratio_max}; ${r.load_us} / ${r.apply_us}; ${r.writes_per_change})`);
  }
}
