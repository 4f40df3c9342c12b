// The criteria matrix: how each option meets each criterion, one mark a
// cell, with the marker of others who focused a cell and who set it.

import { MARKS } from "@accord-crdt/client";
import { edit } from "./work.js";
import { faceColor } from "./research.jsx";
import { CellMarker, MARK_LABEL, ProvenanceTip, peersAt, useTip } from "./presence.jsx";

/**
 * @typedef {import("./question.jsx").QuestionProps} QuestionProps
 */

/**
 * A question's criteria matrix: a row for each option, a column for each
 * criterion.
 * @param {QuestionProps & {peers: import("@accord-crdt/client").Peer[]}} props
 */
export function Matrix(props) {
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
