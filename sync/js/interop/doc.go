// Package interop holds the Go ↔ JavaScript interoperability tests of the
// package @accord-crdt/client (sync/js): its automerge 3 replicas and its
// protocol client, run under Node by test/interop.mjs, against the Go
// side's documents and server.
package interop
