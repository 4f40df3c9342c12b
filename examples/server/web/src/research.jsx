// The card's Research menu (Research the web, Investigate the codebase,
// Ask someone), its quiet "Researching" capsule, the amber "Waiting for"
// pill and the "N findings" button that opens the decision's page.

import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { findingsOf } from "@accord-crdt/client";
import { settled, startWork } from "./work.js";

/**
 * @typedef {import("@accord-crdt/client").Client} PageClient
 * @typedef {import("@accord-crdt/client").Finding} Finding
 * @typedef {import("@accord-crdt/client").Decision} Decision
 * @typedef {{login: string, name: string, write: boolean, machine: boolean, persona?: boolean}} RosterMember
 */

/** @type {Promise<RosterMember[]>|null} */
let rosterLoad = null;

/**
 * The people a decision can ask and who has a paired machine online
 * (GET api/roster), loaded once per page.
 * @returns {RosterMember[]}
 */
export function useRoster() {
  const [roster, setRoster] = useState(/** @type {RosterMember[]} */ ([]));
  useEffect(() => {
    if (!rosterLoad) {
      rosterLoad = fetch("api/roster", { cache: "no-store" })
        .then((r) => (r.ok ? r.json() : { members: [] }))
        .then((b) => (Array.isArray(b.members) ? b.members : []))
        .catch(() => {
          rosterLoad = null;
          return [];
        });
    }
    let live = true;
    rosterLoad.then((m) => live && setRoster(m));
    return () => {
      live = false;
    };
  }, []);
  return roster;
}

/**
 * A name for a login: the roster's, else the page's.
 * @param {RosterMember[]} roster
 * @param {(s: string) => string} nameOf
 * @param {string} login
 */
export function personName(roster, nameOf, login) {
  const m = roster.find((r) => r.login.toLowerCase() === (login || "").toLowerCase());
  return m ? m.name : nameOf(login);
}

const FACE_COLORS = ["#2f5fd0", "#1d7a46", "#a04a9a", "#b45309", "#0e7490", "#9f1239"];

/**
 * A person's color, the same wherever their face shows.
 * @param {string} login
 */
export function faceColor(login) {
  let h = 0;
  for (const ch of login) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return FACE_COLORS[h % FACE_COLORS.length];
}

/** @param {{name: string, login: string}} props */
export function Face({ name, login }) {
  return (
    <span class="face" aria-hidden="true" style={{ background: faceColor(login || name) }}>
      {(name || "?").charAt(0).toUpperCase()}
    </span>
  );
}

/**
 * The running research or investigation of a record (the latest), if any.
 * @param {any} rec
 * @returns {Finding|undefined}
 */
export function runningWork(rec) {
  return findingsOf(rec).filter((f) => f.kind !== "ask" && f.status === "running").pop();
}

/**
 * Running asks of a record.
 * @param {any} rec
 * @returns {Finding[]}
 */
export function runningAsks(rec) {
  return findingsOf(rec).filter((f) => f.kind === "ask" && f.status === "running");
}

/** @param {number} n */
export function findingsLabel(n) {
  return `${n} finding${n === 1 ? "" : "s"}`;
}

/**
 * The page's address for a decision (?page=<id>), for Copy link and for
 * opening it.
 * @param {string} id
 */
export function pageURL(id) {
  const u = new URL(location.href);
  if (id) u.searchParams.set("page", id);
  else u.searchParams.delete("page");
  u.searchParams.delete("member"); // an old link's; the session says who
  return u.toString();
}

/**
 * Shows the page of decision id, or the plan for "". Going back to the
 * plan from a page this tab opened returns in the history, so the
 * browser's Back does not bring the page up again.
 */
export function showPage(/** @type {string} */ id) {
  if (!id && history.state?.accordFrom === "plan") {
    history.back();
    return;
  }
  history.pushState(id ? { accordFrom: new URLSearchParams(location.search).get("page") ? "page" : "plan" } : null, "", pageURL(id));
  dispatchEvent(new PopStateEvent("popstate"));
}

/**
 * The decision whose page the address shows ("" for the plan). A page
 * opens at its top, and going back to the plan returns to where the
 * reader was in it; the browser's own restoring is turned off, since it
 * runs before the plan is drawn again and lands short of the place.
 */
export function usePageParam() {
  const read = () => new URLSearchParams(location.search).get("page") || "";
  const [id, setId] = useState(read);
  const shown = useRef(id);
  const planY = useRef(0);
  useEffect(() => {
    history.scrollRestoration = "manual";
    const on = () => {
      const next = read();
      if (!shown.current && next) planY.current = scrollY;
      setId(next);
    };
    addEventListener("popstate", on);
    return () => removeEventListener("popstate", on);
  }, []);
  useLayoutEffect(() => {
    if (shown.current === id) return;
    shown.current = id;
    scrollTo(0, id ? 0 : planY.current);
  }, [id]);
  return id;
}

/**
 * Expands the decision to its page (question:page), then shows it.
 * @param {PageClient} c
 * @param {string} id
 */
export async function openPage(c, id) {
  const d = c.decisions.get(id);
  if (d && !(/** @type {any} */ (d.record).childId) && c.write) {
    if (!(await settled(c.page(id)))) return;
  }
  showPage(id);
}

/**
 * The start of a card's footer: the quiet "N findings" button once work
 * has finished (it opens the decision's page).
 * @param {{c: PageClient, d: Decision}} props
 */
export function FindingsButton({ c, d }) {
  const done = findingsOf(d.record).filter((f) => f.status !== "running");
  if (done.length === 0) return null;
  const takes = done.filter((f) => f.kind === "ask").length;
  // Failed work brought nothing: it is said as failed, not counted.
  const failed = done.filter((f) => f.kind !== "ask" && f.status === "failed");
  const found = done.length - takes - failed.length;
  // The page's own words: its Findings (research, investigations) and
  // Takes (answers of the people asked).
  const parts = [];
  if (found) parts.push(findingsLabel(found));
  if (takes) parts.push(`${takes} take${takes === 1 ? "" : "s"}`);
  if (failed.length === 1) parts.push(failed[0].kind === "spike" ? "investigation failed" : "research failed");
  else if (failed.length) parts.push(`${failed.length} failed`);
  const text = parts.join(", ");
  const last = failed[failed.length - 1];
  return (
    <button
      type="button"
      class={`btn quiet findings-btn${failed.length ? " has-failed" : ""}`}
      data-testid={`findings-${d.id}`}
      data-count={found + takes}
      data-failed={failed.length}
      title={last ? `${last.kind === "spike" ? "The investigation" : "Research"} failed: ${failureReason(last)}` : undefined}
      onClick={() => openPage(c, d.id)}
    >
      {text.charAt(0).toUpperCase() + text.slice(1)}
    </button>
  );
}

/**
 * Why work failed: the host's reason (the finding's summary).
 * @param {Finding} f
 */
export function failureReason(f) {
  return (f.summary || "").trim() || "the service gave no reason.";
}

/**
 * The amber "Waiting for Sam" pill while someone is asked; for the asked
 * member it opens the page, where they answer.
 * @param {{c: PageClient, d: Decision, nameOf: (s: string) => string}} props
 */
export function WaitingPill({ c, d, nameOf }) {
  const roster = useRoster();
  const asks = runningAsks(d.record);
  if (asks.length === 0 || d.record.status !== "open") return null;
  const mine = asks.some((f) => f.ref.toLowerCase() === c.member.toLowerCase());
  const names = asks.map((f) => (f.ref.toLowerCase() === c.member.toLowerCase() ? "you" : personName(roster, nameOf, f.ref)));
  const text = `Waiting for ${names.join(", ")}`;
  if (mine) {
    return (
      <button type="button" class="pill waiting" data-testid={`waiting-${d.id}`} onClick={() => openPage(c, d.id)} title="Open the page to give your take">
        {text}
      </button>
    );
  }
  return (
    <span class="pill waiting" data-testid={`waiting-${d.id}`}>
      {text}
    </span>
  );
}

/**
 * The Research menu of an open decision of the plan: a button (a quiet
 * capsule with a spinner while work runs) and its list.
 * @param {{c: PageClient, d: Decision, nameOf: (s: string) => string, where?: string}} props
 */
export function ResearchMenu({ c, d, nameOf, where = "card" }) {
  const roster = useRoster();
  const [open, setOpen] = useState(false);
  const [fold, setFold] = useState(/** @type {""|"research"|"spike"|"ask"} */ (""));
  const [details, setDetails] = useState("");
  const box = useRef(/** @type {HTMLDivElement|null} */ (null));
  const rec = d.record;
  const running = runningWork(rec);
  const id = d.id;
  const tid = (/** @type {string} */ s) => (where === "card" ? `${s}-${id}` : `page-${s}`);

  useEffect(() => {
    if (!open) return;
    const away = (/** @type {MouseEvent} */ e) => {
      if (box.current && !box.current.contains(/** @type {Node} */ (e.target))) setOpen(false);
    };
    const esc = (/** @type {KeyboardEvent} */ e) => e.key === "Escape" && setOpen(false);
    document.addEventListener("mousedown", away);
    document.addEventListener("keydown", esc);
    return () => {
      document.removeEventListener("mousedown", away);
      document.removeEventListener("keydown", esc);
    };
  }, [open]);

  if (rec.status !== "open" || c.doc.startsWith("question:")) return null;
  const me = roster.find((m) => m.login === c.member);
  const machine = !!me?.machine;
  const others = roster.filter((m) => m.login !== c.member);
  const busy = !!d.busy;

  const start = async (/** @type {"research"|"spike"} */ kind) => {
    const err = await startWork(c, id, kind, details.trim());
    if (!err) {
      setDetails("");
      setFold("");
      setOpen(false);
    }
  };
  const ask = async (/** @type {string} */ login) => {
    if (await settled(c.explore(id, { member: login }))) {
      setFold("");
      setOpen(false);
    }
  };
  const stop = async () => {
    if (!running) return;
    await settled(c.stopFinding(id, running.id));
    setOpen(false);
  };

  /** @param {"research"|"spike"} kind */
  const folded = (kind) => (
    <div class="fold" data-testid={tid(`fold-${kind}`)}>
      <label class="sr-only" for={tid(`details-${kind}`)}>
        Details
      </label>
      <textarea
        id={tid(`details-${kind}`)}
        data-testid={tid(`details-${kind}`)}
        rows={2}
        placeholder="Details (optional): what to focus on"
        value={details}
        maxLength={2000}
        onInput={(e) => setDetails(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) {
            e.preventDefault();
            if (!busy) start(kind);
          }
        }}
      />
      <button type="button" class="btn primary" data-testid={tid(`start-${kind}`)} disabled={busy} onClick={() => start(kind)}>
        {busy ? "Starting…" : kind === "spike" ? "Start investigation" : "Start research"}
      </button>
    </div>
  );

  const askList = (
    <ul class="asklist" data-testid={tid("ask-list")}>
      {others.map((m) => (
        <li key={m.login}>
          <button type="button" class="row-btn" data-testid={`${tid("ask")}-${m.login}`} disabled={busy} onClick={() => ask(m.login)}>
            <Face name={m.name} login={m.login} />
            <span>{m.name}</span>
            {m.persona && <span class="muted small">demo persona</span>}
            {!m.write && !m.persona && <span class="muted small">reader</span>}
          </button>
        </li>
      ))}
    </ul>
  );

  return (
    <div class="research" ref={box}>
      {running ? (
        <button
          type="button"
          class="capsule"
          data-testid={tid("research")}
          data-state="running"
          aria-expanded={open}
          onClick={() => setOpen(!open)}
        >
          <span class="spinner" aria-hidden="true" />
          {running.kind === "spike" ? "Investigating" : "Researching"}
        </button>
      ) : (
        <button
          type="button"
          class="btn quiet"
          data-testid={tid("research")}
          data-state="idle"
          aria-expanded={open}
          disabled={!c.write}
          onClick={() => setOpen(!open)}
        >
          Research
        </button>
      )}
      {open && (
        <div class="menu" role="dialog" aria-label="Research" data-testid={tid("research-menu")}>
          {running ? (
            <>
              <p class="focus" data-testid={tid("research-focus")}>
                <span class="muted">{running.kind === "spike" ? "Investigating" : "Researching"}: </span>
                {running.focus || "the question as asked"}
              </p>
              <button type="button" class="row-btn" data-testid={tid("research-stop")} disabled={busy} onClick={stop}>
                Stop
              </button>
            </>
          ) : (
            <>
              <button
                type="button"
                class={`row-btn${fold === "research" ? " on" : ""}`}
                data-testid={tid("research-web")}
                aria-expanded={fold === "research"}
                onClick={() => setFold(fold === "research" ? "" : "research")}
              >
                Research the web
              </button>
              {fold === "research" && folded("research")}
              {/* Investigating the codebase needs this member's paired
                  machine: without one online it is no choice at all, so
                  the menu does not offer it. */}
              {machine && (
                <button
                  type="button"
                  class={`row-btn${fold === "spike" ? " on" : ""}`}
                  data-testid={tid("research-spike")}
                  aria-expanded={fold === "spike"}
                  onClick={() => setFold(fold === "spike" ? "" : "spike")}
                >
                  Investigate the codebase
                  <span class="reason">on your paired machine</span>
                </button>
              )}
              {fold === "spike" && machine && folded("spike")}
            </>
          )}
          <button
            type="button"
            class={`row-btn${fold === "ask" ? " on" : ""}`}
            data-testid={tid("research-ask")}
            aria-expanded={fold === "ask"}
            onClick={() => setFold(fold === "ask" ? "" : "ask")}
          >
            Ask someone
          </button>
          {fold === "ask" && askList}
          {where !== "card" && d.note && (
            <p class={`note ${d.note.tone}`} data-testid="page-research-message">
              {d.note.text}
            </p>
          )}
        </div>
      )}
    </div>
  );
}

/**
 * The research bits of a card's footer, after Save: the Research menu and
 * the waiting pill.
 * @param {{c: PageClient, d: Decision, nameOf: (s: string) => string}} props
 */
export function CardResearch({ c, d, nameOf }) {
  return (
    <>
      <ResearchMenu c={c} d={d} nameOf={nameOf} />
      <WaitingPill c={c} d={d} nameOf={nameOf} />
    </>
  );
}

/**
 * The card header's Expand button: opens the decision as its own page.
 * @param {{c: PageClient, d: Decision}} props
 */
export function ExpandButton({ c, d }) {
  // A discarded decision has nothing left to do (its card keeps no
  // buttons); a page's own decisions cannot open as pages.
  if (c.doc.startsWith("question:") || d.record.status === "discarded") return null;
  const can = c.write || !!(/** @type {any} */ (d.record).childId);
  return (
    <button
      type="button"
      class="btn quiet expand"
      data-testid={`expand-${d.id}`}
      title="Expand to a page"
      aria-label="Expand to a page"
      disabled={!can || !!d.busy}
      onClick={() => openPage(c, d.id)}
    >
      ⤢
    </button>
  );
}
