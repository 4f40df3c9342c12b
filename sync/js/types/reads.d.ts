/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 * @typedef {import("./client.js").DecisionState} DecisionState
 */
/**
 * The current draft of a decision, read from its replica (cached by
 * heads): {generation, questions: {qid: {text, choices, marks}}}.
 * @param {Client} c
 * @param {Decision} d
 */
export function draft(c: Client, d: Decision): any;
/**
 * A decision's state as plain values: its record, its current draft,
 * whether this member edited it, whether edits are unsent. The same
 * object is returned until something changes (so it suits React's
 * useSyncExternalStore, Preact's hooks, or any store); null for an
 * unknown decision.
 * @param {Client} c
 * @param {string} id
 * @returns {DecisionState|null}
 */
export function state(c: Client, id: string): DecisionState | null;
/**
 * Calls fn with a decision's state now and after every change to it.
 * Returns the unsubscribe function.
 * @param {Client} c
 * @param {string} id
 * @param {(state: DecisionState|null) => void} fn
 * @returns {() => void}
 */
export function watch(c: Client, id: string, fn: (state: DecisionState | null) => void): () => void;
/**
 * Resolves when pred() holds, checked after every change; rejects with
 * a RefusedError (reason timeout) after ms.
 * @param {Client} c
 * @param {() => boolean} pred
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<void>}
 */
export function until(c: Client, pred: () => boolean, ms: number, what: string): Promise<void>;
/**
 * Resolves once the server has welcomed this client and every decision
 * it named has its document applied: edits made right after build on
 * the server's accepted drafts. Rejects at once with the RefusedError
 * of a refused connection (refused); with unreachable, also as soon as
 * a dial fails before its socket opens (the redials go on).
 * @param {Client} c
 * @param {number} ms
 * @param {boolean} unreachable reject with unreachable too
 */
export function ready(c: Client, ms: number, unreachable: boolean): Promise<void>;
/**
 * Resolves with a decision's state once its replica is here (restored
 * from storage or sent by the server), so it can be edited at once.
 * @param {Client} c
 * @param {string} id
 * @param {number} ms
 * @returns {Promise<DecisionState>}
 */
export function open(c: Client, id: string, ms: number): Promise<DecisionState>;
export type Client = import("./client.js").Client;
export type Decision = import("./client.js").Decision;
export type DecisionState = import("./client.js").DecisionState;
