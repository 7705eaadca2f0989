package clickhouseserver

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"rebound/storage"
)

// parseDSN parses a DSN of the Native protocol (clickhouse://, tcp://) or
// of the HTTP interface (http://, https://). It returns the options to connect
// with (database cleared: the connection uses the user's default) and the
// database named in the DSN, if any. Errors never contain the password.
func parseDSN(dsn string) (*clickhouse.Options, string, error) {
	red := storage.RedactDSN(dsn)
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("storage: invalid ClickHouse DSN %s (URL-encode special characters in the user and password)", red)
	}
	switch u.Scheme {
	case "clickhouse", "tcp", "http", "https":
	default:
		return nil, "", fmt.Errorf("storage: ClickHouse DSN %s: scheme must be clickhouse:// (Native protocol, e.g. clickhouse://user:pass@host:9000/rebound) or http(s):// (HTTP interface, e.g. http://user:pass@host:8123/rebound)", red)
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("storage: invalid ClickHouse DSN %s: %s", red, strings.ReplaceAll(err.Error(), dsn, red))
	}
	db := opts.Auth.Database
	opts.Auth.Database = ""
	if db != "" {
		if err := storage.ValidateDatabase(db); err != nil {
			return nil, "", fmt.Errorf("storage: ClickHouse DSN %s: %w", red, err)
		}
	}
	return opts, db, nil
}

// readOnlySettings makes every query of the connection run with the
// server's readonly=1: clickhouse-go sends the setting with each query, and
// in readonly=1 the server refuses writes, DDL, any change of a setting
// (SETTINGS readonly=0 included) and table functions beyond read access.
// extra are the store's other read-only settings (its limits, introspection
// off), sent the same way; a DSN's own value of any of them is replaced.
func readOnlySettings(opts *clickhouse.Options, extra map[string]any) {
	if opts.Settings == nil {
		opts.Settings = clickhouse.Settings{}
	}
	for k, v := range extra {
		opts.Settings[k] = v
	}
	opts.Settings["readonly"] = 1
}
