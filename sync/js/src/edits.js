// A client's local edits. An edit applies to the decision's replica at
// once and goes out as question:edit carrying the changes since the
// accepted heads, one edit in flight per decision: changes made meanwhile
// go in the next. A refusal with a reset replaces the replica with the
// accepted document the reply carries, under a fresh actor; flush and
// save wait until the edits are accepted (idle), so that the heads a save
// claims are the ones displayed. As the Go client's edits.go.
//
// The functions taking a Client are the bodies of its methods of the same
// name; they reach its private members as c["name"].

import * as R from "./replica.js";
import { RefusedError, refusal } from "./errors.js";
import { READER, refusalText } from "./messages.js";
import { knows, noteHeads, same, settle, union } from "./apply.js";
import { headsOf } from "./records.js";
import { clear } from "./undo.js";

/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 */


/**
 * The reply to the decision's edit in flight. Accepted (repeated too),
 * it moves the accepted heads; refused with a reset, the replica takes
 * the accepted document the reply carries (a rebased one keeps the
 * unaccepted values, carried over); refused without one, the changes are
 * held, to go again with the next local change or connection.
 * @param {Client} c
 * @param {any} m
 */
export function editReply(c, m) {
  const d = c.decisions.get(m.id);
  if (!d || d.inflight !== m.rid) return;
  const sent = d.sent;
  d.inflight = "";
  d.sent = [];
  /** @type {any} the reset's document, once loaded */
  let srv = null;
  if (m.ok) {
    // repeated too: changes the server already held (sent again after a
    // lost reply) were accepted then, and still are.
    const heads = (m.heads || []).slice().sort();
    // Changes the server sent before this reply may still be queued
    // (see handle): the reply's heads come after theirs, so they are
    // the ones to accept once the queue is applied.
    // Until then the server is known to hold what it accepted before
    // and what this edit sent: both, not the sent heads alone, or the
    // next edit would send back every change applied since they were
    // taken.
    const q = c["incoming"].get(d.id);
    if (q && heads.length) q.heads = heads;
    d.accepted = heads.length && knows(d, heads) ? heads : union(d.accepted, sent);
    settle(d);
  } else if (m.reset && m.doc && d.doc && d.accepted.length && !R.holds(srv = R.load(m.doc), d.accepted)) {
    // The edit was made against a history the server has since rebased
    // (reason stale): the local values are carried over onto the
    // rebased document and go out again, so nothing is lost and there is
    // nothing to tell.
    c.adoptDoc(d, srv);
    if (c["arriving"].size) c.arrived(d.id, true);
  } else if (m.reset && m.doc) {
    d.doc = srv || R.load(m.doc);
    d.accepted = R.heads(d.doc);
    d.known = new Set(d.accepted);
    d.held = false;
    d.edited = false;
    d.reset = { n: ++c.resets, reply: m };
    clear(c, d, "reset");
    d.note = {
      text: m.reason === "forbidden" ? READER : `Your last change was not accepted — ${lower(refusalText("question:edit", m.reason, m.message))} The accepted answer shows again.`,
      tone: "error", at: Date.now(),
    };
  } else {
    // Kept, and sent again with the next local change or connection.
    d.held = true;
    d.note = { text: refusalText("question:edit", m.reason, m.message), tone: "error", at: Date.now() };
    if (m.reason === "forbidden") d.edited = false;
  }
  c.push(d);
}

/**
 * Sends the decision's unaccepted changes when nothing is in flight.
 * @param {Client} c
 * @param {Decision} d
 */
export function push(c, d) {
  if (!c.welcomed || !d.synced || d.inflight || d.held || !d.core) return;
  const heads = headsOf(d);
  if (same(heads, d.accepted)) return;
  const changes = R.changesSince(d.core, d.accepted);
  if (changes.length === 0) {
    d.accepted = heads;
    return;
  }
  const rid = "e" + ++c.rid;
  if (c.send({ kind: "question:edit", rid, id: d.id, changes })) {
    d.inflight = rid;
    d.sent = heads;
  }
}

/**
 * Applies a local edit to a decision's replica and sends it. The
 * replica shows it when this returns. Throws a RefusedError (and
 * changes nothing) for a member who only reads (forbidden), a decision
 * that is not open (resolved) or whose document has not arrived
 * (not_found).
 * @param {Client} c
 * @param {string} id
 * @param {(doc: any) => any} fn returns the new document
 */
export function edit(c, id, fn) {
  // Queued changes stay queued: the local change is concurrent with
  // them, as it would be had they arrived a moment later.
  const d = c.decisions.get(id);
  if (!d || !d.doc) throw new RefusedError("not_found", "no replica of this decision here (yet)", { kind: "question:edit", id });
  if (!c.write && c.welcomedOnce) {
    d.note = { text: READER, tone: "error", at: Date.now() };
    c.notify();
    throw new RefusedError("forbidden", "this member only reads", { kind: "question:edit", id });
  }
  if (d.record.status !== "open") throw new RefusedError("resolved", `the decision is ${d.record.status}`, { kind: "question:edit", id });
  const next = fn(d.doc);
  if (next === d.doc) return;
  d.doc = next;
  noteHeads(d, headsOf(d));
  d.held = false;
  d.edited = true;
  c.editedSinceStore = true;
  if (d.note && d.note.tone !== "error") d.note = null;
  c.push(d);
  c.notify();
}

/**
 * Whether the decision has changes in flight or not accepted yet.
 * @param {Client} c
 * @param {Decision} d
 */
export function unsent(c, d) {
  return !!d.core && (d.inflight !== "" || !same(headsOf(d), d.accepted));
}

/**
 * Waits until none of ids has an edit in flight or unsent (false after
 * ms, or at once when there is no connection); throws the refusal of an
 * edit of theirs refused with a reset meanwhile.
 * @param {Client} c
 * @param {string[]} ids
 * @param {number} ms
 */
export async function idle(c, ids, ms) {
  const end = Date.now() + ms;
  const since = c.resets;
  for (let first = true; ; first = false) {
    const ds = ids.map((id) => c.decisions.get(id));
    const reset = ds.find((d) => d?.reset && d.reset.n > since);
    if (reset) throw refusal(reset.reset?.reply, "question:edit", reset.id);
    const busy = ds.filter((d) => d && c.unsent(d));
    if (busy.length === 0) return true;
    if (Date.now() > end || (first && !c.welcomed)) return false;
    for (const d of busy) if (d) { d.held = false; c.push(d); }
    await new Promise((r) => setTimeout(r, 40));
  }
}

/**
 * Resolves once the decisions' edits are all accepted (none unsent or
 * in flight), waiting through a lost connection; rejects with the
 * refusal of an edit the server refused meanwhile (its replica then
 * shows the accepted draft again), or with disconnected (no connection
 * when called, or none at the end) or timeout after ms.
 * @param {Client} c
 * @param {string[]|undefined} ids every decision when undefined
 * @param {number} ms
 */
export async function flush(c, ids, ms) {
  if (!(await c.idle(ids || c.order, ms))) {
    throw new RefusedError(c.welcomed ? "timeout" : "disconnected", "edits are not all accepted yet");
  }
}

/** @param {string} s */
function lower(s) {
  return s.charAt(0).toLowerCase() + s.slice(1);
}
