package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/porcupinetest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
)

type linState struct {
	Settled bool
	Gen     uint64
}

type linIn struct {
	Kind string // "submit" or "reopen"
}

type linOut struct {
	OK     bool
	Reason question.Reason
	// Gen is the generation a successful save settled, or the one a
	// successful reopen started; 0 if the reply does not say (see
	// submitOut and reopenOut). Not the generation the member's replica
	// displayed before the call: the replica may take in another member's
	// save, reopen and choice before Submit claims what it displays.
	Gen uint64
}

// linModel is one decision's saves and reopens as the whole cluster must
// show them: a save settles only an open decision, at its generation, a
// reopen opens only a settled one and starts the next generation. A refusal changes nothing and is always allowed (a member
// whose display is behind is refused as stale, one whose choice has not
// arrived as invalid), so what the check forbids is a settle or reopen that
// no order of the operations explains: two settles of one generation, a
// settle of a settled decision, a reopen of an open one.
var linModel = porcupine.Model{
	Init: func() any { return linState{Gen: 1} },
	Step: func(st, in, out any) (bool, any) {
		s, i, o := st.(linState), in.(linIn), out.(linOut)
		if !o.OK {
			return true, s
		}
		switch i.Kind {
		case "submit":
			return !s.Settled && (o.Gen == s.Gen || o.Gen == 0), linState{Settled: true, Gen: s.Gen}
		case "reopen":
			return s.Settled && (o.Gen == s.Gen+1 || o.Gen == 0), linState{Gen: s.Gen + 1}
		}
		return false, s
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(linIn), out.(linOut)
		return fmt.Sprintf("%s → ok=%v %s gen=%d", i.Kind, o.OK, o.Reason, o.Gen)
	},
}

// TestSavesLinearizableAcrossNodes has three members, each on another of
// three nodes, save and reopen one decision as fast as they can, and checks
// the history with porcupine against linModel.
func TestSavesLinearizableAcrossNodes(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	var nodes []*node
	for i := range 3 {
		nodes = append(nodes, startNode(t, fmt.Sprintf("n%d", i), c.URL(i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var clients []*replica.Client
	for i, n := range nodes {
		clients = append(clients, join(t, n.url, "lin", fmt.Sprintf("m%d", i)))
	}
	recs, err := clients[0].Create(ctx, card("lin"))
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	for _, cl := range clients {
		testutil.Eventually(t, "every member to hold the decision", func() bool { _, _, err := cl.Draft(id); return err == nil })
	}
	if err := clients[0].Choose(id, "q1", "o1", true); err != nil {
		t.Fatal(err)
	}
	if err := clients[0].Flush(ctx, id); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	var mu sync.Mutex
	var ops []porcupine.Operation
	const perClient = 12
	var wg sync.WaitGroup
	for ci, cl := range clients {
		wg.Go(func() {
			for range perClient {
				_, _, err := cl.Draft(id)
				rec, ok := cl.Record(id)
				if err != nil || !ok {
					t.Errorf("member %d lost the decision: %v", ci, err)
					return
				}
				var in linIn
				var out linOut
				call := time.Since(start).Nanoseconds()
				if rec.Status == question.Settled {
					in = linIn{Kind: "reopen"}
					r, err := cl.Reopen(ctx, id)
					out = linOut{OK: err == nil, Gen: reopenOut(rec.Generation, r, err).Gen}
					if err != nil {
						out.Reason = question.Reason(err.Error())
					}
				} else {
					in = linIn{Kind: "submit"}
					res, err := cl.Submit(ctx, id)
					var refused *question.Refusal
					switch {
					case errors.As(err, &refused):
						// Refused whole, nothing applied: a commit that
						// failed (unavailable) on a loaded machine.
						out = linOut{Reason: refused.Reason}
					case err != nil || len(res) != 1:
						t.Errorf("member %d: save failed as a request: %v", ci, err)
						return
					default:
						member, _ := cl.Member()
						out = linOut{OK: res[0].OK, Reason: res[0].Reason, Gen: submitOut(member, res, err).Gen}
					}
				}
				ret := time.Since(start).Nanoseconds()
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: ci, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
				if in.Kind == "reopen" && out.OK {
					// The new generation's draft starts without a choice.
					testutil.Eventually(t, "the reopened draft", func() bool {
						d, _, err := cl.Draft(id)
						return err == nil && d.Generation == out.Gen
					})
					_ = cl.Choose(id, "q1", "o1", true)
					_ = cl.Flush(ctx, id)
				}
				time.Sleep(time.Duration(ci) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	settles, reopens := 0, 0
	for _, op := range ops {
		if op.Output.(linOut).OK {
			if op.Input.(linIn).Kind == "submit" {
				settles++
			} else {
				reopens++
			}
		}
	}
	porcupinetest.Check(t, "saves and reopens through three nodes", linModel, ops, checkBudget)
	if settles == 0 || reopens == 0 {
		t.Fatalf("a history without contention: %d settles, %d reopens", settles, reopens)
	}
	t.Logf("%d operations through three nodes, %d settles and %d reopens: linearizable", len(ops), settles, reopens)
}

// TestLinModelRejectsDoubleSettle checks that the model can fail: two
// overlapping saves of generation 1 that both settle, or a reopen of an
// open decision, are not linearizable.
func TestLinModelRejectsDoubleSettle(t *testing.T) {
	for name, ops := range map[string][]porcupine.Operation{
		"two settles": {
			{ClientId: 0, Input: linIn{Kind: "submit"}, Call: 0, Output: linOut{OK: true, Gen: 1}, Return: 10},
			{ClientId: 1, Input: linIn{Kind: "submit"}, Call: 5, Output: linOut{OK: true, Gen: 1}, Return: 15},
		},
		"reopen while open": {
			{ClientId: 0, Input: linIn{Kind: "reopen"}, Call: 0, Output: linOut{OK: true, Gen: 2}, Return: 10},
		},
		"settle at an old generation": {
			{ClientId: 0, Input: linIn{Kind: "submit"}, Call: 0, Output: linOut{OK: true, Gen: 1}, Return: 1},
			{ClientId: 0, Input: linIn{Kind: "reopen"}, Call: 2, Output: linOut{OK: true, Gen: 2}, Return: 3},
			{ClientId: 1, Input: linIn{Kind: "submit"}, Call: 4, Output: linOut{OK: true, Gen: 1}, Return: 5},
		},
	} {
		if porcupine.CheckOperations(linModel, ops) {
			t.Errorf("%s: accepted as linearizable", name)
		}
	}
	ok := []porcupine.Operation{
		{ClientId: 0, Input: linIn{Kind: "submit"}, Call: 0, Output: linOut{OK: true, Gen: 1}, Return: 10},
		{ClientId: 1, Input: linIn{Kind: "submit"}, Call: 5, Output: linOut{Reason: question.Stale}, Return: 15},
		{ClientId: 1, Input: linIn{Kind: "reopen"}, Call: 20, Output: linOut{OK: true, Gen: 2}, Return: 25},
	}
	if !porcupine.CheckOperations(linModel, ok) {
		t.Error("a legal history rejected")
	}
}
