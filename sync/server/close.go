package server

// CloseDocument closes every connection of doc and unloads the document:
// its goroutine commits what it already accepted and stops, and the next
// connection or Do loads it again from the store. Clients redial. A host
// calls it when the document's state here is no longer the one to serve,
// for example when a cluster node loses the document's lease to another
// node (sync/cluster): the clients then reach the new owner, and if this
// node takes the document back it starts from the stored state rather
// than a stale one. It does not wait; work a Do had queued still runs,
// and a Do waiting for the document returns an error. Closing a document
// that is not loaded closes its connections, if any, and nothing else.
func (s *Server) CloseDocument(doc string) {
	s.mu.Lock()
	d := s.docs[doc]
	var conns []*conn
	for c := range s.conns {
		if c.docID == doc {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	if d != nil {
		// The goroutine drains and commits what it holds, then returns;
		// attach then forgets it (see forget), so that a later
		// connection loads the document afresh instead of joining one
		// that is stopping.
		d.stop()
	}
}

// forget removes d from the open documents once its goroutine has ended,
// unless another document took its place, and closes the connections
// that joined it while it was stopping (their frames would wait for ever):
// they redial and load the document afresh.
func (s *Server) forget(d *document) {
	s.mu.Lock()
	if s.docs[d.id] == d {
		delete(s.docs, d.id)
	}
	var late []*conn
	for c := range s.conns {
		if c.doc == d {
			late = append(late, c)
		}
	}
	s.mu.Unlock()
	for _, c := range late {
		c.close()
	}
}
