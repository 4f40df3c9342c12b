// Package server serves Accord's sync protocol over WebSocket: an
// http.Handler that upgrades each request (?doc=<id>) with
// gorilla/websocket and routes its frames to one goroutine per open
// document, which owns that document's question.Authority.
//
// # Usage
//
//	store, _ := boltstore.Open("accord.db", nil)
//	srv, _ := server.New(server.Options{
//		Store: store,
//		Authorize: func(r *http.Request, doc string) (question.Member, error) {
//			return question.Member{Login: userOf(r), Write: canWrite(r, doc)}, nil
//		},
//	})
//	http.Handle("/sync", srv)
//	...
//	srv.Shutdown(ctx) // drains connections and commits what was accepted
//
// # Guarantees
//
// A command is decided by the document goroutine, committed to the Store
// (commands arriving together share one commit), and only then replied to
// and broadcast, in commit order: nothing is acknowledged or announced
// before it is durable, except the changes of accepted draft edits, which
// reach the other members as soon as they are decided (every holder of a
// draft change sends it again on reconnect, so a crash cannot lose it);
// a connection sees the reply to its request before any later broadcast
// about that decision. The accepted changes of one decision in one group
// travel to each connection as one question:changes frame. Joins are
// paced by the connection's drain, so a document of any size can be
// joined. Each connection has one reader and one
// writer goroutine, a read limit, ping/pong deadlines and a bounded outbox;
// a connection whose outbox fills is dropped (it resyncs by reconnecting)
// and never slows the others. Readers receive drafts and broadcasts; every
// write of theirs is refused with reason forbidden.
//
// # Limits
//
// Each connection's incoming data frames pass two token buckets, on frames
// (Options.FrameRate, FrameBurst: 50/s, bursts of 200) and on their bytes
// (ByteRate, ByteBurst: 1 MiB/s, bursts of twice ReadLimit). A frame over
// them is held by the connection's reader until the bucket refills, so a
// flood waits in its own socket, not in the document's queue, and the
// other members are decided as before; a connection that stays over its
// rates for longer than Options.MaxThrottle (5 s) is closed with WebSocket
// close code 1008 and the reason "rate limit: more than N frames/s" (or
// bytes/s). It is over them until its buckets have refilled to what they
// gain in a second, not merely until one frame passes without waiting.
// Options.MaxMemberConnections (32 per login) and MaxDocumentConnections
// (1024 per document) refuse the upgrade past them with HTTP 429 and 503,
// as MaxConnections and MaxDocuments do with 503.
// Zero takes these defaults; a negative value turns a limit off.
// docs/PROTOCOL.md, "Rate and connection limits", tells clients what to
// expect.
//
// # The host
//
// Options.Host is the application around the engine, one interface whose
// methods the document goroutines call: whether a decision's
// implementation runs, creating a page's channel (question:expand), the
// state of research and investigations a finding follows, who can be
// asked, and the notices of a member's join, a changed finding and each
// durable commit. NopHost is every method's default; a host embeds it and
// defines only the methods it needs (see Host).
//
// # Operating it
//
// Stats reports connections, open documents, commits, frames, refusals,
// slow-consumer drops, throttled frames, rate closes and upgrades refused
// by a cap; with Options.Registerer the same and more (frames by kind,
// refusals by reason, commit group sizes and latency, outbox depth,
// catch-up bytes, rate closes and refused upgrades by limit) are
// Prometheus collectors named accord_sync_*. Reauthorize and Revoke apply a member's changed rights to
// their live connections; Host.Committed names the decisions each commit
// group wrote.
package server
