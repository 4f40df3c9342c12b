package main

// In a cluster the demo's host state (the plan documents, Chat and the
// demo Planner's runs) lives in a replicated JetStream KV bucket rather
// than in one node's memory or plan.db: the node holding a document's
// lease writes every change there before it is reported done, and a node
// that takes the lease over reads it back first (Options.Acquired), so
// that it continues from the plan, Chat and card anchors its predecessor
// left, whether that one handed off or crashed.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/accord-crdt/accord/question/planner/memhost"
)

// hostBucket is the KV bucket of the demo's host state.
const hostBucket = "ACCORD_HOST"

// hostWait bounds one read or write of the host state.
const hostWait = 5 * time.Second

// hostState is the host state of a cluster's documents in JetStream.
type hostState struct{ kv natsjs.KeyValue }

func openHostState(ctx context.Context, nc *nats.Conn, replicas int) (*hostState, error) {
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, natsjs.KeyValueConfig{
		Bucket:      hostBucket,
		Description: "Accord example: each document's plan, Chat and Planner runs",
		History:     1,
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: host state bucket %s: %w", hostBucket, err)
	}
	// The bucket answers reads once a replica has caught up with its
	// leader, a moment after it was created: wait for that here, so that
	// the node's first takeover does not find it silent.
	wctx, cancel := context.WithTimeout(ctx, hostWait)
	defer cancel()
	err = untilAnswered(wctx, func() error {
		_, err := kv.Get(wctx, "ready")
		return err
	})
	if err != nil && !errors.Is(err, natsjs.ErrKeyNotFound) {
		return nil, fmt.Errorf("cluster: host state bucket %s: %w", hostBucket, err)
	}
	return &hostState{kv: kv}, nil
}

// untilAnswered calls op until JetStream answers it: a bucket's stream
// electing a leader, or replicas not caught up yet, answer nothing for a
// moment. It returns op's last error once ctx ends or op fails otherwise.
func untilAnswered(ctx context.Context, op func() error) error {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := op()
		if !silent(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// silent reports whether err is JetStream not answering, after which the
// same request may work.
func silent(err error) bool {
	return errors.Is(err, natsjs.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout)
}

func hostKey(kind, doc string) string {
	return kind + "." + base64.RawURLEncoding.EncodeToString([]byte(doc))
}

// plannerState is the demo Planner's memory of one document.
type plannerState struct {
	Runs    int             `json:"runs"`
	Started map[string]bool `json:"started"`
}

func (h *hostState) put(kind, doc string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostWait)
	defer cancel()
	return untilAnswered(ctx, func() error {
		_, err := h.kv.Put(ctx, hostKey(kind, doc), raw)
		return err
	})
}

// get reads kind's value of doc into v; false if none is stored.
func (h *hostState) get(ctx context.Context, kind, doc string, v any) (bool, error) {
	var e natsjs.KeyValueEntry
	err := untilAnswered(ctx, func() (err error) {
		e, err = h.kv.Get(ctx, hostKey(kind, doc))
		return err
	})
	if errors.Is(err, natsjs.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(e.Value(), v)
}

// keepInCluster makes the plans, Chat and Planner runs durable in the
// cluster's bucket: every change of a document this node owns is stored
// before it is reported done. A node that does not own the document (its
// start, before it takes a lease) stores nothing.
func (a *app) keepInCluster(h *hostState, owns func(doc string) bool) {
	a.hostState = h
	a.owns = owns
	a.host.Docs.Persist(func(doc string, st memhost.DocState) error {
		if owns(doc) {
			if err := h.put("plan", doc, st); err != nil {
				return err
			}
		}
		a.feed.notify(doc)
		return nil
	})
	a.host.Chat.Persist(func(doc string, st memhost.ChatState) error {
		if owns(doc) {
			if err := h.put("chat", doc, st); err != nil {
				return err
			}
		}
		a.feed.notify(doc)
		return nil
	})
}

// takeOver loads doc's stored host state, as this node takes its lease:
// the plan replaces what this node holds of it (the sample plan, or what
// it held when it last owned the document), Chat merges, the Planner's
// runs replace its own. A document with no stored plan yet gets this
// node's, so that the next owner finds it. A merged Chat that holds more
// than the stored one (notices posted or turns accepted here while this
// node did not hold the lease: it gave the lease up, a renewal too late,
// as the Planner worked) is stored, so that the next owner finds them too.
func (a *app) takeOver(ctx context.Context, doc string) error {
	h := a.hostState
	if h == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, hostWait)
	defer cancel()
	var plan memhost.DocState
	found, err := h.get(ctx, "plan", doc, &plan)
	if err != nil {
		return err
	}
	if found {
		a.host.Docs.Restore(doc, plan)
	} else if err := h.put("plan", doc, a.host.Docs.State(doc)); err != nil {
		return err
	}
	var chat memhost.ChatState
	if found, err = h.get(ctx, "chat", doc, &chat); err != nil {
		return err
	} else if found {
		a.host.Chat.Restore(doc, chat)
	}
	if merged := a.host.Chat.State(doc); !sameJSON(merged, chat) {
		if err := h.put("chat", doc, merged); err != nil {
			return err
		}
	}
	var runs plannerState
	if found, err = h.get(ctx, "planner", doc, &runs); err != nil {
		return err
	} else if found {
		a.planner.restore(doc, runs)
	}
	a.feed.notify(doc)
	return nil
}

// sameJSON reports whether a and b encode alike.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// restore replaces the Planner's memory of doc with a stored one.
func (p *demoPlanner) restore(doc string, st plannerState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs[doc] = st.Runs
	maps.Copy(p.started, st.Started)
}

// savePlanner stores the Planner's memory of doc, in a cluster whose
// document this node owns. The caller holds p.mu.
func (p *demoPlanner) savePlanner(doc string) error {
	a := p.app
	if a.hostState == nil || !a.owns(doc) {
		return nil
	}
	return a.hostState.put("planner", doc, plannerState{Runs: p.runs[doc], Started: maps.Clone(p.started)})
}

// Secrets every node of a cluster must share, kept in the host state
// bucket: a session signed by one node is checked by another (requests
// are served by the document's owner, whichever node took them), and an
// agent's MCP token must work on any node and after any failover.
const (
	secretSessionKey = "secret.session-key"
	secretMCPToken   = "secret.mcp-token"
)

// shareSecret returns the cluster's value of a shared secret: the first
// node to start stores its own (mine), and every node uses what is
// stored.
func (h *hostState) shareSecret(ctx context.Context, key, mine string) (string, error) {
	var stored string
	err := untilAnswered(ctx, func() error {
		_, err := h.kv.Create(ctx, key, []byte(mine))
		switch {
		case err == nil:
			stored = mine
		case errors.Is(err, natsjs.ErrKeyExists):
			var e natsjs.KeyValueEntry
			if e, err = h.kv.Get(ctx, key); err == nil {
				stored = string(e.Value())
			}
		}
		return err
	})
	return stored, err
}

// shareSecrets gives demo the cluster's session key and MCP token. A node
// started with its own (ACCORD_SESSION_KEY, ACCORD_MCP_TOKEN) that differs
// from the cluster's keeps it, says so at start, and refuses what it
// guards (sign-ins, MCP) instead of failing one request at a time.
func (h *hostState) shareSecrets(ctx context.Context, demo *demoOptions, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, hostWait)
	defer cancel()
	key, keySet := demo.SessionKey, demo.SessionKey != "" // ACCORD_SESSION_KEY
	if !keySet {
		var err error
		if key, err = localSessionKey(demo.Dir); err != nil {
			return err
		}
	}
	token, err := mcpToken(demo.Dir)
	if err != nil {
		return err
	}
	for _, sec := range []struct {
		name, key, env, mine string
		configured           bool
		set                  *string
	}{
		{"session key", secretSessionKey, "ACCORD_SESSION_KEY", key, keySet, &demo.SessionKey},
		{"MCP token", secretMCPToken, "ACCORD_MCP_TOKEN", token, os.Getenv("ACCORD_MCP_TOKEN") != "", &demo.MCPToken},
	} {
		theirs, err := h.shareSecret(ctx, sec.key, sec.mine)
		if err != nil {
			return fmt.Errorf("cluster: the shared %s: %w", sec.name, err)
		}
		if theirs != sec.mine && sec.configured {
			why := sec.env + " differs from the cluster's " + sec.name + ": give every node the same, or unset it on this node to take the cluster's"
			log.Error("this node's "+sec.name+" differs from the cluster's; it refuses what the "+sec.name+" guards", "why", why)
			if demo.Differs == nil {
				demo.Differs = map[string]string{}
			}
			demo.Differs[sec.name] = why
			*sec.set = sec.mine
			continue
		}
		*sec.set = theirs
	}
	return nil
}
