package crdt

// Carried is what a live document knows of itself that its bytes do not
// hold: its running Budget (Load counts what it decodes, which differs from
// the upper bounds counted change by change, and forgets BaseOps) and
// whether Rebase started its history. A holder that drops a document and
// later loads it again from the very bytes it stored (the question
// authority parks idle decisions so) passes it to Load in Options.Carry,
// and the loaded document counts, rebases and refuses exactly as the
// dropped one would have. The zero value carries nothing.
type Carried struct {
	set         bool
	budget      Budget
	budgetKnown bool
	rebased     bool
}

// Carry returns what Load cannot read back of d from its bytes.
func (d *Doc) Carry() Carried {
	return Carried{set: true, budget: d.budget, budgetKnown: d.budgetKnown, rebased: d.rebased}
}
