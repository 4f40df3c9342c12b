package main

// Demo personas (R9): with personas enabled, the roster's members can be
// asked for their take like anyone else, and answer by themselves, as
// themselves, through the same question.Authority.Take a member's
// question:take reaches: a fixed reply and stance per persona, a short
// delay after the ask.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
)

// demoPersona is a member of the demo roster: not a person who signs in,
// a voice that answers when asked.
type demoPersona struct {
	Login  string
	Name   string
	Reply  string
	Stance question.Stance
}

// demoRoster's replies name the question they answer (%s).
var demoRoster = []demoPersona{
	{Login: "demo:lily", Name: "Lily", Stance: question.Supports,
		Reply: "From support's side, on “%s”: this works. It is what people ask us for, and it leaves us less to explain."},
	{Login: "demo:omar", Name: "Omar", Stance: question.Objects,
		Reply: "On “%s”, I would hold off: it adds something security has not reviewed yet, and what we have today covers the first month."},
}

// personaDesk answers the asks put to the roster. Its one goroutine scans
// the documents it is poked for, keeps when each running persona ask is
// due, and answers it then; Close stops it. Asks found again after a
// restart are answered the same way.
type personaDesk struct {
	srv     *server.Server
	log     *slog.Logger
	delay   time.Duration
	enabled bool

	mu   sync.Mutex
	docs map[string]bool          // documents to scan
	due  map[personaAsk]time.Time // asks waiting for their persona
	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

type personaAsk struct {
	doc, decision, finding, login string
}

func newPersonaDesk(o demoOptions, log *slog.Logger) *personaDesk {
	return &personaDesk{log: log, delay: o.PersonaDelay, enabled: o.Personas,
		docs: map[string]bool{}, due: map[personaAsk]time.Time{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// roster is the personas that can be asked: none when disabled.
func (p *personaDesk) roster() []demoPersona {
	if p == nil || !p.enabled {
		return nil
	}
	return demoRoster
}

// persona returns the roster's persona with the login, if enabled.
func (p *personaDesk) persona(login string) *demoPersona {
	for i, r := range p.roster() {
		if strings.EqualFold(r.Login, login) {
			return &p.roster()[i]
		}
	}
	return nil
}

// start runs the desk's goroutine on srv.
func (p *personaDesk) start(srv *server.Server) {
	p.srv = srv
	go p.run()
}

// poke asks for a scan of doc; it never blocks.
func (p *personaDesk) poke(doc string) {
	if p == nil || !p.enabled || strings.HasPrefix(doc, "question:") {
		return
	}
	p.mu.Lock()
	p.docs[doc] = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *personaDesk) close() {
	if p.srv == nil {
		return
	}
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *personaDesk) run() {
	defer close(p.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-p.stop
		cancel()
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-timer.C:
		}
		p.scan(ctx)
		next := p.answer(ctx)
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		} else {
			timer.Reset(time.Hour)
		}
	}
}

// scan finds the running asks of the poked documents that wait for a
// persona.
func (p *personaDesk) scan(ctx context.Context) {
	p.mu.Lock()
	docs := p.docs
	p.docs = map[string]bool{}
	p.mu.Unlock()
	for doc := range docs {
		var found []personaAsk
		err := p.srv.Do(ctx, doc, func(a *question.Authority) error {
			for _, r := range a.Records() {
				if r.Status != question.Open {
					continue
				}
				for _, f := range r.Findings {
					if f.Kind == question.FindingAsk && f.Status == question.FindingRunning && p.persona(f.Ref) != nil {
						found = append(found, personaAsk{doc, r.ID, f.ID, p.persona(f.Ref).Login})
					}
				}
			}
			return nil
		})
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("personas: cannot read the asks", "doc", doc, "err", err)
			}
			continue
		}
		p.mu.Lock()
		for _, k := range found {
			if _, ok := p.due[k]; !ok {
				p.due[k] = time.Now().Add(p.delay)
			}
		}
		p.mu.Unlock()
	}
}

// answer takes every due ask as its persona and returns when the next one
// is due (zero if none).
func (p *personaDesk) answer(ctx context.Context) time.Time {
	var next time.Time
	now := time.Now()
	p.mu.Lock()
	var ready []personaAsk
	for k, at := range p.due {
		if !at.After(now) {
			ready = append(ready, k)
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	p.mu.Unlock()
	for _, k := range ready {
		who := p.persona(k.login)
		err := p.srv.Do(ctx, k.doc, func(a *question.Authority) error {
			asked := "this"
			if rec, ok := a.Record(k.decision); ok && len(rec.Definition.Questions) > 0 {
				asked = clipRunes(rec.Definition.Questions[0].Text, 120)
			}
			_, err := a.Take(ctx, question.Member{Login: who.Login, Write: true},
				question.TakeRequest{ID: k.decision, Finding: k.finding, Reply: fmt.Sprintf(who.Reply, asked), Stance: who.Stance})
			return err
		})
		if err != nil && ctx.Err() == nil {
			// The ask was stopped, the decision settled meanwhile: nothing
			// to answer any more.
			p.log.Info("personas: ask not answered", "persona", who.Login, "decision", k.decision, "err", err)
		}
		p.mu.Lock()
		delete(p.due, k)
		p.mu.Unlock()
	}
	return next
}
