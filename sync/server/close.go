package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Close codes of a document's connections closed by the server so that
// their clients reconnect (and, in a cluster, reach the document's owner).
const (
	// CloseMoved (1012, service restart) closes the connections of a
	// document handed to another node or unloaded by its host.
	CloseMoved = websocket.CloseServiceRestart
	// CloseCommitFailed (1013, try again later) closes the connections of
	// a document whose commit failed: the state they saw may not be the
	// store's, and in a cluster the document may have another owner.
	CloseCommitFailed = websocket.CloseTryAgainLater
)

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
	s.closeDocument(doc, CloseMoved, "reconnect: the document moved")
}

// HandOff is CloseDocument that waits, bounded by ctx, until the document
// has committed what it accepted and stopped: a cluster node hands a
// document to another node (releasing its lease) only once nothing it
// accepted is left to commit here.
//
// Unlike CloseDocument it stops the document before closing its
// connections: the replies of what it accepted go out first (forget
// closes the connections after them), so that a handoff acknowledges
// what it committed rather than leaving its outcome unknown.
func (s *Server) HandOff(ctx context.Context, doc string) error {
	s.mu.Lock()
	d := s.docs[doc]
	s.mu.Unlock()
	if d != nil {
		d.stop()
		select {
		case <-d.ended:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Connections still upgrading, or that attached to nothing.
	s.closeDocument(doc, CloseMoved, "reconnect: the document moved")
	// Returned only once every connection has written its last replies
	// and its close frame: the host may close the sockets next (a
	// cluster's Router does, as it releases the lease), and a client
	// that read the close redials at once, where one cut off waits out
	// its backoff and never hears its replies.
	s.mu.Lock()
	var writing []*conn
	for c := range s.conns {
		if c.docID == doc && c.doc != nil { // its write pump runs
			writing = append(writing, c)
		}
	}
	s.mu.Unlock()
	for _, c := range writing {
		select {
		case <-c.writeDone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *Server) closeDocument(doc string, code int, reason string) *document {
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
		c.closeWith(code, reason)
	}
	if d != nil {
		// The goroutine drains and commits what it holds, then returns;
		// attach then forgets it (see forget), so that a later
		// connection loads the document afresh instead of joining one
		// that is stopping.
		d.stop()
	}
	return d
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
		c.closeWith(CloseMoved, "reconnect: the document moved")
	}
	close(d.ended)
}

// Close codes of a refused connection, for a client that asked for them
// with refuse=close in the upgrade's query (docs/PROTOCOL.md, "Refusals as
// close codes"): a browser's WebSocket hides the HTTP status of a refused
// upgrade, so such a client gets the upgrade, then at once a close frame
// with one of these codes and the refusal as its reason. Retrying does
// not change any of them. Without refuse=close the upgrade is refused
// with the HTTP status (401, 403, 404), as the Go client expects.
const (
	// CloseUnauthorized (4401): Options.Authorize returned ErrUnauthorized.
	CloseUnauthorized = 4401
	// CloseForbidden (4403): Authorize refused with another error.
	CloseForbidden = 4403
	// CloseUnknownDocument (4404): Authorize returned ErrUnknownDocument.
	CloseUnknownDocument = 4404
	// CloseVersion (4426): the hello's protocol version is not the
	// server's (after the error frame with reason "version").
	CloseVersion = 4426
)

// refuseByClose upgrades r and closes the connection at once with code
// and reason (at most the 123 bytes a close frame holds), waiting briefly
// for the client's close so that the client reads the code.
func (s *Server) refuseByClose(w http.ResponseWriter, r *http.Request, code int, reason string) {
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer ws.Close()
	if len(reason) > 123 {
		reason = strings.ToValidUTF8(reason[:123], "") // never half a character
	}
	deadline := time.Now().Add(time.Second)
	if ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), deadline) != nil {
		return
	}
	ws.SetReadDeadline(deadline)
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
	}
}
