package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/sync/mcp"
)

// logRecord is one record a capture handler kept, its attributes
// flattened.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// capture is a slog handler that keeps every record, at every level.
type capture struct {
	mu      *sync.Mutex
	records *[]logRecord
	attrs   []slog.Attr
}

func newCapture() capture { return capture{mu: &sync.Mutex{}, records: &[]logRecord{}} }

func (c capture) Enabled(context.Context, slog.Level) bool { return true }

func (c capture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range c.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.records = append(*c.records, rec)
	return nil
}

func (c capture) WithAttrs(as []slog.Attr) slog.Handler {
	c.attrs = append(append([]slog.Attr{}, c.attrs...), as...)
	return c
}

func (c capture) WithGroup(string) slog.Handler { return c }

// take returns the records kept since the last take.
func (c capture) take() []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := *c.records
	*c.records = nil
	return out
}

// atLeast returns the records from level up.
func atLeast(recs []logRecord, level slog.Level) []logRecord {
	var out []logRecord
	for _, r := range recs {
		if r.level >= level {
			out = append(out, r)
		}
	}
	return out
}

// Over real HTTP every refusal says what was wrong in words of its own: a
// missing bearer token, a token that is not valid, a token limited to
// other documents, a document the host does not hold (a mistyped ?doc=,
// which would otherwise be served as an empty document), no document at
// all.
// The words reach an agent on the Go SDK as its connect error, and a raw
// request as a JSON-RPC error. A token that is not valid, and one used
// beyond its documents, leave one warning in the log naming the document;
// the others leave none.
func TestRefusalsSayWhy(t *testing.T) {
	logs := newCapture()
	held := func(d string) bool { return d == "plan-1" || d == "plan-2" }
	h, err := mcp.NewHandler(mcp.Options{Tools: tools(newQueue()), Token: "main", Tokens: map[string][]string{"plan-1-only": {"plan-1"}},
		Exists: held, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, tc := range []struct {
		name, token, doc string
		status           int
		says             string
		warns            bool // one warning naming doc
	}{
		{"no token", "", "plan-1", http.StatusUnauthorized, "a bearer token is required", false},
		{"a token that is not valid", "wrong", "plan-1", http.StatusUnauthorized, "the bearer token is not valid", true},
		{"a token limited to other documents", "plan-1-only", "plan-2", http.StatusForbidden, `this token may not act on document "plan-2"`, true},
		{"a mistyped document", "main", "plan-x", http.StatusNotFound, `there is no document "plan-x" here`, false},
		{"no document", "main", "", http.StatusBadRequest, "name the document: ?doc=<id>", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.take()
			// A raw request gets the status and a JSON-RPC error with the words.
			status, body := postInitialize(t, srv.URL+"/mcp?doc="+tc.doc, tc.token)
			var rpc struct {
				ID    int
				Error struct{ Message string }
			}
			if status != tc.status || json.Unmarshal(body, &rpc) != nil || rpc.ID != 1 || !strings.HasPrefix(rpc.Error.Message, tc.says) {
				t.Fatalf("%d %s, want %d and a JSON-RPC error saying %q", status, body, tc.status, tc.says)
			}
			warned := atLeast(logs.take(), slog.LevelWarn)
			switch {
			case tc.warns && (len(warned) != 1 || warned[0].attrs["doc"] != tc.doc):
				t.Errorf("log: %+v, want one warning naming %s", warned, tc.doc)
			case !tc.warns && len(warned) != 0:
				t.Errorf("log: %+v, want no warning", warned)
			}

			// An agent on the Go SDK reads the same words.
			c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
				Endpoint:   srv.URL + "/mcp?doc=" + tc.doc,
				HTTPClient: &http.Client{Transport: bearer{token: tc.token, next: http.DefaultTransport}},
				MaxRetries: -1,
			}, nil)
			if err == nil {
				cs.Close()
				t.Fatal("the agent connected")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("the agent's error %q does not say %q", err, tc.says)
			}
		})
	}
}

// A session whose document the host no longer holds is refused with the
// same words, rather than served as an empty document.
func TestMCPDocumentGoneIsRefused(t *testing.T) {
	var gone atomic.Bool
	r := newRig(t, func(o *mcp.Options) { o.Exists = func(d string) bool { return d == doc && !gone.Load() } })
	cs := r.mustAgent()
	ok(t, cs, "echo", map[string]any{"text": "x"}, nil)
	gone.Store(true)
	res, err := call(context.Background(), cs, "echo", map[string]any{"text": "x"})
	if err == nil || !strings.Contains(err.Error(), `there is no document "plan-1" here`) {
		t.Fatalf("a call on a gone document: %v %+v", err, res)
	}
}

// An agent's session adds nothing to the host's log from info up: the
// SDK's lines of each connection (connecting, connected, initialized)
// come at debug, naming the document.
func TestMCPSessionsQuietInTheLog(t *testing.T) {
	logs := newCapture()
	r := newRig(t, func(o *mcp.Options) { o.Logger = slog.New(logs) })
	cs := r.mustAgent()
	ok(t, cs, "echo", map[string]any{"text": "x"}, nil)
	cs.Close()
	recs := logs.take()
	if loud := atLeast(recs, slog.LevelInfo); len(loud) != 0 {
		t.Fatalf("a session logged from info up: %+v", loud)
	}
	initialized := false
	for _, rec := range recs {
		initialized = initialized || (rec.msg == "session initialized" && rec.level == slog.LevelDebug && rec.attrs["doc"] == doc)
	}
	if !initialized {
		t.Fatalf("no debug record of the session naming %s: %+v", doc, recs)
	}
}

// postInitialize posts an MCP initialize request to url with token as its
// bearer (none if empty), and returns the status and body of the answer.
func postInitialize(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}
