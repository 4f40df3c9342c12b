package wire

import "github.com/accord-crdt/accord/question"

// Kinds of the findings requests (R2, R5, R8) and of the decision's page
// (E1). Their replies carry the record and the finding; every change is
// announced as question:meta after its commit.
const (
	KindExplore     Kind = "question:explore"      // attach started work, or ask someone
	KindExploreStop Kind = "question:explore-stop" // stop a running finding
	KindTake        Kind = "question:take"         // the asked member's answer
	KindPage        Kind = "question:page"         // expand to a page (question:expand's other name)
)

// Explore attaches started work to a decision, or asks a member for their
// take: exactly one of Request (a research request id), Investigation (an
// investigation id) and Member (the asked member's login) is set. Focus is
// what the member typed in Details.
type Explore struct {
	Header
	ID            string `json:"id"`
	Request       string `json:"request,omitempty"`
	Investigation string `json:"investigation,omitempty"`
	Member        string `json:"member,omitempty"`
	Focus         string `json:"focus,omitempty"`
}

// ExploreStop stops a running finding.
type ExploreStop struct {
	Header
	ID      string `json:"id"`
	Finding string `json:"findingId"`
}

// Take is the asked member's answer to an ask finding, with an optional
// stance: supports or objects.
type Take struct {
	Header
	ID      string          `json:"id"`
	Finding string          `json:"findingId"`
	Reply   string          `json:"reply"`
	Stance  question.Stance `json:"stance,omitempty"`
}
