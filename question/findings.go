package question

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// FindingKind says what produced a finding.
type FindingKind string

// Kinds of findings (R1).
const (
	FindingResearch FindingKind = "research" // research of the web, a request the host runs
	FindingSpike    FindingKind = "spike"    // an investigation of the codebase on a paired machine
	FindingAsk      FindingKind = "ask"      // a member asked for their take
)

// FindingStatus is where a finding stands.
type FindingStatus string

// Statuses of a finding. Only a running finding changes; ready, failed and
// stopped are settled.
const (
	FindingRunning FindingStatus = "running" // the work runs, or the asked member has not answered
	FindingReady   FindingStatus = "ready"   // the work's result, or the asked member's take
	FindingFailed  FindingStatus = "failed"  // the work failed
	FindingStopped FindingStatus = "stopped" // stopped before it ended
)

// Stance is what an asked member's take says of the decision (R8).
type Stance string

// The only two stances stored, and only on ask findings.
const (
	Supports Stance = "supports"
	Objects  Stance = "objects"
)

// Source is one plain source link of a research finding.
type Source struct {
	Title string `json:"title,omitempty"`
	URL   string `json:"url"`
}

// Finding is what research, an investigation or an ask brought to a
// decision (R1). Ref names the work (the host's request or investigation
// id) or, for an ask, the asked member's login; By is who started it.
// Summary is the work's result or the asked member's take; for failed
// work, why it failed, when the host said.
type Finding struct {
	ID          string        `json:"id"`
	Kind        FindingKind   `json:"kind"`
	Status      FindingStatus `json:"status"`
	Focus       string        `json:"focus,omitempty"`
	Ref         string        `json:"ref"`
	Title       string        `json:"title,omitempty"`
	Summary     string        `json:"summary,omitempty"`
	Sources     []Source      `json:"sources,omitempty"`
	SourceCount int           `json:"sourceCount,omitempty"`
	Branch      string        `json:"branch,omitempty"`
	ChildID     string        `json:"childId,omitempty"`
	Stance      Stance        `json:"stance,omitempty"`
	By          string        `json:"by"`
	At          time.Time     `json:"at"`
	// Noticed is the status whose Chat notice was posted: a notice is due
	// while it differs from a status that has one (see NoticeDue).
	Noticed FindingStatus `json:"noticed,omitempty"`
}

// Settled reports whether the finding no longer changes.
func (f Finding) Settled() bool { return f.Status != FindingRunning }

// NoticeDue reports whether the finding's current status owes Chat a
// notice not yet posted: research or an investigation that became ready
// or failed (R3), and an ask when it is made (R8). Stops and takes post
// none. The notice is posted, then marked with MarkNoticed, so a crash in
// between posts it again under the same id (NoticeID), which Chat ignores.
func (f Finding) NoticeDue() bool {
	if f.Kind == FindingAsk {
		// An ask owes one notice, of the asking, even when the asked
		// member answered before it was posted.
		return f.Noticed == "" && (f.Status == FindingRunning || f.Status == FindingReady)
	}
	if f.Noticed == f.Status {
		return false
	}
	return f.Status == FindingReady || f.Status == FindingFailed
}

// NoticeID is the id of the Chat notice for the finding's current status:
// one per finding and status (an ask has only the one, of the asking), so
// posting it is idempotent.
func (f Finding) NoticeID() string {
	status := f.Status
	if f.Kind == FindingAsk {
		status = FindingRunning
	}
	return "finding:" + f.ID + ":" + string(status)
}

// WorkStatus is the state of host-owned work (a research request or an
// investigation) as the host reports it.
type WorkStatus string

// States of host-owned work. Ready and Finished are the results of
// research and of an investigation; the rest explain themselves.
const (
	WorkRunning   WorkStatus = "running"
	WorkReady     WorkStatus = "ready"
	WorkFinished  WorkStatus = "finished"
	WorkFailed    WorkStatus = "failed"
	WorkCancelled WorkStatus = "cancelled"
)

// Terminal reports whether the work has ended.
func (s WorkStatus) Terminal() bool {
	switch s {
	case WorkReady, WorkFinished, WorkFailed, WorkCancelled:
		return true
	}
	return false
}

// Work is what the host says of one piece of work: its state and, once it
// is ready or finished, its result. Work that failed says why in Summary,
// which the failed finding keeps.
type Work struct {
	Status      WorkStatus `json:"status"`
	Title       string     `json:"title,omitempty"`
	Summary     string     `json:"summary,omitempty"`
	Sources     []Source   `json:"sources,omitempty"`
	SourceCount int        `json:"sourceCount,omitempty"`
	Branch      string     `json:"branch,omitempty"`
	ChildID     string     `json:"childId,omitempty"`
}

// Limits of what a finding holds. What the host reports is clipped to them
// (the work's result must never be lost for being long); what a member
// sends is refused above them.
const (
	MaxFocus       = 2000  // characters of a finding's focus
	MaxTake        = 4000  // characters of an asked member's take
	MaxFindingText = 20000 // characters of a result's summary
	MaxTitle       = 300   // characters of a result's title
	MaxSources     = 50    // source links kept per finding
	MaxURL         = 2048  // characters of one source link
)

// ExploreRequest attaches started work to a decision (question:explore).
type ExploreRequest struct {
	ID    string      // the decision
	Kind  FindingKind // FindingResearch or FindingSpike
	Ref   string      // the host's request or investigation id
	Focus string      // the details the member gave, if any
}

// AskRequest asks a member for their take (Ask someone).
type AskRequest struct {
	ID     string // the decision
	Member string // the asked member's login
	Focus  string // what they are asked, if anything beyond the question
}

// TakeRequest is an asked member's answer (question:take).
type TakeRequest struct {
	ID      string // the decision
	Finding string // the ask finding
	Reply   string
	Stance  Stance // "", Supports or Objects
}

// FindingResult is what a findings command returns: the finding as
// committed, the record holding it, and whether the request repeated an
// earlier one and changed nothing.
type FindingResult struct {
	Finding  Finding
	Record   Record
	Repeated bool
}

// SettledFinding is one finding a Settle changed, with the status it had
// before, so the host can post exactly one Chat notice per change.
type SettledFinding struct {
	Decision string
	Finding  Finding
	Before   FindingStatus
}

// WorkRef names one piece of host-owned work that running findings follow.
type WorkRef struct {
	Kind FindingKind
	Ref  string
}

// CheckWork is the host's answer for a piece of work named by a member:
// it fails if the work does not exist or does not belong to this document
// (a *Refusal it returns is passed on as it is; any other error refuses
// as not_found), else it returns the work's current state.
type CheckWork func(ctx context.Context, kind FindingKind, ref string) (Work, error)

// CancelWork asks the host to stop a piece of work and returns its state
// afterwards; work that already ended, or that refuses to cancel, reports
// what it is. An error means the host could not say.
type CancelWork func(ctx context.Context, kind FindingKind, ref string) (Work, error)

// Explore attaches started work to an open decision of a top-level
// document (R2). The host's check that the work belongs to the document
// comes first; then the finding is committed, running, or settled at once
// if the work has already ended (R4). Attaching the same work again
// returns the same finding. At MaxFindings the oldest settled research or
// investigation makes room (R7).
func (a *Authority) Explore(ctx context.Context, who Member, req ExploreRequest, check CheckWork) (FindingResult, error) {
	d, r := a.target(who, req.ID)
	if r != nil {
		return FindingResult{}, r
	}
	// Work already attached answers as it did, whatever became of the
	// decision since: a request resent after its reply was lost.
	for _, f := range d.rec.Findings {
		if f.Kind == req.Kind && f.Ref == req.Ref && req.Ref != "" {
			return FindingResult{Finding: cloneFinding(f), Record: d.rec.Clone(), Repeated: true}, nil
		}
	}
	if r := a.openForResearch(d); r != nil {
		return FindingResult{}, r
	}
	if req.Kind != FindingResearch && req.Kind != FindingSpike {
		return FindingResult{}, refuse(Invalid, "work to explore is %q or %q, not %q", FindingResearch, FindingSpike, req.Kind)
	}
	if r := checkRef(req.Ref); r != nil {
		return FindingResult{}, r
	}
	focus, r := checkFindingText("focus", req.Focus, MaxFocus)
	if r != nil {
		return FindingResult{}, r
	}
	if check == nil {
		return FindingResult{}, refuse(Unavailable, "this server cannot check research or investigations")
	}
	work, err := check(ctx, req.Kind, req.Ref)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			return FindingResult{}, ref
		}
		return FindingResult{}, &Refusal{Reason: NotFound, Message: "no such " + workNoun(req.Kind) + " in this document", Err: err}
	}
	f := Finding{Kind: req.Kind, Status: FindingRunning, Focus: focus, Ref: req.Ref, By: who.Login, Noticed: FindingRunning}
	settleWith(&f, work)
	return a.addFinding(ctx, req.ID, f)
}

// Ask records a running ask finding: the decision waits for the named
// member's take (R8). Asking the same member again while they have not
// answered returns the same finding.
func (a *Authority) Ask(ctx context.Context, who Member, req AskRequest) (FindingResult, error) {
	d, r := a.researchTarget(who, req.ID)
	if r != nil {
		return FindingResult{}, r
	}
	login := strings.TrimSpace(req.Member)
	if r := checkRef(login); r != nil {
		return FindingResult{}, r
	}
	if strings.EqualFold(login, who.Login) {
		return FindingResult{}, refuse(Invalid, "ask someone other than yourself")
	}
	focus, r := checkFindingText("focus", req.Focus, MaxFocus)
	if r != nil {
		return FindingResult{}, r
	}
	for _, f := range d.rec.Findings {
		if f.Kind == FindingAsk && f.Status == FindingRunning && strings.EqualFold(f.Ref, login) {
			return FindingResult{Finding: cloneFinding(f), Record: d.rec.Clone(), Repeated: true}, nil
		}
	}
	return a.addFinding(ctx, req.ID, Finding{Kind: FindingAsk, Status: FindingRunning, Focus: focus, Ref: login, By: who.Login})
}

// Take records an asked member's answer (R6, R8): only the asked member
// (logins compare case-insensitively), only while the ask runs on an open
// decision and no implementation is active. The reply becomes the
// finding's summary; the stance, if any, is supports or objects.
func (a *Authority) Take(ctx context.Context, who Member, req TakeRequest) (FindingResult, error) {
	d, r := a.lookup(req.ID)
	if r != nil {
		return FindingResult{}, r
	}
	if a.opts.ImplementationActive(req.ID) {
		return FindingResult{}, refuse(Implementation, "an implementation of this decision is running; takes wait until it ends")
	}
	i := findingIndex(d.rec, req.Finding)
	if i < 0 {
		return FindingResult{}, refuse(NotFound, "no finding %q on this decision", req.Finding)
	}
	f := d.rec.Findings[i]
	if f.Kind != FindingAsk {
		return FindingResult{}, refuse(Invalid, "only an ask takes a member's answer")
	}
	if !strings.EqualFold(f.Ref, who.Login) {
		return FindingResult{}, refuse(Forbidden, "this ask waits for %s, not %s", f.Ref, nonEmpty(who.Login))
	}
	reply, r := checkFindingText("reply", req.Reply, MaxTake)
	if r != nil {
		return FindingResult{}, r
	}
	// The same take, resent after its reply was lost, answers as it did.
	if f.Status == FindingReady && reply != "" && f.Summary == reply && f.Stance == req.Stance {
		return FindingResult{Finding: cloneFinding(f), Record: d.rec.Clone(), Repeated: true}, nil
	}
	if d.rec.Status != Open {
		return FindingResult{}, refuse(Resolved, "the decision is %s; its asks no longer take answers", d.rec.Status)
	}
	if f.Status != FindingRunning {
		return FindingResult{}, refuse(Invalid, "this ask is %s; it no longer takes an answer", f.Status)
	}
	if reply == "" {
		return FindingResult{}, refuse(Invalid, "a take needs a reply")
	}
	if req.Stance != "" && req.Stance != Supports && req.Stance != Objects {
		return FindingResult{}, refuse(Invalid, "a stance is %q or %q, not %q", Supports, Objects, req.Stance)
	}
	return a.changeFinding(ctx, req.ID, req.Finding, func(f *Finding) {
		// The take posts no notice of its own; the asking's notice stays
		// due if it has not gone out yet (NoticeDue).
		f.Status, f.Summary, f.Stance = FindingReady, reply, req.Stance
	})
}

// ExploreStop stops a running finding (R5, R6). Only its starter may stop
// research or an investigation, and only its asker an ask. The host is
// asked to cancel the work; work that already ended, or refuses to
// cancel, still settles the finding: failed if it failed, its result if it
// completed, stopped otherwise. Stopping a settled finding changes nothing.
func (a *Authority) ExploreStop(ctx context.Context, who Member, id, finding string, cancel CancelWork) (FindingResult, error) {
	d, r := a.target(who, id)
	if r != nil {
		return FindingResult{}, r
	}
	if a.opts.ImplementationActive(id) {
		return FindingResult{}, refuse(Implementation, "an implementation of this decision is running; its findings cannot be stopped now")
	}
	i := findingIndex(d.rec, finding)
	if i < 0 {
		return FindingResult{}, refuse(NotFound, "no finding %q on this decision", finding)
	}
	f := d.rec.Findings[i]
	if f.Settled() {
		return FindingResult{Finding: cloneFinding(f), Record: d.rec.Clone(), Repeated: true}, nil
	}
	if !strings.EqualFold(f.By, who.Login) {
		if f.Kind == FindingAsk {
			return FindingResult{}, refuse(Forbidden, "only %s, who asked, can stop this ask", f.By)
		}
		return FindingResult{}, refuse(Forbidden, "only %s, who started this %s, can stop it", f.By, workNoun(f.Kind))
	}
	work := Work{Status: WorkCancelled}
	if f.Kind != FindingAsk && cancel != nil {
		got, err := cancel(ctx, f.Kind, f.Ref)
		if err != nil {
			a.opts.Logger.Warn("cannot cancel work; stopping its finding", "doc", a.opts.Doc, "decision", id, "ref", f.Ref, "err", err)
		} else {
			work = got
		}
	}
	if !work.Status.Terminal() {
		work = Work{Status: WorkCancelled}
	}
	return a.changeFinding(ctx, id, finding, func(f *Finding) {
		if settleWith(f, work); f.Status == FindingStopped {
			f.Noticed = f.Status
		}
	})
}

// PendingNotices lists the findings whose Chat notice is due (see
// NoticeDue), in creation order.
func (a *Authority) PendingNotices() []SettledFinding {
	var out []SettledFinding
	for _, id := range a.order {
		for _, f := range a.decisions[id].rec.Findings {
			if f.NoticeDue() {
				out = append(out, SettledFinding{Decision: id, Finding: cloneFinding(f), Before: f.Noticed})
			}
		}
	}
	return out
}

// MarkNoticed records that the notice of a finding's status was posted. A
// finding whose status moved on meanwhile keeps owing its new notice.
func (a *Authority) MarkNoticed(ctx context.Context, id, finding string, status FindingStatus) error {
	d, r := a.lookup(id)
	if r != nil {
		return r
	}
	i := findingIndex(d.rec, finding)
	if i < 0 || d.rec.Findings[i].Status != status || d.rec.Findings[i].Noticed == status {
		return nil
	}
	t, err := a.begin(ctx)
	if err != nil {
		return err
	}
	t.record(id).Findings[i].Noticed = status
	return t.commit(ctx)
}

// Settle settles every finding that follows the named work once the host
// reports it ended (R3, R4): running findings take its result, failure or
// stop; a failed finding whose request was retried to ready takes the
// result. It is idempotent: settling again with the same state changes
// nothing and returns nothing. Findings of every decision, open or not,
// are settled, in one commit.
func (a *Authority) Settle(ctx context.Context, kind FindingKind, ref string, work Work) ([]SettledFinding, error) {
	if !work.Status.Terminal() {
		return nil, nil
	}
	var changed []SettledFinding
	var t *txn
	for _, id := range a.order {
		d := a.decisions[id]
		for i, f := range d.rec.Findings {
			if f.Kind != kind || f.Ref != ref || kind == FindingAsk {
				continue
			}
			retried := f.Status == FindingFailed && (work.Status == WorkReady || work.Status == WorkFinished)
			if f.Status != FindingRunning && !retried {
				continue
			}
			if t == nil {
				var err error
				if t, err = a.begin(ctx); err != nil {
					return nil, err
				}
			}
			rec := t.record(id)
			before := f.Status
			settleWith(&rec.Findings[i], work)
			changed = append(changed, SettledFinding{Decision: id, Finding: cloneFinding(rec.Findings[i]), Before: before})
		}
	}
	if t == nil {
		return nil, nil
	}
	if err := t.commit(ctx); err != nil {
		return nil, err
	}
	return changed, nil
}

// WorkToCheck lists, each once, the work whose findings may still change:
// research and investigations followed by a running finding, or by a
// failed one (a failed request may be retried to ready). A sweep asks the
// host for the state of each and calls Settle for those that ended, so no
// finding waits on a missed event.
func (a *Authority) WorkToCheck() []WorkRef {
	seen := map[WorkRef]bool{}
	var out []WorkRef
	for _, id := range a.order {
		for _, f := range a.decisions[id].rec.Findings {
			w := WorkRef{Kind: f.Kind, Ref: f.Ref}
			if f.Kind == FindingAsk || f.Status != FindingRunning && f.Status != FindingFailed || seen[w] {
				continue
			}
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// researchTarget checks that who may start work on id: a writer, an open
// decision of a top-level document.
func (a *Authority) researchTarget(who Member, id string) (*decision, *Refusal) {
	d, r := a.target(who, id)
	if r != nil {
		return nil, r
	}
	if r := a.openForResearch(d); r != nil {
		return nil, r
	}
	return d, nil
}

// openForResearch checks that d is an open decision of a top-level
// document.
func (a *Authority) openForResearch(d *decision) *Refusal {
	if strings.HasPrefix(a.opts.Doc, "question:") {
		return refuse(Invalid, "a page's own decisions have no Research menu")
	}
	if d.rec.Status != Open {
		return refuse(Resolved, "the decision is %s; reopen it to research it", d.rec.Status)
	}
	return nil
}

// addFinding commits a new finding on id, making room first (R7).
func (a *Authority) addFinding(ctx context.Context, id string, f Finding) (FindingResult, error) {
	t, err := a.begin(ctx)
	if err != nil {
		return FindingResult{}, err
	}
	rec := t.record(id)
	if len(rec.Findings) >= MaxFindings {
		evict := -1
		for i, old := range rec.Findings {
			if old.Kind != FindingAsk && old.Settled() {
				evict = i
				break
			}
		}
		if evict < 0 {
			t.abort()
			return FindingResult{}, refuse(Full, "the decision holds %d findings, all running or takes; stop one first", MaxFindings)
		}
		rec.Findings = append(rec.Findings[:evict:evict], rec.Findings[evict+1:]...)
	}
	f.ID = a.opts.NewID()
	f.At = a.opts.Now()
	rec.Findings = append(rec.Findings, f)
	if err := t.commit(ctx); err != nil {
		return FindingResult{}, err
	}
	return a.findingResult(id, f.ID)
}

// changeFinding commits change applied to one finding of id.
func (a *Authority) changeFinding(ctx context.Context, id, finding string, change func(*Finding)) (FindingResult, error) {
	t, err := a.begin(ctx)
	if err != nil {
		return FindingResult{}, err
	}
	rec := t.record(id)
	change(&rec.Findings[findingIndex(rec, finding)])
	if err := t.commit(ctx); err != nil {
		return FindingResult{}, err
	}
	return a.findingResult(id, finding)
}

func (a *Authority) findingResult(id, finding string) (FindingResult, error) {
	rec, err := a.recordOrErr(id)
	if err != nil {
		return FindingResult{}, err
	}
	i := findingIndex(&rec, finding)
	if i < 0 {
		return FindingResult{}, refuse(NotFound, "no finding %q on this decision", finding)
	}
	return FindingResult{Finding: rec.Findings[i], Record: rec}, nil
}

// settleWith moves a finding to what the work's state says: its result
// when ready or finished, failed, or stopped. Running work changes nothing.
func settleWith(f *Finding, w Work) {
	switch w.Status {
	case WorkReady, WorkFinished:
		f.Status = FindingReady
		f.Title = clip(w.Title, MaxTitle)
		f.Summary = clip(w.Summary, MaxFindingText)
		f.Sources = nil
		for _, s := range w.Sources {
			if len(f.Sources) == MaxSources {
				break
			}
			if s.URL = clip(strings.TrimSpace(s.URL), MaxURL); s.URL != "" {
				f.Sources = append(f.Sources, Source{Title: clip(s.Title, MaxTitle), URL: s.URL})
			}
		}
		f.SourceCount = max(w.SourceCount, len(f.Sources))
		f.Branch = clip(w.Branch, MaxKeyLen)
		f.ChildID = clip(w.ChildID, MaxKeyLen)
	case WorkFailed:
		f.Status = FindingFailed
		f.Summary = clip(strings.TrimSpace(w.Summary), MaxFindingText)
	case WorkCancelled:
		f.Status = FindingStopped
	}
}

// clip cuts s to at most n characters, on a character boundary.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

func checkRef(ref string) *Refusal {
	if ref == "" {
		return refuse(Invalid, "the work or member to follow is missing")
	}
	if len(ref) > MaxKeyLen {
		return refuse(Invalid, "a reference is at most %d bytes", MaxKeyLen)
	}
	for _, r := range ref {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return refuse(Invalid, "a reference holds no spaces or control characters: %q", ref)
		}
	}
	return nil
}

// checkFindingText trims and checks text a member sends with a finding.
func checkFindingText(what, s string, n int) (string, *Refusal) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", refuse(Invalid, "the %s is not valid UTF-8", what)
	}
	if c := utf8.RuneCountInString(s); c > n {
		return "", refuse(Invalid, "the %s is at most %d characters; this one is %d", what, n, c)
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' {
			return "", refuse(Invalid, "the %s holds a control character", what)
		}
	}
	return s, nil
}

func findingIndex(rec *Record, id string) int {
	for i, f := range rec.Findings {
		if f.ID == id {
			return i
		}
	}
	return -1
}

func workNoun(k FindingKind) string {
	switch k {
	case FindingSpike:
		return "investigation"
	case FindingAsk:
		return "ask"
	}
	return "research request"
}
