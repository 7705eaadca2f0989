package redact

import (
	"strings"
	"testing"
)

// Inputs of the redaction benchmarks: what a worker stores for ordinary
// trials (tool names, codes, argument values, messages, prose, a process's
// output), with no secret in them, and one text that holds a few.
var (
	benchShort = []string{"inventory.lookup", "TIMEOUT", "payments.charge", "sku-1042", "inv-100", "refund", "completed",
		"the upstream timed out", "4f9c2a7e1b3d5f60", "hmac:9a8b7c6d5e4f3a2b", "customer C-7731 asked for a refund of 15000 cents"}
	benchProse = "Looked up every SKU in the catalog. The first lookup timed out after 3000 ms, so I waited for the " +
		"retry-after the tool returned and tried again with the same idempotency key; the second attempt succeeded " +
		"and reported 14 units available at the Lyon warehouse. No refund was issued because the invoice was already " +
		"settled. Next step: confirm the order total with the customer and close ticket T-2291."
	benchOutput = strings.Repeat("2026-11-30T19:19:42Z INFO worker: shard 3 of sweep library-20261130-191942-a1b2c3 "+
		"trial 5f0e9d8c7b6a594837261504 call 4 inventory.lookup ok=true at_ms=1200 code= retryable=false\n", 64)
	benchSecrets = "deploy failed: git push https://deploy:hunter2hunter2@git.example.com/repo.git rejected; " +
		"using Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fw and " +
		"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY then retried with ghp_abcdefghijklmnopqrstuvwxyz0123456789"
)

func benchRedactor(b *testing.B) *Redactor {
	b.Helper()
	r, err := NewWith(Options{Values: []string{"opaque-provider-key-Qx7Lm2Vr9Tz4Wb8N"}, HashKey: []byte("bench-key")})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// Without the memo: the cost of one pass over a string.
func BenchmarkRedactShort(b *testing.B) {
	r := benchRedactor(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.redact(benchShort[i%len(benchShort)])
	}
}

func BenchmarkRedactProse(b *testing.B) {
	r := benchRedactor(b)
	b.SetBytes(int64(len(benchProse)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.redact(benchProse)
	}
}

func BenchmarkRedactOutput(b *testing.B) {
	r := benchRedactor(b)
	b.SetBytes(int64(len(benchOutput)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.redact(benchOutput)
	}
}

func BenchmarkRedactSecrets(b *testing.B) {
	r := benchRedactor(b)
	b.SetBytes(int64(len(benchSecrets)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.redact(benchSecrets)
	}
}

// With the memo, as a worker redacts the same short strings trial after
// trial.
func BenchmarkStringMemo(b *testing.B) {
	r := benchRedactor(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.String(benchShort[i%len(benchShort)])
	}
}

// Building a redactor: a shard builds one per run.
func BenchmarkNew(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchRedactor(b)
	}
}
