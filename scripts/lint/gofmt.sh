#!/usr/bin/env bash
# make fmt: the Go files gofmt would change, tracked or new (git-ignored
# ones, .cache/ among them, are not the repository's). Any fails, except a
# file listed in gofmt.allow beside this script: a file another change
# holds, to be formatted there (the check says when its line can go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
allow=scripts/lint/gofmt.allow

mapfile -t files < <(git ls-files -co --exclude-standard '*.go')
out=$(gofmt -l "${files[@]}" 2>&1) || true
awk -v allow="$allow" '
	FNR == NR {
		sub(/#.*/, "")
		if (NF) allowed[$1] = 1
		next
	}
	NF {
		if ($1 in allowed) { used[$1] = 1; next }
		if (!bad) print "gofmt needed (gofmt -w FILE):"
		print "  " $0
		bad = 1
	}
	END {
		for (f in allowed) if (!(f in used)) printf "note: %s is formatted now: remove its line from %s\n", f, allow
		exit bad
	}
' "$allow" <(printf '%s\n' "$out")
