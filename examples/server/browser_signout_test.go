package main

import (
	"testing"
	"time"
)

// TestBrowserSignOutEndsEveryTab: Ana has the plan open in two tabs and
// signs out in one. The other tab turns into the sign-in page too (the
// demo members' links, and a line saying it was signed out) rather than
// staying on the plan with her name, a Reconnecting… banner and fields
// that take typing nothing can send; its client stops and dials no more.
func TestBrowserSignOutEndsEveryTab(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	profile := newBrowser(t, "ana", 1280, 900) // its first tab stays blank: closing it would close the browser
	first, _ := profile.tab("ana's first tab")
	first.open(srv, "ana", "")
	second, _ := profile.tab("ana's second tab")
	second.open(srv, "ana", "")
	second.waitCard(ids["onboarding"], "open")

	first.click("signout")
	first.waitFor("the sign-in links in the tab that signed out", `!!$("signin-ana")`)

	second.waitFor("the sign-in page in the other tab", `!!$("signin") && !!$("signin-ana") && !!$("signin-rita")`)
	second.waitText("signed-out", "You are signed out")
	for _, gone := range []string{"signed-in", "plan", "reconnecting-banner", "app-message", "card-" + ids["onboarding"]} {
		if second.exists(gone) {
			t.Errorf("the signed-out tab still shows %s", gone)
		}
	}
	second.waitFor("its client to stop", `window.accord.stopped && window.accord.conn === "closed" && !window.accord.ws`)
	var before int
	second.eval(`window.accord.attempts`, &before)
	time.Sleep(2 * time.Second)
	var after struct {
		Attempts int  `json:"attempts"`
		WS       bool `json:"ws"`
	}
	second.eval(`({attempts: window.accord.attempts, ws: !!window.accord.ws})`, &after)
	if after.Attempts != before || after.WS {
		t.Errorf("the signed-out tab keeps dialing: %d redials before, %d after two seconds (socket open: %v)", before, after.Attempts, after.WS)
	}

	// Signing in again from that tab brings the plan back.
	second.click("signin-ben")
	second.waitConnected()
	second.waitText("signed-in", "Ben")
}
