package runner

import (
	"bytes"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"rebound/workflows"
)

func TestCodecEncryptsAndRoundTrips(t *testing.T) {
	key := []byte("codec-test-key-0123456789abcdef-0123456789")
	codec, err := NewCodec(key)
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec)
	in := workflows.SweepInput{SweepID: "s", PlanJSON: `{"goal":"use ghp_secretsecretsecretsecretsecret12345"}`, Trials: 3}
	p, err := dc.ToPayload(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.GetData(), []byte("ghp_secret")) || string(p.GetMetadata()[converter.MetadataEncoding]) != "binary/encrypted" {
		t.Fatalf("payload not encrypted: %v", p)
	}
	var out workflows.SweepInput
	if err := dc.FromPayload(p, &out); err != nil || out != in {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	other, _ := NewCodec([]byte("another-key-another-key-another-key-0123"))
	if _, err := other.Decode([]*commonpb.Payload{p}); err == nil || !strings.Contains(err.Error(), "REBOUND_REDACTION_KEY differs") {
		t.Fatalf("another key: %v", err)
	}
	if _, err := NewCodec([]byte("short")); err == nil {
		t.Fatal("a short key was accepted")
	}
}
