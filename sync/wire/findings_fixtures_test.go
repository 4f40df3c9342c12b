package wire

import "github.com/accord-crdt/accord/question"

// frames returns one or more realistic frames of every kind, freshly built
// so a test may change them.
func frames() []frame { return append(baseFrames(), findingFrames()...) }

// researchedRecord is an open decision with a finding of each kind.
func researchedRecord() question.Record {
	r := openWrittenRecord()
	r.Findings = []question.Finding{
		{ID: "f1", Kind: question.FindingResearch, Status: question.FindingReady, Focus: "costs per reset", Ref: "req-81",
			Title: "Reset flows compared", Summary: "Email links cost nothing per reset; SMS costs per message.",
			Sources:     []question.Source{{Title: "Provider pricing", URL: "https://example.org/pricing"}, {URL: "https://example.org/b"}},
			SourceCount: 5, By: "ada", At: tCreated, Noticed: question.FindingReady},
		{ID: "f2", Kind: question.FindingSpike, Status: question.FindingRunning, Ref: "inv-9", By: "sam", At: tSaved, Noticed: question.FindingRunning},
		{ID: "f3", Kind: question.FindingAsk, Status: question.FindingReady, Ref: "lily", Summary: "SMS needs a provider contract.",
			Stance: question.Objects, By: "ada", At: tReopened, Noticed: question.FindingReady},
	}
	return r
}

func findingFrames() []frame {
	rec := researchedRecord()
	f := rec.Findings[0]
	return []frame{
		{name: "explore-research", msg: &Explore{Header: req(KindExplore, "r20"), ID: rec.ID, Request: "req-81", Focus: "costs per reset"}},
		{name: "explore-investigation", msg: &Explore{Header: req(KindExplore, "r21"), ID: rec.ID, Investigation: "inv-9"}},
		{name: "explore-ask", msg: &Explore{Header: req(KindExplore, "r22"), ID: rec.ID, Member: "lily", Focus: "Is SMS worth it?"}},
		{name: "explore-stop", msg: &ExploreStop{Header: req(KindExploreStop, "r23"), ID: rec.ID, Finding: "f2"}},
		{name: "take", msg: &Take{Header: req(KindTake, "r24"), ID: rec.ID, Finding: "f3", Reply: "SMS needs a provider contract.", Stance: question.Objects}},
		{name: "page", msg: &Target{Header: req(KindPage, "r25"), ID: rec.ID}},
		{reply: true, name: "explore-reply", msg: &Reply{Header: req(KindExplore, "r20"), ID: rec.ID, OK: true, Record: &rec, Finding: &f}},
		{reply: true, name: "explore-stop-reply", msg: &Reply{Header: req(KindExploreStop, "r23"), ID: rec.ID, OK: true, Record: &rec, Finding: &rec.Findings[1]}},
		{reply: true, name: "page-reply", msg: &Reply{Header: req(KindPage, "r25"), ID: rec.ID, OK: true, Record: &rec}},
		{reply: true, name: "take-refused", msg: &Reply{Header: req(KindTake, "r24"), ID: rec.ID, Reason: question.Forbidden,
			Message: "this ask waits for lily, not sam"}},
		{name: "meta-findings", msg: &Event{Header: hdr(KindMeta), ID: rec.ID, Record: &rec, By: "lily"}},
	}
}
