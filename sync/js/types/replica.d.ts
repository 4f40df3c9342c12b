/**
 * Loads automerge's WebAssembly module once.
 * @param {any} wasm a URL, Response, or the module's bytes
 * @returns {Promise<void>}
 */
export function init(wasm: any): Promise<void>;
/**
 * Runs the replica's hot path (a local edit of a mark and a written
 * answer, its changes, applying them to another replica, and now and then
 * loading a whole document) rounds times on a
 * scratch document, a few rounds per task, in idle time. V8 first runs
 * automerge's WebAssembly with a quick baseline compiler and optimises a
 * function only once it is hot, on other threads; without this, the first
 * second of received edits after a page opens pays that compilation (on a
 * 2-core machine, both cores for most of a second), and every edit
 * received meanwhile waits. Resolves with the rounds run.
 * @param {number} rounds
 * @returns {Promise<number>}
 */
export function warmUp(rounds: number): Promise<number>;
/**
 * A fresh actor id: 16 random bytes, hex, first byte never zero. automerge
 * 0.5 (the server's core) has been seen to write saves it cannot load again
 * for short or zero-prefixed actor ids; crdt.NewActorID mints the same form.
 * @returns {string}
 */
export function newActor(): string;
/**
 * Loads a whole document (question:doc, or a reset's doc) as a replica
 * writing under a fresh actor.
 * @param {Uint8Array} bytes
 * @param {string} [actor]
 * @returns {A.Doc<any>}
 */
export function load(bytes: Uint8Array, actor?: string): A.Doc<any>;
/**
 * Applies a batch of concatenated change chunks (question:changes, or the
 * Go side's crdt.Doc.ChangesSince). Returns the new document and whether
 * every change applied (see receive).
 * @param {A.Doc<any>} doc
 * @param {Uint8Array} bytes
 * @returns {{doc: A.Doc<any>, complete: boolean}}
 */
export function applyBatch(doc: A.Doc<any>, bytes: Uint8Array): {
    doc: A.Doc<any>;
    complete: boolean;
};
/**
 * Applies a batch of change chunks to doc's automerge handle alone:
 * doc's JavaScript values stay as they were until current(doc). Building
 * them costs about half as much again as the apply, so it waits until
 * something reads them; the handle answers heads, saves and changes at
 * once. Returns the handle's heads (sorted) when every change applied,
 * null when automerge holds some back for dependencies it lacks (a
 * replica that missed frames must resync). expect, the heads the sender
 * holds after these changes, spares the search for missing dependencies
 * when the heads are those: a change held back, or one that depends on
 * it, could not be a head.
 * @param {A.Doc<any>} doc
 * @param {Uint8Array} bytes
 * @param {string[]} [expect] sorted
 * @returns {string[]|null}
 */
export function receive(doc: A.Doc<any>, bytes: Uint8Array, expect?: string[]): string[] | null;
/**
 * doc with its JavaScript values brought up to its handle's (after
 * receive), as a new document: doc is then outdated.
 * @param {A.Doc<any>} doc
 * @returns {A.Doc<any>}
 */
export function current(doc: A.Doc<any>): A.Doc<any>;
/**
 * The changes of doc that are not in heads, as one batch: each change in
 * automerge's binary form (uncompressed change chunks), concatenated; the
 * form crdt.Doc.ApplyChanges and question:edit take.
 * @param {A.Doc<any>} doc
 * @param {string[]} heads
 * @returns {Uint8Array}
 */
export function changesSince(doc: A.Doc<any>, heads: string[]): Uint8Array;
/**
 * @param {Uint8Array[]} parts
 * @returns {Uint8Array}
 */
export function concat(parts: Uint8Array[]): Uint8Array;
/**
 * The document's heads, sorted (the order the server reports them in).
 * @param {A.Doc<any>} doc
 * @returns {string[]}
 */
export function heads(doc: A.Doc<any>): string[];
/**
 * @param {unknown} v
 * @returns {string|null} a scalar or text string's value, else null
 */
export function str(v: unknown): string | null;
/**
 * Reads the whole document in plain values.
 * @param {A.Doc<any>} doc
 * @returns {DocState}
 */
export function readState(doc: A.Doc<any>): DocState;
/**
 * The current generation's draft of a question, or null.
 * @param {A.Doc<any>} doc
 * @param {string} qid
 * @returns {QuestionDraft|null}
 */
export function currentDraft(doc: A.Doc<any>, qid: string): QuestionDraft | null;
/**
 * @param {A.Doc<any>} doc
 * @returns {string} the current generation as the drafts map's key
 */
export function genKey(doc: A.Doc<any>): string;
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
export function setMark(doc: A.Doc<any>, qid: string, opt: string, crit: string, mark: "yes" | "partly" | "no" | null): A.Doc<any>;
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
export function choose(doc: A.Doc<any>, qid: string, opt: string, on: boolean, multiple: boolean): A.Doc<any>;
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
export function spliceText(doc: A.Doc<any>, qid: string, pos: number, del: number, ins: string): A.Doc<any>;
/**
 * Replaces a written answer with s by the smallest single splice (common
 * prefix and suffix kept, never splitting a surrogate pair), so concurrent
 * typing elsewhere in the text survives.
 * @param {A.Doc<any>} doc
 * @param {string} qid
 * @param {string} s
 * @returns {A.Doc<any>}
 */
export function setText(doc: A.Doc<any>, qid: string, s: string): A.Doc<any>;
/**
 * The smallest single splice turning a into b, or null when equal.
 * @param {string} a
 * @param {string} b
 * @returns {{pos: number, del: number, ins: string}|null}
 */
export function diff(a: string, b: string): {
    pos: number;
    del: number;
    ins: string;
} | null;
/**
 * Whether doc's history holds every change named in heads. It rebuilds
 * changes (automerge 3.5's hasHeads walks them by hash), so its cost grows
 * with the history: keep it off the path of every received edit.
 * @param {A.Doc<any>} doc
 * @param {string[]} heads
 */
export function holds(doc: A.Doc<any>, heads: string[]): boolean;
/**
 * The heads of old that next, a rebased document, is known to hold: the
 * accepted heads, and the changes the server had accepted before it
 * rebased though the replica never heard so (a reply lost with its
 * connection), which the rebase change's message names as a clock
 * ("rebase\n" then "actor:seq" per actor; docs/PROTOCOL.md, Rebase).
 * Carried from there, those changes are not made a second time. It reads
 * next's history and old's changes beyond accepted, so it runs only when a
 * rebased document arrives.
 * @param {A.Doc<any>} old
 * @param {string[]} accepted
 * @param {A.Doc<any>} next
 * @returns {string[]}
 */
export function carryBase(old: A.Doc<any>, accepted: string[], next: A.Doc<any>): string[];
/**
 * Carries a replica's not-yet-accepted draft values over to a rebased
 * document (a document with the same accepted state but a history that
 * does not contain the replica's accepted heads): what the replica changed
 * since accepted is set again on next as fresh local edits: its net
 * intent, not its whole draft (docs/PROTOCOL.md, Rebase). Marks the
 * replica changed are set again; options of a multiple choice it selected
 * or deselected are chosen so again; in a single choice, the option it
 * selected replaces next's choice, and if it only deselected its accepted
 * choice, that option is deselected where next still holds it (another
 * option chosen in next stays chosen). A written answer gets the
 * splice that turns the accepted text into the replica's text, placed
 * after any change next made to it elsewhere (when both changed the same
 * span, the replica's text wins there). Values of other generations, and
 * of questions, options or criteria next does not describe, are dropped:
 * the server would refuse them.
 * @param {A.Doc<any>} old the replica, with its local changes
 * @param {string[]} accepted the heads of old the server last accepted
 * @param {A.Doc<any>} next the rebased document, under this replica's actor
 * @returns {{doc: A.Doc<any>, carried: number}} next with the local edits, and how many values were carried
 */
export function carryOver(old: A.Doc<any>, accepted: string[], next: A.Doc<any>): {
    doc: A.Doc<any>;
    carried: number;
};
/**
 * The state of doc at heads, an ancestor of its own (readState of
 * A.view(doc, heads)), given mine, readState(doc). It reads the few
 * changes since heads, turned back (A.diff from doc's heads to heads),
 * onto mine's drafts: an A.view reads the whole history, which made a
 * carry cost a busy replica tens of milliseconds. Changes beyond the
 * drafts' marks, choices and texts (a definition, a generation) take the
 * view.
 * @param {A.Doc<any>} doc
 * @param {string[]} heads
 * @param {DocState} mine
 * @returns {DocState}
 */
export function stateAt(doc: A.Doc<any>, heads: string[], mine: DocState): DocState;
/**
 * The splice of theirs (positions in UTF-16 code units) that makes the
 * change from base to mine there: mine's one changed span, moved past
 * each place theirs changed before it. Only where theirs changed the same
 * span does mine win, over both changes' extent; every other change of
 * theirs stays. Two insertions at one point: mine goes after theirs.
 * Null when mine is base. When theirs is more than MAX_THEIR_EDITS
 * characters away from base, its changes count as one span.
 * @param {string} base
 * @param {string} mine
 * @param {string} theirs
 * @returns {{pos: number, del: number, ins: string}|null}
 */
export function respliced(base: string, mine: string, theirs: string): {
    pos: number;
    del: number;
    ins: string;
} | null;
/**
 * Creates a decision document from scratch with the layout above, as the
 * server would (used by the interoperability test: a document made by
 * automerge 3 must load in Go).
 * @param {{id: string, written?: boolean, multiple?: boolean, options?: Item[], criteria?: Item[]}[]} questions
 * @param {string} [actor]
 * @returns {A.Doc<any>}
 */
export function create(questions: {
    id: string;
    written?: boolean;
    multiple?: boolean;
    options?: Item[];
    criteria?: Item[];
}[], actor?: string): A.Doc<any>;
export { A };
/** @typedef {{id: string, label: string}} Item */
/** @typedef {{written: boolean, multiple: boolean, options: Item[], criteria: Item[]}} QuestionShape */
/** @typedef {{text: string, choices: string[], marks: Record<string, string|null>}} QuestionDraft */
/** @typedef {{v: number, generation: number, questions: Record<string, QuestionShape>, appended: Record<string, {kind: string, question: string, id: string}>, drafts: Record<string, Record<string, QuestionDraft>>}} DocState */
export const MARKS: readonly ["yes", "partly", "no"];
/**
 * a replacement
 * of a[at, at+del) by ins, in a's positions
 */
export type Edit = {
    at: number;
    del: number;
    ins: string[];
};
export type Item = {
    id: string;
    label: string;
};
export type QuestionShape = {
    written: boolean;
    multiple: boolean;
    options: Item[];
    criteria: Item[];
};
export type QuestionDraft = {
    text: string;
    choices: string[];
    marks: Record<string, string | null>;
};
export type DocState = {
    v: number;
    generation: number;
    questions: Record<string, QuestionShape>;
    appended: Record<string, {
        kind: string;
        question: string;
        id: string;
    }>;
    drafts: Record<string, Record<string, QuestionDraft>>;
};
import * as A from "@automerge/automerge/slim";
