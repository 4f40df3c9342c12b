package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/delivery"
	"github.com/accord-crdt/accord/question/delivery/memhost"
	"github.com/accord-crdt/accord/question/research"
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
	driver  *delivery.Driver
	tools   *delivery.Tools
	planner *demoPlanner
	plan    *planStore // plan.db: the plan and Chat (plan_store.go)

	research *researchHost     // research.go
	watcher  *research.Watcher // research.go
	desk     *personaDesk      // personas.go
}

func newApp(store persist.Store, log *slog.Logger, demo demoOptions) (*app, error) {
	a := &app{log: log, host: memhost.New()}
	demo.setDefaults()
	var err error
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

	a.srv, err = server.New(server.Options{
		Store:  store,
		Logger: log,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			login := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("member")))
			for _, p := range personas {
				if p.Login == login {
					return question.Member{Login: p.Login, Write: p.Write}, nil
				}
			}
			return question.Member{}, server.ErrUnauthorized
		},
		Committed: func(doc string, _ []string) {
			if a.driver != nil {
				a.driver.Poke(doc)
			}
		},
		Research:        a.research,
		KnownMember:     a.knownMember,
		FindingsChanged: a.findingsChanged,
		Opened:          a.opened,
		EnsureChannel:   a.ensurePage,
	})
	if err != nil {
		return nil, err
	}
	opts := delivery.Options{Authorities: a.srv, Logger: log}
	a.host.Wire(&opts)
	if a.driver, err = delivery.New(opts); err != nil {
		return nil, err
	}
	a.host.Runtime.OnChange(func(doc string) {
		if doc == "" {
			a.driver.PokeAll()
			return
		}
		a.driver.Poke(doc)
	})
	if a.tools, err = delivery.NewTools(delivery.ToolsOptions{Authorities: a.srv, Document: a.host.Docs}); err != nil {
		return nil, err
	}
	a.planner = &demoPlanner{app: a}
	a.host.Chat.OnTurn(a.planner.onTurn)
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
	var cards []delivery.Placement
	err := a.srv.Do(ctx, doc, func(auth *question.Authority) error {
		for _, r := range auth.Records() {
			p := delivery.Placement{Decision: r.ID}
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
	mux.HandleFunc("GET /api/session", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"doc": demoDoc, "members": personas})
	})
	mux.HandleFunc("GET /api/plan", func(w http.ResponseWriter, r *http.Request) {
		doc := docParam(r)
		type block struct {
			ID       string `json:"id"`
			Kind     string `json:"kind"`
			Text     string `json:"text,omitempty"`
			Decision string `json:"decision,omitempty"`
			Link     string `json:"link,omitempty"`
		}
		out := struct {
			Revision string  `json:"revision"`
			Blocks   []block `json:"blocks"`
		}{Revision: a.host.Docs.Revision(doc), Blocks: []block{}}
		for _, b := range a.host.Docs.Blocks(doc) {
			kind := string(b.Kind)
			if b.Kind == delivery.Card {
				kind = "decision"
			}
			out.Blocks = append(out.Blocks, block{ID: b.ID, Kind: kind, Text: b.Text, Decision: b.Decision, Link: b.Link})
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /api/chat", func(w http.ResponseWriter, r *http.Request) {
		type notice struct {
			ID    string `json:"id"`
			Text  string `json:"text"`
			Quiet bool   `json:"quiet,omitempty"` // a failure's notice (research.go)
		}
		out := struct {
			Notices []notice `json:"notices"`
		}{Notices: []notice{}}
		for _, n := range a.host.Chat.Notices(docParam(r)) {
			out.Notices = append(out.Notices, notice{ID: n.ID, Text: n.Text, Quiet: n.Quiet})
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("POST /api/demo/start", func(w http.ResponseWriter, r *http.Request) {
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
	a.planner.stop()
	a.desk.close()
	a.stopResearch()
	a.driver.Close()
	return a.srv.Shutdown(ctx)
}

// samplePlan is the plan document the demo starts with.
func samplePlan() []delivery.Block {
	return []delivery.Block{
		{ID: "b1", Kind: delivery.Title, Text: "Launch plan: passwordless sign-in"},
		{ID: "b2", Kind: delivery.Heading, Text: "Onboarding"},
		{ID: "b3", Kind: delivery.Paragraph, Text: "New users create an account from the invitation email. The first screen asks for a display name, then shows the workspace."},
		{ID: "b4", Kind: delivery.Heading, Text: "Account recovery"},
		{ID: "b5", Kind: delivery.Paragraph, Text: "A user who loses their device must be able to get back in without calling support."},
		{ID: "b6", Kind: delivery.Table, Text: "Channel | Cost per reset | Setup\nEmail link | none | ready\nSMS code | 4 cents | new vendor\nPasskey | none | new device"},
		{ID: "b7", Kind: delivery.Heading, Text: "Rollout"},
		{ID: "b8", Kind: delivery.Paragraph, Text: "Existing users switch at their next sign-in; the old password keeps working for 30 days."},
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
}

func (p *demoPlanner) start(ctx context.Context, doc string) ([]delivery.Opened, error) {
	rev := p.app.host.Docs.Revision(doc)
	opened, err := p.app.tools.OpenDecisions(ctx, delivery.Call{Doc: doc}, []delivery.CardInput{
		{Revision: rev, Key: "onboarding", Blocks: []string{"b3"}, Question: "How should onboarding work?",
			Context: "Today the first screen asks for a display name.", Response: "text", Options: []delivery.Label{}},
		{Revision: rev, Key: "recovery", Blocks: []string{"b5", "b6"}, Question: "Which recovery channel should we build first?",
			Options:  []delivery.Label{{Label: "Email link"}, {Label: "SMS code"}, {Label: "Passkey"}},
			Criteria: []delivery.Label{{Label: "New device"}, {Label: "No new storage"}, {Label: "Easy reset"}}},
		{Revision: rev, Key: "rollout", Blocks: []string{"b8"}, Question: "What should we tell existing users?",
			Response: "text", Options: []delivery.Label{}},
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel == nil {
		// The ask blocks until someone saves it, or until this turn ends
		// (10 minutes here); after that its answer starts a turn instead.
		actx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		p.cancel = cancel
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			asked, err := p.app.tools.Ask(actx, delivery.Call{Doc: doc}, delivery.AskInput{
				Key: "new-run", Question: "Should I start a new run once these are settled?",
				Options: []delivery.Label{{Label: "Start a new run"}, {Label: "Not yet"}},
			})
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					p.app.log.Warn("demo ask", "err", err)
				}
				return
			}
			p.say(doc, "ask-"+asked.ID, "Planner: "+askReply(asked))
		}()
	}
	return opened, nil
}

func askReply(a delivery.Asked) string {
	if a.Answer == nil || a.Status != "answered" {
		return "the question was discarded; I will not start a new run."
	}
	for _, q := range a.Answer.Questions {
		for _, c := range q.Chosen {
			if c.Label == "Start a new run" {
				return "starting a new run, as " + a.Answer.By + " chose."
			}
		}
	}
	return "not starting a new run yet."
}

// onTurn acts on a turn that carries saved answers: it acknowledges them
// in Chat and ends the turn. The write-ups and why drafts run as jobs.
func (p *demoPlanner) onTurn(doc string, t delivery.Turn) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.say(doc, "turn-"+t.ID, fmt.Sprintf("Planner: thanks, I am updating the plan with %d answer(s).", len(t.Answers)))
		p.app.host.Chat.Finish(doc, t.ID)
	}()
}

func (p *demoPlanner) say(doc, id, text string) {
	if err := p.app.host.Chat.Post(context.Background(), doc, delivery.Notice{ID: id, Text: text}); err != nil {
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
