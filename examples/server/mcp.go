package main

// The Planner's tools over MCP (docs/MCP.md): an AI agent connects to
// /mcp?doc=plan-1 with streamable HTTP and the bearer token printed at
// start (or ACCORD_MCP_TOKEN), opens decisions in the sample plan, edits
// it, and receives the answers people save through await_answers. While
// an agent takes a document's turns the demo Planner leaves them to it.

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/accord-crdt/accord/question/delivery"
	"github.com/accord-crdt/accord/sync/mcp"
)

// withMCP serves the MCP endpoint at /mcp beside hs's handler, prints how
// to reach it, and ends blocking MCP calls when hs shuts down.
func (a *app) withMCP(hs *http.Server, addr string, log *slog.Logger, out io.Writer) error {
	token := os.Getenv("ACCORD_MCP_TOKEN")
	if token == "" {
		token = rand.Text()
	}
	tools, err := delivery.NewTools(delivery.ToolsOptions{Authorities: a.srv, Document: a.host.Docs, Editor: a.host.Docs})
	if err != nil {
		return err
	}
	h, err := mcp.NewHandler(mcp.Options{Tools: tools, Turns: a.host.Chat, Token: token, OnAwait: a.driver.Poke, Logger: log})
	if err != nil {
		return err
	}
	// An agent that awaits a document's answers runs its turns; the demo
	// Planner runs them otherwise.
	a.host.Chat.OnTurn(func(doc string, t delivery.Turn) {
		if !h.Attached(doc) {
			a.planner.onTurn(doc, t)
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/", hs.Handler)
	hs.Handler = mux
	hs.RegisterOnShutdown(func() { h.Close() })
	fmt.Fprintf(out, "MCP (streamable HTTP): http://%s/mcp?doc=%s with header \"Authorization: Bearer %s\"\n", addr, demoDoc, token)
	return nil
}
