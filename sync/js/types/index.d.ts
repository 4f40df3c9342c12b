/**
 * Connects to doc's decisions and resolves with the client once it is
 * ready: restored drafts (with a storage) and the server's welcome with
 * every decision's document applied. It rejects at once with a
 * RefusedError when the server refuses the connection (unauthorized,
 * forbidden, not_found, version) or cannot be reached (unreachable), and
 * with timeout after opts.timeout. With background, it resolves at once
 * after restoring, offline too; client.ready() is then the wait.
 * Call init() (automerge's WebAssembly) first.
 * @param {import("./client.js").ClientOptions & {background?: boolean, timeout?: number}} opts
 * @returns {Promise<Client>}
 */
export function connect(opts: import("./client.js").ClientOptions & {
    background?: boolean;
    timeout?: number;
}): Promise<Client>;
/** automerge itself (the slim build the client uses), for reading a replica's document directly. */
export const automerge: typeof R.A;
export type ClientOptions = import("./client.js").ClientOptions;
export type Decision = import("./client.js").Decision;
export type DecisionRecord = import("./client.js").DecisionRecord;
export type DecisionState = import("./client.js").DecisionState;
export type Definition = import("./client.js").Definition;
export type Question = import("./client.js").Question;
export type Item = import("./client.js").Item;
export type Finding = import("./client.js").Finding;
export type Note = import("./client.js").Note;
export type CellProvenance = import("./client.js").CellProvenance;
export type Overwrite = import("./client.js").Overwrite;
export type Reply = import("./client.js").Reply;
export type SubmitResult = import("./client.js").SubmitResult;
export type PresenceState = import("./presence.js").PresenceState;
export type Peer = import("./presence.js").Peer;
export type Storage = import("./storage.js").Storage;
export type QuestionDraft = import("./replica.js").QuestionDraft;
export type UndoGroup = import("./undo.js").UndoGroup;
export type UndoResult = import("./undo.js").UndoResult;
export type UndoState = import("./undo.js").UndoState;
import { Client } from "./client.js";
import * as R from "./replica.js";
export { Client, display, findingsOf, forward, reconnectDelay, syncURL } from "./client.js";
export { RefusedError, StorageError } from "./errors.js";
export { IndexedDBStorage, MemoryStorage, isQuotaError } from "./storage.js";
export { OFFLINE, READER, STALE, findingRefusal, refusalText } from "./messages.js";
export { MARKS, diff, init } from "./replica.js";
