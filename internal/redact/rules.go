package redact

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/spf13/viper"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// A rule finds one shape of secret in a string. The secret is the rule's
// secret group (the key name, URL or header around it stays readable), or
// the whole match for a rule without one.
type rule struct {
	id string
	re *regexp.Regexp
	// secret is the index of the secret group: > 0 that group, 0 the whole
	// match, -1 the first group that matched (gitleaks' convention for a
	// rule without a secretGroup).
	secret int
	// keywords: the rule runs only on a string that contains one of them
	// (any case). A rule without keywords runs on every string.
	keywords []string
	// pre, when set, is a cheap test a string must pass before the rule's
	// expression runs (rules with no literal to key on).
	pre func(s string) bool
	// entropy: a secret of at most this Shannon entropy (bits per byte) is
	// not one (gitleaks' threshold; 0 for none).
	entropy float64
	// allow are gitleaks allowlists: a finding they allow is not a secret
	// (placeholders, template variables, paths, booleans).
	allow []*gitleaks.Allowlist
	// check, when set, decides a match (its submatch indices) is a secret.
	check func(s string, m []int) bool
	// generic rules (a secret named only by its key) never take the
	// identifiers rebound itself stores after a weak name (see productID).
	generic bool
	// extend, when set, gives the span to remove from a match.
	extend func(s string, m []int) (start, end int)
	// window, when set, runs the rule only near its keywords (findNear),
	// with at: re anchored at the start.
	window *window
	at     *regexp.Regexp
}

// window says how a rule runs near its keywords (findNear): anchored at
// an occurrence of one of words (all of the rule's keywords when nil) that
// is not inside a word (boundary) and is followed within sep bytes by one
// of seps (when sep > 0), on the after bytes from there (more when a match
// reaches the end).
type window struct {
	words      []string
	boundary   bool
	after, sep int
	seps       string
}

func (w *window) starts(word string) bool {
	if w.words == nil {
		return true
	}
	for _, x := range w.words {
		if x == word {
			return true
		}
	}
	return false
}

// gitleaksKeyRule is how 96 of gitleaks' rules begin: a name holding the
// provider's keyword, then (within 20 name characters and 3 quotes or
// spaces) a separator, then the secret.
const gitleaksKeyRule = `(?i)[\w.-]{0,50}?(?:`

// nearWindow returns how a rule can run near its keywords, or nil: rules
// of gitleaks' key = value form, and rules whose expression begins with a
// literal that begins with one of their keywords.
func nearWindow(src string, keywords []string) *window {
	if len(keywords) == 0 {
		return nil
	}
	if strings.HasPrefix(src, gitleaksKeyRule) {
		return &window{after: 512, sep: 24, seps: "=>:|?,"}
	}
	lit, boundary := literalStart(src)
	if lit == "" {
		return nil
	}
	w := &window{boundary: boundary, after: 1024}
	for _, k := range keywords {
		if strings.HasPrefix(lit, k) {
			w.words = append(w.words, k)
		}
	}
	if len(w.words) == 0 {
		return nil
	}
	return w
}

// literalStart returns the literal (lower-cased) every match of src begins
// with, and whether a word boundary comes before it; "" when there is none.
func literalStart(src string) (string, bool) {
	t, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return "", false
	}
	boundary := false
	for {
		switch t.Op {
		case syntax.OpConcat:
			if len(t.Sub) == 0 {
				return "", false
			}
			// A leading \b (or ^) is skipped; the literal follows it.
			if len(t.Sub) > 1 && (t.Sub[0].Op == syntax.OpWordBoundary || t.Sub[0].Op == syntax.OpBeginText || t.Sub[0].Op == syntax.OpBeginLine) {
				boundary = boundary || t.Sub[0].Op == syntax.OpWordBoundary
				t = &syntax.Regexp{Op: syntax.OpConcat, Sub: t.Sub[1:]}
				continue
			}
			t = t.Sub[0]
		case syntax.OpCapture:
			t = t.Sub[0]
		case syntax.OpLiteral:
			return strings.ToLower(string(t.Rune)), boundary
		default:
			return "", false
		}
	}
}

var namedWindow = &window{after: 512, sep: 56, seps: "=:"}

// ownRule is one of rebound's own rules: the shapes gitleaks' rules do not
// find in text (bare tokens, connection strings, credentials in URLs, key
// = value forms, prose) and the entropy rules.
type ownRule struct {
	pattern  string
	keywords []string
	pre      func(string) bool
	check    func(s string, m []int) bool
	window   *window
	extend   func(s string, m []int) (start, end int)
}

// ownRules are rebound's rules on top of gitleaks' (DefaultPatterns lists
// their expressions). A pattern with a subexpression named "secret" has
// only that part replaced; otherwise the whole match is.
var ownRules = []ownRule{
	// Private keys (PEM, OpenSSH, PGP): from the header to the end of the
	// block, or of a block cut short, to the next block or the end.
	{pattern: `-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`, keywords: []string{"private key"}, extend: pemBlock},
	{pattern: `sk-[A-Za-z0-9_\-]{16,}`, keywords: []string{"sk-"}},                                                                                       // OpenAI-style secret keys
	{pattern: `\b[rs]k_(?:live|test|prod)_[0-9A-Za-z]{16,}`, keywords: []string{"sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"}}, // Stripe secret and restricted keys
	{pattern: `(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)`, keywords: []string{"bearer"}},                                                      // bearer tokens
	{pattern: `(?i)\bbasic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})`, keywords: []string{"basic"}},                                                          // HTTP basic credentials
	{pattern: `\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}\b`, // AWS key ids
		keywords: []string{"akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "a3t"}},
	{pattern: `gh[pousr]_[A-Za-z0-9]{30,}`, keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},         // GitHub tokens
	{pattern: `github_pat_[A-Za-z0-9_]{22,}`, keywords: []string{"github_pat_"}},                                // GitHub fine-grained tokens
	{pattern: `glpat-[A-Za-z0-9_\-]{20,}`, keywords: []string{"glpat-"}},                                        // GitLab personal access tokens
	{pattern: `AIza[0-9A-Za-z_\-]{35}`, keywords: []string{"aiza"}},                                             // Google API keys
	{pattern: `\bhf_[A-Za-z0-9]{30,}`, keywords: []string{"hf_"}},                                               // Hugging Face tokens
	{pattern: `\bnpm_[A-Za-z0-9]{36}`, keywords: []string{"npm_"}},                                              // npm tokens
	{pattern: `xox[baprs]-[A-Za-z0-9\-]{10,}`, keywords: []string{"xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"}}, // Slack tokens
	{pattern: `eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`, keywords: []string{"eyj"}},       // JWTs
	{pattern: `\bdckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}`, keywords: []string{"dckr_pat_", "dckr_oat_"}},           // Docker Hub access tokens
	{pattern: `\bkey-[0-9a-f]{32}\b`, keywords: []string{"key-"}},                                               // Mailgun API keys
	{pattern: `\b[0-9]{8,10}:AA[0-9A-Za-z_\-]{33}\b`, keywords: []string{":aa"}},                                // Telegram bot tokens
	// Discord bot tokens: base64 of the bot's id, a timestamp, an HMAC.
	{pattern: `\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}\b`, pre: hasDiscordShape},
	// Azure: a storage account's key and a shared access key in a
	// connection string, and a SAS token's signature.
	{pattern: `(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*(?P<secret>[^;\s"'\\]{8,})`, keywords: []string{"accountkey", "sharedaccess"}},
	{pattern: `(?i)[?&;]sig=(?P<secret>[^&#;\s"'\\]{8,})`, keywords: []string{"sig="}},
	// A bare AWS secret access key: 40 characters of base64 mixing cases
	// and digits, with nothing of that alphabet on either side.
	{pattern: `(?:^|[^A-Za-z0-9/+=])(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`, pre: hasRun40, check: checkGroup(func(v string) bool {
		return classes(v) == 3 && shannon(v) > 4.2
	})},
	// Credentials in URLs: postgres://user:password@host, https://u:p@host,
	// redis://:password@host.
	{pattern: `\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@"'\\]*:(?P<secret>[^\s/@"'\\]+)@`, keywords: []string{"://"}},
	// key = value forms: aws_secret_access_key=..., "password": "...",
	// api_key: ..., a service account's "private_key_id": "...".
	{pattern: `(?i)\b(?:aws_secret_access_key|aws_session_token|secret_access_key|password|passwd|passphrase|pwd|client_secret|app_secret|api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|session[_-]?token|secret[_-]?key|private[_-]?key(?:[_-]?id)?|x-api-key|x-auth-token)\b(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?(?P<secret>[^\s"',;}\\]{4,})`,
		keywords: []string{"pass", "pwd", "secret", "api", "token", "private"}},
	// An Authorization header: its credentials (after a scheme's name),
	// never the rest of the line. A scheme of parameters (Digest, AWS
	// SigV4, OAuth 1) has its whole parameter list removed.
	{pattern: `(?i)\bauthorization\b(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?(?:(?:basic|bearer|token|negotiate|ntlm|apikey|api-key|key|jwt|dpop|sso|ssws|splunk|mac|digest|aws4-hmac-sha256|oauth|hawk)\s+)?(?P<secret>[^\s"',;\\]+)`, keywords: []string{"authorization"}},
	{pattern: `(?i)\bauthorization\b(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?(?:digest|aws4-hmac-sha256|oauth|hawk)\s+(?P<secret>[\w-]+=(?:"[^"\r\n\\]*"|[^\s,"\\]+)(?:\s*,\s*[\w-]+=(?:"[^"\r\n\\]*"|[^\s,"\\]+))*)`, keywords: []string{"authorization"}},
	// Prose: "the password is hunter2", "passphrase was ...".
	{pattern: `(?i)\b(?:password|passwd|passphrase)\s+(?:is|was)\s*:?\s+(?:\\?["'])?(?P<secret>[^\s"',;}\\]{3,})`, keywords: []string{"password", "passwd", "passphrase"}},
	// Entropy: a high-entropy value after a secret-like name (token=...,
	// "signature": "...", X-Session: ...).
	{pattern: `(?i)(?P<name>[A-Za-z][\w.\-]{0,48})(?:\\?["'])?[ \t]*(?:=|:|=>)[ \t]*(?:\\?["'])?(?P<secret>[A-Za-z0-9+/_~.%=\-]{16,})`,
		keywords: contextWords, check: checkNamed, window: namedWindow},
	// Entropy: a high-entropy value of a URL's query, whatever its name.
	{pattern: `[?&](?P<name>[A-Za-z0-9_.%\[\]\-]{1,64})=(?P<secret>[^&#\s"'<>\\]{16,})`, pre: hasQuery, check: checkQuery},
	// Entropy: a token as a URL's user (https://TOKEN@host).
	{pattern: `\b[A-Za-z][A-Za-z0-9+.\-]*://(?P<secret>[^\s:/@"'\\]{16,})@`, keywords: []string{"://"}, check: checkGroup(tokenLike)},
}

// DefaultPatterns are the expressions of rebound's own rules whose match
// alone says "secret" (the entropy rules also weigh the value; gitleaks'
// rules run beside them): a plan's literal env value that matches one
// belongs under env_from.
var DefaultPatterns = func() []string {
	var out []string
	for _, r := range ownRules {
		if r.check == nil {
			out = append(out, r.pattern)
		}
	}
	return out
}()

// contextWords name secrets: a high-entropy value after one is removed.
var contextWords = []string{"token", "secret", "passw", "pwd", "credential", "creds", "sig", "auth", "key", "session", "cookie", "private", "bearer", "jwt"}

// secretName reports a name that says its value is secret, and whether it
// says so strongly (token, secret, password, signature, credential, auth):
// only a weak name (key, session, cookie) leaves rebound's own
// identifiers alone (args_key: 16 hex digits).
func secretName(name string) (secret, strong bool) {
	name = strings.ToLower(name)
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		switch {
		case part == "sig" || strings.HasSuffix(part, "sig") || strings.Contains(part, "signature"),
			strings.Contains(part, "token"), strings.Contains(part, "secret"), strings.Contains(part, "passw"),
			part == "pwd" || strings.HasSuffix(part, "pwd"), strings.Contains(part, "credential"), part == "creds",
			part == "auth" || strings.HasPrefix(part, "auth") && !strings.HasPrefix(part, "author") || strings.HasSuffix(part, "auth"),
			part == "bearer", part == "jwt", strings.HasSuffix(part, "apikey"):
			return true, true
		case part == "key" || strings.HasSuffix(part, "key"), strings.Contains(part, "session"), strings.Contains(part, "cookie"), part == "private":
			secret = true
		}
	}
	return secret, false
}

// tokenLike reports a value that looks generated rather than written: at
// least 16 bytes mixing letters with digits or both cases, of high Shannon
// entropy, with a part (between punctuation) that mixes letters and
// digits or changes case often ("process-items-2025", "checkout-api" and
// "CustomerRefundRequested" are written; "x9Yk2mQ7pL4vR8wN" is not).
func tokenLike(v string) bool {
	if len(v) < 16 || classes(v) < 2 || shannon(v) < 3.0 {
		return false
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		if generatedPart(part) {
			return true
		}
	}
	return false
}

// generatedPart reports a run of letters and digits that mixes the two, or
// letters whose case changes at least every fourth one.
func generatedPart(p string) bool {
	letters, digits, changes := 0, 0, 0
	prevUpper, prevLetter := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if '0' <= c && c <= '9' {
			digits++
			prevLetter = false
			continue
		}
		up := 'A' <= c && c <= 'Z'
		if prevLetter && up != prevUpper {
			changes++
		}
		letters++
		prevUpper, prevLetter = up, true
	}
	if letters > 0 && digits > 0 {
		return true
	}
	return letters >= 12 && 4*changes >= letters
}

// productID reports the identifiers rebound itself stores (trial ids, the
// keyed hashes of idempotency keys, argument keys, sha256 digests, sweep
// ids) and UUIDs: after a weak name they are not secrets.
func productID(v string) bool {
	switch {
	case uuidRe.MatchString(v), hmacRe.MatchString(v), sweepIDRe.MatchString(v), strings.HasPrefix(v, "sha256:") && isHex(v[7:]):
		return true
	case isHex(v) && strings.ToLower(v) == v:
		switch len(v) {
		case 16, 24, 64:
			return true
		}
	}
	return false
}

var (
	uuidRe    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	hmacRe    = regexp.MustCompile(`^hmac:[0-9a-f]{16}$`)
	sweepIDRe = regexp.MustCompile(`^[a-z0-9-]*-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)
)

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// checkNamed decides the entropy rule after a name.
func checkNamed(s string, m []int) bool {
	name, v := s[m[2]:m[3]], s[m[4]:m[5]]
	secret, strong := secretName(name)
	if !secret || !tokenLike(v) {
		return false
	}
	return strong || !productID(v)
}

// checkQuery decides the entropy rule of a URL query value: generated
// values are secrets (a signature, a code, a state), a URL or prose is not.
func checkQuery(s string, m []int) bool {
	name, v := s[m[2]:m[3]], s[m[4]:m[5]]
	if strings.Contains(strings.ToLower(v), "%3a%2f%2f") || strings.Contains(v, "://") || strings.Contains(v, "+") && strings.Count(v, "+") > 2 {
		return false
	}
	if !tokenLike(v) {
		return false
	}
	_, strong := secretName(name)
	return strong || !productID(v)
}

// checkGroup applies f to the secret group (index 1).
func checkGroup(f func(string) bool) func(string, []int) bool {
	return func(s string, m []int) bool { return f(s[m[2]:m[3]]) }
}

// classes counts the kinds of characters in v: lower-case letters,
// upper-case letters, digits.
func classes(v string) int {
	var lo, up, di int
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z':
			lo = 1
		case 'A' <= c && c <= 'Z':
			up = 1
		case '0' <= c && c <= '9':
			di = 1
		}
	}
	return lo + up + di
}

// shannon is the Shannon entropy of s in bits per byte.
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// pemBlock is the span of a private key block from its header: to the end
// of its footer, or (a block cut short) to the next block or the end.
func pemBlock(s string, m []int) (int, int) {
	rest := s[m[1]:]
	next := strings.Index(rest, "-----BEGIN ")
	if next < 0 {
		next = len(rest)
	}
	if i := strings.Index(rest[:next], "-----END "); i >= 0 {
		if j := strings.Index(rest[i+9:next], "-----"); j >= 0 {
			return m[0], m[1] + i + 9 + j + 5
		}
	}
	return m[0], m[1] + next
}

// hasDiscordShape reports a run of at least 24 token characters, a dot,
// 6 token characters and a dot.
func hasDiscordShape(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' && run >= 24 && i+8 <= len(s) && s[i+7] == '.' {
			ok := true
			for j := i + 1; j < i+7; j++ {
				if !tokenByte(s[j]) {
					ok = false
					break
				}
			}
			if ok {
				return true
			}
		}
		if tokenByte(c) {
			run++
		} else {
			run = 0
		}
	}
	return false
}

func tokenByte(c byte) bool { return isWordByte(c) || c == '-' }

func hasQuery(s string) bool {
	return strings.IndexByte(s, '=') >= 0 && (strings.IndexByte(s, '?') >= 0 || strings.IndexByte(s, '&') >= 0)
}

// hasRun40 reports a run of exactly 40 base64 characters.
func hasRun40(s string) bool {
	run := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && b64Char(s[i]) {
			run++
			continue
		}
		if run == 40 {
			return true
		}
		run = 0
	}
	return false
}

func b64Char(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/'
}

// ruleSet is every rule a redactor runs, with the keyword prefilter.
type ruleSet struct {
	rules    []rule
	always   []int // rules without keywords
	keywords *acMatcher
	words    []string
	byWord   [][]int // keyword -> rules
	windowed []bool  // keyword -> a rule of it runs near it only
	// named finds the keywords of the rules that need a key name before
	// the secret (Redactor.under).
	named *acMatcher
}

func (rs *ruleSet) add(r rule) { rs.rules = append(rs.rules, r) }

// build indexes the rules' keywords.
func (rs *ruleSet) build() {
	index := map[string]int{}
	var words []string
	rs.always, rs.byWord = nil, nil
	for i, r := range rs.rules {
		if len(r.keywords) == 0 {
			rs.always = append(rs.always, i)
			continue
		}
		for _, k := range r.keywords {
			k = strings.ToLower(k)
			w, ok := index[k]
			if !ok {
				w = len(words)
				index[k] = w
				words = append(words, k)
				rs.byWord = append(rs.byWord, nil)
			}
			rs.byWord[w] = append(rs.byWord[w], i)
		}
	}
	rs.words = words
	rs.windowed = make([]bool, len(words))
	for w, rules := range rs.byWord {
		for _, i := range rules {
			if rs.rules[i].window != nil {
				rs.windowed[w] = true
			}
		}
	}
	rs.keywords = newAC(words, true)
	var named []string
	seen := map[string]bool{}
	for _, r := range rs.rules {
		if r.window == nil || r.window.sep == 0 {
			continue
		}
		for _, k := range r.keywords {
			if k = strings.ToLower(k); !seen[k] {
				seen[k] = true
				named = append(named, k)
			}
		}
	}
	rs.named = newAC(named, true)
}

// compileOwn compiles rebound's own rules and the extra patterns.
func compileOwn(rs *ruleSet, own []ownRule, extra []string) error {
	for _, o := range own {
		re, err := regexp.Compile(o.pattern)
		if err != nil {
			return fmt.Errorf("redact: pattern %q: %w", o.pattern, err)
		}
		r := rule{id: "rebound", re: re, secret: max(re.SubexpIndex("secret"), 0), keywords: o.keywords, pre: o.pre, check: o.check, window: o.window, extend: o.extend}
		if r.window == nil && r.pre == nil {
			r.window = nearWindow(o.pattern, r.keywords)
		}
		if r.window != nil {
			if err := r.anchor(o.pattern); err != nil {
				return fmt.Errorf("redact: pattern %q: %w", o.pattern, err)
			}
		}
		rs.add(r)
	}
	for _, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("redact: pattern %q: %w", p, err)
		}
		rs.add(rule{id: "extra", re: re, secret: max(re.SubexpIndex("secret"), 0)})
	}
	return nil
}

// gitleaksTerminator ends most of gitleaks' rules: a secret followed by a
// quote, a space, a semicolon, an escaped newline or the end. Stored text is
// prose, URLs and JSON rather than source code, so the rules are run with
// any character that cannot continue a token after the secret (",", "&",
// ")", "|", ...); the secret group itself is unchanged.
const (
	gitleaksTerminator = `(?:[\x60'"\s;]|\\[nr]|$)`
	tokenTerminator    = `(?:[^0-9A-Za-z_\-]|$)`
)

var (
	gitleaksOnce  sync.Once
	gitleaksRules []rule
	gitleaksErr   error
)

// GitleaksRuleCount is the number of gitleaks rules a redactor runs (for
// tests and the documentation).
func GitleaksRuleCount() (int, error) {
	r, err := loadGitleaks()
	return len(r), err
}

// loadGitleaks compiles gitleaks' default configuration once per process:
// each rule with its expression, secret group, entropy threshold, keywords
// and allowlists (their expressions; stop words are not used: a redactor
// prefers removing a harmless word to keeping a secret that contains one).
// Rules that only match file paths are left out; rules restricted to a
// file path run on every string.
func loadGitleaks() ([]rule, error) {
	gitleaksOnce.Do(func() {
		v := viper.New()
		v.SetConfigType("toml")
		if err := v.ReadConfig(strings.NewReader(gitleaks.DefaultConfig)); err != nil {
			gitleaksErr = fmt.Errorf("redact: gitleaks' default config: %w", err)
			return
		}
		var vc gitleaks.ViperConfig
		if err := v.Unmarshal(&vc); err != nil {
			gitleaksErr = fmt.Errorf("redact: gitleaks' default config: %w", err)
			return
		}
		cfg, err := vc.Translate()
		if err != nil {
			gitleaksErr = fmt.Errorf("redact: gitleaks' default config: %w", err)
			return
		}
		for _, id := range cfg.OrderedRules {
			gr, ok := cfg.Rules[id]
			if !ok || gr.Regex == nil {
				continue
			}
			re, src := gr.Regex, gr.Regex.String()
			if strings.HasSuffix(src, gitleaksTerminator) {
				src = strings.TrimSuffix(src, gitleaksTerminator) + tokenTerminator
			}
			secret := gr.SecretGroup
			if secret == 0 && re.NumSubexp() > 0 {
				secret = -1
			}
			// The global allowlist (placeholders, template variables,
			// booleans, paths) and the generic rule's own (words that
			// name a key without holding one); the other rules'
			// allowlists spare documented example keys in a repository
			// (and gitleaks' unanchored "s\.[A-Za-z]{24}" spares one
			// Vault token in a hundred), which a redactor need not do.
			allow := append([]*gitleaks.Allowlist(nil), cfg.Allowlists...)
			if id == "generic-api-key" {
				allow = append(allow, gr.Allowlists...)
			}
			r := rule{id: id, re: re, secret: secret, keywords: gr.Keywords,
				entropy: gr.Entropy, allow: allow, generic: id == "generic-api-key"}
			// A rule run near its keywords needs only its anchored form;
			// any other, its expression with the relaxed end.
			if r.window = nearWindow(src, r.keywords); r.window != nil {
				err = r.anchor(src)
			} else if src != re.String() {
				r.re, err = regexp.Compile(src)
			}
			if err != nil {
				gitleaksErr = fmt.Errorf("redact: rule %s: %w", id, err)
				return
			}
			gitleaksRules = append(gitleaksRules, r)
		}
	})
	return gitleaksRules, gitleaksErr
}

// anchor compiles the expression a rule runs near its keywords with: src
// anchored at the start.
func (r *rule) anchor(src string) error {
	at, err := regexp.Compile(`^(?:` + src + `)`)
	r.at = at
	return err
}

// allowed applies gitleaks' allowlists to a finding: secret, the whole
// match and its line.
func (r *rule) allowed(secret, match, line string) bool {
	for _, a := range r.allow {
		if len(a.Regexes) == 0 {
			continue // paths, commits, stop words: not used
		}
		if a.MatchCondition == gitleaks.AllowlistMatchAnd && (len(a.Paths) > 0 || len(a.Commits) > 0 || len(a.StopWords) > 0) {
			continue // a condition that never holds for a stored string
		}
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		if a.RegexAllowed(target) {
			return true
		}
	}
	return false
}
