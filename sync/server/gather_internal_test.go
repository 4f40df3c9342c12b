package server

import (
	"testing"
	"time"
)

// TestGatheringExpectsAnEditOnlyAtBurstRates: the document's edit rate
// decides whether a group waits. Edits at human rates never make one
// wait; a burst does within a few edits; a pause after a burst ends it.
func TestGatheringExpectsAnEditOnlyAtBurstRates(t *testing.T) {
	const groupWait = 20 * time.Millisecond
	tests := []struct {
		name string
		gaps []time.Duration // between successive accepted edits
		want bool
	}{
		{"one edit", nil, false},
		{"human rate", []time.Duration{200 * time.Millisecond, 180 * time.Millisecond, 250 * time.Millisecond}, false},
		{"one quick pair in a slow stream", []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 2 * time.Millisecond}, false},
		{"burst", []time.Duration{3 * time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}, true},
		{"slow stream turning into a burst", []time.Duration{time.Second, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond}, true},
		{"burst then a pause", []time.Duration{2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 500 * time.Millisecond}, false},
		{"simultaneous edits", []time.Duration{0, 0}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var g gathering
			now := time.Unix(1000, 0)
			g.noteArrival(now)
			for _, gap := range tc.gaps {
				now = now.Add(gap)
				g.noteArrival(now)
			}
			if got := g.expectsEdit(groupWait); got != tc.want {
				t.Fatalf("expectsEdit = %v with average gap %v, want %v", got, g.gap, tc.want)
			}
		})
	}
}
