package storage

import (
	"net/url"
	"strings"
)

const redacted = "xxxxx"

// RedactDSN returns dsn with every credential replaced by "xxxxx": the
// password of the user info, and the password and http_proxy credentials of
// the query string. Use it whenever a DSN goes into a message or a log. A
// DSN that does not parse is reduced to its scheme.
func RedactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		if i := strings.Index(dsn, "://"); i > 0 && !strings.ContainsAny(dsn[:i], "@:/") {
			return dsn[:i] + "://" + redacted
		}
		return redacted
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k, vs := range q {
			switch strings.ToLower(k) {
			case "password", "pass", "pwd", "secret", "token", "access_token", "jwt":
				for i := range vs {
					vs[i] = redacted
				}
				changed = true
			case "http_proxy":
				for i, v := range vs {
					vs[i] = RedactDSN(v)
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}
