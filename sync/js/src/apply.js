// Frames from the server applied to a client's decisions. The welcome
// names every decision with its record; each decision's document then
// arrives whole (question:doc: its first load, a catch-up too long for
// changes, or a rebased document) or as the changes since the heads the
// hello named (question:changes). question:changes frames that arrive
// together are applied in one automerge call, and whether a frame's heads
// are in the history is read from the heads the replica has held
// (Decision.known), never from automerge's hasHeads, whose cost grows with
// the history (bench/apply.mjs). A rebased document replaces the replica,
// which carries its unaccepted draft values over as fresh edits, as the Go
// client's rebase.go does. Events adopt the records they carry.
//
// The functions taking a Client are the bodies of its methods of the same
// name; they reach its private members as c["name"].

import * as R from "./replica.js";
import { RefusedError } from "./errors.js";
import { now } from "./presence.js";
import { display, headsOf } from "./records.js";
import * as Undo from "./undo.js";

/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 */

const A = R.A;

/** Request kinds; their replies carry the same kind. */
const REQUESTS = new Set([
  "question:create", "question:edit", "question:submit", "question:reopen", "question:discard",
  "question:option", "question:criterion", "question:why", "question:expand",
  "question:explore", "question:explore-stop", "question:take", "question:page", "question:provenance",
]);

/** Event kinds: another member changed a decision's record. */
const EVENTS = new Set([
  "question:created", "question:meta", "question:resolved", "question:reopened", "question:discarded",
  "question:option-added", "question:criterion-added",
]);

/**
 * Handles a decoded frame: question:changes is queued (see
 * queueChanges), a reply settles its request, an event adopts its
 * record, and the welcome and whole documents are taken here.
 * @param {Client} c
 * @param {any} m
 */
export function handle(c, m) {
  if (!m || typeof m.kind !== "string") return;
  if (m.kind === "question:changes") return c.queueChanges(m);
  // Every other frame sees the changes that came before it applied,
  // except an accepted edit's reply: it only moves the accepted heads,
  // to the reply's if the replica holds them and to the heads it sent
  // otherwise, so the queue may keep growing for one larger apply.
  if (!(m.kind === "question:edit" && m.ok === true)) c.flushChanges();
  if (REQUESTS.has(m.kind)) return c.reply(m);
  if (EVENTS.has(m.kind)) return c.event(m);
  switch (m.kind) {
    case "welcome":
      c.welcomed = true;
      c.welcomedOnce = true;
      c.welcomedAt = now();
      c.conn = "open";
      c.member = m.member || c.member;
      c.write = m.write === true;
      // A storage problem stays said: the draft shown is the server's.
      if (!c.storageProblem || c.note?.text !== c.storageProblem.message) c.note = null;
      for (const r of m.records || []) c.adoptRecord(r);
      c.dropUnnamed(m.records || []);
      // Requests whose reply the last connection lost, as they were sent.
      for (const p of c["pending"].values()) {
        p.resent = true;
        c.send(p.m);
      }
      c.presenceOut.resume();
      return;
    case "question:doc":
      return c.applyDoc(m);
    case "error":
      c.note = { text: `The server reported a problem: ${m.message || m.reason}`, tone: "error", at: Date.now() };
      if (m.rid && c["pending"].has(m.rid)) {
        const p = c["pending"].get(m.rid);
        c["pending"].delete(m.rid);
        clearTimeout(p?.timer);
        p?.resolve({ ok: false, reason: m.reason, message: m.message });
      }
      // The close that follows ends the redials (lost).
      if (m.reason === "version") c.refused = new RefusedError("version", m.message);
      return;
  }
}

/**
 * A whole document (question:doc): the first load of a decision, a
 * catch-up the server sends whole, or a rebased document.
 * @param {Client} c
 * @param {any} m
 */
export function applyDoc(c, m) {
  const d = c.decision(m.id);
  const srv = R.load(/** @type {Uint8Array} */ (m.doc));
  const how = c.adoptDoc(d, srv);
  d.synced = true;
  if (c["arriving"].size) c.arrived(d.id, how === "rebased");
  c.push(d);
}

/**
 * Takes srv, a document the server sent whole, as the decision's
 * replica. When srv's history holds the accepted heads, it is the same
 * history: the local changes the server has not seen are merged in. When
 * it does not, srv is a rebased document (the same accepted state under
 * a fresh history, docs/PROTOCOL.md): the replica replaces its document
 * with it, never merging the two histories, and carries its own
 * not-yet-accepted draft values over as fresh local edits. An edit still
 * in flight belonged to the old history: its reply is ignored, and the
 * carried values go out in the next edit.
 * @param {Client} c
 * @param {Decision} d
 * @param {any} srv
 * @returns {"merged"|"rebased"|"loaded"}
 */
export function adoptDoc(c, d, srv) {
  const old = d.doc;
  if (d.undo) d.undo.burst = null; // what it brings may alter the text
  const heads = R.heads(srv);
  if (!old || !d.accepted.length) {
    d.doc = srv;
    d.accepted = heads;
    d.known = new Set(heads);
    return "loaded";
  }
  // Nothing local beyond what the server accepted (always so for a
  // member who only reads): the server's document holds all of it.
  const nothingLocal = !d.inflight && covers(d.accepted, R.heads(old));
  // A whole document is rare (a first load, a catch-up too long for
  // changes, a reset): hasHeads' cost is paid here, not per change.
  if (R.holds(srv, d.accepted)) {
    if (nothingLocal) {
      // Nothing local beyond what the server accepted: the server's
      // document already holds all of it, so it replaces the replica
      // (merging would apply every missed change once more).
      d.doc = srv;
      d.accepted = heads;
      d.known = new Set(heads);
      return "loaded";
    }
    d.doc = A.merge(old, srv);
    d.accepted = heads;
    noteHeads(d, heads);
    noteHeads(d, A.getHeads(d.doc));
    return "merged";
  }
  // A rebased document: with nothing to carry, it is taken as it is.
  const { doc, carried } = d.record.status === "open" && !nothingLocal ? R.carryOver(old, R.carryBase(old, d.accepted, srv), srv) : { doc: srv, carried: 0 };
  d.doc = doc;
  d.accepted = heads;
  d.known = new Set(heads);
  noteHeads(d, A.getHeads(doc));
  d.inflight = "";
  d.sent = [];
  d.held = false;
  if (carried) d.edited = true;
  Undo.clear(c, d, "rebase");
  return "rebased";
}

/**
 * Queues a question:changes frame; frames of the same decision that
 * arrive before the queue is flushed (or before the next frame of another
 * kind) are applied together, in order, with the last frame's heads.
 * automerge's cost per call grows with the document while its cost per
 * change in a call does not, so the queue is flushed at the end of the
 * task when the replica has been idle, otherwise once as much time has
 * passed since the last apply as that apply took: under load applying
 * takes at most about half the time, and each call takes more changes.
 * @param {Client} c
 * @param {any} m
 */
export function queueChanges(c, m) {
  if (typeof m.id !== "string") return;
  let q = c["incoming"].get(m.id);
  if (!q) {
    q = { parts: [], heads: [], cells: [], ws: c["ws"] };
    c["incoming"].set(m.id, q);
  }
  if (Array.isArray(m.cells)) q.cells.push(...m.cells);
  // An empty batch (a replica already up to date) has no changes field:
  // msgpack omits zero values.
  if (m.changes instanceof Uint8Array && m.changes.length) q.parts.push(m.changes);
  q.heads = m.heads || [];
  if (c.incomingQueued) return;
  c.incomingQueued = true;
  const apply = () => {
    c.flushChanges();
    c.notify();
  };
  const wait = Math.min(c.applied.end + c.applied.took, now() + MAX_APPLY_WAIT) - now();
  if (wait <= 0) queueMicrotask(apply);
  else c.applyTimer = setTimeout(apply, wait);
}

/**
 * Applies the queued question:changes frames, one call per decision.
 * @param {Client} c
 */
export function flushChanges(c) {
  c.incomingQueued = false;
  clearTimeout(c.applyTimer);
  c.applyTimer = null;
  if (c["incoming"].size === 0) return;
  const start = now();
  const queued = [...c["incoming"]];
  c["incoming"].clear();
  for (const [id, q] of queued) {
    if (q.ws !== c["ws"]) continue; // from a connection since dropped
    const changes = q.parts.length === 1 ? q.parts[0] : R.concat(q.parts);
    c.applyChanges({ id, changes, heads: q.heads, cells: q.cells });
  }
  const end = now();
  c.applied = { end, took: end - start };
}

/**
 * Accepted changes (question:changes): one change or several
 * concatenated (a commit group's), applied in one call, with the heads
 * after them. Its cost does not grow with the decision's history, and
 * is automerge's apply and little more (bench/receive.mjs): the
 * document's values are built when read, and the stored copy takes the
 * bytes as they came (storage.js).
 * @param {Client} c
 * @param {any} m
 */
export function applyChanges(c, m) {
  const d = c.decisions.get(m.id);
  if (!d || !d.core) {
    c.resync();
    return;
  }
  // A replica already up to date gets an empty batch, which msgpack
  // omits (zero values are not written).
  const changes = m.changes instanceof Uint8Array ? m.changes : new Uint8Array(0);
  if (changes.length) {
    // A burst under way ends if they alter its text (see Undo.received).
    const before = d.undo?.burst && headsOf(d);
    // The handle alone: d.doc's values catch up when read (see Decision.core).
    const now = R.receive(d.core, changes, m.heads && m.heads.slice().sort());
    d.behind = true;
    d.heads = now;
    // The stored copy takes the bytes as they came (storage.js, Saved).
    d.saved?.push(changes);
    if (!now) {
      console.warn("changes for", m.id, "miss dependencies; resyncing");
      c.resync();
      return;
    }
    noteHeads(d, headsOf(d));
    if (before) Undo.received(d, before);
  }
  const heads = (m.heads || []).slice().sort();
  if (heads.length && knows(d, heads)) d.accepted = heads;
  settle(d);
  d.synced = true;
  if (c["arriving"].size) c.arrived(d.id, false);
  c.push(d);
  Undo.heard(d, m.cells || []);
  c.noticeOverwrites(d.id, m.cells || []);
}

/**
 * An event (another member's change to a decision's record): the record
 * is adopted, and the decision's note says who did what.
 * @param {Client} c
 * @param {any} m
 */
export function event(c, m) {
  if (m.record) c.adoptRecord(m.record);
  if (m.definition) c.adoptDefinition(m.id, m.definition);
  const d = c.decisions.get(m.id);
  if (!d || !m.by || m.by === c.member) return;
  const who = display(m.by);
  const say = {
    "question:resolved": `${who} saved this decision.`,
    "question:reopened": `${who} reopened this decision.`,
    "question:discarded": `${who} discarded this decision.`,
    "question:option-added": `${who} added the option “${m.option?.label ?? ""}”.`,
    "question:criterion-added": `${who} added the criterion “${m.criterion?.label ?? ""}”.`,
  }[/** @type {string} */ (m.kind)];
  if (say) d.note = { text: say, tone: "info", at: Date.now() };
}

/** The longest a received change waits to be applied with others (ms). */
const MAX_APPLY_WAIT = 50;

/**
 * Adds heads to the hashes the replica has held as heads.
 * @param {Decision} d
 * @param {string[]} heads
 */
export function noteHeads(d, heads) {
  for (const h of heads) d.known.add(h);
}

/**
 * Whether the replica's history holds every one of heads, which the server
 * reported (see Decision.known).
 * @param {Decision} d
 * @param {string[]} heads
 */
export function knows(d, heads) {
  for (const h of heads) if (!d.known.has(h)) return false;
  return true;
}

/**
 * Whether every one of heads is in accepted (which may also name some of
 * their ancestors, see editReply).
 * @param {string[]} accepted
 * @param {string[]} heads
 */
function covers(accepted, heads) {
  return heads.every((h) => accepted.includes(h));
}

/**
 * @param {string[]} a sorted heads
 * @param {string[]} b sorted heads
 * @returns {string[]} both, sorted, each once
 */
export function union(a, b) {
  return [...new Set([...a, ...b])].sort();
}

/**
 * Forgets the known hashes that can never be reported again: once the
 * server has accepted the replica's whole history (nothing in flight, the
 * heads are the accepted ones), every other hash it held as a head has a
 * descendant on the server. This keeps known as small as the heads.
 * @param {Decision} d
 */
export function settle(d) {
  if (d.inflight || d.known.size <= d.accepted.length) return;
  if (same(headsOf(d), d.accepted)) d.known = new Set(d.accepted);
}

/**
 * Whether a and b hold the same heads. Both are sorted, as every list of
 * heads a decision keeps is (headsOf, accepted, sent).
 * @param {string[]} a
 * @param {string[]} b
 */
export function same(a, b) {
  return a.join() === b.join();
}
