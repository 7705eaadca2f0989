#!/usr/bin/env bash
# Installs rebound's pinned local tools into the git-ignored cache .cache/ at
# the repository root, and nothing anywhere else:
#   .cache/bin/temporal       Temporal CLI, built from the Go module proxy
#   .cache/bin/helm           Helm, built from the Go module proxy (make test
#                             lints and renders helm/rebound with it)
#   .cache/chdb/libchdb.so    chDB (embedded ClickHouse), from the npm registry
#   .cache/agents/openai-agents-ts/   the example agent of examples/agents/
#                             (OpenAI Agents SDK, MCP SDK), npm ci from its
#                             package-lock.json, compiled with its pinned tsc
#   .cache/upstreams/         the official MCP reference servers (filesystem,
#                             memory) that upstream worlds are tested on, npm
#                             ci from examples/upstreams/package-lock.json
#   .cache/clickhouse-client/ the official ClickHouse Node client, which
#                             deploy's tests read the served embedded store
#                             with, npm ci from deploy/clickhouse-client/
#   .cache/mcp-conformance/   the MCP conformance suite for servers, npm ci
#                             from scripts/mcp-conformance/package-lock.json
# and two system packages from Debian's packages when they are missing and
# setup runs as root: the sandbox of command arms, bubblewrap (bwrap), and
# chromium, the browser the review UI's tests (results/reviewui) drive
# headless. They are the only things installed outside .cache/; without
# root, setup says how.
# Idempotent: a second run only checks what is there. Called by `make setup`.
set -euo pipefail

TEMPORAL_VERSION=1.5.1
TEMPORAL_MODULE=github.com/temporalio/cli/cmd/temporal
HELM_VERSION=3.22.0
HELM_MODULE=helm.sh/helm/v3/cmd/helm
CHDB_PACKAGE=@chdb/lib-linux-x64-gnu
CHDB_VERSION=26.5.3

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$root/.cache"

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is not installed or not on PATH; $2"
}
elapsed() { printf '%ds' $((SECONDS - $1)); }

mkdir -p "$cache/bin" "$cache/chdb"

# One setup at a time (two `make` runs in parallel would otherwise both build).
if command -v flock >/dev/null 2>&1; then
	exec 9>"$cache/setup.lock"
	flock -n 9 || { say "another setup is running; waiting for it"; flock 9; }
fi

# --- bubblewrap (the sandbox of command arms) ---------------------------------
# Command arms run sealed under bwrap (internal/sandbox); a worker without it
# refuses them (fail closed). Debian's package is used, never a download.
if command -v bwrap >/dev/null 2>&1 || [ -n "${REBOUND_BWRAP:-}" ]; then
	say "bubblewrap: ok"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	say "bubblewrap: installing Debian's package (apt-get install bubblewrap)"
	start=$SECONDS
	log="$cache/apt-bubblewrap.log"
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } >"$log" 2>&1; then
		cat "$log" >&2
		die "apt-get install bubblewrap failed (see above)"
	fi
	rm -f "$log"
	command -v bwrap >/dev/null 2>&1 || die "bubblewrap was installed but bwrap is not on PATH"
	say "bubblewrap: installed in $(elapsed "$start")"
else
	say "bubblewrap: missing; command arms will refuse to run sealed until it is installed (as root: apt-get install bubblewrap)"
fi

# --- chromium (the review UI's browser tests) ----------------------------------
# results/reviewui's browser tests drive /usr/bin/chromium headless (chromedp);
# under REBOUND_REQUIRE_INTEGRATION=1 a missing browser fails them. Debian's
# package is used, never a download.
if command -v chromium >/dev/null 2>&1; then
	say "chromium: ok"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	say "chromium: installing Debian's package (apt-get install chromium)"
	start=$SECONDS
	log="$cache/apt-chromium.log"
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
		cat "$log" >&2
		die "apt-get install chromium failed (see above)"
	fi
	rm -f "$log"
	command -v chromium >/dev/null 2>&1 || die "chromium was installed but is not on PATH"
	say "chromium: installed in $(elapsed "$start")"
else
	say "chromium: missing; the review UI's browser tests will skip until it is installed (as root: apt-get install chromium)"
fi

# --- Temporal CLI ---------------------------------------------------------
temporal="$cache/bin/temporal"
# A `go install` build reports "temporal version 0.0.0-DEV" (release builds get
# their version by linker flag), so the pin is checked in the module version
# that Go records in the binary; then the binary must run.
temporal_version() {
	go version -m "$temporal" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/temporalio/cli" { print $3 }'
}
temporal_ok() {
	[ -x "$temporal" ] && [ "$(temporal_version)" = "v$TEMPORAL_VERSION" ] && "$temporal" --version >/dev/null 2>&1
}
need go "install Go 1.26 and put it on PATH"
if temporal_ok; then
	say "temporal $TEMPORAL_VERSION: ok"
else
	say "temporal $TEMPORAL_VERSION: building $TEMPORAL_MODULE@v$TEMPORAL_VERSION from the Go module proxy (about 6 min on 2 cores, once)"
	start=$SECONDS
	rm -f "$temporal"
	# `go install pkg@version` ignores rebound's go.mod: the CLI builds with its own pins.
	GOBIN="$cache/bin" go install "$TEMPORAL_MODULE@v$TEMPORAL_VERSION" ||
		die "building the Temporal CLI failed (see above)"
	temporal_ok || die "$temporal was built but is not v$TEMPORAL_VERSION or does not run (module version: '$(temporal_version)')"
	say "temporal $TEMPORAL_VERSION: built in $(elapsed "$start")"
fi

# --- Helm ---------------------------------------------------------------------
# Same scheme as the Temporal CLI: built once with `go install`, the pin checked
# in the module version recorded in the binary, then the binary must run.
helm="$cache/bin/helm"
helm_version() {
	go version -m "$helm" 2>/dev/null | awk '$1 == "mod" && $2 == "helm.sh/helm/v3" { print $3 }'
}
helm_ok() {
	[ -x "$helm" ] && [ "$(helm_version)" = "v$HELM_VERSION" ] && "$helm" version --short >/dev/null 2>&1
}
if helm_ok; then
	say "helm $HELM_VERSION: ok"
else
	say "helm $HELM_VERSION: building $HELM_MODULE@v$HELM_VERSION from the Go module proxy (about 4 min on 2 cores, once)"
	start=$SECONDS
	rm -f "$helm"
	GOBIN="$cache/bin" go install "$HELM_MODULE@v$HELM_VERSION" ||
		die "building helm failed (see above)"
	helm_ok || die "$helm was built but is not v$HELM_VERSION or does not run (module version: '$(helm_version)')"
	say "helm $HELM_VERSION: built in $(elapsed "$start")"
fi

# --- libchdb ----------------------------------------------------------------
lib="$cache/chdb/libchdb.so"
stamp="$cache/chdb/VERSION"
if [ -s "$lib" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$CHDB_VERSION" ]; then
	say "libchdb $CHDB_VERSION: ok"
else
	need npm "install Node.js and npm (Debian: apt-get install npm); npm fetches $CHDB_PACKAGE"
	need tar "install tar"
	start=$SECONDS
	rm -f "$lib" "$stamp"
	tgz="$cache/chdb/chdb-lib-linux-x64-gnu-$CHDB_VERSION.tgz"
	if [ ! -s "$tgz" ]; then
		say "libchdb $CHDB_VERSION: fetching $CHDB_PACKAGE@$CHDB_VERSION with npm pack (166 MB)"
		# A private npm cache under .cache, removed afterwards: nothing lands in ~/.npm.
		log="$cache/chdb/npm-pack.log"
		if ! (cd "$cache/chdb" && npm pack "$CHDB_PACKAGE@$CHDB_VERSION" \
			--cache "$cache/npm-cache" --no-fund --no-audit --loglevel=warn >"$log" 2>&1); then
			cat "$log" >&2
			rm -rf "$cache/npm-cache"
			die "npm pack $CHDB_PACKAGE@$CHDB_VERSION failed (see above)"
		fi
		rm -rf "$cache/npm-cache" "$log"
		[ -s "$tgz" ] || die "npm pack did not produce $tgz"
	fi
	say "libchdb $CHDB_VERSION: extracting libchdb.so"
	tmp=$(mktemp -d "$cache/chdb/extract.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	tar -xzf "$tgz" -C "$tmp" package/libchdb.so ||
		die "could not extract package/libchdb.so from $tgz (corrupt download? delete it and re-run)"
	[ -s "$tmp/package/libchdb.so" ] || die "package/libchdb.so in $tgz is empty"
	mv "$tmp/package/libchdb.so" "$lib"
	rm -rf "$tmp"
	trap - EXIT
	echo "$CHDB_VERSION" >"$stamp"
	rm -f "$tgz"
	say "libchdb $CHDB_VERSION: ready ($(du -h "$lib" | cut -f1)) in $(elapsed "$start")"
fi

# --- example agents (examples/agents/) ---------------------------------------
# The TypeScript example is installed from its committed package-lock.json
# (exact versions, integrity-checked) and compiled with its own TypeScript.
# Dependencies are reinstalled only when the lockfile changes; the build is
# redone only when a source changes.
agents_src="$root/examples/agents/openai-agents-ts"
agents="$cache/agents/openai-agents-ts"
digest() { cat "$@" | sha256sum | cut -d' ' -f1; }
deps_want=$(digest "$agents_src/package.json" "$agents_src/package-lock.json")
build_want=$(digest "$agents_src/tsconfig.json" "$agents_src"/src/*.ts)
if [ "$(cat "$agents/DEPS" 2>/dev/null)" = "$deps_want" ] && [ "$(cat "$agents/BUILD" 2>/dev/null)" = "$build_want" ] &&
	[ -f "$agents/dist/agent.js" ] && [ -f "$agents/dist/mcp-client.js" ]; then
	say "example agents: ok"
else
	need node "install Node.js 20 or later (Debian: apt-get install nodejs npm)"
	need npm "install npm (Debian: apt-get install npm)"
	start=$SECONDS
	mkdir -p "$agents"
	cp "$agents_src/package.json" "$agents_src/package-lock.json" "$agents_src/tsconfig.json" "$agents/"
	if [ "$(cat "$agents/DEPS" 2>/dev/null)" != "$deps_want" ] || [ ! -d "$agents/node_modules" ]; then
		say "example agents: npm ci (OpenAI Agents SDK, MCP SDK, TypeScript; pinned by package-lock.json)"
		rm -f "$agents/DEPS"
		log="$agents/npm-ci.log"
		if ! (cd "$agents" && npm ci --cache "$cache/npm-cache" --no-fund --no-audit --loglevel=error >"$log" 2>&1); then
			cat "$log" >&2
			rm -rf "$cache/npm-cache"
			die "npm ci for the example agents failed (see above)"
		fi
		rm -rf "$log" "$cache/npm-cache"
		echo "$deps_want" >"$agents/DEPS"
	fi
	say "example agents: compiling src/*.ts"
	rm -rf "$agents/src" "$agents/dist" "$agents/BUILD"
	cp -r "$agents_src/src" "$agents/src"
	(cd "$agents" && node node_modules/typescript/bin/tsc -p .) || die "compiling the example agents failed (see above)"
	echo "$build_want" >"$agents/BUILD"
	say "example agents: ready in $(elapsed "$start")"
fi

# --- npm packages pinned by a committed lockfile -----------------------------
# npm_pinned NAME SRC DEST WHAT [FILE...]: npm ci of SRC's package.json and
# package-lock.json into DEST, redone only when either file changes (their
# digest is kept in DEST/DEPS) or one of FILE (relative to DEST) is missing.
# With NPM_PINNED_READABLE=1 the install is made readable by every uid.
npm_pinned() {
	local name=$1 src=$2 dest=$3 what=$4
	shift 4
	local want ok=1 f
	want=$(digest "$src/package.json" "$src/package-lock.json")
	[ "$(cat "$dest/DEPS" 2>/dev/null)" = "$want" ] || ok=
	for f in "$@"; do
		[ -f "$dest/$f" ] || ok=
	done
	if [ -n "$ok" ]; then
		say "$name: ok"
		return
	fi
	need node "install Node.js 20 or later (Debian: apt-get install nodejs npm)"
	need npm "install npm (Debian: apt-get install npm)"
	local start=$SECONDS log="$dest/npm-ci.log"
	mkdir -p "$dest"
	rm -f "$dest/DEPS"
	cp "$src/package.json" "$src/package-lock.json" "$dest/"
	say "$name: npm ci ($what; pinned by package-lock.json)"
	if ! (cd "$dest" && npm ci --cache "$cache/npm-cache" --no-fund --no-audit --loglevel=error >"$log" 2>&1); then
		cat "$log" >&2
		rm -rf "$cache/npm-cache"
		die "npm ci for the $name failed (see above)"
	fi
	rm -rf "$log" "$cache/npm-cache"
	if [ "${NPM_PINNED_READABLE:-}" = 1 ]; then
		chmod -R a+rX "$dest"
	fi
	echo "$want" >"$dest/DEPS"
	say "$name: ready in $(elapsed "$start")"
}

# The official reference servers the upstream world (core/world/upstream) is
# tested and demonstrated on: written by nobody on the team. Sealed upstreams
# run under a uid of their own, so the install is readable by others.
NPM_PINNED_READABLE=1 npm_pinned "upstream MCP servers" "$root/examples/upstreams" "$cache/upstreams" \
	"server-filesystem, server-memory" \
	node_modules/@modelcontextprotocol/server-filesystem/dist/index.js \
	node_modules/@modelcontextprotocol/server-memory/dist/index.js

# The official ClickHouse Node client: a third-party client of the embedded
# store a worker serves over ClickHouse's HTTP interface (storage/served);
# deploy's tests run the dashboard's SQL with it.
npm_pinned "ClickHouse Node client" "$root/deploy/clickhouse-client" "$cache/clickhouse-client" \
	"@clickhouse/client" node_modules/@clickhouse/client/package.json

# The conformance suite for MCP servers, which core/toolserver's tests run
# against a live trial's tool server.
npm_pinned "MCP conformance suite" "$root/scripts/mcp-conformance" "$cache/mcp-conformance" \
	"@modelcontextprotocol/conformance" node_modules/@modelcontextprotocol/conformance/dist/index.js
