// The signed-in member's page: its header (who, the connection, Start
// demo, Rewrite document…, Edit plan), the banners, the plan beside Chat or
// a decision's page, and the compact layout's shared Save bar.

import { useEffect, useReducer, useState } from "preact/hooks";
import { Client, display } from "@accord-crdt/client";
import { drafts, settled, startWork } from "./work.js";
import { usePageParam } from "./research.jsx";
import { OverwriteNotices, useOverwriteNotices, usePublishPresence } from "./presence.jsx";
import { DecisionPage } from "./page.jsx";
import { usePlanFeed } from "./plan-edit.jsx";
import { PlannerAgent } from "./planner-agent.jsx";
import { signOut, useSessionWatch } from "./session.jsx";
import { Chat, Plan } from "./plan.jsx";
import { QuestionView, valuesOf } from "./question.jsx";
import { History } from "./why-history.jsx";

const params = new URLSearchParams(location.search);

/**
 * @typedef {import("./session.jsx").Member} Member
 * @typedef {import("./session.jsx").Session} Session
 * @typedef {import("./plan-edit.jsx").Block} Block
 */

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

/**
 * The signed-in member's page, with its client of the plan's decisions.
 * @param {{session: Session, me: Member, onSessionChanged: (s: Session) => void}} props
 */
export function App({ session, me, onSessionChanged }) {
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
