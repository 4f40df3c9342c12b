package crdt

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/marks"
)

// model is a plain Go model of one decision document: what State and
// Draft must return after any sequence of edits on one replica.
type model struct {
	gen       uint64
	questions map[string]*modelQuestion
	appended  map[string]Appended
	drafts    map[uint64]map[string]*modelDraft
}

type modelQuestion struct {
	written, multiple bool
	options, criteria []Item
}

type modelDraft struct {
	marks  map[string]marks.Mark // cleared cells hold marks.Cleared
	choice string                // single choice; "" for none
	chosen map[string]bool       // multiple choice
	text   []rune
}

func newModel(shapes []QuestionShape) *model {
	m := &model{questions: map[string]*modelQuestion{}, appended: map[string]Appended{}, drafts: map[uint64]map[string]*modelDraft{}}
	for _, s := range shapes {
		m.questions[s.ID] = &modelQuestion{s.Written, s.Multiple, slices.Clone(s.Options), slices.Clone(s.Criteria)}
	}
	m.startGeneration(1)
	return m
}

func (m *model) startGeneration(g uint64) {
	m.gen = g
	d := map[string]*modelDraft{}
	for id := range m.questions {
		d[id] = &modelDraft{marks: map[string]marks.Mark{}, chosen: map[string]bool{}}
	}
	m.drafts[g] = d
}

func (m *model) clone() *model {
	c := &model{gen: m.gen, questions: map[string]*modelQuestion{}, appended: maps.Clone(m.appended), drafts: map[uint64]map[string]*modelDraft{}}
	for id, q := range m.questions {
		c.questions[id] = &modelQuestion{q.written, q.multiple, slices.Clone(q.options), slices.Clone(q.criteria)}
	}
	for g, d := range m.drafts {
		c.drafts[g] = map[string]*modelDraft{}
		for id, qd := range d {
			c.drafts[g][id] = &modelDraft{maps.Clone(qd.marks), qd.choice, maps.Clone(qd.chosen), slices.Clone(qd.text)}
		}
	}
	return c
}

// draft renders the model's draft of generation g as Draft does.
func (m *model) draft(g uint64) Draft {
	out := Draft{Generation: g, Questions: map[string]QuestionDraft{}}
	for id, qd := range m.drafts[g] {
		q := m.questions[id]
		d := QuestionDraft{Text: string(qd.text)}
		if !q.written {
			d.Marks = maps.Clone(qd.marks)
			for _, o := range q.options {
				if (q.multiple && qd.chosen[o.ID]) || (!q.multiple && qd.choice == o.ID) {
					d.Choices = append(d.Choices, o.ID)
				}
			}
		}
		out.Questions[id] = d
	}
	return out
}

// check compares the document's State and Draft with the model.
func (m *model) check(t *rapid.T, d *Doc) {
	st := stateOf(t, d)
	if st.Generation != m.gen || d.Generation() != m.gen {
		t.Fatalf("generation %d (Generation() %d), model %d", st.Generation, d.Generation(), m.gen)
	}
	if len(st.Questions) != len(m.questions) {
		t.Fatalf("%d questions, model %d", len(st.Questions), len(m.questions))
	}
	for id, q := range m.questions {
		got := st.Questions[id]
		if got == nil || got.Written != q.written || got.Multiple != q.multiple ||
			!slices.Equal(got.Options, q.options) || !slices.Equal(got.Criteria, q.criteria) {
			t.Fatalf("question %s = %+v, model %+v", id, got, q)
		}
	}
	if !maps.Equal(st.Appended, m.appended) {
		t.Fatalf("appended = %v, model %v", st.Appended, m.appended)
	}
	if len(st.Drafts) != len(m.drafts) {
		t.Fatalf("%d drafts, model %d", len(st.Drafts), len(m.drafts))
	}
	for g := range m.drafts {
		want := m.draft(g)
		if got := st.Drafts[g]; !got.Equal(want) || !sameNil(got, want) {
			t.Fatalf("draft %d differs from the model:\n got  %s\n want %s", g, showDraft(got), showDraft(want))
		}
	}
}

// checkDraft compares Draft with the model's current draft.
func (m *model) checkDraft(t *rapid.T, d *Doc) {
	if dr := draftOf(t, d); !dr.Equal(m.draft(m.gen)) || !sameNil(dr, m.draft(m.gen)) {
		t.Fatalf("Draft() differs from the model's current draft:\n got  %s\n want %s", showDraft(dr), showDraft(m.draft(m.gen)))
	}
}

// sameNil checks what Equal does not: a choice question's marks map is
// never nil (a missing map reads as empty), a written one's always is.
func sameNil(a, b Draft) bool {
	for id, q := range a.Questions {
		if (q.Marks == nil) != (b.Questions[id].Marks == nil) {
			return false
		}
	}
	return true
}

func showDraft(d Draft) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(d.Questions)) {
		q := d.Questions[id]
		fmt.Fprintf(&b, "[%s marks %v choices %v text %q] ", id, q.Marks, q.Choices, q.Text)
	}
	return b.String()
}

// wantErr checks err against the sentinel the model expects (nil for
// success).
func wantErr(t *rapid.T, what string, err, want error) {
	if (err == nil) != (want == nil) || (want != nil && !errors.Is(err, want)) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// TestModel runs random sequences of every operation on one replica (the
// authority, which may also append and reopen) and compares State and
// Draft with a plain Go model after each one. Operations the document must
// refuse (cells, options and positions it does not have) are drawn too,
// and must change nothing.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		actor := drawActors(t, 1)[0]
		d, err := New(Options{Actor: actor, Now: testNow})
		ok(t, err)
		for _, s := range testShapes() {
			ok(t, d.AddQuestion(s))
		}
		ok(t, d.StartGeneration(1))
		m := newModel(testShapes())

		type checkpoint struct {
			heads Heads
			m     *model
		}
		var saved []checkpoint
		minted := 0

		// item draws an option or criterion id of q, sometimes one it lacks.
		item := func(t *rapid.T, items []Item, label string) (string, bool) {
			if len(items) == 0 || rapid.IntRange(0, 9).Draw(t, label+" is unknown") == 0 {
				return "zz", false
			}
			return rapid.SampledFrom(ids(items)).Draw(t, label), true
		}
		choiceQuestion := rapid.SampledFrom([]string{qPick, qMany})

		t.Repeat(map[string]func(*rapid.T){
			"SetMark": func(t *rapid.T) {
				q := choiceQuestion.Draw(t, "question")
				o, okO := item(t, m.questions[q].options, "option")
				c, okC := item(t, m.questions[q].criteria, "criterion")
				mk := rapid.SampledFrom([]marks.Mark{marks.Yes, marks.Partly, marks.No, marks.Cleared, "maybe"}).Draw(t, "mark")
				err := d.SetMark(q, o, c, mk)
				if !okO || !okC || mk == "maybe" {
					wantErr(t, "SetMark", err, ErrInvalid)
					return
				}
				wantErr(t, "SetMark", err, nil)
				m.drafts[m.gen][q].marks[marks.Key(o, c)] = mk
			},
			"SetMarkOnWritten": func(t *rapid.T) {
				wantErr(t, "SetMark on a written question", d.SetMark(qWhy, "o1", "c1", marks.Yes), ErrWrongKind)
			},
			"Choose": func(t *rapid.T) {
				q := choiceQuestion.Draw(t, "question")
				o, known := item(t, m.questions[q].options, "option")
				on := rapid.Bool().Draw(t, "on")
				err := d.Choose(q, o, on)
				if !known {
					wantErr(t, "Choose", err, ErrInvalid)
					return
				}
				wantErr(t, "Choose", err, nil)
				qd := m.drafts[m.gen][q]
				switch {
				case m.questions[q].multiple:
					qd.chosen[o] = on
				case on:
					qd.choice = o
				case qd.choice == o:
					qd.choice = ""
				}
			},
			"SpliceText": func(t *rapid.T) {
				qd := m.drafts[m.gen][qWhy]
				n := len(qd.text)
				pos := rapid.IntRange(-1, n+1).Draw(t, "pos")
				del := rapid.IntRange(-1, 4).Draw(t, "del")
				ins := rapid.StringOfN(rapid.RuneFrom([]rune("aé😀 z")), 0, 5, -1).Draw(t, "insert")
				err := d.SpliceText(qWhy, pos, del, ins)
				if pos < 0 || del < 0 || pos > n || del > n-pos {
					wantErr(t, "SpliceText", err, ErrInvalid)
					return
				}
				wantErr(t, "SpliceText", err, nil)
				qd.text = slices.Concat(qd.text[:pos], []rune(ins), qd.text[pos+del:])
			},
			"SetText": func(t *rapid.T) {
				s := rapid.StringOfN(rapid.RuneFrom([]rune("abé😀 ")), 0, 10, -1).Draw(t, "text")
				ok(t, d.SetText(qWhy, s))
				m.drafts[m.gen][qWhy].text = []rune(s)
			},
			"Append": func(t *rapid.T) {
				q := choiceQuestion.Draw(t, "question")
				criterion := rapid.Bool().Draw(t, "criterion (not option)")
				key := rapid.SampledFrom([]string{"k1", "k2", "k3", "k4", "k5", "k6"}).Draw(t, "key")
				add, list, kind := d.AppendOption, &m.questions[q].options, "option"
				if criterion {
					add, list, kind = d.AppendCriterion, &m.questions[q].criteria, "criterion"
				}
				// Mostly a fresh id; sometimes one the list already has.
				id := fmt.Sprintf("n%d", minted+1)
				if rapid.IntRange(0, 4).Draw(t, "reuse an id") == 0 && len(*list) > 0 {
					id = rapid.SampledFrom(ids(*list)).Draw(t, "reused id")
				}
				heads := d.Heads()
				it, repeated, err := add(q, key, Item{ID: id, Label: "L" + id})
				if prev, seen := m.appended[key]; seen {
					wantErr(t, "repeated append", err, nil)
					if !repeated || it.ID != prev.ID || !d.Heads().Equal(heads) {
						t.Fatalf("repeated key %s: %v, repeated %v, heads moved %v; want %s", key, it, repeated, !d.Heads().Equal(heads), prev.ID)
					}
					return
				}
				if hasItem(*list, id) {
					wantErr(t, "append of an id the list has", err, ErrInvalid)
					return
				}
				wantErr(t, "append", err, nil)
				if repeated || it.ID != id {
					t.Fatalf("append under new key %s returned %v, repeated %v", key, it, repeated)
				}
				minted++
				*list = append(*list, Item{ID: id, Label: "L" + id})
				m.appended[key] = Appended{Kind: kind, Question: q, ID: id}
			},
			"Reopen": func(t *rapid.T) {
				if rapid.IntRange(0, 4).Draw(t, "stale generation") == 0 {
					wantErr(t, "StartGeneration(current)", d.StartGeneration(m.gen), ErrInvalid)
					return
				}
				g := m.gen + uint64(rapid.IntRange(1, 2).Draw(t, "generations ahead"))
				ok(t, d.StartGeneration(g))
				m.startGeneration(g)
			},
			"Checkpoint": func(t *rapid.T) {
				saved = append(saved, checkpoint{d.Heads(), m.clone()})
			},
			"Rollback": func(t *rapid.T) {
				if len(saved) == 0 {
					t.Skip("no checkpoint")
				}
				i := rapid.IntRange(0, len(saved)-1).Draw(t, "checkpoint")
				ok(t, d.Rollback(saved[i].heads))
				m = saved[i].m.clone()
				saved = saved[:i+1]
			},
			"Reload": func(t *rapid.T) {
				var data []byte
				if rapid.Bool().Draw(t, "snapshot (not save)") {
					var err error
					data, err = d.Snapshot()
					ok(t, err)
				} else {
					data = d.Save()
				}
				heads := d.Heads()
				back, err := Load(data, nil, Options{Actor: actor, Now: testNow})
				ok(t, err)
				if !back.Heads().Equal(heads) {
					t.Fatalf("reload: heads %v, want %v", back.Heads(), heads)
				}
				d = back
			},
			"Draft": func(t *rapid.T) { m.checkDraft(t, d) },
			"":      func(t *rapid.T) { m.check(t, d) },
		})
		m.checkDraft(t, d)
	})
}
