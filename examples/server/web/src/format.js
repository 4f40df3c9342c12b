// Formatting shared by the page's parts.

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * A date as "19 Oct", or "" for none (or the zero time).
 * @param {any} at
 */
export function when(at) {
  const t = at instanceof Date ? at : at ? new Date(at) : null;
  if (!t || isNaN(t.getTime()) || t.getFullYear() < 2000) return "";
  return `${t.getDate()} ${MONTHS[t.getMonth()]}`;
}
