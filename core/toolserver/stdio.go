package toolserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bridge serves a trial's tools over another MCP transport, for agents that
// only start MCP servers as subprocesses speaking stdio: it connects to the
// trial's streamable HTTP endpoint (url) as a client, offers the same tools
// (names, schemas, annotations, metadata) and instructions on t, and
// forwards every call unchanged. It returns when t's peer disconnects or
// ctx ends. `rebound mcp-stdio` runs it on stdin and stdout.
func Bridge(ctx context.Context, url string, t mcp.Transport) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "rebound-mcp-stdio", Version: "1"}, nil)
	up, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return fmt.Errorf("mcp-stdio: connecting to %s: %w", url, err)
	}
	defer up.Close()
	init := up.InitializeResult()
	srv := mcp.NewServer(&mcp.Implementation{Name: "rebound", Title: "rebound scenario tools", Version: "1"},
		&mcp.ServerOptions{Instructions: init.Instructions})
	listed := map[string]bool{}
	for tool, err := range up.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcp-stdio: tools/list: %w", err)
		}
		name := tool.Name
		listed[name] = true
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args any
			if req.Params != nil && len(req.Params.Arguments) > 0 {
				args = req.Params.Arguments
			}
			return up.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		})
	}
	// A name the listing does not hold is forwarded too: the trial's
	// server records it as a call to a missing tool (Server.unlisted).
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || r.Params == nil || listed[r.Params.Name] {
				return next(ctx, method, req)
			}
			var args any
			if len(r.Params.Arguments) > 0 {
				args = r.Params.Arguments
			}
			return up.CallTool(ctx, &mcp.CallToolParams{Name: r.Params.Name, Arguments: args})
		}
	})
	sess, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp-stdio: %w", err)
	}
	return sess.Wait()
}

// LineTransport is an mcp.Transport over newline-delimited JSON-RPC on
// Reader and Writer, as mcp.IOTransport, that survives bad frames: a line
// that is not JSON is answered with a JSON-RPC parse error (-32700), one
// that is JSON but not a JSON-RPC message (or batch of them) with an
// invalid-request error (-32600), a line longer than MaxLineLength with a
// parse error, all with id null, and the next line is read as usual. (The
// SDK's own stdio transport ends the session at the first bad frame, which
// would take the trial's tools away from an agent over one malformed
// line.) Blank lines are skipped. Writes are serialized, so an error never
// interleaves with a response. `rebound mcp-stdio` runs Bridge over it on
// stdin and stdout.
type LineTransport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxLineLength bounds one frame, in bytes; 0 means
	// mcp.DefaultMaxLineLength.
	MaxLineLength int
}

// Connect implements mcp.Transport.
func (t *LineTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	pr, pw := io.Pipe()
	out := &lockedWriter{w: t.Writer}
	go filterFrames(t.Reader, pw, out, limit)
	// Every frame the pipe carries is one checked line, at most limit
	// bytes; the SDK's own cap stays as a backstop.
	return (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: 2*limit + 2}).Connect(ctx)
}

// lockedWriter serializes whole writes: the SDK writes each message in one
// Write, and so does filterFrames each error.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lockedWriter) Close() error { return nil }

// filterFrames copies the good lines of in to pw and answers the bad ones
// on out, until in ends (then pw reports EOF, or in's error) or the
// connection closes pw's reader.
func filterFrames(in io.Reader, pw *io.PipeWriter, out io.Writer, limit int) {
	br := bufio.NewReaderSize(in, 64<<10)
	batched := map[jsonrpc.ID]bool{}
	for {
		line, tooLong, err := readLine(br, limit)
		switch {
		case tooLong:
			writeFrameError(out, jsonrpc.CodeParseError, fmt.Sprintf("Parse error: the frame is longer than %d bytes; it was dropped", limit))
		case len(bytes.TrimSpace(line)) == 0:
		default:
			if code, msg := checkFrame(line, batched); code != 0 {
				writeFrameError(out, code, msg)
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return // the connection closed
			}
		}
		if err != nil {
			if err == io.EOF {
				_ = pw.Close()
			} else {
				_ = pw.CloseWithError(err)
			}
			return
		}
	}
}

// readLine reads one line without its line ending. A line longer than
// limit is read to its end and dropped (tooLong). err is the reader's
// error after the line (io.EOF at the end of the input).
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, e := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+2 { // +2: the line ending
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if !tooLong && len(line) > limit {
			tooLong, line = true, nil
		}
		return line, tooLong, e
	}
}

// checkFrame returns 0 for a JSON-RPC message or a non-empty batch of them
// (what the SDK's transport accepts), else the JSON-RPC error code and
// message to answer. A batch must not repeat a request id, within itself
// or of an earlier batch (batched holds those): the SDK's transport ends
// the session on one that does.
func checkFrame(line []byte, batched map[jsonrpc.ID]bool) (int64, string) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "Parse error: the frame is not JSON"
	}
	var batch []json.RawMessage
	if json.Unmarshal(line, &batch) == nil {
		if len(batch) == 0 {
			return jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch"
		}
		var ids []jsonrpc.ID
		for _, raw := range batch {
			m, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return jsonrpc.CodeInvalidRequest, "Invalid Request: a batch element is not a JSON-RPC 2.0 message: " + err.Error()
			}
			if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
				if batched[req.ID] || slices.Contains(ids, req.ID) {
					return jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: the batch repeats the request id %v", req.ID.Raw())
				}
				ids = append(ids, req.ID)
			}
		}
		for _, id := range ids {
			batched[id] = true
		}
		return 0, ""
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message: " + err.Error()
	}
	return 0, ""
}

// writeFrameError answers a bad frame: a JSON-RPC error response, id null
// (the frame's id could not be read).
func writeFrameError(out io.Writer, code int64, message string) {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	if err != nil {
		return
	}
	_, _ = out.Write(append(b, '\n'))
}
