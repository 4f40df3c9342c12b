// The JavaScript side of the Go ↔ JavaScript interoperability test
// (interop/interop_test.go). It holds automerge 3 replicas of a
// decision document, using the package's own document code (src/replica.js),
// and obeys commands from the Go test, one JSON object a line on stdin,
// answering each with one JSON line on stdout: {ok: true, ...} or
// {ok: false, error}. Byte fields are base64.
//
// Commands ({cmd, ...}):
//   info                            automerge's version
//   load {name, doc}                load a document Go saved
//   create {name, questions}        make a document from scratch
//   state {name}                    {state, heads}
//   mark {name, q, o, c, mark}      set or (mark null) clear a cell
//   choose {name, q, o, on, multiple}
//   splice {name, q, pos, del, ins} edit a written answer
//   settext {name, q, text}         replace it by the smallest splice
//   since {name, heads}             {changes}: the changes not in heads
//   apply {name, changes}           {heads, complete}
//   save {name}                     {doc}
//   chunks {name, heads}            {types}: chunk types of getChangesSince
//
// The package's protocol client (src/client.js), on a stand-in socket that
// keeps what it sends:
//   client {name, member}           a Client of document "interop"
//   frame {name, frame}             hand it a server frame (msgpack bytes,
//                                   as the Go server encodes them)
//   frames {name, frames}           several, in one task (as one socket
//                                   read delivers them)
//   receive {name, frames}          several, as the socket delivers them
//                                   (Client.receive: compressed documents
//                                   inflate first); {waiting, closed}
//   sent {name}                     {frames}: what it sent since, msgpack
//                                   (sent, settled and decision first wait
//                                   for the client to apply the changes
//                                   it queued)
//   edit {name, id, op, ...}        op mark {q, o, c, mark}, choose {q, o,
//                                   on, multiple} or settext {q, text};
//                                   frames, if given, are handled first in
//                                   the same task
//   decision {name, id}             {state, heads, accepted, edited,
//                                   inflight, note} of one decision
//   request {name, kind, fields}    {rid}: starts a request (Client.request)
//   settled {name, rid}             {settled, reply}: whether it resolved
//
// The package's Client over a real socket (the ws package), to a server
// the Go side runs:
//   connect {name, url, member}     a Client of document url's doc, ready
//   flush {name}                    waits until its edits are accepted
//   draft {name, id}                {questions, why, whyBy}: Client.state's
//   undo {name, id}, redo {name, id}  {result}: what Client.undo (redo)
//                                   resolved (null: nothing to take)
//   undostate {name, id}            {state}: Client.undoState
// (edit works on these too, with op splice {q, pos, del, ins} besides.)
//
// Run by hand: node test/interop.mjs < commands.jsonl

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { decode } from "@msgpack/msgpack";
import WebSocket from "ws";
import * as R from "../src/replica.js";
import { Client } from "../src/client.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const wasmPath = here + "../node_modules/@automerge/automerge/dist/automerge.wasm";
await R.init(readFileSync(wasmPath));

const A = R.A;
/** @type {Map<string, any>} */
const docs = new Map();
/** @type {Map<string, {c: Client, out: Uint8Array[]}>} */
const clients = new Map();
/** @type {Map<string, {settled: boolean, reply: any}>} requests started by the request command, by rid */
const requests = new Map();
// The client only reads WebSocket.OPEN; Node 20 has no WebSocket.
globalThis.WebSocket ??= /** @type {any} */ ({ OPEN: 1 });

/**
 * Waits until the client has applied the question:changes frames it
 * queued (it defers them while it is busy applying; see Client.incoming).
 * @param {Client} c
 */
async function applied(c) {
  for (let i = 0; c.incomingQueued && i < 500; i++) await new Promise((r) => setTimeout(r, 2));
}

function client(name) {
  const x = clients.get(name);
  if (!x) throw new Error(`no client ${name}`);
  return x;
}

const b64 = (/** @type {Uint8Array} */ b) => Buffer.from(b).toString("base64");
const bytes = (/** @type {string} */ s) => new Uint8Array(Buffer.from(s, "base64"));

function doc(name) {
  const d = docs.get(name);
  if (!d) throw new Error(`no document ${name}`);
  return d;
}

const handlers = {
  info: () => ({ version: JSON.parse(readFileSync(here + "../node_modules/@automerge/automerge/package.json", "utf8")).version, release: A.releaseInfo() }),
  load: (m) => {
    docs.set(m.name, R.load(bytes(m.doc)));
    return { heads: R.heads(doc(m.name)) };
  },
  create: (m) => {
    docs.set(m.name, R.create(m.questions));
    return { heads: R.heads(doc(m.name)) };
  },
  state: (m) => ({ state: R.readState(doc(m.name)), heads: R.heads(doc(m.name)) }),
  mark: (m) => {
    docs.set(m.name, R.setMark(doc(m.name), m.q, m.o, m.c, m.mark));
    return { heads: R.heads(doc(m.name)) };
  },
  choose: (m) => {
    docs.set(m.name, R.choose(doc(m.name), m.q, m.o, m.on, m.multiple));
    return { heads: R.heads(doc(m.name)) };
  },
  splice: (m) => {
    docs.set(m.name, R.spliceText(doc(m.name), m.q, m.pos, m.del, m.ins));
    return { heads: R.heads(doc(m.name)) };
  },
  settext: (m) => {
    docs.set(m.name, R.setText(doc(m.name), m.q, m.text));
    return { heads: R.heads(doc(m.name)) };
  },
  since: (m) => ({ changes: b64(R.changesSince(doc(m.name), m.heads ?? [])) }),
  apply: (m) => {
    const { doc: next, complete } = R.applyBatch(doc(m.name), bytes(m.changes));
    docs.set(m.name, next);
    return { heads: R.heads(next), complete };
  },
  save: (m) => ({ doc: b64(A.save(doc(m.name))) }),
  chunks: (m) => ({ types: A.getChangesSince(doc(m.name), m.heads ?? []).map((c) => c[8]) }),
  client: (m) => {
    const c = new Client({ doc: "interop", member: m.member, url: "ws://interop.invalid/sync" });
    const out = [];
    c.ws = /** @type {any} */ ({ readyState: 1, send: (b) => out.push(b), close() {} });
    clients.set(m.name, { c, out });
    return {};
  },
  frame: (m) => {
    // As the socket's onmessage does: decode the binary frame, handle it.
    client(m.name).c.handle(decode(bytes(m.frame)));
    return {};
  },
  frames: (m) => {
    const { c } = client(m.name);
    for (const f of m.frames) c.handle(decode(bytes(f)));
    return {};
  },
  receive: async (m) => {
    // As the socket's onmessage does, through Client.receive: a compressed
    // document inflates asynchronously and the frames after it wait.
    const { c } = client(m.name);
    let closed = false;
    const ws = c.ws;
    ws.close = () => { closed = true; };
    for (const f of m.frames) c.receive(ws, decode(bytes(f)));
    for (let i = 0; c.waiting && !closed && i < 500; i++) await new Promise((r) => setTimeout(r, 10));
    return { waiting: c.waiting !== null, closed };
  },
  sent: async (m) => {
    const x = client(m.name);
    await applied(x.c);
    const frames = x.out.map(b64);
    x.out.length = 0;
    return { frames };
  },
  edit: (m) => {
    const { c } = client(m.name);
    // Frames handed over in the same task, just before the edit.
    for (const f of m.frames ?? []) c.handle(decode(bytes(f)));
    if (m.op === "mark") c.setMark(m.id, m.q, m.o, m.c, m.mark);
    else if (m.op === "choose") c.choose(m.id, m.q, m.o, m.on, m.multiple);
    else if (m.op === "settext") c.setText(m.id, m.q, m.text);
    else if (m.op === "splice") c.spliceText(m.id, m.q, m.pos, m.del, m.ins);
    else throw new Error(`unknown edit ${m.op}`);
    return {};
  },
  request: (m) => {
    const { c } = client(m.name);
    const p = c.request(m.kind, m.fields ?? {});
    const rid = "r" + c.rid;
    const r = { settled: false, reply: null };
    requests.set(rid, r);
    p.then((reply) => {
      r.settled = true;
      r.reply = reply;
    });
    return { rid };
  },
  settled: async (m) => {
    await applied(client(m.name).c);
    await Promise.resolve(); // let resolved promises run their callbacks
    const r = requests.get(m.rid);
    if (!r) throw new Error(`no request ${m.rid}`);
    return { settled: r.settled, reply: r.reply && { ok: r.reply.ok, reason: r.reply.reason ?? "" } };
  },
  connect: async (m) => {
    const doc = new URL(m.url).searchParams.get("doc");
    const c = new Client({ doc, member: m.member, url: m.url, WebSocket });
    clients.set(m.name, { c, out: [] });
    c.start();
    await c.ready(10000, true);
    return {};
  },
  flush: async (m) => {
    await client(m.name).c.flush();
    return {};
  },
  draft: (m) => {
    const st = client(m.name).c.state(m.id);
    if (!st) throw new Error(`no decision ${m.id}`);
    return { questions: st.questions, why: st.record.why ?? "", whyBy: st.record.whyBy ?? "" };
  },
  undo: async (m) => ({ result: await client(m.name).c.undo(m.id) }),
  redo: async (m) => ({ result: await client(m.name).c.redo(m.id) }),
  undostate: (m) => ({ state: client(m.name).c.undoState(m.id) }),
  decision: async (m) => {
    await applied(client(m.name).c);
    const d = client(m.name).c.decisions.get(m.id);
    if (!d || !d.doc) throw new Error(`no replica of ${m.id}`);
    return { state: R.readState(d.doc), heads: R.heads(d.doc), accepted: d.accepted, edited: d.edited, inflight: d.inflight, note: d.note?.text ?? "" };
  },
};

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let out;
  try {
    const m = JSON.parse(line);
    const h = handlers[m.cmd];
    if (!h) throw new Error(`unknown command ${m.cmd}`);
    out = { ok: true, ...(await h(m)) };
  } catch (e) {
    out = { ok: false, error: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
// Input closed: the connected clients stop, and so does Node.
for (const { c } of clients.values()) if (c.Socket === WebSocket) c.stop();
process.exit(0);
