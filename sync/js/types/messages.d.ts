/**
 * A person-readable sentence for a refusal.
 * @param {string} kind the request's kind, e.g. "question:submit"; "connect" for a refused connection
 * @param {string|undefined} reason
 * @param {string} [message] the server's explanation
 * @returns {string}
 */
export function refusalText(kind: string, reason: string | undefined, message?: string): string;
/**
 * A person-readable sentence for a refused findings request: the server's
 * own explanation, which names who may act (only Ana, who started this
 * research request, can stop it).
 * @param {string} kind
 * @param {string|undefined} reason
 * @param {string|undefined} message
 */
export function findingRefusal(kind: string, reason: string | undefined, message: string | undefined): string;
export const STALE: "Someone changed this answer since you loaded it \u2014 review and save again.";
export const READER: "You can read this plan but not change it: ask a writer to answer, save, reopen or discard.";
export const OFFLINE: "Not connected \u2014 the page is reconnecting. Try again in a moment.";
