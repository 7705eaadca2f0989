// Package redacttest holds the secret shapes the redaction tests plant: the
// unit tests of package redact and the planted-secrets sweep in runner.
package redacttest

import (
	"fmt"
	"strings"
)

// Shapes returns one secret of each shape rebound redacts, numbered n so
// that many distinct secrets of one shape can be planted: issue 10's
// twenty-four shapes and a few more.
func Shapes(n int) []string {
	d := fmt.Sprintf("%04d", n)
	return []string{
		"sk-proj-" + d + "abcdefghijklmnopqrstuv",
		"sk_live_" + d + "51HqLyjWDarjtT1zdp7dc",
		"rk_live_" + d + "51HqLyjWDarjtT1zdp7dc",
		"Bearer eyJhbGciOi" + d + ".abcdefghijkl",
		"Authorization: Basic " + "dXNlcjpwYXNzd29yZA" + d,
		"Authorization: Token tok" + d + "abcdef",
		"AKIA" + d + "ABCDEFGHIJKL",
		"ASIA" + d + "ZYXWVUTSRQPO",
		"aws_secret_access_key=" + d + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
		"ghp_" + d + "abcdefghijklmnopqrstuvwxyz0123",
		"github_pat_11ABCDEFG" + d + "_abcdefghijklmnopqrstuvwxyz",
		"glpat-" + d + "abcdefghijklmnopqr",
		"AIzaSy" + d + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4o5",
		"hf_" + d + "abcdefghijklmnopqrstuvwxyzABCD",
		"npm_" + d + "abcdefghijklmnopqrstuvwxyz012345",
		"xoxb-" + d + "-123456789012-abcdefghij",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + d + "In0.SflKxwRJSMeKKF2QT4fw",
		"postgres://admin:pg" + d + "pass@db.internal:5432/prod",
		"https://deploy:hunter" + d + "@git.example.com/repo.git",
		"-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF" + d + "xyzPGPsecretmaterial\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + d + "IBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt" + d + "djEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
		"the password is Tr0ub4dor" + d,
		"password: c0rrecthorse" + d,
		`"api_key": "k3y` + d + `valuevalue"`,
	}
}

// SecretPart is the part of a planted string that must not survive (the
// key name or URL around it may).
func SecretPart(s string) string {
	for _, sep := range []string{"password is ", "password: ", "aws_secret_access_key=", `"api_key": "`} {
		if i := strings.Index(s, sep); i >= 0 {
			return strings.TrimSuffix(s[i+len(sep):], `"`)
		}
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return s[i+3 : strings.LastIndex(s, "@")]
	}
	if rest, ok := strings.CutPrefix(s, "Authorization: "); ok {
		return rest[strings.Index(rest, " ")+1:]
	}
	return s
}
