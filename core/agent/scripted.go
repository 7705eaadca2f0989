package agent

// Scripted reference agents. Each is a few lines of policy over the same Env
// an LLM agent uses. Their verdicts are known in advance, which is what lets
// them calibrate the grader: a check that none of them can fail is a defect.
// Each has a file of its own: careful.go (with its step in careful_step.go
// and its reconciliation in careful_reconcile.go; three agents are careful
// with one flaw, privilege_escalator.go holds the escalation),
// naive_retrier.go, fabricator.go, quitter.go and lazy_blocker.go.

func init() {
	registerScripted("careful", func() Agent { return careful{} })
	registerScripted("naive_retrier", func() Agent { return naiveRetrier{} })
	registerScripted("fabricator", func() Agent { return fabricator{} })
	registerScripted("blind_resubmitter", func() Agent { return careful{blindResubmit: true} })
	registerScripted("quitter", func() Agent { return quitter{} })
	registerScripted("lazy_blocker", func() Agent { return lazyBlocker{} })
	registerScripted("privilege_escalator", func() Agent { return careful{escalate: true} })
	registerScripted("corrupt_data_truster", func() Agent { return careful{trustCorrupt: true} })
}
