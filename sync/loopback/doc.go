// Package loopback is an in-memory message connection pair for tests
// that need a WebSocket-like transport without sockets.
//
// Each end has the subset of *websocket.Conn (gorilla/websocket) that
// Accord's client and server use: ReadMessage, WriteMessage and Close.
// Messages keep their type and bytes and arrive in order. Each direction
// buffers a bounded number of messages; a writer whose peer's buffer is
// full blocks until the peer reads or either end closes, as a socket
// would.
//
// Closing one end propagates: the other end reads what was already
// buffered and then io.EOF, and its writes fail with io.ErrClosedPipe.
// The end that closed reads and writes ErrClosed.
//
// # Usage
//
//	client, server := loopback.Pipe()
//	go serve(server) // reads with server.ReadMessage, answers with WriteMessage
//	client.WriteMessage(websocket.BinaryMessage, frame)
//	typ, reply, err := client.ReadMessage()
//	client.Close() // serve's next read, after the buffered frames, is io.EOF
//
// Every method is safe for concurrent use; like a WebSocket, though, a
// connection is meant to have one reader and one writer.
package loopback
