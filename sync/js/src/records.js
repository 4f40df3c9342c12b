// The decisions a client holds and the records the server sends for them:
// msgpack omits zero values, so what arrives is filled in before it is
// kept, and a decision's definition is adopted forward only (never fewer
// options or criteria than held), as the Go client's records.go does.
// A decision's replica is d.core, whose automerge handle takes received
// changes at once (apply.js); d.doc is the same document with its
// JavaScript values brought up to date when read.

import { current, heads } from "./replica.js";
import { recorded } from "./undo.js";

/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 * @typedef {import("./client.js").DecisionRecord} DecisionRecord
 * @typedef {import("./client.js").Definition} Definition
 * @typedef {import("./client.js").Finding} Finding
 * @typedef {import("./client.js").CellProvenance} CellProvenance
 */

/**
 * @param {Client} c
 * @param {string} id
 * @returns {Decision}
 */
export function decision(c, id) {
  let d = c.decisions.get(id);
  if (!d) {
    d = {
      id, record: /** @type {any} */ ({ id, status: "open", definition: { questions: [] } }), core: null, behind: false,
      get doc() {
        if (this.behind) {
          this.behind = false;
          this.core = current(this.core);
        }
        return this.core;
      },
      set doc(doc) {
        this.core = doc;
        this.behind = false;
        // another document: its heads are read again, and stored whole
        this.heads = this.saved = null;
      },
      accepted: [], inflight: "", sent: [], known: new Set(), held: false, synced: false, edited: false, note: null, busy: "",
      heads: null, view: null, viewKey: "", stored: null, saved: null, reset: null, undo: null,
    };
    c.decisions.set(id, d);
    c.order.push(id);
  }
  return d;
}

/**
 * The decision's heads, sorted: read from its replica once after each
 * change to it (automerge spells every head out, 15 µs for 16 heads).
 * @param {Decision} d
 * @returns {string[]}
 */
export function headsOf(d) {
  return (d.heads ??= heads(d.core));
}

/**
 * Forgets decisions the welcome does not name (restored from storage
 * but gone from the server): the welcome lists every decision of the
 * document, and ready() waits for each held one.
 * @param {Client} c
 * @param {any[]} records
 */
export function dropUnnamed(c, records) {
  const named = new Set(records.map((r) => r && r.id));
  if (c.order.every((id) => named.has(id))) return;
  for (const id of c.order) if (!named.has(id)) c.decisions.delete(id);
  c.order = c.order.filter((id) => named.has(id));
}

/**
 * @param {Client} c
 * @param {DecisionRecord} rec
 */
export function adoptRecord(c, rec) {
  if (!rec || !rec.id) return;
  const d = c.decision(rec.id);
  const next = normalizeRecord(rec);
  next.definition = forward(d.record.definition, next.definition);
  const was = d.record;
  d.record = next;
  if (next.status !== "open") d.edited = false;
  recorded(c, d, was);
}

/**
 * @param {Client} c
 * @param {string} id
 * @param {Definition} def
 */
export function adoptDefinition(c, id, def) {
  const d = c.decisions.get(id);
  if (!d || !def) return;
  d.record = { ...d.record, definition: forward(d.record.definition, normalizeDefinition(def)) };
}

/**
 * Definitions only grow: keep held when in has fewer options or criteria
 * for any held question, or lacks one.
 * @param {Definition} held
 * @param {Definition} inc
 * @returns {Definition}
 */
export function forward(held, inc) {
  for (const hq of held?.questions || []) {
    const iq = (inc?.questions || []).find((q) => q.id === hq.id);
    if (!iq) return held;
    if ((iq.options || []).length < (hq.options || []).length || (iq.criteria || []).length < (hq.criteria || []).length) return held;
  }
  return inc;
}

/**
 * msgpack frames omit zero values: fill them in.
 * @param {any} def
 * @returns {Definition}
 */
export function normalizeDefinition(def) {
  return {
    questions: (def?.questions || []).map((/** @type {any} */ q) => ({
      ...q, options: q.options || [], criteria: q.criteria || [], multiple: q.multiple === true,
    })),
  };
}

/**
 * @param {any} rec
 * @returns {DecisionRecord}
 */
export function normalizeRecord(rec) {
  return { ...rec, status: rec.status || "open", definition: normalizeDefinition(rec.definition), history: rec.history || [] };
}

/**
 * The findings of a record (msgpack omits an empty list).
 * @param {any} rec
 * @returns {Finding[]}
 */
export function findingsOf(rec) {
  return Array.isArray(rec?.findings) ? rec.findings : [];
}

/**
 * A provenance entry with its zero values filled in (msgpack omits them).
 * @param {any} c
 * @returns {CellProvenance}
 */
export function cellProvenance(c) {
  const str = (/** @type {any} */ v) => (typeof v === "string" ? v : "");
  const at = c.at instanceof Date ? c.at : c.at ? new Date(c.at) : null;
  return {
    generation: Number(c.generation) || 0, question: str(c.question), kind: c.kind, cell: str(c.cell), value: str(c.value),
    by: str(c.by), at: at && !isNaN(at.getTime()) ? at : null, change: str(c.change), was: str(c.was), wasBy: str(c.wasBy),
  };
}

/**
 * A member's login as a person reads it: capitalized, and the Planner
 * for "planner".
 * @param {string} login
 */
export function display(login) {
  if (!login) return "";
  if (login === "planner") return "the Planner";
  return login.charAt(0).toUpperCase() + login.slice(1);
}
