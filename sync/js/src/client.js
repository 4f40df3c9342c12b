// A member's connection to one document's decisions: Accord's sync
// protocol (docs/PROTOCOL.md) over a WebSocket in msgpack (binary) frames,
// with a real automerge replica of each decision's shared draft. It
// follows the Go client (sync/replica), and never uses automerge's sync
// protocol or its sync frames.
//
// Client holds the state and the API. Its methods' bodies are functions of
// the same name, taking the client first, in the module of their concern:
//   connection.js  dial, hello, frames in arrival order, redials
//   apply.js       frames applied to the replicas (documents, changes, events)
//   records.js     the decisions held and their records
//   edits.js       local edits, their replies and resets, flush
//   requests.js    requests, kept across a lost connection, and their outcomes
//   reads.js       a decision's state, and the waits (ready, open, until)
//   storage.js     drafts kept in a Storage and restored before connecting
//   presence.js    presence, and overwritten values reported
//   undo.js        undo and redo of the member's own edits

import { encode } from "@msgpack/msgpack";
import * as Connection from "./connection.js";
import { MAX_BACKOFF, MIN_BACKOFF, syncURL } from "./connection.js";
import * as Apply from "./apply.js";
import * as Records from "./records.js";
import * as Edits from "./edits.js";
import * as Requests from "./requests.js";
import * as Reads from "./reads.js";
import * as Drafts from "./storage.js";
import * as Presence from "./presence.js";
import * as Undo from "./undo.js";
import { Peers, PresenceOut, presenceState } from "./presence.js";
import * as R from "./replica.js";
import { RefusedError, StorageError } from "./errors.js";

export { display, findingsOf, forward } from "./records.js";
export { reconnectDelay, restartsBackoff, retryAfterMs, syncURL } from "./connection.js";

/**
 * @typedef {{id: string, label: string}} Item
 * @typedef {{id: string, question: string, context?: string, response?: string, options?: Item[], multiple?: boolean, criteria?: Item[], verbatim?: boolean}} Question
 * @typedef {{questions: Question[]}} Definition
 * @typedef {{question: string, choices?: string[], text?: string, marks?: Record<string,string>}} QuestionAnswer
 * @typedef {{generation: number, answers: QuestionAnswer[], by: string, at: any}} Answer
 * @typedef {Answer & {why?: string, whyBy?: string, reopenedBy: string, reopenedAt: any}} HistoryEntry
 * @typedef {{id: string, key?: string, origin?: string, status: "open"|"settled"|"discarded", definition: Definition, generation?: number,
 *   answer?: Answer, why?: string, whyBy?: string, history?: HistoryEntry[], passage?: string[], createdBy?: string,
 *   createdAt?: any, discardedBy?: string, discardedAt?: any}} DecisionRecord
 * @typedef {{text: string, tone: "info"|"error"|"ok", at: number}} Note
 * @typedef {{id: string, record: DecisionRecord, doc: any, core: any, behind: boolean, accepted: string[], inflight: string, sent: string[],
 *   known: Set<string>, held: boolean, synced: boolean, edited: boolean, note: Note|null, busy: string, heads: string[]|null, view: any,
 *   viewKey: string, stored: any[]|null, saved: import("./storage.js").Saved|null, reset: {n: number, reply: any}|null,
 *   undo: import("./undo.js").Stacks|null}} Decision
 * @typedef {{title?: string, url: string}} Source
 * @typedef {{id: string, kind: "research"|"spike"|"ask", status: "running"|"ready"|"failed"|"stopped", focus?: string, ref: string,
 *   title?: string, summary?: string, sources?: Source[], sourceCount?: number, branch?: string, childId?: string,
 *   stance?: "supports"|"objects", by: string, at?: any}} Finding
 * @typedef {{id: string, record: DecisionRecord, status: DecisionRecord["status"], generation: number, questions: Record<string, R.QuestionDraft>,
 *   ready: boolean, synced: boolean, edited: boolean, unsent: boolean, note: Note|null, busy: string}} DecisionState
 * @typedef {import("./presence.js").PresenceState} PresenceState
 * @typedef {import("./presence.js").Peer} Peer
 * @typedef {import("./undo.js").UndoGroup} UndoGroup
 * @typedef {import("./undo.js").UndoResult} UndoResult
 * @typedef {import("./undo.js").UndoState} UndoState
 *
 * Decision.known holds every hash that has been one of the replica's heads
 * since it last took a whole document (or since its history was last all
 * accepted; see settle). It stands in for automerge's hasHeads, which
 * rebuilds changes and costs more the longer the history: the heads a
 * server reports are always changes that were once the replica's heads (a
 * change with a descendant on the server is no longer a head there), so
 * "every reported head is known" says exactly what "the history holds
 * every reported head" says, at the cost of a set lookup.
 *
 * Decision.core is the replica's automerge document; received changes go
 * to its handle alone (R.receive), and behind says its JavaScript values
 * have not caught up yet. Decision.doc is core brought up to date, when
 * read: heads, saves and changes are read from core, values from doc.
 * Decision.heads holds core's heads once read (headsOf), until core
 * changes: doc's setter and every received change reset it.
 */

/**
 * A Client's options: doc, the document; member, the member signed in
 * (names the stored drafts); url, the sync socket (default: the page's
 * own /sync, see syncURL); token, sent as a bearer token where the
 * WebSocket constructor takes headers; WebSocket, the constructor (default
 * the global one; in Node, the ws package); storage and onStorageError,
 * where drafts are kept and how a problem is reported; storeDelay (ms a
 * write waits after changes from the server, default 5000: the server
 * holds them, and a write costs about what applying a change does);
 * requestTimeout (ms, default 30000); restoreTimeout (ms, default 10000);
 * minBackoff and maxBackoff (ms, defaults 50 and 5000), the bounds of the
 * wait before each redial, as the Go client's (see reconnectDelay).
 * @typedef {{doc: string, member?: string, url?: string, token?: string, WebSocket?: any,
 *   storage?: import("./storage.js").Storage|null, onStorageError?: (err: StorageError) => void,
 *   storeDelay?: number, requestTimeout?: number, restoreTimeout?: number, minBackoff?: number, maxBackoff?: number}} ClientOptions
 */

/**
 * Who set one value of a decision's draft, when, and what it replaced
 * (docs/PROTOCOL.md, "Provenance").
 * @typedef {object} CellProvenance
 * @property {number} generation the draft's generation
 * @property {string} question the question
 * @property {"mark"|"choice"|"text"} kind what the value is
 * @property {string} cell a mark's "option/criterion"; a multiple choice's option id; "" for a single choice and for text
 * @property {string} value the mark; the chosen option id (single choice); "chosen" (multiple choice); "" when cleared, and for text
 * @property {string} by who set it
 * @property {Date|null} at when
 * @property {string} change the hash of the last automerge change of that edit
 * @property {string} was the value it replaced ("" for text)
 * @property {string} wasBy who had set that ("" when nobody had)
 */

/**
 * A reply to a request (docs/PROTOCOL.md): kind and rid echo it. ok false
 * carries the refusal's reason and message. repeated says the request
 * had already taken effect (one sent again after the connection was lost
 * before its reply): nothing changed now, and the reply tells the outcome
 * it had.
 * @typedef {object} Reply
 * @property {string} kind
 * @property {string} rid
 * @property {boolean} ok
 * @property {string} [id]
 * @property {string} [reason]
 * @property {string} [message]
 * @property {boolean} [repeated]
 * @property {string[]} [heads]
 * @property {DecisionRecord} [record]
 * @property {DecisionRecord[]} [records]
 * @property {SubmitResult[]} [results]
 * @property {Finding} [finding]
 * @property {Item} [option]
 * @property {Item} [criterion]
 * @property {Definition} [definition]
 */

/**
 * One decision's outcome in a save's reply; repeated says this member's
 * save of the same revision had already taken effect, record being the
 * decision as it is now.
 * @typedef {{id: string, ok: boolean, repeated?: boolean, reason?: string, message?: string, record?: DecisionRecord}} SubmitResult
 */

/**
 * Another member replaced a value this member had set.
 * @typedef {object} Overwrite
 * @property {string} id the decision
 * @property {string} by who replaced it
 * @property {CellProvenance} cell the value now, and what it replaced
 */

export class Client {
  /**
   * @param {ClientOptions} opts
   */
  constructor(opts) {
    this.doc = opts.doc;
    /** the member signed in: given, or what the welcome names (the storage key needs it given) */
    this.member = opts.member || "";
    this.url = opts.url || syncURL(opts.doc);
    /** a bearer token sent as the Authorization header (only where the WebSocket constructor takes headers, as Node's ws does) */
    this.token = opts.token || "";
    this.Socket = opts.WebSocket || (typeof WebSocket === "function" ? WebSocket : null);
    this.storage = opts.storage || null;
    this.onStorageError = opts.onStorageError || null;
    this.storeDelay = opts.storeDelay ?? 5000;
    this.requestTimeout = opts.requestTimeout ?? 30000;
    /** the redial backoff's bounds (ms) */
    this.minBackoff = opts.minBackoff > 0 ? opts.minBackoff : MIN_BACKOFF;
    this.maxBackoff = Math.max(this.minBackoff, opts.maxBackoff > 0 ? opts.maxBackoff : MAX_BACKOFF);
    /** @type {StorageError|null} the last storage problem, null when none */
    this.storageProblem = null;
    /** @type {Promise<void>|null} reading the stored drafts (once) */
    this.restoring = null;
    /** whether stored drafts were restored */
    this.restored = false;
    /** false once the stored drafts could not be read: they are then left as they are, for a later start */
    this.keepsDrafts = true;
    this.restoreTimeout = opts.restoreTimeout ?? 10000;
    this.storeTimer = /** @type {any} */ (null);
    /** whether a local edit is waiting to be written, and whether the timer set is for one */
    this.editedSinceStore = false;
    this.storeSoon = false;
    /** @type {Promise<void>} the last write to storage */
    this.storing = Promise.resolve();
    /** bumped on every notification; a state() snapshot is reused until it changes */
    this.version = 0;
    /** @type {Map<string, {version: number, state: DecisionState}>} */
    this.states = new Map();
    /**
     * connecting (the first dial), open (welcomed), reconnecting,
     * unreachable (the last dial failed before the socket opened; redialling
     * goes on), refused (the server refused this member or document, or
     * speaks another protocol version: see refused; no redial until
     * start()), closed (stop()).
     * @type {"connecting"|"open"|"reconnecting"|"unreachable"|"refused"|"closed"}
     */
    this.conn = "connecting";
    /** @type {RefusedError|null} why the server refused the connection (conn "refused"), with its reason */
    this.refused = null;
    /** whether the server lets this member write (from welcome) */
    this.write = false;
    this.welcomed = false;
    this.welcomedOnce = false;
    /** @type {Map<string, Decision>} */
    this.decisions = new Map();
    /** @type {string[]} decision ids, the server's order */
    this.order = [];
    /** @type {Note|null} a message about the whole page */
    this.note = null;
    /** @private @type {WebSocket|null} */
    this.ws = null;
    /** redials since the backoff last restarted: the next waits reconnectDelay(attempts) */
    this.attempts = 0;
    /** when this connection's welcome came (now()) */
    this.welcomedAt = 0;
    this.rid = 0;
    this.stopped = false;
    /**
     * Requests awaiting their reply, by rid, with the frame sent: kept
     * across a lost connection and sent again, unchanged, once the next
     * one is welcomed (see lost).
     * @private
     * @type {Map<string, {resolve: (m: any) => void, timer: any, m: any, resent: boolean, refusals: number}>}
     */
    this.pending = new Map();
    /** edits refused with a reset so far (Decision.reset), which flush reports */
    this.resets = 0;
    /**
     * Successful replies whose changes have not arrived yet, by rid: a
     * request resolves once the replica shows its effect (see reply).
     * @private
     * @type {Map<string, {id: string, heads: string[], reply: any, p: {resolve: (m: any) => void, timer: any}}>}
     */
    this.arriving = new Map();
    /** @type {Map<string, string>} idempotency keys of appends awaiting a definite answer */
    this.appendKeys = new Map();
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    this.timer = /** @type {any} */ (null);
    this.notifyQueued = false;
    /**
     * question:changes frames not applied yet, by decision, to be applied
     * together (see queueChanges).
     * @private
     * @type {Map<string, {parts: Uint8Array[], heads: string[], cells: any[], ws: any}>}
     */
    this.incoming = new Map();
    /** when the last apply of queued changes ended, and how long it took (ms) */
    this.applied = { end: 0, took: 0 };
    /** @type {any} the timer of a deferred apply */
    this.applyTimer = null;
    /** @type {any[]|null} frames that arrived while a compressed document inflates, in order */
    this.waiting = null;
    this.incomingQueued = false;
    /** the presence this client publishes, and the others' */
    this.presenceOut = new PresenceOut((m) => this.welcomed && this.send(m));
    this.peers = new Peers();
    /** @type {Set<() => void>} */
    this.presenceListeners = new Set();
    this.presenceQueued = false;
    /** @type {Set<(o: Overwrite) => void>} */
    this.overwriteListeners = new Set();
  }

  /**
   * Calls fn (in a microtask) after anything changed: a frame, a local
   * edit, the connection. Returns the unsubscribe function.
   * @param {() => void} fn
   * @returns {() => void}
   */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => {
      this.listeners.delete(fn);
    };
  }

  /** Tells the listeners, in a microtask, that something changed. */
  notify() {
    this.version++; // state() reads afresh from now on
    if (this.notifyQueued) return;
    this.notifyQueued = true;
    queueMicrotask(() => {
      this.notifyQueued = false;
      this.scheduleStore();
      for (const fn of this.listeners) fn();
    });
  }

  // ---- connection (connection.js) ----

  /**
   * Connects (and redials whenever the connection is lost). With a
   * storage, the stored drafts are restored first.
   */
  start() { Connection.start(this); }

  /** Closes the connection for good (switching member, leaving). */
  stop() { Connection.stop(this); }

  /** Dials; a lost connection redials (see lost). */
  connect() { Connection.connect(this); }

  /** A decoded frame of ws, handled in arrival order. @private @param {WebSocket} ws @param {any} m */
  receive(ws, m) { Connection.receive(this, ws, m); }

  /** Handles a frame: presence, or any other. @private @param {any} m */
  deliver(m) { Connection.deliver(this, m); }

  /**
   * The connection is gone: a redial follows the backoff, unless refused.
   * @param {number} [code] the close code
   * @param {number} [retryAfter]
   * @param {boolean} [unopened] the socket never opened
   */
  lost(code = 0, retryAfter = 0, unopened = false) { Connection.lost(this, code, retryAfter, unopened); }

  /** Ends the connection so the reconnect's hello catches the replicas up. */
  resync() { Connection.resync(this); }

  /** Sends a frame, in msgpack; false when the connection is not open. @param {any} m */
  send(m) { return Connection.send(this, encode(m, { ignoreUndefined: true })); }

  // ---- frames from the server (apply.js) and the records they carry (records.js) ----

  /** Handles a decoded frame. @private @param {any} m */
  handle(m) { Apply.handle(this, m); }

  /** A whole document (question:doc). @param {any} m */
  applyDoc(m) { Apply.applyDoc(this, m); }

  /**
   * Takes a document the server sent whole as the decision's replica.
   * @param {Decision} d
   * @param {any} srv
   * @returns {"merged"|"rebased"|"loaded"}
   */
  adoptDoc(d, srv) { return Apply.adoptDoc(this, d, srv); }

  /** Queues a question:changes frame, applied with its decision's others. @param {any} m */
  queueChanges(m) { Apply.queueChanges(this, m); }

  /** Applies the queued question:changes frames, one call per decision. */
  flushChanges() { Apply.flushChanges(this); }

  /** Accepted changes (question:changes), applied in one call. @param {any} m */
  applyChanges(m) { Apply.applyChanges(this, m); }

  /** Another member's change to a decision's record. @param {any} m */
  event(m) { Apply.event(this, m); }

  /** The decision id, added when it is new. @param {string} id @returns {Decision} */
  decision(id) { return Records.decision(this, id); }

  /** Forgets the decisions the welcome does not name. @param {any[]} records */
  dropUnnamed(records) { Records.dropUnnamed(this, records); }

  /** Takes a record from the server, its definition forward only. @param {DecisionRecord} rec */
  adoptRecord(rec) { Records.adoptRecord(this, rec); }

  /** Takes a definition from the server, forward only. @param {string} id @param {Definition} def */
  adoptDefinition(id, def) { Records.adoptDefinition(this, id, def); }

  // ---- local edits (edits.js) ----

  /**
   * Applies a local edit to a decision's replica and sends it. The
   * replica shows it when this returns. Throws a RefusedError (and
   * changes nothing) for a member who only reads (forbidden), a decision
   * that is not open (resolved) or whose document has not arrived
   * (not_found).
   * @param {string} id
   * @param {(doc: any) => any} fn returns the new document
   */
  edit(id, fn) { Edits.edit(this, id, fn); }

  /**
   * Replaces a written answer by the smallest splice.
   * @param {string} id
   * @param {string} qid
   * @param {string} text
   */
  setText(id, qid, text) {
    Undo.typed(this, id, qid, (t) => R.diff(t, text));
  }

  /**
   * Splices a written answer (positions in UTF-16 code units).
   * @param {string} id
   * @param {string} qid
   * @param {number} pos
   * @param {number} del
   * @param {string} ins
   */
  spliceText(id, qid, pos, del, ins) {
    Undo.typed(this, id, qid, () => ({ pos, del, ins }));
  }

  /**
   * Selects (on) or deselects an option; multiple defaults to the
   * question's own.
   * @param {string} id
   * @param {string} qid
   * @param {string} opt
   * @param {boolean} on
   * @param {boolean} [multiple]
   */
  choose(id, qid, opt, on, multiple) {
    const many = multiple ?? this.decisions.get(id)?.record.definition.questions.find((q) => q.id === qid)?.multiple === true;
    Undo.track(this, id, "choice", qid, many ? opt : "", () => this.edit(id, (doc) => R.choose(doc, qid, opt, on, many)));
  }

  /**
   * Sets (or, with null, clears) one cell of a question's matrix.
   * @param {string} id
   * @param {string} qid
   * @param {string} opt
   * @param {string} crit
   * @param {"yes"|"partly"|"no"|null} mark
   */
  setMark(id, qid, opt, crit, mark) {
    Undo.track(this, id, "mark", qid, `${opt}/${crit}`, () => this.edit(id, (doc) => R.setMark(doc, qid, opt, crit, mark)));
  }

  /** Sends the decision's unaccepted changes when nothing is in flight. @param {Decision} d */
  push(d) { Edits.push(this, d); }

  /** The reply to the decision's edit in flight. @param {any} m */
  editReply(m) { Edits.editReply(this, m); }

  /** Whether the decision has changes in flight or not accepted. @param {Decision} d */
  unsent(d) { return Edits.unsent(this, d); }

  /**
   * Waits until none of ids has an edit in flight or unsent: false after ms.
   * @param {string[]} ids
   * @param {number} ms
   */
  idle(ids, ms) { return Edits.idle(this, ids, ms); }

  /**
   * Resolves once the decisions' edits are all accepted (none unsent or
   * in flight), waiting through a lost connection; rejects with the
   * refusal of an edit the server refused meanwhile (its replica then
   * shows the accepted draft again), or with disconnected (no connection
   * when called, or none at the end) or timeout after ms.
   * @param {string[]} [ids] every decision when omitted
   * @param {number} [ms]
   */
  flush(ids, ms = this.requestTimeout) { return Edits.flush(this, ids, ms); }

  // ---- undo and redo (undo.js) ----

  /**
   * Undoes this member's newest edit group of the decision made through
   * this client (a mark, a choice, a typing burst on a written answer, a
   * why; docs/PROTOCOL.md, "Undo"), and nothing of anyone else's. A mark,
   * choice or why goes back only if it still holds what the group set;
   * otherwise the undo is skipped (done false) and by names who set it,
   * when known (by is the member when done). Text is reverted on the characters themselves: others'
   * typing stays. A mark, choice or text undo is in the replica when it
   * resolves, and sent like any edit; a why's waits for the server.
   * Resolves null when there is nothing to undo; rejects as an edit or a
   * why would (the group then stays).
   * @param {string} id
   * @returns {Promise<UndoResult|null>}
   */
  undo(id) { return Undo.undo(this, id); }

  /**
   * Redoes the group undone last, by the same rules (see undo); a new
   * edit group empties what there is to redo.
   * @param {string} id
   * @returns {Promise<UndoResult|null>}
   */
  redo(id) { return Undo.redo(this, id); }

  /**
   * What undo and redo would take now, and what emptied both stacks last
   * (a save, discard, reopen, rebase or reset) until the next group: the
   * same object until it changes, and subscribe's listeners are called
   * when it does.
   * @param {string} id
   * @returns {UndoState}
   */
  undoState(id) { return Undo.undoState(this, id); }

  // ---- reading (reads.js) ----

  /**
   * The decisions' records, in the server's order.
   * @returns {DecisionRecord[]}
   */
  list() {
    return this.order.map((id) => /** @type {Decision} */ (this.decisions.get(id)).record);
  }

  /**
   * A decision's state as plain values: its record, its current draft,
   * whether this member edited it, whether edits are unsent. The same
   * object is returned until something changes (so it suits React's
   * useSyncExternalStore, Preact's hooks, or any store); null for an
   * unknown decision.
   * @param {string} id
   * @returns {DecisionState|null}
   */
  state(id) { return Reads.state(this, id); }

  /**
   * Calls fn with a decision's state now and after every change to it.
   * Returns the unsubscribe function.
   * @param {string} id
   * @param {(state: DecisionState|null) => void} fn
   * @returns {() => void}
   */
  watch(id, fn) { return Reads.watch(this, id, fn); }

  /** The decision's current draft, read from its replica (cached by heads). @param {Decision} d */
  draft(d) { return Reads.draft(this, d); }

  /**
   * Resolves when pred() holds; rejects with timeout after ms.
   * @param {() => boolean} pred
   * @param {number} ms
   * @param {string} what
   * @returns {Promise<void>}
   */
  until(pred, ms, what) { return Reads.until(this, pred, ms, what); }

  /**
   * Resolves once the server has welcomed this client and every decision
   * it named has its document applied: edits made right after build on
   * the server's accepted drafts. Rejects at once with the RefusedError
   * of a refused connection (refused); with unreachable, also as soon as
   * a dial fails before its socket opens (the redials go on).
   * @param {number} [ms]
   * @param {boolean} [unreachable] reject with unreachable too
   */
  ready(ms = this.requestTimeout, unreachable = false) { return Reads.ready(this, ms, unreachable); }

  /**
   * Resolves with a decision's state once its replica is here (restored
   * from storage or sent by the server), so it can be edited at once.
   * @param {string} id
   * @param {number} [ms]
   * @returns {Promise<DecisionState>}
   */
  open(id, ms = this.requestTimeout) { return Reads.open(this, id, ms); }

  /** Decisions this member edited that are still open. */
  editedOpen() {
    return this.order.map((id) => /** @type {Decision} */ (this.decisions.get(id))).filter((d) => d && d.edited && d.record.status === "open");
  }

  // ---- requests (requests.js) ----

  /**
   * Creates decisions (question:create). Resolves with their records once
   * their documents are here.
   * @param {{key: string, origin?: string, definition: Definition}[]} cards
   * @returns {Promise<DecisionRecord[]>}
   */
  create(cards) { return Requests.create(this, cards); }

  /**
   * Saves one or several decisions at once, each claiming the revision
   * its replica displays when save is called (their edits are first sent
   * and accepted; changes of others that arrive meanwhile are not claimed,
   * and make the save stale if they changed the draft).
   * Resolves with the records once every one is saved; otherwise rejects
   * with the first refusal (its reply holds every result). Each
   * decision's note says how it went.
   * @param {string[]} ids
   * @returns {Promise<DecisionRecord[]>}
   */
  save(ids) { return Requests.save(this, ids); }

  /**
   * Reopens the settled decision's saved answer the client shows (one
   * saved again since is refused as stale); resolves once the replica
   * holds its fresh draft.
   * @param {string} id
   * @returns {Promise<DecisionRecord>}
   */
  reopen(id) { return Requests.reopen(this, id); }

  /**
   * Discards the decision; its history is kept.
   * @param {string} id
   * @returns {Promise<DecisionRecord>}
   */
  discard(id) { return Requests.discard(this, id); }

  /**
   * Sets the why (one plain sentence; empty clears it) of the settled
   * decision's saved answer the client shows, as reopen names it. It
   * replaces the why the client shows: one another member set since is
   * never overwritten unseen (refused as stale).
   * @param {string} id
   * @param {string} text
   * @returns {Promise<DecisionRecord>}
   */
  why(id, text) { return /** @type {Promise<DecisionRecord>} */ (Requests.why(this, id, text)); }

  /**
   * Appends an option to question qid (see append).
   * @param {string} id
   * @param {string} qid
   * @param {string} label
   */
  appendOption(id, qid, label) {
    return this.append("option", id, qid, label);
  }

  /**
   * Appends a criterion to question qid (see append).
   * @param {string} id
   * @param {string} qid
   * @param {string} label
   */
  appendCriterion(id, qid, label) {
    return this.append("criterion", id, qid, label);
  }

  /**
   * Appends an option or a criterion; resolves once its cells can be
   * marked. The idempotency key is kept until a definite answer, so a
   * retry after a lost connection reuses it.
   * @param {"option"|"criterion"} what
   * @param {string} id
   * @param {string} qid
   * @param {string} label
   * @returns {Promise<Item>} the new option or criterion
   */
  append(what, id, qid, label) { return Requests.append(this, what, id, qid, label); }

  /**
   * Runs a request about one decision, its outcome the decision's note.
   * @param {string} id
   * @param {string} kind
   * @param {Record<string, any>} fields
   * @param {string} busy
   * @param {string} okText
   * @returns {Promise<Reply>}
   */
  act(id, kind, fields, busy, okText) { return Requests.act(this, id, kind, fields, busy, okText); }

  /**
   * The generation of the saved answer shown; undefined unless settled.
   * @param {string} id
   * @returns {number|undefined}
   */
  savedGeneration(id) { return Requests.savedGeneration(this, id); }

  /**
   * Sends a request; resolves with its reply, and never rejects.
   * @private
   * @param {string} kind
   * @param {Record<string, any>} fields
   * @returns {Promise<any>} the reply (open: each kind has fields of its own)
   */
  request(kind, fields) { return Requests.request(this, kind, fields); }

  /**
   * Fails the requests awaiting a reply; with keep, only asks.
   * @private
   * @param {string} reason
   * @param {boolean} [keep]
   */
  failPending(reason, keep) { Requests.failPending(this, reason, keep); }

  /** A reply to a request. @param {any} m */
  reply(m) { Requests.reply(this, m); }

  /** Whether the decision's replica holds every one of heads. @param {string} id @param {string[]} heads */
  holdsHeads(id, heads) { return Requests.holdsHeads(this, id, heads); }

  /** Resolves the replies waiting for the decision's changes. @param {string} id @param {boolean} rebased */
  arrived(id, rebased) { Requests.arrived(this, id, rebased); }

  // ---- findings (question:explore, question:explore-stop, question:take, question:page) ----

  /**
   * Attaches started work (a research request or an investigation the
   * host started) or asks a member (question:explore).
   * @param {string} id
   * @param {{request?: string, investigation?: string, member?: string, focus?: string}} target
   * @returns {Promise<Reply>} the reply: {finding, record, repeated?}
   */
  explore(id, target) {
    return this.act(id, "question:explore", target, target.member ? "asking" : "exploring", "");
  }

  /**
   * Stops a running finding (question:explore-stop).
   * @param {string} id
   * @param {string} finding
   * @returns {Promise<Reply>}
   */
  stopFinding(id, finding) {
    return this.act(id, "question:explore-stop", { findingId: finding }, "stopping", "");
  }

  /**
   * The asked member's take (question:take).
   * @param {string} id
   * @param {string} finding
   * @param {string} reply
   * @param {""|"supports"|"objects"} [stance]
   * @returns {Promise<Reply>}
   */
  take(id, finding, reply, stance) {
    return this.act(id, "question:take", { findingId: finding, reply, ...(stance ? { stance } : {}) }, "taking", "");
  }

  /**
   * Expands a decision to its page (question:page); the reply's record
   * carries childId.
   * @param {string} id
   * @returns {Promise<Reply>}
   */
  page(id) {
    return this.act(id, "question:page", {}, "expanding", "");
  }

  // ---- presence (presence.js), provenance and overwrites ----

  /**
   * Publishes this connection's presence to the document's other
   * connections: the decision, question and field it is in, a selection,
   * whether it is editing. It never waits: the latest state goes out at
   * most every 100 ms (states set meanwhile fold into it), again after a
   * reconnect, and again every 20 s while it stands. Members who only
   * read may publish. Throws a RefusedError (reason invalid, nothing
   * sent) for a state the server would refuse. After stop() it does
   * nothing.
   * @param {PresenceState} state
   */
  setPresence(state) {
    const st = presenceState(state);
    if (!this.stopped) this.presenceOut.set(st);
  }

  /**
   * The presence of the document's other connections in decision id
   * (every other connection when id is omitted), by connection id: each
   * that published a state and has neither left nor gone silent since.
   * This connection's own is never among them; everyone's is forgotten
   * while disconnected. The same map is returned until it changes (it
   * suits useSyncExternalStore with onPresence).
   * @param {string} [id]
   * @returns {ReadonlyMap<string, Peer>}
   */
  others(id) {
    return this.peers.view(id);
  }

  /**
   * Calls fn (in a microtask) after the others' presence changed.
   * Returns the unsubscribe function.
   * @param {() => void} fn
   * @returns {() => void}
   */
  onPresence(fn) {
    this.presenceListeners.add(fn);
    return () => {
      this.presenceListeners.delete(fn);
    };
  }

  /** Calls the onPresence listeners, once for this task's changes. */
  presenceChanged() { Presence.presenceChanged(this); }

  /**
   * Who set each value of a decision's current draft, when, and what it
   * replaced, as the server's authority recorded it
   * (question:provenance), sorted by question, kind and cell. A value
   * nobody set since the draft was laid out has no entry. Members who
   * only read may ask. It holds committed edits: another member's edit
   * shown here a moment before its commit may not be in it yet
   * (docs/PROTOCOL.md). Rejects with a RefusedError (not_found,
   * unavailable, disconnected, timeout).
   * @param {string} id
   * @returns {Promise<CellProvenance[]>}
   */
  provenance(id) { return Requests.provenance(this, id); }

  /**
   * Calls fn once for each value this member had set that another
   * member's accepted edit replaced (mark, choice or written answer), as
   * the edit arrives; a catch-up after a reconnect reports none again.
   * Returns the unsubscribe function.
   * @param {(o: Overwrite) => void} fn
   * @returns {() => void}
   */
  onOverwritten(fn) {
    this.overwriteListeners.add(fn);
    return () => {
      this.overwriteListeners.delete(fn);
    };
  }

  /**
   * Reports the values of this member's that another member's edit replaced.
   * @param {string} id
   * @param {any[]} cells
   */
  noticeOverwrites(id, cells) { Presence.noticeOverwrites(this, id, cells); }

  // ---- drafts kept in a storage (storage.js) ----

  /**
   * Reads the stored drafts once (bounded: a storage that does not answer
   * within restoreTimeout is reported and the client goes on without it,
   * leaving the stored drafts untouched for a later start).
   * @returns {Promise<void>}
   */
  restore() { return Drafts.restore(this); }

  /**
   * Writes every decision's draft to the storage now (after the writes
   * already under way). Resolves once it is written; a failure is
   * reported, not thrown.
   * @returns {Promise<void>}
   */
  flushStorage() { return Drafts.flushStorage(this); }

  /**
   * Forgets the stored drafts of this document and member.
   * @returns {Promise<void>}
   */
  forgetStored() { return Drafts.forgetStored(this); }

  /** The key of this client's drafts: the server, the document, the member. */
  storageKey() { return Drafts.storageKey(this); }

  /** Reports a storage problem; it never stops the client. @param {StorageError} err */
  storageFailed(err) { Drafts.storageFailed(this, err); }

  /** Takes the stored record v as this client's decisions. @param {any} v */
  restoreFrom(v) { Drafts.restoreFrom(this, v); }

  /** Arms the write of the drafts that changed. */
  scheduleStore() { Drafts.scheduleStore(this); }

  /** Writes every decision's draft now. @returns {Promise<void>} */
  store() { return Drafts.store(this); }
}
