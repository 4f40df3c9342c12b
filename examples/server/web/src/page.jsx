// The decision's page (Expand, E1–E3): the root's record on the paper —
// status row, question, the control at page width, findings, takes — and
// the Notes, the body of the child document question:<recordId>, edited
// live by every member through the same sync path as an answer.

import { useEffect, useRef, useState } from "preact/hooks";
import { useSyncedField } from "./synced-field.js";
import { Client, findingsOf } from "@accord-crdt/client";
import { drafts, settled as outcome } from "./work.js";
import { Face, ResearchMenu, failureReason, pageURL, personName, runningAsks, runningWork, showPage, useRoster } from "./research.jsx";
import { Overwrites, Present } from "./presence.jsx";
import { UndoButtons, useUndo } from "./undo.jsx";

/**
 * @typedef {import("@accord-crdt/client").Finding} Finding
 * @typedef {import("@accord-crdt/client").Decision} Decision
 * @typedef {import("@accord-crdt/client").Client} PageClient
 */

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** @param {any} at */
function day(at) {
  const t = at instanceof Date ? at : at ? new Date(at) : null;
  if (!t || isNaN(t.getTime()) || t.getFullYear() < 2000) return "";
  return `${t.getDate()} ${MONTHS[t.getMonth()]}`;
}

/**
 * wide: a title bar with every action; compact (≤ 760 px or ?compact=1):
 * no bar, the actions above the status pill with ⋯ first; phone (≤ 480
 * px): the ⋯ menu in the top bar, Research and Save above the pill.
 * @returns {"wide"|"compact"|"phone"}
 */
function useLayout() {
  const forced = new URLSearchParams(location.search).get("compact") === "1";
  const phoneQ = matchMedia("(max-width: 480px)");
  const compactQ = matchMedia("(max-width: 760px)");
  const read = () => /** @type {"wide"|"compact"|"phone"} */ (phoneQ.matches ? "phone" : forced || compactQ.matches ? "compact" : "wide");
  const [layout, setLayout] = useState(read);
  useEffect(() => {
    const on = () => setLayout(read());
    phoneQ.addEventListener("change", on);
    compactQ.addEventListener("change", on);
    return () => {
      phoneQ.removeEventListener("change", on);
      compactQ.removeEventListener("change", on);
    };
  }, []);
  return layout;
}

/**
 * The child document's client: the page's Notes.
 * @param {string} childId
 * @param {string} member
 */
function useChild(childId, member) {
  const [child, setChild] = useState(/** @type {PageClient|null} */ (null));
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!childId) return;
    const c = new Client({ doc: childId, member, storage: drafts });
    const off = c.subscribe(() => setTick((x) => x + 1));
    c.start();
    setChild(c);
    /** @type {any} */ (window).accordNotes = c;
    // Drafts are written a moment after each change; a closing tab
    // writes what is left.
    const keep = () => void c.flushStorage();
    addEventListener("pagehide", keep);
    return () => {
      removeEventListener("pagehide", keep);
      off();
      c.stop();
      setChild(null);
    };
  }, [childId, member]);
  return child;
}

/**
 * @param {{c: PageClient, id: string, docName: string, nameOf: (s: string) => string,
 *   parts: {QuestionView: any, History: any, valuesOf: (d: Decision, draft: any, qid: string) => {text: string, choices: string[], marks: Record<string, string|null>}}}} props
 */
export function DecisionPage({ c, id, docName, nameOf, parts }) {
  const layout = useLayout();
  const roster = useRoster();
  const d = c.decisions.get(id);
  const rec = /** @type {any} */ (d?.record);
  const childId = rec?.childId || "";
  const child = useChild(childId, c.member);
  const tried = useRef(false);
  const who = (/** @type {string} */ login) => personName(roster, nameOf, login);
  // The card's undo: its shortcuts anywhere on the page, the written
  // answer's field too; the Notes and a take keep the browser's own.
  const undo = useUndo(c, d, who);

  // A page reached by its link: expand first if the record has no page
  // yet (question:page is idempotent, a second member reaches the same).
  useEffect(() => {
    if (!d || childId || tried.current || !c.welcomed || !c.write) return;
    tried.current = true;
    outcome(c.page(id));
  });

  const back = () => showPage("");
  if (!d || !rec || !(rec.definition.questions || []).length) {
    return (
      <div class="dpage" data-testid="decision-page" data-layout={layout}>
        <header class="dbar">
          <button type="button" class="btn quiet" data-testid="page-back" onClick={back}>
            ← Back
          </button>
        </header>
        <p class="muted paper">{c.welcomed ? "This decision is not in this plan." : "Loading the decision…"}</p>
      </div>
    );
  }

  const questions = rec.definition.questions || [];
  const open = rec.status === "open";
  const settled = rec.status === "settled";
  const draft = c.draft(d);
  const canEdit = c.write && open && !!d.doc && !d.busy;
  const answerable =
    !!draft &&
    questions.every((q) => {
      const v = parts.valuesOf(d, draft, q.id);
      return q.response === "text" ? v.text.trim() !== "" : v.choices.length > 0;
    });
  const findings = findingsOf(rec);
  const work = findings.filter((f) => f.kind !== "ask");
  const asks = findings.filter((f) => f.kind === "ask");
  const title = questions[0].question;

  const saveOrReopen = settled ? (
    <button type="button" class="btn outline" data-testid="page-reopen" disabled={!c.write || !!d.busy} onClick={() => outcome(c.reopen(id))}>
      {d.busy === "reopening" ? "Reopening…" : "Reopen"}
    </button>
  ) : open ? (
    <button type="button" class="btn primary" data-testid="page-save" disabled={!canEdit || !answerable} onClick={() => outcome(c.save([id]))}>
      {d.busy === "saving" ? "Saving…" : "Save"}
    </button>
  ) : null;
  const research = <ResearchMenu c={c} d={d} nameOf={nameOf} where="page" />;
  const more = <MoreMenu c={c} d={d} />;
  const undoButtons = <UndoButtons c={c} d={d} run={undo.run} />;

  return (
    <div class="dpage" data-testid="decision-page" data-layout={layout} data-id={id} data-decision={id} {...undo.keys}>
      <header class="dbar" data-testid="page-bar">
        <button type="button" class="btn quiet" data-testid="page-back" onClick={back} aria-label="Back to the plan">
          ←{layout === "phone" ? "" : " Back"}
        </button>
        {layout !== "phone" && (
          <button type="button" class="crumb" data-testid="page-crumb" onClick={back}>
            {docName}
          </button>
        )}
        <span class="dtitle" data-testid="page-title">
          {title}
        </span>
        {layout === "wide" && (
          <span class="dbar-actions">
            {undoButtons}
            {more}
            {research}
            {saveOrReopen}
          </span>
        )}
        {layout === "phone" && <span class="dbar-actions">{more}</span>}
      </header>

      <main class="paper" aria-label="Decision">
        {layout !== "wide" && (
          <div class="dactions" data-testid="page-actions">
            {layout === "compact" && more}
            {research}
            {saveOrReopen}
            {undoButtons}
          </div>
        )}
        <StatusRow rec={rec} who={who}>
          <Present c={c} id={id} who={who} />
        </StatusRow>
        <Overwrites d={d} who={who} />
        <h1 class="dquestion" data-testid="page-question">
          {title}
        </h1>
        <div class={`control${questions.length === 1 ? " single" : ""}${open ? "" : " readonly"}`} data-testid="page-control">
          {questions.map((q) => (
            <parts.QuestionView key={q.id} c={c} d={d} q={q} values={parts.valuesOf(d, draft, q.id)} canEdit={canEdit} who={who} />
          ))}
        </div>
        <p class={`note ${d.note?.tone || ""}`} role="status" aria-live="polite" data-testid="page-message">
          {d.note?.text || ""}
        </p>
        {/* The card's earlier answers, here too. */}
        <parts.History d={d} nameOf={who} />
        <p class="small">
          <a href={`api/audit?${new URLSearchParams({ doc: c.doc, decision: id })}`} download={`${id}.audit.ndjson`} data-testid="page-audit">
            Download history (NDJSON)
          </a>
          <span class="muted"> every edit, save and finding, with who and when</span>
        </p>

        {work.length > 0 && (
          <section class="dsection" data-testid="page-findings" aria-label="Findings">
            <h2>Findings</h2>
            {work.map((f) => (
              <FindingView key={f.id} f={f} who={who} />
            ))}
          </section>
        )}

        {asks.length > 0 && (
          <section class="dsection" data-testid="page-takes" aria-label="Takes">
            <h2>Takes</h2>
            {asks.map((f) => (
              <TakeView key={f.id} c={c} d={d} f={f} who={who} />
            ))}
          </section>
        )}

        <section class="dsection notes" data-testid="page-notes-section" aria-label="Notes">
          <h2>Notes</h2>
          <Notes child={child} />
          {!childId && !c.write && (
            <p class="muted small" data-testid="page-no-notes">
              This decision has no page yet: a writer opens it with Expand.
            </p>
          )}
        </section>
      </main>
    </div>
  );
}

/** @param {{rec: any, who: (s: string) => string, children?: any}} props */
function StatusRow({ rec, who, children }) {
  const asks = runningAsks(rec);
  let pill = "Open";
  let cls = "open";
  if (rec.status === "settled") {
    pill = "Settled";
    cls = "settled";
  } else if (rec.status === "discarded") {
    pill = "Discarded";
    cls = "discarded";
  } else if (asks.length) {
    pill = "Waiting for";
    cls = "waiting";
  } else if (runningWork(rec)) {
    pill = "Exploring";
    cls = "exploring";
  }
  return (
    <div class="statusrow" data-testid="page-status" data-status={cls}>
      <span class={`pill ${cls}`} data-testid="page-status-pill">
        {pill}
      </span>
      {cls === "waiting" &&
        asks.map((f) => (
          <span class="who" key={f.id}>
            <Face name={who(f.ref)} login={f.ref} />
            {who(f.ref)}
          </span>
        ))}
      {cls === "settled" && rec.answer && (
        <span class="who" data-testid="page-settled-by">
          <Face name={who(rec.answer.by)} login={rec.answer.by} />
          by {who(rec.answer.by)}
          {day(rec.answer.at) ? `, ${day(rec.answer.at)}` : ""}
        </span>
      )}
      {children}
    </div>
  );
}

/** @param {{f: Finding, who: (s: string) => string}} props */
function FindingView({ f, who }) {
  const what = f.kind === "spike" ? "Investigation" : "Research";
  const state = {
    running: f.kind === "spike" ? "Investigating…" : "Researching…",
    failed: `${what} failed`,
    stopped: "Stopped",
    ready: "",
  }[f.status];
  return (
    <article class={`finding ${f.status}`} data-testid={`finding-${f.id}`} data-status={f.status} data-kind={f.kind}>
      <p class="fhead">
        <strong>{f.title || what}</strong>
        <span class="muted small">
          {" "}
          · {who(f.by)}
          {day(f.at) ? `, ${day(f.at)}` : ""}
        </span>
      </p>
      {f.focus && <p class="muted small">Focus: {f.focus}</p>}
      {f.status === "failed" ? (
        <p class="freason" data-testid={`finding-reason-${f.id}`}>
          <strong>{state}:</strong> {failureReason(f)}
        </p>
      ) : (
        state && <p class="muted">{state}</p>
      )}
      {f.summary && f.status !== "failed" && <p class="fsummary">{f.summary}</p>}
      {(f.sources || []).length > 0 && (
        <ul class="sources">
          {(f.sources || []).map((s) => (
            <li key={s.url}>
              <a href={s.url} rel="noreferrer noopener" target="_blank">
                {s.title || s.url}
              </a>
            </li>
          ))}
        </ul>
      )}
      {(f.sourceCount || 0) > (f.sources || []).length && <p class="muted small">{f.sourceCount} sources read</p>}
      {f.branch && (
        <p class="small">
          Branch <code data-testid={`finding-branch-${f.id}`}>{f.branch}</code>
        </p>
      )}
    </article>
  );
}

/** @param {{c: PageClient, d: Decision, f: Finding, who: (s: string) => string}} props */
function TakeView({ c, d, f, who }) {
  const mine = f.status === "running" && f.ref.toLowerCase() === c.member.toLowerCase() && d.record.status === "open";
  return (
    <article class={`take ${f.status}`} data-testid={`take-${f.id}`} data-status={f.status}>
      <p class="fhead">
        <Face name={who(f.ref)} login={f.ref} />
        <strong>{who(f.ref)}</strong>
        {f.stance && (
          <span class={`chip ${f.stance}`} data-testid={`stance-${f.id}`}>
            {f.stance === "supports" ? "Supports" : "Objects"}
          </span>
        )}
        <span class="muted small"> asked by {who(f.by)}</span>
      </p>
      {f.focus && <p class="muted small">{f.focus}</p>}
      {f.status === "ready" && <p class="fsummary">{f.summary}</p>}
      {f.status === "stopped" && <p class="muted">The ask was stopped.</p>}
      {f.status === "running" && !mine && <p class="muted">Waiting for a reply…</p>}
      {mine && <TakeForm c={c} d={d} f={f} />}
    </article>
  );
}

/** @param {{c: PageClient, d: Decision, f: Finding}} props */
function TakeForm({ c, d, f }) {
  const [reply, setReply] = useState("");
  const [stance, setStance] = useState(/** @type {""|"supports"|"objects"} */ (""));
  const send = async () => {
    const t = reply.trim();
    if (!t) return;
    if (await outcome(c.take(d.id, f.id, t, stance))) setReply("");
  };
  return (
    <form
      class="takeform"
      data-testid={`take-form-${f.id}`}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <label class="sr-only" for={`take-reply-${f.id}`}>
        Your take
      </label>
      <textarea
        id={`take-reply-${f.id}`}
        data-testid={`take-reply-${f.id}`}
        rows={3}
        placeholder="Your take on this decision"
        maxLength={4000}
        value={reply}
        onInput={(e) => setReply(e.currentTarget.value)}
      />
      <fieldset class="stances">
        <legend class="sr-only">Stance</legend>
        {[
          ["", "No stance"],
          ["supports", "Supports"],
          ["objects", "Objects"],
        ].map(([v, label]) => (
          <label key={v} class={`chip-choice${stance === v ? " on" : ""}`}>
            <input
              type="radio"
              name={`stance-${f.id}`}
              value={v}
              data-testid={`take-stance-${f.id}-${v || "none"}`}
              checked={stance === v}
              onChange={() => setStance(/** @type {any} */ (v))}
            />
            {label}
          </label>
        ))}
      </fieldset>
      <button type="submit" class="btn primary" data-testid={`take-send-${f.id}`} disabled={!reply.trim() || !!d.busy}>
        {d.busy === "taking" ? "Sending…" : "Send take"}
      </button>
    </form>
  );
}

/**
 * The Notes: the shared draft text of the child document's "notes"
 * decision, never saved.
 * @param {{child: PageClient|null}} props
 */
function Notes({ child }) {
  const nd = child ? child.order.map((i) => child.decisions.get(i)).find((x) => x && x.record.key === "notes") : undefined;
  const q = nd?.record.definition.questions?.[0];
  if (!child || !nd || !q || !nd.doc) {
    return (
      <textarea class="notes-field" data-testid="page-notes" aria-label="Notes" placeholder="Add a note" rows={4} disabled data-state="loading" />
    );
  }
  const draft = child.draft(nd);
  const text = draft?.questions?.[q.id]?.text || "";
  return <NotesField value={text} disabled={!child.write} onText={(t) => child.setText(nd.id, q.id, t)} />;
}

/**
 * A textarea kept equal to the shared text: local typing becomes one
 * splice, remote edits keep the caret where it was.
 * @param {{value: string, disabled: boolean, onText: (s: string) => void}} props
 */
function NotesField({ value, disabled, onText }) {
  const { ref, initial } = useSyncedField(value);
  return (
    <textarea
      ref={ref}
      class="notes-field"
      data-testid="page-notes"
      data-state="ready"
      aria-label="Notes"
      rows={6}
      placeholder="Add a note"
      defaultValue={initial.current}
      disabled={disabled}
      onInput={(e) => onText(e.currentTarget.value)}
    />
  );
}

/**
 * The ⋯ menu: Copy link, and Discard decision… with confirmation.
 * @param {{c: PageClient, d: Decision}} props
 */
function MoreMenu({ c, d }) {
  const [open, setOpen] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [copied, setCopied] = useState("");
  const box = useRef(/** @type {HTMLDivElement|null} */ (null));
  useEffect(() => {
    if (!open) return;
    const away = (/** @type {MouseEvent} */ e) => {
      if (box.current && !box.current.contains(/** @type {Node} */ (e.target))) {
        setOpen(false);
        setConfirming(false);
      }
    };
    document.addEventListener("mousedown", away);
    return () => document.removeEventListener("mousedown", away);
  }, [open]);
  const link = pageURL(d.id);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(link);
      setCopied("Link copied.");
    } catch {
      setCopied(`Copy this link: ${link}`);
    }
  };
  return (
    <div class="more" ref={box}>
      <button type="button" class="btn quiet" data-testid="page-more" aria-label="More actions" aria-expanded={open} onClick={() => setOpen(!open)}>
        ⋯
      </button>
      {open && (
        <div class="menu right" role="menu" data-testid="page-more-menu">
          <button type="button" class="row-btn" role="menuitem" data-testid="page-copy-link" data-link={link} onClick={copy}>
            Copy link
          </button>
          {copied && (
            <p class="muted small" data-testid="page-copied">
              {copied}
            </p>
          )}
          {d.record.status !== "discarded" && !confirming && (
            <button type="button" class="row-btn danger-text" role="menuitem" data-testid="page-discard" disabled={!c.write} onClick={() => setConfirming(true)}>
              Discard decision…
            </button>
          )}
          {confirming && (
            <div class="confirm" role="group" aria-label="Confirm discard">
              <span>Discard this decision? Its history is kept.</span>
              <button
                type="button"
                class="btn danger"
                data-testid="page-discard-confirm"
                onClick={async () => {
                  setConfirming(false);
                  setOpen(false);
                  await outcome(c.discard(d.id));
                }}
              >
                Discard
              </button>
              <button type="button" class="btn quiet" data-testid="page-discard-cancel" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </div>
          )}
        </div>
      )}
    </div>
  );
}
