package planning

import (
	"fmt"

	"orcr/internal/gitref"
)

// ValidPlanName reports whether name can name a plan: it becomes a file name, an agent
// path segment and part of branch names.
func ValidPlanName(name string) error {
	if !rePlanName().MatchString(name) || len(name) > 64 {
		return fmt.Errorf("plan name %q: use 1 to 64 lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	// The name becomes the branch feature/NAME: git's rules, checked now rather than by
	// git when the run starts ("x..y", "y.lock" and "z." pass the pattern above).
	if err := gitref.CheckBranch(name); err != nil {
		hint := ""
		if s := gitref.Suggest(name); s != "" && gitref.CheckBranch(s) == nil && rePlanName().MatchString(s) {
			hint = fmt.Sprintf(", e.g. %q", s)
		}
		return fmt.Errorf("plan name %q: git cannot use it in the branch %s: %v; pick another name%s", name, "feature/"+name, err, hint)
	}
	return nil
}
