package main

import (
	"errors"
	"net/http"

	"github.com/accord-crdt/accord/question"
)

// auditHandler serves GET /admin/audit?doc=DOC&decision=ID to a bearer of
// token (see audit). Without a token the endpoint is disabled: every
// request gets 404.
func (a *app) auditHandler(token string) http.Handler {
	return adminOnly(token, "audit exports", http.MethodGet, a.audit)
}

// audit serves ?decision=ID of ?doc=DOC (the demo plan by default): the
// decision's whole history as NDJSON (question.AuditExport, schema in
// docs/AUDIT.md), 404 for a decision the document does not hold. The
// export is taken on the document's goroutine, which only copies the
// record and shares the stored draft; it is written to the client
// afterwards, so a slow download holds up nobody's edits. Who may ask is
// the route's to decide: an admin's bearer at /admin/audit, any signed-in
// member, who can read the document, at /api/audit (the decision page's
// "Download history").
func (a *app) audit(w http.ResponseWriter, r *http.Request) {
	doc, id := docParam(r), r.URL.Query().Get("decision")
	if id == "" || len(id) > 64 || len(doc) > 256 {
		http.Error(w, "name the decision: ?decision=ID (and ?doc=DOC)", http.StatusBadRequest)
		return
	}
	var x *question.AuditExport
	err := a.srv.Do(r.Context(), doc, func(au *question.Authority) error {
		var err error
		x, err = au.Audit(id)
		return err
	})
	var ref *question.Refusal
	switch {
	case errors.As(err, &ref) && ref.Reason == question.NotFound:
		refuse(w, http.StatusNotFound, string(ref.Reason), ref.Message)
		return
	case err != nil:
		refuseErr(w, a.log, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.audit.ndjson"`)
	if err := x.WriteTo(r.Context(), w); err != nil {
		a.log.Warn("audit export cut short", "doc", doc, "decision", id, "err", err)
	}
}
