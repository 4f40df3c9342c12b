// Undo and redo in a card and on the decision's page: the member's own
// edit groups, undone through the client (docs/PROTOCOL.md, "Undo"), from
// the keyboard anywhere in the card or page (Ctrl+Z, Ctrl+Shift+Z and
// Ctrl+Y; ⌘Z and ⌘⇧Z on a Mac) and from the Undo and Redo buttons in its
// header, which say what they will undo. An undo skipped because someone
// changed the value since says so in the decision's message line.

import { useRef } from "preact/hooks";
import { RefusedError } from "@accord-crdt/client";
import { MARK_LABEL } from "./presence.jsx";

/**
 * @typedef {import("@accord-crdt/client").Client} Client
 * @typedef {import("@accord-crdt/client").Decision} Decision
 * @typedef {import("@accord-crdt/client").UndoGroup} UndoGroup
 * @typedef {import("@accord-crdt/client").UndoResult} UndoResult
 * @typedef {"undo"|"redo"} Way
 * @typedef {(login: string) => string} Who a person's name for a login
 */

/** Whether this is a Mac, where ⌘ is the shortcuts' modifier. */
const MAC = typeof navigator !== "undefined" && /Mac|iPhone|iPad|iPod/.test(navigator.platform || navigator.userAgent);

/** The shortcuts as the buttons' titles and aria-keyshortcuts name them. */
const KEYS = MAC
  ? { undo: { title: "⌘Z", aria: "Meta+Z" }, redo: { title: "⌘⇧Z", aria: "Meta+Shift+Z" } }
  : { undo: { title: "Ctrl+Z", aria: "Control+Z" }, redo: { title: "Ctrl+Shift+Z", aria: "Control+Shift+Z Control+Y" } };

/** How many characters of typed text a label quotes. */
const QUOTE = 24;

/**
 * Which of undo and redo a key press asks for, or "".
 * @param {KeyboardEvent} e
 * @returns {Way|""}
 */
export function undoKey(e) {
  if (e.altKey || e.isComposing) return "";
  if (!(MAC ? e.metaKey && !e.ctrlKey : e.ctrlKey && !e.metaKey)) return "";
  // A layout without Latin letters names the key by its character; its
  // place on the keyboard is still Z's (or Y's).
  const k = /^[a-z]$/i.test(e.key) ? e.key.toLowerCase() : e.code === "KeyZ" ? "z" : e.code === "KeyY" ? "y" : "";
  if (k === "z") return e.shiftKey ? "redo" : "undo";
  if (k === "y" && !MAC && !e.shiftKey) return "redo";
  return "";
}

/**
 * Whether the element keeps its own undo: a text field other than a
 * written answer (whose text is the replica's, so its undo is Accord's).
 * @param {EventTarget|null} el
 */
function ownUndo(el) {
  if (el instanceof HTMLTextAreaElement) return el.dataset.field !== "text";
  if (el instanceof HTMLInputElement) return !["radio", "checkbox", "button", "submit", "reset"].includes(el.type);
  return el instanceof HTMLElement && el.isContentEditable;
}

/**
 * Undo and redo for decision d: run undoes or redoes (one after the
 * other, as the keys were pressed), and keys are the handlers of the
 * card (or the decision's page) that take the shortcuts from anywhere in
 * it, the written answer's field too (its browser undo would undo the
 * text locally, as a new edit of the member's, and overwrite others'
 * typing). d may be missing while the page loads it: a hook runs on
 * every render, and without d the keys are the browser's.
 * @param {Client} c
 * @param {Decision|undefined} d
 * @param {Who} who
 */
export function useUndo(c, d, who) {
  const chain = useRef(Promise.resolve());
  const names = useRef(who);
  names.current = who;
  const id = d?.id || "";
  const on = !!d && c.write && d.record.status !== "discarded";
  const run = (/** @type {Way} */ way) => {
    if (id) chain.current = chain.current.then(() => step(c, id, way, names.current));
    return chain.current;
  };
  return {
    run,
    keys: on
      ? {
          onKeyDown: (/** @type {KeyboardEvent} */ e) => {
            const way = undoKey(e);
            if (!way || e.defaultPrevented || ownUndo(e.target)) return;
            e.preventDefault();
            run(way);
          },
          // The field's own Undo and Redo (its context menu, an Edit menu).
          onBeforeInput: (/** @type {InputEvent} */ e) => {
            const way = e.inputType === "historyUndo" ? "undo" : e.inputType === "historyRedo" ? "redo" : "";
            if (!way || ownUndo(e.target)) return;
            e.preventDefault();
            run(way);
          },
        }
      : {},
  };
}

/**
 * One undo or redo; a skipped one becomes the decision's note.
 * @param {Client} c
 * @param {string} id
 * @param {Way} way
 * @param {Who} who
 */
async function step(c, id, way, who) {
  /** @type {UndoResult|null} */
  let r;
  try {
    r = await (way === "undo" ? c.undo(id) : c.redo(id));
  } catch (e) {
    // A refusal (a why the server refused, no connection) is already the
    // decision's note.
    if (!(e instanceof RefusedError)) console.error(e);
    return;
  }
  const d = c.decisions.get(id);
  if (!r || r.done || !d) return;
  const name = !r.by ? "Someone" : r.by.toLowerCase() === c.member.toLowerCase() ? "You" : who(r.by);
  d.note = { text: `${name} changed ${where(d, r.group)}${name === "You" ? " elsewhere" : ""} since; left as it is.`, tone: "info", at: Date.now() };
  c.notify();
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
 * The question of a group, from the decision's definition.
 * @param {Decision} d
 * @param {UndoGroup} g
 */
function questionOf(d, g) {
  return (d.record.definition.questions || []).find((q) => q.id === g.question);
}

/**
 * What a group changed: "Passkey / New device", "the choice", "Passkey"
 * (an option of a multiple choice), "the why", "the answer".
 * @param {Decision} d
 * @param {UndoGroup} g
 */
function where(d, g) {
  const q = questionOf(d, g);
  if (g.kind === "mark") {
    const [o, cr] = g.cell.split("/");
    return `${labelOf(q?.options, o)} / ${labelOf(q?.criteria, cr)}`;
  }
  if (g.kind === "choice") return g.cell ? labelOf(q?.options, g.cell) : "the choice";
  return g.kind === "why" ? "the why" : "the answer";
}

/**
 * Text quoted in a label: on one line, its end cut off past QUOTE
 * characters.
 * @param {string} s
 */
function quote(s) {
  const chars = [...s.replace(/\s+/g, " ").trim()];
  return `“${chars.length > QUOTE ? chars.slice(0, QUOTE - 1).join("").trimEnd() + "…" : chars.join("")}”`;
}

/**
 * What undoing or redoing a group does, as its button says it:
 * "Undo: Passkey / New device → Yes", "Undo: choose Postgres",
 * "Redo: unchoose SMS code", "Undo typing “foo”", "Undo: why".
 * @param {Decision} d
 * @param {UndoGroup} g
 * @param {Way} way
 */
export function undoLabel(d, g, way) {
  const Way = way === "undo" ? "Undo" : "Redo";
  const q = questionOf(d, g);
  const opt = (/** @type {string} */ id) => labelOf(q?.options, id);
  switch (g.kind) {
    case "mark":
      return g.to ? `${Way}: ${where(d, g)} → ${MARK_LABEL[g.to] || g.to}` : `${Way}: clear ${where(d, g)}`;
    case "choice":
      if (g.cell) return `${Way}: ${g.to ? "choose" : "unchoose"} ${opt(g.cell)}`;
      if (g.to) return `${Way}: choose ${opt(g.to)}`;
      return g.from ? `${Way}: unchoose ${opt(g.from)}` : `${Way}: clear the choice`;
    case "text":
      return g.to ? `${Way} typing ${quote(g.to)}` : `${Way} deleting ${quote(g.from)}`;
    case "why":
      return g.to ? `${Way}: why` : `${Way}: clear the why`;
    default:
      return Way;
  }
}

/** Why the stacks are empty, after "Nothing to undo". */
const CLEARED = /** @type {Record<string, string>} */ ({
  save: " since the decision was saved",
  discard: " since the decision was discarded",
  reopen: " since the decision was reopened",
  rebase: " since the server replaced the draft's history (a rebase)",
  reset: " since a refused edit put the draft back to what the server accepted",
});

/**
 * The Undo and Redo buttons of a card or the decision's page: what each
 * will undo (Undo in its text, both in their titles and labels), or,
 * disabled, why there is nothing (and what cleared it).
 * @param {{c: Client, d: Decision, run: (way: Way) => Promise<void>}} props
 */
export function UndoButtons({ c, d, run }) {
  if (!c.write || d.record.status === "discarded" || !d.doc) return null;
  const st = c.undoState(d.id);
  return (
    <span class="undo-tools" role="group" aria-label="Undo and redo">
      {/** @type {Way[]} */ (["undo", "redo"]).map((way) => {
        const g = st[way];
        const Way = way === "undo" ? "Undo" : "Redo";
        const label = g ? undoLabel(d, g, way) : Way;
        return (
          <button
            key={way}
            type="button"
            class={`btn quiet undo-btn ${way}`}
            data-testid={`${way}-${d.id}`}
            disabled={!g}
            aria-label={label}
            aria-keyshortcuts={g ? KEYS[way].aria : undefined}
            title={g ? `${label} (${KEYS[way].title})` : `Nothing to ${way}${CLEARED[st.cleared] || ""}`}
            onClick={(e) => {
              const btn = e.currentTarget;
              // A button that empties its stack is disabled and loses
              // focus: the keyboard goes on from the other one.
              run(way).then(() =>
                setTimeout(() => {
                  if (!btn.disabled || ![btn, document.body].includes(/** @type {any} */ (document.activeElement))) return;
                  /** @type {HTMLElement|null|undefined} */ (btn.parentElement?.querySelector("button:not(:disabled)"))?.focus();
                }),
              );
            }}
          >
            <span class="undo-icon" aria-hidden="true">
              {way === "undo" ? "↶" : "↷"}
            </span>
            {/* Redo says what it will do in its title: the footer's one
                line leaves the words to Undo, the one used most. */}
            <span class="undo-label">{way === "undo" ? label : Way}</span>
          </button>
        );
      })}
    </span>
  );
}
