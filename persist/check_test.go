package persist_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/persist"
)

func TestCheckWrite(t *testing.T) {
	errKey := errors.New("key too long")
	errValue := errors.New("value too large")
	limits := persist.Limits{Name: "teststore", MaxKey: 4, MaxValue: 3, ErrKey: errKey, ErrValue: errValue}
	put := func(k, v string) []persist.Put { return []persist.Put{{Key: k, Value: []byte(v)}} }
	long := "abcde"

	for _, c := range []struct {
		name   string
		doc    string
		w      *persist.Write
		l      persist.Limits
		want   error  // nil: the Write passes
		prefix string // the error's message starts with it, when set
	}{
		{name: "nil write", doc: "d", l: limits},
		{name: "empty write", doc: "d", w: &persist.Write{}, l: limits},
		{name: "within limits", doc: "doc", w: &persist.Write{
			Records: put("r", "abc"), Projections: put("p", ""), Answers: []persist.Put{{Key: "a"}},
			Audit: put("u", "x"), Drafts: []persist.DraftPut{{Decision: "dec", Chunk: []byte("abc")}},
		}, l: limits},
		{name: "empty document, nil write", l: limits, want: persist.ErrEmptyKey},
		{name: "empty document", w: &persist.Write{Records: put("r", "v")}, l: limits, want: persist.ErrEmptyKey},
		{name: "empty record key", doc: "d", w: &persist.Write{Records: put("", "v")}, l: limits, want: persist.ErrEmptyKey},
		{name: "empty projection key", doc: "d", w: &persist.Write{Projections: put("", "v")}, l: limits, want: persist.ErrEmptyKey},
		{name: "empty answer key", doc: "d", w: &persist.Write{Answers: put("", "v")}, l: limits, want: persist.ErrEmptyKey},
		{name: "empty audit key", doc: "d", w: &persist.Write{Audit: put("", "v")}, l: limits, want: persist.ErrEmptyKey},
		{name: "empty draft decision", doc: "d", w: &persist.Write{Drafts: []persist.DraftPut{{Chunk: []byte("c")}}}, l: limits, want: persist.ErrEmptyKey},
		{name: "empty key without limits", doc: "d", w: &persist.Write{Audit: put("", "v")}, want: persist.ErrEmptyKey},
		{name: "long document", doc: long, l: limits, want: errKey, prefix: "teststore: document key of 5 bytes, limit 4: "},
		{name: "long record key", doc: "d", w: &persist.Write{Records: put(long, "")}, l: limits, want: errKey, prefix: "teststore: record key of 5 bytes"},
		{name: "long projection key", doc: "d", w: &persist.Write{Projections: put(long, "")}, l: limits, want: errKey, prefix: "teststore: projection key"},
		{name: "long answer key", doc: "d", w: &persist.Write{Answers: put(long, "")}, l: limits, want: errKey, prefix: "teststore: answer key"},
		{name: "long audit key", doc: "d", w: &persist.Write{Audit: put(long, "")}, l: limits, want: errKey, prefix: "teststore: audit key"},
		{name: "long draft decision", doc: "d", w: &persist.Write{Drafts: []persist.DraftPut{{Decision: long}}}, l: limits, want: errKey, prefix: "teststore: draft key"},
		{name: "large record value", doc: "d", w: &persist.Write{Records: put("r", "abcd")}, l: limits, want: errValue,
			prefix: `teststore: record "r" value of 4 bytes, limit 3: `},
		{name: "large audit value", doc: "d", w: &persist.Write{Audit: put("u", "abcd")}, l: limits, want: errValue, prefix: `teststore: audit "u" value`},
		{name: "large draft chunk", doc: "d", w: &persist.Write{Drafts: []persist.DraftPut{{Decision: "x", Chunk: []byte("abcd")}}}, l: limits, want: errValue,
			prefix: `teststore: draft "x" value`},
		{name: "no limits", doc: strings.Repeat("d", 1000), w: &persist.Write{Records: put(long, strings.Repeat("v", 1000))}},
		{name: "first fault wins", doc: "d", w: &persist.Write{Records: put(long, ""), Drafts: []persist.DraftPut{{Chunk: []byte("c")}}}, l: limits, want: errKey},
		{name: "key before value", doc: "d", w: &persist.Write{Records: put(long, "abcd")}, l: limits, want: errKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := persist.CheckWrite(c.doc, c.w, c.l)
			if c.want == nil {
				if err != nil {
					t.Fatalf("CheckWrite = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("CheckWrite = %v, want %v", err, c.want)
			}
			if c.prefix != "" && !strings.HasPrefix(err.Error(), c.prefix) {
				t.Fatalf("CheckWrite = %q, want a message starting %q", err, c.prefix)
			}
		})
	}
}
