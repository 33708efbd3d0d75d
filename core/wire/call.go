package wire

import "context"

// Transport carries calls of declared methods to whatever serves them: the socket
// client (core/socket.Client) or the in-process transport over a server's handler
// table (core/socket.InProcess, which the dashboard hosting the server uses). Callers
// use Call and Open, which the declarations type; a Transport sees untyped values.
type Transport interface {
	// Call makes one unary call: params is a *P, result a *R to fill.
	Call(ctx context.Context, method string, params, result any) error
	// Open starts a streaming call: params is a *P, result a *R to fill; the lines
	// follow on the returned stream.
	Open(ctx context.Context, method string, params, result any) (ClientStream, error)
}

// ClientStream is the caller's side of a streaming call after its result.
type ClientStream interface {
	// Recv reads the next line into line (a *S); io.EOF (or the transport's error) at
	// the end.
	Recv(line any) error
	// Send writes one line (an S) to the server.
	Send(line any) error
	// Close ends the stream.
	Close() error
}

// Call calls a declared unary method through t: m types the params and the result, so
// a call cannot disagree with the handler serving it.
func Call[P, R any](ctx context.Context, t Transport, m Method[P, R], p P) (R, error) {
	var r R
	err := t.Call(ctx, m.Name, &p, &r)
	return r, err
}

// Open opens a declared streaming method through t and returns its result and the
// stream of lines of S that follows.
func Open[P, R, S any](ctx context.Context, t Transport, m Stream[P, R, S], p P) (R, *Lines[S], error) {
	var r R
	cs, err := t.Open(ctx, m.Name, &p, &r)
	if err != nil {
		return r, nil, err
	}
	return r, &Lines[S]{cs: cs}, nil
}

// Lines is a typed stream of S.
type Lines[S any] struct{ cs ClientStream }

// Recv returns the next line; io.EOF at the end.
func (l *Lines[S]) Recv() (S, error) {
	var s S
	err := l.cs.Recv(&s)
	return s, err
}

// Send sends one line to the server.
func (l *Lines[S]) Send(s S) error { return l.cs.Send(s) }

// Close ends the stream.
func (l *Lines[S]) Close() error { return l.cs.Close() }

// Do calls a declared method whose result carries nothing (wire.Empty).
func Do[P any](ctx context.Context, t Transport, m Method[P, Empty], p P) error {
	_, err := Call(ctx, t, m, p)
	return err
}
