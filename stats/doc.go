// Package stats computes the rates, intervals and tests that rebound reports.
//
// It is pure Go with no I/O and no dependencies outside the standard library.
// Every function is deterministic; the bootstrap takes an explicit seed.
//
// # Conventions
//
//   - Confidence levels are two-sided and given as a fraction in (0, 1), e.g.
//     0.95. The normal critical value is z = Φ⁻¹(1 − (1 − conf)/2).
//   - Cluster = scenario for one arm's rates. Seeds and variants of one
//     scenario are not independent, so standard errors are clustered by
//     scenario (Miller 2024, "Adding Error Bars to Evals", arXiv:2411.00640,
//     Appendix A).
//   - Paired decisions count independent evidence once ([PairedClustered]):
//     the caller chooses the cluster, a case (scenario, variant) or a
//     scenario, and seeds are repeated measures. The interval is
//     cluster-robust (CR1, Student's t on G − 1 df) and the test is the exact
//     cluster sign-flip test ([SignFlipTest]); calibration_test.go simulates
//     its false-alarm rate and power.
//   - Clustered variances default to the paper's formula with no small-sample
//     factor ([MillerSE]). [InspectSE] multiplies the variance by C/(C−1), as
//     Inspect AI's stderr(cluster=...) does. Callers choose explicitly.
//   - Paired comparisons are oriented as candidate minus baseline:
//     difference = B − A. In a paired 2×2 table, N12 counts pairs with A=1,
//     B=0 and N21 counts pairs with A=0, B=1, so the difference of proportions
//     is (N21 − N12)/N. Published examples in the Fagerland et al. convention
//     (π1+ − π+1 = (n12 − n21)/N) therefore appear here with the opposite sign.
//   - Invalid input (negative counts, successes > n, a confidence level
//     outside (0, 1), NaN data, negative weights) yields NaN results rather than
//     a panic, like package math. An empty sample yields a NaN estimate and,
//     for a single proportion, the uninformative interval [0, 1].
package stats
