package memhost

import (
	"context"
	"strings"
	"sync"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// Members holds each document's members and every captured Planner
// session. Logins compare case-insensitively. It is safe for concurrent use.
type Members struct {
	mu       sync.Mutex
	members  map[string]map[string]question.Member
	sessions map[string]planner.Session
}

// NewMembers returns no members.
func NewMembers() *Members {
	return &Members{members: map[string]map[string]question.Member{}, sessions: map[string]planner.Session{}}
}

// Add makes m a member of doc (again, with its write access).
func (m *Members) Add(doc string, who question.Member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.members[doc] == nil {
		m.members[doc] = map[string]question.Member{}
	}
	m.members[doc][strings.ToLower(who.Login)] = who
}

// Remove takes login out of doc.
func (m *Members) Remove(doc, login string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.members[doc], strings.ToLower(login))
}

// Capture records a captured Planner session for login.
func (m *Members) Capture(login string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[strings.ToLower(login)] = planner.Session{Login: login, Token: "session-" + strings.ToLower(login)}
}

// Drop forgets login's captured session.
func (m *Members) Drop(login string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, strings.ToLower(login))
}

// Member implements planner.Members.
func (m *Members) Member(ctx context.Context, doc, login string) (question.Member, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	who, ok := m.members[doc][strings.ToLower(login)]
	return who, ok, ctx.Err()
}

// Session implements planner.Members.
func (m *Members) Session(ctx context.Context, doc, login string) (planner.Session, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[strings.ToLower(login)]
	return s, ok, ctx.Err()
}
