// Signing in and out: the sign-in page for someone not signed in, Sign
// out, and watching a signed-in page's session so that a page whose session
// ended stops.

import { useEffect, useRef } from "preact/hooks";

/**
 * @typedef {import("@accord-crdt/client").Client} Client
 * @typedef {{login: string, name: string, write: boolean, signIn?: string}} Member
 * @typedef {{doc: string, members: Member[], member?: Member}} Session
 */

/**
 * GETs url uncached and returns its JSON body; any status but 2xx throws.
 * @param {string} url
 */
export async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

/**
 * The page of someone not signed in: the demo members' sign-in links
 * (the server prints the same links when it starts). A server others can
 * reach lists none, since a link lets anyone in as that member: the page
 * then says to ask for one.
 * ended says the page was signed in a moment ago.
 * @param {{session: Session, ended?: boolean}} props
 */
export function SignIn({ session, ended }) {
  const links = session.members.filter((m) => m.signIn);
  return (
    <div class="page signin" data-testid="signin">
      <header class="top">
        <div class="brand">
          <span class="logo" aria-hidden="true">◆</span>
          <span>Accord</span>
        </div>
      </header>
      <main class="signin-body">
        <h1>Sign in to the demo plan</h1>
        {ended && (
          <p class="banner" role="status" data-testid="signed-out">
            You are signed out: this page stopped syncing. Sign in again to go on.
          </p>
        )}
        {links.length ? (
          <>
            <p>Pick a demo member. Ana and Ben can change decisions; Rita can only read them.</p>
            <ul class="signin-links">
              {links.map((m) => (
                <li key={m.login}>
                  <a href={m.signIn} data-testid={`signin-${m.login}`}>
                    Sign in as {m.name}
                  </a>
                  <span class="muted">{m.write ? " can edit and save" : " reads only"}</span>
                </li>
              ))}
            </ul>
          </>
        ) : (
          <p data-testid="signin-ask">
            Ask the person who runs this server for your sign-in link: it prints one for each demo member when it starts.
          </p>
        )}
      </main>
    </div>
  );
}

/** Other tabs of this browser learn of a sign-out here at once. */
const SESSION_CHANNEL = "accord-session";

/** Ends the session, tells this browser's other tabs, and reloads the page. */
export async function signOut() {
  try {
    await fetch("signout", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    if ("BroadcastChannel" in window) {
      const bc = new BroadcastChannel(SESSION_CHANNEL);
      bc.postMessage("signed-out");
      bc.close();
    }
  } finally {
    location.reload();
  }
}

/**
 * Watches the session of a signed-in page: when its connection drops (the
 * server closes the connections of a session that ended), while it keeps
 * failing to come back, and when another tab signs out, it asks
 * api/session who this browser is. Someone else, or nobody: the client
 * stops (no more redialing) and changed gets the session as it is now. A
 * server that does not answer changes nothing: the client keeps
 * redialing.
 * @param {Client|null} c
 * @param {string} login
 * @param {(s: Session) => void} changed
 */
export function useSessionWatch(c, login, changed) {
  const report = useRef(changed);
  report.current = changed;
  useEffect(() => {
    if (!c) return;
    let checking = false;
    let done = false;
    let last = 0;
    const check = async () => {
      if (checking || done || c.stopped) return;
      checking = true;
      last = Date.now();
      try {
        /** @type {Session} */
        const s = await getJSON("api/session");
        if (done || s.member?.login === login) return;
        done = true;
        c.stop();
        report.current(s);
      } catch {
        // Not reachable: the client's redialing goes on.
      } finally {
        checking = false;
      }
    };
    // A connection the server refused (a session that ended) is checked
    // at once; one that keeps failing to come back, every few seconds.
    const lost = () => c.conn === "reconnecting" || c.conn === "unreachable" || c.conn === "refused";
    const off = c.subscribe(() => {
      if (lost() && (c.conn === "refused" || Date.now() - last > 2000)) check();
    });
    const timer = setInterval(() => {
      if (lost()) check();
    }, 5000);
    const bc = "BroadcastChannel" in window ? new BroadcastChannel(SESSION_CHANNEL) : null;
    if (bc) bc.onmessage = () => check();
    return () => {
      done = true;
      off();
      clearInterval(timer);
      bc?.close();
    };
  }, [c, login]);
}
