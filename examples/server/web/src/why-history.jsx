// What a settled decision keeps: its why, which a writer sets, replaces
// or clears, and the earlier answers with their authors.

import { useEffect, useState } from "preact/hooks";
import { settled } from "./work.js";
import { MARK_LABEL } from "./presence.jsx";
import { when } from "./format.js";

/**
 * @typedef {import("@accord-crdt/client").Client} Client
 * @typedef {import("@accord-crdt/client").Decision} Decision
 */

/**
 * A settled decision's why: the sentence once, with who wrote it. A writer
 * edits it in a field that opens on Edit why (or at once when there is
 * none), so the sentence is never shown twice.
 * @param {{c: Client, d: Decision, nameOf: (s: string) => string}} props
 */
export function Why({ c, d, nameOf }) {
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

/**
 * The earlier answers, oldest first, each with who saved it, when, who
 * reopened it and its why.
 * @param {{d: Decision, nameOf: (s: string) => string}} props
 */
export function History({ d, nameOf }) {
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
