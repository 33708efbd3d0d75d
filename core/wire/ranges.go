package wire

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Every integer a request carries is range-checked before it reaches the core (DESIGN §13):
// unchecked, agent.wait timeoutSeconds 18446744075 overflowed time.Duration and timed out at
// once, and agent.run took 100000 columns. A field's bounds are its `range:"min,max"` tag;
// CheckRanges applies them to decoded params (the server does, for every method), and the
// schema publishes them as minimum/maximum.

// The same holds for lists: a field's `maxItems:"N"` tag bounds its length (a slice) or
// its number of keys (a map). Unbounded, run.dispatch with 100,000 names kept the server
// busy for minutes, each name a step and a log entry.

// fieldMaxItems parses a maxItems tag.
func fieldMaxItems(f reflect.StructField) (n int, ok bool) {
	tag := f.Tag.Get("maxItems")
	if tag == "" {
		return 0, false
	}
	n, err := strconv.Atoi(tag)
	if err != nil || n < 0 {
		panic("wire: bad maxItems tag on " + f.Name + ": " + tag)
	}
	return n, true
}

// fieldRange parses a range tag.
func fieldRange(f reflect.StructField) (lo, hi int64, ok bool) {
	tag := f.Tag.Get("range")
	if tag == "" {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(tag, ",")
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		panic("wire: bad range tag on " + f.Name + ": " + tag)
	}
	return lo, hi, true
}

// CheckRanges checks the range-tagged integer fields of the struct p points to (an int, a
// *int, or a map's int values) and the length of its maxItems-tagged lists, naming the
// first out of bounds.
func CheckRanges(method string, p any) error {
	v := reflect.ValueOf(p)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if most, ok := fieldMaxItems(t.Field(i)); ok {
			if f := v.Field(i); (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f.Len() > most {
				return Errorf(CodeInvalidParams, "%s: %s has %d items, more than the %d one request may carry; send them in several requests",
					method, name, f.Len(), most)
			}
		}
		lo, hi, ok := fieldRange(t.Field(i))
		if !ok {
			continue
		}
		check := func(n int64, what string) error {
			if n < lo || n > hi {
				return Errorf(CodeInvalidParams, "%s: %s is %d, out of range: it must be %d to %d", method, what, n, lo, hi)
			}
			return nil
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			if err := check(f.Int(), name); err != nil {
				return err
			}
		case reflect.Pointer:
			if !f.IsNil() {
				if err := check(f.Elem().Int(), name); err != nil {
					return err
				}
			}
		case reflect.Map:
			for _, k := range f.MapKeys() {
				if err := check(f.MapIndex(k).Int(), fmt.Sprintf("%s[%q]", name, k.String())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
