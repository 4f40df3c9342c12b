package server

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
