package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/accord-crdt/accord/question"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

var formats = []struct {
	name string
	f    Format
}{{"binary", Binary}, {"text", Text}}

func mustEncode(t testing.TB, m Message, f Format) []byte {
	t.Helper()
	b, err := Encode(m, f)
	if err != nil {
		t.Fatalf("Encode %s: %v", m.FrameKind(), err)
	}
	return b
}

// decodeAsReceiver decodes a frame the way its receiver does: replies and
// broadcasts with DecodeServerFrame, requests and hello with Decode.
func decodeAsReceiver(t testing.TB, fr frame, b []byte, f Format) Message {
	t.Helper()
	dec := Decode
	if fr.reply || !IsRequest(fr.msg.FrameKind()) && fr.msg.FrameKind() != KindHello {
		dec = DecodeServerFrame
	}
	m, err := dec(b, f)
	if err != nil {
		t.Fatalf("decode %s: %v", fr.name, err)
	}
	return m
}

func TestFramesCoverEveryKind(t *testing.T) {
	kinds := Kinds()
	if len(kinds) != 28 {
		t.Fatalf("Kinds() lists %d kinds", len(kinds))
	}
	requests, replies := map[Kind]bool{}, map[Kind]bool{}
	for _, fr := range frames() {
		if fr.reply {
			replies[fr.msg.FrameKind()] = true
		} else {
			requests[fr.msg.FrameKind()] = true
		}
	}
	for _, k := range kinds {
		if newMessage(k) == nil {
			t.Errorf("newMessage(%q) = nil", k)
		}
		if !requests[k] {
			t.Errorf("no fixture of kind %q", k)
		}
		if IsRequest(k) && !replies[k] {
			t.Errorf("no reply fixture of kind %q", k)
		}
	}
	for k := range requests {
		if !slices.Contains(kinds, k) {
			t.Errorf("fixture kind %q is not a known kind", k)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, fr := range frames() {
		for _, ff := range formats {
			t.Run(fr.name+"/"+ff.name, func(t *testing.T) {
				b := mustEncode(t, fr.msg, ff.f)
				got := decodeAsReceiver(t, fr, b, ff.f)
				if reflect.TypeOf(got) != reflect.TypeOf(fr.msg) {
					t.Fatalf("decoded %T, want %T", got, fr.msg)
				}
				if !equalFrames(got, fr.msg) {
					t.Errorf("round trip changed the frame\n got %+v\nwant %+v", got, fr.msg)
				}
				// Encoding the decoded frame again gives the same frame.
				again := decodeAsReceiver(t, fr, mustEncode(t, got, ff.f), ff.f)
				if !equalFrames(again, fr.msg) {
					t.Errorf("second round trip changed the frame")
				}
			})
		}
	}
}

// A client decodes every reply as *Reply (replies share their request's
// kind), and every other frame as Decode does.
func TestDecodeServerFrame(t *testing.T) {
	for _, fr := range frames() {
		for _, ff := range formats {
			b := mustEncode(t, fr.msg, ff.f)
			m, err := DecodeServerFrame(b, ff.f)
			if err != nil {
				t.Fatalf("%s/%s: %v", fr.name, ff.name, err)
			}
			kind := fr.msg.FrameKind()
			if IsRequest(kind) {
				r, ok := m.(*Reply)
				if !ok {
					t.Fatalf("%s/%s: DecodeServerFrame gave %T, want *Reply", fr.name, ff.name, m)
				}
				if r.Kind != kind {
					t.Errorf("%s/%s: reply kind %q, want %q", fr.name, ff.name, r.Kind, kind)
				}
				continue
			}
			if reflect.TypeOf(m) != reflect.TypeOf(fr.msg) {
				t.Errorf("%s/%s: DecodeServerFrame gave %T, want %T", fr.name, ff.name, m, fr.msg)
			}
		}
	}
	// On the server, a request decodes as itself, never as a reply.
	for _, fr := range frames() {
		if !IsRequest(fr.msg.FrameKind()) || fr.reply {
			continue
		}
		m, err := Decode(mustEncode(t, fr.msg, Text), Text)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*Reply); ok {
			t.Errorf("%s: Decode gave a *Reply", fr.name)
		}
	}
}

func TestRefusedReply(t *testing.T) {
	for _, ff := range formats {
		in := &Reply{Header: req(KindEdit, "r2"), ID: "d-91bc", Reason: question.Invalid,
			Message: "mark maybe is not yes, partly or no", Reset: true, Doc: blob(40, 3)}
		m, err := DecodeServerFrame(mustEncode(t, in, ff.f), ff.f)
		if err != nil {
			t.Fatal(err)
		}
		r := m.(*Reply)
		if r.OK || r.Reason != question.Invalid || !r.Reset || r.RID != "r2" || !bytes.Equal(r.Doc, in.Doc) || r.Message != in.Message {
			t.Errorf("%s: refused reply came back as %+v", ff.name, r)
		}
	}
}

// Times keep their instant to the nanosecond in both encodings, whatever
// their zone, before 1970 and after 2106; zero times stay zero.
func TestTimesSurvive(t *testing.T) {
	want := settledRecord()
	wantDiscarded := discardedRecord()
	wantOpen := openWrittenRecord()
	w := &Welcome{Header: hdr(KindWelcome), V: Version, Doc: "plan-42", Member: "ada",
		Records: []question.Record{want, wantDiscarded, wantOpen}}
	for _, ff := range formats {
		m, err := DecodeServerFrame(mustEncode(t, w, ff.f), ff.f)
		if err != nil {
			t.Fatal(err)
		}
		recs := m.(*Welcome).Records
		check := func(what string, got, want time.Time) {
			t.Helper()
			if !got.Equal(want) || got.Nanosecond() != want.UTC().Nanosecond() {
				t.Errorf("%s: %s = %v, want %v", ff.name, what, got, want)
			}
		}
		check("createdAt", recs[0].CreatedAt, tCreated)
		check("answer.at", recs[0].Answer.At, tResaved)
		check("history[0].at (CEST)", recs[0].History[0].At, tSaved)
		check("history[0].reopenedAt", recs[0].History[0].ReopenedAt, tReopened)
		check("discardedAt (1969)", recs[1].DiscardedAt, tDiscarded)
		check("createdAt (2242)", recs[2].CreatedAt, tFar)
		if !recs[0].DiscardedAt.IsZero() || !recs[2].DiscardedAt.IsZero() {
			t.Errorf("%s: a zero discardedAt came back as %v", ff.name, recs[0].DiscardedAt)
		}
	}
	// JSON writes RFC 3339 with nanoseconds; discardedAt is omitted when
	// zero.
	b := mustEncode(t, &Event{Header: hdr(KindMeta), ID: want.ID, Record: &want}, Text)
	for _, s := range []string{`"createdAt":"2025-10-17T09:30:00.123456789Z"`, `"at":"2025-10-19T16:04:05.987654321+02:00"`} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("JSON lacks %s:\n%s", s, b)
		}
	}
	if bytes.Contains(b, []byte("discardedAt")) {
		t.Errorf("JSON carries a zero discardedAt:\n%s", b)
	}
}

// Byte fields are msgpack bin and JSON base64, and survive both, including
// bytes that are not UTF-8.
func TestBytesSurvive(t *testing.T) {
	changes := blob(300, 0x85)
	msgs := []struct {
		m     Message
		get   func(Message) []byte
		reply bool
	}{
		{&Edit{Header: req(KindEdit, "r"), ID: "d1", Changes: changes}, func(m Message) []byte { return m.(*Edit).Changes }, false},
		{&Sync{Header: hdr(KindSync), ID: "d1", Msg: changes}, func(m Message) []byte { return m.(*Sync).Msg }, false},
		{&Doc{Header: hdr(KindDoc), ID: "d1", Doc: changes}, func(m Message) []byte { return m.(*Doc).Doc }, false},
		{&Changes{Header: hdr(KindChanges), ID: "d1", Changes: changes}, func(m Message) []byte { return m.(*Changes).Changes }, false},
		{&Reply{Header: req(KindEdit, "r"), ID: "d1", Reset: true, Doc: changes}, func(m Message) []byte { return m.(*Reply).Doc }, true},
	}
	for _, tc := range msgs {
		for _, ff := range formats {
			b := mustEncode(t, tc.m, ff.f)
			got := decodeAsReceiver(t, frame{name: string(tc.m.FrameKind()), msg: tc.m, reply: tc.reply}, b, ff.f)
			if !bytes.Equal(tc.get(got), changes) {
				t.Errorf("%s/%s: bytes changed", tc.m.FrameKind(), ff.name)
			}
			if ff.f == Text && !bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(changes))) {
				t.Errorf("%s: JSON does not carry the bytes as base64: %s", tc.m.FrameKind(), b)
			}
			if ff.f == Binary && !bytes.Contains(b, append([]byte{0xc5, 0x01, 0x2c}, changes...)) {
				t.Errorf("%s: msgpack does not carry the bytes as bin16", tc.m.FrameKind())
			}
		}
	}
}

// A msgpack frame and a JSON frame of the same message decode to equal
// values.
func TestFormatsAgree(t *testing.T) {
	for _, fr := range frames() {
		bin := decodeAsReceiver(t, fr, mustEncode(t, fr.msg, Binary), Binary)
		txt := decodeAsReceiver(t, fr, mustEncode(t, fr.msg, Text), Text)
		if !equalFrames(bin, txt) {
			t.Errorf("%s: msgpack and JSON decode differently\nmsgpack %+v\n   JSON %+v", fr.name, bin, txt)
		}
	}
}

// Both encodings use the same field names: every key of a JSON frame is
// a key of the msgpack frame, at every level.
func TestFormatsShareFieldNames(t *testing.T) {
	for _, fr := range frames() {
		var fromJSON, fromMsgpack any
		if err := json.Unmarshal(mustEncode(t, fr.msg, Text), &fromJSON); err != nil {
			t.Fatal(err)
		}
		if err := msgpack.Unmarshal(mustEncode(t, fr.msg, Binary), &fromMsgpack); err != nil {
			t.Fatal(err)
		}
		jk, mk := keys(fromJSON, ""), keys(fromMsgpack, "")
		for k := range mk {
			if !jk[k] {
				t.Errorf("%s: msgpack key %s is not in the JSON", fr.name, k)
			}
		}
		// msgpack omits empty fields; every non-empty JSON field is there.
		for k := range keys(dropEmpty(fromJSON), "") {
			if !mk[k] {
				t.Errorf("%s: JSON key %s is not in the msgpack", fr.name, k)
			}
		}
	}
}

// keys lists the paths of every map key in v, array indexes left out.
func keys(v any, prefix string) map[string]bool {
	out := map[string]bool{}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out[prefix+"."+k] = true
			for p := range keys(x, prefix+"."+k) {
				out[p] = true
			}
		}
	case []any:
		for _, x := range v {
			for p := range keys(x, prefix+"[]") {
				out[p] = true
			}
		}
	}
	return out
}

// dropEmpty removes JSON members holding false, 0, "", null, [] or {}.
func dropEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			x = dropEmpty(x)
			switch y := x.(type) {
			case nil:
				continue
			case bool:
				if !y {
					continue
				}
			case float64:
				if y == 0 {
					continue
				}
			case string:
				if y == "" || y == "0001-01-01T00:00:00Z" {
					continue
				}
			case []any:
				if len(y) == 0 {
					continue
				}
			case map[string]any:
				if len(y) == 0 {
					continue
				}
			}
			out[k] = x
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropEmpty(x)
		}
		return out
	}
	return v
}

// goldenFrames are the frames whose JSON is pinned in testdata/golden.
var goldenFrames = []string{
	"hello", "criterion", "criterion-reply", "criterion-refused", "option-repeated",
	"criterion-added", "option-added", "edit-refused", "submit-reply", "resolved", "changes", "changes-batched",
	"explore-research", "explore-ask", "take", "explore-reply", "provenance", "provenance-reply", "changes-cells",
	"presence-publish", "presence", "presence-left", "presence-silent",
}

// The JSON encoding is pinned, so the field names stay those of the spec.
// Run with -update to rewrite the files after a deliberate change.
func TestGoldenJSON(t *testing.T) {
	byName := map[string]frame{}
	for _, fr := range frames() {
		byName[fr.name] = fr
	}
	for _, name := range goldenFrames {
		fr, ok := byName[name]
		if !ok {
			t.Fatalf("no fixture %q", name)
		}
		var got bytes.Buffer
		if err := json.Indent(&got, mustEncode(t, fr.msg, Text), "", "  "); err != nil {
			t.Fatal(err)
		}
		got.WriteByte('\n')
		path := filepath.Join("testdata", "golden", name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGoldenJSON -update)", err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: JSON differs from %s\n got %s\nwant %s", name, path, got.Bytes(), want)
		}
		// The golden file decodes back to the fixture, in the receiver's
		// way.
		m := decodeAsReceiver(t, fr, want, Text)
		if !equalFrames(m, fr.msg) {
			t.Errorf("%s: golden file decodes to %+v", name, m)
		}
	}
}

// The spec's request, reply and broadcast shapes for question:option and
// question:criterion, member for member.
func TestSpecFieldNames(t *testing.T) {
	byName := map[string]frame{}
	for _, fr := range frames() {
		byName[fr.name] = fr
	}
	cases := []struct {
		frame string
		want  []string
		ok    any // the ok member: true, false, or nil for none
	}{
		// { kind: "question:criterion", rid, id, question, key, label }
		{"criterion", []string{"kind", "rid", "id", "question", "key", "label"}, nil},
		{"option", []string{"kind", "rid", "id", "question", "key", "label"}, nil},
		// { kind, id, ok: true, criterion, definition, repeated? }
		{"criterion-reply", []string{"kind", "rid", "id", "ok", "criterion", "definition"}, true},
		{"option-reply", []string{"kind", "rid", "id", "ok", "option", "definition"}, true},
		{"option-repeated", []string{"kind", "rid", "id", "ok", "option", "definition", "repeated"}, true},
		// { kind, id, ok: false, reason, message }
		{"criterion-refused", []string{"kind", "rid", "id", "ok", "reason", "message"}, false},
		// { kind: "question:criterion-added", id, question, criterion, definition, by }
		{"criterion-added", []string{"kind", "id", "question", "criterion", "definition", "by"}, nil},
		{"option-added", []string{"kind", "id", "question", "option", "definition", "by"}, nil},
		// question:why { id, text }
		{"why", []string{"kind", "rid", "id", "text"}, nil},
		{"why-clear", []string{"kind", "rid", "id", "text"}, nil},
		{"edit-refused", []string{"kind", "rid", "id", "ok", "reason", "message", "reset", "doc", "heads"}, false},
		{"hello", []string{"kind", "v", "have"}, nil},
		{"welcome", []string{"kind", "v", "doc", "member", "write", "records"}, nil},
		{"changes", []string{"kind", "id", "changes", "heads", "by"}, nil},
		{"changes-batched", []string{"kind", "id", "changes", "heads", "by", "byAll"}, nil},
		{"changes-cells", []string{"kind", "id", "changes", "heads", "by", "cells"}, nil},
		{"provenance", []string{"kind", "rid", "id"}, nil},
		{"presence-publish", []string{"kind", "state"}, nil},
		{"presence", []string{"kind", "conn", "member", "state"}, nil},
		{"presence-left", []string{"kind", "conn", "member", "left"}, nil},
		{"provenance-reply", []string{"kind", "rid", "id", "ok", "provenance"}, true},
		{"doc", []string{"kind", "id", "doc", "heads"}, nil},
		{"doc-deflated", []string{"kind", "id", "doc", "heads", "deflated"}, nil},
		{"hello-deflate", []string{"kind", "v", "deflate"}, nil},
		{"resolved", []string{"kind", "id", "record", "answer"}, nil},
		{"submit", []string{"kind", "rid", "items"}, nil},
		{"submit-reply", []string{"kind", "rid", "ok", "results"}, true},
	}
	for _, tc := range cases {
		var got map[string]any
		if err := json.Unmarshal(mustEncode(t, byName[tc.frame].msg, Text), &got); err != nil {
			t.Fatal(err)
		}
		var names []string
		for k := range got {
			names = append(names, k)
		}
		slices.Sort(names)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s: members %v, want %v", tc.frame, names, want)
		}
		if tc.ok != nil && got["ok"] != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.frame, got["ok"], tc.ok)
		}
	}
	// The answer of question:resolved carries marks as a flat map.
	var resolved struct {
		Answer struct {
			Answers []struct {
				Marks map[string]string `json:"marks"`
			} `json:"answers"`
		} `json:"answer"`
	}
	if err := json.Unmarshal(mustEncode(t, byName["resolved"].msg, Text), &resolved); err != nil {
		t.Fatal(err)
	}
	if m := resolved.Answer.Answers[0].Marks; m["o2/c2"] != "partly" || len(m) != 4 {
		t.Errorf("resolved answer marks = %v", m)
	}
}

func TestIsRequest(t *testing.T) {
	for _, k := range []Kind{KindCreate, KindEdit, KindSubmit, KindReopen, KindDiscard, KindOption, KindCriterion, KindWhy, KindExpand,
		KindExplore, KindExploreStop, KindTake, KindPage} {
		if !IsRequest(k) {
			t.Errorf("IsRequest(%q) = false", k)
		}
	}
	for _, k := range []Kind{KindHello, KindWelcome, KindError, KindSync, KindDoc, KindChanges, KindCreated, KindMeta,
		KindResolved, KindReopened, KindDiscarded, KindOptionAdded, KindCriterionAdded, "", "question:unknown"} {
		if IsRequest(k) {
			t.Errorf("IsRequest(%q) = true", k)
		}
	}
}

// msgpackMap encodes an arbitrary map with msgpack, for frames Encode
// would not write.
func msgpackMap(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeMalformed(t *testing.T) {
	h := head("x")
	heads := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = head(fmt.Sprint(i))
		}
		return out
	}
	long := strings.Repeat("a", maxIDLen+1)

	// Frames that encode but fail Decode's checks, in both formats.
	invalid := []struct {
		name string
		m    Message
		want string // part of the error
	}{
		{"reopen without id", &Target{Header: req(KindReopen, "r")}, "id must be"},
		{"discard without id", &Target{Header: req(KindDiscard, "r")}, "id must be"},
		{"expand with long id", &Target{Header: req(KindExpand, "r"), ID: long}, "id must be"},
		{"edit without id", &Edit{Header: req(KindEdit, "r"), Changes: []byte{1}}, "id must be"},
		{"empty edit", &Edit{Header: req(KindEdit, "r"), ID: "d1"}, "no changes"},
		{"empty edit bytes", &Edit{Header: req(KindEdit, "r"), ID: "d1", Changes: []byte{}}, "no changes"},
		{"why without id", &Why{Header: req(KindWhy, "r"), Text: "x"}, "id must be"},
		{"why too long", &Why{Header: req(KindWhy, "r"), ID: "d1", Text: strings.Repeat("w", maxText+1)}, "too long"},
		{"option without id", &Append{Header: req(KindOption, "r"), Question: "q1", Key: "k", Label: "l"}, "id must be"},
		{"criterion without question", &Append{Header: req(KindCriterion, "r"), ID: "d1", Key: "k", Label: "l"}, "question must be"},
		{"option key too long", &Append{Header: req(KindOption, "r"), ID: "d1", Question: "q1", Key: strings.Repeat("k", maxKeyLen+1)}, "too long"},
		{"criterion label too long", &Append{Header: req(KindCriterion, "r"), ID: "d1", Question: "q1", Label: strings.Repeat("l", maxLabel+1)}, "too long"},
		{"sync without id", &Sync{Header: hdr(KindSync), Msg: []byte{1}}, "id must be"},
		{"empty sync", &Sync{Header: hdr(KindSync), ID: "d1"}, "empty sync"},
		{"create without cards", &Create{Header: req(KindCreate, "r")}, "0 cards"},
		{"create with too many cards", &Create{Header: req(KindCreate, "r"), Cards: make([]Card, 2*maxCards+1)}, "cards"},
		{"submit without items", &Submit{Header: req(KindSubmit, "r")}, "0 items"},
		{"submit with too many items", &Submit{Header: req(KindSubmit, "r"), Items: func() []SubmitItem {
			it := make([]SubmitItem, maxItems+1)
			for i := range it {
				it[i] = SubmitItem{ID: fmt.Sprint("d", i), Heads: []string{h}}
			}
			return it
		}()}, "items"},
		{"submit item without id", &Submit{Header: req(KindSubmit, "r"), Items: []SubmitItem{{Heads: []string{h}}}}, "id must be"},
		{"submit too many heads", &Submit{Header: req(KindSubmit, "r"), Items: []SubmitItem{{ID: "d1", Heads: heads(maxHeads + 1)}}}, "heads, at most"},
		{"submit short head", &Submit{Header: req(KindSubmit, "r"), Items: []SubmitItem{{ID: "d1", Heads: []string{h[:63]}}}}, "64 hex digits"},
		{"submit long head", &Submit{Header: req(KindSubmit, "r"), Items: []SubmitItem{{ID: "d1", Heads: []string{h + "0"}}}}, "64 hex digits"},
		{"submit non-hex head", &Submit{Header: req(KindSubmit, "r"), Items: []SubmitItem{{ID: "d1", Heads: []string{strings.Repeat("zz", 32)}}}}, "64 hex digits"},
		{"hello too many heads", &Hello{Header: hdr(KindHello), V: 1, Have: map[string][]string{"d1": heads(maxHeads + 1)}}, "heads, at most"},
		{"hello bad head", &Hello{Header: hdr(KindHello), V: 1, Have: map[string][]string{"d1": {"abc"}}}, "64 hex digits"},
		{"hello empty id", &Hello{Header: hdr(KindHello), V: 1, Have: map[string][]string{"": {h}}}, "have id"},
		{"unknown kind", &Header{Kind: "question:explode"}, "unknown kind"},
		{"no kind", &Header{RID: "r1"}, "unknown kind"},
	}
	for _, tc := range invalid {
		for _, ff := range formats {
			b := mustEncode(t, tc.m, ff.f)
			_, err := Decode(b, ff.f)
			if !errors.Is(err, ErrFrame) {
				t.Errorf("%s/%s: Decode error %v, want ErrFrame", tc.name, ff.name, err)
				continue
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s/%s: error %q does not say %q", tc.name, ff.name, err, tc.want)
			}
			if strings.HasPrefix(tc.name, "unknown kind") || tc.name == "no kind" {
				if !errors.Is(err, ErrUnknownKind) {
					t.Errorf("%s/%s: error %v is not ErrUnknownKind", tc.name, ff.name, err)
				}
			}
		}
	}

	// Raw inputs that are not frames at all. Request-shaped ones marked
	// request are refused by Decode only: a client reads a request kind as
	// a reply, whose fields they are not.
	type rawCase struct {
		name    string
		f       Format
		b       []byte
		request bool
	}
	raw := []rawCase{
		{"empty json", Text, nil, false},
		{"empty msgpack", Binary, nil, false},
		{"json not an object", Text, []byte(`[1,2,3]`), false},
		{"json string", Text, []byte(`"hello"`), false},
		{"json null", Text, []byte(`null`), false},
		{"json kind a number", Text, []byte(`{"kind":5}`), false},
		{"json id a number", Text, []byte(`{"kind":"question:reopen","rid":"r","id":7}`), false},
		{"json v a string", Text, []byte(`{"kind":"hello","v":"one"}`), false},
		{"json heads a string", Text, []byte(`{"kind":"question:submit","rid":"r","items":[{"id":"d1","heads":"` + h + `"}]}`), true},
		{"json changes not base64", Text, []byte(`{"kind":"question:edit","rid":"r","id":"d1","changes":"!!"}`), true},
		{"presence selection of three", Text, []byte(`{"kind":"question:presence","state":{"selection":[1,2,3]}}`), false},
		{"presence selection negative", Text, []byte(`{"kind":"question:presence","state":{"selection":[-1,2]}}`), false},
		{"presence field too long", Text, []byte(`{"kind":"question:presence","state":{"field":"` + strings.Repeat("f", 201) + `"}}`), false},
		{"presence decision too long", Text, []byte(`{"kind":"question:presence","state":{"decision":"` + strings.Repeat("d", 65) + `"}}`), false},
		{"json reply heads a string", Text, []byte(`{"kind":"question:edit","rid":"r","ok":true,"heads":"` + h + `"}`), false},
		{"json reply record an array", Text, []byte(`{"kind":"question:reopen","rid":"r","ok":true,"record":[]}`), false},
		{"msgpack reply results a string", Binary, msgpackMap(t, map[string]any{"kind": KindSubmit, "ok": true, "results": "none"}), false},
		{"json ok a string", Text, []byte(`{"kind":"question:edit","rid":"r","ok":"yes"}`), false},
		{"json time not RFC 3339", Text, []byte(`{"kind":"question:meta","id":"d1","record":{"createdAt":"yesterday"}}`), false},
		{"json trailing garbage", Text, []byte(`{"kind":"hello","v":1} x`), false},
		{"json unbalanced", Text, []byte(`]{"kind":"hello"}`), false},
		{"json truncated", Text, []byte(`{"kind":"hello","v":1`), false},
		{"msgpack not a map", Binary, msgpackMap(t, 42), false},
		{"msgpack kind a number", Binary, msgpackMap(t, map[string]any{"kind": 5}), false},
		{"msgpack id an array", Binary, msgpackMap(t, map[string]any{"kind": KindReopen, "rid": "r", "id": []int{1}}), false},
		{"msgpack v a string", Binary, msgpackMap(t, map[string]any{"kind": KindHello, "v": "one"}), false},
		{"msgpack heads a map", Binary, msgpackMap(t, map[string]any{"kind": KindSubmit, "items": []any{map[string]any{"id": "d1", "heads": map[string]int{"a": 1}}}}), true},
		{"msgpack time a bool", Binary, msgpackMap(t, map[string]any{"kind": KindMeta, "id": "d1", "record": map[string]any{"createdAt": true}}), false},
		{"msgpack ok a string", Binary, msgpackMap(t, map[string]any{"kind": KindEdit, "ok": "yes"}), false},
		{"msgpack trailing bytes", Binary, append(msgpackMap(t, map[string]any{"kind": KindHello, "v": 1}), 0xc0), false},
		{"msgpack reserved code", Binary, []byte{0x81, 0xa4, 'k', 'i', 'n', 'd', 0xc1}, false},
		{"msgpack str past the end", Binary, []byte{0x81, 0xa4, 'k', 'i', 'n', 'd', 0xdb, 0xff, 0xff, 0xff, 0xff, 'h'}, false},
		{"msgpack length cut", Binary, []byte{0x81, 0xa4, 'k', 'i', 'n', 'd', 0xdb, 0xff}, false},
	}
	for _, tc := range raw {
		for name, dec := range map[string]func([]byte, Format) (Message, error){"Decode": Decode, "DecodeServerFrame": DecodeServerFrame} {
			if tc.request && name == "DecodeServerFrame" {
				continue
			}
			m, err := dec(tc.b, tc.f)
			if !errors.Is(err, ErrFrame) {
				t.Errorf("%s: %s = %+v, %v; want ErrFrame", tc.name, name, m, err)
			}
		}
	}
}

// Every frame, cut short anywhere, is refused.
func TestDecodeTruncated(t *testing.T) {
	for _, fr := range frames() {
		for _, ff := range formats {
			b := mustEncode(t, fr.msg, ff.f)
			for _, n := range []int{0, 1, len(b) / 3, len(b) / 2, len(b) - 2, len(b) - 1} {
				if n < 0 || n >= len(b) {
					continue
				}
				for name, dec := range map[string]func([]byte, Format) (Message, error){"Decode": Decode, "DecodeServerFrame": DecodeServerFrame} {
					if m, err := dec(b[:n], ff.f); !errors.Is(err, ErrFrame) {
						t.Errorf("%s/%s cut to %d of %d: %s = %T, %v; want ErrFrame", fr.name, ff.name, n, len(b), name, m, err)
					}
				}
			}
		}
	}
}

func TestOversized(t *testing.T) {
	// Decode refuses a frame above MaxFrameBytes before reading it.
	for _, ff := range formats {
		b := mustEncode(t, &Hello{Header: hdr(KindHello), V: 1}, ff.f)
		big := append(bytes.Repeat([]byte(" "), MaxFrameBytes), b...)
		for name, dec := range map[string]func([]byte, Format) (Message, error){"Decode": Decode, "DecodeServerFrame": DecodeServerFrame} {
			_, err := dec(big, ff.f)
			if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), "exceeds") {
				t.Errorf("%s/%s: %v, want ErrFrame exceeding", ff.name, name, err)
			}
		}
	}
	// Encode refuses to write one.
	for _, ff := range formats {
		_, err := Encode(&Doc{Header: hdr(KindDoc), ID: "d1", Doc: make([]byte, MaxFrameBytes)}, ff.f)
		if !errors.Is(err, ErrFrame) {
			t.Errorf("%s: Encode of an oversized frame: %v, want ErrFrame", ff.name, err)
		}
	}
	// A frame just below the cap is fine.
	for _, ff := range formats {
		n := MaxFrameBytes - 200
		if ff.f == Text {
			n = n / 4 * 3 // base64
		}
		m := &Edit{Header: req(KindEdit, "r"), ID: "d1", Changes: make([]byte, n)}
		b := mustEncode(t, m, ff.f)
		if _, err := Decode(b, ff.f); err != nil {
			t.Errorf("%s: a %d-byte frame: %v", ff.name, len(b), err)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// msgpackKV starts a msgpack map of entries entries, with kind first.
func msgpackKV(entries int, kind Kind) []byte {
	b := []byte{0x80 | byte(entries), 0xa4, 'k', 'i', 'n', 'd', 0xd9, byte(len(kind))}
	return append(b, kind...)
}

func msgpackStr(b []byte, s string) []byte {
	b = append(b, 0xd9, byte(len(s)))
	return append(b, s...)
}

// The msgpack decoder sizes slices and maps from their declared length
// before reading any element (in v5.4.1 even when alloc limits are on),
// and turns each one-byte element into a Go value of up to a few hundred
// bytes; its skipping recurses once per level of nesting. Decode must
// refuse such frames before they reach it, allocating next to nothing.
func TestAllocationGuard(t *testing.T) {
	const budget = 4 << 20 // bytes a refused frame may cost, at most

	array32 := func(b []byte, n uint32) []byte {
		return append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	nils := func(b []byte, n int) []byte { return append(b, bytes.Repeat([]byte{0xc0}, n)...) }
	emptyMaps := func(b []byte, n int) []byte { return append(b, bytes.Repeat([]byte{0x80}, n)...) }

	cases := []struct {
		name string
		f    Format
		b    []byte
	}{
		// Declared lengths beyond the input.
		{"cards declaring 2^31", Binary, array32(msgpackStr(msgpackKV(2, KindCreate), "cards"), 1<<31)},
		{"records declaring 2^32-1", Binary, array32(msgpackStr(msgpackKV(2, KindWelcome), "records"), 1<<32-1)},
		{"have declaring 2^32-1 entries", Binary, append(msgpackStr(msgpackKV(2, KindHello), "have"), 0xdf, 0xff, 0xff, 0xff, 0xff)},
		{"heads declaring 2^31 inside items", Binary, array32(append(msgpackStr(msgpackKV(2, KindSubmit), "items"), 0x91, 0x81, 0xa5, 'h', 'e', 'a', 'd', 's'), 1<<31)},
		{"bin declaring 4 GiB", Binary, append(msgpackStr(msgpackKV(3, KindEdit), "changes"), 0xc6, 0xff, 0xff, 0xff, 0xff, 1)},
		// Lengths that are there, one byte each: too many elements.
		{"cards of nils", Binary, nils(array32(msgpackStr(msgpackKV(2, KindCreate), "cards"), maxElements+1), maxElements+1)},
		{"records of empty maps", Binary, emptyMaps(array32(msgpackStr(msgpackKV(2, KindWelcome), "records"), maxElements+1), maxElements+1)},
		{"json records of empty objects", Text, []byte(`{"kind":"welcome","records":[{}` + strings.Repeat(`,{}`, maxElements) + `]}`)},
		{"json cards of nulls", Text, []byte(`{"kind":"question:create","cards":[null` + strings.Repeat(`,null`, maxElements) + `]}`)},
		// Nesting: the msgpack decoder skips unknown fields recursively,
		// and a few million levels overflow the goroutine stack (a fatal
		// error, not a panic Decode could recover).
		{"msgpack nested to the frame cap", Binary, func() []byte {
			b := msgpackStr(msgpackKV(2, KindHello), "deep")
			b = append(b, bytes.Repeat([]byte{0x91}, MaxFrameBytes-len(b)-1)...)
			return append(b, 0xc0)
		}()},
		{"msgpack nested one too deep", Binary, func() []byte {
			b := msgpackStr(msgpackKV(2, KindHello), "deep")
			b = append(b, bytes.Repeat([]byte{0x91}, maxDepth)...)
			return append(b, 0xc0)
		}()},
		{"json nested to the frame cap", Text, []byte(`{"kind":"hello","deep":` + strings.Repeat("[", MaxFrameBytes-40) + `]}`)},
		{"json nested one too deep", Text, []byte(`{"kind":"hello","deep":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`)},
	}
	for _, tc := range cases {
		for name, dec := range map[string]func([]byte, Format) (Message, error){"Decode": Decode, "DecodeServerFrame": DecodeServerFrame} {
			var err error
			n := allocated(func() { _, err = dec(tc.b, tc.f) })
			if !errors.Is(err, ErrFrame) {
				t.Errorf("%s: %s: %v, want ErrFrame", tc.name, name, err)
			}
			if n > budget {
				t.Errorf("%s: %s allocated %d MiB", tc.name, name, n>>20)
			}
		}
	}

	// Nesting up to maxDepth is fine.
	for _, ff := range formats {
		var b []byte
		if ff.f == Text {
			b = []byte(`{"kind":"hello","v":1,"deep":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`)
		} else {
			b = msgpackStr(msgpackKV(2, KindHello), "deep")
			b = append(b, bytes.Repeat([]byte{0x91}, maxDepth-2)...)
			b = append(b, 0x90)
		}
		if _, err := Decode(b, ff.f); err != nil {
			t.Errorf("%s: nesting %d deep: %v", ff.name, maxDepth, err)
		}
	}
}

// headerOf returns the Header every frame embeds.
func headerOf(m Message) Header {
	return reflect.ValueOf(m).Elem().FieldByName("Header").Interface().(Header)
}

func TestPeekHeader(t *testing.T) {
	for _, fr := range frames() {
		for _, ff := range formats {
			b := mustEncode(t, fr.msg, ff.f)
			if got, want := PeekHeader(b, ff.f), headerOf(fr.msg); got != want {
				t.Errorf("%s/%s: PeekHeader = %+v, want %+v", fr.name, ff.name, got, want)
			}
		}
	}
	// A request that fails its checks still shows its kind and rid, so
	// the server can refuse it by rid.
	bad := &Target{Header: req(KindReopen, "r-77")}
	for _, ff := range formats {
		b := mustEncode(t, bad, ff.f)
		if _, err := Decode(b, ff.f); err == nil {
			t.Fatal("a reopen without id decoded")
		}
		if got := PeekHeader(b, ff.f); got != bad.Header {
			t.Errorf("%s: PeekHeader = %+v, want %+v", ff.name, got, bad.Header)
		}
	}
	// Nothing to read, or too much: a zero Header, never a crash. Before
	// PeekHeader checked the frame's shape first, the deeply nested frame
	// overflowed the goroutine stack inside the msgpack decoder, a fatal
	// error that no recover catches.
	deep := msgpackStr(msgpackStr(msgpackStr(msgpackKV(3, KindCreate), "rid"), "r1"), "deep")
	deep = append(deep, bytes.Repeat([]byte{0x91}, MaxFrameBytes-len(deep)-1)...)
	deep = append(deep, 0xc0)
	for _, tc := range []struct {
		name string
		f    Format
		b    []byte
	}{
		{"empty", Binary, nil},
		{"empty json", Text, nil},
		{"not json", Text, []byte("kind")},
		{"kind a number", Text, []byte(`{"kind":1,"rid":"r"}`)},
		{"rid too long", Text, []byte(`{"kind":"question:why","rid":"` + strings.Repeat("r", 257) + `"}`)},
		{"oversized", Text, append([]byte(`{"kind":"question:why","rid":"r"}`), bytes.Repeat([]byte(" "), MaxFrameBytes)...)},
		{"msgpack nested to the frame cap", Binary, deep},
		{"json nested to the frame cap", Text, []byte(`{"kind":"question:why","rid":"r","deep":` + strings.Repeat("[", MaxFrameBytes-60) + `}`)},
		{"msgpack declaring 2^32-1", Binary, append(msgpackStr(msgpackStr(msgpackStr(msgpackKV(3, KindCreate), "rid"), "r1"), "cards"), 0xdd, 0xff, 0xff, 0xff, 0xff)},
	} {
		if got := PeekHeader(tc.b, tc.f); got != (Header{}) {
			t.Errorf("%s: PeekHeader = %+v, want a zero Header", tc.name, got)
		}
	}
}

// Encode refuses a frame its receiver would refuse for its shape, so the
// sender hears of it.
func TestEncodeRefusesOverBudget(t *testing.T) {
	items := make([]SubmitItem, maxElements/2)
	for i := range items {
		items[i] = SubmitItem{ID: "d", Heads: []string{}}
	}
	for _, ff := range formats {
		_, err := Encode(&Submit{Header: req(KindSubmit, "r"), Items: items}, ff.f)
		if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), "elements") {
			t.Errorf("%s: Encode of %d items: %v, want ErrFrame over the element budget", ff.name, len(items), err)
		}
	}
}

// The element budget leaves room for large real frames: a welcome of a
// document with 1000 decisions, each settled twice with marks, is far
// below it.
func TestLargeWelcome(t *testing.T) {
	recs := make([]question.Record, 1000)
	for i := range recs {
		recs[i] = settledRecord()
		recs[i].ID = fmt.Sprintf("d-%04d", i)
	}
	w := &Welcome{Header: hdr(KindWelcome), V: Version, Doc: "plan-42", Member: "ada", Write: true, Records: recs}
	for _, ff := range formats {
		b := mustEncode(t, w, ff.f)
		m, err := DecodeServerFrame(b, ff.f)
		if err != nil {
			t.Fatalf("%s: %d-byte welcome: %v", ff.name, len(b), err)
		}
		if got := len(m.(*Welcome).Records); got != len(recs) {
			t.Errorf("%s: %d records", ff.name, got)
		}
	}
}

// The typed kinds are the protocol's strings, unchanged, and the
// replica's event kinds never collide with a frame's.
func TestKindStrings(t *testing.T) {
	want := []string{"hello", "welcome", "error", "question:create", "question:edit", "question:submit",
		"question:reopen", "question:discard", "question:option", "question:criterion", "question:why",
		"question:expand", "question:sync", "question:doc", "question:changes", "question:created",
		"question:meta", "question:resolved", "question:reopened", "question:discarded",
		"question:option-added", "question:criterion-added",
		"question:explore", "question:explore-stop", "question:take", "question:page", "question:provenance", "question:presence"}
	got := Kinds()
	if len(got) != len(want) {
		t.Fatalf("%d kinds, want %d", len(got), len(want))
	}
	for i, k := range got {
		if string(k) != want[i] {
			t.Errorf("kind %d is %q, want %q", i, k, want[i])
		}
	}
	for _, k := range []Kind{KindConnected, KindReconnecting, KindEditRefused, KindOverwritten} {
		if slices.Contains(got, k) || newMessage(k) != nil {
			t.Errorf("event kind %q is also a frame kind", k)
		}
	}
}
