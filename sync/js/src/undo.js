// Undo and redo of the member's own edits (docs/PROTOCOL.md, "Undo"),
// as the Go client's undo.go. Each decision keeps two stacks of edit
// groups (Decision.undo), stored with its draft: a mark, a choice, a why,
// or a typing burst on one written answer. A mark, choice or why goes back
// only if it still holds the value the group set, else the undo is
// skipped and names who set it.
//
// Text is reverted on the characters themselves, so others' typing stays.
// Which characters are the burst's, and which it deleted and where, comes
// from replaying its splices over the span it touched (never from
// comparing texts: repeated characters would confuse that), so no change
// from elsewhere may alter the text inside a burst: one that does ends it
// (received). The replay gives positions in the text as the burst left it
// (the group's heads) and as it found it (base); automerge turns those
// into the characters (cursors), which the revert deletes, or inserts
// again after the character that preceded them, on a fork of the replica
// under a fresh actor, whose change the replica takes as a local edit.
// The revert is replayed the same way, for the redo.
//
// A character inserted again is a new one to automerge. So that an older
// group still finds it (type "hello", pause, delete "lo", undo, undo:
// nothing is left), each such copy is noted as standing for the character
// it replaces (Stacks.lin, Stacks.cur), and a revert acts on a
// character's newest copy.
//
// The functions taking a Client are the bodies of its methods of the same
// name.

import * as R from "./replica.js";
import { now } from "./presence.js";
import { headsOf } from "./records.js";
import * as Requests from "./requests.js";

/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 */

const A = R.A;

/**
 * One edit group, as undoState names it: kind, the question ("" for a
 * why), cell (a mark's "option/criterion", a multiple choice's option id,
 * else ""), and the value before (from) and after (to): a mark ("" for
 * none); a single choice's option ("" for none); "chosen" or "" for a
 * multiple choice's option; a why; for text, what the burst deleted
 * (from) and what it inserted (to).
 * @typedef {{kind: "mark"|"choice"|"text"|"why", question: string, cell: string, from: string, to: string}} UndoGroup
 */

/**
 * What an undo or a redo did: done false when it was skipped (the value
 * no longer held what the group left); by names who set the value as it
 * now is, when the client knows ("" otherwise): the member when done.
 * @typedef {{group: UndoGroup, done: boolean, by: string}} UndoResult
 */

/**
 * What emptied both stacks last, until the next group: a save, a
 * discard, a reopen, a rebased document taken, a reset by a refused edit.
 * @typedef {""|"save"|"discard"|"reopen"|"rebase"|"reset"} Cleared
 */

/**
 * A decision's undo state: the groups undo and redo would take (null:
 * none), and what emptied both stacks last.
 * @typedef {{undo: UndoGroup|null, redo: UndoGroup|null, cleared: Cleared}} UndoState
 */

/**
 * A group as kept. A text group also says how to revert what it did last
 * (the burst, or its redo; the undo, for a redo): heads, the revision it
 * is reverted at; ops, the splices made there, last first; base, the
 * revision before it, where the characters ins puts back were, from src
 * on.
 * @typedef {UndoGroup & {heads?: string[], base?: string[], ops?: Op[]}} Group
 * @typedef {[pos: number, del: number, ins: string, src: number]} Op
 */

/**
 * A decision's stacks: undo (newest last) and redo; what cleared them
 * last; by, who set each value last as far as the client heard
 * ("kind question cell" to [value, member]); lin, the character (an
 * automerge cursor) each copy an undo or redo inserted stands for, and
 * cur, that character's newest copy; n, bumped on every change (the
 * stored copy's signature); the typing burst under way; the undoState
 * shown.
 * @typedef {{undo: Group[], redo: Group[], cleared: Cleared, by: Record<string, [string, string]>, lin: Record<string, string>,
 *   cur: Record<string, string>, n: number, burst: Burst|null, view: UndoState|null}} Stacks
 */

/**
 * A typing burst under way: its question, the path of its text, the
 * span replayed, its group, and when it last typed.
 * @typedef {{q: string, path: string[], sim: Sim, g: Group, at: number}} Burst
 */

/**
 * A character of the span a burst touched (a UTF-16 code unit) c, own
 * when the burst inserted it, gone when it was there before and the burst
 * deleted it. An own character deleted again is dropped.
 * @typedef {{c: string, own?: boolean, gone?: boolean}} Item
 */

/**
 * The span a burst touched, from start (in the text as it is now).
 * @typedef {{start: number, items: Item[]}} Sim
 */

/** The most groups a stack holds. */
const DEPTH = 100;

/** A burst ends at a pause this long (ms). */
const PAUSE = 1000;

/** @type {UndoState} */
const NONE = Object.freeze({ undo: null, redo: null, cleared: "" });

/**
 * @param {Decision} d
 * @returns {Stacks}
 */
function stacks(d) {
  return (d.undo ??= fresh());
}

/** @returns {Stacks} */
function fresh() {
  return { undo: [], redo: [], cleared: "", by: {}, lin: {}, cur: {}, n: 0, burst: null, view: null };
}

/**
 * The stacks changed: stored again, shown afresh, the page told.
 * @param {Client} c
 * @param {Stacks} u
 */
function changed(c, u) {
  u.n++;
  u.view = null;
  c.editedSinceStore = true; // stored at once, as an edit is
  c.notify();
}

/**
 * Pushes g onto a stack, keeping the DEPTH newest.
 * @param {Group[]} s
 * @param {Group} g
 */
function put(s, g) {
  s.push(g);
  if (s.length > DEPTH) s.shift();
}

/**
 * A new group of the member's: on top of the undo stack; redo emptied.
 * @param {Client} c
 * @param {Decision} d
 * @param {Group} g
 */
export function made(c, d, g) {
  const u = stacks(d);
  u.burst = null;
  put(u.undo, g);
  u.redo = [];
  u.cleared = "";
  changed(c, u);
}

/**
 * Empties both stacks, saying why.
 * @param {Client} c
 * @param {Decision} d
 * @param {Cleared} why
 */
export function clear(c, d, why) {
  const u = stacks(d);
  if (u.cleared === why && !u.undo.length && !u.redo.length) return;
  d.undo = { ...fresh(), cleared: why, n: u.n };
  changed(c, d.undo);
}

/**
 * A record the client took: stacks emptied when it leaves open (a save
 * or a discard) or a new generation starts (a reopen).
 * @param {Client} c
 * @param {Decision} d
 * @param {import("./client.js").DecisionRecord} was
 */
export function recorded(c, d, was) {
  const r = d.record;
  if (!d.core) return; // nothing was made here yet
  if (r.status !== was.status && r.status !== "open") clear(c, d, r.status === "settled" ? "save" : "discard");
  else if (r.status === "open" && (was.status !== "open" || (r.generation || 0) !== (was.generation || 0))) clear(c, d, "reopen");
}

/**
 * The value a mark or choice group names, in the replica now.
 * @param {Decision} d
 * @param {string} kind
 * @param {string} q
 * @param {string} cell
 */
function value(d, kind, q, cell) {
  const x = d.doc?.drafts?.[R.genKey(d.doc)]?.[q];
  if (!x) return "";
  if (kind === "mark") return R.str(x.marks?.[cell]) ?? "";
  if (cell) return x.chosen?.[cell] === true ? "chosen" : "";
  return R.str(x.choice) ?? "";
}

/**
 * Makes a mark or choice edit (edit) and, when it changed the value, its
 * group.
 * @param {Client} c
 * @param {string} id
 * @param {"mark"|"choice"} kind
 * @param {string} q
 * @param {string} cell
 * @param {() => void} edit
 */
export function track(c, id, kind, q, cell, edit) {
  const d = c.decisions.get(id);
  const from = d ? value(d, kind, q, cell) : "";
  edit();
  if (!d) return;
  const to = value(d, kind, q, cell);
  stacks(d).by[`${kind} ${q} ${cell}`] = [to, c.member];
  if (to !== from) made(c, d, { kind, question: q, cell, from, to });
}

/**
 * The cells of received changes (question:changes): who set each value.
 * @param {Decision} d
 * @param {any[]} cells
 */
export function heard(d, cells) {
  for (const e of cells) if (e && e.kind !== "text") stacks(d).by[`${e.kind} ${e.question} ${e.cell || ""}`] = [e.value || "", e.by || ""];
}

/**
 * A written answer's text in doc.
 * @param {any} doc
 * @param {string} q
 */
function textOf(doc, q) {
  return R.str(doc?.drafts?.[R.genKey(doc)]?.[q]?.text) ?? "";
}

/**
 * Splices a written answer by the splice f gives for its text (null: no
 * change) and adds it to the typing burst under way, or starts one.
 * @param {Client} c
 * @param {string} id
 * @param {string} q
 * @param {(text: string) => {pos: number, del: number, ins: string}|null} f
 */
export function typed(c, id, q, f) {
  const d = c.decisions.get(id);
  const before = textOf(d?.doc, q);
  const s = f(before);
  if (!s) return;
  const base = d?.core && headsOf(d);
  c.edit(id, (doc) => R.spliceText(doc, q, s.pos, s.del, s.ins));
  if (!d || (!s.del && !s.ins)) return;
  const u = stacks(d);
  const t = now();
  let b = u.burst;
  if (b && (b.q !== q || t - b.at >= PAUSE || s.pos > b.sim.start + shown(b.sim) || s.pos + s.del < b.sim.start)) b = null;
  if (!b) {
    b = { q, path: ["drafts", R.genKey(d.doc), q, "text"], sim: { start: s.pos, items: [] }, g: { kind: "text", question: q, cell: "", from: "", to: "", base: base || [] }, at: t };
  }
  step(b.sim, before, s.pos, s.del, s.ins);
  const g = b.g;
  Object.assign(g, finish(b.sim), { heads: headsOf(d) });
  // A burst that changed nothing (typed and deleted again) is no group.
  const top = u.undo[u.undo.length - 1] === g;
  if (g.from || g.to) {
    if (!top) made(c, d, g);
  } else if (top) u.undo.pop();
  u.burst = b;
  b.at = t;
  changed(c, u);
}

/**
 * Received changes altered the text of the burst under way (or it has
 * paused): the next typing starts a new group.
 * @param {Decision} d
 * @param {string[]} before the heads before they were applied
 */
export function received(d, before) {
  const b = /** @type {Burst} */ (d.undo?.burst);
  if (now() - b.at >= PAUSE || A.diffPath(d.core, b.path, before, headsOf(d)).length) stacks(d).burst = null;
}

/**
 * @param {Sim} sim
 * @returns {number} how many characters of the span are in the text
 */
function shown(sim) {
  let n = 0;
  for (const x of sim.items) if (!x.gone) n++;
  return n;
}

/**
 * Replays a splice of text (as it was before it) over the span, which
 * grows to cover it.
 * @param {Sim} sim
 * @param {string} text
 * @param {number} pos
 * @param {number} del
 * @param {string} ins
 */
export function step(sim, text, pos, del, ins) {
  const orig = (/** @type {number} */ a, /** @type {number} */ b) => text.slice(a, b).split("").map((c) => ({ c }));
  if (!sim.items.length) sim.start = pos;
  if (pos < sim.start) {
    sim.items = orig(pos, sim.start).concat(sim.items);
    sim.start = pos;
  }
  const end = sim.start + shown(sim);
  if (pos + del > end) sim.items = sim.items.concat(orig(end, pos + del));
  const it = sim.items;
  // Inserted before the character at pos, after the deleted ones before it.
  let i = 0;
  for (let k = pos - sim.start; i < it.length && (k > 0 || it[i].gone); i++) if (!it[i].gone) k--;
  for (let j = i, n = del; n > 0; ) {
    const x = it[j];
    if (x.gone) j++;
    else {
      n--;
      if (x.own) it.splice(j, 1);
      else (x.gone = true), j++;
    }
  }
  sim.items = it.slice(0, i).concat(ins.split("").map((c) => ({ c, own: true })), it.slice(i));
}

/**
 * What the replayed splices did: the characters they deleted (from) and
 * inserted (to), and the splices that revert them at the text as they
 * left it, last first, each with where the characters it puts back were
 * in the text before them (src).
 * @param {Sim} sim
 * @returns {{from: string, to: string, ops: Op[]}}
 */
export function finish(sim) {
  let p = sim.start;
  let o = sim.start;
  let from = "";
  let to = "";
  /** @type {Op[]} */
  const ops = [];
  /** @type {Op|null} */
  let op = null;
  for (const x of sim.items) {
    if (!x.gone && !x.own) {
      p++;
      o++;
      op = null;
      continue;
    }
    if (!op) ops.unshift((op = [p, 0, "", o]));
    if (x.gone) {
      // The characters an op puts back were one run in the text before.
      if (!op[2]) op[3] = o;
      from += x.c;
      op[2] += x.c;
      o++;
    } else {
      to += x.c;
      op[1]++;
      p++;
    }
  }
  return { from, to, ops };
}

/**
 * Reverts a text group: the characters it names, found at its heads and
 * base, are deleted and inserted again (after the character that
 * preceded them) where their newest copies are now, on a fork of the
 * replica under a fresh actor, whose change the replica then takes as a
 * local edit. Returns how to revert that in turn, replayed as it is made.
 * @param {Client} c
 * @param {Decision} d
 * @param {Group} g
 * @returns {{heads: string[], base: string[], ops: Op[]}}
 */
function revert(c, d, g) {
  const u = stacks(d);
  const obj = /** @type {string} */ (A.getObjectId(d.doc.drafts[R.genKey(d.doc)][g.question], "text"));
  const be = A.getBackend(d.core);
  const id = (/** @type {number} */ p, /** @type {string[]|undefined} */ at) => be.getCursor(obj, p, at);
  // Which characters, by identity: those to delete, and the runs to put
  // back, each after the character before it, each character standing
  // for the one at src.
  /** @type {string[]} */
  const dels = [];
  /** @type {[string, string, string[]][]} */
  const runs = [];
  for (const [pos, del, ins, src] of g.ops || []) {
    for (let k = 0; k < del; k++) dels.push(id(pos + k, g.heads));
    if (ins) runs.push([pos ? id(pos - 1, g.heads) : "", ins, ins.split("").map((_, k) => id(src + k, g.base))]);
  }
  const newest = (/** @type {string} */ x) => u.cur[u.lin[x] ?? x] ?? x;
  const base = headsOf(d);
  const f = be.fork(R.newActor());
  /** @type {[string, string][]} each character put back, and the one it stands for */
  const copies = [];
  try {
    /** @type {Sim} */
    const sim = { start: 0, items: [] };
    let text = f.text(obj);
    const at = (/** @type {string} */ x) => {
      const p = f.getCursorPosition(obj, x);
      return p < text.length && f.getCursor(obj, p) === x ? p : -1;
    };
    // A character's length: two UTF-16 code units past U+FFFF.
    const wide = (/** @type {number} */ p) => (/** @type {number} */ (text.codePointAt(p)) > 0xffff ? 2 : 1);
    const splice = (/** @type {number} */ p, /** @type {number} */ n, /** @type {string} */ s) => {
      step(sim, text, p, n, s);
      f.splice(obj, p, n, s);
      text = text.slice(0, p) + s + text.slice(p + n);
    };
    for (const x of dels) {
      const p = at(newest(x));
      if (p >= 0) splice(p, wide(p), "");
    }
    for (const [after, ins, was] of runs) {
      const a = after && newest(after);
      const q = a ? at(a) : -1;
      const p = !a ? 0 : q >= 0 ? q + wide(q) : f.getCursorPosition(obj, a);
      splice(p, 0, ins);
      was.forEach((w, k) => copies.push([f.getCursor(obj, p + k), w]));
    }
    const h = f.commit("undo");
    if (h) {
      const change = /** @type {Uint8Array} */ (f.getLastLocalChange());
      c.edit(d.id, (doc) => A.applyChanges(doc, [change])[0]);
    }
    for (const [x, w] of copies) {
      const root = u.lin[w] ?? w;
      u.lin[x] = root;
      u.cur[root] = x;
    }
    return { heads: h ? [h] : base, base, ops: finish(sim).ops };
  } finally {
    f.free();
  }
}

/**
 * Undoes the decision's newest group (back) or redoes the one undone
 * last; null when there is none.
 * @param {Client} c
 * @param {string} id
 * @param {boolean} back
 * @returns {Promise<UndoResult|null>}
 */
async function revertTop(c, id, back) {
  const d = c.decisions.get(id);
  const u = d?.undo;
  const s = back ? u?.undo : u?.redo;
  const g = s?.pop();
  if (!d || !u || !g) return null;
  u.burst = null;
  const key = `${g.kind} ${g.question} ${g.cell}`;
  const want = back ? g.from : g.to;
  const have = back ? g.to : g.from;
  let by = "";
  let done = true;
  let next = g;
  try {
    if (g.kind === "text") next = { ...g, ...revert(c, d, g) };
    else if (g.kind === "why") {
      // The server refuses it as stale if another why replaced have.
      done = (d.record.why ?? "") === have && !!(await Requests.why(c, id, want, have));
      if (!done) by = d.record.whyBy ?? "";
    } else {
      const cur = value(d, g.kind, g.question, g.cell);
      if (cur !== have) {
        // Skipped: by names who set cur, if it is what the client heard.
        const e = u.by[key];
        done = false;
        by = e && e[0] === cur ? e[1] : "";
      } else {
        c.edit(id, (doc) => {
          if (g.kind === "mark") {
            const [o, k] = g.cell.split("/");
            return R.setMark(doc, g.question, o, k, /** @type {any} */ (want || null));
          }
          return R.choose(doc, g.question, g.cell || want || have, !!want, !!g.cell);
        });
        u.by[key] = [want, c.member];
      }
    }
  } catch (e) {
    s.push(g);
    changed(c, u);
    throw e;
  }
  // A skipped group leaves the stacks; a done one's value is the member's.
  if (done) {
    put(back ? u.redo : u.undo, next);
    by = c.member;
  }
  changed(c, d.undo || u);
  return { group: shape(g), done, by };
}

/**
 * Undoes the member's newest edit group of the decision; null when
 * there is none.
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<UndoResult|null>}
 */
export function undo(c, id) {
  return revertTop(c, id, true);
}

/**
 * Redoes the group undone last; null when there is none.
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<UndoResult|null>}
 */
export function redo(c, id) {
  return revertTop(c, id, false);
}

/**
 * @param {Group|undefined} g
 * @returns {UndoGroup|null}
 */
function shape(g) {
  return g ? { kind: g.kind, question: g.question, cell: g.cell, from: g.from, to: g.to } : null;
}

/**
 * What undo and redo would take now, and what emptied the stacks last;
 * the same object until it changes.
 * @param {Client} c
 * @param {string} id
 * @returns {UndoState}
 */
export function undoState(c, id) {
  const u = c.decisions.get(id)?.undo;
  if (!u) return NONE;
  return (u.view ??= { undo: shape(u.undo[u.undo.length - 1]), redo: shape(u.redo[u.redo.length - 1]), cleared: u.cleared });
}

/**
 * The stacks as stored with the draft.
 * @param {Decision} d
 */
export function stored(d) {
  const u = d.undo;
  return u && { undo: u.undo.slice(), redo: u.redo.slice(), cleared: u.cleared, by: u.by, lin: u.lin, cur: u.cur };
}

/**
 * Stacks read back from storage (see stored).
 * @param {any} v
 * @returns {Stacks|null}
 */
export function restored(v) {
  const list = (/** @type {any} */ s) => (Array.isArray(s) ? s.filter((g) => g && typeof g.to === "string" && (g.kind !== "text" || (Array.isArray(g.ops) && Array.isArray(g.heads)))) : []);
  return v ? { ...fresh(), undo: list(v.undo), redo: list(v.redo), cleared: v.cleared || "", by: v.by || {}, lin: v.lin || {}, cur: v.cur || {} } : null;
}
