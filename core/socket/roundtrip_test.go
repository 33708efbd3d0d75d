package socket

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"

	// Every feature's declarations, so the tests here see every declared method (core
	// itself imports none of them).
	_ "orcr/accounts/api"
	_ "orcr/listen/api"
	_ "orcr/orchestrate/api"
	_ "orcr/orchestrate/run/api"
	_ "orcr/roles/api"
	_ "orcr/schedule/api"
)

// standIns is a handler for every declared method that answers with the zero result:
// what the decoding tests parse requests against.
var standIns = func() wire.Handlers {
	var hs []wire.Handler
	for _, m := range wire.Methods {
		hs = append(hs, wire.HandleSpec(m, func(context.Context, any) (any, error) {
			return reflect.Zero(m.Result).Interface(), nil
		}))
	}
	t, err := wire.NewHandlers(hs)
	if err != nil {
		panic(err)
	}
	return t
}()

// TestEveryMethodRoundTrips calls every declared method through both transports, the
// socket client against a socket server and the in-process transport, each over a
// handler set that checks the params it got against params filled field by field and
// answers with a result filled the same way: what a method declares is what crosses,
// both ways, whichever the transport.
func TestEveryMethodRoundTrips(t *testing.T) {
	if len(wire.Methods) < 58 {
		t.Fatalf("only %d methods declared: the api packages' declarations are missing", len(wire.Methods))
	}
	var hs []wire.Handler
	for _, m := range wire.Methods {
		want := filled(m.Params, m.Name)
		res := filled(m.Result, m.Name+"!").Interface()
		hs = append(hs, wire.HandleSpec(m, func(_ context.Context, p any) (any, error) {
			if got := reflect.ValueOf(p).Elem().Interface(); !reflect.DeepEqual(got, want.Interface()) {
				return nil, fmt.Errorf("%s: params\n got %+v\nwant %+v", m.Name, got, want.Interface())
			}
			return res, nil
		}))
	}
	path := filepath.Join(t.TempDir(), "rt.sock")
	srv, err := Listen(path, hs, nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := Dial(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ip, err := NewInProcess(hs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []struct {
		name string
		t    wire.Transport
	}{{"socket", cl}, {"in-process", ip}} {
		for _, m := range wire.Methods {
			p := filled(m.Params, m.Name)
			want := filled(m.Result, m.Name+"!")
			got := reflect.New(want.Type())
			if m.Stream != nil {
				st, err := tr.t.Open(ctx, m.Name, p.Addr().Interface(), got.Interface())
				if err != nil {
					t.Errorf("%s %s: %v", tr.name, m.Name, err)
					continue
				}
				st.Close()
			} else if err := tr.t.Call(ctx, m.Name, p.Addr().Interface(), got.Interface()); err != nil {
				t.Errorf("%s %s: %v", tr.name, m.Name, err)
				continue
			}
			if info, ok := got.Interface().(*wire.InfoResult); ok && tr.name == "socket" {
				// The socket server reports its own bounds in server.info.
				if info.Limits == nil || info.Limits.MaxInFlight != DefaultMaxInFlight {
					t.Errorf("socket server.info: limits %+v, want the server's", info.Limits)
				}
				info.Limits = want.Interface().(wire.InfoResult).Limits
			}
			if !reflect.DeepEqual(got.Elem().Interface(), want.Interface()) {
				t.Errorf("%s %s: result\n got %+v\nwant %+v", tr.name, m.Name, got.Elem().Interface(), want.Interface())
			}
		}
	}
}

// filled returns a value of t with every field set, within its range tags, from seed;
// it survives a JSON round trip unchanged (times in UTC to the second, interfaces as
// strings).
func filled(t reflect.Type, seed string) reflect.Value {
	v := reflect.New(t).Elem()
	fill(v, seed, reflect.StructField{}, 0)
	return v
}

var fillTime = time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)

func fill(v reflect.Value, seed string, f reflect.StructField, depth int) {
	if depth > 4 {
		return
	}
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(fillTime.Add(time.Duration(len(seed)) * time.Second)))
		return
	case v.Type() == reflect.TypeOf(json.RawMessage{}):
		v.SetBytes([]byte(strconv.Quote(seed)))
		return
	}
	n := int64(len(seed)%7 + 1)
	if tag := f.Tag.Get("range"); tag != "" {
		a, b, _ := strings.Cut(tag, ",")
		lo, _ := strconv.ParseInt(a, 10, 64)
		hi, _ := strconv.ParseInt(b, 10, 64)
		n = min(max(n, lo), hi)
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(seed)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed, f, depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), seed+"0", reflect.StructField{}, depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, seed+"k", reflect.StructField{}, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, seed+"v", reflect.StructField{}, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf(seed))
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			sf := v.Type().Field(i)
			if !sf.IsExported() || sf.Tag.Get("json") == "-" {
				continue
			}
			fill(v.Field(i), seed+"."+sf.Name, sf, depth+1)
		}
	}
}

// TestStreamsThroughBothTransports opens a streaming method through each transport: the
// result, then lines both ways (the client's frame reaches the handler, the handler's
// lines reach the client in order), then the end of the stream when the handler ends.
func TestStreamsThroughBothTransports(t *testing.T) {
	spec, _ := wire.Lookup(wire.MethodAgentAttach)
	h := wire.HandleStream(wire.AgentAttach, func(ctx context.Context, p *wire.AttachParams, c wire.StreamConn) bool {
		c.Reply(wire.AttachResult{Stream: true, Agent: wire.Agent{ID: p.Target}}, nil)
		line, err := c.ReadLine()
		if err != nil {
			return true
		}
		var f wire.AttachFrame
		if json.Unmarshal(line, &f) != nil {
			return true
		}
		for i := range 3 {
			if c.Send(wire.AttachFrame{Data: append(append([]byte(nil), f.Data...), byte('0'+i))}) != nil {
				return true
			}
		}
		c.Send(wire.AttachFrame{Closed: true})
		return true
	})
	if h.Spec().Name != spec.Name {
		t.Fatalf("handler for %s", h.Spec().Name)
	}
	path := filepath.Join(t.TempDir(), "st.sock")
	srv, err := Listen(path, []wire.Handler{h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := Dial(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ip, err := NewInProcess([]wire.Handler{h})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []struct {
		name string
		t    wire.Transport
	}{{"socket", cl}, {"in-process", ip}} {
		r, lines, err := wire.Open(ctx, tr.t, wire.AgentAttach, wire.AttachParams{Target: "a1"})
		if err != nil || !r.Stream || r.Agent.ID != "a1" {
			t.Fatalf("%s: open: %+v %v", tr.name, r, err)
		}
		if err := lines.Send(wire.AttachFrame{Data: []byte("x")}); err != nil {
			t.Fatalf("%s: send: %v", tr.name, err)
		}
		var got []string
		for {
			f, err := lines.Recv()
			if err != nil {
				t.Fatalf("%s: recv after %q: %v", tr.name, got, err)
			}
			if f.Closed {
				break
			}
			got = append(got, string(f.Data))
		}
		if strings.Join(got, ",") != "x0,x1,x2" {
			t.Errorf("%s: lines %q, want x0,x1,x2", tr.name, got)
		}
		lines.Close()
	}
}
