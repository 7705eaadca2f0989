package oracle

// KnownOpen lists violation classes the oracle finds in the CURRENT grader
// (issue 9), keyed by class ("FAMILY check kind") with the reason. They are
// reported loudly on every run but do not fail it. The lead empties this
// list as the fixes land; never add a class here to make a run pass without
// saying which grader (or careful-agent) defect it is.
var KnownOpen = map[string]string{}
