package main

import (
	"log/slog"
	"net/http"

	"github.com/accord-crdt/accord/question/delivery"
	"github.com/accord-crdt/accord/question/delivery/memhost"
)

// demoRewrite serves POST /api/demo/rewrite: a whole-document rewrite
// outside any Planner turn, as a workflow's update_document makes, so the
// rules of such a rewrite can be seen. It keeps every block but two: the
// recovery table goes, and the rollout paragraph is rewritten into a new
// block. The Planner's cards stay linked (the rollout card moves to the
// Rollout heading), the write-ups of their broken passages are dropped,
// and other cards are reported in anchors_pending.
func demoRewrite(tools *delivery.Tools, docs *memhost.Documents, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		doc := docParam(r)
		var blocks []delivery.NewBlock
		for _, b := range docs.Blocks(doc) {
			switch {
			case b.Kind == delivery.Card, b.ID == "b6":
			case b.ID == "b8":
				blocks = append(blocks, delivery.NewBlock{Kind: b.Kind, Text: "Existing users move to passwordless sign-in over two weeks, team by team; the old password stops working a month after a team moved."})
			default:
				blocks = append(blocks, delivery.NewBlock{ID: b.ID, Kind: b.Kind, Text: b.Text})
			}
		}
		res, err := tools.UpdateDocument(r.Context(), delivery.Call{Doc: doc}, delivery.UpdateDocumentInput{Blocks: blocks})
		if err != nil {
			refuseErr(w, log, err)
			return
		}
		writeJSON(w, res)
	}
}
