package socket

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"orcr/core/wire"
)

// Client is the socket transport (wire.Transport): unary calls share one connection,
// multiplexed by request id; streams (events, attach) get their own. Callers call
// declared methods through it with wire.Call and wire.Open.
type Client struct {
	path   string
	caller string
	// via dials the server's socket another way than this machine's unix socket (a
	// node's, over SSH: DialVia); nil dials path.
	via func(ctx context.Context) (net.Conn, error)

	mu      sync.Mutex
	conn    net.Conn
	pending map[string]chan pendingReply
	nextID  atomic.Uint64
	closed  bool
	// fatal is an error the server sent for the whole connection (id ""), such as a
	// refused uid or too many connections, just before closing it: calls report it
	// rather than the closed connection it leaves.
	fatal *wire.Error
}

var _ wire.Transport = (*Client)(nil)

// Dial connects to the server at path. caller is the ORCR_ID the client runs inside
// ("" for none). A missing or dead server gives a wire.ErrUnavailable error with the
// command that starts one.
func Dial(ctx context.Context, path, caller string) (*Client, error) {
	c := &Client{path: path, caller: caller, pending: map[string]chan pendingReply{}}
	// Connecting is the check: no ping round trip before the first call, which matters
	// to a CLI process that makes one call. Every request carries the protocol version,
	// so a server of another version still refuses by name.
	if _, err := c.shared(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// DialVia is Dial over another way of reaching the server's socket: dial opens one
// connection to it each time it is called (the nodes feature opens a streamlocal
// channel over its one SSH connection to a node), named name in errors. Unary calls
// share one such connection, and each stream opens its own, as over the socket.
func DialVia(ctx context.Context, name string, dial func(ctx context.Context) (net.Conn, error), caller string) (*Client, error) {
	c := &Client{path: name, caller: caller, via: dial, pending: map[string]chan pendingReply{}}
	if _, err := c.shared(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// NotRunning is the error for a missing server.
func NotRunning(path string, cause error) error {
	return &wire.Error{Code: wire.CodeUnavailable,
		Message: fmt.Sprintf("orcr server not running (%s: %v) — start it with `orcr serve` (or open the dashboard with `orcr`)", path, cause)}
}

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	if c.via != nil {
		conn, err := c.via(ctx)
		if err != nil {
			return nil, NotRunning(c.path, err)
		}
		return conn, nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.path)
	if errors.Is(err, syscall.EACCES) {
		owner := "another user"
		if st, serr := os.Stat(c.path); serr == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				owner = fmt.Sprintf("uid %d", sys.Uid)
			}
		}
		return nil, wire.Errorf(wire.CodePermission,
			"permission denied: the orcr server at %s runs as %s and serves only that user (you are uid %d); run your own with ORCR_HOME set to a directory you own",
			c.path, owner, os.Getuid())
	}
	if err != nil {
		return nil, NotRunning(c.path, err)
	}
	return conn, nil
}

// Close closes the shared connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		err := c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}

func (c *Client) shared(ctx context.Context) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("client closed")
	}
	if c.conn != nil {
		return c.conn, nil
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.conn, c.fatal = conn, nil
	go c.readLoop(conn)
	return conn, nil
}

// pendingReply is what the read loop hands a waiting call: the raw response line,
// decoded by the caller straight into its result type (one pass over the bytes).
type pendingReply struct {
	line []byte
	err  error
}

func (c *Client) readLoop(conn net.Conn) {
	r := bufio.NewReaderSize(conn, 256<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			c.mu.Lock()
			if c.conn == conn {
				c.conn = nil
			}
			var lost error = &wire.Error{Code: wire.CodeUnavailable, Message: "connection to orcr server lost: " + err.Error()}
			if c.fatal != nil {
				lost = c.fatal
			}
			for id, ch := range c.pending {
				ch <- pendingReply{err: lost}
				delete(c.pending, id)
			}
			c.mu.Unlock()
			conn.Close()
			return
		}
		id, ok := responseID(line)
		if !ok {
			continue
		}
		if id == "" {
			// Not an answer to one call: an error about the connection (or a request
			// whose id the server could not read). Every waiting call gets it.
			var resp wire.Response
			if json.Unmarshal(line, &resp) == nil && resp.Error != nil {
				c.mu.Lock()
				c.fatal = resp.Error
				for id, ch := range c.pending {
					ch <- pendingReply{err: resp.Error}
					delete(c.pending, id)
				}
				c.mu.Unlock()
			}
			continue
		}
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ok {
			ch <- pendingReply{line: line}
		}
	}
}

// responseID reads the id of a response line cheaply: the server always writes it
// first ({"id":"…",…}); anything else falls back to a full decode.
func responseID(line []byte) (string, bool) {
	const pre = `{"id":"`
	if len(line) > len(pre) && string(line[:len(pre)]) == pre {
		rest := line[len(pre):]
		for i, b := range rest {
			if b == '\\' {
				break
			}
			if b == '"' {
				return string(rest[:i]), true
			}
		}
	}
	var head struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(line, &head) != nil {
		return "", false
	}
	return head.ID, true
}

// Call sends one request and decodes the result into out (wire.Transport).
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	if _, none := params.(*wire.Empty); none {
		params = nil // no params key on the wire, as hand-written clients send it
	}
	// The server's own range check, applied before sending: a CLI flag out of range is
	// refused with the same bound, and a NaN says so instead of failing to encode.
	if err := wire.CheckRanges(method, params); err != nil {
		return err
	}
	conn, err := c.shared(ctx)
	if err != nil {
		return err
	}
	id := strconv.FormatUint(c.nextID.Add(1), 10)
	req, err := c.request(id, method, params)
	if err != nil {
		return err
	}
	ch := make(chan pendingReply, 1)
	c.mu.Lock()
	if c.conn != conn { // the read loop has ended this connection since shared
		f := c.fatal
		c.mu.Unlock()
		if f != nil {
			return f
		}
		return NotRunning(c.path, errors.New("connection closed"))
	}
	c.pending[id] = ch
	_, werr := conn.Write(req)
	c.mu.Unlock()
	if werr != nil {
		// The server may have closed with a reason the read loop is about to hand us
		// (a refused uid); it ends every pending call once it sees the close.
		select {
		case rep := <-ch:
			if rep.err != nil {
				return rep.err
			}
			return decodeLine(rep.line, out)
		case <-time.After(time.Second):
		}
		c.mu.Lock()
		delete(c.pending, id)
		f := c.fatal
		c.mu.Unlock()
		if f != nil {
			return f
		}
		return NotRunning(c.path, werr)
	}
	select {
	case rep := <-ch:
		if rep.err != nil {
			return rep.err
		}
		return decodeLine(rep.line, out)
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *Client) request(id, method string, params any) ([]byte, error) {
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encode params: %w", err)
		}
		raw = b
	}
	b, err := json.Marshal(wire.Request{ID: id, Method: method, Params: raw, Caller: c.caller, Version: wire.Version})
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return append(b, '\n'), nil
}

// decodeLine decodes a response line directly into out (one pass).
func decodeLine(line []byte, out any) error {
	var env struct {
		Result any         `json:"result"`
		Error  *wire.Error `json:"error"`
	}
	if out != nil {
		env.Result = out
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	if env.Error != nil {
		return env.Error
	}
	return nil
}

func decodeResponse(resp wire.Response, out any) error {
	if resp.Error != nil {
		return resp.Error
	}
	if out == nil || len(resp.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// Open opens a dedicated connection for a streaming method, sends the request and
// decodes its result into out; the lines follow on the returned stream (wire.Transport).
func (c *Client) Open(ctx context.Context, method string, params, out any) (wire.ClientStream, error) {
	if _, none := params.(*wire.Empty); none {
		params = nil
	}
	if err := wire.CheckRanges(method, params); err != nil {
		return nil, err
	}
	conn, dec, err := c.openConn(ctx, method, params, out)
	if err != nil {
		return nil, err
	}
	return &clientStream{conn: conn, dec: dec, enc: json.NewEncoder(conn)}, nil
}

// clientStream is a stream's dedicated connection.
type clientStream struct {
	conn net.Conn
	dec  *json.Decoder
	wmu  sync.Mutex
	enc  *json.Encoder
}

func (s *clientStream) Recv(line any) error { return s.dec.Decode(line) }

func (s *clientStream) Send(line any) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.enc.Encode(line)
}

func (s *clientStream) Close() error { return s.conn.Close() }

// openConn opens a dedicated connection, sends one request and reads its response.
func (c *Client) openConn(ctx context.Context, method string, params, out any) (net.Conn, *json.Decoder, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	req, err := c.request("1", method, params)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if _, err := conn.Write(req); err != nil {
		conn.Close()
		return nil, nil, NotRunning(c.path, err)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(conn, 64<<10))
	var resp wire.Response
	if err := dec.Decode(&resp); err != nil {
		conn.Close()
		return nil, nil, NotRunning(c.path, err)
	}
	if err := decodeResponse(resp, out); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, dec, nil
}
