package crdt

import (
	"testing"
	"time"

	"github.com/accord-crdt/accord/marks"
)

func TestScratchTiming(t *testing.T) {
	d, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.AddQuestion(QuestionShape{ID: "q1", Options: []Item{{"o1", "O1"}, {"o2", "O2"}, {"o3", "O3"}}, Criteria: []Item{{"c1", "C1"}, {"c2", "C2"}}}))
	must(d.AddQuestion(QuestionShape{ID: "q2", Multiple: true, Options: []Item{{"o1", "O1"}, {"o2", "O2"}}, Criteria: []Item{{"c1", "C1"}}}))
	must(d.AddQuestion(QuestionShape{ID: "q3", Written: true}))
	must(d.StartGeneration(1))
	start := time.Now()
	for i := 0; i < 200; i++ {
		must(d.SetMark("q1", "o1", "c1", marks.Yes))
	}
	t.Logf("setmark %v", time.Since(start)/200)
	start = time.Now()
	for i := 0; i < 200; i++ {
		if _, err := d.State(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("state %v", time.Since(start)/200)
	start = time.Now()
	for i := 0; i < 200; i++ {
		must(d.SpliceText("q3", 0, 0, "é😀"))
	}
	t.Logf("splice %v", time.Since(start)/200)
	dr, _ := d.Draft()
	t.Logf("%d runes", len([]rune(dr.Questions["q3"].Text)))
	must(d.SpliceText("q3", 1, 1, "x"))
	dr, _ = d.Draft()
	t.Log(dr.Questions["q3"].Text[:10])
	start = time.Now()
	for i := 0; i < 50; i++ {
		b, _ := d.Snapshot()
		if _, err := Load(b, nil, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("snapshot+load %v", time.Since(start)/50)
}
