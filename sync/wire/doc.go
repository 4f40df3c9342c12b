// Package wire defines the frames of Accord's sync protocol and their two
// encodings: msgpack in binary WebSocket frames and JSON in text frames,
// with one schema and the same field names.
//
// A connection opens with Hello (protocol Version) and Welcome. Requests
// (question:create, edit, submit, reopen, discard, option, criterion, why,
// expand) carry a rid; the Reply echoes kind and rid with ok true and the
// result, or ok false with the refusal's reason and message. Broadcasts
// announce committed changes. docs/PROTOCOL.md describes every kind.
//
// Decode never panics: every frame from outside is size-capped, decoded
// and checked, and anything malformed returns an error wrapping ErrFrame.
package wire
