package served

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// frameNative rewrites the engine's Native output (written for protocol
// revision 0: no block info, no per-column serialization flag) as a server
// writes it for a client that announced client_protocol_version: each
// block with its block info and, from revision 54454, a serialization flag
// per column. The blocks are decoded and encoded with clickhouse-go's own
// Native codec, so what a client decodes is what its codec wrote.
func frameNative(out []byte, revision uint64) ([]byte, error) {
	rd := chproto.NewReader(bytes.NewReader(out))
	var buf chproto.Buffer
	for {
		b := proto.NewBlock()
		if err := b.Decode(rd, 0); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("served: Native output: %w", err)
		}
		if err := b.Encode(&buf, revision); err != nil {
			return nil, fmt.Errorf("served: Native output: %w", err)
		}
	}
	return buf.Buf, nil
}

// nativeRows counts the rows of the engine's Native output (revision 0).
func nativeRows(out []byte) (uint64, error) {
	rd := chproto.NewReader(bytes.NewReader(out))
	var n uint64
	for {
		b := proto.NewBlock()
		if err := b.Decode(rd, 0); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return 0, fmt.Errorf("served: Native output: %w", err)
		}
		n += uint64(b.Rows())
	}
}
