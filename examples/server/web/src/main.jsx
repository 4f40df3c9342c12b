// The example server's page: the sample plan with its decision cards
// beside their passages, each card a live view of a real automerge replica
// (the package @accord-crdt/client, sync/js). See ../README.md for the data-testid list.

import { render } from "preact";
import { useEffect, useReducer, useRef, useState } from "preact/hooks";
import { useSyncedField } from "./synced-field.js";
import { Client, MARKS, display, init } from "@accord-crdt/client";
import { drafts, edit, settled, startWork } from "./work.js";
import { CardResearch, ExpandButton, FindingsButton, faceColor, personName, usePageParam, useRoster } from "./research.jsx";
import {
  CellMarker, MARK_LABEL, OverwriteNotices, Overwrites, Present, ProvenanceTip, Typing, peersAt, useOverwriteNotices, usePeers, usePublishPresence, useTip,
} from "./presence.jsx";
import { DecisionPage } from "./page.jsx";
import { BlockEditor, usePlanFeed } from "./plan-edit.jsx";
import { PlannerAgent } from "./planner-agent.jsx";

const params = new URLSearchParams(location.search);

/**
 * @typedef {import("@accord-crdt/client").Decision} Decision
 * @typedef {import("@accord-crdt/client").Question} Question
 * @typedef {{login: string, name: string, write: boolean, signIn?: string}} Member
 * @typedef {{doc: string, members: Member[], member?: Member}} Session
 * @typedef {import("./plan-edit.jsx").Block} Block
 * @typedef {import("./plan-edit.jsx").Plan} Plan
 * @typedef {import("./plan-edit.jsx").Pending} Pending
 */

/** @param {string} url */
async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

async function main() {
  const root = /** @type {HTMLElement} */ (document.getElementById("app"));
  try {
    await init(new URL("automerge.wasm", location.href));
  } catch (e) {
    root.textContent = `This page needs WebAssembly to hold its replicas: ${e}`;
    return;
  }
  /** @type {Session} */
  let session;
  try {
    session = await getJSON("api/session");
  } catch (e) {
    root.textContent = `The server is not reachable: ${e instanceof Error ? e.message : e}. Reload the page to try again.`;
    return;
  }
  root.textContent = "";
  render(<Root first={session} />, root);
}

/**
 * The signed-in member's page, or the sign-in page. A session that ends
 * while the page is open (signed out in another tab, expired, or every
 * session ended by the operator) turns the page into the sign-in page:
 * its clients stop, so nothing keeps redialing or takes typing that
 * could never be sent.
 * @param {{first: Session}} props
 */
function Root({ first }) {
  const [session, setSession] = useState(first);
  const [ended, setEnded] = useState(false);
  if (!session.member) return <SignIn session={session} ended={ended} />;
  return (
    <App
      key={session.member.login}
      session={session}
      me={session.member}
      onSessionChanged={(s) => {
        setEnded(!s.member);
        setSession(s);
      }}
    />
  );
}

/**
 * The page of someone not signed in: the demo members' sign-in links
 * (the server prints the same links when it starts). A server others can
 * reach lists none, since a link lets anyone in as that member: the page
 * then says to ask for one.
 * ended says the page was signed in a moment ago.
 * @param {{session: Session, ended?: boolean}} props
 */
function SignIn({ session, ended }) {
  const links = session.members.filter((m) => m.signIn);
  return (
    <div class="page signin" data-testid="signin">
      <header class="top">
        <div class="brand">
          <span class="logo" aria-hidden="true">◆</span>
          <span>Accord</span>
        </div>
      </header>
      <main class="signin-body">
        <h1>Sign in to the demo plan</h1>
        {ended && (
          <p class="banner" role="status" data-testid="signed-out">
            You are signed out: this page stopped syncing. Sign in again to go on.
          </p>
        )}
        {links.length ? (
          <>
            <p>Pick a demo member. Ana and Ben can change decisions; Rita can only read them.</p>
            <ul class="signin-links">
              {links.map((m) => (
                <li key={m.login}>
                  <a href={m.signIn} data-testid={`signin-${m.login}`}>
                    Sign in as {m.name}
                  </a>
                  <span class="muted">{m.write ? " can edit and save" : " reads only"}</span>
                </li>
              ))}
            </ul>
          </>
        ) : (
          <p data-testid="signin-ask">
            Ask the person who runs this server for your sign-in link: it prints one for each demo member when it starts.
          </p>
        )}
      </main>
    </div>
  );
}

/** Other tabs of this browser learn of a sign-out here at once. */
const SESSION_CHANNEL = "accord-session";

async function signOut() {
  try {
    await fetch("signout", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    if ("BroadcastChannel" in window) {
      const bc = new BroadcastChannel(SESSION_CHANNEL);
      bc.postMessage("signed-out");
      bc.close();
    }
  } finally {
    location.reload();
  }
}

/**
 * Watches the session of a signed-in page: when its connection drops (the
 * server closes the connections of a session that ended), while it keeps
 * failing to come back, and when another tab signs out, it asks
 * api/session who this browser is. Someone else, or nobody: the client
 * stops (no more redialing) and changed gets the session as it is now. A
 * server that does not answer changes nothing: the client keeps
 * redialing.
 * @param {Client|null} c
 * @param {string} login
 * @param {(s: Session) => void} changed
 */
function useSessionWatch(c, login, changed) {
  const report = useRef(changed);
  report.current = changed;
  useEffect(() => {
    if (!c) return;
    let checking = false;
    let done = false;
    let last = 0;
    const check = async () => {
      if (checking || done || c.stopped) return;
      checking = true;
      last = Date.now();
      try {
        /** @type {Session} */
        const s = await getJSON("api/session");
        if (done || s.member?.login === login) return;
        done = true;
        c.stop();
        report.current(s);
      } catch {
        // Not reachable: the client's redialing goes on.
      } finally {
        checking = false;
      }
    };
    // A connection the server refused (a session that ended) is checked
    // at once; one that keeps failing to come back, every few seconds.
    const lost = () => c.conn === "reconnecting" || c.conn === "unreachable" || c.conn === "refused";
    const off = c.subscribe(() => {
      if (lost() && (c.conn === "refused" || Date.now() - last > 2000)) check();
    });
    const timer = setInterval(() => {
      if (lost()) check();
    }, 5000);
    const bc = "BroadcastChannel" in window ? new BroadcastChannel(SESSION_CHANNEL) : null;
    if (bc) bc.onmessage = () => check();
    return () => {
      done = true;
      off();
      clearInterval(timer);
      bc?.close();
    };
  }, [c, login]);
}

function useCompact() {
  const forced = params.get("compact");
  const mq = matchMedia("(max-width: 760px)");
  const [compact, setCompact] = useState(forced ? forced === "1" : mq.matches);
  useEffect(() => {
    if (forced) return;
    const on = () => setCompact(mq.matches);
    mq.addEventListener("change", on);
    return () => mq.removeEventListener("change", on);
  }, []);
  return compact;
}

/** @param {{session: Session, me: Member, onSessionChanged: (s: Session) => void}} props */
function App({ session, me, onSessionChanged }) {
  const docId = params.get("doc") || session.doc;
  const member = me.login;
  const [client, setClient] = useState(/** @type {Client|null} */ (null));
  const [, tick] = useReducer((/** @type {number} */ x) => x + 1, 0);
  const [pageNote, setPageNote] = useState("");
  const [demoBusy, setDemoBusy] = useState("");
  const [editing, setEditing] = useState(false);
  const [confirmRewrite, setConfirmRewrite] = useState(false);
  // The blocks this person changed in edit mode and has not saved: edit
  // mode stays until they are saved or reverted, so no text is lost.
  const [unsaved, setUnsaved] = useState(() => new Set());
  const onDirty = (/** @type {string} */ id, /** @type {boolean} */ dirty) =>
    setUnsaved((s) => {
      if (s.has(id) === dirty) return s;
      const n = new Set(s);
      if (dirty) n.add(id);
      else n.delete(id);
      return n;
    });
  const compact = useCompact();
  const pageId = usePageParam();
  const feed = usePlanFeed(docId);
  const notices = useOverwriteNotices(client);
  usePublishPresence(client, pageId);
  useSessionWatch(client, member, onSessionChanged);

  useEffect(() => {
    const c = new Client({ doc: docId, member, storage: drafts });
    const off = c.subscribe(() => tick(1));
    c.start();
    setClient(c);
    // For debugging and browser tests: the live client (replicas, records).
    /** @type {any} */ (window).accord = c;
    /** @type {any} */ (window).accordStartWork = (/** @type {string} */ id, /** @type {"research"|"spike"} */ kind, /** @type {string} */ focus) => startWork(c, id, kind, focus);
    // Drafts are written a moment after each change; a closing tab
    // writes what is left.
    const keep = () => void c.flushStorage();
    addEventListener("pagehide", keep);
    return () => {
      removeEventListener("pagehide", keep);
      off();
      c.stop();
    };
  }, [member, docId]);

  /** @type {Record<string, string>} */
  const names = {};
  for (const m of session.members) names[m.login] = m.name;
  const nameOf = (/** @type {string} */ login) => names[login] || display(login);

  const startDemo = async () => {
    setDemoBusy("starting");
    setPageNote("");
    try {
      const q = new URLSearchParams({ doc: docId });
      const r = await fetch(`api/demo/start?${q}`, { method: "POST", headers: { "Content-Type": "application/json" } });
      const body = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
      const opened = Array.isArray(body.opened) ? body.opened : [];
      const n = opened.filter((/** @type {any} */ o) => !o.repeated).length;
      setPageNote(
        n
          ? // Its own question is a card too: the count names every card
            // that appeared.
            `The Planner opened ${n} decision${n === 1 ? "" : "s"} on the plan's passages and asked you a question of its own: ${n + 1} cards in all.`
          : opened.length
            ? "The demo has already started: the Planner's decisions are open, and nothing new was added."
            : "The Planner's demo has started.",
      );
    } catch (e) {
      setPageNote(`Could not start the demo: ${e instanceof Error ? e.message : e}`);
    } finally {
      setDemoBusy("");
    }
  };

  // The demo's whole-document rewrite, as a workflow's update_document
  // makes outside any Planner turn: the recovery table goes and the
  // rollout paragraph is rewritten into a new block.
  const rewrite = async () => {
    setDemoBusy("rewriting");
    setPageNote("");
    try {
      const q = new URLSearchParams({ doc: docId });
      const r = await fetch(`api/demo/rewrite?${q}`, { method: "POST", headers: { "Content-Type": "application/json" } });
      const body = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
      setPageNote(typeof body.note === "string" ? body.note : "The plan was rewritten.");
    } catch (e) {
      setPageNote(`Could not rewrite the document: ${e instanceof Error ? e.message : e}`);
    } finally {
      setDemoBusy("");
    }
  };

  const c = client;
  const conn = c ? c.conn : "connecting";
  const reader = !!c && c.welcomed && !c.write;
  const plan = feed.plan;
  /** @type {Block[]} */
  const blocks = plan?.blocks || [];
  const canWrite = !!c && c.welcomed && c.write;
  const edited = c ? c.editedOpen() : [];

  return (
    <OverwriteNotices.Provider value={notices}>
      <div class={`page${compact ? " compact" : ""}`} data-testid="page" data-compact={compact ? "1" : "0"}>
        <header class="top">
          <div class="brand">
            <span class="logo" aria-hidden="true">◆</span>
            <span>Accord</span>
            <span class="docname" data-testid="doc-name">{docId}</span>
          </div>
          <span class="picker" data-testid="signed-in">
            <span>
              {me.name}
              {me.write ? "" : " (reader)"}
            </span>
            <button type="button" class="btn link" data-testid="signout" onClick={signOut}>
              Sign out
            </button>
          </span>
          <ConnectionPill conn={conn} />
          {compact && !pageId && (
            <a class="btn link" href="#chat" data-testid="chat-link">
              Chat
            </a>
          )}
          <div class="top-actions">
            {/* Starting the demo opens decisions: a write, which the server
                refuses a reader too. Until the welcome says who may write, it
                stays disabled. */}
            <button
              type="button"
              class="btn"
              data-testid="start-demo"
              onClick={startDemo}
              disabled={!!demoBusy || !canWrite}
              title={reader ? "Readers cannot start the demo: ask a writer." : undefined}
            >
              {demoBusy === "starting" ? "Starting…" : "Start demo"}
            </button>
            {/* The rewrite changes the whole plan, so it belongs to the
                plan's view, not a decision's page, and asks first. */}
            {!pageId && (
              <button
                type="button"
                class="btn"
                data-testid="rewrite-doc"
                aria-expanded={confirmRewrite}
                onClick={() => setConfirmRewrite(true)}
                disabled={!!demoBusy || !canWrite || !plan || confirmRewrite}
                title={
                  reader
                    ? "Readers cannot rewrite the plan: ask a writer."
                    : "Rewrite the whole document as a workflow run does, outside any Planner turn: the recovery table goes, the rollout paragraph becomes a new block."
                }
              >
                {demoBusy === "rewriting" ? "Rewriting…" : "Rewrite document…"}
              </button>
            )}
            <button
              type="button"
              class={`btn${editing ? " outline" : ""}`}
              data-testid="edit-plan"
              aria-pressed={editing}
              onClick={() => setEditing(!editing)}
              disabled={!canWrite || !plan || !!pageId || (editing && unsaved.size > 0)}
              title={
                reader
                  ? "Readers cannot edit the plan: ask a writer."
                  : editing && unsaved.size > 0
                    ? "Save or revert your changes first."
                    : undefined
              }
            >
              {editing ? "Done editing" : "Edit plan"}
            </button>
            {editing && unsaved.size > 0 && (
              <span class="hint" data-testid="edit-plan-hint">
                Save or revert {unsaved.size === 1 ? "the changed block" : `the ${unsaved.size} changed blocks`} to finish editing.
              </span>
            )}
          </div>
        </header>

        <div class="banners">
          {confirmRewrite && !pageId && (
            <div class="banner warn confirm-rewrite" role="alertdialog" aria-label="Confirm the rewrite" data-testid="rewrite-confirm-box">
              <span>
                Rewrite the whole plan for everyone? The recovery table goes and the rollout paragraph is replaced by a new one; cards whose passage goes move to the
                nearest heading.
              </span>
              <span class="confirm-buttons">
                <button
                  type="button"
                  class="btn danger"
                  data-testid="rewrite-confirm"
                  onClick={() => {
                    setConfirmRewrite(false);
                    rewrite();
                  }}
                >
                  Rewrite the plan
                </button>
                <button type="button" class="btn quiet" data-testid="rewrite-cancel" onClick={() => setConfirmRewrite(false)}>
                  Cancel
                </button>
              </span>
            </div>
          )}
          {reader && (
            <p class="banner" data-testid="reader-banner">
              You are viewing as {me?.name || display(member)}, who can read this plan but not change it.
            </p>
          )}
          {(conn === "reconnecting" || conn === "unreachable") && (
            <p class="banner warn" data-testid="reconnecting-banner">
              {conn === "unreachable" ? "The server is not reachable; retrying…" : "Reconnecting…"} your edits stay here and are sent when the
              connection is back.
            </p>
          )}
          {conn === "refused" && (
            <p class="banner warn" data-testid="refused-banner">
              The server refused this page's connection: {c?.refused?.message || "no reason given"}. Reload the page to try again.
            </p>
          )}
          <div class="banner info dismissable" role="status" aria-live="polite" data-testid="app-message" hidden={!pageNote && !c?.note}>
            <span>{pageNote || c?.note?.text || ""}</span>
            <button
              type="button"
              class="btn quiet"
              data-testid="app-message-close"
              aria-label="Dismiss"
              onClick={() => {
                setPageNote("");
                if (c) {
                  c.note = null;
                  c.notify();
                }
              }}
            >
              ×
            </button>
          </div>
        </div>

        {pageId && c && <DecisionPage c={c} id={pageId} docName={docId} nameOf={nameOf} parts={{ QuestionView, History, valuesOf }} />}
        {!pageId && (
          <div class="layout">
            <main class={`plan${editing && canWrite ? " editing" : ""}`} data-testid="plan" aria-label="Plan" data-revision={plan?.revision || ""}>
              {feed.error && !plan && <p class="muted">The plan could not be loaded ({feed.error}).</p>}
              {c && (
                <Plan
                  c={c}
                  plan={plan}
                  nameOf={nameOf}
                  knownLogins={session.members.map((m) => m.login.toLowerCase())}
                  edit={editing && canWrite && plan ? { docId, canEdit: canWrite, onDirty } : null}
                />
              )}
            </main>
            <aside class="chat" id="chat" data-testid="chat" aria-label="Chat">
              <h2>Chat</h2>
              <PlannerAgent agent={feed.chat?.agent} />
              <Chat notices={feed.chat?.notices || []} nameOf={nameOf} />
            </aside>
          </div>
        )}

        {compact && c && !pageId && (
          <div class="savebar" data-testid="savebar" role="region" aria-label="Save edited answers">
            <span data-testid="savebar-count">
              {edited.length === 0 ? "No edited answers" : `${edited.length} edited answer${edited.length === 1 ? "" : "s"}`}
            </span>
            <button
              type="button"
              class="btn primary"
              data-testid="savebar-submit"
              disabled={edited.length === 0 || !c.write || edited.some((d) => d.busy)}
              onClick={() => settled(c.save(edited.map((d) => d.id)))}
            >
              {edited.some((d) => d.busy === "saving") ? "Saving…" : edited.length > 1 ? `Save ${edited.length}` : "Save"}
            </button>
          </div>
        )}
      </div>
    </OverwriteNotices.Provider>
  );
}

/** @param {{conn: string}} props */
function ConnectionPill({ conn }) {
  const text =
    { open: "Connected", connecting: "Connecting…", reconnecting: "Reconnecting…", unreachable: "Reconnecting…", refused: "Refused", closed: "Disconnected" }[
      conn
    ] || conn;
  return (
    <span class={`conn ${conn}`} data-testid="connection-status" data-state={conn} role="status" aria-live="polite">
      <span class="dot" aria-hidden="true" />
      <span class="conn-text">{text}</span>
    </span>
  );
}

/**
 * @param {{c: Client, plan: Plan|null, nameOf: (s: string) => string, edit: {docId: string, canEdit: boolean, onDirty: (id: string, dirty: boolean) => void}|null,
 *   knownLogins: string[]}} props
 */
function Plan({ c, plan, nameOf, edit, knownLogins }) {
  const blocks = plan?.blocks || [];
  /** @type {Map<string, Pending>} */
  const review = new Map();
  for (const p of plan?.pending || []) review.set(p.decision, p);
  /** @type {Map<string, string>} */
  const links = new Map();
  for (const b of blocks) if (b.kind === "decision" && b.decision) links.set(b.decision, b.link || "");
  /** @type {{block: Block|null, cards: string[], last: string}[]} */
  const rows = [];
  const placed = new Set();
  for (const b of blocks) {
    if (b.kind === "decision") {
      if (!b.decision) continue;
      if (rows.length === 0) rows.push({ block: null, cards: [], last: "" });
      rows[rows.length - 1].cards.push(b.decision);
      rows[rows.length - 1].last = b.id;
      placed.add(b.decision);
    } else {
      rows.push({ block: b, cards: [], last: b.id });
    }
  }
  const others = c.order.filter((id) => !placed.has(id));
  const roster = useRoster();
  const logins = new Set([...roster.map((m) => m.login.toLowerCase()), ...knownLogins]);
  const named = (/** @type {string} */ text) => namedText(text, (login) => personName(roster, nameOf, login), logins);
  return (
    <>
      {rows.map((row, i) => (
        <section class={`row${row.cards.length ? " has-cards" : ""}`} key={row.block?.id || `top-${i}`} data-testid={row.block ? `block-${row.block.id}` : undefined}>
          <div class="passage">
            {row.block &&
              (edit && plan ? (
                <BlockEditor
                  block={row.block}
                  after={row.last}
                  plan={plan}
                  docId={edit.docId}
                  canEdit={edit.canEdit}
                  onDirty={edit.onDirty}
                />
              ) : (
                <Passage block={row.block} names={named} />
              ))}
          </div>
          {row.cards.length > 0 && (
            <div class="cards">
              {row.cards.map((id) => (
                <CardSlot key={id} c={c} id={id} nameOf={nameOf} review={review.get(id)} link={links.get(id)} />
              ))}
            </div>
          )}
        </section>
      ))}
      {others.length > 0 && (
        <section class="row others" data-testid="other-decisions">
          <div class="passage">
            <h2>Other decisions</h2>
            <p class="muted">Questions asked outside the plan's passages.</p>
          </div>
          <div class="cards">
            {others.map((id) => (
              <CardSlot key={id} c={c} id={id} nameOf={nameOf} review={review.get(id)} />
            ))}
          </div>
        </section>
      )}
      {blocks.length > 0 && c.order.length === 0 && c.welcomed && (
        <p class="muted empty" data-testid="no-decisions">
          {c.write ? "No decisions yet. Press Start demo to have the Planner open some." : "No decisions yet: a member who can write can start the demo."}
        </p>
      )}
    </>
  );
}

/**
 * A plan's text names members by login (the Planner's write-ups say
 * "saved by @ana"); the page shows the names its cards use. Only the
 * logins of members are replaced, never an address such as ana@example.com.
 * @param {string} text
 * @param {(login: string) => string} nameOf
 * @param {Set<string>} logins lowercased
 */
function namedText(text, nameOf, logins) {
  return text.replace(/(^|[^\w.@])@([A-Za-z0-9][A-Za-z0-9:._-]*[A-Za-z0-9]|[A-Za-z0-9])/g, (all, pre, login) =>
    logins.has(login.toLowerCase()) ? pre + nameOf(login) : all,
  );
}

/** @param {{block: Block, names: (s: string) => string}} props */
function Passage({ block, names }) {
  const t = names(block.text || "");
  switch (block.kind) {
    case "title":
      return <h1 class="title">{t}</h1>;
    case "heading":
      return <h2>{t}</h2>;
    case "table": {
      const rows = t.split("\n").filter(Boolean).map((r) => r.split("|").map((s) => s.trim()));
      const [head, ...body] = rows;
      return (
        <table class="plantable">
          <thead>
            <tr>{(head || []).map((h, i) => <th scope="col" key={i}>{h}</th>)}</tr>
          </thead>
          <tbody>
            {body.map((r, i) => (
              <tr key={i}>{r.map((cell, j) => <td key={j}>{cell}</td>)}</tr>
            ))}
          </tbody>
        </table>
      );
    }
    case "diagram":
      return <pre class="diagram">{t}</pre>;
    default:
      return <p>{t}</p>;
  }
}

/** @param {{c: Client, id: string, nameOf: (s: string) => string, review?: Pending, link?: string}} props */
function CardSlot({ c, id, nameOf, review, link }) {
  const d = c.decisions.get(id);
  if (!d) {
    return (
      <article class="card pending" data-testid={`card-${id}`} data-status="loading" data-link={link || ""}>
        <p class="muted">Loading decision…</p>
      </article>
    );
  }
  return <Card c={c} d={d} nameOf={nameOf} review={review} link={link} />;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** @param {any} at */
function when(at) {
  const t = at instanceof Date ? at : at ? new Date(at) : null;
  if (!t || isNaN(t.getTime()) || t.getFullYear() < 2000) return "";
  return `${t.getDate()} ${MONTHS[t.getMonth()]}`;
}

/**
 * What a question shows: the draft while open, the saved answer once
 * settled (or discarded after a save), else the last draft.
 * @param {Decision} d
 * @param {any} draft
 * @param {string} qid
 * @returns {{text: string, choices: string[], marks: Record<string, string|null>}}
 */
function valuesOf(d, draft, qid) {
  if (d.record.status !== "open" && d.record.answer) {
    const a = (d.record.answer.answers || []).find((x) => x.question === qid);
    return { text: a?.text || "", choices: a?.choices || [], marks: a?.marks || {} };
  }
  const q = draft?.questions?.[qid];
  return { text: q?.text || "", choices: q?.choices || [], marks: q?.marks || {} };
}

/** @param {{c: Client, d: Decision, nameOf: (s: string) => string, review?: Pending, link?: string}} props */
function Card({ c, d, nameOf, review, link }) {
  const rec = d.record;
  const status = rec.status;
  const open = status === "open";
  const draft = c.draft(d);
  const canEdit = c.write && open && !!d.doc && !d.busy;
  const questions = rec.definition.questions || [];
  const answerable =
    !!draft &&
    questions.length > 0 &&
    questions.every((q) => {
      const v = valuesOf(d, draft, q.id);
      return q.response === "text" ? v.text.trim() !== "" : v.choices.length > 0;
    });
  const [confirming, setConfirming] = useState(false);
  const roster = useRoster();
  const who = (/** @type {string} */ login) => personName(roster, nameOf, login);
  const title = questions[0]?.question || "Decision";
  const hid = `q-${d.id}`;

  return (
    <article class={`card ${status}`} data-testid={`card-${d.id}`} data-status={status} data-link={link || ""} data-decision={d.id} aria-labelledby={hid}>
      <header class="cardhead">
        <StatusPill d={d} nameOf={nameOf} />
        {review && status !== "discarded" && (
          <span class="pill waiting" data-testid={`review-${d.id}`} title={`Its passage changed (${review.reason}); the Planner re-anchors it.`}>
            Needs review
          </span>
        )}
        {d.edited && open && (
          <span class="edited" data-testid={`edited-${d.id}`}>
            Edited
          </span>
        )}
        {c.unsent(d) && (
          <span class="sync" data-testid={`sending-${d.id}`} title="Your edits are on their way to the server">
            {c.welcomed ? "Sending…" : "Not sent yet"}
          </span>
        )}
        <Present c={c} id={d.id} who={who} />
        <ExpandButton c={c} d={d} />
      </header>
      <Overwrites d={d} who={who} />
      {review && status !== "discarded" && (
        <p class="muted small review-why" data-testid={`review-why-${d.id}`}>
          The plan changed around this card: a block of its passage was deleted or split off, or another block went in between. The Planner links it again. Editing the
          text of a passage never needs a review.
        </p>
      )}
      <h3 id={hid} class="sr-only">
        {title}
      </h3>
      {!d.doc && <p class="muted">Loading the shared draft…</p>}
      {questions.map((q) => (
        <QuestionView key={q.id} c={c} d={d} q={q} values={valuesOf(d, draft, q.id)} canEdit={canEdit} who={who} />
      ))}
      {status === "settled" && <Why c={c} d={d} nameOf={nameOf} />}
      {status === "discarded" && rec.answer && (
        <p class="muted discarded-answer">
          Saved by {nameOf(rec.answer.by)}
          {when(rec.answer.at) ? `, ${when(rec.answer.at)}` : ""}, before it was discarded.
          {rec.why ? ` Why: ${rec.why} — ${rec.whyBy ? nameOf(rec.whyBy) : "drafted"}` : ""}
        </p>
      )}
      <footer class="actions">
        {open && (
          <>
            <button
              type="button"
              class="btn primary card-save"
              data-testid={`save-${d.id}`}
              disabled={!canEdit || !answerable}
              aria-describedby={!answerable && c.write ? `hint-${d.id}` : undefined}
              onClick={() => settled(c.save([d.id]))}
            >
              {d.busy === "saving" ? "Saving…" : "Save"}
            </button>
            {!answerable && c.write && d.doc && (
              <span class="hint card-save" id={`hint-${d.id}`}>
                Answer every question to save.
              </span>
            )}
          </>
        )}
        {open && <CardResearch c={c} d={d} nameOf={nameOf} />}
        {status === "settled" && (
          <button type="button" class="btn outline" data-testid={`reopen-${d.id}`} disabled={!c.write || !!d.busy} onClick={() => settled(c.reopen(d.id))}>
            {d.busy === "reopening" ? "Reopening…" : "Reopen"}
          </button>
        )}
        {status !== "discarded" && !confirming && (
          <button type="button" class="btn quiet" data-testid={`discard-${d.id}`} disabled={!c.write || !!d.busy} onClick={() => setConfirming(true)}>
            Discard…
          </button>
        )}
        {status !== "discarded" && confirming && (
          <span class="confirm" role="group" aria-label="Confirm discard">
            <span>Discard this decision? Its history is kept.</span>
            <button
              type="button"
              class="btn danger"
              data-testid={`discard-confirm-${d.id}`}
              onClick={async () => {
                setConfirming(false);
                await settled(c.discard(d.id));
              }}
            >
              Discard
            </button>
            <button type="button" class="btn quiet" data-testid={`discard-cancel-${d.id}`} onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        )}
        {/* Last, so that its appearing moves nothing else. */}
        <FindingsButton c={c} d={d} />
      </footer>
      <p class={`note ${d.note?.tone || ""}`} role="status" aria-live="polite" data-testid={`message-${d.id}`}>
        {d.note?.text || ""}
      </p>
      <History d={d} nameOf={nameOf} />
    </article>
  );
}

/** @param {{d: Decision, nameOf: (s: string) => string}} props */
function StatusPill({ d, nameOf }) {
  const rec = d.record;
  let text = "Open";
  if (rec.status === "settled") {
    const by = rec.answer?.by ? nameOf(rec.answer.by) : "";
    const on = when(rec.answer?.at);
    text = `Settled${by ? ` by ${by}` : ""}${on ? `, ${on}` : ""}`;
  } else if (rec.status === "discarded") {
    text = `Discarded${rec.discardedBy ? ` by ${nameOf(rec.discardedBy)}` : ""}`;
  }
  return (
    <span class={`pill ${rec.status}`} data-testid={`status-${d.id}`} data-status={rec.status}>
      {text}
    </span>
  );
}

/**
 * @typedef {{c: Client, d: Decision, q: Question, values: {text: string, choices: string[], marks: Record<string, string|null>}, canEdit: boolean,
 *   who: (login: string) => string}} QuestionProps
 */

/**
 * One question: its control, with the others' presence in it.
 * @param {QuestionProps} props
 */
function QuestionView(props) {
  const { c, d, q, values, canEdit, who } = props;
  const written = q.response === "text";
  const fid = `answer-${d.id}-${q.id}`;
  const open = d.record.status === "open";
  const peers = usePeers(c, d.id);
  return (
    <section class="question" data-testid={`question-${d.id}-${q.id}`} data-question={q.id}>
      <p class="qtext">{q.question}</p>
      {q.context && <p class="context">{q.context}</p>}
      {written && !open ? (
        // A saved answer is text to read, whole at any width, not a field
        // that can take nothing.
        <p class="answer saved" data-testid={fid} data-field="text" aria-label={`Answer: ${q.question}`}>
          {values.text || <span class="muted">No answer was written.</span>}
        </p>
      ) : written ? (
        <>
          <AnswerField id={fid} value={values.text} disabled={!canEdit} label={`Answer: ${q.question}`} onText={(t) => edit(() => c.setText(d.id, q.id, t))} />
          <Typing peers={peers} id={d.id} qid={q.id} who={who} />
        </>
      ) : (
        <ChoiceView {...props} />
      )}
      {!written && (q.criteria || []).length > 0 && <Matrix {...props} peers={peers} />}
      {!written && !q.verbatim && open && c.write && !isPlannerAsk(d) && <Appends c={c} d={d} q={q} />}
    </section>
  );
}

/**
 * A textarea kept equal to the replica's text. Local typing becomes one
 * splice on the shared Text; remote edits update the field and keep the
 * caret where it was relative to the text around it.
 * @param {{id: string, value: string, disabled: boolean, label: string, onText: (s: string) => void}} props
 */
function AnswerField({ id, value, disabled, label, onText }) {
  const { ref, initial } = useSyncedField(value);
  return (
    <textarea
      ref={ref}
      class="answer"
      data-testid={id}
      data-field="text"
      aria-label={label}
      rows={3}
      placeholder={disabled ? "" : "Write the answer…"}
      defaultValue={initial.current}
      disabled={disabled}
      onInput={(e) => onText(e.currentTarget.value)}
    />
  );
}

/**
 * The options; hovering or focusing them shows who chose (the whole
 * choice of a single-choice question, each option of a multiple one).
 * @param {QuestionProps} props
 */
function ChoiceView(props) {
  const { c, d, q, values, canEdit } = props;
  const multiple = q.multiple === true;
  const opts = q.options || [];
  const tip = useTip();
  const tipId = `provenance-options-${d.id}-${q.id}`;
  return (
    <fieldset class="options" data-testid={`options-${d.id}-${q.id}`} data-field="choice" ref={tip.anchor} {...(multiple ? {} : tip.on)}>
      <legend class="sr-only">{multiple ? "Choose any" : "Choose one"}</legend>
      {opts.length === 0 && <p class="muted">No options yet: add one below.</p>}
      {opts.map((o) => (
        <ChoiceOption key={o.id} {...props} o={o} describedBy={!multiple && tip.shown ? tipId : ""} />
      ))}
      {!multiple && tip.shown && opts.length > 0 && <ProvenanceTip {...props} kind="choice" cell="" shown={values.choices[0] || ""} tipId={tipId} anchor={tip.anchor} />}
      {!multiple && canEdit && values.choices.length > 0 && (
        <button type="button" class="btn link" data-testid={`clear-choice-${d.id}-${q.id}`} onClick={() => edit(() => c.choose(d.id, q.id, values.choices[0], false, false))}>
          Clear choice
        </button>
      )}
    </fieldset>
  );
}

/**
 * One option; a multiple-choice option shows who chose it on hover and
 * focus.
 * @param {QuestionProps & {o: {id: string, label: string}, describedBy: string}} props
 */
function ChoiceOption(props) {
  const { c, d, q, values, canEdit, o, describedBy } = props;
  const multiple = q.multiple === true;
  const tip = useTip();
  const tipId = `provenance-option-${d.id}-${q.id}-${o.id}`;
  const own = multiple && tip.shown;
  return (
    <label class={`option${values.choices.includes(o.id) ? " chosen" : ""}`} ref={tip.anchor} {...(multiple ? tip.on : {})}>
      <input
        type={multiple ? "checkbox" : "radio"}
        name={`choice-${d.id}-${q.id}`}
        value={o.id}
        data-testid={`option-${d.id}-${q.id}-${o.id}`}
        aria-describedby={own ? tipId : describedBy || undefined}
        checked={values.choices.includes(o.id)}
        disabled={!canEdit}
        onChange={(e) => edit(() => c.choose(d.id, q.id, o.id, e.currentTarget.checked, multiple))}
      />
      <span>{o.label}</span>
      {own && <ProvenanceTip {...props} kind="choice" cell={o.id} shown={values.choices.includes(o.id) ? "chosen" : ""} tipId={tipId} anchor={tip.anchor} />}
    </label>
  );
}

/** @param {QuestionProps & {peers: import("@accord-crdt/client").Peer[]}} props */
function Matrix(props) {
  const { d, q, values } = props;
  const opts = q.options || [];
  const crits = q.criteria || [];
  return (
    <div class="matrixwrap">
      <table class="matrix" data-testid={`matrix-${d.id}-${q.id}`}>
        <caption>How each option meets the criteria</caption>
        <colgroup>
          <col class="optcol" />
          {crits.map((cr) => (
            <col key={cr.id} />
          ))}
        </colgroup>
        <thead>
          <tr>
            <th scope="col">Option</th>
            {crits.map((cr) => (
              <th scope="col" key={cr.id} data-testid={`criterion-${d.id}-${q.id}-${cr.id}`}>
                {cr.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {opts.map((o) => (
            <tr key={o.id} class={values.choices.includes(o.id) ? "chosen" : ""}>
              <th scope="row">{o.label}</th>
              {crits.map((cr) => (
                <MarkCell key={cr.id} {...props} o={o} cr={cr} />
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * One cell of the matrix: its mark, the marker of others who focused it,
 * and who set it on hover and focus.
 * @param {QuestionProps & {peers: import("@accord-crdt/client").Peer[], o: {id: string, label: string}, cr: {id: string, label: string}}} props
 */
function MarkCell(props) {
  const { c, d, q, values, canEdit, who, peers, o, cr } = props;
  const key = `${o.id}/${cr.id}`;
  const m = values.marks[key] || "";
  const tid = `mark-${d.id}-${q.id}-${o.id}-${cr.id}`;
  const here = peersAt(peers, q.id, key);
  const tip = useTip();
  const tipId = `provenance-${tid}`;
  return (
    <td class={`cell ${m}${here.length ? " peer" : ""}`} style={here.length ? { "--peer": faceColor(here[0]) } : undefined} ref={tip.anchor} {...tip.on}>
      <select
        data-testid={tid}
        data-field={key}
        aria-label={`${o.label} — ${cr.label}`}
        aria-describedby={tip.shown ? tipId : undefined}
        value={m}
        disabled={!canEdit}
        onChange={(e) => {
          const v = e.currentTarget.value;
          edit(() => c.setMark(d.id, q.id, o.id, cr.id, v === "" ? null : /** @type {"yes"|"partly"|"no"} */ (v)));
        }}
      >
        <option value="">—</option>
        {MARKS.map((k) => (
          <option value={k} key={k}>
            {MARK_LABEL[k]}
          </option>
        ))}
      </select>
      <CellMarker logins={here} testid={`peer-${tid}`} who={who} />
      {tip.shown && <ProvenanceTip {...props} kind="mark" cell={key} shown={m} tipId={tipId} anchor={tip.anchor} />}
    </td>
  );
}

/**
 * Whether the decision is a question the Planner asked for itself (its
 * ask tool): the Planner acts on the options it gave, so nobody adds
 * options or criteria to it.
 * @param {Decision} d
 */
function isPlannerAsk(d) {
  return (d.record.key || "").startsWith("planner:ask:");
}

/** @param {{c: Client, d: Decision, q: Question}} props */
function Appends({ c, d, q }) {
  const crits = (q.criteria || []).length;
  return (
    <div class="appends">
      <AppendForm c={c} d={d} q={q} what="option" label="New option" button="Add option" />
      <AppendForm c={c} d={d} q={q} what="criterion" label="New criterion" button="Add criterion" hint={`${crits} of at most 5 criteria`} />
    </div>
  );
}

/** @param {{c: Client, d: Decision, q: Question, what: "option"|"criterion", label: string, button: string, hint?: string}} props */
function AppendForm({ c, d, q, what, label, button, hint }) {
  const [text, setText] = useState("");
  const busy = d.busy === "append-" + what;
  const id = `add-${what}-input-${d.id}-${q.id}`;
  return (
    <form
      class="append"
      onSubmit={async (e) => {
        e.preventDefault();
        const t = text.trim();
        if (!t) return;
        if (await settled(c.append(what, d.id, q.id, t))) setText("");
      }}
    >
      <label for={id} class="sr-only">
        {label}
      </label>
      <input
        id={id}
        data-testid={id}
        placeholder={label}
        maxLength={what === "criterion" ? 40 : 200}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        disabled={!!d.busy}
      />
      <button type="submit" class="btn" data-testid={`add-${what}-${d.id}-${q.id}`} disabled={!!d.busy || !text.trim()}>
        {busy ? "Adding…" : button}
      </button>
      {hint && (
        <span class="hint" data-testid={`${what}-count-${d.id}-${q.id}`}>
          {hint}
        </span>
      )}
    </form>
  );
}

/**
 * A settled decision's why: the sentence once, with who wrote it. A writer
 * edits it in a field that opens on Edit why (or at once when there is
 * none), so the sentence is never shown twice.
 * @param {{c: Client, d: Decision, nameOf: (s: string) => string}} props
 */
function Why({ c, d, nameOf }) {
  const rec = d.record;
  const [text, setText] = useState(rec.why || "");
  const [editing, setEditing] = useState(false);
  const [typed, setTyped] = useState(false);
  useEffect(() => {
    if (!typed) setText(rec.why || "");
  }, [rec.why, typed]);
  const by = rec.whyBy ? nameOf(rec.whyBy) : "";
  const formShown = c.write && (editing || !rec.why);
  const done = () => {
    setEditing(false);
    setTyped(false);
  };
  const save = async () => {
    const t = text.trim();
    if (!t || t === (rec.why || "") || d.busy) return;
    if (await settled(c.why(d.id, t))) done();
  };
  return (
    <div class="why" data-testid={`why-section-${d.id}`}>
      <p data-testid={`why-${d.id}`} class={rec.why ? "" : "muted"}>
        {rec.why ? (
          <>
            <strong>Why: </strong>
            {rec.why}
            <span class="by">{by ? ` — ${by}` : " — drafted"}</span>
          </>
        ) : by ? (
          `${by} cleared the why.`
        ) : (
          "No why yet."
        )}
        {c.write && rec.why && !editing && (
          <>
            {" "}
            <button
              type="button"
              class="btn link"
              data-testid={`why-edit-${d.id}`}
              disabled={!!d.busy}
              onClick={() => {
                setText(rec.why || "");
                setEditing(true);
              }}
            >
              Edit why
            </button>
          </>
        )}
      </p>
      {formShown && (
        <form
          class="whyform"
          onSubmit={(e) => {
            e.preventDefault();
            save();
          }}
        >
          <label for={`why-input-${d.id}`} class="sr-only">
            Why (one sentence)
          </label>
          <textarea
            id={`why-input-${d.id}`}
            data-testid={`why-input-${d.id}`}
            placeholder="Why this answer, in one sentence"
            maxLength={300}
            rows={2}
            value={text}
            disabled={!!d.busy}
            onInput={(e) => {
              setTyped(true);
              setText(e.currentTarget.value);
            }}
            onKeyDown={(e) => {
              // One sentence: Enter saves it.
              if (e.key === "Enter" && !e.shiftKey) {
                e.preventDefault();
                save();
              }
              if (e.key === "Escape" && rec.why) done();
            }}
          />
          <span class="whybuttons">
            <button type="submit" class="btn" data-testid={`why-save-${d.id}`} disabled={!!d.busy || !text.trim() || text.trim() === (rec.why || "")}>
              {rec.why ? "Replace why" : "Set why"}
            </button>
            {rec.why && (
              <button type="button" class="btn quiet" data-testid={`why-cancel-${d.id}`} onClick={done}>
                Cancel
              </button>
            )}
            {rec.why && (
              <button
                type="button"
                class="btn quiet"
                data-testid={`why-clear-${d.id}`}
                disabled={!!d.busy}
                onClick={async () => {
                  if (await settled(c.why(d.id, ""))) {
                    done();
                    setText("");
                  }
                }}
              >
                Clear why
              </button>
            )}
          </span>
        </form>
      )}
    </div>
  );
}

/** @param {{d: Decision, nameOf: (s: string) => string}} props */
function History({ d, nameOf }) {
  const hist = d.record.history || [];
  if (hist.length === 0) return null;
  const qs = d.record.definition.questions || [];
  return (
    <details class="history" data-testid={`history-${d.id}`} open>
      <summary>
        Earlier answers ({hist.length})
      </summary>
      <ol>
        {hist
          .map((h, i) => (
            <li key={i} data-testid={`history-${d.id}-${i}`}>
              <p class="hhead">
                <strong>{nameOf(h.by)}</strong> saved{when(h.at) ? ` on ${when(h.at)}` : ""}
                {h.reopenedBy ? `; reopened by ${nameOf(h.reopenedBy)}` : ""}
              </p>
              {(h.answers || []).map((a) => {
                const q = qs.find((x) => x.id === a.question);
                const labels = (a.choices || []).map((id) => q?.options?.find((o) => o.id === id)?.label || id);
                // In the matrix's order: by option, then by criterion.
                const rank = (/** @type {string} */ k) => {
                  const [o, cr] = k.split("/");
                  const oi = q?.options?.findIndex((x) => x.id === o) ?? -1;
                  const ci = q?.criteria?.findIndex((x) => x.id === cr) ?? -1;
                  return (oi < 0 ? 999 : oi) * 1000 + (ci < 0 ? 999 : ci);
                };
                const marks = Object.entries(a.marks || {}).sort(([x], [y]) => rank(x) - rank(y));
                return (
                  <p class="hanswer" key={a.question}>
                    {qs.length > 1 && q ? <span class="muted">{q.question} </span> : null}
                    {a.text ? `“${a.text}”` : labels.join(", ")}
                    {marks.length > 0 && (
                      <span class="muted">
                        {" "}
                        ({marks
                          .map(([k, v]) => {
                            const [o, cr] = k.split("/");
                            const ol = q?.options?.find((x) => x.id === o)?.label || o;
                            const cl = q?.criteria?.find((x) => x.id === cr)?.label || cr;
                            return `${ol} / ${cl}: ${MARK_LABEL[v] || v}`;
                          })
                          .join("; ")}
                        )
                      </span>
                    )}
                  </p>
                );
              })}
              {h.why && (
                <p class="hwhy">
                  Why: {h.why}
                  {h.whyBy ? ` — ${nameOf(h.whyBy)}` : " — drafted"}
                </p>
              )}
            </li>
          ))}
      </ol>
    </details>
  );
}

/**
 * Chat's notices name people by login handle (@ana, @demo:lily); the page
 * shows the names its cards use.
 * @param {{notices: {id: string, text: string, at?: string, quiet?: boolean}[], nameOf: (s: string) => string}} props
 */
function Chat({ notices, nameOf }) {
  const roster = useRoster();
  if (notices.length === 0) return <p class="muted" data-testid="chat-empty">No messages yet.</p>;
  const named = (/** @type {string} */ text) => text.replace(/@([A-Za-z0-9][A-Za-z0-9:._-]*[A-Za-z0-9])/g, (_, login) => personName(roster, nameOf, login));
  return (
    <ul class="notices" aria-live="polite" data-testid="chat-notices">
      {notices.map((n) => (
        <li key={n.id} data-testid={`chat-notice-${n.id}`} class={n.quiet ? "quiet" : undefined}>
          <span>{named(n.text)}</span>
          {n.at && <time dateTime={n.at}>{when(n.at)}</time>}
        </li>
      ))}
    </ul>
  );
}

main();
