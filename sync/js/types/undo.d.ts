/**
 * A new group of the member's: on top of the undo stack; redo emptied.
 * @param {Client} c
 * @param {Decision} d
 * @param {Group} g
 */
export function made(c: Client, d: Decision, g: Group): void;
/**
 * Empties both stacks, saying why.
 * @param {Client} c
 * @param {Decision} d
 * @param {Cleared} why
 */
export function clear(c: Client, d: Decision, why: Cleared): void;
/**
 * A record the client took: stacks emptied when it leaves open (a save
 * or a discard) or a new generation starts (a reopen).
 * @param {Client} c
 * @param {Decision} d
 * @param {import("./client.js").DecisionRecord} was
 */
export function recorded(c: Client, d: Decision, was: import("./client.js").DecisionRecord): void;
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
export function track(c: Client, id: string, kind: "mark" | "choice", q: string, cell: string, edit: () => void): void;
/**
 * The cells of received changes (question:changes): who set each value.
 * @param {Decision} d
 * @param {any[]} cells
 */
export function heard(d: Decision, cells: any[]): void;
/**
 * Splices a written answer by the splice f gives for its text (null: no
 * change) and adds it to the typing burst under way, or starts one.
 * @param {Client} c
 * @param {string} id
 * @param {string} q
 * @param {(text: string) => {pos: number, del: number, ins: string}|null} f
 */
export function typed(c: Client, id: string, q: string, f: (text: string) => {
    pos: number;
    del: number;
    ins: string;
} | null): void;
/**
 * Received changes altered the text of the burst under way (or it has
 * paused): the next typing starts a new group.
 * @param {Decision} d
 * @param {string[]} before the heads before they were applied
 */
export function received(d: Decision, before: string[]): void;
/**
 * Replays a splice of text (as it was before it) over the span, which
 * grows to cover it.
 * @param {Sim} sim
 * @param {string} text
 * @param {number} pos
 * @param {number} del
 * @param {string} ins
 */
export function step(sim: Sim, text: string, pos: number, del: number, ins: string): void;
/**
 * What the replayed splices did: the characters they deleted (from) and
 * inserted (to), and the splices that revert them at the text as they
 * left it, last first, each with where the characters it puts back were
 * in the text before them (src).
 * @param {Sim} sim
 * @returns {{from: string, to: string, ops: Op[]}}
 */
export function finish(sim: Sim): {
    from: string;
    to: string;
    ops: Op[];
};
/**
 * Undoes the member's newest edit group of the decision; null when
 * there is none.
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<UndoResult|null>}
 */
export function undo(c: Client, id: string): Promise<UndoResult | null>;
/**
 * Redoes the group undone last; null when there is none.
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<UndoResult|null>}
 */
export function redo(c: Client, id: string): Promise<UndoResult | null>;
/**
 * What undo and redo would take now, and what emptied the stacks last;
 * the same object until it changes.
 * @param {Client} c
 * @param {string} id
 * @returns {UndoState}
 */
export function undoState(c: Client, id: string): UndoState;
/**
 * The stacks as stored with the draft.
 * @param {Decision} d
 */
export function stored(d: Decision): {
    undo: Group[];
    redo: Group[];
    cleared: Cleared;
    by: Record<string, [string, string]>;
    lin: Record<string, string>;
    cur: Record<string, string>;
};
/**
 * Stacks read back from storage (see stored).
 * @param {any} v
 * @returns {Stacks|null}
 */
export function restored(v: any): Stacks | null;
export type Client = import("./client.js").Client;
export type Decision = import("./client.js").Decision;
/**
 * One edit group, as undoState names it: kind, the question ("" for a
 * why), cell (a mark's "option/criterion", a multiple choice's option id,
 * else ""), and the value before (from) and after (to): a mark ("" for
 * none); a single choice's option ("" for none); "chosen" or "" for a
 * multiple choice's option; a why; for text, what the burst deleted
 * (from) and what it inserted (to).
 */
export type UndoGroup = {
    kind: "mark" | "choice" | "text" | "why";
    question: string;
    cell: string;
    from: string;
    to: string;
};
/**
 * What an undo or a redo did: done false when it was skipped (the value
 * no longer held what the group left); by names who set the value as it
 * now is, when the client knows ("" otherwise): the member when done.
 */
export type UndoResult = {
    group: UndoGroup;
    done: boolean;
    by: string;
};
/**
 * What emptied both stacks last, until the next group: a save, a
 * discard, a reopen, a rebased document taken, a reset by a refused edit.
 */
export type Cleared = "" | "save" | "discard" | "reopen" | "rebase" | "reset";
/**
 * A decision's undo state: the groups undo and redo would take (null:
 * none), and what emptied both stacks last.
 */
export type UndoState = {
    undo: UndoGroup | null;
    redo: UndoGroup | null;
    cleared: Cleared;
};
/**
 * A group as kept. A text group also says how to revert what it did last
 * (the burst, or its redo; the undo, for a redo): heads, the revision it
 * is reverted at; ops, the splices made there, last first; base, the
 * revision before it, where the characters ins puts back were, from src
 * on.
 */
export type Group = UndoGroup & {
    heads?: string[];
    base?: string[];
    ops?: Op[];
};
/**
 * A group as kept. A text group also says how to revert what it did last
 * (the burst, or its redo; the undo, for a redo): heads, the revision it
 * is reverted at; ops, the splices made there, last first; base, the
 * revision before it, where the characters ins puts back were, from src
 * on.
 */
export type Op = [pos: number, del: number, ins: string, src: number];
/**
 * A decision's stacks: undo (newest last) and redo; what cleared them
 * last; by, who set each value last as far as the client heard
 * ("kind question cell" to [value, member]); lin, the character (an
 * automerge cursor) each copy an undo or redo inserted stands for, and
 * cur, that character's newest copy; n, bumped on every change (the
 * stored copy's signature); the typing burst under way; the undoState
 * shown.
 */
export type Stacks = {
    undo: Group[];
    redo: Group[];
    cleared: Cleared;
    by: Record<string, [string, string]>;
    lin: Record<string, string>;
    cur: Record<string, string>;
    n: number;
    burst: Burst | null;
    view: UndoState | null;
};
/**
 * A typing burst under way: its question, the path of its text, the
 * span replayed, its group, and when it last typed.
 */
export type Burst = {
    q: string;
    path: string[];
    sim: Sim;
    g: Group;
    at: number;
};
/**
 * A character of the span a burst touched (a UTF-16 code unit) c, own
 * when the burst inserted it, gone when it was there before and the burst
 * deleted it. An own character deleted again is dropped.
 */
export type Item = {
    c: string;
    own?: boolean;
    gone?: boolean;
};
/**
 * The span a burst touched, from start (in the text as it is now).
 */
export type Sim = {
    start: number;
    items: Item[];
};
