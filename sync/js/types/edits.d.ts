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
export function editReply(c: Client, m: any): void;
/**
 * Sends the decision's unaccepted changes when nothing is in flight.
 * @param {Client} c
 * @param {Decision} d
 */
export function push(c: Client, d: Decision): void;
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
export function edit(c: Client, id: string, fn: (doc: any) => any): void;
/**
 * Whether the decision has changes in flight or not accepted yet.
 * @param {Client} c
 * @param {Decision} d
 */
export function unsent(c: Client, d: Decision): boolean;
/**
 * Waits until none of ids has an edit in flight or unsent (false after
 * ms, or at once when there is no connection); throws the refusal of an
 * edit of theirs refused with a reset meanwhile.
 * @param {Client} c
 * @param {string[]} ids
 * @param {number} ms
 */
export function idle(c: Client, ids: string[], ms: number): Promise<boolean>;
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
export function flush(c: Client, ids: string[] | undefined, ms: number): Promise<void>;
export type Client = import("./client.js").Client;
export type Decision = import("./client.js").Decision;
