package runner

import (
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"rebound/internal/redact"
)

// Payloads rebound hands to Temporal (the sweep's plan, activity inputs and
// results, progress, heartbeats, error messages) are encrypted before they
// leave the process, so nothing secret in a plan or a trial ever reaches
// Temporal's store. Encryption (not redaction) because the workflow needs
// the plan back intact; the key is derived from REBOUND_REDACTION_KEY, which
// every client and worker of a deployment shares.

const (
	metadataEncodingEncrypted = "binary/encrypted"
	metadataKeyID             = "encryption-key-id"
)

// Codec is a converter.PayloadCodec that encrypts every payload with
// AES-256-GCM. Payloads that are not encrypted (written before the codec)
// are passed through on decode.
type Codec struct{ s *redact.Sealer }

// NewCodec derives the payload key from the redaction key.
func NewCodec(redactionKey []byte) (*Codec, error) {
	s, err := redact.NewSealer(redactionKey, "temporal-payload")
	if err != nil {
		return nil, err
	}
	return &Codec{s: s}, nil
}

// Encode encrypts each payload, metadata included.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode payload: %w", err)
		}
		sealed, err := c.s.Seal(plain)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(metadataEncodingEncrypted),
				metadataKeyID:              []byte(c.s.KeyID()),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode reverses Encode.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != metadataEncodingEncrypted {
			out[i] = p
			continue
		}
		if id := string(p.GetMetadata()[metadataKeyID]); id != c.s.KeyID() {
			return nil, fmt.Errorf("payload encrypted with key %s, this process has key %s: %s differs between the processes of this deployment", id, c.s.KeyID(), redact.EnvKey)
		}
		plain, err := c.s.Open(p.GetData())
		if err != nil {
			return nil, err
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("decode payload: %w", err)
		}
		out[i] = &dec
	}
	return out, nil
}

// SecureClientOptions installs the encrypting codec on Temporal client
// options: on payloads, and on failures, whose messages and stack traces are
// moved into an encrypted payload (EncodeCommonAttributes). Workers built on
// the client (NewWorker) inherit it. Without a usable key it fails with
// redact.ErrNoKey.
func SecureClientOptions(opts client.Options, redactionKey []byte) (client.Options, error) {
	codec, err := NewCodec(redactionKey)
	if err != nil {
		return opts, err
	}
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec)
	opts.DataConverter = dc
	opts.FailureConverter = temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          dc,
		EncodeCommonAttributes: true,
	})
	return opts, nil
}

var _ converter.PayloadCodec = (*Codec)(nil)
