package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prometheus collectors of a Server, registered on
// Options.Registerer. A nil *metrics (no Registerer) records nothing.
type metrics struct {
	framesIn, framesOut *prometheus.CounterVec // by kind
	refusals            *prometheus.CounterVec // by reason
	catchUpBytes        *prometheus.CounterVec // by frame: doc, changes
	groupSize           prometheus.Histogram
	commitSeconds       prometheus.Histogram
	commitFailures      prometheus.Counter
	outboxDepth         prometheus.Histogram
	slowDrops           prometheus.Counter
	throttledFrames     prometheus.Counter
	rateCloses          *prometheus.CounterVec // by limit: frames, bytes
	refusedUpgrades     *prometheus.CounterVec // by limit
}

// newMetrics registers the Server's collectors on reg.
func newMetrics(s *Server, reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	const ns, sub = "accord", "sync"
	m := &metrics{
		framesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "frames_in_total",
			Help: "Frames read from connections, by kind (invalid: did not decode)."}, []string{"kind"}),
		framesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "frames_out_total",
			Help: "Frames written to connections, by kind."}, []string{"kind"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "refusals_total",
			Help: "Refused requests (replies with ok false) and error frames, by reason."}, []string{"reason"}),
		catchUpBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "catchup_bytes_total",
			Help: "Bytes of the per-decision frames of joins and catch-ups, by frame (doc or changes)."}, []string{"frame"}),
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "commit_group_size",
			Help: "Commands decided in one commit group.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "commit_seconds",
			Help: "Time of one group's durable commit.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		commitFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "commit_failures_total",
			Help: "Commit groups whose commit failed (every reply became a refusal)."}),
		outboxDepth: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "outbox_depth",
			Help: "Frames waiting in a connection's outbox when one more is queued.", Buckets: []float64{0, 1, 4, 16, 64, 256, 1024}}),
		slowDrops: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "slow_drops_total",
			Help: "Connections closed as slow: a full outbox, or a write that took longer than WriteWait."}),
		throttledFrames: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "throttled_frames_total",
			Help: "Frames that waited for their connection's rate limits (FrameRate, ByteRate) before being read on."}),
		rateCloses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rate_closes_total",
			Help: "Connections closed (code 1008) for staying over their rate limit longer than MaxThrottle, by limit (frames or bytes)."}, []string{"limit"}),
		refusedUpgrades: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "refused_upgrades_total",
			Help: "Upgrades refused for a cap, by limit: connections, documents (503), member_connections (429), document_connections (503)."}, []string{"limit"}),
	}
	gauges := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "connections",
			Help: "Open connections."}, func() float64 { return float64(s.Stats().Connections) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "documents",
			Help: "Documents loaded."}, func() float64 { return float64(s.Stats().Documents) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "live_decisions",
			Help: "Decisions of loaded documents whose automerge document is in memory, not parked."},
			func() float64 { return float64(s.Stats().LiveDecisions) }),
	}
	for _, c := range append(gauges, m.framesIn, m.framesOut, m.refusals, m.catchUpBytes, m.groupSize, m.commitSeconds,
		m.commitFailures, m.outboxDepth, m.slowDrops, m.throttledFrames, m.rateCloses, m.refusedUpgrades) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) frameIn(kind string) {
	if m != nil {
		m.framesIn.WithLabelValues(kind).Inc()
	}
}

func (m *metrics) frameOut(kind string) {
	if m != nil {
		m.framesOut.WithLabelValues(kind).Inc()
	}
}

func (m *metrics) refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

func (m *metrics) catchUp(frame string, n int) {
	if m != nil {
		m.catchUpBytes.WithLabelValues(frame).Add(float64(n))
	}
}

func (m *metrics) committed(group int, took time.Duration, ok bool) {
	if m == nil {
		return
	}
	m.groupSize.Observe(float64(group))
	if ok {
		m.commitSeconds.Observe(took.Seconds())
	} else {
		m.commitFailures.Inc()
	}
}

func (m *metrics) outbox(depth int) {
	if m != nil {
		m.outboxDepth.Observe(float64(depth))
	}
}

func (m *metrics) slowDrop() {
	if m != nil {
		m.slowDrops.Inc()
	}
}

func (m *metrics) throttled() {
	if m != nil {
		m.throttledFrames.Inc()
	}
}

func (m *metrics) rateClose(limit string) {
	if m != nil {
		m.rateCloses.WithLabelValues(limit).Inc()
	}
}

func (m *metrics) refusedUpgrade(limit string) {
	if m != nil {
		m.refusedUpgrades.WithLabelValues(limit).Inc()
	}
}
