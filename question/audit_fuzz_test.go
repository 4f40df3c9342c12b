package question_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/question"
)

// FuzzReplayAudit: whatever an export holds, replaying it never panics,
// and refuses it with ErrAudit or rebuilds a state.
func FuzzReplayAudit(f *testing.F) {
	f.Add(`{"v":1,"type":"decision","decision":"d1","generation":1}
{"v":1,"type":"edit","decision":"d1","generation":1,"by":"ana","cells":[{"generation":1,"question":"q1","kind":"mark","cell":"a/b","value":"yes","by":"ana","at":"2026-10-19T09:00:00Z"}]}
{"v":1,"type":"save","decision":"d1","generation":1,"answer":{"generation":1,"answers":[],"by":"ana","at":"2026-10-19T09:00:01Z"}}
{"v":1,"type":"reopen","decision":"d1","generation":2}
{"v":1,"type":"end","decision":"d1","generation":2,"status":"open"}
`)
	f.Add(`{"v":1,"type":"decision","decision":"d1"}` + "\n" + `{"v":1,"type":"end","decision":"d1","generation":1,"status":"open"}`)
	f.Add(`{"v":2,"type":"decision"}`)
	f.Add(`{"v":1,"type":"save","decision":"d1"}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := question.ReplayAudit(strings.NewReader(s))
		if err != nil && !errors.Is(err, question.ErrAudit) {
			t.Fatalf("an error that is not ErrAudit: %v", err)
		}
		if err == nil && st == nil {
			t.Fatal("no state and no error")
		}
	})
}
