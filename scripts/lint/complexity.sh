#!/usr/bin/env bash
# The complexity ratchet (make complexity): no function outside the tests
# above cyclomatic complexity 30 (gocyclo, pinned in go.mod), except those
# listed in complexity.allow beside this script, each at its number. The
# list may only shrink, and the check holds it to that:
#   - a function not on the list above 30 fails (split it up);
#   - a listed function above its number fails (it grew);
#   - a listed function at or under 30, or gone, fails until its line is
#     removed (one below its number but over 30 gets a note to lower it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
max=30
allow=scripts/lint/complexity.allow

# gocyclo exits 1 when it prints a function over the limit, 2 on an error.
rc=0
found=$(go tool gocyclo -over "$max" -ignore '_test\.go$' .) || rc=$?
if ((rc > 1)); then
	echo "$found" >&2
	exit "$rc"
fi

# gocyclo: "97 oracle (*run).stepInner core/oracle/agent.go:531:1";
# the list: "core/oracle/agent.go (*run).stepInner 97".
awk -v max="$max" -v allow="$allow" '
	FNR == NR {
		sub(/#.*/, "")
		if (NF == 0) next
		if (NF != 3 || $3 !~ /^[0-9]+$/) { printf "%s:%d: want \"file function complexity\"\n", allow, FNR; bad = 1; next }
		listed[$1 " " $2] = $3
		next
	}
	NF {
		file = $4; sub(/:[0-9]+:[0-9]+$/, "", file)
		key = file " " $3
		if (!(key in listed)) {
			printf "%s %s: cyclomatic complexity %d, over %d: split it into named steps\n", file, $3, $1, max
			bad = 1
		} else if ($1 > listed[key]) {
			printf "%s %s: cyclomatic complexity %d, above the %d it is allowed in %s: split it, do not raise its number\n", file, $3, $1, listed[key], allow
			bad = 1
		} else if ($1 < listed[key]) {
			printf "note: %s %s: cyclomatic complexity %d, below its %d in %s: lower its number there\n", file, $3, $1, listed[key], allow
		}
		seen[key] = 1
	}
	END {
		for (key in listed) if (!(key in seen)) {
			printf "%s: now at or under %d, or gone: remove its line from %s\n", key, max, allow
			bad = 1
		}
		exit bad
	}
' "$allow" <(printf '%s\n' "$found")
