package server

import (
	"context"
	"fmt"

	"github.com/accord-crdt/accord/question"
)

// InboxLen reports how many ops wait in the inbox of doc's goroutine, 0
// if doc is not loaded.
func InboxLen(s *Server, doc string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.docs[doc]; d != nil {
		return len(d.inbox)
	}
	return 0
}

// Park parks doc's decisions on its goroutine, as Options.ParkIdle does
// once they have been idle, whatever ParkIdle says: twice, the second
// time finding every decision unused since the first.
func Park(ctx context.Context, s *Server, doc string) error {
	s.mu.Lock()
	d := s.docs[doc]
	s.mu.Unlock()
	if d == nil {
		return fmt.Errorf("%s is not loaded", doc)
	}
	return s.Do(ctx, doc, func(*question.Authority) error {
		d.park()
		d.park()
		return nil
	})
}
