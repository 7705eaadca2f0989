package endpoint

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{}, 0, false},
		// What RFC 9110's delay-seconds is not: no answer, never a wait.
		{map[string]string{"Retry-After": "-3"}, 0, false},
		{map[string]string{"Retry-After": "+5"}, 0, false},
		{map[string]string{"Retry-After": "1e3"}, 0, false},
		{map[string]string{"Retry-After": "0x10"}, 0, false},
		{map[string]string{"Retry-After": "Inf"}, 0, false},
		{map[string]string{"Retry-After": "NaN"}, 0, false},
		{map[string]string{"Retry-After": "5."}, 0, false},
		{map[string]string{"Retry-After": ".5"}, 0, false},
		{map[string]string{"Retry-After": "1_000"}, 0, false},
		{map[string]string{"Retry-After-Ms": "soon", "Retry-After": "2"}, 2 * time.Second, true},
		// Too long for a Duration: the longest wait, never a negative one.
		{map[string]string{"Retry-After": "99999999999999999999"}, time.Duration(math.MaxInt64), true},
		{map[string]string{"Retry-After": "1" + strings.Repeat("0", 400)}, time.Duration(math.MaxInt64), true},
		{map[string]string{"Retry-After-Ms": "9999999999999999"}, time.Duration(math.MaxInt64), true},
		{map[string]string{"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}, time.Duration(math.MaxInt64), true},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.header {
			h.Set(k, v)
		}
		got, ok := RetryAfter(h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%v: got %v %v, want %v %v", c.header, got, ok, c.want, c.ok)
		}
	}
}

// FuzzRetryAfter: whatever a provider sends, a wait is never negative, and
// a plain number of seconds is read as exactly that.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "0.5", "-1", "1e9", "Inf", "99999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "", " 3 "} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, secs, ms string) {
		h := http.Header{}
		h.Set("Retry-After", secs)
		h.Set("Retry-After-Ms", ms)
		d, ok := RetryAfter(h, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("RetryAfter(%q, ms %q) = %v, %v", secs, ms, d, ok)
		}
		if strings.TrimSpace(ms) != "" {
			return
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(secs), 10, 32); err == nil && !strings.HasPrefix(strings.TrimSpace(secs), "+") {
			if want := time.Duration(n) * time.Second; !ok || d != want {
				t.Fatalf("Retry-After %q = %v, %v; want %v", secs, d, ok, want)
			}
		}
	})
}
