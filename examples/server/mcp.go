package main

// The Planner's tools over MCP (docs/MCP.md): an AI agent connects to
// /mcp?doc=plan-1 with streamable HTTP and the bearer token printed at
// start (kept in the data folder, or ACCORD_MCP_TOKEN), opens decisions in the sample plan, edits
// it, and receives the answers people save through await_answers. While
// an agent takes a document's turns the demo Planner leaves them to it.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/accord-crdt/accord/question/delivery"
	"github.com/accord-crdt/accord/sync/mcp"
)

// withMCP serves the MCP endpoint at /mcp beside hs's handler, prints how
// to reach it, and ends blocking MCP calls when hs shuts down.
func (a *app) withMCP(hs *http.Server, addr string, log *slog.Logger, out io.Writer) error {
	token, err := mcpToken(a.sessions.dir)
	if err != nil {
		return err
	}
	var tokens map[string][]string
	if docs := os.Getenv("ACCORD_MCP_DOCS"); docs != "" {
		tokens = map[string][]string{token: strings.Split(docs, ",")}
		token = ""
	}
	tools, err := delivery.NewTools(delivery.ToolsOptions{Authorities: a.srv, Document: a.host.Docs, Editor: a.host.Docs})
	if err != nil {
		return err
	}
	h, err := mcp.NewHandler(mcp.Options{Tools: tools, Turns: a.host.Chat, Token: token, Tokens: tokens, OnAwait: a.driver.Poke, Logger: log})
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
	for t := range tokens {
		token = t
	}
	fmt.Fprintf(out, "MCP (streamable HTTP): http://%s/mcp?doc=%s with header \"Authorization: Bearer %s\"\n", addr, demoDoc, token)
	return nil
}

// mcpToken returns ACCORD_MCP_TOKEN, or else the token kept in
// dir/mcp.token, made on first start, so that agents keep working across
// restarts.
func mcpToken(dir string) (string, error) {
	if t := os.Getenv("ACCORD_MCP_TOKEN"); t != "" {
		return t, nil
	}
	path := filepath.Join(dir, "mcp.token")
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	t := rand.Text()
	if err := writeFileAtomic(path, []byte(t+"\n")); err != nil {
		return "", fmt.Errorf("MCP token: %w", err)
	}
	return t, nil
}
