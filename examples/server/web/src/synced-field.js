import { useLayoutEffect, useRef } from "preact/hooks";
import { diff } from "@accord-crdt/client";

/**
 * Keeps a textarea equal to a replica's text. The field's content is set
 * once from `value` (pass `initial.current` as its defaultValue) and then
 * only here: a changing defaultValue rewrites a textarea's text node, and
 * in Chromium that moves a focused, not yet typed-in field's caret to the
 * start when someone else's edit arrives. Remote edits keep the caret
 * where it was relative to the text around it.
 * @param {string} value
 */
export function useSyncedField(value) {
  const ref = useRef(/** @type {HTMLTextAreaElement|null} */ (null));
  const initial = useRef(value);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el || el.value === value) return;
    const focused = document.activeElement === el;
    const s = el.selectionStart;
    const e = el.selectionEnd;
    const d = diff(el.value, value);
    el.value = value;
    if (focused && d) {
      const shift = (/** @type {number} */ p) => (p <= d.pos ? p : p >= d.pos + d.del ? p - d.del + d.ins.length : d.pos + d.ins.length);
      el.setSelectionRange(shift(s), shift(e));
    }
  });
  return { ref, initial };
}
