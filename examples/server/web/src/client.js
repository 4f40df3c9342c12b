// The page's connection to one document's decisions: Accord's sync
// protocol (docs/PROTOCOL.md) over a WebSocket in msgpack (binary) frames,
// with a real automerge replica of each decision's shared draft.
//
// It mirrors the Go client (sync/replica):
//   - hello lists, per decision, the last heads the server accepted; the
//     server answers with question:changes since then, or question:doc;
//   - local edits apply to the replica at once and go out as question:edit
//     carrying the changes since the accepted heads, one edit in flight per
//     decision (changes made meanwhile go in the next);
//   - a refusal with reset replaces the replica with the accepted document
//     the reply carries, under a fresh actor;
//   - Save first waits until the replica's edits are accepted, so the heads
//     it claims are the ones displayed;
//   - definitions are adopted forward only (never fewer options or
//     criteria than held);
//   - a lost connection is redialled with backoff, and a replica missing
//     changes reconnects to catch up;
//   - question:changes frames (one change or a commit group's several)
//     that arrive together are applied in one call, and whether a frame's
//     heads are in the history is read from the heads the replica has
//     held, never from automerge's hasHeads, whose cost grows with the
//     history (issue 10, bench/apply.mjs);
//   - a rebased document (question:doc or a reset whose history lacks the
//     accepted heads) replaces the replica, which carries its unaccepted
//     draft values over as fresh edits.
// The page never uses automerge's sync protocol or its sync frames.

import { decode, encode } from "@msgpack/msgpack";
import * as R from "./replica.js";
import { OFFLINE, READER, refusalText } from "./messages.js";

const A = R.A;

/**
 * @typedef {{id: string, label: string}} Item
 * @typedef {{id: string, question: string, context?: string, response?: string, options?: Item[], multiple?: boolean, criteria?: Item[], verbatim?: boolean}} Question
 * @typedef {{questions: Question[]}} Definition
 * @typedef {{question: string, choices?: string[], text?: string, marks?: Record<string,string>}} QuestionAnswer
 * @typedef {{generation: number, answers: QuestionAnswer[], by: string, at: any}} Answer
 * @typedef {Answer & {why?: string, whyBy?: string, reopenedBy: string, reopenedAt: any}} HistoryEntry
 * @typedef {{id: string, key?: string, origin?: string, status: string, definition: Definition, generation?: number,
 *   answer?: Answer, why?: string, whyBy?: string, history?: HistoryEntry[], passage?: string[], createdBy?: string,
 *   createdAt?: any, discardedBy?: string, discardedAt?: any}} DecisionRecord
 * @typedef {{text: string, tone: "info"|"error"|"ok", at: number}} Note
 * @typedef {{id: string, record: DecisionRecord, doc: any, accepted: string[], inflight: string, sent: string[],
 *   known: Set<string>, held: boolean, synced: boolean, edited: boolean, note: Note|null, busy: string, view: any,
 *   viewKey: string}} Decision
 *
 * known holds every hash that has been one of the replica's heads since it
 * last took a whole document (or since its history was last all accepted;
 * see settle). It stands in for automerge's hasHeads, which rebuilds
 * changes and costs more the longer the history: the heads a server
 * reports are always changes that were once the replica's heads (a change
 * with a descendant on the server is no longer a head there), so "every
 * reported head is known" says exactly what "the history holds every
 * reported head" says, at the cost of a set lookup.
 */

/** Request kinds; their replies carry the same kind. */
const REQUESTS = new Set([
  "question:create", "question:edit", "question:submit", "question:reopen", "question:discard",
  "question:option", "question:criterion", "question:why", "question:expand",
]);

const EVENTS = new Set([
  "question:created", "question:meta", "question:resolved", "question:reopened", "question:discarded",
  "question:option-added", "question:criterion-added",
]);

export class Client {
  /**
   * @param {{doc: string, member: string, url?: string}} opts
   */
  constructor(opts) {
    this.doc = opts.doc;
    this.member = opts.member;
    this.url = opts.url || syncURL(opts.doc);
    /** "connecting" | "open" | "reconnecting" | "closed" */
    this.conn = "connecting";
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
    /** @type {WebSocket|null} */
    this.ws = null;
    this.attempts = 0;
    this.rid = 0;
    this.stopped = false;
    /** @type {Map<string, {resolve: (m: any) => void, timer: any}>} */
    this.pending = new Map();
    /**
     * Successful replies whose changes have not arrived yet, by rid: a
     * request resolves once the replica shows its effect (see reply).
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
     * question:changes frames not applied yet, by decision. automerge's
     * cost per call grows with the document while its cost per change in
     * a call does not, so frames are applied together: at the end of the
     * task when the replica has been idle, otherwise once as much time
     * has passed since the last apply as that apply took (see
     * queueChanges), so that under load applying takes at most about half
     * the time and each call takes more changes.
     * @type {Map<string, {parts: Uint8Array[], heads: string[], ws: any}>}
     */
    this.incoming = new Map();
    /** when the last apply of queued changes ended, and how long it took (ms) */
    this.applied = { end: 0, took: 0 };
    /** @type {any} the timer of a deferred apply */
    this.applyTimer = null;
    /** @type {any[]|null} frames that arrived while a compressed document inflates, in order */
    this.waiting = null;
    this.incomingQueued = false;
    /** @type {Record<string, string>} decisions this member edited, by id: the draft generation, kept across reloads */
    this.editedKept = loadEdited(this.editedKey());
  }

  editedKey() {
    return `accord.edited.${this.doc}.${this.member}`;
  }

  /**
   * Keeps which open drafts this member edited (the Edited tag, the Save
   * bar) for this tab, so that a reload does not forget them.
   */
  keepEdited() {
    /** @type {Record<string, string>} */
    const next = {};
    for (const [id, g] of Object.entries(this.editedKept)) {
      const d = this.decisions.get(id);
      if (!d || !d.doc) next[id] = g; // not loaded yet: keep as it was
    }
    for (const d of this.decisions.values()) {
      if (d.edited && d.doc && d.record.status === "open") next[d.id] = R.genKey(d.doc);
    }
    const json = JSON.stringify(next);
    if (json === JSON.stringify(this.editedKept)) return;
    this.editedKept = next;
    try {
      if (Object.keys(next).length) sessionStorage.setItem(this.editedKey(), json);
      else sessionStorage.removeItem(this.editedKey());
    } catch {
      // storage unavailable: the marks last until the page is left
    }
  }

  /**
   * Restores the Edited mark of a decision this member edited before a
   * reload, while its draft is still the one they edited.
   * @param {Decision} d
   */
  restoreEdited(d) {
    if (!d.edited && d.doc && d.record.status === "open" && this.editedKept[d.id] === R.genKey(d.doc)) d.edited = true;
  }

  /** @param {() => void} fn */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  notify() {
    if (this.notifyQueued) return;
    this.notifyQueued = true;
    queueMicrotask(() => {
      this.notifyQueued = false;
      this.keepEdited();
      for (const fn of this.listeners) fn();
    });
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  /** Closes the connection for good (switching member, leaving). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.applyTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, "bye");
    this.failPending("disconnected");
    // Accepted, but their changes will not come: the caller learns the
    // outcome now rather than at the timeout.
    for (const a of this.arriving.values()) {
      clearTimeout(a.p.timer);
      a.p.resolve(a.reply);
    }
    this.arriving.clear();
    this.conn = "closed";
    this.notify();
  }

  connect() {
    if (this.stopped) return;
    const ws = new WebSocket(this.url);
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    this.conn = this.attempts === 0 && !this.welcomedOnce ? "connecting" : "reconnecting";
    this.notify();
    ws.onopen = () => {
      if (ws !== this.ws) return;
      /** @type {Record<string, string[]>} */
      const have = {};
      for (const d of this.decisions.values()) if (d.doc && d.accepted.length) have[d.id] = d.accepted;
      this.send({ kind: "hello", v: 1, have, deflate: INFLATES });
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      let m;
      try {
        m = typeof ev.data === "string" ? JSON.parse(ev.data) : decode(new Uint8Array(ev.data));
      } catch (e) {
        console.warn("undecodable frame", e);
        return;
      }
      this.receive(ws, m);
    };
    ws.onclose = () => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.lost();
    };
  }

  /**
   * Handles a decoded frame of ws in arrival order. A compressed document
   * (question:doc with deflated) inflates asynchronously; the frames after
   * it wait until it is handled.
   * @param {WebSocket} ws
   * @param {any} m
   */
  receive(ws, m) {
    if (this.waiting) {
      this.waiting.push(m);
      return;
    }
    if (!(m && m.kind === "question:doc" && m.deflated === true && m.doc instanceof Uint8Array)) {
      this.deliver(m);
      return;
    }
    this.waiting = [];
    inflate(m.doc, MAX_DOC_BYTES).then(
      (doc) => {
        if (ws !== this.ws) return;
        const rest = this.waiting || [];
        this.waiting = null;
        this.deliver({ ...m, doc, deflated: false });
        for (const x of rest) {
          if (ws !== this.ws) return;
          this.receive(ws, x);
        }
      },
      (e) => {
        if (ws !== this.ws) return;
        console.warn("undecodable compressed document", e);
        this.waiting = null;
        ws.close(1000, "undecodable frame"); // the reconnect catches up again
      },
    );
  }

  /** @param {any} m */
  deliver(m) {
    try {
      this.handle(m);
    } catch (e) {
      console.error("frame", m && m.kind, e);
    }
    this.notify();
  }

  /** The connection is gone: fail what waits for it and redial. */
  lost() {
    this.waiting = null;
    this.welcomed = false;
    this.incoming.clear();
    this.incomingQueued = false;
    clearTimeout(this.applyTimer);
    this.failPending("disconnected");
    for (const d of this.decisions.values()) {
      d.inflight = "";
      d.sent = [];
      d.synced = false;
    }
    if (this.stopped) return;
    this.conn = "reconnecting";
    const delay = Math.min(5000, 400 * 2 ** Math.min(this.attempts, 4)) * (0.75 + Math.random() * 0.5);
    this.attempts++;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
    this.notify();
  }

  /** Ends the connection so the reconnect's hello catches the replicas up. */
  resync() {
    const ws = this.ws;
    if (!ws) return;
    this.ws = null;
    ws.close(4000, "resync");
    this.attempts = 0;
    this.lost();
  }

  /** @param {any} m */
  send(m) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(encode(m, { ignoreUndefined: true }));
    return true;
  }

  /** @param {string} reason */
  failPending(reason) {
    for (const [rid, p] of this.pending) {
      clearTimeout(p.timer);
      p.resolve({ ok: false, reason, rid });
    }
    this.pending.clear();
  }

  /**
   * Sends a request and waits for its reply (never rejects: a lost
   * connection or a timeout is a refusal with reason disconnected or
   * timeout).
   * @param {string} kind
   * @param {Record<string, any>} fields
   * @returns {Promise<any>}
   */
  request(kind, fields) {
    const rid = "r" + ++this.rid;
    if (!this.welcomed || !this.send({ kind, rid, ...fields })) {
      return Promise.resolve({ kind, rid, ok: false, reason: "disconnected" });
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(rid);
        this.arriving.delete(rid);
        resolve({ kind, rid, ok: false, reason: "timeout" });
        this.notify();
      }, 30000);
      this.pending.set(rid, { resolve, timer });
    });
  }

  // ---- frames from the server ----

  /** @param {any} m */
  handle(m) {
    if (!m || typeof m.kind !== "string") return;
    if (m.kind === "question:changes") return this.queueChanges(m);
    // Every other frame sees the changes that came before it applied,
    // except an accepted edit's reply: it only moves the accepted heads,
    // to the reply's if the replica holds them and to the heads it sent
    // otherwise, so the queue may keep growing for one larger apply.
    if (!(m.kind === "question:edit" && m.ok === true)) this.flushChanges();
    if (REQUESTS.has(m.kind)) return this.reply(m);
    if (EVENTS.has(m.kind)) return this.event(m);
    switch (m.kind) {
      case "welcome":
        this.welcomed = true;
        this.welcomedOnce = true;
        this.attempts = 0;
        this.conn = "open";
        this.member = m.member || this.member;
        this.write = m.write === true;
        this.note = null;
        for (const r of m.records || []) this.adoptRecord(r);
        return;
      case "question:doc":
        return this.applyDoc(m);
      case "error":
        this.note = { text: `The server reported a problem: ${m.message || m.reason}`, tone: "error", at: Date.now() };
        if (m.rid && this.pending.has(m.rid)) {
          const p = this.pending.get(m.rid);
          this.pending.delete(m.rid);
          clearTimeout(p?.timer);
          p?.resolve({ ok: false, reason: m.reason, message: m.message });
        }
        if (m.reason === "version") this.stop();
        return;
    }
  }

  /**
   * @param {string} id
   * @returns {Decision}
   */
  decision(id) {
    let d = this.decisions.get(id);
    if (!d) {
      d = {
        id, record: /** @type {any} */ ({ id, status: "open", definition: { questions: [] } }), doc: null,
        accepted: [], inflight: "", sent: [], known: new Set(), held: false, synced: false, edited: false, note: null, busy: "",
        view: null, viewKey: "",
      };
      this.decisions.set(id, d);
      this.order.push(id);
    }
    return d;
  }

  /** @param {DecisionRecord} rec */
  adoptRecord(rec) {
    if (!rec || !rec.id) return;
    const d = this.decision(rec.id);
    const next = normalizeRecord(rec);
    next.definition = forward(d.record.definition, next.definition);
    d.record = next;
    if (next.status !== "open") d.edited = false;
  }

  /**
   * @param {string} id
   * @param {Definition} def
   */
  adoptDefinition(id, def) {
    const d = this.decisions.get(id);
    if (!d || !def) return;
    d.record = { ...d.record, definition: forward(d.record.definition, normalizeDefinition(def)) };
  }

  /**
   * A whole document (question:doc): the first load of a decision, a
   * catch-up the server sends whole, or a rebased document.
   * @param {any} m
   */
  applyDoc(m) {
    const d = this.decision(m.id);
    const srv = R.load(/** @type {Uint8Array} */ (m.doc));
    const how = this.adoptDoc(d, srv);
    d.synced = true;
    if (this.arriving.size) this.arrived(d.id, how === "rebased");
    this.restoreEdited(d);
    this.push(d);
  }

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
   * @param {Decision} d
   * @param {any} srv
   * @returns {"merged"|"rebased"|"loaded"}
   */
  adoptDoc(d, srv) {
    const old = d.doc;
    const heads = R.heads(srv);
    if (!old || !d.accepted.length) {
      d.doc = srv;
      d.accepted = heads;
      d.known = new Set(heads);
      return "loaded";
    }
    // A whole document is rare (a first load, a catch-up too long for
    // changes, a reset): hasHeads' cost is paid here, not per change.
    if (R.holds(srv, d.accepted)) {
      if (!d.inflight && same(R.heads(old), d.accepted)) {
        // Nothing local beyond what the server accepted: the server's
        // document already holds all of it, so it replaces the replica
        // (merging would apply every missed change once more).
        d.doc = srv;
        d.accepted = heads;
        d.known = new Set(heads);
        return "loaded";
      }
      d.doc = A.merge(old, srv);
      d.accepted = heads;
      noteHeads(d, heads);
      noteHeads(d, A.getHeads(d.doc));
      return "merged";
    }
    const { doc, carried } = d.record.status === "open" ? R.carryOver(old, R.carryBase(old, d.accepted, srv), srv) : { doc: srv, carried: 0 };
    d.doc = doc;
    d.accepted = heads;
    d.known = new Set(heads);
    noteHeads(d, A.getHeads(doc));
    d.inflight = "";
    d.sent = [];
    d.held = false;
    if (carried) d.edited = true;
    return "rebased";
  }

  /**
   * Queues a question:changes frame; frames of the same decision that
   * arrive before the queue is flushed (see incoming; or before the next
   * frame of another kind) are applied together, in order, with the last
   * frame's heads.
   * @param {any} m
   */
  queueChanges(m) {
    if (typeof m.id !== "string") return;
    let q = this.incoming.get(m.id);
    if (!q) {
      q = { parts: [], heads: [], ws: this.ws };
      this.incoming.set(m.id, q);
    }
    // An empty batch (a replica already up to date) has no changes field:
    // msgpack omits zero values.
    if (m.changes instanceof Uint8Array && m.changes.length) q.parts.push(m.changes);
    q.heads = m.heads || [];
    if (this.incomingQueued) return;
    this.incomingQueued = true;
    const apply = () => {
      this.flushChanges();
      this.notify();
    };
    const wait = Math.min(this.applied.end + this.applied.took, now() + MAX_APPLY_WAIT) - now();
    if (wait <= 0) queueMicrotask(apply);
    else this.applyTimer = setTimeout(apply, wait);
  }

  /** Applies the queued question:changes frames, one call per decision. */
  flushChanges() {
    this.incomingQueued = false;
    clearTimeout(this.applyTimer);
    this.applyTimer = null;
    if (this.incoming.size === 0) return;
    const start = now();
    const queued = [...this.incoming];
    this.incoming.clear();
    for (const [id, q] of queued) {
      if (q.ws !== this.ws) continue; // from a connection since dropped
      const changes = q.parts.length === 1 ? q.parts[0] : R.concat(q.parts);
      this.applyChanges({ id, changes, heads: q.heads });
    }
    const end = now();
    this.applied = { end, took: end - start };
  }

  /**
   * Accepted changes (question:changes): one change or several
   * concatenated (a commit group's), applied in one call, with the heads
   * after them. Its cost does not grow with the decision's history.
   * @param {any} m
   */
  applyChanges(m) {
    const d = this.decisions.get(m.id);
    if (!d || !d.doc) {
      this.resync();
      return;
    }
    // A replica already up to date gets an empty batch, which msgpack
    // omits (zero values are not written).
    const changes = m.changes instanceof Uint8Array ? m.changes : new Uint8Array(0);
    if (changes.length) {
      const { doc, complete } = R.applyBatch(d.doc, changes);
      d.doc = doc;
      if (!complete) {
        console.warn("changes for", m.id, "miss dependencies; resyncing");
        this.resync();
        return;
      }
      noteHeads(d, A.getHeads(doc));
    }
    const heads = (m.heads || []).slice().sort();
    if (heads.length && knows(d, heads)) d.accepted = heads;
    settle(d);
    d.synced = true;
    if (this.arriving.size) this.arrived(d.id, false);
    this.push(d);
  }

  /** @param {any} m */
  event(m) {
    if (m.record) this.adoptRecord(m.record);
    if (m.definition) this.adoptDefinition(m.id, m.definition);
    const d = this.decisions.get(m.id);
    if (!d || !m.by || m.by === this.member) return;
    const who = display(m.by);
    const say = {
      "question:resolved": `${who} saved this decision.`,
      "question:reopened": `${who} reopened this decision.`,
      "question:discarded": `${who} discarded this decision.`,
      "question:option-added": `${who} added the option “${m.option?.label ?? ""}”.`,
      "question:criterion-added": `${who} added the criterion “${m.criterion?.label ?? ""}”.`,
    }[/** @type {string} */ (m.kind)];
    if (say) d.note = { text: say, tone: "info", at: Date.now() };
  }

  /** @param {any} m */
  reply(m) {
    if (m.kind === "question:edit") return this.editReply(m);
    if (m.ok) {
      if (m.record) this.adoptRecord(m.record);
      for (const r of m.records || []) this.adoptRecord(r);
      for (const r of m.results || []) if (r.record) this.adoptRecord(r.record);
      if (m.definition && m.id) this.adoptDefinition(m.id, m.definition);
    }
    const p = this.pending.get(m.rid);
    if (!p) return;
    this.pending.delete(m.rid);
    // Ready when it resolves: a reply naming heads (a reopen's fresh
    // draft, an appended option or criterion) resolves once the replica
    // holds them, so the caller's next edit builds on its effect. The
    // server sends the changes first, but they may arrive later.
    const heads = m.ok && m.id && Array.isArray(m.heads) ? m.heads : [];
    if (heads.length && !this.holdsHeads(m.id, heads)) {
      this.arriving.set(m.rid, { id: m.id, heads, reply: m, p });
      return;
    }
    clearTimeout(p.timer);
    p.resolve(m);
  }

  /**
   * Whether the decision's replica holds every one of heads.
   * @param {string} id
   * @param {string[]} heads
   */
  holdsHeads(id, heads) {
    const d = this.decisions.get(id);
    if (!d || !d.doc) return false;
    // knows is cheap; holds walks the history, so it runs only when the
    // reply's heads are not among those the replica has seen.
    return knows(d, heads) || R.holds(d.doc, heads);
  }

  /**
   * Resolves the replies waiting for a decision's changes: those whose
   * heads the replica now holds, or all of them after a rebased document
   * (which holds their effect under another history).
   * @param {string} id
   * @param {boolean} rebased
   */
  arrived(id, rebased) {
    for (const [rid, a] of this.arriving) {
      if (a.id !== id || (!rebased && !this.holdsHeads(id, a.heads))) continue;
      this.arriving.delete(rid);
      clearTimeout(a.p.timer);
      a.p.resolve(a.reply);
    }
  }

  /** @param {any} m */
  editReply(m) {
    const d = this.decisions.get(m.id);
    if (!d || d.inflight !== m.rid) return;
    const sent = d.sent;
    d.inflight = "";
    d.sent = [];
    /** @type {any} the reset's document, once loaded */
    let srv = null;
    if (m.ok) {
      const heads = (m.heads || []).slice().sort();
      // Changes the server sent before this reply may still be queued
      // (see handle): the reply's heads come after theirs, so they are
      // the ones to accept once the queue is applied.
      const q = this.incoming.get(d.id);
      if (q && heads.length) q.heads = heads;
      d.accepted = heads.length && knows(d, heads) ? heads : sent;
      settle(d);
    } else if (m.reset && m.doc && d.doc && d.accepted.length && !R.holds(srv = R.load(m.doc), d.accepted)) {
      // The edit was made against a history the server has since rebased
      // (reason stale): the local values are carried over onto the
      // rebased document and go out again, so nothing is lost and there is
      // nothing to tell.
      this.adoptDoc(d, srv);
      if (this.arriving.size) this.arrived(d.id, true);
    } else if (m.reset && m.doc) {
      d.doc = srv || R.load(m.doc);
      d.accepted = R.heads(d.doc);
      d.known = new Set(d.accepted);
      d.held = false;
      d.edited = false;
      d.note = {
        text: m.reason === "forbidden" ? READER : `Your last change was not accepted — ${lower(refusalText("question:edit", m.reason, m.message))} The card shows the accepted answer again.`,
        tone: "error", at: Date.now(),
      };
    } else {
      // Kept, and sent again with the next local change or connection.
      d.held = true;
      d.note = { text: refusalText("question:edit", m.reason, m.message), tone: "error", at: Date.now() };
      if (m.reason === "forbidden") d.edited = false;
    }
    this.push(d);
  }

  // ---- local edits ----

  /**
   * Sends the decision's unaccepted changes when nothing is in flight.
   * @param {Decision} d
   */
  push(d) {
    if (!this.welcomed || !d.synced || d.inflight || d.held || !d.doc) return;
    const heads = R.heads(d.doc);
    if (same(heads, d.accepted)) return;
    const changes = R.changesSince(d.doc, d.accepted);
    if (changes.length === 0) {
      d.accepted = heads;
      return;
    }
    const rid = "e" + ++this.rid;
    if (this.send({ kind: "question:edit", rid, id: d.id, changes })) {
      d.inflight = rid;
      d.sent = heads;
    }
  }

  /**
   * Applies a local edit to a decision's replica and sends it.
   * @param {string} id
   * @param {(doc: any) => any} fn returns the new document
   */
  edit(id, fn) {
    // Queued changes stay queued: the local change is concurrent with
    // them, as it would be had they arrived a moment later.
    const d = this.decisions.get(id);
    if (!d || !d.doc) return;
    if (!this.write) {
      d.note = { text: READER, tone: "error", at: Date.now() };
      this.notify();
      return;
    }
    if (d.record.status !== "open") return;
    const next = fn(d.doc);
    if (next === d.doc) return;
    d.doc = next;
    noteHeads(d, A.getHeads(next));
    d.held = false;
    d.edited = true;
    if (d.note && d.note.tone !== "error") d.note = null;
    this.push(d);
    this.notify();
  }

  /**
   * @param {string} id
   * @param {string} qid
   * @param {string} text
   */
  setText(id, qid, text) {
    this.edit(id, (doc) => R.setText(doc, qid, text));
  }

  /**
   * @param {string} id
   * @param {string} qid
   * @param {string} opt
   * @param {boolean} on
   * @param {boolean} multiple
   */
  choose(id, qid, opt, on, multiple) {
    this.edit(id, (doc) => R.choose(doc, qid, opt, on, multiple));
  }

  /**
   * @param {string} id
   * @param {string} qid
   * @param {string} opt
   * @param {string} crit
   * @param {"yes"|"partly"|"no"|null} mark
   */
  setMark(id, qid, opt, crit, mark) {
    this.edit(id, (doc) => R.setMark(doc, qid, opt, crit, mark));
  }

  /**
   * The current draft of a decision, read from its replica (cached by
   * heads): {generation, questions: {qid: {text, choices, marks}}}.
   * @param {Decision} d
   */
  draft(d) {
    if (!d.doc) return null;
    const key = A.getHeads(d.doc).join(",");
    if (d.viewKey !== key) {
      const st = R.readState(d.doc);
      d.view = { generation: st.generation, questions: st.drafts[String(st.generation)] || {}, shapes: st.questions };
      d.viewKey = key;
    }
    return d.view;
  }

  /** @param {Decision} d */
  unsent(d) {
    return !!d.doc && (d.inflight !== "" || !same(R.heads(d.doc), d.accepted));
  }

  // ---- requests ----

  /**
   * Waits until none of ids has an edit in flight or unsent.
   * @param {string[]} ids
   * @param {number} ms
   */
  async idle(ids, ms) {
    const end = Date.now() + ms;
    for (;;) {
      const busy = ids.map((id) => this.decisions.get(id)).filter((d) => d && this.unsent(d));
      if (busy.length === 0) return true;
      if (Date.now() > end || !this.welcomed) return false;
      for (const d of busy) if (d) { d.held = false; this.push(d); }
      await new Promise((r) => setTimeout(r, 40));
    }
  }

  /**
   * Saves one or several decisions at once (the shared Save bar sends
   * several), each claiming the revision its replica displays.
   * @param {string[]} ids
   * @returns {Promise<boolean>} whether every one was saved
   */
  async save(ids) {
    const ds = ids.map((id) => this.decisions.get(id)).filter((d) => d && d.doc && d.record.status === "open");
    if (ds.length === 0) return false;
    const mark = (/** @type {Note} */ note) => ds.forEach((d) => d && (d.note = note));
    if (!this.write) {
      mark({ text: READER, tone: "error", at: Date.now() });
      this.notify();
      return false;
    }
    ds.forEach((d) => d && (d.busy = "saving"));
    this.notify();
    try {
      if (!(await this.idle(ds.map((d) => /** @type {Decision} */ (d).id), 8000))) {
        mark({ text: this.welcomed ? "Your last edits are still on their way to the server — try again in a moment." : OFFLINE, tone: "error", at: Date.now() });
        return false;
      }
      const items = ds.map((d) => ({ id: /** @type {Decision} */ (d).id, heads: R.heads(/** @type {Decision} */ (d).doc) }));
      const rep = await this.request("question:submit", { items });
      if (!rep.ok) {
        mark({ text: refusalText("question:submit", rep.reason, rep.message), tone: "error", at: Date.now() });
        return false;
      }
      let all = true;
      for (const res of rep.results || []) {
        const d = this.decisions.get(res.id);
        if (!d) continue;
        if (res.ok) {
          d.edited = false;
          d.note = { text: "Saved.", tone: "ok", at: Date.now() };
        } else {
          all = false;
          d.note = { text: refusalText("question:submit", res.reason, res.message), tone: "error", at: Date.now() };
        }
      }
      return all;
    } finally {
      ds.forEach((d) => d && (d.busy = ""));
      this.notify();
    }
  }

  /**
   * Runs a request about one decision, showing its outcome on the card.
   * @param {string} id
   * @param {string} kind
   * @param {Record<string, any>} fields
   * @param {string} busy
   * @param {string} okText
   */
  async act(id, kind, fields, busy, okText) {
    const d = this.decisions.get(id);
    if (!d) return null;
    if (!this.write) {
      d.note = { text: READER, tone: "error", at: Date.now() };
      this.notify();
      return null;
    }
    d.busy = busy;
    this.notify();
    const rep = await this.request(kind, { id, ...fields });
    d.busy = "";
    d.note = rep.ok
      ? okText ? { text: okText, tone: "ok", at: Date.now() } : null
      : { text: refusalText(kind, rep.reason, rep.message), tone: "error", at: Date.now() };
    this.notify();
    return rep;
  }

  /** @param {string} id */
  reopen(id) {
    return this.act(id, "question:reopen", {}, "reopening", "Reopened: the saved answer stays in the history while you draft the next one.");
  }

  /** @param {string} id */
  discard(id) {
    return this.act(id, "question:discard", {}, "discarding", "Discarded. Its history is kept.");
  }

  /**
   * @param {string} id
   * @param {string} text empty clears
   */
  why(id, text) {
    return this.act(id, "question:why", { text }, "why", text ? "Why saved." : "Why cleared.");
  }

  /**
   * Appends an option or a criterion. The idempotency key is kept until a
   * definite answer, so a retry after a lost connection reuses it.
   * @param {"option"|"criterion"} what
   * @param {string} id
   * @param {string} qid
   * @param {string} label
   */
  async append(what, id, qid, label) {
    const slot = `${what}\u0000${id}\u0000${qid}\u0000${label.toLowerCase()}`;
    let key = this.appendKeys.get(slot);
    if (!key) {
      key = "web-" + R.newActor().slice(0, 20);
      this.appendKeys.set(slot, key);
    }
    const rep = await this.act(id, "question:" + what, { question: qid, key, label }, "append-" + what, "");
    if (rep && rep.reason !== "disconnected" && rep.reason !== "timeout") this.appendKeys.delete(slot);
    return rep;
  }

  /** Decisions this member edited that are still open (the Save bar's). */
  editedOpen() {
    return this.order.map((id) => /** @type {Decision} */ (this.decisions.get(id))).filter((d) => d && d.edited && d.record.status === "open");
  }
}

/**
 * Adds heads to the hashes the replica has held as heads.
 * @param {Decision} d
 * @param {string[]} heads
 */
/** Whether this runtime inflates raw DEFLATE (the hello then asks for compressed documents). */
const INFLATES = typeof DecompressionStream === "function";

/** The largest document the client inflates: what the server loads (crdt.MaxDocumentBytes). */
const MAX_DOC_BYTES = 64 << 20;

/**
 * Inflates a raw DEFLATE stream, refusing one that inflates past max bytes.
 * @param {Uint8Array} bytes
 * @param {number} max
 * @returns {Promise<Uint8Array>}
 */
async function inflate(bytes, max) {
  const reader = new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (bytes)]).stream().pipeThrough(new DecompressionStream("deflate-raw")).getReader();
  /** @type {Uint8Array[]} */
  const parts = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > max) {
      await reader.cancel();
      throw new Error(`a compressed document inflates past ${max} bytes`);
    }
    parts.push(value);
  }
  return R.concat(parts);
}

/** The longest a received change waits to be applied with others (ms). */
const MAX_APPLY_WAIT = 50;

/** A monotonic clock in milliseconds. */
function now() {
  return globalThis.performance ? performance.now() : Date.now();
}

function noteHeads(d, heads) {
  for (const h of heads) d.known.add(h);
}

/**
 * Whether the replica's history holds every one of heads, which the server
 * reported (see Decision.known).
 * @param {Decision} d
 * @param {string[]} heads
 */
function knows(d, heads) {
  for (const h of heads) if (!d.known.has(h)) return false;
  return true;
}

/**
 * Forgets the known hashes that can never be reported again: once the
 * server has accepted the replica's whole history (nothing in flight, the
 * heads are the accepted ones), every other hash it held as a head has a
 * descendant on the server. This keeps known as small as the heads.
 * @param {Decision} d
 */
function settle(d) {
  if (d.inflight || d.known.size <= d.accepted.length) return;
  const heads = A.getHeads(d.doc);
  if (same(heads, d.accepted)) d.known = new Set(d.accepted);
}

/**
 * @param {string} key
 * @returns {Record<string, string>}
 */
function loadEdited(key) {
  try {
    const v = JSON.parse(sessionStorage.getItem(key) || "{}");
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/**
 * The sync socket's URL for doc. The server takes the member from the
 * session cookie the browser sends with the upgrade, never from the URL.
 * @param {string} doc
 */
export function syncURL(doc) {
  const u = new URL("sync", location.href);
  u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  u.search = new URLSearchParams({ doc }).toString();
  return u.toString();
}

/**
 * Definitions only grow: keep held when in has fewer options or criteria
 * for any held question, or lacks one.
 * @param {Definition} held
 * @param {Definition} inc
 * @returns {Definition}
 */
export function forward(held, inc) {
  for (const hq of held?.questions || []) {
    const iq = (inc?.questions || []).find((q) => q.id === hq.id);
    if (!iq) return held;
    if ((iq.options || []).length < (hq.options || []).length || (iq.criteria || []).length < (hq.criteria || []).length) return held;
  }
  return inc;
}

/**
 * msgpack frames omit zero values: fill them in.
 * @param {any} def
 * @returns {Definition}
 */
function normalizeDefinition(def) {
  return {
    questions: (def?.questions || []).map((/** @type {any} */ q) => ({
      ...q, options: q.options || [], criteria: q.criteria || [], multiple: q.multiple === true,
    })),
  };
}

/**
 * @param {any} rec
 * @returns {DecisionRecord}
 */
function normalizeRecord(rec) {
  return { ...rec, status: rec.status || "open", definition: normalizeDefinition(rec.definition), history: rec.history || [] };
}

/**
 * @param {string[]} a
 * @param {string[]} b
 */
function same(a, b) {
  if (a.length !== b.length) return false;
  const s = [...a].sort();
  const t = [...b].sort();
  return s.every((x, i) => x === t[i]);
}

/** @param {string} s */
function lower(s) {
  return s.charAt(0).toLowerCase() + s.slice(1);
}

/** @param {string} login */
export function display(login) {
  if (!login) return "";
  if (login === "planner") return "the Planner";
  return login.charAt(0).toUpperCase() + login.slice(1);
}
