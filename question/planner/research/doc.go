// Package research follows the work findings come from: research requests
// and investigations, which the host owns and runs. A member starts work
// through the host's own routes (their authorization, Planner owner and
// paired-machine checks stay the host's), then attaches it to a decision
// with question.Authority.Explore; this package makes sure that every
// finding following that work is settled once the work ends, and that Chat
// hears of it exactly once.
//
// # The contract
//
// The host implements Host: Work reports the state of one piece of work of
// a document (and fails for work that does not exist or belongs to another
// document), Cancel asks it to stop. It calls Watcher.Changed whenever work
// changes state. Chat notices go through the host's planner.Chat Post,
// which must be idempotent per notice id.
//
// # No finding waits on a missed event
//
// Events are a shortcut, never the only road. A sweep (Watcher.Sweep)
// asks the host for the state of the work every running finding of a
// document follows and settles what ended; the host runs one whenever a
// top-level document opens and whenever a member (re)opens it. A settle
// whose commit fails is logged and the document is swept again after
// Options.RetryAfter, and at the next sweep in any case.
//
// # Exactly one notice per settle
//
// A settle commits the finding's new status; the notice it owes is then
// posted under an id made of the finding's id and that status
// (question.Finding.NoticeID), and only after Post returned is the notice
// marked posted (question.Authority.MarkNoticed), durably. A crash after
// the settle posts it at the next sweep; a crash after Post and before the
// mark posts it again under the same id, which Chat ignores. A failed
// request posts a quiet notice.
//
// # Usage
//
//	w, err := research.New(research.Options{Authorities: auths, Host: host, Chat: chat})
//	defer w.Close()
//	host.OnChange(w.Changed)                  // every state change of work
//	srv.OnOpen(func(doc string) { w.Poke(doc) }) // a document opens, a member (re)opens it
//
//	// A member's question:explore, with the host's check first:
//	res, err := a.Explore(ctx, who, req, w.Check(doc))
//	w.Poke(doc) // work that had ended settled at once and owes its notice
package research
