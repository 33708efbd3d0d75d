package roles

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Prompt templates: {{name}} is replaced by a variable's value; names are
// [A-Za-z_][A-Za-z0-9_.-]*. Anything else between {{ and }} is an error at load, and
// a variable the run does not give is an error at spawn, before anything starts.

var varRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}`) })

func checkTemplate(t string) error {
	rest := varRE().ReplaceAllString(t, "")
	if i := strings.Index(rest, "{{"); i >= 0 {
		end := strings.Index(rest[i:], "}}")
		bad := rest[i:]
		if end >= 0 {
			bad = rest[i : i+end+2]
		}
		if len(bad) > 40 {
			bad = bad[:40] + "…"
		}
		return fmt.Errorf("bad placeholder %q: write {{name}} with a name of letters, digits, _ . -", bad)
	}
	return nil
}

// templateVars lists the variables t uses, sorted, once each.
func templateVars(t string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range varRE().FindAllStringSubmatch(t, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// render fills t from vars; every missing variable is named in the error.
func render(t string, vars map[string]string) (string, error) {
	var missing []string
	for _, v := range templateVars(t) {
		if _, ok := vars[v]; !ok {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		flags := make([]string, len(missing))
		for i, m := range missing {
			flags[i] = "--var " + m + "=…"
		}
		return "", fmt.Errorf("template variable %s not given: pass %s", strings.Join(missing, ", "), strings.Join(flags, " "))
	}
	return varRE().ReplaceAllStringFunc(t, func(m string) string {
		return vars[varRE().FindStringSubmatch(m)[1]]
	}), nil
}
