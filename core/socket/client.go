package socket

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"orcr/core"
	"orcr/core/wire"
)

// Client implements core.Service over the socket. Unary calls share one connection,
// multiplexed by request id; streams (events, attach) get their own.
type Client struct {
	path   string
	caller string

	mu      sync.Mutex
	conn    net.Conn
	pending map[string]chan pendingReply
	nextID  atomic.Uint64
	closed  bool
}

var _ core.Service = (*Client)(nil)

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

// NotRunning is the error for a missing server.
func NotRunning(path string, cause error) error {
	return &wire.Error{Code: wire.CodeUnavailable,
		Message: fmt.Sprintf("orcr server not running (%s: %v) — start it with `orcr serve` (or open the dashboard with `orcr`)", path, cause)}
}

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.path)
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
	c.conn = conn
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
			for id, ch := range c.pending {
				ch <- pendingReply{err: &wire.Error{Code: wire.CodeUnavailable,
					Message: "connection to orcr server lost: " + err.Error()}}
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

// call sends one request and decodes the result into out.
func (c *Client) call(ctx context.Context, method string, params, out any) error {
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
	c.pending[id] = ch
	c.mu.Unlock()
	c.mu.Lock()
	_, werr := conn.Write(req)
	c.mu.Unlock()
	if werr != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
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

// Ping checks the server.
func (c *Client) Ping(ctx context.Context) (wire.PingResult, error) {
	var r wire.PingResult
	err := c.call(ctx, wire.MethodPing, nil, &r)
	if err == nil && r.Version != wire.Version {
		return r, wire.Errorf(wire.CodeVersionMismatch, "server speaks protocol %d, this client %d; restart the server with this binary", r.Version, wire.Version)
	}
	return r, err
}

// Info describes the server.
func (c *Client) Info(ctx context.Context) (wire.InfoResult, error) {
	var r wire.InfoResult
	return r, c.call(ctx, wire.MethodInfo, nil, &r)
}

// Run spawns an agent.
func (c *Client) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	var r wire.AgentResult
	return r.Agent, c.call(ctx, wire.MethodAgentRun, p, &r)
}

// List lists agents.
func (c *Client) List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error) {
	var r wire.ListResult
	return r.Agents, c.call(ctx, wire.MethodAgentList, p, &r)
}

// ListTable lists agents as display rows (the columns of `orcr agent ls`).
func (c *Client) ListTable(ctx context.Context, p wire.ListParams) (*wire.Table, error) {
	p.Table = true
	var r wire.ListResult
	if err := c.call(ctx, wire.MethodAgentList, p, &r); err != nil {
		return nil, err
	}
	if r.Table == nil {
		return &wire.Table{Columns: core.TableColumns}, nil
	}
	return r.Table, nil
}

// Get returns one agent.
func (c *Client) Get(ctx context.Context, target string) (wire.Agent, error) {
	var r wire.AgentResult
	return r.Agent, c.call(ctx, wire.MethodAgentGet, wire.TargetParams{Target: target}, &r)
}

// Send types into a pane.
func (c *Client) Send(ctx context.Context, p wire.SendParams) error {
	return c.call(ctx, wire.MethodAgentSend, p, nil)
}

// Read reads a screen.
func (c *Client) Answer(ctx context.Context, p wire.AnswerParams) (wire.AnswerResult, error) {
	var r wire.AnswerResult
	err := c.call(ctx, wire.MethodAgentAnswer, p, &r)
	return r, err
}

func (c *Client) Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error) {
	var r wire.ReadResult
	return r, c.call(ctx, wire.MethodAgentRead, p, &r)
}

// Wait waits for states.
func (c *Client) Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error) {
	var r wire.WaitResult
	return r, c.call(ctx, wire.MethodAgentWait, p, &r)
}

// Kill stops agents.
func (c *Client) Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error) {
	var r wire.KillResult
	return r, c.call(ctx, wire.MethodAgentKill, p, &r)
}

// Resize resizes a pane.
func (c *Client) Resize(ctx context.Context, p wire.ResizeParams) error {
	return c.call(ctx, wire.MethodAgentResize, p, nil)
}

// Hook reports a provider hook.
func (c *Client) Hook(ctx context.Context, p wire.HookParams) error {
	return c.call(ctx, wire.MethodHookReport, p, nil)
}

// Queue shows the queue.
func (c *Client) Queue(ctx context.Context) (wire.QueueResult, error) {
	var r wire.QueueResult
	return r, c.call(ctx, wire.MethodQueue, nil, &r)
}

// Usage reports usage.
func (c *Client) Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error) {
	var r wire.UsageResult
	return r, c.call(ctx, wire.MethodUsage, p, &r)
}

// Schedules lists schedules.
func (c *Client) Schedules(ctx context.Context) ([]wire.Schedule, error) {
	var r wire.ScheduleListResult
	return r.Schedules, c.call(ctx, wire.MethodScheduleList, nil, &r)
}

// SetCaps changes admission caps.
func (c *Client) SetCaps(ctx context.Context, p wire.CapsParams) (wire.QueueResult, error) {
	var r wire.QueueResult
	return r, c.call(ctx, wire.MethodQueueCaps, p, &r)
}

// GC runs lifecycle collection.
func (c *Client) GC(ctx context.Context, p wire.GCParams) (wire.GCResult, error) {
	var r wire.GCResult
	return r, c.call(ctx, wire.MethodGC, p, &r)
}

// ScheduleAdd creates a schedule.
func (c *Client) ScheduleAdd(ctx context.Context, p wire.ScheduleAddParams) (wire.Schedule, error) {
	var r wire.ScheduleResult
	return r.Schedule, c.call(ctx, wire.MethodScheduleAdd, p, &r)
}

// ScheduleRemove deletes a schedule.
func (c *Client) ScheduleRemove(ctx context.Context, name string) error {
	return c.call(ctx, wire.MethodScheduleRemove, wire.ScheduleNameParams{Name: name}, nil)
}

// ScheduleRun runs a schedule now.
func (c *Client) ScheduleRun(ctx context.Context, p wire.ScheduleRunParams) (wire.ScheduleRun, error) {
	var r wire.ScheduleRunResult
	return r.Run, c.call(ctx, wire.MethodScheduleRun, p, &r)
}

// ScheduleRuns returns a schedule's run history.
func (c *Client) ScheduleRuns(ctx context.Context, name string) ([]wire.ScheduleRun, error) {
	var r wire.ScheduleRunsResult
	return r.Runs, c.call(ctx, wire.MethodScheduleRuns, wire.ScheduleNameParams{Name: name}, &r)
}

// streamConn opens a dedicated connection, sends one request and reads its response.
func (c *Client) streamConn(ctx context.Context, method string, params, out any) (net.Conn, *json.Decoder, error) {
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

// Subscribe opens an event stream on its own connection.
func (c *Client) Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error) {
	var ack wire.SubscribeResult
	conn, dec, err := c.streamConn(ctx, wire.MethodEventsSubscribe, p, &ack)
	if err != nil {
		return nil, err
	}
	out := make(chan wire.Event, 256)
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	go func() {
		defer close(out)
		defer conn.Close()
		for {
			var ev wire.Event
			if err := dec.Decode(&ev); err != nil {
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Attach asks how to attach (without starting a stream).
func (c *Client) Attach(ctx context.Context, p wire.AttachParams) (wire.AttachResult, error) {
	var r wire.AttachResult
	conn, _, err := c.streamConn(ctx, wire.MethodAgentAttach, p, &r)
	if err != nil {
		return r, err
	}
	conn.Close()
	return r, nil
}

// AttachStream runs a stream attach: in is sent to the pane, pane output goes to out.
// When in is a Resizer, size changes are forwarded too.
func (c *Client) AttachStream(ctx context.Context, p wire.AttachParams, in io.Reader, out io.Writer) error {
	var r wire.AttachResult
	conn, dec, err := c.streamConn(ctx, wire.MethodAgentAttach, p, &r)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !r.Stream {
		return errors.New("host has a native attach command; run it instead")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	var wmu sync.Mutex
	enc := json.NewEncoder(conn)
	send := func(f wire.AttachFrame) error {
		wmu.Lock()
		defer wmu.Unlock()
		return enc.Encode(f)
	}
	if rs, ok := in.(Resizer); ok {
		go func() {
			for {
				select {
				case sz := <-rs.Resizes():
					if send(wire.AttachFrame{Cols: sz[0], Rows: sz[1]}) != nil {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				if send(wire.AttachFrame{Data: buf[:n]}) != nil {
					return
				}
			}
			if err != nil {
				cancel()
				return
			}
		}
	}()
	for {
		var f wire.AttachFrame
		if err := dec.Decode(&f); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("attach stream: %w", err)
		}
		if len(f.Data) > 0 {
			if _, err := out.Write(f.Data); err != nil {
				return err
			}
		}
		if f.Closed {
			return nil
		}
	}
}

// Resizer is implemented by attach inputs that also report terminal size changes;
// AttachStream forwards them as resize frames.
type Resizer interface {
	Resizes() <-chan [2]int
}
