// A decision card: its header (status, Needs review, Edited, Sending…,
// Undo and Redo, who else is here, ⤢), its questions, the why or the
// discarded answer, its footer (Save, Research, Reopen, Discard…, the
// findings), its message line and the earlier answers. Undo's shortcuts
// work anywhere in the card (undo.jsx).

import { useState } from "preact/hooks";
import { settled } from "./work.js";
import { CardResearch, ExpandButton, FindingsButton, personName, useRoster } from "./research.jsx";
import { Overwrites, Present } from "./presence.jsx";
import { QuestionView, valuesOf } from "./question.jsx";
import { History, Why } from "./why-history.jsx";
import { UndoButtons, useUndo } from "./undo.jsx";
import { when } from "./format.js";

/**
 * @typedef {import("@accord-crdt/client").Client} Client
 * @typedef {import("@accord-crdt/client").Decision} Decision
 * @typedef {import("./plan-edit.jsx").Pending} Pending
 */

/**
 * A decision's card, or its placeholder until the decision is loaded.
 * @param {{c: Client, id: string, nameOf: (s: string) => string, review?: Pending, link?: string}} props
 */
export function CardSlot({ c, id, nameOf, review, link }) {
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
  const undo = useUndo(c, d, who);
  const title = questions[0]?.question || "Decision";
  const hid = `q-${d.id}`;

  return (
    <article class={`card ${status}`} data-testid={`card-${d.id}`} data-status={status} data-link={link || ""} data-decision={d.id} aria-labelledby={hid} {...undo.keys}>
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
        <UndoButtons c={c} d={d} run={undo.run} />
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
