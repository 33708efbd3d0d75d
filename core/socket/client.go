package socket

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core"
	"orcr/core/wire"
	listenapi "orcr/listen/api"
	planapi "orcr/orchestrate/api"
	roleapi "orcr/roles/api"
	schedapi "orcr/schedule/api"
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
	// fatal is an error the server sent for the whole connection (id ""), such as a
	// refused uid or too many connections, just before closing it: calls report it
	// rather than the closed connection it leaves.
	fatal *wire.Error
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

// call sends one request and decodes the result into out.
func (c *Client) call(ctx context.Context, method string, params, out any) error {
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

// invoke makes one call of a declared unary method: the declaration types the params
// and the result, so a client call cannot disagree with the server's handler.
func invoke[P, R any](ctx context.Context, c *Client, m wire.Method[P, R], p P) (R, error) {
	var r R
	var params any = p
	if _, none := params.(wire.Empty); none {
		params = nil // no params key on the wire, as hand-written clients send it
	}
	err := c.call(ctx, m.Name, params, &r)
	return r, err
}

// Ping checks the server.
func (c *Client) Ping(ctx context.Context) (wire.PingResult, error) {
	r, err := invoke(ctx, c, wire.Ping, wire.Empty{})
	if err == nil && r.Version != wire.Version {
		return r, wire.Errorf(wire.CodeVersionMismatch, "server speaks protocol %d, this client %d; restart the server with this binary", r.Version, wire.Version)
	}
	return r, err
}

// Info describes the server.
func (c *Client) Info(ctx context.Context) (wire.InfoResult, error) {
	return invoke(ctx, c, wire.Info, wire.Empty{})
}

// Run spawns an agent.
func (c *Client) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	r, err := invoke(ctx, c, wire.AgentRun, p)
	return r.Agent, err
}

// List lists agents.
func (c *Client) List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error) {
	var out []wire.Agent
	err := c.listPages(ctx, p, func(r wire.ListResult) { out = append(out, r.Agents...) })
	return out, err
}

// ListTable lists agents as display rows (the columns of `orcr agent ls`).
func (c *Client) ListTable(ctx context.Context, p wire.ListParams) (*wire.Table, error) {
	p.Table = true
	t := &wire.Table{Columns: core.TableColumns}
	err := c.listPages(ctx, p, func(r wire.ListResult) {
		if r.Table != nil {
			t.Columns = r.Table.Columns
			t.Rows = append(t.Rows, r.Table.Rows...)
		}
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// listPage is how many agents one answer of a paged list holds: about 1 MB of records,
// so a list of any length is answers well under the server's bounds.
const listPage = 2000

// listPages asks for the list a page at a time and hands each page to take. A caller that
// sets Limit gets that one page.
func (c *Client) listPages(ctx context.Context, p wire.ListParams, take func(wire.ListResult)) error {
	one := p.Limit > 0
	if !one {
		p.Limit = listPage
	}
	for {
		r, err := invoke(ctx, c, wire.AgentList, p)
		if err != nil {
			return err
		}
		take(r)
		if one || r.Next == "" {
			return nil
		}
		if r.Next == p.After {
			return fmt.Errorf("agent.list did not move past %q; list with a glob instead", r.Next)
		}
		p.After = r.Next
	}
}

// Get returns one agent.
func (c *Client) Get(ctx context.Context, target string) (wire.Agent, error) {
	r, err := invoke(ctx, c, wire.AgentGet, wire.TargetParams{Target: target})
	return r.Agent, err
}

// Send types into a pane.
func (c *Client) Send(ctx context.Context, p wire.SendParams) error {
	_, err := invoke(ctx, c, wire.AgentSend, p)
	return err
}

// Answer answers what blocked agents wait for.
func (c *Client) Answer(ctx context.Context, p wire.AnswerParams) (wire.AnswerResult, error) {
	return invoke(ctx, c, wire.AgentAnswer, p)
}

// Read reads a screen.
func (c *Client) Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error) {
	return invoke(ctx, c, wire.AgentRead, p)
}

// Wait waits for states.
func (c *Client) Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error) {
	return invoke(ctx, c, wire.AgentWait, p)
}

// Kill stops agents.
func (c *Client) Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error) {
	return invoke(ctx, c, wire.AgentKill, p)
}

// Resize resizes a pane.
func (c *Client) Resize(ctx context.Context, p wire.ResizeParams) error {
	_, err := invoke(ctx, c, wire.AgentResize, p)
	return err
}

// Hook reports a provider hook.
func (c *Client) Hook(ctx context.Context, p wire.HookParams) error {
	_, err := invoke(ctx, c, wire.HookReport, p)
	return err
}

// Queue shows the queue.
func (c *Client) Queue(ctx context.Context) (wire.QueueResult, error) {
	return invoke(ctx, c, wire.QueueGet, wire.Empty{})
}

// Usage reports usage.
func (c *Client) Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error) {
	return invoke(ctx, c, wire.UsageGet, p)
}

// SetCaps changes admission caps.
func (c *Client) SetCaps(ctx context.Context, p wire.CapsParams) (wire.QueueResult, error) {
	return invoke(ctx, c, wire.QueueCaps, p)
}

// GC runs lifecycle collection.
func (c *Client) GC(ctx context.Context, p wire.GCParams) (wire.GCResult, error) {
	return invoke(ctx, c, wire.GCRun, p)
}

// Schedules lists schedules.
func (c *Client) Schedules(ctx context.Context) ([]schedapi.Schedule, error) {
	r, err := invoke(ctx, c, schedapi.ScheduleList, wire.Empty{})
	return r.Schedules, err
}

// ScheduleAdd creates a schedule.
func (c *Client) ScheduleAdd(ctx context.Context, p schedapi.ScheduleAddParams) (schedapi.Schedule, error) {
	r, err := invoke(ctx, c, schedapi.ScheduleAdd, p)
	return r.Schedule, err
}

// ScheduleRemove deletes a schedule.
func (c *Client) ScheduleRemove(ctx context.Context, name string) error {
	_, err := invoke(ctx, c, schedapi.ScheduleRemove, schedapi.ScheduleNameParams{Name: name})
	return err
}

// ScheduleRun runs a schedule now.
func (c *Client) ScheduleRun(ctx context.Context, p schedapi.ScheduleRunParams) (schedapi.ScheduleRun, error) {
	r, err := invoke(ctx, c, schedapi.ScheduleRunNow, p)
	return r.Run, err
}

// ScheduleRuns returns a schedule's run history.
func (c *Client) ScheduleRuns(ctx context.Context, name string) ([]schedapi.ScheduleRun, error) {
	r, err := invoke(ctx, c, schedapi.ScheduleRuns, schedapi.ScheduleNameParams{Name: name})
	return r.Runs, err
}

// Accounts lists accounts with their windows.
func (c *Client) Accounts(ctx context.Context) (acctapi.AccountListResult, error) {
	return invoke(ctx, c, acctapi.AccountList, wire.Empty{})
}

// Select says which account a spawn now would get.
func (c *Client) Select(ctx context.Context, p acctapi.SelectParams) (acctapi.SelectResult, error) {
	return invoke(ctx, c, acctapi.UsageSelect, p)
}

// History returns past windows at their peaks.
func (c *Client) History(ctx context.Context, p acctapi.HistoryParams) (acctapi.HistoryResult, error) {
	return invoke(ctx, c, acctapi.UsageHistory, p)
}

// Budgets lists budgets.
func (c *Client) Budgets(ctx context.Context) ([]acctapi.Budget, error) {
	r, err := invoke(ctx, c, acctapi.BudgetList, wire.Empty{})
	return r.Budgets, err
}

// BudgetSet creates or replaces a budget.
func (c *Client) BudgetSet(ctx context.Context, p acctapi.BudgetSetParams) (acctapi.Budget, error) {
	r, err := invoke(ctx, c, acctapi.BudgetSet, p)
	return r.Budget, err
}

// BudgetRemove removes a budget.
func (c *Client) BudgetRemove(ctx context.Context, glob string) error {
	_, err := invoke(ctx, c, acctapi.BudgetRemove, acctapi.BudgetGlobParams{Glob: glob})
	return err
}

// openStream opens a dedicated connection for a declared streaming method, sends the
// request and decodes its result; the lines of type S follow on the returned decoder.
func openStream[P, R, S any](ctx context.Context, c *Client, m wire.Stream[P, R, S], p P) (net.Conn, *json.Decoder, R, error) {
	var r R
	conn, dec, err := c.streamConn(ctx, m.Name, p, &r)
	return conn, dec, r, err
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
	conn, dec, _, err := openStream(ctx, c, wire.EventsSubscribe, p)
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
	conn, _, r, err := openStream(ctx, c, wire.AgentAttach, p)
	if err != nil {
		return r, err
	}
	conn.Close()
	return r, nil
}

// AttachStream runs a stream attach: in is sent to the pane, pane output goes to out.
// When in is a Resizer, size changes are forwarded too.
func (c *Client) AttachStream(ctx context.Context, p wire.AttachParams, in io.Reader, out io.Writer) error {
	conn, dec, r, err := openStream(ctx, c, wire.AgentAttach, p)
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

// Roles lists role templates.
func (c *Client) Roles(ctx context.Context) ([]roleapi.Role, error) {
	r, err := invoke(ctx, c, roleapi.RoleList, wire.Empty{})
	return r.Roles, err
}

// RoleGet returns one role and its file's text.
func (c *Client) RoleGet(ctx context.Context, name string) (roleapi.RoleResult, error) {
	return invoke(ctx, c, roleapi.RoleGet, roleapi.RoleNameParams{Name: name})
}

// RolePut writes a role file.
func (c *Client) RolePut(ctx context.Context, p roleapi.RolePutParams) (roleapi.RoleResult, error) {
	return invoke(ctx, c, roleapi.RolePut, p)
}

// AgentHistory lists finished agents.
func (c *Client) AgentHistory(ctx context.Context, p roleapi.AgentHistoryParams) (roleapi.AgentHistoryResult, error) {
	return invoke(ctx, c, roleapi.AgentHistory, p)
}

// Resume brings an ended or hibernated agent back by its session.
func (c *Client) Resume(ctx context.Context, p wire.ResumeParams) (wire.Agent, error) {
	r, err := invoke(ctx, c, wire.AgentResume, p)
	return r.Agent, err
}

// PlanNew starts a plan.
func (c *Client) PlanNew(ctx context.Context, p planapi.PlanNewParams) (planapi.Plan, error) {
	r, err := invoke(ctx, c, planapi.PlanNew, p)
	return r.Plan, err
}

// Plans lists every plan.
func (c *Client) Plans(ctx context.Context) ([]planapi.Plan, error) {
	r, err := invoke(ctx, c, planapi.PlanList, wire.Empty{})
	return r.Plans, err
}

// PlanGet returns one plan and its file as it is now.
func (c *Client) PlanGet(ctx context.Context, name string) (planapi.PlanGetResult, error) {
	return invoke(ctx, c, planapi.PlanGet, planapi.PlanNameParams{Name: name})
}

// PlanApprove approves a drafted plan.
func (c *Client) PlanApprove(ctx context.Context, name string) (planapi.Plan, error) {
	r, err := invoke(ctx, c, planapi.PlanApprove, planapi.PlanNameParams{Name: name})
	return r.Plan, err
}

// PlanReject rejects a drafted plan with a reason.
func (c *Client) PlanReject(ctx context.Context, p planapi.PlanRejectParams) (planapi.Plan, error) {
	r, err := invoke(ctx, c, planapi.PlanReject, p)
	return r.Plan, err
}

// Catalog returns the model catalog.
func (c *Client) Catalog(ctx context.Context) (planapi.CatalogResult, error) {
	return invoke(ctx, c, planapi.CatalogGet, wire.Empty{})
}

// Listeners lists listeners.
func (c *Client) Listeners(ctx context.Context) ([]listenapi.Listener, error) {
	r, err := invoke(ctx, c, listenapi.ListenerList, wire.Empty{})
	return r.Listeners, err
}

// ListenerGet returns one listener in full.
func (c *Client) ListenerGet(ctx context.Context, name string) (listenapi.Listener, error) {
	r, err := invoke(ctx, c, listenapi.ListenerGet, listenapi.ListenerNameParams{Name: name})
	return r.Listener, err
}

// ListenerPut writes a listener document.
func (c *Client) ListenerPut(ctx context.Context, p listenapi.ListenerPutParams) (listenapi.Listener, error) {
	r, err := invoke(ctx, c, listenapi.ListenerPut, p)
	return r.Listener, err
}

// ListenerRemove removes a listener written through the API.
func (c *Client) ListenerRemove(ctx context.Context, name string) error {
	_, err := invoke(ctx, c, listenapi.ListenerRemove, listenapi.ListenerNameParams{Name: name})
	return err
}

// ListenerEnable enables or disables a listener.
func (c *Client) ListenerEnable(ctx context.Context, name string, enabled bool) (listenapi.Listener, error) {
	r, err := invoke(ctx, c, listenapi.ListenerEnable, listenapi.ListenerEnableParams{Name: name, Enabled: &enabled})
	return r.Listener, err
}
