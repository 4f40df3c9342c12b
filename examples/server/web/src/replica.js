// The decision document as the page (and the interoperability test) reads
// and writes it: a real automerge replica with the layout the Go package
// crdt defines (crdt/document.go, crdt/state.go).
//
//	root {
//	  v: 1                                   int
//	  questions: { <qid>: { written: bool, multiple: bool,
//	                        options:  [{id, label}],   ids and labels are
//	                        criteria: [{id, label}] } } scalar strings
//	  appended: { <key>: {kind, question, id} }         written by the server
//	  generation: <g>                        uint
//	  drafts: { "<g>": { <qid>: {
//	      text:   Text                       written questions
//	      marks:  { "opt/crit": "yes" | "partly" | "no" | null }
//	      choice: optionId | null            single choice (one LWW register)
//	      chosen: { optId: bool } } } }      multiple choice
//	}
//
// A replica writes only inside drafts[<current generation>]; the server
// refuses anything else and resets the replica. Registers (marks, choice,
// option and criterion ids) hold scalar strings, never automerge Text:
// automerge 3 turns a plain JavaScript string into Text, which the server
// reads as malformed, so they are written as ImmutableString.
//
// This module imports the slim build: call init() (the page fetches
// automerge.wasm; Node passes the file's bytes) before anything else.

import * as A from "@automerge/automerge/slim";

export { A };

/** @typedef {{id: string, label: string}} Item */
/** @typedef {{written: boolean, multiple: boolean, options: Item[], criteria: Item[]}} QuestionShape */
/** @typedef {{text: string, choices: string[], marks: Record<string, string|null>}} QuestionDraft */
/** @typedef {{v: number, generation: number, questions: Record<string, QuestionShape>, appended: Record<string, {kind: string, question: string, id: string}>, drafts: Record<string, Record<string, QuestionDraft>>}} DocState */

export const MARKS = /** @type {const} */ (["yes", "partly", "no"]);

let ready = /** @type {Promise<void>|null} */ (null);

/**
 * Loads automerge's WebAssembly module once.
 * @param {any} wasm a URL, Response, or the module's bytes
 * @returns {Promise<void>}
 */
export function init(wasm) {
  if (!ready) ready = A.initializeWasm(wasm);
  return ready;
}

/**
 * A fresh actor id: 16 random bytes, hex, first byte never zero. automerge
 * 0.5 (the server's core) has been seen to write saves it cannot load again
 * for short or zero-prefixed actor ids; crdt.NewActorID mints the same form.
 * @returns {string}
 */
export function newActor() {
  const b = new Uint8Array(16);
  do crypto.getRandomValues(b);
  while (b[0] === 0);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * Loads a whole document (question:doc, or a reset's doc) as a replica
 * writing under a fresh actor.
 * @param {Uint8Array} bytes
 * @param {string} [actor]
 * @returns {A.Doc<any>}
 */
export function load(bytes, actor) {
  return A.load(bytes, { actor: actor || newActor() });
}

/**
 * Applies a batch of concatenated change chunks (question:changes, or the
 * Go side's crdt.Doc.ChangesSince). Returns the new document and whether
 * every change applied: automerge holds back a change whose dependencies it
 * lacks, and a replica that missed frames must resync.
 * @param {A.Doc<any>} doc
 * @param {Uint8Array} bytes
 * @returns {{doc: A.Doc<any>, complete: boolean}}
 */
export function applyBatch(doc, bytes) {
  const next = A.loadIncremental(doc, bytes);
  const missing = A.getMissingDeps(next, []);
  return { doc: next, complete: missing.length === 0 };
}

/**
 * The changes of doc that are not in heads, as one batch: each change in
 * automerge's binary form (uncompressed change chunks), concatenated; the
 * form crdt.Doc.ApplyChanges and question:edit take.
 * @param {A.Doc<any>} doc
 * @param {string[]} heads
 * @returns {Uint8Array}
 */
export function changesSince(doc, heads) {
  return concat(A.getChangesSince(doc, heads));
}

/**
 * @param {Uint8Array[]} parts
 * @returns {Uint8Array}
 */
export function concat(parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/**
 * The document's heads, sorted (the order the server reports them in).
 * @param {A.Doc<any>} doc
 * @returns {string[]}
 */
export function heads(doc) {
  return [...A.getHeads(doc)].sort();
}

/**
 * @param {unknown} v
 * @returns {string|null} a scalar or text string's value, else null
 */
export function str(v) {
  if (typeof v === "string") return v;
  if (v instanceof A.ImmutableString) return v.val;
  if (v && typeof v === "object" && "val" in v && typeof v.val === "string") return v.val;
  return null;
}

/**
 * @param {any} list
 * @returns {Item[]}
 */
function items(list) {
  if (!Array.isArray(list)) return [];
  return list.map((it) => ({ id: str(it?.id) ?? "", label: str(it?.label) ?? "" }));
}

/**
 * Reads the whole document in plain values.
 * @param {A.Doc<any>} doc
 * @returns {DocState}
 */
export function readState(doc) {
  /** @type {DocState} */
  const st = {
    v: Number(doc.v ?? 0),
    generation: Number(doc.generation ?? 0),
    questions: {},
    appended: {},
    drafts: {},
  };
  for (const [id, q] of Object.entries(doc.questions ?? {})) {
    st.questions[id] = {
      written: q?.written === true,
      multiple: q?.multiple === true,
      options: items(q?.options),
      criteria: items(q?.criteria),
    };
  }
  for (const [key, a] of Object.entries(doc.appended ?? {})) {
    st.appended[key] = { kind: str(a?.kind) ?? "", question: str(a?.question) ?? "", id: str(a?.id) ?? "" };
  }
  for (const [g, qs] of Object.entries(doc.drafts ?? {})) {
    /** @type {Record<string, QuestionDraft>} */
    const out = {};
    for (const [qid, qd] of Object.entries(qs ?? {})) {
      out[qid] = readQuestionDraft(qd, st.questions[qid]);
    }
    st.drafts[g] = out;
  }
  return st;
}

/**
 * @param {any} qd
 * @param {QuestionShape|undefined} shape
 * @returns {QuestionDraft}
 */
function readQuestionDraft(qd, shape) {
  /** @type {QuestionDraft} */
  const out = { text: "", choices: [], marks: {} };
  if (!qd) return out;
  if (qd.text != null) out.text = str(qd.text) ?? "";
  for (const [k, m] of Object.entries(qd.marks ?? {})) out.marks[k] = m === null ? null : str(m);
  const choice = str(qd.choice);
  if (choice) out.choices.push(choice);
  for (const [opt, on] of Object.entries(qd.chosen ?? {})) if (on === true) out.choices.push(opt);
  if (shape && out.choices.length > 1) {
    const order = new Map(shape.options.map((o, i) => [o.id, i]));
    out.choices.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  }
  return out;
}

/**
 * The current generation's draft of a question, or null.
 * @param {A.Doc<any>} doc
 * @param {string} qid
 * @returns {QuestionDraft|null}
 */
export function currentDraft(doc, qid) {
  const g = String(Number(doc.generation ?? 0));
  const qd = doc.drafts?.[g]?.[qid];
  if (!qd) return null;
  return readQuestionDraft(qd, readState(doc).questions[qid]);
}

/**
 * @param {A.Doc<any>} doc
 * @returns {string} the current generation as the drafts map's key
 */
export function genKey(doc) {
  return String(Number(doc.generation ?? 0));
}

/**
 * Sets (or, with null, clears) one cell of a choice question's matrix in
 * the current draft. Returns doc unchanged when the cell already holds it.
 * @param {A.Doc<any>} doc
 * @param {string} qid
 * @param {string} opt
 * @param {string} crit
 * @param {"yes"|"partly"|"no"|null} mark
 * @returns {A.Doc<any>}
 */
export function setMark(doc, qid, opt, crit, mark) {
  if (mark !== null && !MARKS.includes(mark)) throw new Error(`mark ${mark}`);
  const g = genKey(doc);
  const key = `${opt}/${crit}`;
  const cur = doc.drafts?.[g]?.[qid]?.marks;
  if (!cur) throw new Error(`question ${qid} has no marks in draft ${g}`);
  if (key in cur && (cur[key] === null ? mark === null : str(cur[key]) === mark)) return doc;
  if (!(key in cur) && mark === null) return doc;
  return A.change(doc, { message: "mark" }, (d) => {
    d.drafts[g][qid].marks[key] = mark === null ? null : new A.ImmutableString(mark);
  });
}

/**
 * Selects (on) or deselects an option. A single-choice question holds one
 * register, choice; a multiple-choice question a map of booleans, chosen.
 * @param {A.Doc<any>} doc
 * @param {string} qid
 * @param {string} opt
 * @param {boolean} on
 * @param {boolean} multiple
 * @returns {A.Doc<any>}
 */
export function choose(doc, qid, opt, on, multiple) {
  const g = genKey(doc);
  const qd = doc.drafts?.[g]?.[qid];
  if (!qd) throw new Error(`question ${qid} has no draft ${g}`);
  if (multiple) {
    if ((qd.chosen?.[opt] === true) === on && (on || opt in (qd.chosen ?? {}))) return doc;
    return A.change(doc, { message: "choose" }, (d) => {
      const q = d.drafts[g][qid];
      if (!q.chosen) q.chosen = {};
      q.chosen[opt] = on;
    });
  }
  const cur = str(qd.choice);
  if (on ? cur === opt : cur !== opt) return doc;
  return A.change(doc, { message: "choose" }, (d) => {
    d.drafts[g][qid].choice = on ? new A.ImmutableString(opt) : null;
  });
}

/**
 * Splices a written answer: delete del characters at pos, insert ins.
 * Positions count UTF-16 code units, as JavaScript strings (and automerge's
 * JavaScript build) do.
 * @param {A.Doc<any>} doc
 * @param {string} qid
 * @param {number} pos
 * @param {number} del
 * @param {string} ins
 * @returns {A.Doc<any>}
 */
export function spliceText(doc, qid, pos, del, ins) {
  if (del === 0 && ins === "") return doc;
  const g = genKey(doc);
  if (doc.drafts?.[g]?.[qid]?.text == null) throw new Error(`question ${qid} has no text in draft ${g}`);
  return A.change(doc, { message: "text" }, (d) => {
    A.splice(d, ["drafts", g, qid, "text"], pos, del, ins);
  });
}

/**
 * Replaces a written answer with s by the smallest single splice (common
 * prefix and suffix kept, never splitting a surrogate pair), so concurrent
 * typing elsewhere in the text survives.
 * @param {A.Doc<any>} doc
 * @param {string} qid
 * @param {string} s
 * @returns {A.Doc<any>}
 */
export function setText(doc, qid, s) {
  const d = diff(currentDraft(doc, qid)?.text ?? "", s);
  if (!d) return doc;
  return spliceText(doc, qid, d.pos, d.del, d.ins);
}

/**
 * The smallest single splice turning a into b, or null when equal.
 * @param {string} a
 * @param {string} b
 * @returns {{pos: number, del: number, ins: string}|null}
 */
export function diff(a, b) {
  if (a === b) return null;
  let p = 0;
  while (p < a.length && p < b.length && a.charCodeAt(p) === b.charCodeAt(p)) p++;
  if (p > 0 && isHigh(a.charCodeAt(p - 1))) p--;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a.charCodeAt(a.length - 1 - s) === b.charCodeAt(b.length - 1 - s)) s++;
  if (s > 0 && isLow(a.charCodeAt(a.length - s))) s--;
  return { pos: p, del: a.length - p - s, ins: b.slice(p, b.length - s) };
}

/** @param {number} c */
function isHigh(c) {
  return c >= 0xd800 && c <= 0xdbff;
}

/** @param {number} c */
function isLow(c) {
  return c >= 0xdc00 && c <= 0xdfff;
}

/**
 * Creates a decision document from scratch with the layout above, as the
 * server would (used by the interoperability test: a document made by
 * automerge 3 must load in Go).
 * @param {{id: string, written?: boolean, multiple?: boolean, options?: Item[], criteria?: Item[]}[]} questions
 * @param {string} [actor]
 * @returns {A.Doc<any>}
 */
export function create(questions, actor) {
  let doc = A.init({ actor: actor || newActor() });
  doc = A.change(doc, { message: "init" }, (d) => {
    d.v = 1;
  });
  doc = A.change(doc, { message: "questions" }, (d) => {
    d.questions = {};
    for (const q of questions) {
      d.questions[q.id] = {
        written: !!q.written,
        multiple: !!q.multiple,
        options: (q.options ?? []).map((o) => ({ id: new A.ImmutableString(o.id), label: new A.ImmutableString(o.label) })),
        criteria: (q.criteria ?? []).map((c) => ({ id: new A.ImmutableString(c.id), label: new A.ImmutableString(c.label) })),
      };
    }
  });
  doc = A.change(doc, { message: "generation 1" }, (d) => {
    d.drafts = { 1: {} };
    for (const q of questions) {
      d.drafts["1"][q.id] = q.written ? { text: "" } : { marks: {}, chosen: {} };
    }
    d.generation = new A.Uint(1);
  });
  return doc;
}
