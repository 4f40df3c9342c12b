// Per-change cost of the package's protocol client (src/client.js) as the
// decision's history grows: a writer makes N changes, one or BATCH per
// question:changes frame, and the client applies each frame as the page
// does (msgpack decode, then Client.handle). Every STRIDE frames the
// client also makes a local edit, which the writer takes in, and the
// client handles the edit's reply: the acknowledging path.
//
// Beside the client, a bare automerge replica (the shadow) applies the
// same bytes with Automerge.loadIncremental alone: what automerge itself
// costs. The client's own cost is the difference.
//
// It prints one JSON object: medians, in µs, around change 100 and around
// change N, and their ratios:
//   apply_*    one question:changes frame, as the page handles it
//   am_*       automerge's loadIncremental of the same bytes (the shadow)
//   client_*   apply minus am: the client's own cost per frame
//   ack_*      a local edit (sent as question:edit) and its reply
// Issue 10's target: the cost at change 10,000 is at most 1.5× the cost
// at change 100. automerge 3.5's own cost per call grows with the
// document's operations (also for a change that touches a fresh key), so
// only a rebased document bounds it: REBASE=K has the writer replace the
// document every K changes by a fresh one with the same state (a rebased
// document, sent whole as question:doc), as a compacting server would.
//
//   npm run bench                       N=10000 BATCH=1 WINDOW=100
//   N=2000 BATCH=8 node bench/apply.mjs
//   REBASE=1000 node bench/apply.mjs
//
// BenchmarkPageClientApply (../apply_bench_test.go) runs it from Go.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { decode, encode } from "@msgpack/msgpack";
import * as R from "../src/replica.js";
import { Client } from "../src/client.js";

const here = fileURLToPath(new URL(".", import.meta.url));
await R.init(readFileSync(here + "../node_modules/@automerge/automerge/dist/automerge.wasm"));
const A = R.A;

const N = Number(process.env.N || 10000);
const BATCH = Math.max(1, Number(process.env.BATCH || 1));
const WINDOW = Math.max(1, Number(process.env.WINDOW || 100));
const STRIDE = Math.max(1, Number(process.env.STRIDE || 10));
const REBASE = Number(process.env.REBASE || 0);

// The client only reads WebSocket.OPEN; Node 20 has no WebSocket.
globalThis.WebSocket ??= /** @type {any} */ ({ OPEN: 1 });

const opts = [{ id: "o1", label: "Email" }, { id: "o2", label: "SMS" }, { id: "o3", label: "Passkey" }];
// The writer marks c1 and c2; the client's own edits mark c3.
const crits = [{ id: "c1", label: "New device" }, { id: "c2", label: "Cheap" }, { id: "c3", label: "Easy reset" }];
let w = R.create([{ id: "q1", written: true }, { id: "q2", options: opts, criteria: crits }]);

const c = new Client({ doc: "bench", member: "ana", url: "ws://bench.invalid/sync" });
/** @type {Uint8Array[]} */
const sent = [];
c.ws = /** @type {any} */ ({ readyState: 1, send: (b) => sent.push(b), close() {} });
const frame = (m) => c.handle(decode(encode(m, { ignoreUndefined: true })));
frame({ kind: "welcome", v: 1, doc: "bench", member: "ana", write: true, records: [{ id: "d1", status: "open", generation: 1,
  definition: { questions: [{ id: "q1", question: "How?", response: "text", options: [] },
    { id: "q2", question: "Which?", options: opts, criteria: crits }] } }] });
frame({ kind: "question:doc", id: "d1", doc: A.save(w), heads: R.heads(w) });
let shadow = R.load(A.save(w));

/**
 * A fresh document with doc's state (questions, generation 1's draft): a
 * rebased document.
 * @param {any} doc
 */
function rebuild(doc) {
  const st = R.readState(doc);
  let f = R.create(Object.entries(st.questions).map(([id, q]) => ({ id, ...q })));
  for (const [qid, qd] of Object.entries(st.drafts["1"] || {})) {
    if (st.questions[qid].written) {
      f = R.setText(f, qid, qd.text);
      continue;
    }
    for (const [k, v] of Object.entries(qd.marks)) {
      const [o, cr] = k.split("/");
      f = R.setMark(f, qid, o, cr, v === null ? "no" : /** @type {any} */ (v));
      if (v === null) f = R.setMark(f, qid, o, cr, null);
    }
    for (const o of qd.choices) f = R.choose(f, qid, o, true, st.questions[qid].multiple);
  }
  return f;
}

/** One writer change: text typing and deleting (bounded length), and marks. */
function writerChange(i) {
  if (i % 3 === 2) return R.setMark(w, "q2", opts[i % 3].id, crits[i % 2].id, R.MARKS[Math.floor(i / 3) % 3]);
  const text = R.currentDraft(w, "q1")?.text ?? "";
  if (text.length > 200 && i % 2) return R.spliceText(w, "q1", (i * 7) % text.length, 1, "");
  return R.spliceText(w, "q1", (i * 13) % (text.length + 1), 0, "ab"[i % 2]);
}

const now = () => Number(process.hrtime.bigint()) / 1000; // µs
/** @type {{at: number, us: number}[]} */
const applies = [];
/** @type {{at: number, us: number}[]} */
const bare = [];
/** @type {{at: number, us: number}[]} */
const acks = [];
let rid = 0;
let made = 0;
let rebased = 0;
for (let f = 0; made < N; f++) {
  if (REBASE && made >= (rebased + 1) * REBASE) {
    // The server rebases the decision and sends it whole.
    w = rebuild(w);
    rebased++;
    frame({ kind: "question:doc", id: "d1", doc: A.save(w), heads: R.heads(w) });
    if (sent.splice(0).length) throw new Error("a rebase with nothing unsent made the client send");
    shadow = R.load(A.save(w));
  }
  const parts = [];
  for (let k = 0; k < BATCH && made < N; k++, made++) {
    const next = writerChange(made);
    if (next === w) continue;
    w = next;
    parts.push(A.getLastLocalChange(w));
  }
  const m = { kind: "question:changes", id: "d1", changes: R.concat(parts), heads: R.heads(w) };
  const bytes = encode(m, { ignoreUndefined: true });
  const t0 = now();
  c.handle(decode(bytes));
  c.flushChanges(); // as the end of the socket's task does
  applies.push({ at: made, us: now() - t0 });
  const t4 = now();
  shadow = A.loadIncremental(shadow, m.changes);
  bare.push({ at: made, us: now() - t4 });

  if (f % STRIDE === STRIDE - 1) {
    // A local edit of the client, and its acknowledgement.
    const t1 = now();
    c.setMark("d1", "q2", "o1", "c3", R.MARKS[rid % 3]);
    const out = sent.splice(0);
    if (out.length !== 1) throw new Error(`the client sent ${out.length} frames for one edit`);
    const e = /** @type {any} */ (decode(out[0]));
    const t2 = now();
    w = A.loadIncremental(w, e.changes); // the server takes it in
    shadow = A.loadIncremental(shadow, e.changes);
    const reply = encode({ kind: "question:edit", rid: e.rid, id: "d1", ok: true, heads: R.heads(w) });
    const t3 = now();
    c.handle(decode(reply));
    acks.push({ at: made, us: now() - t3 + (t2 - t1) });
    rid++;
  }
}
const d = c.decisions.get("d1");
if (!d || R.heads(d.doc).join() !== R.heads(w).join() || d.accepted.join() !== R.heads(w).join()) {
  throw new Error("the client did not converge with the writer");
}
/** JSON with sorted keys: automerge materializes keys in the order they arrived. */
const canon = (v) => JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));
if (canon(R.readState(d.doc)) !== canon(R.readState(w))) throw new Error("the client reads other values");

/** Median of the samples whose change count is in [from, to). */
function median(samples, from, to) {
  const xs = samples.filter((s) => s.at >= from && s.at < to).map((s) => s.us).sort((a, b) => a - b);
  return xs.length ? xs[Math.floor(xs.length / 2)] : NaN;
}
/** Median of count samples from index i. */
function medianAt(samples, i, count) {
  const xs = samples.slice(i, i + count).map((s) => s.us).sort((a, b) => a - b);
  return xs.length ? xs[Math.floor(xs.length / 2)] : NaN;
}
const round = (x, k = 10) => Math.round(x * k) / k;
const first = acks.findIndex((a) => a.at >= 100);
/** Medians of a minus b, sample by sample. */
const minus = (a, b) => a.map((x, i) => ({ at: x.at, us: x.us - b[i].us }));
const early = [100, 100 + WINDOW * BATCH];
const late = [N - WINDOW * BATCH, N + 1];
const out = {
  changes: N, batch: BATCH, window: WINDOW, edits: rid, rebase_every: REBASE, rebased,
  // frames of the WINDOW·BATCH changes from change 100, and of the last ones
  apply_us_at_100: round(median(applies, ...early)),
  apply_us_at_n: round(median(applies, ...late)),
  am_us_at_100: round(median(bare, ...early)),
  am_us_at_n: round(median(bare, ...late)),
  client_us_at_100: round(median(minus(applies, bare), ...early)),
  client_us_at_n: round(median(minus(applies, bare), ...late)),
  // the first WINDOW edits from change 100, and the last WINDOW edits
  ack_us_at_100: round(medianAt(acks, first, WINDOW)),
  ack_us_at_n: round(medianAt(acks, Math.max(first, acks.length - WINDOW), WINDOW)),
};
out.apply_ratio = round(out.apply_us_at_n / out.apply_us_at_100, 100);
out.am_ratio = round(out.am_us_at_n / out.am_us_at_100, 100);
out.client_ratio = round(out.client_us_at_n / out.client_us_at_100, 100);
out.ack_ratio = round(out.ack_us_at_n / out.ack_us_at_100, 100);
console.log(JSON.stringify(out));
