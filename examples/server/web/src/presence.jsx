// Who else is here and who set what: the faces of the people who have a
// decision open, "Ben is typing…" under a written answer, the outline of
// a matrix cell another member has focused, the provenance popover of a
// cell or a choice ("Yes, set by Ben 2 min ago (was Partly, Ana)"), and
// the notice that someone replaced this member's own mark or choice. The
// page publishes its own presence from where focus is (usePublishPresence).

import { createContext } from "preact";
import { useContext, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { Face } from "./research.jsx";

/**
 * @typedef {import("@accord-crdt/client").Client} PageClient
 * @typedef {import("@accord-crdt/client").Decision} Decision
 * @typedef {import("@accord-crdt/client").Question} Question
 * @typedef {import("@accord-crdt/client").Peer} Peer
 * @typedef {import("@accord-crdt/client").PresenceState} PresenceState
 * @typedef {import("@accord-crdt/client").CellProvenance} CellProvenance
 * @typedef {import("@accord-crdt/client").Overwrite} Overwrite
 * @typedef {(login: string) => string} Who a person's name for a login
 */

export const MARK_LABEL = /** @type {Record<string, string>} */ ({ yes: "Yes", partly: "Partly", no: "No" });

/** How long after the last keystroke a member stops "typing" (ms). */
const TYPING_IDLE = 2000;

// ---- publishing ----

/**
 * Publishes where this member is: the decision whose page is shown, or on
 * the plan the card they last worked in; the question and field focus is
 * in (from the data-decision, data-question and data-field attributes
 * around it); editing while they type in a written answer, until 2 s
 * after the last keystroke.
 * @param {PageClient|null} c
 * @param {string} pageId
 */
export function usePublishPresence(c, pageId) {
  useEffect(() => {
    if (!c) return;
    /** @type {PresenceState} the state without focus: the decision open */
    let open = pageId ? { decision: pageId } : {};
    let last = "";
    /** @type {any} */
    let idle = null;
    const publish = (/** @type {PresenceState} */ st) => {
      const s = JSON.stringify(st);
      if (s === last) return;
      last = s;
      c.setPresence(st);
    };
    const at = (/** @type {EventTarget|null} */ el) => {
      const box = el instanceof HTMLElement ? /** @type {HTMLElement|null} */ (el.closest("[data-decision]")) : null;
      if (!box || !(el instanceof HTMLElement)) return null;
      /** @type {PresenceState} */
      const st = { decision: box.dataset.decision };
      const q = /** @type {HTMLElement|null} */ (el.closest("[data-question]"))?.dataset.question;
      const field = /** @type {HTMLElement|null} */ (el.closest("[data-field]"))?.dataset.field;
      if (q) st.question = q;
      if (q && field) st.field = field;
      return st;
    };
    const focus = (/** @type {FocusEvent} */ e) => {
      const st = at(e.target);
      if (!st) return;
      clearTimeout(idle);
      open = { decision: st.decision };
      publish(st);
    };
    const blur = (/** @type {FocusEvent} */ e) => {
      if (at(e.relatedTarget)) return; // focusin says where it went
      clearTimeout(idle);
      publish(open);
    };
    const typed = (/** @type {Event} */ e) => {
      const st = at(e.target);
      if (!st || st.field !== "text") return;
      publish({ ...st, editing: true });
      clearTimeout(idle);
      idle = setTimeout(() => publish(st), TYPING_IDLE);
    };
    publish(open);
    document.addEventListener("focusin", focus);
    document.addEventListener("focusout", blur);
    document.addEventListener("input", typed);
    return () => {
      clearTimeout(idle);
      document.removeEventListener("focusin", focus);
      document.removeEventListener("focusout", blur);
      document.removeEventListener("input", typed);
    };
  }, [c, pageId]);
}

// ---- showing the others ----

/**
 * The other people in decision id (not this member's own other tabs),
 * kept current.
 * @param {PageClient} c
 * @param {string} id
 * @returns {Peer[]}
 */
export function usePeers(c, id) {
  const [peers, setPeers] = useState(() => c.others(id));
  useEffect(() => {
    const read = () => setPeers(c.others(id));
    read();
    return c.onPresence(read);
  }, [c, id]);
  const me = c.member.toLowerCase();
  return [...peers.values()].filter((p) => p.member.toLowerCase() !== me);
}

/**
 * The logins among peers in a question and field ("" for any field),
 * each once.
 * @param {Peer[]} peers
 * @param {string} qid
 * @param {string} field
 * @param {boolean} [editing] only those editing
 */
export function peersAt(peers, qid, field, editing = false) {
  const logins = peers.filter((p) => p.state.question === qid && p.state.field === field && (!editing || p.state.editing)).map((p) => p.member);
  return [...new Set(logins)];
}

/**
 * "Ana is", "Ana and Ben are": people's names joined, with the verb that
 * agrees.
 * @param {string[]} names
 * @param {string} one the verb for one person
 * @param {string} many the verb for several
 */
function they(names, one, many) {
  const joined = names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `${joined} ${names.length === 1 ? one : many}`;
}

/**
 * The label of an option or a criterion, or its id.
 * @param {{id: string, label: string}[]|undefined} items
 * @param {string} id
 */
function labelOf(items, id) {
  return items?.find((x) => x.id === id)?.label || id;
}

/**
 * The faces of the other people who have decision id open.
 * @param {{c: PageClient, id: string, who: Who}} props
 */
export function Present({ c, id, who }) {
  const logins = [...new Set(usePeers(c, id).map((p) => p.member))];
  if (logins.length === 0) return null;
  const label = `${they(logins.map(who), "has", "have")} this open`;
  return (
    <span class="present" data-testid={`presence-${id}`} title={label}>
      <span class="sr-only">{label}</span>
      {logins.map((l) => (
        <span key={l} data-testid={`presence-${id}-${l}`}>
          <Face name={who(l)} login={l} />
        </span>
      ))}
    </span>
  );
}

/**
 * "Ben is typing…" under a written answer while another member edits it.
 * @param {{peers: Peer[], id: string, qid: string, who: Who}} props
 */
export function Typing({ peers, id, qid, who }) {
  const logins = peersAt(peers, qid, "text", true);
  return (
    <p class="typing" data-testid={`typing-${id}-${qid}`} hidden={logins.length === 0}>
      {logins.length ? `${they(logins.map(who), "is", "are")} typing…` : ""}
    </p>
  );
}

/**
 * The marker of a matrix cell others have focused: their initials, in
 * the color of their face (the cell's outline takes it too).
 * @param {{logins: string[], testid: string, who: Who}} props
 */
export function CellMarker({ logins, testid, who }) {
  if (logins.length === 0) return null;
  return (
    <span class="peer-tag" data-testid={testid} data-members={logins.join(" ")} title={`${they(logins.map(who), "is", "are")} here`}>
      {logins.map((l) => who(l).charAt(0).toUpperCase()).join("")}
    </span>
  );
}

// ---- provenance ----

/**
 * @typedef {{key: string, entries: CellProvenance[]|null, fresh: boolean, failed: boolean, tries: number, asking: boolean}} Lookup
 * one decision's provenance as last asked: for the accepted draft named by key (fresh once asked at it)
 */

/** @type {WeakMap<PageClient, Map<string, Lookup>>} */
const lookups = new WeakMap();

/** How often a lookup that does not match the value shown is made. */
const TRIES = 5;

/**
 * Who set each value of decision d, asked of the server while a tip
 * shows and again once the accepted draft has changed; a saved answer
 * carries its own. The server records an edit's provenance when it
 * commits the edit, and sends other members its changes before
 * (docs/PROTOCOL.md, "Early fan-out"): an answer that does not match the
 * value shown (fits) is asked again, a little later each time.
 * @param {PageClient} c
 * @param {Decision} d
 * @param {(entries: any[]) => boolean} fits
 * @returns {{entries: any[]|null, settled: boolean}} settled: entries fit, or no later answer is coming
 */
function useProvenance(c, d, fits) {
  const [, tick] = useState(0);
  const saved = d.record.status !== "open" ? /** @type {any} */ (d.record.answer)?.provenance : undefined;
  let byId = lookups.get(c);
  if (!byId) lookups.set(c, (byId = new Map()));
  const key = `${d.record.generation}|${d.accepted.join(",")}`;
  let slot = byId.get(d.id);
  if (!saved && slot?.key !== key) byId.set(d.id, (slot = { key, entries: slot?.entries ?? null, fresh: false, failed: false, tries: 0, asking: false }));
  const fit = !!slot?.entries && fits(slot.entries);
  useEffect(() => {
    const s = slot;
    if (saved || !s || (s.fresh && fit) || s.asking || s.tries >= TRIES) return;
    s.asking = true;
    setTimeout(() => {
      c.provenance(d.id)
        .then(
          (entries) => {
            s.entries = entries;
            s.fresh = true;
          },
          () => {
            s.failed = true;
          },
        )
        .finally(() => {
          s.asking = false;
          s.tries++;
          tick((x) => x + 1);
        });
    }, s.tries && 150 * 2 ** (s.tries - 1));
  });
  if (saved) return { entries: saved, settled: true };
  return { entries: slot?.entries ?? null, settled: fit || (!!slot && slot.tries >= TRIES) };
}

/**
 * "2 min ago" for a time.
 * @param {Date|string|null|undefined} at
 */
function ago(at) {
  const t = at ? new Date(at).getTime() : NaN;
  if (isNaN(t)) return "";
  const min = Math.round((Date.now() - t) / 60000);
  if (min < 1) return "just now";
  if (min < 60) return `${min} min ago`;
  if (min < 48 * 60) return `${Math.round(min / 60)} h ago`;
  return `${Math.round(min / 1440)} days ago`;
}

/**
 * What a provenance entry says: "Yes, set by Ben 2 min ago (was Partly, Ana)".
 * @param {any} e an entry (a saved answer's may lack its empty fields)
 * @param {Question} q
 * @param {Who} who
 */
export function provenanceText(e, q, who) {
  const opt = (/** @type {string} */ id) => labelOf(q.options, id);
  const by = `by ${who(e.by)}${ago(e.at) ? ` ${ago(e.at)}` : ""}`;
  let now = "";
  let was = "";
  if (e.kind === "mark") {
    now = e.value ? `${MARK_LABEL[e.value] || e.value}, set ${by}` : `Cleared ${by}`;
    was = e.was ? MARK_LABEL[e.was] || e.was : "";
  } else if (e.cell) {
    now = `${e.value ? "Chosen" : "Unchosen"} ${by}`;
    was = e.wasBy ? (e.was ? "chosen" : "not chosen") : "";
  } else {
    now = e.value ? `${opt(e.value)}, chosen ${by}` : `Choice cleared ${by}`;
    was = e.was ? opt(e.was) : e.wasBy ? "no choice" : "";
  }
  return was ? `${now} (was ${was}${e.wasBy ? `, ${who(e.wasBy)}` : ""})` : now;
}

/**
 * Shows a tip while the pointer is over its anchor or focus is in it;
 * Escape hides it until both have left.
 * @returns {{shown: boolean, anchor: import("preact").RefObject<any>, on: Record<string, (e: any) => void>}}
 */
export function useTip() {
  const [hover, setHover] = useState(false);
  const [focus, setFocus] = useState(false);
  const [hidden, setHidden] = useState(false);
  const anchor = useRef(null);
  return {
    shown: (hover || focus) && !hidden,
    anchor,
    on: {
      onMouseEnter: () => setHover(true),
      onMouseLeave: () => {
        setHover(false);
        if (!focus) setHidden(false);
      },
      onFocusIn: () => setFocus(true),
      onFocusOut: () => {
        setFocus(false);
        if (!hover) setHidden(false);
      },
      onKeyDown: (/** @type {KeyboardEvent} */ e) => {
        if (e.key === "Escape") setHidden(true);
      },
    },
  };
}

/**
 * The provenance popover of one value of decision d (role tooltip, its id
 * for aria-describedby), placed under its anchor and above the page.
 * shown is the value as the page shows it, in the entries' terms (a mark,
 * the chosen option id, "chosen", or "" for none).
 * @param {{c: PageClient, d: Decision, q: Question, kind: "mark"|"choice", cell: string, shown: string, tipId: string,
 *   anchor: import("preact").RefObject<any>, who: Who}} props
 */
export function ProvenanceTip({ c, d, q, kind, cell, shown, tipId, anchor, who }) {
  const find = (/** @type {any[]} */ entries) => entries.find((x) => x.kind === kind && x.question === q.id && (x.cell || "") === cell);
  const { entries, settled } = useProvenance(c, d, (entries) => ((find(entries)?.value || "") === shown));
  const e = entries && find(entries);
  const text = !settled ? "Looking up who set this…" : e ? provenanceText(e, q, who) : entries ? "Nobody has set this yet." : "Who set this could not be looked up.";
  const [pos, setPos] = useState(/** @type {{left: number, top: number, above: boolean}|null} */ (null));
  useLayoutEffect(() => {
    const place = () => {
      const r = anchor.current?.getBoundingClientRect();
      if (!r) return;
      const above = r.bottom + 64 > innerHeight;
      setPos({ left: Math.max(8, Math.min(r.left, innerWidth - 296)), top: above ? r.top - 6 : r.bottom + 6, above });
    };
    place();
    addEventListener("scroll", place, true);
    addEventListener("resize", place);
    return () => {
      removeEventListener("scroll", place, true);
      removeEventListener("resize", place);
    };
  }, []);
  return (
    <span
      role="tooltip"
      id={tipId}
      class={`tip${pos?.above ? " above" : ""}`}
      data-testid={tipId}
      style={pos ? { left: `${pos.left}px`, top: `${pos.top}px` } : { visibility: "hidden" }}
    >
      {text}
    </span>
  );
}

// ---- overwrite notices ----

/**
 * @typedef {Overwrite & {n: number}} Notice
 * @typedef {{list: Notice[], dismiss: (n: number) => void}} Notices
 */

/** The notices that someone replaced this member's own marks and choices. */
export const OverwriteNotices = createContext(/** @type {Notices} */ ({ list: [], dismiss: () => {} }));

/**
 * Collects the client's overwrite events of marks and choices (a written
 * answer is shared text: someone else's edit of it is no surprise), each
 * once, until dismissed.
 * @param {PageClient|null} c
 * @returns {Notices}
 */
export function useOverwriteNotices(c) {
  const [list, setList] = useState(/** @type {Notice[]} */ ([]));
  useEffect(() => {
    setList([]);
    if (!c) return;
    let n = 0;
    return c.onOverwritten((o) => {
      if (o.cell.kind !== "text") setList((l) => [...l, { ...o, n: ++n }]);
    });
  }, [c]);
  return { list, dismiss: (n) => setList((l) => l.filter((x) => x.n !== n)) };
}

/**
 * What a notice says: "Ben changed your Yes to No on Email link / Easy reset".
 * @param {Notice} o
 * @param {Decision} d
 * @param {Who} who
 */
export function overwriteText(o, d, who) {
  const { cell } = o;
  const q = d.record.definition.questions.find((x) => x.id === cell.question);
  const opt = (/** @type {string} */ id) => labelOf(q?.options, id);
  const by = who(o.by);
  if (cell.kind === "mark") {
    const [oid, cid] = cell.cell.split("/");
    const where = `${opt(oid)} / ${labelOf(q?.criteria, cid)}`;
    const mark = (/** @type {string} */ v) => MARK_LABEL[v] || v;
    if (!cell.was) return `${by} set ${mark(cell.value)} on ${where}, which you had cleared`;
    return cell.value ? `${by} changed your ${mark(cell.was)} to ${mark(cell.value)} on ${where}` : `${by} cleared your ${mark(cell.was)} on ${where}`;
  }
  if (cell.cell) return cell.value ? `${by} chose ${opt(cell.cell)}, which you had unchosen` : `${by} unchose your ${opt(cell.cell)}`;
  if (!cell.was) return `${by} chose ${opt(cell.value)}, where you had cleared the choice`;
  return cell.value ? `${by} changed your choice ${opt(cell.was)} to ${opt(cell.value)}` : `${by} cleared your choice ${opt(cell.was)}`;
}

/**
 * A decision's overwrite notices, each dismissable (an aria-live region).
 * @param {{d: Decision, who: Who}} props
 */
export function Overwrites({ d, who }) {
  const { list, dismiss } = useContext(OverwriteNotices);
  const mine = list.filter((o) => o.id === d.id);
  return (
    <div class="overwrites" role="status" aria-live="polite" data-testid={`overwrites-${d.id}`}>
      {mine.map((o) => (
        <p class="overwrite" key={o.n} data-testid={`overwrite-${d.id}-${o.n}`}>
          <span>{overwriteText(o, d, who)}</span>
          <button type="button" class="btn quiet" aria-label="Dismiss" data-testid={`overwrite-dismiss-${d.id}-${o.n}`} onClick={() => dismiss(o.n)}>
            ×
          </button>
        </p>
      ))}
    </div>
  );
}
