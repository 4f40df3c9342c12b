/**
 * Handles a decoded frame: question:changes is queued (see
 * queueChanges), a reply settles its request, an event adopts its
 * record, and the welcome and whole documents are taken here.
 * @param {Client} c
 * @param {any} m
 */
export function handle(c: Client, m: any): void;
/**
 * A whole document (question:doc): the first load of a decision, a
 * catch-up the server sends whole, or a rebased document.
 * @param {Client} c
 * @param {any} m
 */
export function applyDoc(c: Client, m: any): void;
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
export function adoptDoc(c: Client, d: Decision, srv: any): "merged" | "rebased" | "loaded";
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
export function queueChanges(c: Client, m: any): void;
/**
 * Applies the queued question:changes frames, one call per decision.
 * @param {Client} c
 */
export function flushChanges(c: Client): void;
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
export function applyChanges(c: Client, m: any): void;
/**
 * An event (another member's change to a decision's record): the record
 * is adopted, and the decision's note says who did what.
 * @param {Client} c
 * @param {any} m
 */
export function event(c: Client, m: any): void;
/**
 * Adds heads to the hashes the replica has held as heads.
 * @param {Decision} d
 * @param {string[]} heads
 */
export function noteHeads(d: Decision, heads: string[]): void;
/**
 * Whether the replica's history holds every one of heads, which the server
 * reported (see Decision.known).
 * @param {Decision} d
 * @param {string[]} heads
 */
export function knows(d: Decision, heads: string[]): boolean;
/**
 * @param {string[]} a sorted heads
 * @param {string[]} b sorted heads
 * @returns {string[]} both, sorted, each once
 */
export function union(a: string[], b: string[]): string[];
/**
 * Forgets the known hashes that can never be reported again: once the
 * server has accepted the replica's whole history (nothing in flight, the
 * heads are the accepted ones), every other hash it held as a head has a
 * descendant on the server. This keeps known as small as the heads.
 * @param {Decision} d
 */
export function settle(d: Decision): void;
/**
 * Whether a and b hold the same heads. Both are sorted, as every list of
 * heads a decision keeps is (headsOf, accepted, sent).
 * @param {string[]} a
 * @param {string[]} b
 */
export function same(a: string[], b: string[]): boolean;
export type Client = import("./client.js").Client;
export type Decision = import("./client.js").Decision;
