// Package devstack finds and runs the local infrastructure rebound uses by
// default: the Temporal dev server (the real server of the Temporal CLI, with
// SQLite persistence) and the embedded ClickHouse library (libchdb).
//
// The tools are pinned and installed by `make setup` into the git-ignored
// cache .cache/ at the repository root. [Locate] finds them; [StartTemporal]
// runs the dev server as a child process that never outlives the caller.
//
// Integration tests in other packages use the devstacktest sub-package.
package devstack
