package redact

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// The memo changes no output: generated strings that mix ordinary text with
// fragments of credential shapes, each redacted several times, from several
// goroutines, equal the redaction computed without the memo.
func TestMemoChangesNothing(t *testing.T) {
	r, err := NewWith(Options{Values: []string{"s3cr3t-value-123"}, HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	fragments := []string{"sk-", "abcdefghijklmnopqrstuvwxyz012345", "Bearer ", "password", "=", ":", "\"",
		" is ", "hunter2", "postgres://", "u:pw", "@h", "s3cr3t-value-123", "inv-100", "refund", " ", "{", "}"}
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := make([]string, 3000)
	for i := range inputs {
		var b strings.Builder
		for n := rng.IntN(8); n >= 0; n-- {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
		inputs[i] = b.String()
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 3; round++ {
				for _, s := range inputs {
					if got, want := r.String(s), r.redact(s); got != want {
						errs <- s + " -> " + got + ", want " + want
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if got := r.String("password: hunter22"); strings.Contains(got, "hunter22") {
		t.Fatalf("a remembered string kept its secret: %q", got)
	}
}

// The memo stays bounded however many distinct strings a worker redacts,
// and long strings are never remembered.
func TestMemoBounded(t *testing.T) {
	r, _ := New(nil, []byte("k"))
	for i := 0; i < 3*memoMax; i++ {
		r.String("k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i))
	}
	if n := len(r.memo.m); n > memoMax {
		t.Fatalf("memo holds %d strings, cap %d", n, memoMax)
	}
	r.memo = newMemo()
	r.String(strings.Repeat("y", memoMaxLen+1))
	if len(r.memo.m) != 0 {
		t.Fatal("a string longer than memoMaxLen was remembered")
	}
}

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}
