package tools

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxMessage bounds one JSON-RPC message on stdin (16 MiB, the SDK's own default): a
// longer line is answered with a JSON-RPC error and skipped, never buffered whole.
const MaxMessage = 16 << 20

// guard sits between stdin and the MCP server: a line that is not JSON is answered
// with a JSON-RPC parse error (-32700, id null) and dropped, and a line over MaxMessage
// with an invalid-request error, so a client's bad line costs that line, not the
// session (the SDK would end the session on it). Answers and the server's own messages
// share one locked writer, a message at a time.
type guard struct {
	in  *bufio.Reader
	out *lockedWriter
	pr  *io.PipeReader
	pw  *io.PipeWriter
	// ended is called when stdin ends.
	ended func()
}

// lockedWriter writes whole messages one at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

func newGuard(r io.Reader, w io.WriteCloser, ended func()) *guard {
	pr, pw := io.Pipe()
	g := &guard{in: bufio.NewReaderSize(r, 64<<10), out: &lockedWriter{w: w}, pr: pr, pw: pw, ended: ended}
	go g.pump()
	return g
}

// pump copies good lines to the pipe until stdin ends.
func (g *guard) pump() {
	for {
		line, tooLong, err := g.readLine()
		switch {
		case tooLong:
			g.answer(-32600, fmt.Sprintf("message over %d bytes: skipped", MaxMessage))
		case len(line) > 0 && !json.Valid(line):
			g.answer(-32700, "parse error: the line is not JSON")
		case len(line) > 0 && !isObject(line):
			g.answer(-32600, "invalid request: a message is one JSON-RPC 2.0 object (jsonrpc \"2.0\", a string method or a result; no batches)")
		case len(line) > 0:
			if _, werr := g.pw.Write(append(line, '\n')); werr != nil {
				return
			}
		}
		if err != nil {
			g.ended()
			g.pw.CloseWithError(err)
			return
		}
	}
}

// readLine reads one line without its newline; a line over MaxMessage is read to its
// end and reported as tooLong. err is io.EOF (or the read's error) at the end.
func (g *guard) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := g.in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxMessage+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		return line, tooLong, err
	}
}

func (g *guard) answer(code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	g.out.Write(append(b, '\n'))
}

// isObject reports whether a JSON text is an object that decodes as a JSON-RPC message:
// string method, no fields of the wrong type the SDK would end the session over.
func isObject(line []byte) bool {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return false
	}
	if len(m.ID) > 0 && m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-' && string(m.ID) != "null" {
		return false
	}
	return m.JSONRPC == "2.0" && (m.Method != "" || len(m.Result) > 0 || m.Error != nil)
}
