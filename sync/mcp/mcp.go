// Package mcp serves the Planner's tools over the Model Context Protocol
// (streamable HTTP, github.com/modelcontextprotocol/go-sdk), so a real AI
// agent can be the Planner of a document.
//
// It serves every tool of planner.Tools.Definitions (read_plan,
// open_decisions, open_decision, ask, suggest_choice, anchor_plan, and the
// host's edit_plan and update_document when it has a planner.Editor) with
// their JSON schemas, and await_answers: a blocking call that returns the
// next Planner turn carrying saved answers.
//
// Every result is a JSON object, sent both as text and as structured
// content, and every tool declares its result's schema (outputSchema,
// "type": "object"): MCP requires structured content to be an object, and
// clients such as the official TypeScript SDK refuse anything else, even
// for a call whose effect (cards opened, say) already happened.
//
// # Turns exactly once
//
// Turns are made by the planner.Driver as for any host: the waiting
// answers are claimed under a fresh id, Chat accepts the turn (its notice
// carries that id), and the answers are marked delivered. Chat's accepted
// turns then wait for the agent: await_answers returns the oldest one that
// has not finished, with the claim id. The agent passes that id back as
// done on its next call, which finishes the turn (Chat is busy until then,
// so no other turn starts meanwhile). If the agent's connection drops
// after the claim, even after the turn was sent, its next call returns the
// same turn under the same id, never a second one; a call the client
// cancels or abandons returns at once and changes nothing.
//
// # Long calls
//
// await_answers and ask block until people act, which takes minutes.
// Clients time a request out (the TypeScript SDK after 60 seconds) unless
// progress resets the clock, so a call whose request carries a progress
// token gets a progress notification every ProgressInterval while it
// runs; the client opts in (TypeScript: onprogress and
// resetTimeoutOnProgress).
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
// hold is refused (404) rather than served as an empty plan, so a
// mistyped ?doc= says so. A request without a bearer token and one with
// a token that is not valid are refused (401) in words of their own.
//
// # Usage
//
//	h, err := mcp.NewHandler(mcp.Options{Tools: tools, Turns: host.Chat, Token: token, OnAwait: driver.Poke})
//	mux.Handle("/mcp", h) // the agent connects to /mcp?doc=plan-1 with "Authorization: Bearer <token>"
//	defer h.Close()
//
// Bad tool input (not matching the schema, unknown fields, refused by the
// library) gets a tool error naming the field, never a protocol error or a
// crash. A revision the plan never had is refused "stale" and a block it
// does not hold "invalid"; the agent calls read_plan and tries again.
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
	"github.com/accord-crdt/accord/question/planner"
)

// Turns is the host's Chat as a remote Planner reads it: the turns Chat
// accepted that have not finished (oldest first), Finish, which ends one
// (false if it was not running), and Changed, a channel closed at the next
// accept or finish of a document. memhost.Chat implements it.
type Turns interface {
	Pending(doc string) []planner.Turn
	Finish(doc, id string) bool
	Changed(doc string) <-chan struct{}
}

// Options configures a Handler. Tools is required.
type Options struct {
	Tools *planner.Tools
	// Turns, if set, serves await_answers.
	Turns Turns
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
	// not served as an empty plan. Nil: every document exists.
	Exists func(doc string) bool
	// OnAwait runs when an await_answers call starts waiting for doc, e.g.
	// Driver.Poke, so a turn that was waiting for a Planner starts now.
	OnAwait func(doc string)
	// OnHold runs when an agent's hold on doc's turns changes (Hold): an
	// await_answers call started waiting or returned. A host that shows
	// who answers as the Planner reads Hold then. It must not block.
	OnHold func(doc string)
	// SessionTimeout closes sessions idle that long, and is how long an
	// agent holds a document's turns after its last await_answers call;
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
	http    http.Handler
	ctx     context.Context
	stop    context.CancelFunc
	mu      sync.Mutex
	servers map[string]*sdk.Server
	waiting map[string]int
	last    map[string]time.Time // when an await_answers call last waited or returned
}

// NewHandler returns a Handler.
func NewHandler(opts Options) (*Handler, error) {
	if opts.Tools == nil {
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
	if _, err := h.tools(); err != nil {
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

// Close ends every blocking call (await_answers, ask).
func (h *Handler) Close() error {
	h.stop()
	return nil
}

// Awaiting reports whether an await_answers call waits for doc's next
// turn: a host under a remote harness counts the agent as attached then.
func (h *Handler) Awaiting(doc string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting[doc] > 0
}

// Attached reports whether an agent takes doc's turns: an await_answers
// call waits, or one returned within the session timeout (the agent is
// working on a turn). A host runs turns itself only while none is.
func (h *Handler) Attached(doc string) bool {
	_, ok := h.Hold(doc)
	return ok
}

// Hold is an agent's hold on a document's turns, as Handler.Hold reports
// it, so that a host can tell its people who answers as the Planner.
type Hold struct {
	// Waiting is true while an await_answers call waits; the agent holds
	// the turns as long as it does.
	Waiting bool
	// Until is when the hold ends unless the agent calls again: its last
	// await_answers call plus the session timeout. Zero while Waiting.
	Until time.Time
}

// Hold reports whether an agent holds doc's turns (Attached), and how.
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

// tool is one served tool: its definition and the schema its input is
// validated against.
type tool struct {
	def    planner.ToolDef
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

func (h *Handler) tools() ([]tool, error) {
	defs := h.opts.Tools.Definitions()
	if h.opts.Turns != nil {
		defs = append(defs, planner.ToolDef{
			Name:         "await_answers",
			Description:  "Wait for the next Planner turn carrying answers people saved to decisions you left open, and get it: {\"turn\": {id, notice, prompt, answers}, \"pending\": n}. Pass the id of the turn you finished as done; until then every call returns that same turn again. With wait_seconds, {\"turn\": null} when none came in time. Cards with a passage are written up by their own write-up; act on the rest.",
			InputSchema:  json.RawMessage(awaitSchema),
			OutputSchema: json.RawMessage(awaitOutput),
			Handle:       h.await,
		})
	}
	out := make([]tool, 0, len(defs))
	for _, d := range defs {
		rs, err := objectSchema(d.Name, "input", d.InputSchema)
		if err != nil {
			return nil, err
		}
		if _, err := objectSchema(d.Name, "output", d.OutputSchema); err != nil {
			return nil, err
		}
		out = append(out, tool{def: d, schema: rs})
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
	tools, err := h.tools()
	if err != nil {
		h.opts.Logger.Error("mcp tools", "err", err)
		return nil
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "accord", Title: "Accord decisions", Version: "1"}, &sdk.ServerOptions{
		Logger:       sdkLogger(h.opts.Logger).With("doc", doc),
		Instructions: "You are the Planner of plan document " + doc + ". Call read_plan for its revision and block ids, open decisions beside your provisional prose, and call await_answers to receive the answers people save. A tool refused as stale means the plan moved: read it again.",
	})
	call := planner.Call{Doc: doc}
	for _, t := range tools {
		s.AddTool(&sdk.Tool{Name: t.def.Name, Description: t.def.Description, InputSchema: t.def.InputSchema, OutputSchema: t.def.OutputSchema}, h.handle(call, t))
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

// handle runs one tool call: the input is validated against the tool's
// schema, then decoded strictly by the tool itself. Every failure is a
// tool error the agent can read and correct; a panic is one too.
func (h *Handler) handle(call planner.Call, t tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				h.opts.Logger.Error("mcp tool panicked", "tool", t.def.Name, "doc", call.Doc, "panic", p)
				res, err = toolError(question.Unavailable, fmt.Sprintf("%s failed inside the server", t.def.Name)), nil
			}
		}()
		// Close ends blocking calls (ask, await_answers) too, so a host
		// shutting down is not held by them.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(h.ctx, cancel)()
		if tok := req.Params.GetProgressToken(); tok != nil && h.opts.ProgressInterval > 0 && req.Session != nil {
			defer h.progress(ctx, req.Session, tok, t.def.Name)()
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
			return toolError(question.Invalid, "the arguments do not fit the schema of "+t.def.Name+": "+err.Error()), nil
		}
		out, err := t.def.Handle(ctx, call, args)
		if err != nil {
			var r *question.Refusal
			switch {
			case errors.As(err, &r):
				return toolError(r.Reason, r.Message), nil
			case ctx.Err() != nil:
				return toolError(question.Unavailable, "the call was cancelled"), nil
			}
			h.opts.Logger.Warn("mcp tool failed", "tool", t.def.Name, "doc", call.Doc, "err", err)
			return toolError(question.Unavailable, err.Error()), nil
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return toolError(question.Unavailable, "cannot encode the result"), nil
		}
		if len(raw) == 0 || raw[0] != '{' {
			// Structured content must be an object; a tool that returns
			// anything else is a bug in the host, not the agent's input.
			h.opts.Logger.Error("mcp tool result is not a JSON object", "tool", t.def.Name, "doc", call.Doc)
			return toolError(question.Unavailable, t.def.Name+" returned a result that is not a JSON object"), nil
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

// AwaitInput is the input of await_answers.
type AwaitInput struct {
	// Done is the id of the turn the agent finished; that turn ends first.
	Done string `json:"done,omitempty"`
	// WaitSeconds bounds the wait; 0 waits until a turn comes or the call
	// is cancelled. On timeout the result has no turn.
	WaitSeconds int `json:"wait_seconds,omitempty"`
}

// Awaited is what await_answers returns.
type Awaited struct {
	// Turn is the next turn; nil when the wait timed out.
	Turn *TurnOut `json:"turn"`
	// Pending counts the turns waiting, this one included.
	Pending int `json:"pending"`
}

// TurnOut is a turn as the agent reads it.
type TurnOut struct {
	ID      string               `json:"id"`
	Notice  string               `json:"notice"`
	Prompt  string               `json:"prompt"`
	Answers []planner.TurnAnswer `json:"answers"`
}

const maxWait = 3600

func (h *Handler) await(ctx context.Context, call planner.Call, raw json.RawMessage) (any, error) {
	var in AwaitInput
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, &question.Refusal{Reason: question.Invalid, Message: "the input does not fit await_answers: " + err.Error()}
	}
	if in.WaitSeconds < 0 || in.WaitSeconds > maxWait {
		return nil, &question.Refusal{Reason: question.Invalid, Message: fmt.Sprintf("wait_seconds is 0 to %d", maxWait)}
	}
	if in.Done != "" {
		// Finishing a turn twice (a lost reply to the call that finished
		// it) is harmless: the second does nothing.
		h.opts.Turns.Finish(call.Doc, in.Done)
	}
	if in.WaitSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(in.WaitSeconds)*time.Second)
		defer cancel()
	}
	waiting := false
	defer func() {
		if waiting {
			h.touch(call.Doc, -1)
		} else {
			h.touch(call.Doc, 0)
		}
	}()
	for {
		changed := h.opts.Turns.Changed(call.Doc) // before reading, so no accept slips between
		if p := h.opts.Turns.Pending(call.Doc); len(p) > 0 {
			t := p[0]
			return Awaited{Turn: &TurnOut{ID: t.ID, Notice: t.Notice, Prompt: t.Prompt, Answers: t.Answers}, Pending: len(p)}, nil
		}
		if !waiting {
			waiting = true
			h.touch(call.Doc, 1)
			if h.opts.OnAwait != nil {
				h.opts.OnAwait(call.Doc)
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && in.WaitSeconds > 0 {
				return Awaited{}, nil
			}
			return nil, ctx.Err()
		case <-h.ctx.Done():
			return nil, &question.Refusal{Reason: question.Unavailable, Message: "the server is shutting down; call again"}
		}
	}
}

// awaitOutput is the schema of Awaited.
var awaitOutput = `{
  "type": "object",
  "properties": {
    "turn": {
      "type": ["object", "null"],
      "properties": {
        "id": {"type": "string", "description": "pass it back as done once you acted on the turn"},
        "notice": {"type": "string"},
        "prompt": {"type": "string"},
        "answers": {"type": "array", "items": ` + planner.TurnAnswerSchema + `}
      },
      "required": ["id", "notice", "prompt", "answers"],
      "description": "the next turn; null when wait_seconds passed without one"
    },
    "pending": {"type": "integer", "minimum": 0, "description": "the turns waiting, this one included"}
  },
  "required": ["turn", "pending"]
}`

const awaitSchema = `{
  "type": "object",
  "properties": {
    "done": {"type": "string", "maxLength": 200, "description": "the id of the turn you finished; until you pass it, the same turn comes back"},
    "wait_seconds": {"type": "integer", "minimum": 0, "maximum": 3600, "description": "give up after this long (0: wait until a turn comes)"}
  },
  "additionalProperties": false
}`
