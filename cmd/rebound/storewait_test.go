package main

import (
	"strings"
	"testing"
	"time"
)

func TestStoreWaitFromEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   bool
	}{
		{"", 0, false},
		{"2h30m", 150 * time.Minute, false},
		{"1s", time.Second, false},
		{"4h", 4 * time.Hour, false},
		{"5h", 0, true},
		{"500ms", 0, true},
		{"forever", 0, true},
		{"-1h", 0, true},
	} {
		got, err := storeWaitFromEnv(func(string) string { return tc.value })
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("REBOUND_STORE_WAIT=%q: %v, %v", tc.value, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "REBOUND_STORE_WAIT") {
			t.Errorf("the error does not name the variable: %v", err)
		}
	}
}
