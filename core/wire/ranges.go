package wire

import (
	"fmt"
	"math"
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

// The bounds the server and the CLI share. A duration in seconds has a floor of 1 s by its
// unit (0 means "not set") and a ceiling well inside time.Duration: unchecked,
// hardTimeoutSeconds 36028797018963973 wrapped to 5 s and killed the agent at once.
const (
	MaxTimeoutSeconds = 30 * 24 * 3600 // 30 days: agent timeouts, a run's check
	MaxCoders         = 64             // a run's coder pool
	MaxTurns          = 100000
	MaxUSD            = 1_000_000 // a budget or an agent's budget_usd
	MaxTokens         = 1_000_000_000_000
	MaxPriority       = 1_000_000
)

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

// CheckFloat refuses NaN, ±Inf and a value outside lo..hi, naming what (a param or a
// flag) and the bound.
func CheckFloat(method, what string, v, lo, hi float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Errorf(CodeInvalidParams, "%s: %s is %v: give a finite number from %g to %g", method, what, v, lo, hi)
	}
	if v < lo || v > hi {
		return Errorf(CodeInvalidParams, "%s: %s is %g, out of range: it must be %g to %g", method, what, v, lo, hi)
	}
	return nil
}

// CheckRanges checks the range-tagged number fields of the struct p points to (an int, a
// *int, a float64, a *float64, or a map's int values) and the length of its
// maxItems-tagged lists, naming the first out of bounds. A float is never NaN or infinite,
// tagged or not. The socket server applies it to every request's params and the socket
// client before it sends, so the CLI refuses what the server would, with the same bound.
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
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Float64 {
			f = f.Elem()
		}
		if f.Kind() == reflect.Float64 {
			lo, hi := -math.MaxFloat64, math.MaxFloat64
			if l, h, ok := fieldRange(t.Field(i)); ok {
				lo, hi = float64(l), float64(h)
			}
			if err := CheckFloat(method, name, f.Float(), lo, hi); err != nil {
				return err
			}
			continue
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
