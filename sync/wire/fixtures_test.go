package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"time"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// Realistic frame contents shared by the codec tests, the fuzz seeds and
// the golden files.

// head returns a change hash as the wire carries it: 64 lowercase hex digits.
func head(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:])
}

var (
	// Times with nanoseconds, in UTC and in another zone, and one before
	// 1970 and one past 2106 (the 12-byte msgpack timestamp).
	tCreated   = time.Date(2025, time.October, 17, 9, 30, 0, 123456789, time.UTC)
	tSaved     = time.Date(2025, time.October, 19, 16, 4, 5, 987654321, time.FixedZone("CEST", 2*60*60))
	tReopened  = time.Date(2025, time.October, 20, 8, 0, 0, 1, time.UTC)
	tResaved   = time.Date(2025, time.October, 21, 11, 15, 42, 500000000, time.UTC)
	tDiscarded = time.Date(1969, time.July, 20, 20, 17, 40, 0, time.UTC)
	tFar       = time.Date(2242, time.March, 1, 0, 0, 0, 999999999, time.UTC)
)

// choiceDefinition is one choice question with options and criteria.
func choiceDefinition() question.Definition {
	return question.Definition{Questions: []question.Question{{
		ID:      "q1",
		Text:    "How should onboarding work?",
		Context: "New members currently get a blank workspace.",
		Options: []question.Option{
			{ID: "o1", Label: "Guided tour"},
			{ID: "o2", Label: "Template workspace"},
			{ID: "o3", Label: "Email course"},
		},
		Criteria: []question.Criterion{
			{ID: "c1", Label: "New device"},
			{ID: "c2", Label: "No new storage"},
			{ID: "c3", Label: "Easy reset"},
		},
	}}}
}

// writtenDefinition is one written question: response text, no options.
func writtenDefinition() question.Definition {
	return question.Definition{Questions: []question.Question{{
		ID:       "q1",
		Text:     "What should the welcome email say?",
		Response: question.Text,
		Options:  []question.Option{},
	}}}
}

// settledRecord is a choice decision settled twice: its first answer,
// with marks and a why, is in history.
func settledRecord() question.Record {
	return question.Record{
		ID:         "d-7f3a",
		Key:        "onboarding-flow",
		Origin:     question.FromPlanner,
		Status:     question.Settled,
		Definition: choiceDefinition(),
		Generation: 2,
		Answer: &question.Answer{
			Generation: 2,
			Answers: []question.QuestionAnswer{{
				Question: "q1",
				Choices:  []string{"o2"},
				Marks:    marks.Snapshot{"o1/c1": marks.No, "o2/c1": marks.Yes, "o2/c2": marks.Partly, "o3/c3": marks.Yes},
			}},
			By: "sam",
			At: tResaved,
		},
		Why:   "A template works on a new device without extra storage.",
		WhyBy: "sam",
		History: []question.HistoryEntry{{
			Answer: question.Answer{
				Generation: 1,
				Answers: []question.QuestionAnswer{{
					Question: "q1",
					Choices:  []string{"o1"},
					Marks:    marks.Snapshot{"o1/c1": marks.Yes, "o1/c2": marks.No},
				}},
				By: "ada",
				At: tSaved,
			},
			Why:        "The tour needs no setup.",
			WhyBy:      "ada",
			ReopenedBy: "sam",
			ReopenedAt: tReopened,
		}},
		Revision:  "rev-41",
		Passage:   []string{"blk-onboarding", "blk-onboarding-2"},
		ChildID:   "question:d-7f3a",
		CreatedBy: "planner",
		CreatedAt: tCreated,
		Appended: map[string]question.Appended{
			"k-opt-3":  {Kind: "option", Question: "q1", ID: "o3"},
			"k-crit-3": {Kind: "criterion", Question: "q1", ID: "c3"},
		},
	}
}

// openWrittenRecord is an open written decision.
func openWrittenRecord() question.Record {
	return question.Record{
		ID:         "d-91bc",
		Key:        "welcome-email",
		Origin:     question.FromPerson,
		Status:     question.Open,
		Definition: writtenDefinition(),
		Generation: 1,
		Passage:    []string{"blk-email"},
		CreatedBy:  "ada",
		CreatedAt:  tFar,
	}
}

// discardedRecord was settled with a written answer, reopened, then set
// aside.
func discardedRecord() question.Record {
	return question.Record{
		ID:         "d-0001",
		Key:        "old-question",
		Origin:     question.FromChat,
		Status:     question.Discarded,
		Definition: writtenDefinition(),
		Generation: 2,
		History: []question.HistoryEntry{{
			Answer: question.Answer{
				Generation: 1,
				Answers:    []question.QuestionAnswer{{Question: "q1", Text: "Welcome aboard!\nLine two, ünïcödé ✓"}},
				By:         "lily",
				At:         tSaved,
			},
			ReopenedBy: "ada",
			ReopenedAt: tReopened,
		}},
		CreatedBy:   "chat",
		CreatedAt:   tCreated,
		DiscardedBy: "ada",
		DiscardedAt: tDiscarded,
	}
}

// blob is binary content that is not valid UTF-8, as automerge bytes are.
func blob(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*37)
	}
	return b
}

// frame is one named fixture.
type frame struct {
	name string
	msg  Message
	// reply marks a Reply: only DecodeServerFrame decodes it as one.
	reply bool
}

func hdr(kind Kind) Header             { return Header{Kind: kind} }
func req(kind Kind, rid string) Header { return Header{Kind: kind, RID: rid} }
func opt(id, label string) *question.Option {
	return &question.Option{ID: id, Label: label}
}

// baseFrames returns one or more realistic frames of every kind but those
// of findings (findingFrames), freshly built so a test may change them.
func baseFrames() []frame {
	settled, open, discarded := settledRecord(), openWrittenRecord(), discardedRecord()
	def := choiceDefinition()
	h1, h2, h3 := head("a"), head("b"), head("c")
	return []frame{
		// Handshake.
		{name: "hello", msg: &Hello{Header: hdr(KindHello), V: Version, Have: map[string][]string{
			settled.ID: {h1, h2},
			open.ID:    {h3},
		}}},
		{name: "hello-fresh", msg: &Hello{Header: hdr(KindHello), V: Version}},
		{name: "hello-deflate", msg: &Hello{Header: hdr(KindHello), V: Version, Deflate: true}},
		{name: "welcome", msg: &Welcome{Header: hdr(KindWelcome), V: Version, Doc: "plan-42", Member: "ada", Write: true,
			Records: []question.Record{settled, open, discarded}}},
		{name: "error", msg: &Error{Header: hdr(KindError), Reason: "version", Message: "this server speaks protocol version 1"}},

		// Requests.
		{name: "create", msg: &Create{Header: req(KindCreate, "r1"), Cards: []Card{
			{Key: "welcome-email", Origin: question.FromPerson, Definition: writtenDefinition(), Revision: "rev-41", Passage: []string{"blk-email"}},
			{Key: "onboarding-flow", Origin: question.FromPlanner, Definition: def, Revision: "rev-41", Passage: []string{"blk-onboarding", "blk-onboarding-2"}},
		}}},
		{name: "edit", msg: &Edit{Header: req(KindEdit, "r2"), ID: open.ID, Changes: blob(300, 0x85)}},
		{name: "submit", msg: &Submit{Header: req(KindSubmit, "r3"), Items: []SubmitItem{
			{ID: settled.ID, Heads: []string{h1, h2}},
			{ID: open.ID, Heads: []string{h3}},
		}}},
		{name: "reopen", msg: &Target{Header: req(KindReopen, "r4"), ID: settled.ID}},
		{name: "discard", msg: &Target{Header: req(KindDiscard, "r5"), ID: open.ID}},
		{name: "expand", msg: &Target{Header: req(KindExpand, "r6"), ID: settled.ID}},
		{name: "option", msg: &Append{Header: req(KindOption, "r7"), ID: settled.ID, Question: "q1", Key: "k-opt-4", Label: "Video walkthrough"}},
		{name: "criterion", msg: &Append{Header: req(KindCriterion, "r8"), ID: settled.ID, Question: "q1", Key: "k-crit-4", Label: "Works offline"}},
		{name: "why", msg: &Why{Header: req(KindWhy, "r9"), ID: settled.ID, Text: "A template works on a new device without extra storage."}},
		{name: "why-clear", msg: &Why{Header: req(KindWhy, "r10"), ID: settled.ID}},
		{name: "sync", msg: &Sync{Header: hdr(KindSync), ID: open.ID, Msg: blob(64, 0x42)}},
		{name: "provenance", msg: &Target{Header: req(KindProvenance, "r11"), ID: open.ID}},
		{name: "presence-publish", msg: &Presence{Header: hdr(KindPresence), State: &PresenceState{Decision: open.ID, Question: "q1", Field: "text",
			Selection: []int{4, 12}, Editing: true}}},

		// Replies.
		{reply: true, name: "create-reply", msg: &Reply{Header: req(KindCreate, "r1"), OK: true, Records: []question.Record{open, settled}}},
		{reply: true, name: "edit-reply", msg: &Reply{Header: req(KindEdit, "r2"), ID: open.ID, OK: true, Heads: []string{h3}}},
		{reply: true, name: "edit-refused", msg: &Reply{Header: req(KindEdit, "r2"), ID: open.ID, Reason: question.Invalid,
			Message: "cell o9/c1 is not in the definition", Reset: true, Heads: []string{h1}, Doc: blob(500, 0x6d)}},
		{reply: true, name: "submit-reply", msg: &Reply{Header: req(KindSubmit, "r3"), OK: true, Results: []SubmitResult{
			{ID: settled.ID, OK: true, Record: &settled},
			{ID: open.ID, Reason: question.Stale, Message: "the displayed draft is not the accepted one"},
		}}},
		{reply: true, name: "reopen-reply", msg: &Reply{Header: req(KindReopen, "r4"), ID: settled.ID, OK: true, Record: &settled}},
		{reply: true, name: "discard-reply", msg: &Reply{Header: req(KindDiscard, "r5"), ID: discarded.ID, OK: true, Record: &discarded}},
		{reply: true, name: "discard-refused", msg: &Reply{Header: req(KindDiscard, "r5"), ID: "d-none", Reason: question.NotFound, Message: "no decision d-none"}},
		{reply: true, name: "expand-reply", msg: &Reply{Header: req(KindExpand, "r6"), ID: settled.ID, OK: true, Record: &settled}},
		{reply: true, name: "option-reply", msg: &Reply{Header: req(KindOption, "r7"), ID: settled.ID, OK: true,
			Option: opt("o4", "Video walkthrough"), Definition: &def}},
		{reply: true, name: "option-repeated", msg: &Reply{Header: req(KindOption, "r7"), ID: settled.ID, OK: true,
			Option: opt("o3", "Email course"), Definition: &def, Repeated: true}},
		{reply: true, name: "criterion-reply", msg: &Reply{Header: req(KindCriterion, "r8"), ID: settled.ID, OK: true,
			Criterion: &question.Criterion{ID: "c4", Label: "Works offline"}, Definition: &def}},
		{reply: true, name: "criterion-refused", msg: &Reply{Header: req(KindCriterion, "r8"), ID: settled.ID,
			Reason: question.Full, Message: "question q1 already has 5 criteria"}},
		{reply: true, name: "provenance-reply", msg: &Reply{Header: req(KindProvenance, "r11"), ID: open.ID, OK: true,
			Provenance: []question.CellProvenance{
				{Generation: 1, Question: "q1", Kind: question.CellChoice, Value: "o2", By: "ada", At: tCreated, Change: h1},
				{Generation: 1, Question: "q1", Kind: question.CellMark, Cell: "o2/c3", Value: "no", By: "ben", At: tSaved, Change: h3,
					Was: "yes", WasBy: "ada"},
			}}},
		{reply: true, name: "why-reply", msg: &Reply{Header: req(KindWhy, "r9"), ID: settled.ID, OK: true, Record: &settled}},

		// Broadcasts.
		{name: "doc", msg: &Doc{Header: hdr(KindDoc), ID: open.ID, Doc: blob(1000, 0x01), Heads: []string{h3}}},
		{name: "doc-deflated", msg: &Doc{Header: hdr(KindDoc), ID: open.ID, Doc: blob(600, 0x02), Heads: []string{h3}, Deflated: true}},
		{name: "changes", msg: &Changes{Header: hdr(KindChanges), ID: open.ID, Changes: blob(120, 0x99), Heads: []string{h1, h3}, By: "ada"}},
		{name: "changes-batched", msg: &Changes{Header: hdr(KindChanges), ID: open.ID, Changes: blob(360, 0x5a), Heads: []string{h3},
			By: "ben", ByAll: []string{"ada", "sam", "ben"}}},
		{name: "changes-cells", msg: &Changes{Header: hdr(KindChanges), ID: open.ID, Changes: blob(90, 0x33), Heads: []string{h3}, By: "ben",
			Cells: []question.CellProvenance{
				{Generation: 1, Question: "q1", Kind: question.CellMark, Cell: "o2/c3", Value: "no", By: "ben", At: tResaved, Change: h3,
					Was: "yes", WasBy: "ada"},
				{Generation: 1, Question: "q2", Kind: question.CellText, By: "ben", At: tFar, Change: h3},
			}}},
		{name: "presence", msg: &Presence{Header: hdr(KindPresence), Conn: "p7", Member: "ada",
			State: &PresenceState{Decision: open.ID, Question: "q1", Field: "o2/c3"}}},
		{name: "presence-left", msg: &Presence{Header: hdr(KindPresence), Conn: "p7", Member: "ada", Left: true}},
		{name: "presence-silent", msg: &Presence{Header: hdr(KindPresence), Conn: "p8", Member: "ben", Silent: true}},
		{name: "created", msg: &Event{Header: hdr(KindCreated), ID: open.ID, Record: &open}},
		{name: "meta", msg: &Event{Header: hdr(KindMeta), ID: settled.ID, Record: &settled}},
		{name: "resolved", msg: &Event{Header: hdr(KindResolved), ID: settled.ID, Record: &settled, Answer: settled.Answer}},
		{name: "reopened", msg: &Event{Header: hdr(KindReopened), ID: settled.ID, Record: &settled}},
		{name: "discarded", msg: &Event{Header: hdr(KindDiscarded), ID: discarded.ID, Record: &discarded}},
		{name: "option-added", msg: &Event{Header: hdr(KindOptionAdded), ID: settled.ID, Question: "q1",
			Option: opt("o4", "Video walkthrough"), Definition: &def, By: "ada"}},
		{name: "criterion-added", msg: &Event{Header: hdr(KindCriterionAdded), ID: settled.ID, Question: "q1",
			Criterion: &question.Criterion{ID: "c4", Label: "Works offline"}, Definition: &def, By: "ada"}},
	}
}

// normalize rewrites v in place to the form both encodings agree on: every
// time in UTC (the same instant), and empty slices and maps as nil (msgpack
// omits empty fields, JSON keeps []). Two frames are equal when their
// normalized forms are reflect.DeepEqual.
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			if v.CanSet() {
				v.Set(reflect.ValueOf(t.UTC()))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			normalize(v.Field(i))
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			normalize(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			normalize(e)
			v.SetMapIndex(iter.Key(), e)
		}
	}
}

// equalFrames reports whether a and b carry the same message (see
// normalize). It changes neither.
func equalFrames(a, b Message) bool {
	return reflect.DeepEqual(normalized(a), normalized(b))
}

// normalized returns a normalized deep copy of m. The copy is made by
// reflection, not by the codec, so a codec bug cannot hide itself.
func normalized(m Message) any {
	c := deepCopy(reflect.ValueOf(m))
	normalize(c)
	return c.Interface()
}

func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Struct:
		if _, ok := v.Interface().(time.Time); ok {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		for i := 0; i < v.NumField(); i++ {
			c.Field(i).Set(deepCopy(v.Field(i)))
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			c.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return c
	}
	return v
}
