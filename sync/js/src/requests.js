// A client's requests (docs/PROTOCOL.md): each is sent with a fresh rid
// and settles with its reply, once the local replica shows its effect (a
// reply naming heads waits until the replica holds them). A request
// awaiting its reply when the connection is lost is kept and sent again,
// unchanged, once the next connection is welcomed, and settles with the
// outcome the server gives it: one that had taken effect is answered as
// it was, repeated. Only an ask fails, as disconnected: a new one could
// not be told from one sent again. A refusal rejects with a RefusedError
// and shows as the decision's note. As the Go client's requests.go and
// findings.go.
//
// The functions taking a Client are the bodies of its methods of the same
// name; they reach its private members as c["name"].

import * as R from "./replica.js";
import { RefusedError, refusal } from "./errors.js";
import { OFFLINE, READER, findingRefusal, refusalText } from "./messages.js";
import { knows } from "./apply.js";
import { reconnectDelay } from "./connection.js";
import { cellProvenance } from "./records.js";
import * as Undo from "./undo.js";

/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 * @typedef {import("./client.js").DecisionRecord} DecisionRecord
 * @typedef {import("./client.js").Definition} Definition
 * @typedef {import("./client.js").Item} Item
 * @typedef {import("./client.js").Note} Note
 * @typedef {import("./client.js").Reply} Reply
 * @typedef {import("./client.js").CellProvenance} CellProvenance
 */

/**
 * The findings requests: the server judges who may make them (an asked
 * member who only reads may still give a take).
 */
const FINDINGS = new Set(["question:explore", "question:explore-stop", "question:take", "question:page"]);

/**
 * Fails the requests awaiting a reply; with keep, all but an ask
 * (question:explore naming a member), which are sent again once the
 * next connection is welcomed: the server answers one that had already
 * taken effect as it did (docs/PROTOCOL.md, "Outcomes of a resent
 * request"), while a new ask could not be told from a resent one.
 * @param {Client} c
 * @param {string} reason
 * @param {boolean} keep
 */
export function failPending(c, reason, keep) {
  for (const [rid, p] of c["pending"]) {
    if (keep && !(p.m.kind === "question:explore" && p.m.member)) continue;
    clearTimeout(p.timer);
    c["pending"].delete(rid);
    p.resolve({ ok: false, reason, rid });
  }
}

/**
 * Sends a request and waits for its reply, at most requestTimeout (never
 * rejects: no connection when it is made, or a timeout, is a refusal
 * with reason disconnected or timeout). A connection lost before the
 * reply (or closing as it is made) does not end the wait: the request
 * is sent again, unchanged, once the next one is welcomed (an ask
 * fails, see failPending).
 * @param {Client} c
 * @param {string} kind
 * @param {Record<string, any>} fields
 * @returns {Promise<any>} the reply (open: each kind has fields of its own)
 */
export function request(c, kind, fields) {
  const rid = "r" + ++c.rid;
  const m = { kind, rid, ...fields };
  if (!c.welcomed || !c["ws"]) {
    return Promise.resolve({ kind, rid, ok: false, reason: "disconnected" });
  }
  c.send(m);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      c["pending"].delete(rid);
      c["arriving"].delete(rid);
      resolve({ kind, rid, ok: false, reason: "timeout" });
      c.notify();
    }, c.requestTimeout);
    c["pending"].set(rid, { resolve, timer, m, resent: false, refusals: 0 });
  });
}

/**
 * A reply to a request: an edit's goes to editReply; any other's records
 * are adopted and its request settles, once the replica holds the heads
 * it names.
 * @param {Client} c
 * @param {any} m
 */
export function reply(c, m) {
  if (m.kind === "question:edit") return c.editReply(m);
  if (m.ok) {
    if (m.record) c.adoptRecord(m.record);
    for (const r of m.records || []) c.adoptRecord(r);
    for (const r of m.results || []) if (r.record) c.adoptRecord(r.record);
    if (m.definition && m.id) c.adoptDefinition(m.id, m.definition);
  }
  const p = c["pending"].get(m.rid);
  if (!p) return;
  // A resent request refused as unavailable applied nothing this time,
  // which says nothing of its first send: in a cluster that one's write
  // may land after the resend was decided. Sent again (paced like a
  // redial), it is answered as it took effect.
  if (p.resent && !m.ok && m.reason === "unavailable") {
    setTimeout(() => c["pending"].get(m.rid) === p && c.send(p.m), reconnectDelay(p.refusals++, c));
    return;
  }
  c["pending"].delete(m.rid);
  // Ready when it resolves: a reply naming heads (a reopen's fresh
  // draft, an appended option or criterion) resolves once the replica
  // holds them, so the caller's next edit builds on its effect. The
  // server sends the changes first, but they may arrive later.
  const heads = m.ok && m.id && Array.isArray(m.heads) ? m.heads : [];
  if (heads.length && !c.holdsHeads(m.id, heads)) {
    c["arriving"].set(m.rid, { id: m.id, heads, reply: m, p });
    return;
  }
  clearTimeout(p.timer);
  p.resolve(m);
}

/**
 * Whether the decision's replica holds every one of heads.
 * @param {Client} c
 * @param {string} id
 * @param {string[]} heads
 */
export function holdsHeads(c, id, heads) {
  const d = c.decisions.get(id);
  if (!d || !d.core) return false;
  // knows is cheap; holds walks the history, so it runs only when the
  // reply's heads are not among those the replica has seen.
  return knows(d, heads) || R.holds(d.core, heads);
}

/**
 * Resolves the replies waiting for a decision's changes: those whose
 * heads the replica now holds, or all of them after a rebased document
 * (which holds their effect under another history).
 * @param {Client} c
 * @param {string} id
 * @param {boolean} rebased
 */
export function arrived(c, id, rebased) {
  for (const [rid, a] of c["arriving"]) {
    if (a.id !== id || (!rebased && !c.holdsHeads(id, a.heads))) continue;
    c["arriving"].delete(rid);
    clearTimeout(a.p.timer);
    a.p.resolve(a.reply);
  }
}

/**
 * Creates decisions (question:create). Resolves with their records once
 * their documents are here.
 * @param {Client} c
 * @param {{key: string, origin?: string, definition: Definition}[]} cards
 * @returns {Promise<DecisionRecord[]>}
 */
export async function create(c, cards) {
  const rep = await c["request"]("question:create", { cards });
  if (!rep.ok) throw refusal(rep, "question:create");
  const ids = (rep.records || []).map((/** @type {any} */ r) => r.id);
  await c.until(() => ids.every((/** @type {string} */ id) => !!c.decisions.get(id)?.core), c.requestTimeout, "the new decisions' documents");
  return ids.map((/** @type {string} */ id) => /** @type {Decision} */ (c.decisions.get(id)).record);
}

/**
 * Saves one or several decisions at once, each claiming the revision
 * its replica displays when save is called (their edits are first sent
 * and accepted; changes of others that arrive meanwhile are not claimed,
 * and make the save stale if they changed the draft).
 * Resolves with the records once every one is saved; otherwise rejects
 * with the first refusal (its reply holds every result). Each
 * decision's note says how it went.
 * @param {Client} c
 * @param {string[]} ids
 * @returns {Promise<DecisionRecord[]>}
 */
export async function save(c, ids) {
  const ds = /** @type {Decision[]} */ (ids.map((id) => c.decisions.get(id)).filter((d) => d && d.doc));
  const closed = ds.find((d) => d.record.status !== "open");
  if (ds.length < ids.length) throw new RefusedError("not_found", "no replica of this decision here", { kind: "question:submit", id: ids.find((id) => !c.decisions.get(id)?.doc) });
  if (closed) throw new RefusedError("resolved", `the decision is ${closed.record.status}`, { kind: "question:submit", id: closed.id });
  if (ds.length === 0) return [];
  const mark = (/** @type {Note} */ note) => ds.forEach((d) => (d.note = note));
  if (!c.write && c.welcomedOnce) {
    mark({ text: READER, tone: "error", at: Date.now() });
    c.notify();
    throw new RefusedError("forbidden", "this member only reads", { kind: "question:submit" });
  }
  ds.forEach((d) => (d.busy = "saving"));
  c.notify();
  // The revisions shown now are what the member saves: changes of others
  // that arrive while the edits are flushed were never seen, and the
  // server refuses the save as stale if they changed the draft.
  const items = ds.map((d) => ({ id: d.id, heads: R.heads(/** @type {any} */ (d.doc)) }));
  try {
    if (!(await c.idle(ds.map((d) => d.id), 8000))) {
      mark({ text: c.welcomed ? "Your last edits are still on their way to the server — try again in a moment." : OFFLINE, tone: "error", at: Date.now() });
      throw new RefusedError(c.welcomed ? "timeout" : "disconnected", "edits are still on their way", { kind: "question:submit" });
    }
    const rep = await c["request"]("question:submit", { items });
    if (!rep.ok) {
      mark({ text: refusalText("question:submit", rep.reason, rep.message), tone: "error", at: Date.now() });
      throw refusal(rep, "question:submit");
    }
    /** @type {RefusedError|null} */
    let first = null;
    for (const res of rep.results || []) {
      const d = c.decisions.get(res.id);
      if (!d) continue;
      if (res.ok) {
        d.edited = false;
        d.note = { text: "Saved.", tone: "ok", at: Date.now() };
      } else {
        first ??= new RefusedError(/** @type {any} */ (res.reason || "unknown"), res.message, { kind: "question:submit", id: res.id, reply: rep });
        d.note = { text: refusalText("question:submit", res.reason, res.message), tone: "error", at: Date.now() };
      }
    }
    if (first) throw first;
    return ds.map((d) => d.record);
  } finally {
    ds.forEach((d) => (d.busy = ""));
    c.notify();
  }
}

/**
 * Runs a request about one decision, showing its outcome as the
 * decision's note. Resolves with the reply, or rejects with a
 * RefusedError.
 * @param {Client} c
 * @param {string} id
 * @param {string} kind
 * @param {Record<string, any>} fields
 * @param {string} busy
 * @param {string} okText
 * @returns {Promise<Reply>}
 */
export async function act(c, id, kind, fields, busy, okText) {
  // Findings requests are the server's to judge: an asked member who
  // only reads may still give their take.
  const findings = FINDINGS.has(kind);
  const d = c.decisions.get(id) || (findings ? /** @type {Decision} */ (/** @type {any} */ ({})) : null);
  if (!d) throw new RefusedError("not_found", "no such decision here", { kind, id });
  if (!findings && !c.write && c.welcomedOnce) {
    d.note = { text: READER, tone: "error", at: Date.now() };
    c.notify();
    throw new RefusedError("forbidden", "this member only reads", { kind, id });
  }
  d.busy = busy;
  c.notify();
  // A reopen or a why acts on the saved answer shown (its generation):
  // a decision shown open has none. Sent without one, it would act on
  // an answer saved meanwhile, and, sent again after a lost reply, be
  // refused though it took effect.
  const rep = "generation" in fields && d.record.status === "open"
    ? { ok: false, reason: "not_settled" }
    : await c["request"](kind, { id, ...fields });
  d.busy = "";
  const text = findings ? findingRefusal : refusalText;
  d.note = rep.ok
    ? okText ? { text: okText, tone: "ok", at: Date.now() } : null
    : { text: text(kind, rep.reason, rep.message), tone: "error", at: Date.now() };
  c.notify();
  if (!rep.ok) throw refusal(rep, kind, id);
  return rep;
}

/**
 * The generation of the saved answer the client shows for a decision;
 * undefined (not sent) unless it shows it settled. A reopen or a why
 * names the answer it acts on, so that the server tells one sent again
 * after a lost reply from a new one, and refuses one whose answer was
 * reopened and saved over since as stale; of a decision shown open, it
 * is refused (not_settled) without asking the server (see act).
 * @param {Client} c
 * @param {string} id
 * @returns {number|undefined}
 */
export function savedGeneration(c, id) {
  const r = c.decisions.get(id)?.record;
  return r?.status === "settled" && r.generation || undefined;
}

/**
 * Reopens the settled decision's saved answer the client shows (one
 * saved again since is refused as stale); resolves once the replica
 * holds its fresh draft.
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<DecisionRecord>}
 */
export async function reopen(c, id) {
  await c.act(id, "question:reopen", { generation: c.savedGeneration(id) }, "reopening", "Reopened: the saved answer stays in the history while you draft the next one.");
  return /** @type {Decision} */ (c.decisions.get(id)).record;
}

/**
 * Discards the decision (question:discard).
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<DecisionRecord>}
 */
export async function discard(c, id) {
  await c.act(id, "question:discard", {}, "discarding", "Discarded. Its history is kept.");
  return /** @type {Decision} */ (c.decisions.get(id)).record;
}

/**
 * Sets the why (one plain sentence; empty clears it) of the settled
 * decision's saved answer the client shows, as reopen names it: a group
 * to undo. An undo's (seen given: the why it replaces) resolves null,
 * and sets no note, when another why replaced seen (refused as stale).
 * @param {Client} c
 * @param {string} id
 * @param {string} text
 * @param {string} [seen]
 * @returns {Promise<DecisionRecord|null>}
 */
export async function why(c, id, text, seen) {
  // seen: the why shown, so that one another member set meanwhile is
  // never overwritten unseen (refused as stale).
  const shown = c.decisions.get(id)?.record?.why ?? "";
  try {
    await c.act(id, "question:why", { text, generation: c.savedGeneration(id), seen: seen ?? shown }, "why", text ? "Why saved." : "Why cleared.");
  } catch (e) {
    if (seen === undefined || /** @type {any} */ (e).reason !== "stale") throw e;
    /** @type {Decision} */ (c.decisions.get(id)).note = null;
    return null;
  }
  const d = /** @type {Decision} */ (c.decisions.get(id));
  const to = d.record.why ?? "";
  if (seen === undefined && to !== shown) Undo.made(c, d, { kind: "why", question: "", cell: "", from: shown, to });
  return d.record;
}

/**
 * Appends an option or a criterion; resolves once its cells can be
 * marked. The idempotency key is kept until a definite answer, so a
 * retry after a lost connection reuses it.
 * @param {Client} c
 * @param {"option"|"criterion"} what
 * @param {string} id
 * @param {string} qid
 * @param {string} label
 * @returns {Promise<Item>} the new option or criterion
 */
export async function append(c, what, id, qid, label) {
  const slot = `${what}\u0000${id}\u0000${qid}\u0000${label.toLowerCase()}`;
  let key = c.appendKeys.get(slot);
  if (!key) {
    key = "web-" + R.newActor().slice(0, 20);
    c.appendKeys.set(slot, key);
  }
  try {
    const rep = await c.act(id, "question:" + what, { question: qid, key, label }, "append-" + what, "");
    c.appendKeys.delete(slot);
    return rep[what] || { id: "", label };
  } catch (e) {
    if (!(e instanceof RefusedError) || (e.reason !== "disconnected" && e.reason !== "timeout")) c.appendKeys.delete(slot);
    throw e;
  }
}

/**
 * Who set each value of a decision's current draft, when, and what it
 * replaced, as the server's authority recorded it
 * (question:provenance), sorted by question, kind and cell. A value
 * nobody set since the draft was laid out has no entry. Members who
 * only read may ask. It holds committed edits: another member's edit
 * shown here a moment before its commit may not be in it yet
 * (docs/PROTOCOL.md). Rejects with a RefusedError (not_found,
 * unavailable, disconnected, timeout).
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<CellProvenance[]>}
 */
export async function provenance(c, id) {
  const rep = await c["request"]("question:provenance", { id });
  if (!rep.ok) throw refusal(rep, "question:provenance", id);
  return (Array.isArray(rep.provenance) ? rep.provenance : []).map(cellProvenance);
}
