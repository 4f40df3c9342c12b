package main

// The demo's research host: research requests and investigations that a
// member starts through the host's own routes, run by a deterministic fake
// (no network, no model) that really runs asynchronously. The findings
// they produce live on the decisions' records (package question); this
// host only owns the work, as question/planner/research.Host describes it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner/research"
)

// demoOptions configures the demo's research host and personas. The zero
// value of a delay means its default.
type demoOptions struct {
	// Dir is the data folder; the research host keeps its work there, so
	// a restart finds the work it was running.
	Dir string
	// ResearchDelay is how long research takes before it is ready or
	// fails (default 4 s); InvestigationDelay how long an investigation
	// runs (default 6 s).
	ResearchDelay, InvestigationDelay time.Duration
	// Personas enables the demo roster (demo:lily, demo:omar), who can be
	// asked and answer by themselves after PersonaDelay (default 3 s).
	Personas     bool
	PersonaDelay time.Duration
	// Cluster, when its NATS is set, makes the server a cluster node
	// (cluster.go).
	Cluster clusterOptions
	// TrustMemberParam takes the member from ?member= of requests that
	// carry no session (ACCORD_TRUST_MEMBER_PARAM=1): anyone can act as
	// anyone. Only for load tools on a machine you control.
	TrustMemberParam bool
	// SessionKey, in hex, signs sign-in links and sessions instead of the
	// key kept in the data folder (ACCORD_SESSION_KEY): every node of a
	// cluster needs the same (shareSecrets gives it the cluster's).
	SessionKey string
	// MCPToken is the MCP endpoint's bearer token when set (a cluster's,
	// shareSecrets); else mcpToken decides.
	MCPToken string
	// Differs holds why this node's configured secrets disagree with its
	// cluster's, by secret ("session key", "MCP token"): the node then
	// refuses what the secret guards rather than fail quietly.
	Differs map[string]string
	// crashOnStop makes the end of serveDemo a crash as the cluster sees
	// it (tests only): the NATS connection drops before anything is
	// handed off.
	crashOnStop bool
	// NoLimits turns off the sync server's per-connection rates and its
	// cap on connections per member (ACCORD_SYNC_LIMITS=off): for load
	// tools that write as fast as they can from many connections of one
	// member, never for people.
	NoLimits bool
	// DemoLinks lists the demo members' sign-in links to anyone who asks
	// (GET /api/session, the page): ACCORD_DEMO_LINKS=1, or a server
	// listening on a loopback address (serveDemo), which only this
	// machine reaches. Anywhere else a link would let a stranger in as a
	// writer, so only the operator hands them out.
	DemoLinks bool
}

// demoFromEnv reads the demo's options from the environment (main.go
// documents the variables).
func demoFromEnv(dir string) demoOptions {
	o := demoOptions{Dir: dir, Personas: os.Getenv("ACCORD_PERSONAS") != "0", TrustMemberParam: os.Getenv("ACCORD_TRUST_MEMBER_PARAM") == "1", SessionKey: os.Getenv("ACCORD_SESSION_KEY"), NoLimits: os.Getenv("ACCORD_SYNC_LIMITS") == "off", DemoLinks: os.Getenv("ACCORD_DEMO_LINKS") == "1"}
	for _, v := range []struct {
		key string
		to  *time.Duration
	}{{"ACCORD_RESEARCH_DELAY", &o.ResearchDelay}, {"ACCORD_INVESTIGATION_DELAY", &o.InvestigationDelay}, {"ACCORD_PERSONA_DELAY", &o.PersonaDelay}} {
		if d, err := time.ParseDuration(os.Getenv(v.key)); err == nil && d > 0 {
			*v.to = d
		}
	}
	return o
}

func (o *demoOptions) setDefaults() {
	if o.ResearchDelay <= 0 {
		o.ResearchDelay = 4 * time.Second
	}
	if o.InvestigationDelay <= 0 {
		o.InvestigationDelay = 6 * time.Second
	}
	if o.PersonaDelay <= 0 {
		o.PersonaDelay = 3 * time.Second
	}
}

// pairedMachines says which demo members have a paired machine online, on
// which an investigation of the codebase runs: Ana has one, Ben has none.
var pairedMachines = map[string]bool{"ana": true}

// job is one piece of work the host runs, as it keeps it on disk.
type job struct {
	ID       string               `json:"id"`
	Kind     question.FindingKind `json:"kind"`
	Doc      string               `json:"doc"`
	Decision string               `json:"decision,omitempty"`
	Focus    string               `json:"focus,omitempty"`
	// Question is the decision's first question when the work started:
	// with the focus, it picks what the work comes back with.
	Question string        `json:"question,omitempty"`
	By       string        `json:"by"`
	Started  time.Time     `json:"started"`
	Due      time.Time     `json:"due"`
	Work     question.Work `json:"work"`
}

// researchHost implements research.Host, and the sync server's Work and
// CancelWork (appHost). Its work is kept in a JSON file in the data
// folder, rewritten on every change. Each running job has a timer; Close
// stops them and waits for any that is firing. Work whose time came while
// the server was down is ended when the file is loaded, without an event:
// the event was missed, and the research.Watcher's sweep, when a member
// opens the document, settles its findings (R4).
type researchHost struct {
	log               *slog.Logger
	path              string
	delay, spikeDelay time.Duration
	changed           func(doc string, kind question.FindingKind, ref string, w question.Work)
	mu                sync.Mutex
	jobs              map[string]*job
	next              int
	timers            map[string]*time.Timer
	running, closed   bool // run was called; Close was called
	firing            sync.WaitGroup
}

func newResearchHost(o demoOptions, log *slog.Logger) (*researchHost, error) {
	h := &researchHost{log: log, delay: o.ResearchDelay, spikeDelay: o.InvestigationDelay,
		jobs: map[string]*job{}, timers: map[string]*time.Timer{}}
	if o.Dir != "" {
		h.path = filepath.Join(o.Dir, "research.json")
	}
	if err := h.load(); err != nil {
		return nil, err
	}
	return h, nil
}

// run sets the function told of every state change (the Watcher's
// Changed) and resumes the timers of the work loaded from the file. Until
// it is called no timer runs, so nothing needs stopping if the server
// fails to start.
func (h *researchHost) run(changed func(doc string, kind question.FindingKind, ref string, w question.Work)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changed, h.running = changed, true
	now := time.Now()
	for _, j := range h.jobs {
		if j.Work.Status == question.WorkRunning && h.timers[j.ID] == nil {
			h.arm(j, max(j.Due.Sub(now), 0))
		}
	}
}

type savedJobs struct {
	Next int    `json:"next"`
	Jobs []*job `json:"jobs"`
}

func (h *researchHost) load() error {
	if h.path == "" {
		return nil
	}
	data, err := os.ReadFile(h.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var s savedJobs
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("research work in %s: %w", h.path, err)
	}
	h.next = s.Next
	now := time.Now()
	ended := 0
	for _, j := range s.Jobs {
		h.jobs[j.ID] = j
		if j.Work.Status != question.WorkRunning {
			continue
		}
		if !j.Due.After(now) {
			j.Work = result(j) // ended while the server was down; its event is lost
			ended++
		}
	}
	if ended > 0 {
		return h.save()
	}
	return nil
}

// save writes the work to its file, through a temporary file so a crash
// leaves the old one or the new one. Called with h.mu held.
func (h *researchHost) save() error {
	if h.path == "" {
		return nil
	}
	s := savedJobs{Next: h.next, Jobs: make([]*job, 0, len(h.jobs))}
	for i := 1; i <= h.next; i++ {
		if j := h.jobs[jobID(i)]; j != nil {
			s.Jobs = append(s.Jobs, j)
		}
	}
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, h.path)
}

func jobID(n int) string { return fmt.Sprintf("work-%d", n) }

// start runs new work for a member and returns its id.
func (h *researchHost) start(kind question.FindingKind, doc, decision, questionText, focus, by string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return "", errors.New("the server is shutting down")
	}
	h.next++
	d := h.delay
	if kind == question.FindingSpike {
		d = h.spikeDelay
	}
	now := time.Now()
	j := &job{ID: jobID(h.next), Kind: kind, Doc: doc, Decision: decision, Question: questionText, Focus: focus, By: by,
		Started: now.UTC(), Due: now.Add(d).UTC(), Work: question.Work{Status: question.WorkRunning}}
	h.jobs[j.ID] = j
	if err := h.save(); err != nil {
		delete(h.jobs, j.ID)
		h.next--
		return "", err
	}
	if h.running {
		h.arm(j, d)
	}
	return j.ID, nil
}

// arm starts j's timer. Called with h.mu held.
func (h *researchHost) arm(j *job, d time.Duration) {
	id := j.ID
	h.timers[id] = time.AfterFunc(d, func() {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		h.firing.Add(1)
		defer h.firing.Done()
		delete(h.timers, id)
		j := h.jobs[id]
		if j == nil || j.Work.Status != question.WorkRunning {
			h.mu.Unlock()
			return
		}
		j.Work = result(j)
		h.end(j)
	})
}

// end saves j's new state and tells the watcher. Called with h.mu held;
// it unlocks.
func (h *researchHost) end(j *job) {
	if err := h.save(); err != nil {
		h.log.Warn("research: cannot save work; the next sweep finds it", "id", j.ID, "err", err)
	}
	fn, doc, kind, id, w := h.changed, j.Doc, j.Kind, j.ID, j.Work
	h.mu.Unlock()
	if fn != nil {
		fn(doc, kind, id, w)
	}
}

// Work reports one piece of work of doc (research.Host).
func (h *researchHost) Work(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j := h.jobs[ref]
	if j == nil || j.Doc != doc || j.Kind != kind {
		return question.Work{}, &question.Refusal{Reason: question.NotFound, Message: "no such " + kindNoun(kind) + " in this document"}
	}
	return j.Work, nil
}

// Cancel stops running work; ended work reports what it is.
func (h *researchHost) Cancel(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error) {
	h.mu.Lock()
	j := h.jobs[ref]
	if j == nil || j.Doc != doc || j.Kind != kind {
		h.mu.Unlock()
		return question.Work{}, &question.Refusal{Reason: question.NotFound, Message: "no such " + kindNoun(kind) + " in this document"}
	}
	if j.Work.Status != question.WorkRunning {
		w := j.Work
		h.mu.Unlock()
		return w, nil
	}
	if t := h.timers[ref]; t != nil {
		t.Stop()
		delete(h.timers, ref)
	}
	j.Work = question.Work{Status: question.WorkCancelled}
	w := j.Work
	h.end(j)
	return w, nil
}

// Close stops every timer and waits for one that is firing. Running work
// stays running in the file and resumes after a restart.
func (h *researchHost) Close() {
	h.mu.Lock()
	h.closed = true
	for id, t := range h.timers {
		t.Stop()
		delete(h.timers, id)
	}
	h.mu.Unlock()
	h.firing.Wait()
}

// questionText is the first question of a decision, or "" if there is
// none to read.
func (a *app) questionText(ctx context.Context, doc, decision string) string {
	var text string
	a.srv.Do(ctx, doc, func(au *question.Authority) error {
		if rec, ok := au.Record(decision); ok && len(rec.Definition.Questions) > 0 {
			text = rec.Definition.Questions[0].Text
		}
		return nil
	})
	return text
}

func kindNoun(k question.FindingKind) string {
	if k == question.FindingSpike {
		return "investigation"
	}
	return "research request"
}

// result is what a job deterministically ends with: work whose focus
// mentions "fail" fails, saying why; other research is ready with a title,
// a summary and sources chosen by the focus's words; an investigation
// finishes on a branch named after its focus.
func result(j *job) question.Work {
	focus := strings.TrimSpace(j.Focus)
	low := strings.ToLower(focus)
	if strings.Contains(low, "fail") {
		why := "The demo's research service turned this request down: it fails every request whose details mention “fail”. Start it again with other details."
		if j.Kind == question.FindingSpike {
			why = "The paired machine turned this investigation down: the demo fails every investigation whose details mention “fail”. Start it again with other details."
		}
		return question.Work{Status: question.WorkFailed, Summary: why}
	}
	if j.Kind == question.FindingSpike {
		return question.Work{
			Status: question.WorkFinished,
			Title:  "Investigation: " + clipRunes(orDefault(focus, "how the code does it today"), 80),
			Summary: "Read the sign-in and account packages on the paired machine. The session code already " +
				"separates proving who someone is from starting their session, so a new channel plugs in " +
				"beside the password check without touching the workspace screens.",
			Branch: "spike/" + slug(orDefault(focus, j.ID)),
		}
	}
	t := pickTopic(low + "\n" + strings.ToLower(j.Question))
	title := t.title
	if title == "" {
		title = "What the web says about “" + clipRunes(orDefault(j.Question, orDefault(focus, "this decision")), 60) + "”"
	}
	return question.Work{Status: question.WorkReady, Title: title, Summary: t.summary,
		Sources: t.sources, SourceCount: len(t.sources) + t.more}
}

type topic struct {
	words   []string
	title   string
	summary string
	sources []question.Source
	more    int // sources read but not linked
}

var topics = []topic{
	{words: []string{"passkey", "webauthn", "device"}, title: "Passkeys for account recovery",
		summary: "Passkeys synced by the platform survive a lost phone on most current devices; recovery still needs a second path for people with a single, lost device. Adoption guides recommend keeping an email link as that path.",
		sources: []question.Source{{Title: "Web Authentication Level 3", URL: "https://www.w3.org/TR/webauthn-3/"},
			{Title: "passkeys.dev: account recovery", URL: "https://passkeys.dev/docs/reference/terms/"}}, more: 3},
	{words: []string{"sms", "phone", "text message"}, title: "SMS codes as a recovery channel",
		summary: "NIST treats SMS as a restricted authenticator because numbers can be ported or intercepted; services that keep it add a waiting period and a notice to the old channel.",
		sources: []question.Source{{Title: "NIST SP 800-63B, 5.1.3.3", URL: "https://pages.nist.gov/800-63-3/sp800-63b.html"},
			{Title: "OWASP Multifactor Authentication Cheat Sheet", URL: "https://cheatsheetseries.owasp.org/cheatsheets/Multifactor_Authentication_Cheat_Sheet.html"}}, more: 2},
	{words: []string{"onboarding", "invitation", "display name", "first screen", "sign up", "signup"}, title: "First-run onboarding from an invitation",
		summary: "Onboarding guides recommend letting an invited person in straight from the invitation link, asking only for what the first screen needs (a display name), and deferring the rest until it is used.",
		sources: []question.Source{{Title: "NN/g: Onboarding tutorials vs. contextual help", URL: "https://www.nngroup.com/articles/onboarding-tutorials/"},
			{Title: "GOV.UK Design System: question pages", URL: "https://design-system.service.gov.uk/patterns/question-pages/"}}, more: 2},
	{words: []string{"rollout", "existing users", "switch", "announce", "tell"}, title: "Moving existing users to a new sign-in",
		summary: "Teams that moved people to passwordless sign-in announced it ahead, switched each person at their next sign-in and kept the old path working for a few weeks, with a notice on every sign-in that still used it.",
		sources: []question.Source{{Title: "FIDO Alliance: passkey deployment guidance", URL: "https://fidoalliance.org/passkeys/"},
			{Title: "OWASP Authentication Cheat Sheet", URL: "https://cheatsheetseries.owasp.org/cheatsheets/Authentication_Cheat_Sheet.html"}}, more: 3},
	{words: []string{"recovery", "reset", "locked out", "lost"}, title: "Account recovery paths",
		summary: "Most sign-in guides recommend an email link as the baseline recovery path, with short-lived single-use tokens, and a passkey as the stronger path once people have one.",
		sources: []question.Source{{Title: "OWASP Forgot Password Cheat Sheet", URL: "https://cheatsheetseries.owasp.org/cheatsheets/Forgot_Password_Cheat_Sheet.html"},
			{Title: "OWASP Authentication Cheat Sheet", URL: "https://cheatsheetseries.owasp.org/cheatsheets/Authentication_Cheat_Sheet.html"}}, more: 4},
	// Anything else: titled after the question (see result).
	{words: []string{}, summary: "The guides found weigh the same things as the plan: what people must do on their first try, what support has to explain, and what security has to review.",
		sources: []question.Source{{Title: "OWASP Authentication Cheat Sheet", URL: "https://cheatsheetseries.owasp.org/cheatsheets/Authentication_Cheat_Sheet.html"}}, more: 2},
}

func pickTopic(low string) topic {
	for _, t := range topics {
		for _, w := range t.words {
			if strings.Contains(low, w) {
				return t
			}
		}
	}
	return topics[len(topics)-1]
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// slug makes a branch name's last part: lower-case letters and digits
// joined by dashes, at most 40 bytes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	out := b.String()
	if len(out) > 40 {
		out = strings.TrimRight(out[:40], "-")
	}
	if out == "" {
		return "investigation"
	}
	return out
}

// ---- wiring ----

// startResearch starts the research watcher once the sync server exists:
// it settles findings as work ends, sweeps when members open documents and
// posts each Chat notice once.
func (a *app) startResearch() error {
	w, err := research.New(research.Options{Authorities: a.srv, Host: a.research, Chat: a.host.Chat, Logger: a.log})
	if err != nil {
		return err
	}
	a.watcher = w
	a.research.run(w.Changed)
	w.Poke(demoDoc) // the document opens: settle what ended while the server was down
	return nil
}

// stopResearch stops the work's timers and the watcher, before the sync
// server shuts down.
func (a *app) stopResearch() {
	a.research.Close()
	if a.watcher != nil {
		a.watcher.Close()
	}
}

// pokeFindings wakes the research watcher and the persona desk for doc
// (appHost.FindingsChanged, appHost.Opened); it never blocks.
func (a *app) pokeFindings(doc string) {
	if a.watcher != nil {
		a.watcher.Poke(doc)
	}
	a.desk.poke(doc)
}

// workRequest is the body of POST /api/research and /api/investigations.
type workRequest struct {
	Doc      string `json:"doc"`
	Decision string `json:"decision,omitempty"`
	Focus    string `json:"focus,omitempty"`
}

func (a *app) researchRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/research", func(w http.ResponseWriter, r *http.Request) {
		a.startWork(w, r, question.FindingResearch)
	})
	mux.HandleFunc("POST /api/investigations", func(w http.ResponseWriter, r *http.Request) {
		a.startWork(w, r, question.FindingSpike)
	})
	// The people the page can ask and whether each has a paired machine
	// online (Investigate the codebase is disabled without one).
	mux.HandleFunc("GET /api/roster", a.signedIn(func(w http.ResponseWriter, r *http.Request) {
		type entry struct {
			Login   string `json:"login"`
			Name    string `json:"name"`
			Write   bool   `json:"write"`
			Machine bool   `json:"machine"`
			Persona bool   `json:"persona,omitempty"`
		}
		out := struct {
			Members []entry `json:"members"`
		}{}
		for _, p := range personas {
			out.Members = append(out.Members, entry{Login: p.Login, Name: p.Name, Write: p.Write, Machine: pairedMachines[p.Login]})
		}
		for _, p := range a.desk.roster() {
			out.Members = append(out.Members, entry{Login: p.Login, Name: p.Name, Persona: true})
		}
		writeJSON(w, out)
	}))
}

// startWork is the host's route that starts research or an investigation:
// only a writer of the document, an investigation only on a paired machine
// that is online. The page then attaches the work with question:explore.
func (a *app) startWork(w http.ResponseWriter, r *http.Request, kind question.FindingKind) {
	refuse := func(status int, reason, msg string) {
		w.WriteHeader(status)
		writeJSON(w, map[string]string{"reason": reason, "error": msg})
	}
	who, ok := a.sessions.memberOf(r)
	if !ok {
		refuse(http.StatusUnauthorized, "unauthorized", "sign in to start research")
		return
	}
	var req workRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		refuse(http.StatusBadRequest, "invalid", "the body is not JSON: "+err.Error())
		return
	}
	if req.Doc == "" {
		req.Doc = demoDoc
	}
	req.Focus = strings.TrimSpace(req.Focus)
	switch {
	case !who.Write:
		refuse(http.StatusForbidden, "forbidden", who.Name+" can read this plan but not start research")
		return
	case strings.HasPrefix(req.Doc, "question:"):
		refuse(http.StatusBadRequest, "invalid", "a page's own decisions have no Research menu")
		return
	case !utf8.ValidString(req.Focus) || utf8.RuneCountInString(req.Focus) > question.MaxFocus:
		refuse(http.StatusBadRequest, "invalid", fmt.Sprintf("the details are at most %d characters", question.MaxFocus))
		return
	case kind == question.FindingSpike && !pairedMachines[who.Login]:
		refuse(http.StatusConflict, "no_machine", who.Name+" has no paired machine online")
		return
	}
	id, err := a.research.start(kind, req.Doc, req.Decision, a.questionText(r.Context(), req.Doc, req.Decision), req.Focus, who.Login)
	if err != nil {
		refuse(http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	writeJSON(w, map[string]string{"id": id})
}
