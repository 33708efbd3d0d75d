// Package strictfile is the one strict loader of orcr's TOML files (DESIGN §5): config.toml,
// the model catalog, role files, per-repo .orcr/config.toml, listener files, secrets.toml,
// and every file kind added after them. A file is read bounded (a regular file, a size cap,
// a read timeout: internal/regfile), decoded into the caller's struct, and refused when it
// has a key the struct does not name or lacks one the struct marks required
// (`toml:"name,required"`). Every problem is an *Error that names the file and the line, in
// the "FILE:LINE: msg" form editors and terminals link to.
//
// Why one: strict decoding was written five times with three error types, and each copy
// missed something another had (a key inside [hooks] blamed on the header's line, a type
// mismatch or an unknown config.toml key reported with no line at all). BurntSushi/toml
// keeps key positions private and names keys of arrays of tables without their index, so
// this package finds lines with its own scan of the (already valid) document; see lines.go.
//
// It imports nothing of orcr but internal/regfile, so core, features and config can all
// use it.
package strictfile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"orcr/internal/regfile"
)

// Error is one problem of a file at a line.
type Error struct {
	File string // as given by the caller ("" for a document that is not a file)
	Line int    // 1-based; 0 when the problem is the file as a whole
	Key  string // the key it is about, as Doc.Line takes it ("model[1].id"); "" for none
	Msg  string
	Err  error // the cause, for errors.Is (fs.ErrNotExist, regfile.ErrTooLarge, …)
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "" && strings.HasPrefix(e.Msg, e.File+" "):
		return e.Msg // a refused read names the file already: "FILE is larger than 4 MiB …"
	case e.File != "":
		return e.File + ": " + e.Msg
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem found in one file, sorted by line, so a person fixes them all
// in one round instead of one per round.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap lets errors.As find the first *Error and errors.Is the causes.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Doc is a decoded file: where its keys are, which are defined, and the problems found so
// far. A caller checking values adds its own problems with Add, so all of them reach the
// user at once, each at its line.
type Doc struct {
	File string
	md   toml.MetaData
	ix   *index
	errs Errors
}

// Line is the line of key ("source.timeout", "rate_limits[1].per"), else of the nearest
// enclosing table that is written in the file, else 0.
func (d *Doc) Line(key string) int { return d.ix.line(key) }

// IsDefined reports whether the file sets key (given as its parts, as toml.MetaData takes
// it; keys of arrays of tables have no index).
func (d *Doc) IsDefined(key ...string) bool { return d.md.IsDefined(key...) }

// Add records a problem at key's line (see Line).
func (d *Doc) Add(key, format string, args ...any) {
	d.AddLine(d.Line(key), key, format, args...)
}

// AddLine records a problem at a line the caller found itself.
func (d *Doc) AddLine(line int, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.File, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// Err is every problem recorded, sorted by line and de-duplicated, or nil.
func (d *Doc) Err() error {
	if len(d.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(d.errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Msg, b.Msg))
	})
	d.errs = slices.CompactFunc(d.errs, func(a, b *Error) bool { return a.Line == b.Line && a.Msg == b.Msg })
	return d.errs
}

// Key writes a key's parts as Doc.Line takes them, quoting a part TOML would quote:
// Key("tiers", name, "coding").
func Key(parts ...string) string { return toml.Key(parts).String() }

// Load reads the file at path — a regular file (symlinks followed), at most max bytes
// (0: regfile.MaxConfig), within regfile.Timeout — and decodes it into v like Decode. A
// missing file's error satisfies errors.Is(err, fs.ErrNotExist), so a caller can take
// its defaults.
func Load(ctx context.Context, path string, max int64, v any) (*Doc, error) {
	if max <= 0 {
		max = regfile.MaxConfig
	}
	src, err := regfile.ReadMax(ctx, path, max)
	if err != nil {
		return nil, Errors{{File: path, Msg: readMsg(path, err), Err: err}}
	}
	return Decode(path, src, v)
}

// readMsg is a read error as the user reads it: regfile's refusals name the file first
// ("FILE is not a regular file …"); an open error is its cause alone ("permission denied").
func readMsg(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err.Error()
	}
	return err.Error()
}

// Decode decodes src (file names it in errors) into v, a pointer to a struct or a map.
// On failure the error is Errors. The Doc is nil when src could not be decoded (a syntax
// error, a value of the wrong type); when it could, and only unknown or missing keys are
// wrong, the Doc comes back with v filled and those problems recorded, so a caller may
// add its own and report them all with Doc.Err.
func Decode(file string, src []byte, v any) (*Doc, error) {
	md, err := toml.Decode(string(src), v)
	if err != nil {
		e, have := decodeError(file, err)
		if have != "" {
			refineLine(src, e, have)
		}
		return nil, Errors{e}
	}
	d := &Doc{File: file, md: md, ix: scan(src)}
	t := reflect.TypeOf(v)
	d.unknownKeys(t)
	if hasRequired(t) {
		var raw map[string]any
		if _, err := toml.Decode(string(src), &raw); err == nil {
			d.checkRequired(t, raw, nil)
		}
	}
	if d.Err() != nil {
		// A copy: the caller may go on adding to the Doc.
		return d, slices.Clone(d.errs)
	}
	return d, nil
}

// unknownKeys records a problem for every occurrence of a key the decoder left unused.
// A key under an unknown table is not named again: one problem says the table is unknown.
func (d *Doc) unknownKeys(t reflect.Type) {
	und := d.md.Undecoded()
	if len(und) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, k := range und {
		seen[k.String()] = true
	}
	for _, k := range und {
		if len(k) > 1 && seen[k[:len(k)-1].String()] {
			continue
		}
		name := toml.Key{k[len(k)-1]}.String()
		known := ""
		if keys := fieldNames(t, k[:len(k)-1]); len(keys) > 0 {
			known = " (known: " + strings.Join(keys, ", ") + ")"
		}
		occ := d.ix.occurrences[k.String()]
		if len(occ) == 0 {
			where := ""
			if len(k) > 1 {
				where = " in [" + k[:len(k)-1].String() + "]"
			}
			d.AddLine(0, k.String(), "unknown key %q%s%s", name, where, known)
			continue
		}
		for _, o := range occ {
			d.AddLine(o.line, o.path.String(), "unknown key %q%s%s", name, o.path.parent().table(), known)
		}
	}
}

// checkRequired walks the type beside the document's raw values and records each
// `,required` field the document leaves out, at the line of the table that lacks it.
func (d *Doc) checkRequired(t reflect.Type, raw any, at path) {
	t = deref(t)
	if t == nil || opaque(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return
		}
		for _, f := range fields(t) {
			val, present := lookup(m, f.name)
			if !present {
				if f.required {
					d.AddLine(d.ix.line(at.String()), at.key(f.name).String(), "missing key %q%s", f.name, at.table())
				}
				continue
			}
			d.checkRequired(f.typ, val, at.key(f.name))
		}
	case reflect.Map:
		if m, ok := raw.(map[string]any); ok {
			for k, val := range m {
				d.checkRequired(t.Elem(), val, at.key(k))
			}
		}
	case reflect.Slice, reflect.Array:
		rv := reflect.ValueOf(raw)
		if rv.Kind() != reflect.Slice {
			return
		}
		for i := range rv.Len() {
			d.checkRequired(t.Elem(), rv.Index(i).Interface(), at.index(i))
		}
	}
}

// lookup finds a key as the decoder does: the exact name, else one equal under case folding.
func lookup(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// decodeError turns what BurntSushi/toml returns into an *Error with a line: syntax errors
// come as toml.ParseError, type mismatches as plain errors reading
// "toml: line N (last key "k"): …".
//
// have is the type the document's value has, for a type mismatch ("" otherwise).
func decodeError(file string, err error) (e *Error, have string) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.LastKey != "" && !strings.Contains(msg, pe.LastKey) {
			msg = pe.LastKey + ": " + msg
		}
		return &Error{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: msg, Err: err}, ""
	}
	s := strings.TrimPrefix(err.Error(), "toml: ")
	e = &Error{File: file, Msg: s, Err: err}
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		n, after, _ := strings.Cut(rest, " ")
		if line, aerr := strconv.Atoi(n); aerr == nil {
			e.Line, s = line, after
		}
	}
	if rest, ok := strings.CutPrefix(s, "(last key "); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			e.Key, _ = strconv.Unquote(q)
			s = strings.TrimPrefix(rest[len(q):], "): ")
		}
	}
	e.Msg, have = typeMsg(e.Key, s)
	return e, have
}

// refineLine puts a type mismatch inside an array of tables at the element that has it:
// the decoder names the key without its index, at the line of its last occurrence, so
// "[[item]] v = "x"" followed by "[[item]] v = 2" was blamed on the second.
func refineLine(src []byte, e *Error, have string) {
	occ := scan(src).occurrences[e.Key]
	if len(occ) < 2 {
		return
	}
	var raw map[string]any
	if _, err := toml.Decode(string(src), &raw); err != nil {
		return
	}
	for _, o := range occ {
		if v, ok := valueAt(raw, o.path); ok && strings.ReplaceAll(fmt.Sprintf("%T", v), "interface {}", "any") == have {
			e.Line, e.Key = o.line, o.path.String()
			return
		}
	}
}

// valueAt is the raw value at p, walking tables by name and arrays by index.
func valueAt(v any, p path) (any, bool) {
	for _, s := range p {
		if s.isIdx {
			rv := reflect.ValueOf(v)
			if rv.Kind() != reflect.Slice || s.index >= rv.Len() {
				return nil, false
			}
			v = rv.Index(s.index).Interface()
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[s.name]; !ok {
			return nil, false
		}
	}
	return v, true
}

// typeMsg rewrites the decoder's type mismatches ("incompatible types: TOML value has type
// string; destination has type integer") into what a person fixes: "priority is a string;
// give an integer".
func typeMsg(key, s string) (msg, have string) {
	var want string
	if rest, ok := strings.CutPrefix(s, "incompatible types: TOML value has type "); ok {
		have, want, ok = strings.Cut(rest, "; destination has type ")
		if !ok {
			return prefixKey(key, s), ""
		}
	} else if rest, ok := strings.CutPrefix(s, "type mismatch for "); ok {
		_, have, ok = strings.Cut(rest, ": expected table but found ")
		if !ok {
			return prefixKey(key, s), ""
		}
		want = "map"
	} else {
		return prefixKey(key, s), ""
	}
	name := key
	if name == "" {
		name = "the value"
	}
	return fmt.Sprintf("%s is %s; give %s", name, tomlKind(have), goKind(want)), have
}

func prefixKey(key, s string) string {
	if key == "" {
		return s
	}
	return key + ": " + s
}

// tomlKind names the Go type the decoder read a TOML value as.
func tomlKind(t string) string {
	switch {
	case t == "string":
		return "a string"
	case t == "int64":
		return "an integer"
	case t == "float64":
		return "a number"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "[]map["):
		return "an array of tables"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["):
		return "a table"
	case strings.Contains(t, "time") || strings.Contains(t, "Local"):
		return "a date or time"
	}
	return "a " + t
}

// goKind names what the destination takes.
func goKind(t string) string {
	switch t {
	case "integer":
		return "an integer"
	case "float":
		return "a number"
	case "boolean":
		return "true or false"
	case "slice":
		return "an array [ … ]"
	case "map":
		return "a table"
	case "string", "primitive (string-like)":
		return "a string in quotes"
	}
	return "a " + t
}
