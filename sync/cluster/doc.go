// Package cluster lets several Accord nodes share documents through NATS
// JetStream, with one authority per document across the cluster. See
// docs/SCALING.md for the design and its failure analysis.
//
// Three parts, none of them a consensus protocol of its own: JetStream's
// replicated stream and KV bucket order, store and fence everything.
//
//   - FencedStore commits each Write only on top of the state its node
//     loaded (jetstream.Store.CommitAt at the document's head), so two
//     nodes that decided on the same state can never both commit: safety
//     does not depend on clocks or leases.
//   - Router holds, per document, a lease in a JetStream KV bucket: created
//     only if absent, renewed by compare-and-set on its revision, expired by
//     the bucket's TTL when its node stops renewing. Normally exactly one
//     node decides for a document, so fencing refusals are rare. A node
//     that loses a lease closes the connections it serves for the
//     document, so their clients redial and reach the new owner.
//   - Router forwards a client's WebSocket connection for a document it
//     does not own to the node that does (net/http/httputil's reverse
//     proxy, WebSocket upgrade included), so every client of a document
//     talks to that document's one authority and converges with the others,
//     whichever node it dialled. Router.Handler does the same for a
//     host's other per-document requests (an HTTP API, MCP).
//   - OwnerOnly runs host work (question/planner's Driver, the Planner's
//     tools) only on the node holding the document's lease; with a Chat
//     whose Accept happens once per turn id cluster-wide, each saved
//     answer is handed to the Planner exactly once, across owner crashes.
//
// # Usage
//
//	nc, _ := nats.Connect(urls)
//	js, _ := jetstream.Open(ctx, nc, &jetstream.Options{Replicas: 3})
//	store := cluster.NewFencedStore(js)
//	srv, _ := server.New(server.Options{Store: store, Authorize: authorize})
//	router, _ := cluster.New(ctx, srv, cluster.Options{
//		Conn: nc, Node: "n1", URL: "http://10.0.0.1:8080/sync", Replicas: 3,
//		Lost:     func(doc string) { store.Forget(doc); srv.CloseDocument(doc) },
//		Acquired: func(doc string) { driver.Watch(doc); driver.Poke(doc) },
//	})
//	store.RequireLease(router) // no commit for a document whose lease is elsewhere
//	owned := cluster.NewOwnerOnly(router, srv)
//	owned.Skip = planner.FromDriver // the driver's polls pass over documents held elsewhere
//	driver, _ := planner.New(planner.Options{Authorities: owned, Chat: sharedChat, ...})
//	http.Handle("/sync", router)
//	http.Handle("/api/", router.Handler(func(r *http.Request) string { return r.URL.Query().Get("doc") }, api))
//	...
//	srv.Shutdown(ctx) // commits what was accepted
//	router.Close()    // releases the leases: other nodes take over at once
package cluster
