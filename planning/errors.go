package planning

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// LineError is one problem in a file a person or a lead wrote, at the line it is on
// (1-based; 0 when no line can be named).
// It prints as "file:line: msg", the form editors and terminals link to.
type LineError struct {
	File string
	Line int
	Msg  string
	// Code is a stable snake_case name of the kind of problem (CodeUnknownKey, …), so a
	// client can tell problems apart without matching messages; CodeSyntax when no
	// more specific kind applies.
	Code string
}

// Stable codes of plan file problems (LineError.Code), as plan.get reports them.
const (
	CodeSyntax            = "syntax"              // not the shape of a plan (or of a catalog)
	CodeUnknownKey        = "unknown_key"         // a key the format does not have
	CodeMissingKey        = "missing_key"         // a required key is absent or empty
	CodeBadValue          = "bad_value"           // a key's value is not one it takes
	CodeUnknownTier       = "unknown_tier"        // tier: not small, medium or high
	CodeUnknownDependency = "unknown_dependency"  // depends: names no milestone
	CodeDependencyCycle   = "dependency_cycle"    // milestones depend on each other
	CodeDuplicateID       = "duplicate_id"        // two milestones share an id
	CodeMissingSection    = "missing_section"     // no (or an empty) ### Goal / ### Acceptance
	CodeUnknownModel      = "unknown_model"       // model: not in the catalog
	CodePremiumModel      = "premium_not_allowed" // a premium model without `premium: allowed`
	CodeModelBelowTier    = "model_below_tier"    // model: does not meet the milestone's tier
	CodeUnreadable        = "unreadable"          // the file is missing or cannot be read
)

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
	l.addc(line, CodeSyntax, format, args...)
}

// addc adds an error of a specific kind.
func (l *errorList) addc(line int, code, format string, args ...any) {
	l.list = append(l.list, LineError{File: l.file, Line: line, Msg: fmt.Sprintf(format, args...), Code: code})
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
