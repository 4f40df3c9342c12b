// Package mcp serves tools over the Model Context Protocol (streamable
// HTTP, github.com/modelcontextprotocol/go-sdk), so that a real AI agent
// can act on a document: the host hands it the Tools it serves, each with
// a name, a description, the JSON schemas of its input and result, and
// what a call does. The Planner's tools (question/planner's
// Tools.Definitions: read_plan, open_decisions, ask, await_answers and the
// rest) are served this way by a host that turns each ToolDef into a Tool
// (examples/server does).
//
// Every result is a JSON object, sent both as text and as structured
// content, and every tool declares its result's schema (outputSchema,
// "type": "object"): MCP requires structured content to be an object, and
// clients such as the official TypeScript SDK refuse anything else, even
// for a call whose effect (cards opened, say) already happened. A Tool
// whose schemas are not of objects fails NewHandler, so a host finds out
// at start rather than an agent later.
//
// # Holding a document
//
// A Tool marked Holds is how an agent takes a document's work (the
// Planner's await_answers, which waits for the next turn): while a call
// of it runs the agent holds the document (Handler.Hold, Waiting), and
// after it returns for the session timeout, while the agent works on what
// it got. A host runs that work itself only while no agent holds it
// (Attached), and hears of each change through Options.OnHold. A call
// the client cancels returns at once, its tool's context cancelled.
//
// # Long calls
//
// A Tool marked Long blocks until people act, which takes minutes.
// Clients time a request out (the TypeScript SDK after 60 seconds) unless
// progress resets the clock, so a call of it whose request carries a
// progress token gets a progress notification every ProgressInterval
// while it runs; the client opts in (TypeScript: onprogress and
// resetTimeoutOnProgress). Handler.Close ends every call that still runs,
// with a tool error saying the server is shutting down.
//
// # Sessions
//
// One session acts on one document, named by the request that opens it.
// It belongs to the bearer token that opened it: a request naming the
// session (its Mcp-Session-Id) under any other token is refused with 403
// and served nothing, whatever documents that token may reach, so a
// session id that leaks does not carry one token's rights over to
// another. A host serving without tokens has nothing to bind sessions to.
//
// With Options.Exists, a request naming a document the host does not
// hold is refused (404) rather than served as an empty one, so a
// mistyped ?doc= says so. A request without a bearer token and one with
// a token that is not valid are refused (401) in words of their own.
//
// # Usage
//
//	h, err := mcp.NewHandler(mcp.Options{Tools: tools, Token: token})
//	mux.Handle("/mcp", h) // the agent connects to /mcp?doc=plan-1 with "Authorization: Bearer <token>"
//	defer h.Close()
//
// Bad tool input (not matching the schema, unknown fields, refused by the
// tool) gets a tool error naming the field, never a protocol error or a
// crash; so does a tool that panics or returns something that is not a
// JSON object. A *question.Refusal a tool returns reaches the agent as
// its reason and message (Refused).
package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/question"
)

// Tool is one tool a Handler serves.
type Tool struct {
	Name        string
	Description string
	// InputSchema and OutputSchema are the JSON schemas of the tool's
	// input and of its result, each of an object ("type": "object"), as
	// MCP requires.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Long marks a call that waits for people, minutes at a time: it hears
	// progress (see Long calls in the package documentation).
	Long bool
	// Holds marks a call by which the agent takes the document's work
	// (see Holding a document in the package documentation).
	Holds bool
	// Call runs the tool on document doc, once args was checked against
	// InputSchema; it decodes args strictly itself. Its result must
	// encode as a JSON object matching OutputSchema; a *question.Refusal
	// it returns reaches the agent as a tool error with its reason. ctx
	// ends when the client cancels the call or the Handler closes.
	Call func(ctx context.Context, doc string, args json.RawMessage) (any, error)
}

// Options configures a Handler. Tools is required.
type Options struct {
	// Tools are the tools served, on every document.
	Tools []Tool
	// Instructions, if set, returns what a session on doc is told first
	// (MCP's instructions).
	Instructions func(doc string) string
	// Token is the bearer token every request must carry; "" (with no
	// Tokens) serves without authentication (tests, a loopback-only host
	// that checks elsewhere).
	Token string
	// Tokens are more bearer tokens, each limited to the documents it
	// lists (an empty list: any document). A request carrying one for
	// another document is refused with 403. A session belongs to the
	// token that opened it (see Sessions in the package documentation).
	Tokens map[string][]string
	// Doc picks the document a session acts on from its first request;
	// nil reads the "doc" query parameter. An error refuses the session.
	Doc func(r *http.Request) (string, error)
	// Exists, if set, reports whether the host holds document doc. A
	// request naming one it does not (a session's too, once its document
	// went away) is refused with 404, so that a mistyped document id is
	// not served as an empty document. Nil: every document exists.
	Exists func(doc string) bool
	// OnAwait runs when a call of a Holds tool starts for doc, e.g. the
	// Planner's Driver.Poke, so that work waiting for an agent starts now.
	OnAwait func(doc string)
	// OnHold runs when an agent's hold on doc changes (Hold): a call of a
	// Holds tool started or returned. A host that shows who holds a
	// document reads Hold then. It must not block.
	OnHold func(doc string)
	// SessionTimeout closes sessions idle that long, and is how long an
	// agent holds a document after its last call of a Holds tool returned;
	// zero means 30 minutes.
	SessionTimeout time.Duration
	// ProgressInterval is how often a tool call that is still running
	// sends a progress notification, when its request carries a progress
	// token; zero means 15 seconds, well inside the 60 seconds after which
	// the TypeScript SDK times a request out; negative sends none.
	ProgressInterval time.Duration
	// Logger receives diagnostics; nil discards them. A request refused
	// for a bearer token that is not valid, or for a document the token
	// may not act on, is logged at warn with the document; the SDK's
	// sessions coming and going only at debug.
	Logger *slog.Logger
}

// defaultProgress is ProgressInterval's default.
const defaultProgress = 15 * time.Second

// Handler serves the tools over streamable HTTP. It is safe for
// concurrent use.
type Handler struct {
	opts    Options
	tools   []tool
	http    http.Handler
	ctx     context.Context
	stop    context.CancelFunc
	mu      sync.Mutex
	servers map[string]*sdk.Server
	waiting map[string]int
	last    map[string]time.Time // when a call of a Holds tool last started or returned
}

// NewHandler returns a Handler.
func NewHandler(opts Options) (*Handler, error) {
	if len(opts.Tools) == 0 {
		return nil, errors.New("mcp: Options.Tools is required")
	}
	if err := checkTokens(opts); err != nil {
		return nil, err
	}
	if opts.Doc == nil {
		opts.Doc = func(r *http.Request) (string, error) {
			if d := r.URL.Query().Get("doc"); d != "" {
				return d, nil
			}
			return "", errors.New("name the document: ?doc=<id>")
		}
	}
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = defaultProgress
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{opts: opts, servers: map[string]*sdk.Server{}, waiting: map[string]int{}, last: map[string]time.Time{}}
	h.ctx, h.stop = context.WithCancel(context.Background())
	// The tools are checked once here, so a bad schema fails the host at
	// start rather than an agent later.
	var err error
	if h.tools, err = checkTools(opts.Tools); err != nil {
		return nil, err
	}
	// The SDK logs every session's comings and goings at info, three
	// lines a connection; they are debug here, so the host's log keeps
	// what needs an operator.
	h.http = sdk.NewStreamableHTTPHandler(h.server, &sdk.StreamableHTTPOptions{
		Logger: sdkLogger(opts.Logger), SessionTimeout: opts.SessionTimeout, PropagateRequestCancellation: true,
	})
	if opts.Token != "" || len(opts.Tokens) > 0 {
		// ServeHTTP has checked the token by then; this only names it to
		// the SDK, which binds each session to the name it opened with
		// and refuses (403) a request on the session under another.
		h.http = auth.RequireBearerToken(tokenOwner, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h.http)
	}
	return h, nil
}

// checkTokens refuses bearer tokens that cannot travel in an
// Authorization header as one word: the SDK, which binds sessions to
// tokens, reads the header's second word.
func checkTokens(opts Options) error {
	for tok := range opts.Tokens {
		if strings.ContainsFunc(tok, unicode.IsSpace) {
			return errors.New("mcp: a token of Options.Tokens holds a space")
		}
	}
	if strings.ContainsFunc(opts.Token, unicode.IsSpace) {
		return errors.New("mcp: Options.Token holds a space")
	}
	return nil
}

// tokenOwner names the token a request carries, as the SDK binds a
// session to it: by its SHA-256, so the session table holds no token.
func tokenOwner(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	return &auth.TokenInfo{UserID: hex.EncodeToString(sum[:])}, nil
}

// sdkLogger is the host's logger as the SDK gets it: its records below
// warn are debug, tagged as the SDK's.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(demoted{l.Handler()}).With("component", "mcp-sdk")
}

// demoted passes on its handler's records from warn up as they are, and
// those below as debug.
type demoted struct{ slog.Handler }

func (d demoted) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn {
		l = slog.LevelDebug
	}
	return d.Handler.Enabled(ctx, l)
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level = slog.LevelDebug
	}
	return d.Handler.Handle(ctx, r)
}

func (d demoted) WithAttrs(as []slog.Attr) slog.Handler { return demoted{d.Handler.WithAttrs(as)} }

func (d demoted) WithGroup(name string) slog.Handler { return demoted{d.Handler.WithGroup(name)} }

// The refusals of a bearer token: a request without one, and one whose
// token is not any the host accepts, which the log also records (a
// client configured with an old token, or someone guessing).
var (
	errTokenMissing = errors.New("a bearer token is required")
	errTokenInvalid = errors.New("the bearer token is not valid")
)

// ServeHTTP checks the bearer token and the document, then serves MCP.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	docs, err := h.authorized(r)
	if err != nil {
		challenge := `Bearer realm="accord"`
		if err == errTokenInvalid {
			// RFC 6750: a token that was sent but refused is invalid_token.
			challenge += `, error="invalid_token"`
			doc, _ := h.opts.Doc(r)
			h.opts.Logger.Warn("mcp bearer token not valid", "doc", doc, "remote", r.RemoteAddr)
		}
		w.Header().Set("WWW-Authenticate", challenge)
		refuse(w, r, http.StatusUnauthorized, err.Error())
		return
	}
	doc, err := h.opts.Doc(r)
	if err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if len(docs) > 0 && !slices.Contains(docs, doc) {
		h.opts.Logger.Warn("mcp token used beyond its documents", "doc", doc, "remote", r.RemoteAddr)
		refuse(w, r, http.StatusForbidden, fmt.Sprintf("this token may not act on document %q", doc))
		return
	}
	if !h.exists(doc) {
		refuse(w, r, http.StatusNotFound, noDocument(doc))
		return
	}
	h.http.ServeHTTP(w, r)
}

func (h *Handler) exists(doc string) bool { return h.opts.Exists == nil || h.opts.Exists(doc) }

func noDocument(doc string) string {
	return fmt.Sprintf("there is no document %q here: check the document id (?doc=)", doc)
}

// refuse answers a request the handler will not serve. A JSON-RPC
// request (a POST naming an id) gets a JSON-RPC error carrying msg, which
// clients such as the Go SDK's show to their user, where a plain body
// would come out as the bare status ("Not Found"); anything else gets msg
// as text.
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if r.Method == http.MethodPost {
		var req struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if json.Unmarshal(body, &req) == nil && req.JSONRPC == "2.0" && req.Method != "" && len(req.ID) > 0 && string(req.ID) != "null" {
			raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": refusedCode, "message": msg}})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(raw)
			return
		}
	}
	http.Error(w, msg, status)
}

// refusedCode is the JSON-RPC error code of a refused request, one of
// those the specification leaves to servers.
const refusedCode = -32001

// authorized reports whether r carries an accepted bearer token, and the
// documents that token is limited to (nil: any); the error says whether
// the token was missing or not valid.
func (h *Handler) authorized(r *http.Request) (docs []string, err error) {
	if h.opts.Token == "" && len(h.opts.Tokens) == 0 {
		return nil, nil
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return nil, errTokenMissing
	}
	found := false
	if h.opts.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(h.opts.Token)) == 1 {
		found = true
	}
	// Every token is compared, so the time taken does not tell which
	// one came close.
	for tok, limit := range h.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1 {
			found, docs = true, limit
		}
	}
	if !found {
		return nil, errTokenInvalid
	}
	return docs, nil
}

// Close ends every call that still runs (those of Long and Holds tools
// above all) with a tool error saying the server is shutting down.
func (h *Handler) Close() error {
	h.stop()
	return nil
}

// Awaiting reports whether a call of a Holds tool runs for doc (the
// Planner's await_answers waits for doc's next turn): a host under a
// remote harness counts the agent as attached then.
func (h *Handler) Awaiting(doc string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting[doc] > 0
}

// Attached reports whether an agent holds doc: a call of a Holds tool
// runs, or one returned within the session timeout (the agent is working
// on what it got). A host runs that work itself only while none does.
func (h *Handler) Attached(doc string) bool {
	_, ok := h.Hold(doc)
	return ok
}

// Hold is an agent's hold on a document, as Handler.Hold reports it, so
// that a host can tell its people who does the work (who answers as the
// Planner).
type Hold struct {
	// Waiting is true while a call of a Holds tool runs; the agent holds
	// the document as long as it does.
	Waiting bool
	// Until is when the hold ends unless the agent calls again: when its
	// last call of a Holds tool returned plus the session timeout. Zero
	// while Waiting.
	Until time.Time
}

// Hold reports whether an agent holds doc (Attached), and how.
// Options.OnHold says when it changes; a host that shows Until arranges
// to look again then.
func (h *Handler) Hold(doc string) (Hold, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting[doc] > 0 {
		return Hold{Waiting: true}, true
	}
	last, ok := h.last[doc]
	if until := last.Add(h.opts.SessionTimeout); ok && time.Now().Before(until) {
		return Hold{Until: until}, true
	}
	return Hold{}, false
}

func (h *Handler) touch(doc string, delta int) {
	h.mu.Lock()
	h.waiting[doc] += delta
	h.last[doc] = time.Now()
	h.mu.Unlock()
	if h.opts.OnHold != nil {
		h.opts.OnHold(doc)
	}
}

// tool is one served tool and the schema its input is validated
// against.
type tool struct {
	Tool
	schema *jsonschema.Resolved
}

// objectSchema checks that raw is a JSON schema of an object, as MCP
// requires of input and output schemas alike.
func objectSchema(name, which string, raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("mcp: %s schema of %s: %w", which, name, err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("mcp: %s schema of %s: the type is %q, not \"object\"", which, name, s.Type)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s schema of %s: %w", which, name, err)
	}
	return rs, nil
}

// checkTools resolves each tool's input schema, refusing a tool without
// a name or a call, a name served twice, and schemas that are not of
// objects.
func checkTools(tools []Tool) ([]tool, error) {
	out := make([]tool, 0, len(tools))
	seen := map[string]bool{}
	for _, t := range tools {
		switch {
		case t.Name == "" || t.Call == nil:
			return nil, fmt.Errorf("mcp: a tool needs a name and a Call (%q)", t.Name)
		case seen[t.Name]:
			return nil, fmt.Errorf("mcp: tool %s is served twice", t.Name)
		}
		seen[t.Name] = true
		rs, err := objectSchema(t.Name, "input", t.InputSchema)
		if err != nil {
			return nil, err
		}
		if _, err := objectSchema(t.Name, "output", t.OutputSchema); err != nil {
			return nil, err
		}
		out = append(out, tool{Tool: t, schema: rs})
	}
	return out, nil
}

// server returns the MCP server of the request's document, one per
// document, made on first use.
func (h *Handler) server(r *http.Request) *sdk.Server {
	doc, err := h.opts.Doc(r)
	if err != nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.servers[doc]; s != nil {
		return s
	}
	so := &sdk.ServerOptions{Logger: sdkLogger(h.opts.Logger).With("doc", doc)}
	if h.opts.Instructions != nil {
		so.Instructions = h.opts.Instructions(doc)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "accord", Title: "Accord decisions", Version: "1"}, so)
	for _, t := range h.tools {
		s.AddTool(&sdk.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}, h.handle(doc, t))
	}
	h.servers[doc] = s
	return s
}

// Refused is the content of a tool error: the reason word and a message
// naming what was wrong.
type Refused struct {
	Reason  question.Reason `json:"reason"`
	Message string          `json:"message"`
}

func toolError(reason question.Reason, msg string) *sdk.CallToolResult {
	raw, _ := json.Marshal(Refused{Reason: reason, Message: msg})
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(raw)}}}
}

// handle runs one tool call on doc: the input is validated against the
// tool's schema, then decoded strictly by the tool itself. Every failure
// is a tool error the agent can read and correct; a panic is one too.
func (h *Handler) handle(doc string, t tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				h.opts.Logger.Error("mcp tool panicked", "tool", t.Name, "doc", doc, "panic", p)
				res, err = toolError(question.Unavailable, fmt.Sprintf("%s failed inside the server", t.Name)), nil
			}
		}()
		// Close ends running calls too, so a host shutting down is not
		// held by them.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(h.ctx, cancel)()
		if t.Long && h.opts.ProgressInterval > 0 && req.Session != nil {
			if tok := req.Params.GetProgressToken(); tok != nil {
				defer h.progress(ctx, req.Session, tok, t.Name)()
			}
		}
		args := json.RawMessage(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		var v any
		if err := json.Unmarshal(args, &v); err != nil {
			return toolError(question.Invalid, "the arguments are not JSON: "+err.Error()), nil
		}
		if err := t.schema.Validate(v); err != nil {
			return toolError(question.Invalid, "the arguments do not fit the schema of "+t.Name+": "+err.Error()), nil
		}
		if t.Holds {
			h.touch(doc, 1)
			if h.opts.OnAwait != nil {
				h.opts.OnAwait(doc)
			}
			defer h.touch(doc, -1)
		}
		out, err := t.Call(ctx, doc, args)
		if err != nil {
			var r *question.Refusal
			switch {
			case errors.As(err, &r):
				return toolError(r.Reason, r.Message), nil
			case h.ctx.Err() != nil:
				return toolError(question.Unavailable, "the server is shutting down; call again"), nil
			case ctx.Err() != nil:
				return toolError(question.Unavailable, "the call was cancelled"), nil
			}
			h.opts.Logger.Warn("mcp tool failed", "tool", t.Name, "doc", doc, "err", err)
			return toolError(question.Unavailable, err.Error()), nil
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return toolError(question.Unavailable, "cannot encode the result"), nil
		}
		if len(raw) == 0 || raw[0] != '{' {
			// Structured content must be an object; a tool that returns
			// anything else is a bug in the host, not the agent's input.
			h.opts.Logger.Error("mcp tool result is not a JSON object", "tool", t.Name, "doc", doc)
			return toolError(question.Unavailable, t.Name+" returned a result that is not a JSON object"), nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(raw)}}, StructuredContent: json.RawMessage(raw)}, nil
	}
}

// progress sends a progress notification for the call of tool with the
// progress token tok every ProgressInterval, until the returned func
// (which the call runs before it answers) stops it. A notification that
// cannot be sent (the client went) ends them.
func (h *Handler) progress(ctx context.Context, ss *sdk.ServerSession, tok any, tool string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(h.opts.ProgressInterval)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			err := ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: tok,
				Progress:      float64(n),
				Message:       fmt.Sprintf("%s is still waiting (%s)", tool, time.Since(start).Round(time.Second)),
			})
			if err != nil {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
