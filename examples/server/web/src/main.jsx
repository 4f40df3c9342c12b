// The example server's page: the sample plan with its decision cards
// beside their passages, each card a live view of a real automerge replica
// (the package @accord-crdt/client, sync/js). See ../README.md for the data-testid list.
// This file starts the page and switches between the signed-in member's
// page (app.jsx) and the sign-in page (session.jsx).

import { render } from "preact";
import { useState } from "preact/hooks";
import { init } from "@accord-crdt/client";
import { SignIn, getJSON } from "./session.jsx";
import { App } from "./app.jsx";

/**
 * @typedef {import("./session.jsx").Session} Session
 */

async function main() {
  const root = /** @type {HTMLElement} */ (document.getElementById("app"));
  try {
    await init(new URL("automerge.wasm", location.href));
  } catch (e) {
    root.textContent = `This page needs WebAssembly to hold its replicas: ${e}`;
    return;
  }
  /** @type {Session} */
  let session;
  try {
    session = await getJSON("api/session");
  } catch (e) {
    root.textContent = `The server is not reachable: ${e instanceof Error ? e.message : e}. Reload the page to try again.`;
    return;
  }
  root.textContent = "";
  render(<Root first={session} />, root);
}

/**
 * The signed-in member's page, or the sign-in page. A session that ends
 * while the page is open (signed out in another tab, expired, or every
 * session ended by the operator) turns the page into the sign-in page:
 * its clients stop, so nothing keeps redialing or takes typing that
 * could never be sent.
 * @param {{first: Session}} props
 */
function Root({ first }) {
  const [session, setSession] = useState(first);
  const [ended, setEnded] = useState(false);
  if (!session.member) return <SignIn session={session} ended={ended} />;
  return (
    <App
      key={session.member.login}
      session={session}
      me={session.member}
      onSessionChanged={(s) => {
        setEnded(!s.member);
        setSession(s);
      }}
    />
  );
}

main();
