package main

import (
	"strings"
	"testing"
)

// The Temporal TLS and API-key options reach every command that dials a
// cluster, and a bad one is a configuration error (exit 2) before any
// connection; the API key is read from the variable named, never a flag.
func TestTemporalSecurityFlags(t *testing.T) {
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	t.Setenv("REBOUND_TEST_TEMPORAL_KEY", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"api key variable unset", []string{"sweep", "status", "--temporal-address", "127.0.0.1:1", "--temporal-api-key-env", "REBOUND_TEST_TEMPORAL_KEY", "some-sweep"}, "REBOUND_TEST_TEMPORAL_KEY, which is empty"},
		{"cert without key", []string{"sweep", "status", "--temporal-address", "127.0.0.1:1", "--temporal-tls-cert", "/nonexistent/client.crt", "some-sweep"}, "go together"},
		{"missing CA file", []string{"sweep", "cancel", "--temporal-address", "127.0.0.1:1", "--temporal-tls-ca", "/nonexistent/ca.pem", "some-sweep"}, "/nonexistent/ca.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d (want %d), stderr: %s", code, exitUsage, errOut)
			}
		})
	}
	t.Run("env", func(t *testing.T) {
		t.Setenv("REBOUND_TEMPORAL_API_KEY_ENV", "REBOUND_TEST_TEMPORAL_KEY")
		code, _, errOut := runCLI(t, "sweep", "status", "--temporal-address", "127.0.0.1:1", "some-sweep")
		if code != exitUsage || !strings.Contains(errOut, "REBOUND_TEST_TEMPORAL_KEY") {
			t.Fatalf("REBOUND_TEMPORAL_API_KEY_ENV ignored: exit %d, stderr: %s", code, errOut)
		}
	})
}
