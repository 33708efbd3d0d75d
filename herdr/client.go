package herdr

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"orcr/core/wire"
)

// Error is an error answered by herdr: its stable code and its message.
type Error struct {
	Method  string
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Method == "" {
		return fmt.Sprintf("herdr: %s (%s)", e.Message, e.Code)
	}
	return fmt.Sprintf("herdr %s: %s (%s)", e.Method, e.Message, e.Code)
}

// Is matches herdr errors by code, so errors.Is(err, ErrPaneNotFound) works; a
// vanished pane also matches orcr's wire.ErrNotFound.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	var w *wire.Error
	return errors.As(target, &w) && w.Code == wire.CodeNotFound && w.Message == "" && e.Code == "pane_not_found"
}

// Sentinels for errors.Is.
var (
	// ErrPaneNotFound: the pane id no longer exists in herdr (closed or exited).
	ErrPaneNotFound = &Error{Code: "pane_not_found"}
	// ErrUnavailable: no herdr server answers on the socket (not running, died
	// mid-call, or hung up without a reply). Calls succeed again once it is back.
	ErrUnavailable = errors.New("herdr server unavailable")
	// ErrProtocol: herdr speaks a protocol version orcr does not support.
	ErrProtocol = errors.New("unsupported herdr protocol")
	// ErrBadResponse: a reply that does not follow herdr's envelope.
	ErrBadResponse = errors.New("malformed herdr response")
)

// Request and reply limits. herdr caps request lines at 1 MiB; replies carry at most
// 1000 rows of a read, which fits comfortably in maxReply.
const (
	maxRequest   = 1 << 20
	maxReply     = 64 << 20
	callTimeout  = 15 * time.Second
	dialTimeout  = 3 * time.Second
	maxEventLine = 8 << 20
)

// client speaks herdr's socket protocol: one request per connection.
type client struct {
	socket string
	seq    atomic.Uint64
}

// call sends one request on a fresh connection and decodes the result into out
// (which may be nil). Without a ctx deadline the call gets callTimeout, because herdr
// imposes none on plain requests.
func (c *client) call(ctx context.Context, method string, params, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	return c.wait(ctx, method, params, out)
}

// wait is call without the default deadline, for herdr's long calls (agent.wait,
// pane.wait_for_output): they end when herdr answers or ctx ends, and ending ctx
// closes the connection, which cancels the wait inside herdr.
func (c *client) wait(ctx context.Context, method string, params, out any) error {
	id := "orcr-" + strconv.FormatUint(c.seq.Add(1), 10)
	line, err := encodeRequest(id, method, params)
	if err != nil {
		return err
	}
	conn, err := c.dial(ctx, method)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write(line); err != nil {
		return c.connErr(ctx, method, "sending the request", err)
	}
	reply, err := readLine(bufio.NewReader(conn), maxReply)
	if err != nil {
		return c.connErr(ctx, method, "waiting for the reply", err)
	}
	res, err := decodeResponse(reply, id)
	if err != nil {
		var he *Error
		if errors.As(err, &he) {
			he.Method = method
		}
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("herdr %s: %w: %v", method, ErrBadResponse, err)
	}
	return nil
}

func (c *client) dial(ctx context.Context, method string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("herdr %s: %w", method, ctx.Err())
		}
		return nil, fmt.Errorf("herdr %s: %w: nothing answers on %s (%v); start it with `herdr --session NAME server`",
			method, ErrUnavailable, c.socket, err)
	}
	return conn, nil
}

func (c *client) connErr(ctx context.Context, method, doing string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("herdr %s: %s: %w", method, doing, ctx.Err())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("herdr %s: %w: the server hung up while %s", method, ErrUnavailable, doing)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// The connection deadline is ctx's deadline; it can fire a hair before ctx
		// itself reports it.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl.Add(-10*time.Millisecond)) {
			return fmt.Errorf("herdr %s: %s: %w", method, doing, context.DeadlineExceeded)
		}
		return fmt.Errorf("herdr %s: no reply in time while %s: %w", method, doing, err)
	}
	return fmt.Errorf("herdr %s: %w: %s: %v", method, ErrUnavailable, doing, err)
}

// encodeRequest builds one request line: string id, method, params always an object.
func encodeRequest(id, method string, params any) ([]byte, error) {
	if params == nil {
		params = struct{}{}
	}
	b, err := json.Marshal(struct {
		ID     string `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params"`
	}{id, method, params})
	if err != nil {
		return nil, fmt.Errorf("herdr %s: encode: %w", method, err)
	}
	if len(b)+1 > maxRequest {
		return nil, fmt.Errorf("herdr %s: request is %d bytes; herdr accepts at most 1 MiB", method, len(b))
	}
	return append(b, '\n'), nil
}

// readLine reads one newline-terminated line of at most limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrBadResponse, limit)
		}
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// decodeResponse probes a reply line for error vs result (herdr answers parse
// failures with an EMPTY id, so an error's id is not checked) and returns the raw
// result, which always carries a string "type".
func decodeResponse(line []byte, wantID string) (json.RawMessage, error) {
	var env struct {
		ID     *string         `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	if env.Error != nil {
		if env.Error.Code == "" {
			return nil, fmt.Errorf("%w: error without a code", ErrBadResponse)
		}
		return nil, &Error{Code: env.Error.Code, Message: env.Error.Message}
	}
	if len(env.Result) == 0 || bytes.Equal(env.Result, []byte("null")) {
		return nil, fmt.Errorf("%w: neither result nor error", ErrBadResponse)
	}
	if env.ID == nil || *env.ID != wantID {
		return nil, fmt.Errorf("%w: reply id does not match the request", ErrBadResponse)
	}
	var typed struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(env.Result, &typed); err != nil || typed.Type == "" {
		return nil, fmt.Errorf("%w: result without a type", ErrBadResponse)
	}
	return env.Result, nil
}

// pushed is one line of an events.subscribe stream.
type pushed struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// decodeEvent parses a pushed event line. Generic events use snake_case names with
// data.type; the parameterised kinds use dotted names with untagged data.
func decodeEvent(line []byte) (pushed, error) {
	var p pushed
	if err := json.Unmarshal(line, &p); err != nil {
		return p, fmt.Errorf("%w: event: %v", ErrBadResponse, err)
	}
	if p.Event == "" {
		return p, fmt.Errorf("%w: event line without a name", ErrBadResponse)
	}
	return p, nil
}

// subscription is an open events.subscribe connection.
type subscription struct {
	conn net.Conn
	r    *bufio.Reader
}

// subscribe opens a dedicated connection, sends events.subscribe and reads the ack.
func (c *client) subscribe(ctx context.Context, subs []map[string]any) (*subscription, error) {
	const method = "events.subscribe"
	id := "orcr-sub-" + strconv.FormatUint(c.seq.Add(1), 10)
	line, err := encodeRequest(id, method, map[string]any{"subscriptions": subs})
	if err != nil {
		return nil, err
	}
	conn, err := c.dial(ctx, method)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(callTimeout))
	if _, err := conn.Write(line); err != nil {
		conn.Close()
		return nil, c.connErr(ctx, method, "sending the request", err)
	}
	r := bufio.NewReader(conn)
	ack, err := readLine(r, maxEventLine)
	if err != nil {
		conn.Close()
		return nil, c.connErr(ctx, method, "waiting for the ack", err)
	}
	if _, err := decodeResponse(ack, id); err != nil {
		conn.Close()
		return nil, fmt.Errorf("herdr %s: %w", method, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return &subscription{conn: conn, r: r}, nil
}

// next returns the next pushed event.
func (s *subscription) next() (pushed, error) {
	line, err := readLine(s.r, maxEventLine)
	if err != nil {
		return pushed{}, err
	}
	return decodeEvent(line)
}

func (s *subscription) close() { _ = s.conn.Close() }
