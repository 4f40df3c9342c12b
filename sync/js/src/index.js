// @accord-crdt/client: Accord's sync client for browsers and Node.
//
// connect() opens a member's connection to one document's decisions and
// resolves once it is ready (the server's welcome and every decision's
// document applied). Edits (setText, spliceText, choose, setMark) apply
// to the local automerge replica at once and are sent in the background;
// requests (save, reopen, discard, why, appendOption, appendCriterion,
// create, the findings calls) resolve once the local replica shows their
// effect, or reject with a RefusedError carrying the protocol's reason.
// With a storage (IndexedDBStorage in browsers), drafts outlive the page:
// a client started again shows them at once and pushes them when the
// server answers.

import { Client } from "./client.js";
import * as R from "./replica.js";

export { Client, display, findingsOf, forward, syncURL } from "./client.js";
export { RefusedError, StorageError } from "./errors.js";
export { IndexedDBStorage, MemoryStorage, isQuotaError } from "./storage.js";
export { OFFLINE, READER, STALE, findingRefusal, refusalText } from "./messages.js";
export { MARKS, diff, init } from "./replica.js";

/** automerge itself (the slim build the client uses), for reading a replica's document directly. */
export const automerge = R.A;

/**
 * Connects to doc's decisions and resolves with the client once it is
 * ready: restored drafts (with a storage) and the server's welcome with
 * every decision's document applied. With background, it resolves at once
 * after restoring, offline too; client.ready() is then the wait.
 * Call init() (automerge's WebAssembly) first.
 * @param {import("./client.js").ClientOptions & {background?: boolean, timeout?: number}} opts
 * @returns {Promise<Client>}
 */
export async function connect(opts) {
  const client = new Client(opts);
  client.start();
  if (client.storage) await client.restore();
  if (opts.background) return client;
  try {
    await client.ready(opts.timeout);
  } catch (e) {
    client.stop();
    throw e;
  }
  return client;
}

/**
 * @typedef {import("./client.js").ClientOptions} ClientOptions
 * @typedef {import("./client.js").Decision} Decision
 * @typedef {import("./client.js").DecisionRecord} DecisionRecord
 * @typedef {import("./client.js").DecisionState} DecisionState
 * @typedef {import("./client.js").Definition} Definition
 * @typedef {import("./client.js").Question} Question
 * @typedef {import("./client.js").Item} Item
 * @typedef {import("./client.js").Finding} Finding
 * @typedef {import("./client.js").Note} Note
 * @typedef {import("./storage.js").Storage} Storage
 * @typedef {import("./replica.js").QuestionDraft} QuestionDraft
 */
