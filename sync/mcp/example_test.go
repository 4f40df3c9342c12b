package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/sync/mcp"
)

// A host serves the Planner's tools over streamable HTTP; an agent
// connects with the bearer token and lists them.
func ExampleNewHandler() {
	host := memhost.New()
	host.Docs.Set("plan-1", planner.Block{ID: "p1", Kind: planner.Paragraph, Text: "We launch in spring."})
	store := memstore.New()
	local := planner.NewLocal(func(ctx context.Context, doc string) (*question.Authority, error) {
		return question.NewAuthority(ctx, question.Options{Store: store, Doc: doc})
	})
	tools, _ := planner.NewTools(planner.ToolsOptions{Authorities: local, Document: host.Docs, Editor: host.Docs})
	h, _ := mcp.NewHandler(mcp.Options{Tools: tools, Turns: host.Chat, Token: "t0ken"})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint:   srv.URL + "/mcp?doc=plan-1",
		HTTPClient: &http.Client{Transport: bearer{token: "t0ken", next: http.DefaultTransport}},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	list, _ := cs.ListTools(context.Background(), nil)
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output: [anchor_plan ask await_answers edit_plan open_decision open_decisions read_plan suggest_choice update_document]
}
