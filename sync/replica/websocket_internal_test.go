package replica

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{"2", 2 * time.Second},
		{"999999", 24 * time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
	} {
		resp := &http.Response{Header: http.Header{}}
		if tc.header != "" {
			resp.Header.Set("Retry-After", tc.header)
		}
		if got := retryAfter(resp, now); got != tc.want {
			t.Errorf("Retry-After %q: %v, want %v", tc.header, got, tc.want)
		}
	}
}

// A handshake refused with 503 and Retry-After makes the next redial wait
// at least that long, capped at MaxBackoff; other errors keep the backoff.
func TestRedialHonoursRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		http.Error(w, "document unavailable; retry", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := webSocketDialer(0)(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), http.Header{})
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) || ra.RetryAfter() != 3*time.Second {
		t.Fatalf("dial error %v: want one asking for 3 s", err)
	}
	if !strings.Contains(err.Error(), "503") {
		t.Errorf("dial error %q does not name the status", err)
	}
	c := &Client{opts: Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 5 * time.Second}}
	if d := c.redialWait(0, err); d < 3*time.Second || d > 5*time.Second {
		t.Errorf("wait after a 503 asking for 3 s: %v", d)
	}
	if d := c.redialWait(0, errors.New("connection refused")); d > 10*time.Millisecond {
		t.Errorf("wait after a plain error: %v, want the backoff (at most 10 ms)", d)
	}
	c.opts.MaxBackoff = time.Second
	if d := c.redialWait(0, err); d != time.Second {
		t.Errorf("wait capped by a 1 s MaxBackoff: %v", d)
	}
}
