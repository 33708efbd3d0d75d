package socket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"orcr/core"
	"orcr/core/wire"
)

// InProcess is the in-process transport (wire.Transport) over a server's handler table:
// the dashboard hosting the server calls the same handlers the socket serves, without
// encoding, as the caller core.Caller{InProcess: true} (nothing to verify). Params are
// not decoded, so the strict decoding and the required-field check are the socket's
// alone; a Go caller's params are typed.
type InProcess struct {
	table wire.Handlers
}

var _ wire.Transport = (*InProcess)(nil)

// NewInProcess indexes the handlers (the kernel's and each feature's).
func NewInProcess(handlers ...[]wire.Handler) (*InProcess, error) {
	t, err := wire.NewHandlers(handlers...)
	if err != nil {
		return nil, fmt.Errorf("in-process transport: %w", err)
	}
	return &InProcess{table: t}, nil
}

// WholeAnswers says a list comes in one answer here: nothing is encoded, so nothing
// bounds an answer's size (wire.WholeAnswers).
func (ip *InProcess) WholeAnswers() bool { return true }

func (ip *InProcess) handler(method string) (wire.Handler, error) {
	h, ok := ip.table[method]
	if !ok {
		return nil, wire.Errorf(wire.CodeUnknownMethod, "unknown method %q; see `orcr api schema`", method)
	}
	return h, nil
}

func inProcessCtx(ctx context.Context) context.Context {
	if _, ok := core.CallerFrom(ctx); ok {
		return ctx
	}
	return core.WithCaller(ctx, core.Caller{InProcess: true})
}

// Call serves one unary call (wire.Transport).
func (ip *InProcess) Call(ctx context.Context, method string, params, result any) error {
	h, err := ip.handler(method)
	if err != nil {
		return err
	}
	res, err := h.Serve(inProcessCtx(ctx), params)
	if err != nil {
		return err // as over the socket: an error answer carries no result
	}
	return set(result, res)
}

// set stores v in *dst.
func set(dst, v any) error {
	d := reflect.ValueOf(dst)
	if d.Kind() != reflect.Pointer || d.IsNil() {
		return fmt.Errorf("in-process transport: result %T is not a pointer", dst)
	}
	if v == nil {
		d.Elem().SetZero()
		return nil
	}
	sv := reflect.ValueOf(v)
	if !sv.Type().AssignableTo(d.Elem().Type()) {
		return fmt.Errorf("in-process transport: a %T answer into a %T", v, dst)
	}
	d.Elem().Set(sv)
	return nil
}

// Open serves one streaming call (wire.Transport): the handler runs in its own
// goroutine, its lines pass through channels as values.
func (ip *InProcess) Open(ctx context.Context, method string, params, result any) (wire.ClientStream, error) {
	h, err := ip.handler(method)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(inProcessCtx(ctx))
	p := &pipe{ctx: ctx, cancel: cancel, reply: make(chan reply, 1), down: make(chan any), up: make(chan []byte)}
	go func() {
		defer close(p.down)
		h.ServeStream(ctx, params, serverEnd{p})
		serverEnd{p}.Reply(nil, errors.New("the stream ended without an answer"))
	}()
	select {
	case r := <-p.reply:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		if err := set(result, r.result); err != nil {
			cancel()
			return nil, err
		}
		return clientEnd{p}, nil
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

type reply struct {
	result any
	err    error
}

// pipe joins the two ends of an in-process stream: the handler's (serverEnd, a
// wire.StreamConn) and the caller's (clientEnd, a wire.ClientStream).
type pipe struct {
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	reply  chan reply
	down   chan any    // handler → caller, as values
	up     chan []byte // caller → handler, as the JSON lines a socket carries
}

type serverEnd struct{ *pipe }

// Reply answers once; later replies are dropped.
func (p serverEnd) Reply(result any, err error) {
	p.once.Do(func() { p.reply <- reply{result, err} })
}

func (p serverEnd) Send(line any) error {
	select {
	case p.down <- line:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

func (p serverEnd) ReadLine() ([]byte, error) {
	select {
	case b := <-p.up:
		return b, nil
	case <-p.ctx.Done():
		return nil, io.EOF
	}
}

type clientEnd struct{ *pipe }

func (p clientEnd) Recv(line any) error {
	v, ok := <-p.down
	if !ok {
		return io.EOF
	}
	return set(line, v)
}

func (p clientEnd) Send(line any) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	select {
	case p.up <- b:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

func (p clientEnd) Close() error {
	p.cancel()
	return nil
}
