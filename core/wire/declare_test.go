package wire

import (
	"reflect"
	"testing"
)

type declP struct{ A, B string }
type declR struct{ N int }
type declS struct{ Line string }

// Every orcr process declares ~150 methods before main, so a declaration must not
// allocate: no params or result value boxed into an interface, no copy of the table.
func TestDeclareAllocatesNothingPerMethod(t *testing.T) {
	saved := Methods
	defer func() { Methods = saved }()
	Methods = make([]MethodSpec, 0, 8)
	var unary, streams []string
	for _, c := range "abcdef" {
		unary, streams = append(unary, "test.declare."+string(c)), append(streams, "test.stream."+string(c))
	}
	n := 0
	allocs := testing.AllocsPerRun(4, func() {
		Declare[declP, declR](unary[n], "doc", ReadOnly)
		DeclareStream[declP, declR, declS](streams[n], "doc")
		n++
	})
	if allocs > 0 {
		t.Fatalf("a Declare and a DeclareStream made %.0f allocations", allocs)
	}
	spec, ok := Lookup("test.stream.c")
	if !ok || spec.Params != reflect.TypeFor[declP]() || spec.Result != reflect.TypeFor[declR]() ||
		spec.Stream != reflect.TypeFor[declS]() {
		t.Fatalf("the stream's spec: %+v", spec)
	}
	if spec, _ := Lookup("test.declare.c"); spec.Stream != nil || !spec.ReadOnly || spec.Params != reflect.TypeFor[declP]() {
		t.Fatalf("the unary method's spec: %+v", spec)
	}
}
