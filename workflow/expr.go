package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// Expressions (when, for_each) are github.com/expr-lang/expr over vars (strings),
// steps (each finished step's outputs: steps.NAME.OUTPUT) and, nowhere yet, item.
// They are compiled when the file is read, so a bad one is refused before anything
// starts, and run with bounds: expr's memory budget (every range, map and repeat
// counts against it), a wall-clock bound, and a panic caught as an error. `now()` is
// not offered: an expression is part of the pure step, and replaying a step must give
// the same answer.

// Evaluation bounds.
const (
	exprMemory  = 1_000_000
	exprTimeout = 2 * time.Second
	exprNodes   = 2_000
)

// exprEnv is what an expression sees.
type exprEnv struct {
	Vars  map[string]any `expr:"vars"`
	Steps map[string]any `expr:"steps"`
	Item  any            `expr:"item"`
}

func compile(src string) (*vm.Program, error) {
	if v, ok := programs.Load(src); ok {
		return v.(*vm.Program), nil
	}
	p, err := expr.Compile(src, expr.Env(exprEnv{}), expr.DisableBuiltin("now"), expr.MaxNodes(exprNodes))
	if err != nil {
		return nil, errors.New(oneLine(err.Error()))
	}
	if n := programCount.Add(1); n > 4096 {
		programs.Clear()
		programCount.Store(0)
	}
	programs.Store(src, p)
	return p, nil
}

var (
	programs     sync.Map
	programCount atomic.Int64
)

// oneLine keeps an expr error's first line: the rest draws the source with a caret,
// which a file:line message does not need.
func oneLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// eval runs src over env within the bounds.
func eval(src string, env exprEnv) (any, error) {
	p, err := compile(src)
	if err != nil {
		return nil, err
	}
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("expression %q panicked: %v", src, r)}
			}
		}()
		m := vm.VM{MemoryBudget: exprMemory}
		v, err := m.Run(p, env)
		if err != nil {
			err = fmt.Errorf("expression %q: %s", src, oneLine(err.Error()))
		}
		done <- result{v, err}
	}()
	t := time.NewTimer(exprTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		// The goroutine ends by itself: the memory budget bounds what it can do.
		return nil, fmt.Errorf("expression %q ran longer than %s", src, exprTimeout)
	}
}

// ref is one thing an expression or template reads: vars.NAME, steps.STEP.OUTPUT,
// item (root, then the parts after it as far as they are names).
type ref struct {
	root  string
	parts []string
}

type refVisitor struct{ refs []ref }

func (v *refVisitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		v.refs = append(v.refs, ref{root: x.Value})
	case *ast.MemberNode:
		var parts []string
		var cur ast.Node = x
		for {
			m, ok := cur.(*ast.MemberNode)
			if !ok {
				break
			}
			s, ok := m.Property.(*ast.StringNode)
			if !ok {
				parts = nil // a computed member: from here out nothing is known
			} else {
				parts = append([]string{s.Value}, parts...)
			}
			cur = m.Node
		}
		if id, ok := cur.(*ast.IdentifierNode); ok {
			v.refs = append(v.refs, ref{root: id.Value, parts: parts})
		}
	}
}

// exprRefs compiles src and lists what it reads.
func exprRefs(src string) ([]ref, error) {
	p, err := compile(src)
	if err != nil {
		return nil, err
	}
	node := p.Node()
	v := &refVisitor{}
	ast.Walk(&node, v)
	return v.refs, nil
}

// Templates are roles' {{name}}: a name of letters, digits, _ . - between {{ and }},
// here vars.NAME, steps.STEP.OUTPUT, item or item.FIELD. Anything else between {{ and
// }} is an error when the file is read.

var placeholderRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}`)
})

// templateRefs lists what template t reads.
func templateRefs(t string) ([]ref, error) {
	rest := placeholderRE().ReplaceAllString(t, "")
	if i := strings.Index(rest, "{{"); i >= 0 {
		bad := rest[i:]
		if end := strings.Index(bad, "}}"); end >= 0 {
			bad = bad[:end+2]
		}
		if len(bad) > 40 {
			bad = bad[:40] + "…"
		}
		return nil, fmt.Errorf("bad placeholder %q: write {{vars.NAME}}, {{steps.STEP.OUTPUT}} or {{item}}", bad)
	}
	var out []ref
	for _, m := range placeholderRE().FindAllStringSubmatch(t, -1) {
		parts := strings.Split(m[1], ".")
		r := ref{root: parts[0], parts: parts[1:]}
		switch {
		case r.root == "vars" && len(r.parts) == 1, r.root == "steps" && len(r.parts) == 2, r.root == "item":
		default:
			return nil, fmt.Errorf("{{%s}}: write {{vars.NAME}}, {{steps.STEP.OUTPUT}}, {{item}} or {{item.FIELD}}", m[1])
		}
		out = append(out, r)
	}
	return out, nil
}

// render fills template t from env; a value that is not a string is written as JSON.
func render(t string, env exprEnv) (string, error) {
	var err error
	out := placeholderRE().ReplaceAllStringFunc(t, func(m string) string {
		name := placeholderRE().FindStringSubmatch(m)[1]
		parts := strings.Split(name, ".")
		var v any
		switch parts[0] {
		case "vars":
			v = env.Vars
		case "steps":
			v = env.Steps
		case "item":
			v = env.Item
		}
		for _, p := range parts[1:] {
			mv, ok := v.(map[string]any)
			if !ok {
				if err == nil {
					err = fmt.Errorf("{{%s}}: %s is not an object", name, p)
				}
				return ""
			}
			if v, ok = mv[p]; !ok {
				if err == nil {
					err = fmt.Errorf("{{%s}} has no value", name)
				}
				return ""
			}
		}
		return text(v)
	})
	return out, err
}
