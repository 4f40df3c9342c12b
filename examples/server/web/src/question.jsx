// One question of a decision: a written answer's field, the options and
// their Clear choice, the criteria matrix (matrix.jsx), and the forms
// that add an option or a criterion.

import { useState } from "preact/hooks";
import { useSyncedField } from "./synced-field.js";
import { edit, settled } from "./work.js";
import { ProvenanceTip, Typing, usePeers, useTip } from "./presence.jsx";
import { Matrix } from "./matrix.jsx";

/**
 * @typedef {import("@accord-crdt/client").Client} Client
 * @typedef {import("@accord-crdt/client").Decision} Decision
 * @typedef {import("@accord-crdt/client").Question} Question
 */

/**
 * What a question shows: the draft while open, the saved answer once
 * settled (or discarded after a save), else the last draft.
 * @param {Decision} d
 * @param {any} draft
 * @param {string} qid
 * @returns {{text: string, choices: string[], marks: Record<string, string|null>}}
 */
export function valuesOf(d, draft, qid) {
  if (d.record.status !== "open" && d.record.answer) {
    const a = (d.record.answer.answers || []).find((x) => x.question === qid);
    return { text: a?.text || "", choices: a?.choices || [], marks: a?.marks || {} };
  }
  const q = draft?.questions?.[qid];
  return { text: q?.text || "", choices: q?.choices || [], marks: q?.marks || {} };
}

/**
 * @typedef {{c: Client, d: Decision, q: Question, values: {text: string, choices: string[], marks: Record<string, string|null>}, canEdit: boolean,
 *   who: (login: string) => string}} QuestionProps
 */

/**
 * One question: its control, with the others' presence in it.
 * @param {QuestionProps} props
 */
export function QuestionView(props) {
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
