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
    constructor(opts: ClientOptions);
    doc: string;
    /** the member signed in: given, or what the welcome names (the storage key needs it given) */
    member: string;
    url: string;
    /** a bearer token sent as the Authorization header (only where the WebSocket constructor takes headers, as Node's ws does) */
    token: string;
    Socket: any;
    storage: Drafts.Storage;
    onStorageError: (err: StorageError) => void;
    storeDelay: number;
    requestTimeout: number;
    /** the redial backoff's bounds (ms) */
    minBackoff: number;
    maxBackoff: number;
    /** @type {StorageError|null} the last storage problem, null when none */
    storageProblem: StorageError | null;
    /** @type {Promise<void>|null} reading the stored drafts (once) */
    restoring: Promise<void> | null;
    /** whether stored drafts were restored */
    restored: boolean;
    /** false once the stored drafts could not be read: they are then left as they are, for a later start */
    keepsDrafts: boolean;
    restoreTimeout: number;
    storeTimer: any;
    /** whether a local edit is waiting to be written, and whether the timer set is for one */
    editedSinceStore: boolean;
    storeSoon: boolean;
    /** @type {Promise<void>} the last write to storage */
    storing: Promise<void>;
    /** bumped on every notification; a state() snapshot is reused until it changes */
    version: number;
    /** @type {Map<string, {version: number, state: DecisionState}>} */
    states: Map<string, {
        version: number;
        state: DecisionState;
    }>;
    /**
     * connecting (the first dial), open (welcomed), reconnecting,
     * unreachable (the last dial failed before the socket opened; redialling
     * goes on), refused (the server refused this member or document, or
     * speaks another protocol version: see refused; no redial until
     * start()), closed (stop()).
     * @type {"connecting"|"open"|"reconnecting"|"unreachable"|"refused"|"closed"}
     */
    conn: "connecting" | "open" | "reconnecting" | "unreachable" | "refused" | "closed";
    /** @type {RefusedError|null} why the server refused the connection (conn "refused"), with its reason */
    refused: RefusedError | null;
    /** whether the server lets this member write (from welcome) */
    write: boolean;
    welcomed: boolean;
    welcomedOnce: boolean;
    /** @type {Map<string, Decision>} */
    decisions: Map<string, Decision>;
    /** @type {string[]} decision ids, the server's order */
    order: string[];
    /** @type {Note|null} a message about the whole page */
    note: Note | null;
    /** @private @type {WebSocket|null} */
    private ws;
    /** redials since the backoff last restarted: the next waits reconnectDelay(attempts) */
    attempts: number;
    /** when this connection's welcome came (now()) */
    welcomedAt: number;
    rid: number;
    stopped: boolean;
    /**
     * Requests awaiting their reply, by rid, with the frame sent: kept
     * across a lost connection and sent again, unchanged, once the next
     * one is welcomed (see lost).
     * @private
     * @type {Map<string, {resolve: (m: any) => void, timer: any, m: any, resent: boolean, refusals: number}>}
     */
    private pending;
    /** edits refused with a reset so far (Decision.reset), which flush reports */
    resets: number;
    /**
     * Successful replies whose changes have not arrived yet, by rid: a
     * request resolves once the replica shows its effect (see reply).
     * @private
     * @type {Map<string, {id: string, heads: string[], reply: any, p: {resolve: (m: any) => void, timer: any}}>}
     */
    private arriving;
    /** @type {Map<string, string>} idempotency keys of appends awaiting a definite answer */
    appendKeys: Map<string, string>;
    /** @type {Set<() => void>} */
    listeners: Set<() => void>;
    timer: any;
    notifyQueued: boolean;
    /**
     * question:changes frames not applied yet, by decision, to be applied
     * together (see queueChanges).
     * @private
     * @type {Map<string, {parts: Uint8Array[], heads: string[], cells: any[], ws: any}>}
     */
    private incoming;
    /** when the last apply of queued changes ended, and how long it took (ms) */
    applied: {
        end: number;
        took: number;
    };
    /** @type {any} the timer of a deferred apply */
    applyTimer: any;
    /** @type {any[]|null} frames that arrived while a compressed document inflates, in order */
    waiting: any[] | null;
    incomingQueued: boolean;
    /** the presence this client publishes, and the others' */
    presenceOut: Presence.PresenceOut;
    peers: Presence.Peers;
    /** @type {Set<() => void>} */
    presenceListeners: Set<() => void>;
    presenceQueued: boolean;
    /** @type {Set<(o: Overwrite) => void>} */
    overwriteListeners: Set<(o: Overwrite) => void>;
    /**
     * Calls fn (in a microtask) after anything changed: a frame, a local
     * edit, the connection. Returns the unsubscribe function.
     * @param {() => void} fn
     * @returns {() => void}
     */
    subscribe(fn: () => void): () => void;
    /** Tells the listeners, in a microtask, that something changed. */
    notify(): void;
    /**
     * Connects (and redials whenever the connection is lost). With a
     * storage, the stored drafts are restored first.
     */
    start(): void;
    /** Closes the connection for good (switching member, leaving). */
    stop(): void;
    /** Dials; a lost connection redials (see lost). */
    connect(): void;
    /** A decoded frame of ws, handled in arrival order. @private @param {WebSocket} ws @param {any} m */
    private receive;
    /** Handles a frame: presence, or any other. @private @param {any} m */
    private deliver;
    /**
     * The connection is gone: a redial follows the backoff, unless refused.
     * @param {number} [code] the close code
     * @param {number} [retryAfter]
     * @param {boolean} [unopened] the socket never opened
     */
    lost(code?: number, retryAfter?: number, unopened?: boolean): void;
    /** Ends the connection so the reconnect's hello catches the replicas up. */
    resync(): void;
    /** Sends a frame, in msgpack; false when the connection is not open. @param {any} m */
    send(m: any): boolean;
    /** Handles a decoded frame. @private @param {any} m */
    private handle;
    /** A whole document (question:doc). @param {any} m */
    applyDoc(m: any): void;
    /**
     * Takes a document the server sent whole as the decision's replica.
     * @param {Decision} d
     * @param {any} srv
     * @returns {"merged"|"rebased"|"loaded"}
     */
    adoptDoc(d: Decision, srv: any): "merged" | "rebased" | "loaded";
    /** Queues a question:changes frame, applied with its decision's others. @param {any} m */
    queueChanges(m: any): void;
    /** Applies the queued question:changes frames, one call per decision. */
    flushChanges(): void;
    /** Accepted changes (question:changes), applied in one call. @param {any} m */
    applyChanges(m: any): void;
    /** Another member's change to a decision's record. @param {any} m */
    event(m: any): void;
    /** The decision id, added when it is new. @param {string} id @returns {Decision} */
    decision(id: string): Decision;
    /** Forgets the decisions the welcome does not name. @param {any[]} records */
    dropUnnamed(records: any[]): void;
    /** Takes a record from the server, its definition forward only. @param {DecisionRecord} rec */
    adoptRecord(rec: DecisionRecord): void;
    /** Takes a definition from the server, forward only. @param {string} id @param {Definition} def */
    adoptDefinition(id: string, def: Definition): void;
    /**
     * Applies a local edit to a decision's replica and sends it. The
     * replica shows it when this returns. Throws a RefusedError (and
     * changes nothing) for a member who only reads (forbidden), a decision
     * that is not open (resolved) or whose document has not arrived
     * (not_found).
     * @param {string} id
     * @param {(doc: any) => any} fn returns the new document
     */
    edit(id: string, fn: (doc: any) => any): void;
    /**
     * Replaces a written answer by the smallest splice.
     * @param {string} id
     * @param {string} qid
     * @param {string} text
     */
    setText(id: string, qid: string, text: string): void;
    /**
     * Splices a written answer (positions in UTF-16 code units).
     * @param {string} id
     * @param {string} qid
     * @param {number} pos
     * @param {number} del
     * @param {string} ins
     */
    spliceText(id: string, qid: string, pos: number, del: number, ins: string): void;
    /**
     * Selects (on) or deselects an option; multiple defaults to the
     * question's own.
     * @param {string} id
     * @param {string} qid
     * @param {string} opt
     * @param {boolean} on
     * @param {boolean} [multiple]
     */
    choose(id: string, qid: string, opt: string, on: boolean, multiple?: boolean): void;
    /**
     * Sets (or, with null, clears) one cell of a question's matrix.
     * @param {string} id
     * @param {string} qid
     * @param {string} opt
     * @param {string} crit
     * @param {"yes"|"partly"|"no"|null} mark
     */
    setMark(id: string, qid: string, opt: string, crit: string, mark: "yes" | "partly" | "no" | null): void;
    /** Sends the decision's unaccepted changes when nothing is in flight. @param {Decision} d */
    push(d: Decision): void;
    /** The reply to the decision's edit in flight. @param {any} m */
    editReply(m: any): void;
    /** Whether the decision has changes in flight or not accepted. @param {Decision} d */
    unsent(d: Decision): boolean;
    /**
     * Waits until none of ids has an edit in flight or unsent: false after ms.
     * @param {string[]} ids
     * @param {number} ms
     */
    idle(ids: string[], ms: number): Promise<boolean>;
    /**
     * Resolves once the decisions' edits are all accepted (none unsent or
     * in flight), waiting through a lost connection; rejects with the
     * refusal of an edit the server refused meanwhile (its replica then
     * shows the accepted draft again), or with disconnected (no connection
     * when called, or none at the end) or timeout after ms.
     * @param {string[]} [ids] every decision when omitted
     * @param {number} [ms]
     */
    flush(ids?: string[], ms?: number): Promise<void>;
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
    undo(id: string): Promise<UndoResult | null>;
    /**
     * Redoes the group undone last, by the same rules (see undo); a new
     * edit group empties what there is to redo.
     * @param {string} id
     * @returns {Promise<UndoResult|null>}
     */
    redo(id: string): Promise<UndoResult | null>;
    /**
     * What undo and redo would take now, and what emptied both stacks last
     * (a save, discard, reopen, rebase or reset) until the next group: the
     * same object until it changes, and subscribe's listeners are called
     * when it does.
     * @param {string} id
     * @returns {UndoState}
     */
    undoState(id: string): UndoState;
    /**
     * The decisions' records, in the server's order.
     * @returns {DecisionRecord[]}
     */
    list(): DecisionRecord[];
    /**
     * A decision's state as plain values: its record, its current draft,
     * whether this member edited it, whether edits are unsent. The same
     * object is returned until something changes (so it suits React's
     * useSyncExternalStore, Preact's hooks, or any store); null for an
     * unknown decision.
     * @param {string} id
     * @returns {DecisionState|null}
     */
    state(id: string): DecisionState | null;
    /**
     * Calls fn with a decision's state now and after every change to it.
     * Returns the unsubscribe function.
     * @param {string} id
     * @param {(state: DecisionState|null) => void} fn
     * @returns {() => void}
     */
    watch(id: string, fn: (state: DecisionState | null) => void): () => void;
    /** The decision's current draft, read from its replica (cached by heads). @param {Decision} d */
    draft(d: Decision): any;
    /**
     * Resolves when pred() holds; rejects with timeout after ms.
     * @param {() => boolean} pred
     * @param {number} ms
     * @param {string} what
     * @returns {Promise<void>}
     */
    until(pred: () => boolean, ms: number, what: string): Promise<void>;
    /**
     * Resolves once the server has welcomed this client and every decision
     * it named has its document applied: edits made right after build on
     * the server's accepted drafts. Rejects at once with the RefusedError
     * of a refused connection (refused); with unreachable, also as soon as
     * a dial fails before its socket opens (the redials go on).
     * @param {number} [ms]
     * @param {boolean} [unreachable] reject with unreachable too
     */
    ready(ms?: number, unreachable?: boolean): Promise<void>;
    /**
     * Resolves with a decision's state once its replica is here (restored
     * from storage or sent by the server), so it can be edited at once.
     * @param {string} id
     * @param {number} [ms]
     * @returns {Promise<DecisionState>}
     */
    open(id: string, ms?: number): Promise<DecisionState>;
    /** Decisions this member edited that are still open. */
    editedOpen(): Decision[];
    /**
     * Creates decisions (question:create). Resolves with their records once
     * their documents are here.
     * @param {{key: string, origin?: string, definition: Definition}[]} cards
     * @returns {Promise<DecisionRecord[]>}
     */
    create(cards: {
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
     * @param {string[]} ids
     * @returns {Promise<DecisionRecord[]>}
     */
    save(ids: string[]): Promise<DecisionRecord[]>;
    /**
     * Reopens the settled decision's saved answer the client shows (one
     * saved again since is refused as stale); resolves once the replica
     * holds its fresh draft.
     * @param {string} id
     * @returns {Promise<DecisionRecord>}
     */
    reopen(id: string): Promise<DecisionRecord>;
    /**
     * Discards the decision; its history is kept.
     * @param {string} id
     * @returns {Promise<DecisionRecord>}
     */
    discard(id: string): Promise<DecisionRecord>;
    /**
     * Sets the why (one plain sentence; empty clears it) of the settled
     * decision's saved answer the client shows, as reopen names it. It
     * replaces the why the client shows: one another member set since is
     * never overwritten unseen (refused as stale).
     * @param {string} id
     * @param {string} text
     * @returns {Promise<DecisionRecord>}
     */
    why(id: string, text: string): Promise<DecisionRecord>;
    /**
     * Appends an option to question qid (see append).
     * @param {string} id
     * @param {string} qid
     * @param {string} label
     */
    appendOption(id: string, qid: string, label: string): Promise<Item>;
    /**
     * Appends a criterion to question qid (see append).
     * @param {string} id
     * @param {string} qid
     * @param {string} label
     */
    appendCriterion(id: string, qid: string, label: string): Promise<Item>;
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
    append(what: "option" | "criterion", id: string, qid: string, label: string): Promise<Item>;
    /**
     * Runs a request about one decision, its outcome the decision's note.
     * @param {string} id
     * @param {string} kind
     * @param {Record<string, any>} fields
     * @param {string} busy
     * @param {string} okText
     * @returns {Promise<Reply>}
     */
    act(id: string, kind: string, fields: Record<string, any>, busy: string, okText: string): Promise<Reply>;
    /**
     * The generation of the saved answer shown; undefined unless settled.
     * @param {string} id
     * @returns {number|undefined}
     */
    savedGeneration(id: string): number | undefined;
    /**
     * Sends a request; resolves with its reply, and never rejects.
     * @private
     * @param {string} kind
     * @param {Record<string, any>} fields
     * @returns {Promise<any>} the reply (open: each kind has fields of its own)
     */
    private request;
    /**
     * Fails the requests awaiting a reply; with keep, only asks.
     * @private
     * @param {string} reason
     * @param {boolean} [keep]
     */
    private failPending;
    /** A reply to a request. @param {any} m */
    reply(m: any): void;
    /** Whether the decision's replica holds every one of heads. @param {string} id @param {string[]} heads */
    holdsHeads(id: string, heads: string[]): boolean;
    /** Resolves the replies waiting for the decision's changes. @param {string} id @param {boolean} rebased */
    arrived(id: string, rebased: boolean): void;
    /**
     * Attaches started work (a research request or an investigation the
     * host started) or asks a member (question:explore).
     * @param {string} id
     * @param {{request?: string, investigation?: string, member?: string, focus?: string}} target
     * @returns {Promise<Reply>} the reply: {finding, record, repeated?}
     */
    explore(id: string, target: {
        request?: string;
        investigation?: string;
        member?: string;
        focus?: string;
    }): Promise<Reply>;
    /**
     * Stops a running finding (question:explore-stop).
     * @param {string} id
     * @param {string} finding
     * @returns {Promise<Reply>}
     */
    stopFinding(id: string, finding: string): Promise<Reply>;
    /**
     * The asked member's take (question:take).
     * @param {string} id
     * @param {string} finding
     * @param {string} reply
     * @param {""|"supports"|"objects"} [stance]
     * @returns {Promise<Reply>}
     */
    take(id: string, finding: string, reply: string, stance?: "" | "supports" | "objects"): Promise<Reply>;
    /**
     * Expands a decision to its page (question:page); the reply's record
     * carries childId.
     * @param {string} id
     * @returns {Promise<Reply>}
     */
    page(id: string): Promise<Reply>;
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
    setPresence(state: PresenceState): void;
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
    others(id?: string): ReadonlyMap<string, Peer>;
    /**
     * Calls fn (in a microtask) after the others' presence changed.
     * Returns the unsubscribe function.
     * @param {() => void} fn
     * @returns {() => void}
     */
    onPresence(fn: () => void): () => void;
    /** Calls the onPresence listeners, once for this task's changes. */
    presenceChanged(): void;
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
    provenance(id: string): Promise<CellProvenance[]>;
    /**
     * Calls fn once for each value this member had set that another
     * member's accepted edit replaced (mark, choice or written answer), as
     * the edit arrives; a catch-up after a reconnect reports none again.
     * Returns the unsubscribe function.
     * @param {(o: Overwrite) => void} fn
     * @returns {() => void}
     */
    onOverwritten(fn: (o: Overwrite) => void): () => void;
    /**
     * Reports the values of this member's that another member's edit replaced.
     * @param {string} id
     * @param {any[]} cells
     */
    noticeOverwrites(id: string, cells: any[]): void;
    /**
     * Reads the stored drafts once (bounded: a storage that does not answer
     * within restoreTimeout is reported and the client goes on without it,
     * leaving the stored drafts untouched for a later start).
     * @returns {Promise<void>}
     */
    restore(): Promise<void>;
    /**
     * Writes every decision's draft to the storage now (after the writes
     * already under way). Resolves once it is written; a failure is
     * reported, not thrown.
     * @returns {Promise<void>}
     */
    flushStorage(): Promise<void>;
    /**
     * Forgets the stored drafts of this document and member.
     * @returns {Promise<void>}
     */
    forgetStored(): Promise<void>;
    /** The key of this client's drafts: the server, the document, the member. */
    storageKey(): string;
    /** Reports a storage problem; it never stops the client. @param {StorageError} err */
    storageFailed(err: StorageError): void;
    /** Takes the stored record v as this client's decisions. @param {any} v */
    restoreFrom(v: any): void;
    /** Arms the write of the drafts that changed. */
    scheduleStore(): void;
    /** Writes every decision's draft now. @returns {Promise<void>} */
    store(): Promise<void>;
}
export type Item = {
    id: string;
    label: string;
};
export type Question = {
    id: string;
    question: string;
    context?: string;
    response?: string;
    options?: Item[];
    multiple?: boolean;
    criteria?: Item[];
    verbatim?: boolean;
};
export type Definition = {
    questions: Question[];
};
export type QuestionAnswer = {
    question: string;
    choices?: string[];
    text?: string;
    marks?: Record<string, string>;
};
export type Answer = {
    generation: number;
    answers: QuestionAnswer[];
    by: string;
    at: any;
};
export type HistoryEntry = Answer & {
    why?: string;
    whyBy?: string;
    reopenedBy: string;
    reopenedAt: any;
};
export type DecisionRecord = {
    id: string;
    key?: string;
    origin?: string;
    status: "open" | "settled" | "discarded";
    definition: Definition;
    generation?: number;
    answer?: Answer;
    why?: string;
    whyBy?: string;
    history?: HistoryEntry[];
    passage?: string[];
    createdBy?: string;
    createdAt?: any;
    discardedBy?: string;
    discardedAt?: any;
};
export type Note = {
    text: string;
    tone: "info" | "error" | "ok";
    at: number;
};
export type Decision = {
    id: string;
    record: DecisionRecord;
    doc: any;
    core: any;
    behind: boolean;
    accepted: string[];
    inflight: string;
    sent: string[];
    known: Set<string>;
    held: boolean;
    synced: boolean;
    edited: boolean;
    note: Note | null;
    busy: string;
    heads: string[] | null;
    view: any;
    viewKey: string;
    stored: any[] | null;
    saved: import("./storage.js").Saved | null;
    reset: {
        n: number;
        reply: any;
    } | null;
    undo: import("./undo.js").Stacks | null;
};
export type Source = {
    title?: string;
    url: string;
};
export type Finding = {
    id: string;
    kind: "research" | "spike" | "ask";
    status: "running" | "ready" | "failed" | "stopped";
    focus?: string;
    ref: string;
    title?: string;
    summary?: string;
    sources?: Source[];
    sourceCount?: number;
    branch?: string;
    childId?: string;
    stance?: "supports" | "objects";
    by: string;
    at?: any;
};
export type DecisionState = {
    id: string;
    record: DecisionRecord;
    status: DecisionRecord["status"];
    generation: number;
    questions: Record<string, R.QuestionDraft>;
    ready: boolean;
    synced: boolean;
    edited: boolean;
    unsent: boolean;
    note: Note | null;
    busy: string;
};
export type PresenceState = import("./presence.js").PresenceState;
export type Peer = import("./presence.js").Peer;
export type UndoGroup = import("./undo.js").UndoGroup;
export type UndoResult = import("./undo.js").UndoResult;
/**
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
export type UndoState = import("./undo.js").UndoState;
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
 */
export type ClientOptions = {
    doc: string;
    member?: string;
    url?: string;
    token?: string;
    WebSocket?: any;
    storage?: import("./storage.js").Storage | null;
    onStorageError?: (err: StorageError) => void;
    storeDelay?: number;
    requestTimeout?: number;
    restoreTimeout?: number;
    minBackoff?: number;
    maxBackoff?: number;
};
/**
 * Who set one value of a decision's draft, when, and what it replaced
 * (docs/PROTOCOL.md, "Provenance").
 */
export type CellProvenance = {
    /**
     * the draft's generation
     */
    generation: number;
    /**
     * the question
     */
    question: string;
    /**
     * what the value is
     */
    kind: "mark" | "choice" | "text";
    /**
     * a mark's "option/criterion"; a multiple choice's option id; "" for a single choice and for text
     */
    cell: string;
    /**
     * the mark; the chosen option id (single choice); "chosen" (multiple choice); "" when cleared, and for text
     */
    value: string;
    /**
     * who set it
     */
    by: string;
    /**
     * when
     */
    at: Date | null;
    /**
     * the hash of the last automerge change of that edit
     */
    change: string;
    /**
     * the value it replaced ("" for text)
     */
    was: string;
    /**
     * who had set that ("" when nobody had)
     */
    wasBy: string;
};
/**
 * A reply to a request (docs/PROTOCOL.md): kind and rid echo it. ok false
 * carries the refusal's reason and message. repeated says the request
 * had already taken effect (one sent again after the connection was lost
 * before its reply): nothing changed now, and the reply tells the outcome
 * it had.
 */
export type Reply = {
    kind: string;
    rid: string;
    ok: boolean;
    id?: string;
    reason?: string;
    message?: string;
    repeated?: boolean;
    heads?: string[];
    record?: DecisionRecord;
    records?: DecisionRecord[];
    results?: SubmitResult[];
    finding?: Finding;
    option?: Item;
    criterion?: Item;
    definition?: Definition;
};
/**
 * One decision's outcome in a save's reply; repeated says this member's
 * save of the same revision had already taken effect, record being the
 * decision as it is now.
 */
export type SubmitResult = {
    id: string;
    ok: boolean;
    repeated?: boolean;
    reason?: string;
    message?: string;
    record?: DecisionRecord;
};
/**
 * Another member replaced a value this member had set.
 */
export type Overwrite = {
    /**
     * the decision
     */
    id: string;
    /**
     * who replaced it
     */
    by: string;
    /**
     * the value now, and what it replaced
     */
    cell: CellProvenance;
};
import * as Drafts from "./storage.js";
import { StorageError } from "./errors.js";
import { RefusedError } from "./errors.js";
import * as Presence from "./presence.js";
import * as R from "./replica.js";
export { display, findingsOf, forward } from "./records.js";
export { reconnectDelay, restartsBackoff, retryAfterMs, syncURL } from "./connection.js";
