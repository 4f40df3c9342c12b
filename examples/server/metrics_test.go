package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
)

// TestMetricsEndpoint scrapes /metrics after a member connected and the
// demo opened its decisions: the sync server's collectors are there and
// counted the traffic.
func TestMetricsEndpoint(t *testing.T) {
	_, hs := testApp(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dialAs(t, ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/sync?doc="+demoDoc+"&member=ana")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := http.Post(hs.URL+"/api/demo/start?member=ana", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var body string
	testutil.EventuallyWithin(t, waitTime, "the metrics count the demo's traffic", func() (bool, string) {
		resp, err := http.Get(hs.URL + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200 && strings.Contains(body, "accord_sync_connections 1") &&
			strings.Contains(body, `accord_sync_frames_in_total{kind="hello"} 1`) &&
			strings.Contains(body, "accord_sync_commit_seconds_count"), body
	})
	if strings.Contains(body, "accord_sync_commit_seconds_count 0\n") {
		t.Fatalf("no commit counted:\n%s", body)
	}
}
