package redacttest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
)

// Planted is one secret of a corpus, ready to be put in one place.
type Planted struct {
	// Shape names the kind of secret.
	Shape string
	// Pieces is the text to plant: one string, or for a secret split
	// across fields one string per field.
	Pieces []string
	// Secrets are what must never be stored (each also JSON-escaped).
	Secrets []string
	// Before and After are the non-secret text right before and after the
	// secret in Pieces[0] (and the last piece): they must survive.
	Before, After string
}

// Known are the secret values a sweep's redactor knows (the values of its
// env_from and api_key_env variables).
type Known struct {
	// A and B have no shape; C holds a quote and a backslash (its
	// JSON-escaped form differs).
	A, B, C string
}

// NewKnown draws known values.
func NewKnown(rng *rand.Rand) Known {
	return Known{
		A: "opaque" + Alnum(rng, 34),
		B: URLSafe(rng, 32),
		C: Alnum(rng, 12) + `"` + Alnum(rng, 12) + `\` + Alnum(rng, 12),
	}
}

// Values lists the known values.
func (k Known) Values() []string { return []string{k.A, k.B, k.C} }

// Corpus draws one secret of every shape, with random bodies: provider
// keys and tokens (the shapes gitleaks' rules know and the ones rebound
// adds), credentials in URLs and headers, key = value and prose forms,
// high-entropy values in secret-like places, a secret in base64, and the
// known values whole, encoded, inside a longer base64 string and split in
// pieces.
func Corpus(rng *rand.Rand, k Known) []Planted {
	var out []Planted
	whole := func(shape, secret string) {
		out = append(out, Planted{Shape: shape, Pieces: []string{secret}, Secrets: []string{secret}})
	}
	around := func(shape, before, secret, after string, more ...string) {
		out = append(out, Planted{Shape: shape, Pieces: []string{before + secret + after}, Secrets: append([]string{secret}, more...), Before: before, After: after})
	}
	a, h, u, d := func(n int) string { return Alnum(rng, n) }, func(n int) string { return Hex(rng, n) },
		func(n int) string { return URLSafe(rng, n) }, func(n int) string { return Digits(rng, n) }

	whole("openai", "sk-proj-"+u(74)+"T3BlbkFJ"+u(74))
	whole("anthropic", "sk-ant-api03-"+u(93)+"AA")
	whole("stripe-secret", "sk_live_"+a(32))
	whole("stripe-restricted", "rk_live_"+a(32))
	around("bearer-header", "Authorization: Bearer ", a(40), " (retry 2)")
	around("basic-header", "Authorization: Basic ", base64.StdEncoding.EncodeToString([]byte("deploy:"+a(18))), " (retry 2)")
	around("token-header", "Authorization: Token ", a(32), " then GET /v1/items")
	whole("aws-key-id", "AKIA"+Upper(rng, 16))
	whole("aws-sts-key-id", "ASIA"+Upper(rng, 16))
	around("aws-secret-kv", "aws_secret_access_key=", AWSSecret(rng), " region=eu-west-1")
	around("aws-secret-bare", "secret ", AWSSecret(rng), " in the profile")
	whole("github-pat", "ghp_"+a(36))
	whole("github-fine-grained", "github_pat_"+a(22)+"_"+a(59))
	whole("gitlab-pat", "glpat-"+u(20))
	whole("google-api-key", "AIza"+u(35))
	whole("huggingface", "hf_"+Letters(rng, 34))
	whole("npm", "npm_"+a(36))
	whole("slack-bot", "xoxb-"+d(12)+"-"+d(12)+"-"+a(24))
	whole("jwt", "eyJ"+a(20)+".eyJ"+a(40)+"."+u(43))
	around("postgres-url", "postgres://admin:", a(18), "@db.internal:5432/prod")
	around("https-userinfo", "https://deploy:", a(20), "@git.example.com/repo.git")
	around("redis-url", "redis://:", a(24), "@cache.internal:6379/0")
	for _, kind := range []string{"PGP PRIVATE KEY BLOCK", "RSA PRIVATE KEY", "OPENSSH PRIVATE KEY"} {
		body := base64.StdEncoding.EncodeToString(RandBytes(rng, 48)) + "\n" + base64.StdEncoding.EncodeToString(RandBytes(rng, 48))
		out = append(out, Planted{Shape: "pem-" + strings.Fields(kind)[0], Pieces: []string{"-----BEGIN " + kind + "-----\n" + body + "\n-----END " + kind + "-----"},
			Secrets: strings.Split(body, "\n")})
	}
	around("prose-password", "the password is ", a(14), " for now")
	around("password-kv", "password: ", a(14), " (rotated)")
	around("api-key-json", `"api_key": "`, a(24), `"`)
	whole("slack-webhook", "https://hooks.slack.com/services/T"+Upper(rng, 8)+"/B"+Upper(rng, 8)+"/"+a(24))
	around("azure-connection-string", "DefaultEndpointsProtocol=https;AccountName="+Lower(rng, 10)+";AccountKey=",
		base64.StdEncoding.EncodeToString(RandBytes(rng, 64)), ";EndpointSuffix=core.windows.net")
	sig := base64.StdEncoding.EncodeToString(RandBytes(rng, 32))
	around("azure-sas-url", "https://"+Lower(rng, 8)+".blob.core.windows.net/c/report.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00%3A00%3A00Z&spr=https&sig=",
		url.QueryEscape(sig), " expires soon", sig)
	whole("discord-bot", "M"+a(23)+"."+u(6)+"."+u(27))
	whole("sendgrid", "SG."+u(22)+"."+u(43))
	whole("twilio", "SK"+h(32))
	whole("mailgun", "key-"+h(32))
	whole("digitalocean", "dop_v1_"+h(64))
	whole("shopify", "shpat_"+h(32))
	whole("pypi", "pypi-AgEIcHlwaS5vcmc"+u(70))
	whole("docker", "dckr_pat_"+u(27))
	whole("vault", "hvs."+u(95))
	whole("telegram", d(10)+":AA"+u(33))
	around("gcp-service-account", `{"type": "service_account", "project_id": "proj-7", "private_key_id": "`, h(40), `", "client_id": "1041"}`)
	whole("grafana", "glsa_"+a(32)+"_"+h(8))
	whole("linear", "lin_api_"+a(40))
	whole("postman", "PMAK-"+h(24)+"-"+h(34))
	whole("doppler", "dp.pt."+a(43))
	whole("databricks", "dapi"+h(32))
	whole("planetscale", "pscale_tkn_"+a(40))
	whole("age", "AGE-SECRET-KEY-1"+Bech32(rng, 58))
	whole("square", "sq0atp-"+u(22))
	whole("sentry", "sntryu_"+h(64))
	whole("pulumi", "pul-"+h(40))
	whole("heroku", "HRKU-AA"+u(58))
	around("session-token-kv", "session_token=", a(32), " path=/")
	around("signed-url", "https://cdn.example.net/file.bin?expires=1767225600&signature=", a(43), " (valid 1h)")
	around("url-user-token", "https://", a(40), "@git.example.org/team/repo.git")
	around("api-key-header", "X-Api-Key: ", a(32), " was sent")
	inner := "deploy token ghp_" + a(36)
	around("base64-of-token", "payload ", base64.StdEncoding.EncodeToString([]byte(inner)), " end", inner[len("deploy token "):])

	// The known values.
	around("known-plain", "logged in with ", k.A, " today")
	around("known-base64", "creds ", base64.StdEncoding.EncodeToString([]byte(k.B)), " end")
	around("known-base64-url-raw", "creds ", base64.RawURLEncoding.EncodeToString([]byte(k.A)), " end")
	around("known-hex", "hex ", hex.EncodeToString([]byte(k.B)), " end")
	for align := 1; align <= 2; align++ {
		blob := base64.StdEncoding.EncodeToString(append(append(RandBytes(rng, align), k.A...), RandBytes(rng, 7)...))
		out = append(out, Planted{Shape: "known-inside-base64", Pieces: []string{"blob " + blob + " end"}, Secrets: []string{blob, Base64Core(k.A, align)}, Before: "blob ", After: " end"})
	}
	esc, _ := json.Marshal(k.C)
	around("known-json-escaped", `{"key": "`, string(esc[1:len(esc)-1]), `"}`, k.C)
	for _, n := range []int{2, 3} {
		v := k.B
		var pieces []string
		for i := 0; i < n; i++ {
			pieces = append(pieces, v[i*len(v)/n:(i+1)*len(v)/n])
		}
		out = append(out, Planted{Shape: "known-split", Pieces: pieces, Secrets: pieces})
	}
	return out
}

// Base64Core is the part of base64(x + value) that only value determines
// when x is align bytes long.
func Base64Core(value string, align int) string {
	b := base64.StdEncoding.EncodeToString(append(make([]byte, align), value...))
	return b[(8*align+5)/6 : 8*(align+len(value))/6]
}

const (
	lowerChars  = "abcdefghijklmnopqrstuvwxyz"
	upperChars  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digitChars  = "0123456789"
	alnumChars  = lowerChars + upperChars + digitChars
	bech32Chars = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
)

func draw(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// Alnum draws n letters and digits with at least one of each kind.
func Alnum(rng *rand.Rand, n int) string {
	for {
		s := draw(rng, alnumChars, n)
		if n < 3 || strings.ContainsAny(s, lowerChars) && strings.ContainsAny(s, upperChars) && strings.ContainsAny(s, digitChars) {
			return s
		}
	}
}

// URLSafe draws n characters of the URL-safe base64 alphabet.
func URLSafe(rng *rand.Rand, n int) string {
	return Alnum(rng, n-1)[:n-2] + draw(rng, "-_", 1) + draw(rng, digitChars, 1)
}

// Hex draws n lower-case hex digits.
func Hex(rng *rand.Rand, n int) string { return draw(rng, digitChars+"abcdef", n) }

// Digits draws n digits, the first not 0.
func Digits(rng *rand.Rand, n int) string {
	return draw(rng, "123456789", 1) + draw(rng, digitChars, n-1)
}

// Upper draws n upper-case letters and digits.
func Upper(rng *rand.Rand, n int) string { return draw(rng, upperChars+digitChars, n) }

// Lower draws n lower-case letters.
func Lower(rng *rand.Rand, n int) string { return draw(rng, lowerChars, n) }

// Letters draws n letters.
func Letters(rng *rand.Rand, n int) string { return draw(rng, lowerChars+upperChars, n) }

// Bech32 draws n characters of bech32's alphabet.
func Bech32(rng *rand.Rand, n int) string { return draw(rng, bech32Chars, n) }

// AWSSecret draws an AWS secret access key: 40 characters of base64 with
// both cases, digits and a slash.
func AWSSecret(rng *rand.Rand) string {
	s := Alnum(rng, 38)
	return s[:11] + "/" + s[11:29] + "+" + s[29:]
}

// RandBytes draws n bytes.
func RandBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}
