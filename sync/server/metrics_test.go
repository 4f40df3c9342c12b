package server_test

import (
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/crdt/crdttest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// gather reads a registry into name{label=value,…} → value; a
// histogram gives its _count and _sum.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			name := f.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.Histogram.GetSampleCount())
				out[name+"_sum"] = m.Histogram.GetSampleSum()
			}
		}
	}
	return out
}

// TestMetricsOverRealTraffic: the collectors registered on a fresh
// registry follow real traffic over sockets: connections, documents,
// frames in and out by kind, refusals by reason, commit groups and their
// latency, outbox depth, catch-up bytes by frame and a slow-consumer
// drop. None is registered without a Registerer, and registering twice on
// one registry fails.
func TestMetricsOverRealTraffic(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startWith(t, setup{
		tune: func(o *server.Options) { o.Registerer = reg; o.Outbox = 4; o.WriteWait = time.Second },
		wrap: func(l net.Listener) net.Listener { return bufferedListener{l} },
	})
	if _, err := server.New(server.Options{Store: ts.store, Authorize: authorize, Registerer: reg}); err == nil {
		t.Fatal("a second server registered on the same registry")
	}
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	rec := ana.create("k1")
	ben.expect(wire.KindDoc)
	const edits = 5
	for i := range edits {
		m := []marks.Mark{marks.Yes, marks.No}[i%2]
		if r := ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", m) }); !r.OK {
			t.Fatalf("edit %d: %+v", i, r)
		}
		ben.expect(wire.KindChanges)
	}
	raw, err := crdttest.RawChange(ana.docs[rec.ID].Save(), []any{"drafts", "1", "q1", "marks", "sms/fast"}, "yes")
	if err != nil {
		t.Fatal(err)
	}
	e := &wire.Edit{Header: wire.Header{Kind: wire.KindEdit}, ID: rec.ID, Changes: raw}
	if r := ana.request(e, &e.Header); r.OK {
		t.Fatal("a rogue mark was accepted")
	}
	// A catch-up by changes: a hello that holds the decision at its
	// creation.
	cat := dialRaw(t, ts, "cy")
	sendFrame(t, cat, &wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version,
		Have: map[string][]string{rec.ID: hexHeads(ben.docs[rec.ID].Heads())}})
	readUntil(t, cat, wire.KindChanges)

	// A member that stops reading is dropped as ana keeps editing.
	dialer := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if tc, ok := c.(*net.TCPConn); ok && err == nil {
			tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	silent, _, err := dialer.Dial(ts.url+"?doc=plan-1&member=sid", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	sendFrame(t, silent, &wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version})
	n := 0
	for ; ts.srv.Stats().SlowDrops == 0; n++ {
		if n > 2000 {
			t.Fatal("the silent member was never dropped")
		}
		m := []marks.Mark{marks.Yes, marks.No}[n%2]
		if r := ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", m) }); !r.OK {
			t.Fatalf("edit: %+v", r)
		}
	}

	// The dropped member's connection ends; three remain.
	testutil.Eventually(t, "the dropped connection to end", func() bool { return ts.srv.Stats().Connections == 3 })
	got := gather(t, reg)
	for name, want := range map[string]float64{
		"accord_sync_connections":                             3,
		"accord_sync_documents":                               1,
		"accord_sync_frames_in_total{kind=hello}":             4,
		"accord_sync_frames_in_total{kind=question:create}":   1,
		"accord_sync_frames_in_total{kind=question:edit}":     float64(edits + 1 + n),
		"accord_sync_refusals_total{reason=invalid}":          1,
		"accord_sync_slow_drops_total":                        1,
		"accord_sync_frames_out_total{kind=question:created}": 2,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	for _, name := range []string{
		"accord_sync_frames_out_total{kind=welcome}",
		"accord_sync_frames_out_total{kind=question:changes}",
		"accord_sync_frames_out_total{kind=question:doc}",
		"accord_sync_catchup_bytes_total{frame=changes}",
		"accord_sync_catchup_bytes_total{frame=doc}",
		"accord_sync_commit_group_size_count",
		"accord_sync_commit_seconds_count",
		"accord_sync_commit_seconds_sum",
		"accord_sync_outbox_depth_count",
	} {
		if got[name] <= 0 {
			t.Errorf("%s = %v, want more than 0", name, got[name])
		}
	}
	if got["accord_sync_commit_seconds_count"] < float64(edits+n) {
		t.Errorf("%v commits timed for %d accepted edits", got["accord_sync_commit_seconds_count"], edits+n)
	}
	if _, ok := got["accord_sync_commit_failures_total"]; !ok {
		t.Error("no commit failure counter")
	}
	t.Logf("dropped after %d edits; %d series", n, len(got))
}

func dialRaw(t *testing.T, ts *testServer, member string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(ts.url+"?doc=plan-1&member="+member, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func sendFrame(t *testing.T, ws *websocket.Conn, m wire.Message) {
	t.Helper()
	b, err := wire.Encode(m, wire.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		t.Fatal(err)
	}
}

func readUntil(t *testing.T, ws *websocket.Conn, kind wire.Kind) wire.Message {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer ws.SetReadDeadline(time.Time{})
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.DecodeServerFrame(data, wire.Binary)
		if err != nil {
			t.Fatal(err)
		}
		if m.FrameKind() == kind {
			return m
		}
	}
}
