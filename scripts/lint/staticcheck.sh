#!/usr/bin/env bash
# make staticcheck: staticcheck (pinned in go.mod) over every package. Any
# finding fails, except one whose file and check are listed in
# staticcheck.allow beside this script: findings in files another change
# holds, to be fixed there. A finding staticcheck means to keep is marked
# in the code instead, with //lint:ignore CHECK and the reason.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
allow=scripts/lint/staticcheck.allow

# staticcheck exits 1 on findings; errors (a package that does not build)
# are printed as findings of their own and never match the list, so the
# exit status is the list's to decide.
rc=0
found=$(go tool staticcheck ./... 2>&1) || rc=$?
if ((rc > 1)); then
	printf '%s\n' "$found" >&2
	exit "$rc"
fi

# A finding: "path/file.go:12:3: message (SA1019)"; the list: "path/file.go SA1019".
awk -v allow="$allow" '
	FNR == NR {
		sub(/#.*/, "")
		if (NF == 0) next
		allowed[$1 " " $2] = 1
		next
	}
	NF {
		file = $0; sub(/:.*/, "", file)
		check = ""
		if (match($0, /\([A-Z]+[0-9]+\)$/)) check = substr($0, RSTART + 1, RLENGTH - 2)
		if ((file " " check) in allowed) { used[file " " check] = 1; next }
		print
		bad = 1
	}
	END {
		for (k in allowed) if (!(k in used)) printf "note: %s is no longer found: remove its line from %s\n", k, allow
		if (bad) printf "staticcheck: fix the findings above, or mark a deliberate one with //lint:ignore CHECK reason\n"
		exit bad
	}
' "$allow" <(printf '%s\n' "$found")
