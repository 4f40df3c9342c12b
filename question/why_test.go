package question

import (
	"strings"
	"testing"
)

// TestWhyIsOnePlainSentence is Y1 both ways: what a why may say and what
// it may not.
func TestWhyIsOnePlainSentence(t *testing.T) {
	for _, tc := range []struct {
		why string
		ok  bool
	}{
		{"It keeps sign-up short.", true},
		{"It keeps sign-up short, e.g. for phones.", true},
		{"Use a managed host, e.g. Supabase, to save time.", true},
		{"Postgres 3.5 is enough, i.e. no new storage.", true},
		{"Node.js runs the tooling we already have.", true},
		{"ASP.NET was ruled out by the team.", true},
		{"It is fast (about 3.5 times) and cheap.", true},
		{"Is it cheaper? yes, by far.", true},
		{"It keeps user_id and plan_id stable.", true},
		{"It costs 5 * 3 dollars a month.", true},
		{"Ana's team chose it over the others.", true},
		{"Ben said \"ship it\" and everyone agreed.", true},
		{strings.Repeat("a", MaxWhy), true},

		{strings.Repeat("a", MaxWhy+1), false},
		{"Two sentences. Here is another.", false},
		{"It is cheap.It is fast.", false},
		{"It is cheap!It is fast.", false},
		{"Is it cheap? It is.", false},
		{"It is cheap. \"Fast\" too.", false},
		{"It is cheap.\u00a0It is fast.", false},
		{"_Postgres_ is cheaper.", false},
		{"Postgres is *much* cheaper.", false},
		{"Postgres is _much_ cheaper.", false},
		{"**bold** move.", false},
		{"__bold__ move.", false},
		{"Line one\nline two.", false},
		{"# Heading", false},
		{"- a list item", false},
		{"See [docs](x).", false},
		{"Use `code`.", false},
		{"It is ~~slow~~ fast.", false},
		{"It is <b>fast</b>.", false},
	} {
		r := checkWhy(tc.why)
		if (r == nil) != tc.ok {
			t.Errorf("checkWhy(%q) = %v, want ok %v", tc.why, r, tc.ok)
		}
		if r != nil && r.Reason != Invalid {
			t.Errorf("checkWhy(%q) reason %q, want invalid", tc.why, r.Reason)
		}
	}
}

func FuzzCheckWhy(f *testing.F) {
	f.Add("It is cheap.It is fast.")
	f.Add("e.g. _x_ *y*")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		_ = checkWhy(s) // never panics
	})
}
