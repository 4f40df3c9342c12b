package main

// The Planner's tools over MCP (docs/MCP.md): an AI agent connects to
// /mcp?doc=plan-1 with streamable HTTP and the bearer token printed at
// start (kept in the data folder, or ACCORD_MCP_TOKEN), opens decisions in the sample plan, edits
// it, and receives the answers people save through await_answers. While
// an agent takes a document's turns the demo Planner leaves them to it.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/sync/mcp"
)

// withMCP serves the MCP endpoint at /mcp beside hs's handler, prints how
// to reach it, and ends blocking MCP calls when hs shuts down.
func (a *app) withMCP(hs *http.Server, addr string, log *slog.Logger, out io.Writer) error {
	token := a.mcpToken
	if token == "" {
		var err error
		if token, err = mcpToken(a.sessions.dir); err != nil {
			return err
		}
	}
	var tokens map[string][]string
	if docs := os.Getenv("ACCORD_MCP_DOCS"); docs != "" {
		tokens = map[string][]string{token: strings.Split(docs, ",")}
		token = ""
	}
	tools, err := planner.NewTools(planner.ToolsOptions{Authorities: a.srv, Document: a.host.Docs, Editor: a.host.Docs, Turns: a.host.Chat})
	if err != nil {
		return err
	}
	opts := mcp.Options{
		Tools: mcpTools(tools), Instructions: planner.AgentInstructions,
		Token: token, Tokens: tokens, OnAwait: a.driver.Poke, Logger: log,
		// The documents are the plans the host holds: the sample plan and
		// those plan.db restored. Any other id is a mistake to report, not
		// an empty plan to serve.
		Exists: a.host.Docs.Has,
		// The page says while an agent answers as the Planner (chatView).
		OnHold: a.holdChanged, SessionTimeout: mcpHold,
	}
	if d, err := time.ParseDuration(os.Getenv("ACCORD_MCP_PROGRESS")); err == nil && d > 0 {
		opts.ProgressInterval = d
	}
	h, err := mcp.NewHandler(opts)
	if err != nil {
		return err
	}
	a.mcp = h
	// An agent that awaits a document's answers runs its turns; the demo
	// Planner runs them otherwise.
	a.host.Chat.OnTurn(func(doc string, t planner.Turn) {
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
	if a.mcpDiffers != "" {
		fmt.Fprintf(out, "MCP is refused on this node: %s\n", a.mcpDiffers)
		return nil
	}
	fmt.Fprintf(out, "MCP (streamable HTTP): http://%s/mcp?doc=%s with header \"Authorization: Bearer %s\"\n", addr, demoDoc, token)
	return nil
}

// mcpTools are the Planner's tools as MCP serves them: each acts on the
// session's document; ask and await_answers wait for people (Long), and
// an agent calling await_answers takes the document's turns (Holds), so
// that the demo Planner leaves them to it.
func mcpTools(tools *planner.Tools) []mcp.Tool {
	defs := tools.Definitions()
	out := make([]mcp.Tool, len(defs))
	for i, d := range defs {
		out[i] = mcp.Tool{
			Name: d.Name, Description: d.Description, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema,
			Long: d.Long, Holds: d.TakesTurns,
			Call: func(ctx context.Context, doc string, args json.RawMessage) (any, error) {
				return d.Handle(ctx, planner.Call{Doc: doc}, args)
			},
		}
	}
	return out
}

// refusingMCP is next, except on a cluster node whose MCP token differs
// from the cluster's: there /mcp is refused with the reason, before any
// request is forwarded to a document's owner, since the token this node
// printed would work nowhere else.
func (a *app) refusingMCP(next http.Handler, log *slog.Logger) http.Handler {
	why := a.mcpDiffers
	if why == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			next.ServeHTTP(w, r)
			return
		}
		log.Warn("MCP refused: this node's token differs from the cluster's", "why", why, "remote", r.RemoteAddr)
		http.Error(w, "this server does not serve MCP: "+why, http.StatusServiceUnavailable)
	})
}

// agentJSON tells the page that an agent answers as the Planner of a
// document (Chat's "agent"), so that people know why the demo Planner is
// silent: it leaves the turns to the agent while an await_answers call
// waits, and for HoldMinutes after the agent's last call.
type agentJSON struct {
	Waiting     bool   `json:"waiting"`
	Until       string `json:"until,omitempty"` // RFC 3339; absent while Waiting
	HoldMinutes int    `json:"holdMinutes"`
}

// agentView is doc's agentJSON, nil when no agent holds its turns.
func (a *app) agentView(doc string) *agentJSON {
	if a.mcp == nil {
		return nil
	}
	hold, ok := a.mcp.Hold(doc)
	if !ok {
		return nil
	}
	out := &agentJSON{Waiting: hold.Waiting, HoldMinutes: int(mcpHold / time.Minute)}
	if !hold.Waiting {
		out.Until = hold.Until.UTC().Format(time.RFC3339)
	}
	return out
}

// mcpHold is how long an agent keeps a document's turns after its last
// await_answers call (the MCP session timeout).
const mcpHold = 30 * time.Minute

// holdChanged pushes Chat to doc's pages when an agent's hold on its
// turns changes, and again when the hold ends unless the agent calls
// before: one timer a document, moved at each call.
func (a *app) holdChanged(doc string) {
	a.feed.notify(doc)
	hold, ok := a.mcp.Hold(doc)
	if !ok || hold.Waiting {
		return
	}
	a.holdMu.Lock()
	defer a.holdMu.Unlock()
	if a.holdEnds == nil {
		a.holdEnds = map[string]*time.Timer{}
	}
	if t := a.holdEnds[doc]; t != nil {
		t.Reset(time.Until(hold.Until))
		return
	}
	a.holdEnds[doc] = time.AfterFunc(time.Until(hold.Until), func() { a.feed.notify(doc) })
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
