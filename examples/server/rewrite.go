package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

// demoRewrite serves POST /api/demo/rewrite: a whole-document rewrite
// outside any Planner turn, as a workflow's update_document makes, so the
// rules of such a rewrite can be seen. It keeps every block but two: the
// recovery table goes, and the rollout paragraph is rewritten into a new
// block. The Planner's cards stay linked (the rollout card moves to the
// Rollout heading), the write-ups of their broken passages are dropped,
// and other cards are reported in anchors_pending.
func demoRewrite(tools *planner.Tools, docs *memhost.Documents, log *slog.Logger, done func(r *http.Request, doc string, res planner.UpdateDocumentResult) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		doc := docParam(r)
		var blocks []planner.NewBlock
		for _, b := range docs.Blocks(doc) {
			switch {
			case b.Kind == planner.Card, b.ID == "b6":
			case b.ID == "b8":
				blocks = append(blocks, planner.NewBlock{Kind: b.Kind, Text: "Existing users move to passwordless sign-in over two weeks, team by team; the old password stops working a month after a team moved."})
			default:
				blocks = append(blocks, planner.NewBlock{ID: b.ID, Kind: b.Kind, Text: b.Text})
			}
		}
		res, err := tools.UpdateDocument(r.Context(), planner.Call{Doc: doc}, planner.UpdateDocumentInput{Blocks: blocks})
		if err != nil {
			refuseErr(w, log, err)
			return
		}
		writeJSON(w, struct {
			planner.UpdateDocumentResult
			Note string `json:"note"`
		}{res, done(r, doc, res)})
	}
}

// rewriteNote says in plain words what a rewrite did to the decisions,
// after who ("Ana rewrote the plan."; who may be a Chat handle).
func rewriteNote(who string, res planner.UpdateDocumentResult) string {
	count := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	parts := []string{who + " rewrote the plan."}
	if n := len(res.Relinked); n > 0 {
		parts = append(parts, count(n, "decision card moved", "decision cards moved")+" to the nearest heading still in the plan.")
	}
	if n := len(res.Dropped); n > 0 {
		parts = append(parts, count(n, "decision lost the passage its answer was written into;", "decisions lost the passage their answers were written into;")+
			" the Planner gets those answers again.")
	}
	if n := len(res.AnchorsPending); n > 0 {
		parts = append(parts, count(n, "other decision needs", "other decisions need")+" review.")
	}
	if len(parts) == 1 {
		parts = append(parts, "Every decision card kept its place.")
	}
	return strings.Join(parts, " ")
}
