package core

import (
	"strings"

	"orcr/core/wire"
)

// page cuts one page of at most limit agents (0: all) from as, which is in the list's
// order (path, then age), starting after the cursor after. next is the cursor of the page's
// last agent when more follow: "PATH ID" (a path holds no space). The cursor names an
// agent rather than a position, so a page is not shifted by records pruned or added
// before it since the previous one (kubectl's continue token works the same way); when
// that agent itself is gone, the page starts at the first agent after its path and id.
func page(as []wire.Agent, after string, limit int) ([]wire.Agent, string) {
	if after != "" {
		path, id, _ := strings.Cut(after, " ")
		start := -1
		for i, a := range as {
			if a.ID == id && a.Path == path {
				start = i + 1
				break
			}
		}
		if start < 0 {
			start = len(as)
			for i, a := range as {
				if a.Path > path || (a.Path == path && a.ID > id) {
					start = i
					break
				}
			}
		}
		as = as[start:]
	}
	if limit <= 0 || len(as) <= limit {
		return as, ""
	}
	as = as[:limit]
	last := as[len(as)-1]
	return as, last.Path + " " + last.ID
}
