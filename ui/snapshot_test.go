package ui

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
)

// snapshot writes down everything reachable from v, one "path = value" line per leaf,
// so two snapshots of the same model can be compared field by field and a difference
// names the field. Pointers are followed once (a second visit names the first path),
// maps are sorted by key, funcs and channels are compared by identity. Contexts and
// loggers are left out: they are plumbing, and a running command may touch a
// context's insides.
func snapshot(v any) []string {
	s := &snapper{seen: map[seenKey]string{}}
	s.walk("m", reflect.ValueOf(v))
	return s.out
}

type seenKey struct {
	t reflect.Type
	p uintptr
}

type snapper struct {
	seen map[seenKey]string
	out  []string
}

var (
	ctxType    = reflect.TypeOf((*context.Context)(nil)).Elem()
	loggerType = reflect.TypeOf((*slog.Logger)(nil))
)

func (s *snapper) leaf(path string, format string, args ...any) {
	s.out = append(s.out, path+" = "+fmt.Sprintf(format, args...))
}

func (s *snapper) walk(path string, v reflect.Value) {
	if !v.IsValid() {
		s.leaf(path, "<invalid>")
		return
	}
	if v.Type() == ctxType || v.Type() == loggerType {
		return
	}
	if v.Kind() == reflect.Struct && v.CanAddr() {
		// A pointer to this value met later names this path.
		k := seenKey{reflect.PointerTo(v.Type()), v.Addr().Pointer()}
		if _, ok := s.seen[k]; !ok {
			s.seen[k] = path
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			s.leaf(path, "nil")
			return
		}
		k := seenKey{v.Type(), v.Pointer()}
		if first, ok := s.seen[k]; ok {
			s.leaf(path, "→ %s", first)
			return
		}
		s.seen[k] = path
		s.walk(path, v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			s.leaf(path, "nil")
			return
		}
		e := v.Elem()
		if e.Type().Implements(ctxType) {
			return
		}
		s.walk(path+".("+e.Type().String()+")", e)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			s.walk(path+"."+t.Field(i).Name, v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			s.leaf(path, "nil")
			return
		}
		s.leaf(path+".len", "%d", v.Len())
		for i := 0; i < v.Len(); i++ {
			s.walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			s.leaf(path, "nil")
			return
		}
		s.leaf(path+".len", "%d", v.Len())
		type kv struct {
			key string
			val reflect.Value
		}
		var kvs []kv
		for it := v.MapRange(); it.Next(); {
			kvs = append(kvs, kv{s.key(it.Key()), it.Value()})
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].key < kvs[j].key })
		for _, e := range kvs {
			s.walk(path+"["+e.key+"]", e.val)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		s.leaf(path, "%#x", v.Pointer())
	case reflect.Bool:
		s.leaf(path, "%t", v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.leaf(path, "%d", v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.leaf(path, "%d", v.Uint())
	case reflect.Float32, reflect.Float64:
		s.leaf(path, "%v", v.Float())
	case reflect.Complex64, reflect.Complex128:
		s.leaf(path, "%v", v.Complex())
	case reflect.String:
		s.leaf(path, "%q", v.String())
	default:
		s.leaf(path, "<%s>", v.Kind())
	}
}

// key names a map key: a pointer by the path it was first seen at (or its address),
// anything else by its own snapshot.
func (s *snapper) key(k reflect.Value) string {
	if k.Kind() == reflect.Pointer {
		if first, ok := s.seen[seenKey{k.Type(), k.Pointer()}]; ok {
			return "&" + first
		}
		return fmt.Sprintf("%#x", k.Pointer())
	}
	ks := &snapper{seen: map[seenKey]string{}}
	ks.walk("", k)
	return strings.Join(ks.out, ",")
}

// snapshotDiff lists the paths whose values differ between two snapshots, at most a
// dozen ("" when they agree).
func snapshotDiff(before, after []string) string {
	split := func(lines []string) ([]string, map[string]string) {
		order := make([]string, 0, len(lines))
		vals := make(map[string]string, len(lines))
		for _, l := range lines {
			p, v, _ := strings.Cut(l, " = ")
			order = append(order, p)
			vals[p] = v
		}
		return order, vals
	}
	bo, bv := split(before)
	ao, av := split(after)
	var b strings.Builder
	n := 0
	say := func(p, x, y string) {
		if n < 12 {
			fmt.Fprintf(&b, "  %s: %s → %s\n", p, x, y)
		}
		n++
	}
	for _, p := range bo {
		if y, ok := av[p]; !ok {
			say(p, bv[p], "(gone)")
		} else if y != bv[p] {
			say(p, bv[p], y)
		}
	}
	for _, p := range ao {
		if _, ok := bv[p]; !ok {
			say(p, "(none)", av[p])
		}
	}
	if n > 12 {
		fmt.Fprintf(&b, "  … and %d more\n", n-12)
	}
	return b.String()
}
