package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/sync/mcp"
)

// A host serves a tool over streamable HTTP; an agent connects with the
// bearer token, lists the tools and calls one on its document.
func ExampleNewHandler() {
	greet := mcp.Tool{
		Name:         "greet",
		Description:  "Greet the document's people.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"]}`),
		Call: func(ctx context.Context, doc string, args json.RawMessage) (any, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return map[string]string{"greeting": "Hello " + in.Name + ", from " + doc}, nil
		},
	}
	h, _ := mcp.NewHandler(mcp.Options{Tools: []mcp.Tool{greet}, Token: "t0ken"})
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
	for _, t := range list.Tools {
		fmt.Println(t.Name)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ana"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.StructuredContent)
	// Output:
	// greet
	// map[greeting:Hello Ana, from plan-1]
}
