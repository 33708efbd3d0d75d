package orchestrate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// LineError is one problem in a file a person or a lead wrote, at the line it is on
// (1-based; 0 when no line can be named, e.g. a key BurntSushi/toml reports without one).
// It prints as "file:line: msg", the form editors and terminals link to.
type LineError struct {
	File string
	Line int
	Msg  string
}

func (e LineError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Errors is every problem found in one file, sorted by line, so a person (or the lead)
// fixes them all in one round instead of one per round.
type Errors []LineError

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Lines returns each error as its own string, the form plan records keep.
func (es Errors) Lines() []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return out
}

// errorList collects LineErrors while a file is read.
type errorList struct {
	file string
	list Errors
}

func (l *errorList) add(line int, format string, args ...any) {
	l.list = append(l.list, LineError{File: l.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// err returns the sorted, de-duplicated errors, or nil when there are none.
func (l *errorList) err() error {
	if len(l.list) == 0 {
		return nil
	}
	slices.SortStableFunc(l.list, func(a, b LineError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Msg, b.Msg))
	})
	l.list = slices.Compact(l.list)
	return l.list
}
