// Package crashtest proves that crashes cost nothing, with real processes:
// a Temporal dev server on a SQLite file, a `rebound worker` process on
// embedded chDB, and a local OpenAI-compatible server that counts and
// bills requests. The test kills the worker twice mid-shard and the dev
// server once (SIGKILL), and checks that every planned trial is stored once,
// that the model was asked again only for the turns in flight at a kill,
// and that stored tokens equal billed tokens. Another kills a worker with
// requests held at a server that bills them anyway (as a provider does):
// the stored spend, exact + estimated, must bracket the bill.
package crashtest
