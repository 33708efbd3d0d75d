package strictfile

import (
	"encoding"
	"reflect"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// field is one key a struct takes, as BurntSushi/toml matches it: the tag's name, else the
// Go name; fields of an embedded struct without a tag are the outer struct's own.
type field struct {
	name     string
	typ      reflect.Type
	required bool
}

var (
	unmarshalerT = reflect.TypeFor[toml.Unmarshaler]()
	textT        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// deref follows pointers to the type a value decodes into.
func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// opaque says the type decodes itself (or anything), so its keys are not the struct's.
func opaque(t reflect.Type) bool {
	return t.Implements(unmarshalerT) || reflect.PointerTo(t).Implements(unmarshalerT) ||
		t.Implements(textT) || reflect.PointerTo(t).Implements(textT)
}

func fields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("toml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			if et := deref(sf.Type); et.Kind() == reflect.Struct {
				out = append(out, fields(et)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		req := false
		for o := range strings.SplitSeq(opts, ",") {
			req = req || o == "required"
		}
		out = append(out, field{name: name, typ: sf.Type, required: req})
	}
	return out
}

// elem steps through pointers, slices and arrays to what one table of the value is.
func elem(t reflect.Type) reflect.Type {
	for t != nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			t = t.Elem()
		default:
			return t
		}
	}
	return t
}

// fieldNames is the keys the table at key (no indexes) of a value of type t takes, for
// the "known:" list of an unknown key; nil when they are not a fixed set.
func fieldNames(t reflect.Type, key toml.Key) []string {
	t = elem(t)
	for _, name := range key {
		if t == nil || opaque(t) {
			return nil
		}
		switch t.Kind() {
		case reflect.Map:
			t = elem(t.Elem())
		case reflect.Struct:
			var next reflect.Type
			for _, f := range fields(t) {
				if f.name == name {
					next = f.typ
					break
				}
				if next == nil && strings.EqualFold(f.name, name) {
					next = f.typ
				}
			}
			t = elem(next)
		default:
			return nil
		}
	}
	if t == nil || t.Kind() != reflect.Struct || opaque(t) {
		return nil
	}
	var out []string
	for _, f := range fields(t) {
		out = append(out, toml.Key{f.name}.String())
	}
	return out
}

var requiredCache sync.Map // reflect.Type → bool

// hasRequired says whether any struct reachable from t marks a field required, so a
// file type without one is not decoded a second time.
func hasRequired(t reflect.Type) bool {
	if v, ok := requiredCache.Load(t); ok {
		return v.(bool)
	}
	r := findRequired(t, map[reflect.Type]bool{})
	requiredCache.Store(t, r)
	return r
}

func findRequired(t reflect.Type, seen map[reflect.Type]bool) bool {
	t = elem(t)
	if t == nil || seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Map:
		return findRequired(t.Elem(), seen)
	case reflect.Struct:
		if opaque(t) {
			return false
		}
		for _, f := range fields(t) {
			if f.required || findRequired(f.typ, seen) {
				return true
			}
		}
	}
	return false
}
