package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Handler is one declared socket method together with what serves it. A feature's
// Methods returns its handlers; the server's dispatch, required-field check and the
// schema are built from them. Handle and HandleStream make one from a declaration and
// a typed func, so a handler of the wrong type does not compile.
type Handler interface {
	// Spec is the method's declaration.
	Spec() MethodSpec
	// Decode decodes raw params strictly (unknown fields refused), checks the
	// required fields and the ranges, and returns a *P.
	Decode(raw json.RawMessage) (any, error)
	// Serve answers a unary method: p is a *P, the result an R. A streaming method's
	// Serve refuses.
	Serve(ctx context.Context, p any) (any, error)
	// ServeStream serves a streaming method on its connection (p is a *P) and reports
	// whether the connection is used up. A unary method's returns false at once.
	ServeStream(ctx context.Context, p any, c StreamConn) bool
	// Heavy reports whether answers take CPU in proportion to the records (agent.list):
	// the socket server runs a few of those at a time.
	Heavy() bool
}

// StreamConn is a streaming method's connection as its handler sees it.
type StreamConn interface {
	// Reply answers the request with its result, or with err.
	Reply(result any, err error)
	// Send writes one line of the stream (an S) after the reply. The line is the
	// receiver's once sent: the in-process transport hands the value itself over (the
	// socket encodes it at once), so a handler must not change it afterwards.
	Send(line any) error
	// ReadLine reads the next line the client sent, at most MaxLine bytes; a longer
	// one ends the stream with an error. io.EOF when the client closed its side.
	ReadLine() ([]byte, error)
}

// handler is every Handler: a spec, a decoder from its params type and the func.
type handler struct {
	spec   MethodSpec
	decode func(json.RawMessage) (any, error)
	unary  func(ctx context.Context, p any) (any, error)
	stream func(ctx context.Context, p any, c StreamConn) bool
	heavy  bool
}

func (h *handler) Spec() MethodSpec                        { return h.spec }
func (h *handler) Decode(raw json.RawMessage) (any, error) { return h.decode(raw) }
func (h *handler) Heavy() bool                             { return h.heavy }

func (h *handler) Serve(ctx context.Context, p any) (any, error) {
	if h.unary == nil {
		return nil, Errorf(CodeBadRequest, "%s is a streaming method; open it on its own connection", h.spec.Name)
	}
	return h.unary(ctx, p)
}

func (h *handler) ServeStream(ctx context.Context, p any, c StreamConn) bool {
	if h.stream == nil {
		return false
	}
	return h.stream(ctx, p, c)
}

// Handle pairs a unary declaration with the func that serves it.
func Handle[P, R any](m Method[P, R], fn func(ctx context.Context, p *P) (R, error)) Handler {
	spec := mustLookup(m.Name)
	return &handler{spec: spec, decode: Decoder(spec),
		unary: func(ctx context.Context, p any) (any, error) { return fn(ctx, p.(*P)) }}
}

// HandleStream pairs a streaming declaration with the func that serves it. fn replies
// through c (once) and then sends lines of S; it returns whether the connection is
// used up (a native attach answers and leaves the connection to further requests).
func HandleStream[P, R, S any](m Stream[P, R, S], fn func(ctx context.Context, p *P, c StreamConn) bool) Handler {
	spec := mustLookup(m.Name)
	return &handler{spec: spec, decode: Decoder(spec),
		stream: func(ctx context.Context, p any, c StreamConn) bool { return fn(ctx, p.(*P), c) }}
}

// HandleSpec makes a handler from a spec and an untyped func: p is a pointer to a new
// value of spec.Params' type, and the result must be of spec.Result's type. Tests
// build stand-in handlers for every declared method with it.
// A streaming spec's handler answers with fn's result and leaves the connection to
// further requests.
func HandleSpec(spec MethodSpec, fn func(ctx context.Context, p any) (any, error)) Handler {
	h := &handler{spec: spec, decode: Decoder(spec), unary: fn}
	if spec.Stream != nil {
		h.unary = nil
		h.stream = func(ctx context.Context, p any, c StreamConn) bool {
			c.Reply(fn(ctx, p))
			return false
		}
	}
	return h
}

// Heavy marks a handler heavy (see Handler.Heavy).
func Heavy(h Handler) Handler {
	if hh, ok := h.(*handler); ok {
		c := *hh
		c.heavy = true
		return &c
	}
	return h
}

func mustLookup(name string) MethodSpec {
	spec, ok := Lookup(name)
	if !ok {
		panic("wire: handler for undeclared method " + name)
	}
	return spec
}

// Handlers is a server's handler table: its handlers by method name.
type Handlers map[string]Handler

// NewHandlers indexes handlers by name; two handlers for one method are an error.
func NewHandlers(hs ...[]Handler) (Handlers, error) {
	t := Handlers{}
	for _, list := range hs {
		for _, h := range list {
			name := h.Spec().Name
			if _, dup := t[name]; dup {
				return nil, fmt.Errorf("two handlers for %s", name)
			}
			t[name] = h
		}
	}
	return t, nil
}

// Decoder decodes params strictly (unknown fields are an error) into a new value of
// spec's params type, then checks the fields Required names: the schema's rule, applied
// to values. A required field holding its zero value counts as missing, since a Go
// client always sends every field that has no omitempty. It returns a pointer.
func Decoder(spec MethodSpec) func(json.RawMessage) (any, error) {
	typ := spec.Params
	method := spec.Name
	var required []Field
	if typ.Kind() == reflect.Struct {
		required = Required(typ)
	}
	return func(raw json.RawMessage) (any, error) {
		pv := reflect.New(typ)
		p := pv.Interface()
		if len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(p); err != nil {
				return nil, Errorf(CodeInvalidParams, "%s: bad params: %v; see `orcr api schema`", method, err)
			}
		}
		if len(required) > 0 {
			v := pv.Elem()
			var missing []string
			for _, f := range required {
				if v.Field(f.Index).IsZero() {
					missing = append(missing, f.Name)
				}
			}
			if len(missing) > 0 {
				return nil, Errorf(CodeInvalidParams, "%s: missing required param %s; see `orcr api schema`",
					method, quoteAll(missing))
			}
		}
		if err := CheckRanges(method, p); err != nil {
			return nil, err
		}
		return p, nil
	}
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
