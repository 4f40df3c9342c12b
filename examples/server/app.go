package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/question/planner/research"
	"github.com/accord-crdt/accord/sync/mcp"
	"github.com/accord-crdt/accord/sync/server"
)

// persona is a demo member.
type persona struct {
	Login string `json:"login"`
	Name  string `json:"name"`
	Write bool   `json:"write"`
}

var personas = []persona{
	{Login: "ana", Name: "Ana", Write: true},
	{Login: "ben", Name: "Ben", Write: true},
	{Login: "rita", Name: "Rita", Write: false},
}

// demoDoc is the one sample plan document.
const demoDoc = "plan-1"

// app wires the library to an in-memory host: the sample plan, Chat, the
// Planner runtime and members live in memory (memhost); decisions, drafts
// and answers live in bbolt through the sync server.
type app struct {
	log     *slog.Logger
	srv     *server.Server
	host    *memhost.Host
	driver  *planner.Driver
	tools   *planner.Tools
	planner *demoPlanner
	plan    *planStore // plan.db: the plan and Chat (plan_store.go)
	feed    *planFeed  // the pages' live plan and Chat (plan_edit.go)
	// metrics holds the sync server's collectors, served at /metrics.
	metrics *prometheus.Registry

	research *researchHost     // research.go
	watcher  *research.Watcher // research.go
	desk     *personaDesk      // personas.go
	sessions *sessions         // signin.go
	// mcpToken is the MCP endpoint's token when a cluster set it, and
	// mcpDiffers why this node's own differs from the cluster's (mcp.go).
	mcpToken, mcpDiffers string
	// links lists the demo members' sign-in links in GET /api/session
	// (demoOptions.DemoLinks).
	links bool

	// In a cluster (cluster_state.go): where the host state is kept, and
	// whether this node owns a document.
	hostState *hostState
	owns      func(doc string) bool

	// mcp serves the Planner's tools to agents (mcp.go); holdEnds wakes
	// a document's pages when an agent's hold on its turns ends.
	mcp      *mcp.Handler
	holdMu   sync.Mutex
	holdEnds map[string]*time.Timer

	// background counts the plan updates that commits start
	// (unwriteReopened), which shutdown waits for.
	background sync.WaitGroup
}

func newApp(store persist.Store, log *slog.Logger, demo demoOptions) (*app, error) {
	a := &app{log: log, host: memhost.New(), feed: newPlanFeed(), links: demo.DemoLinks}
	demo.setDefaults()
	var err error
	if a.sessions, err = openSessions(demo.Dir, demo.SessionKey, demo.TrustMemberParam, log); err != nil {
		return nil, err
	}
	a.sessions.differs = demo.Differs["session key"]
	a.mcpToken, a.mcpDiffers = demo.MCPToken, demo.Differs["MCP token"]
	if a.research, err = newResearchHost(demo, log); err != nil {
		return nil, err
	}
	a.desk = newPersonaDesk(demo, log)
	a.host.Docs.Set(demoDoc, samplePlan()...)
	if err := a.keepPlan(store); err != nil {
		return nil, err
	}
	for _, p := range personas {
		a.host.Members.Add(demoDoc, question.Member{Login: p.Login, Write: p.Write})
		if p.Write {
			a.host.Members.Capture(p.Login) // their Planner sessions, for why drafts
		}
	}
	// Ana owns the Planner of the sample plan; turns nobody typed run
	// under her, and never claim ownership.
	a.host.Runtime.SetOwner(demoDoc, "ana")

	a.metrics = prometheus.NewRegistry()
	opts := server.Options{
		Store:      store,
		Logger:     log,
		Registerer: a.metrics,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			if m, ok := a.sessions.memberOf(r); ok {
				return question.Member{Login: m.Login, Write: m.Write}, nil
			}
			return question.Member{}, server.ErrUnauthorized
		},
		Host: appHost{a: a},
	}
	if demo.NoLimits {
		opts.FrameRate, opts.ByteRate, opts.MaxMemberConnections = -1, -1, -1
		log.Warn("sync limits off: no rates per connection, no cap on connections per member (for load tools only)")
	}
	if a.srv, err = server.New(opts); err != nil {
		return nil, err
	}
	dopts := planner.Options{Authorities: authoritiesFor(store, a.srv), Logger: log}
	a.host.Wire(&dopts)
	if a.driver, err = planner.New(dopts); err != nil {
		return nil, err
	}
	a.host.Runtime.OnChange(func(doc string) {
		if doc == "" {
			a.driver.PokeAll()
			return
		}
		a.driver.Poke(doc)
	})
	if a.tools, err = planner.NewTools(planner.ToolsOptions{Authorities: a.srv, Document: a.host.Docs, Editor: a.host.Docs}); err != nil {
		return nil, err
	}
	a.planner = &demoPlanner{app: a, runs: map[string]int{}, started: map[string]bool{}}
	a.host.Chat.OnTurn(a.planner.onTurn)
	a.host.Runtime.SetDrafter(func(ctx context.Context, doc string, req planner.WhyRequest) (string, error) {
		return demoWhy(req.Answer), ctx.Err()
	})
	if err := a.placeCards(context.Background(), demoDoc); err != nil {
		return nil, err
	}
	a.driver.Watch(demoDoc)
	if err := a.startResearch(); err != nil {
		return nil, err
	}
	a.desk.start(a.srv)
	return a, nil
}

// placeCards puts the cards of decisions stored before a restart back
// beside their passages: the sample plan lives in memory, the decisions in
// bbolt.
func (a *app) placeCards(ctx context.Context, doc string) error {
	var cards []planner.Placement
	err := a.srv.Do(ctx, doc, func(auth *question.Authority) error {
		for _, r := range auth.Records() {
			p := planner.Placement{Decision: r.ID}
			if len(r.Passage) > 0 {
				p.After, p.Link = r.Passage[0], r.Passage[0]
			}
			cards = append(cards, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return a.host.Docs.Place(ctx, doc, cards)
}

func (a *app) routes(mux *http.ServeMux) {
	mux.Handle("/sync", a.srv)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics, promhttp.HandlerOpts{}))
	// The page asks who it is signed in as. The demo lets anyone be any
	// member, but only where a.links says so does it list their sign-in
	// links: on a server others can reach, a link is a writer's key.
	mux.HandleFunc("GET /api/session", func(w http.ResponseWriter, r *http.Request) {
		type member struct {
			persona
			SignIn string `json:"signIn,omitempty"`
		}
		var members []member
		for _, p := range personas {
			m := member{persona: p}
			if a.links {
				m.SignIn = a.sessions.invite("", p)
			}
			members = append(members, m)
		}
		out := map[string]any{"doc": demoDoc, "members": members}
		if m, ok := a.sessions.memberOf(r); ok {
			out["member"] = m
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /api/plan", a.signedIn(func(w http.ResponseWriter, r *http.Request) {
		out, err := a.planView(r.Context(), docParam(r))
		if err != nil {
			refuseErr(w, a.log, err)
			return
		}
		writeJSON(w, out)
	}))
	mux.HandleFunc("GET /api/chat", a.signedIn(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, a.chatView(docParam(r)))
	}))
	mux.HandleFunc("GET /api/plan/socket", a.signedIn(a.planSocket))
	mux.HandleFunc("GET /api/audit", a.signedIn(a.audit))
	mux.HandleFunc("POST /api/plan/edit", a.planEdit)
	mux.HandleFunc("POST /api/demo/rewrite", a.demoRewriteRoute())
	mux.HandleFunc("POST /api/demo/start", func(w http.ResponseWriter, r *http.Request) {
		// Starting the demo opens decisions in the plan: a write, so only
		// a member who may write can do it, as on the sync socket.
		m, ok := a.sessions.memberOf(r)
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]string{"reason": "unauthorized", "error": "sign in to start the demo"})
			return
		}
		if !m.Write {
			w.WriteHeader(http.StatusForbidden)
			writeJSON(w, map[string]string{"reason": "forbidden", "error": "only a member who can write can start the demo"})
			return
		}
		opened, err := a.planner.start(r.Context(), docParam(r))
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			writeJSON(w, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, map[string]any{"opened": opened})
	})
	a.researchRoutes(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
}

// hasDecidedLines reports whether the plan doc holds a write-up line
// that a reopen would change, so that the edits of a document without
// any cost nothing more.
func (a *app) hasDecidedLines(doc string) bool {
	for _, b := range a.host.Docs.Blocks(doc) {
		if strings.Contains(b.Text, memhost.DecidedPrefix) {
			return true
		}
	}
	return false
}

// unwriteReopened turns the plan's "Decided: …" line of each reopened
// decision among ids into a "Reopened: …" line, so the plan no longer says
// it is decided (memhost.ReopenedLine). It runs off the document's
// goroutine, which called Committed.
func (a *app) unwriteReopened(doc string, ids []string) {
	var reopened []question.Record
	err := a.srv.Do(context.Background(), doc, func(au *question.Authority) error {
		for _, id := range ids {
			if rec, ok := au.Record(id); ok && rec.Status == question.Open && len(rec.History) > 0 && len(rec.Passage) > 0 {
				reopened = append(reopened, rec)
			}
		}
		return nil
	})
	if err != nil {
		a.log.Warn("plan after a reopen", "doc", doc, "err", err)
		return
	}
	for _, rec := range reopened {
		err := a.host.Docs.Update(doc, rec.Passage[0], func(text string) string {
			return memhost.ReopenedLine(text, rec, rec.History[len(rec.History)-1])
		})
		if err != nil {
			a.log.Warn("plan after a reopen", "doc", doc, "block", rec.Passage[0], "err", err)
		}
	}
	if len(reopened) > 0 {
		a.feed.notify(doc)
	}
}

// signedIn serves h to a signed-in member only: the plan and Chat are
// not for anyone who finds the address.
func (a *app) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := a.sessions.memberOf(r); !ok {
			refuse(w, http.StatusUnauthorized, "unauthorized", "sign in to read the plan")
			return
		}
		h(w, r)
	}
}

func docParam(r *http.Request) string {
	if d := r.URL.Query().Get("doc"); d != "" {
		return d
	}
	return demoDoc
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// shutdown stops the Planner's work, then the sync server, which commits
// everything it acknowledged.
func (a *app) shutdown(ctx context.Context) error {
	a.feed.close()
	a.planner.stop()
	a.desk.close()
	a.stopResearch()
	a.driver.Close()
	err := a.srv.Shutdown(ctx)
	// The last commits may have started plan updates; the plan store
	// closes after this returns.
	a.background.Wait()
	return err
}

// samplePlan is the plan document the demo starts with.
func samplePlan() []planner.Block {
	return []planner.Block{
		{ID: "b1", Kind: planner.Title, Text: "Launch plan: passwordless sign-in"},
		{ID: "b2", Kind: planner.Heading, Text: "Onboarding"},
		{ID: "b3", Kind: planner.Paragraph, Text: "New users create an account from the invitation email. The first screen asks for a display name, then shows the workspace."},
		{ID: "b4", Kind: planner.Heading, Text: "Account recovery"},
		{ID: "b5", Kind: planner.Paragraph, Text: "A user who loses their device must be able to get back in without calling support."},
		{ID: "b6", Kind: planner.Table, Text: "Channel | Cost per reset | Setup\nEmail link | none | ready\nSMS code | 4 cents | new vendor\nPasskey | none | new device"},
		{ID: "b7", Kind: planner.Heading, Text: "Rollout"},
		{ID: "b8", Kind: planner.Paragraph, Text: "Existing users switch at their next sign-in; the old password keeps working for 30 days."},
	}
}

// demoPlanner is a deterministic stand-in for the Planner: no network, no
// model. It opens decisions with open_decisions, asks one question with
// ask, and acts on the turns that carry saved answers.
type demoPlanner struct {
	app    *app
	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// runs counts the runs of each document's plan (the first is 1);
	// started holds the saved answers ("<decision>/<generation>") that
	// started one, so a repeated answer never starts another.
	runs    map[string]int
	started map[string]bool
}

// The demo's one ask, with what it means by a run, and the option that
// starts a new run.
const (
	askKey        = "new-run"
	askQuestion   = "Once these decisions are settled, should I start a new run?"
	askContext    = "A run is one pass of the Planner over the plan: it reads the plan from the top and opens a decision wherever something is still undecided."
	startRunLabel = "Start a new run"
	notYetLabel   = "Not yet"
)

func (p *demoPlanner) start(ctx context.Context, doc string) ([]planner.Opened, error) {
	rev := p.app.host.Docs.Revision(doc)
	opened, err := p.app.tools.OpenDecisions(ctx, planner.Call{Doc: doc}, []planner.CardInput{
		{Revision: rev, Key: "onboarding", Blocks: []string{"b3"}, Question: "How should onboarding work?",
			Context: "Today the first screen asks for a display name.", Response: "text", Options: []planner.Label{}},
		{Revision: rev, Key: "recovery", Blocks: []string{"b5", "b6"}, Question: "Which recovery channel should we build first?",
			Options:  []planner.Label{{Label: "Email link"}, {Label: "SMS code"}, {Label: "Passkey"}},
			Criteria: []planner.Label{{Label: "New device"}, {Label: "No new storage"}, {Label: "Easy reset"}}},
		{Revision: rev, Key: "rollout", Blocks: []string{"b8"}, Question: "What should we tell existing users?",
			Response: "text", Options: []planner.Label{}},
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel == nil {
		// The ask blocks until someone saves it, or until this turn ends
		// (10 minutes here); after that its answer starts a turn instead,
		// which onTurn handles the same way.
		actx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		p.cancel = cancel
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			asked, err := p.app.tools.Ask(actx, planner.Call{Doc: doc}, planner.AskInput{
				Key: askKey, Question: askQuestion, Context: askContext,
				Options: []planner.Label{{Label: startRunLabel}, {Label: notYetLabel}},
			})
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					p.app.log.Warn("demo ask", "err", err)
				}
				return
			}
			if asked.Answer == nil || asked.Status != "answered" {
				p.say(doc, "ask-"+asked.ID, "Planner: the question was discarded; I will not start a new run.")
				return
			}
			p.answerAsk(doc, *asked.Answer)
		}()
	}
	return opened, nil
}

// choseNewRun reports whether a saved answer chose "Start a new run".
func choseNewRun(a planner.TurnAnswer) bool {
	for _, q := range a.Questions {
		for _, c := range q.Chosen {
			if c.Label == startRunLabel {
				return true
			}
		}
	}
	return false
}

// answerAsk acts on a saved answer of the demo's ask, whether it came back
// through ask or, after the ask's turn ended, in a turn: "Start a new run"
// starts one, visibly (a Chat notice and a line in the plan); "Not yet"
// says so.
func (p *demoPlanner) answerAsk(doc string, a planner.TurnAnswer) {
	key := fmt.Sprintf("%s/%d", a.Decision, a.Generation)
	if !choseNewRun(a) {
		p.say(doc, "ask-"+key, "Planner: not starting a new run yet, as "+display(a.By)+" chose.")
		return
	}
	p.mu.Lock()
	if p.started[key] {
		p.mu.Unlock()
		return
	}
	p.started[key] = true
	if p.runs[doc] == 0 {
		p.runs[doc] = 1
	}
	p.runs[doc]++
	n := p.runs[doc]
	if err := p.savePlanner(doc); err != nil {
		p.app.log.Warn("demo run: storing the Planner's runs", "doc", doc, "err", err)
	}
	p.mu.Unlock()

	who := display(a.By)
	blocks := p.app.host.Docs.Blocks(doc)
	after := ""
	if len(blocks) > 0 {
		after = blocks[len(blocks)-1].ID
	}
	if err := p.app.host.Docs.Insert(doc, after, planner.Block{
		ID: fmt.Sprintf("run-%d", n), Kind: planner.Paragraph,
		Text: fmt.Sprintf("Run %d started: %s chose to start a new run, so the Planner reviews this plan again from the top.", n, who),
	}); err != nil {
		p.app.log.Warn("demo run", "doc", doc, "err", err)
	}
	p.say(doc, "run-"+key, fmt.Sprintf("Planner: starting run %d, as %s chose.", n, who))
}

// onTurn acts on a turn that carries saved answers: an answer to the
// demo's ask starts a run (or not); the others it acknowledges in Chat.
// Then it ends the turn. The write-ups and why drafts run as jobs.
func (p *demoPlanner) onTurn(doc string, t planner.Turn) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.app.host.Chat.Finish(doc, t.ID)
		var others int
		for _, a := range t.Answers {
			if p.isAsk(doc, a.Decision) {
				p.answerAsk(doc, a)
			} else {
				others++
			}
		}
		if others > 0 {
			p.say(doc, "reply-"+t.ID, fmt.Sprintf("Planner: thanks, I am updating the plan with %s.", plural(others, "answer", "answers")))
		}
	}()
}

// isAsk reports whether decision is the demo's ask (by its key, which
// survives a restart).
func (p *demoPlanner) isAsk(doc, decision string) bool {
	var ok bool
	_ = p.app.srv.Do(context.Background(), doc, func(a *question.Authority) error {
		rec, found := a.Record(decision)
		ok = found && rec.Key == "planner:ask:"+askKey
		return nil
	})
	return ok
}

func (p *demoPlanner) say(doc, id, text string) {
	if err := p.app.host.Chat.Post(context.Background(), doc, planner.Notice{ID: id, Text: text}); err != nil {
		p.app.log.Warn("chat", "err", err)
	}
}

func (p *demoPlanner) stop() {
	p.mu.Lock()
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// plural is "1 answer", "2 answers".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// display is a login as the page shows it: "ana" is "Ana".
func display(login string) string {
	for _, p := range personas {
		if p.Login == login {
			return p.Name
		}
	}
	if login == "" {
		return "someone"
	}
	r, n := utf8.DecodeRuneInString(login)
	return string(unicode.ToUpper(r)) + login[n:]
}

// demoWhy drafts the why of a saved answer: one plain sentence that quotes
// what the team chose or wrote ("The team chose “Passkey”, which meets
// “New device” and “No new storage”."), never a label or an answer pasted
// in as if it were part of the sentence, never a second sentence or
// Markdown (Y1), and never a reason the answer does not give: a choice
// gives the criteria the team marked its option as meeting, and nothing
// else is added.
func demoWhy(a planner.TurnAnswer) string {
	var parts []string
	for _, q := range a.Questions {
		if q.Written {
			if s := quoteClause(q.Answer, 100); s != "" {
				parts = append(parts, "settled on "+s)
			}
			continue
		}
		var labels []string
		for _, o := range q.Chosen {
			if s := quoteClause(o.Label, 60); s != "" {
				labels = append(labels, s)
			}
		}
		if len(labels) == 0 {
			continue
		}
		part := "chose " + joinAnd(labels)
		if len(q.Chosen) == 1 {
			part += meets(q.Criteria)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "The team saved this answer."
	}
	for n := len(parts); n > 0; n-- {
		if s := "The team " + joinAnd(parts[:n]) + "."; utf8.RuneCountInString(s) <= question.MaxWhy {
			return s
		}
	}
	return "The team saved this answer."
}

// meets is what the marks of a chosen option say for it (", which meets
// “A” and partly meets “B”"), or "" when none says yes or partly.
func meets(cs []planner.CriterionMark) string {
	var yes, partly []string
	for _, c := range cs {
		l := quoteClause(c.Criterion, 40)
		switch {
		case l == "":
		case c.Mark == marks.Yes:
			yes = append(yes, l)
		case c.Mark == marks.Partly:
			partly = append(partly, l)
		}
	}
	var said []string
	if len(yes) > 0 {
		said = append(said, "meets "+joinAnd(yes))
	}
	if len(partly) > 0 {
		said = append(said, "partly meets "+joinAnd(partly))
	}
	if len(said) == 0 {
		return ""
	}
	return ", which " + strings.Join(said, ", and ")
}

// quoteClause quotes the first sentence of s, at most max characters (cut
// at a word, with an ellipsis), as plain text: Markdown characters, line
// breaks and quotation marks inside become plain, and the closing end mark
// goes (the why's sentence ends it).
func quoteClause(s string, max int) string {
	rs := []rune(s)
	cut := false
	for i, r := range rs {
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		// An end mark ends the sentence unless a lowercase letter or a
		// digit follows it directly ("Node.js", "3.5").
		if i+1 == len(rs) || !(unicode.IsLower(rs[i+1]) || unicode.IsDigit(rs[i+1])) {
			cut = i+1 < len(rs) && strings.TrimSpace(string(rs[i+1:])) != ""
			rs = rs[:i]
			break
		}
	}
	t := strings.Map(func(r rune) rune {
		switch {
		case strings.ContainsRune("*_`<>[]()~#|\\", r), unicode.IsSpace(r), unicode.IsControl(r):
			return ' '
		case strings.ContainsRune("\"“”«»", r):
			return '\''
		}
		return r
	}, string(rs))
	t = strings.Trim(strings.Join(strings.Fields(t), " "), " ,;:-")
	if t == "" {
		return ""
	}
	if w := []rune(t); len(w) > max {
		t = string(w[:max])
		if i := strings.LastIndexByte(t, ' '); i > max/2 {
			t = t[:i]
		}
		t, cut = strings.TrimRight(t, " ,;:-"), true
	}
	if cut {
		t += "…"
	}
	return "“" + t + "”"
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
