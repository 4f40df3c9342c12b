/**
 * Fails the requests awaiting a reply; with keep, all but an ask
 * (question:explore naming a member), which are sent again once the
 * next connection is welcomed: the server answers one that had already
 * taken effect as it did (docs/PROTOCOL.md, "Outcomes of a resent
 * request"), while a new ask could not be told from a resent one.
 * @param {Client} c
 * @param {string} reason
 * @param {boolean} keep
 */
export function failPending(c: Client, reason: string, keep: boolean): void;
/**
 * Sends a request and waits for its reply, at most requestTimeout (never
 * rejects: no connection when it is made, or a timeout, is a refusal
 * with reason disconnected or timeout). A connection lost before the
 * reply (or closing as it is made) does not end the wait: the request
 * is sent again, unchanged, once the next one is welcomed (an ask
 * fails, see failPending).
 * @param {Client} c
 * @param {string} kind
 * @param {Record<string, any>} fields
 * @returns {Promise<any>} the reply (open: each kind has fields of its own)
 */
export function request(c: Client, kind: string, fields: Record<string, any>): Promise<any>;
/**
 * A reply to a request: an edit's goes to editReply; any other's records
 * are adopted and its request settles, once the replica holds the heads
 * it names.
 * @param {Client} c
 * @param {any} m
 */
export function reply(c: Client, m: any): void;
/**
 * Whether the decision's replica holds every one of heads.
 * @param {Client} c
 * @param {string} id
 * @param {string[]} heads
 */
export function holdsHeads(c: Client, id: string, heads: string[]): boolean;
/**
 * Resolves the replies waiting for a decision's changes: those whose
 * heads the replica now holds, or all of them after a rebased document
 * (which holds their effect under another history).
 * @param {Client} c
 * @param {string} id
 * @param {boolean} rebased
 */
export function arrived(c: Client, id: string, rebased: boolean): void;
/**
 * Creates decisions (question:create). Resolves with their records once
 * their documents are here.
 * @param {Client} c
 * @param {{key: string, origin?: string, definition: Definition}[]} cards
 * @returns {Promise<DecisionRecord[]>}
 */
export function create(c: Client, cards: {
    key: string;
    origin?: string;
    definition: Definition;
}[]): Promise<DecisionRecord[]>;
/**
 * Saves one or several decisions at once, each claiming the revision
 * its replica displays when save is called (their edits are first sent
 * and accepted; changes of others that arrive meanwhile are not claimed,
 * and make the save stale if they changed the draft).
 * Resolves with the records once every one is saved; otherwise rejects
 * with the first refusal (its reply holds every result). Each
 * decision's note says how it went.
 * @param {Client} c
 * @param {string[]} ids
 * @returns {Promise<DecisionRecord[]>}
 */
export function save(c: Client, ids: string[]): Promise<DecisionRecord[]>;
/**
 * Runs a request about one decision, showing its outcome as the
 * decision's note. Resolves with the reply, or rejects with a
 * RefusedError.
 * @param {Client} c
 * @param {string} id
 * @param {string} kind
 * @param {Record<string, any>} fields
 * @param {string} busy
 * @param {string} okText
 * @returns {Promise<Reply>}
 */
export function act(c: Client, id: string, kind: string, fields: Record<string, any>, busy: string, okText: string): Promise<Reply>;
/**
 * The generation of the saved answer the client shows for a decision;
 * undefined (not sent) unless it shows it settled. A reopen or a why
 * names the answer it acts on, so that the server tells one sent again
 * after a lost reply from a new one, and refuses one whose answer was
 * reopened and saved over since as stale; of a decision shown open, it
 * is refused (not_settled) without asking the server (see act).
 * @param {Client} c
 * @param {string} id
 * @returns {number|undefined}
 */
export function savedGeneration(c: Client, id: string): number | undefined;
/**
 * Reopens the settled decision's saved answer the client shows (one
 * saved again since is refused as stale); resolves once the replica
 * holds its fresh draft.
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<DecisionRecord>}
 */
export function reopen(c: Client, id: string): Promise<DecisionRecord>;
/**
 * Discards the decision (question:discard).
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<DecisionRecord>}
 */
export function discard(c: Client, id: string): Promise<DecisionRecord>;
/**
 * Sets the why (one plain sentence; empty clears it) of the settled
 * decision's saved answer the client shows, as reopen names it: a group
 * to undo. An undo's (seen given: the why it replaces) resolves null,
 * and sets no note, when another why replaced seen (refused as stale).
 * @param {Client} c
 * @param {string} id
 * @param {string} text
 * @param {string} [seen]
 * @returns {Promise<DecisionRecord|null>}
 */
export function why(c: Client, id: string, text: string, seen?: string): Promise<DecisionRecord | null>;
/**
 * Appends an option or a criterion; resolves once its cells can be
 * marked. The idempotency key is kept until a definite answer, so a
 * retry after a lost connection reuses it.
 * @param {Client} c
 * @param {"option"|"criterion"} what
 * @param {string} id
 * @param {string} qid
 * @param {string} label
 * @returns {Promise<Item>} the new option or criterion
 */
export function append(c: Client, what: "option" | "criterion", id: string, qid: string, label: string): Promise<Item>;
/**
 * Who set each value of a decision's current draft, when, and what it
 * replaced, as the server's authority recorded it
 * (question:provenance), sorted by question, kind and cell. A value
 * nobody set since the draft was laid out has no entry. Members who
 * only read may ask. It holds committed edits: another member's edit
 * shown here a moment before its commit may not be in it yet
 * (docs/PROTOCOL.md). Rejects with a RefusedError (not_found,
 * unavailable, disconnected, timeout).
 * @param {Client} c
 * @param {string} id
 * @returns {Promise<CellProvenance[]>}
 */
export function provenance(c: Client, id: string): Promise<CellProvenance[]>;
export type Client = import("./client.js").Client;
export type Decision = import("./client.js").Decision;
export type DecisionRecord = import("./client.js").DecisionRecord;
export type Definition = import("./client.js").Definition;
export type Item = import("./client.js").Item;
export type Note = import("./client.js").Note;
export type Reply = import("./client.js").Reply;
export type CellProvenance = import("./client.js").CellProvenance;
