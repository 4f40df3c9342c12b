package planner

import (
	"context"
	"sync"

	"github.com/accord-crdt/accord/question"
)

// Authorities gives the package access to each document's decision
// authority, which is not safe for concurrent use.
//
// Contract: Do runs fn on the authority of doc, serialized with every
// other command of that document, and returns fn's error. Every commit fn
// makes must be durable when Do returns (a host that pipelines commits
// flushes them first). A host that wakes the Driver after commands (see
// Driver.Poke) should skip calls for which FromDriver(ctx) is true.
type Authorities interface {
	Do(ctx context.Context, doc string, fn func(a *question.Authority) error) error
}

type driverKey struct{}

// FromDriver reports whether ctx belongs to a call the Driver makes itself.
func FromDriver(ctx context.Context) bool {
	v, _ := ctx.Value(driverKey{}).(bool)
	return v
}

func driverContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, driverKey{}, true)
}

// Local is an Authorities that opens each document's authority on first
// use and serializes calls with a mutex per document. It suits an embedded
// host whose store commits durably (boltstore, memstore).
type Local struct {
	open func(ctx context.Context, doc string) (*question.Authority, error)

	mu      sync.Mutex
	docs    map[string]*localDoc
	changed func(doc string)
}

type localDoc struct {
	mu sync.Mutex
	a  *question.Authority
}

var _ Authorities = (*Local)(nil)

// NewLocal returns a Local that opens authorities with open.
func NewLocal(open func(ctx context.Context, doc string) (*question.Authority, error)) *Local {
	return &Local{open: open, docs: map[string]*localDoc{}}
}

// OnChange sets fn to run after every Do that the Driver did not make
// itself, e.g. Driver.Poke, so saves and reopens wake the driver.
func (l *Local) OnChange(fn func(doc string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changed = fn
}

// Do runs fn on doc's authority, opening it first if needed.
func (l *Local) Do(ctx context.Context, doc string, fn func(a *question.Authority) error) error {
	l.mu.Lock()
	d := l.docs[doc]
	if d == nil {
		d = &localDoc{}
		l.docs[doc] = d
	}
	changed := l.changed
	l.mu.Unlock()
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.a == nil {
			a, err := l.open(ctx, doc)
			if err != nil {
				return err
			}
			d.a = a
		}
		return fn(d.a)
	}()
	if changed != nil && !FromDriver(ctx) {
		changed(doc)
	}
	return err
}
