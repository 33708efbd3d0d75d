// Package buildinfo says which orcr this binary is: the version `orcr version` prints
// and a node's handshake compares (one reading of the build information for both).
package buildinfo

import "runtime/debug"

// stamp is a version given at link time (go build -ldflags "-X
// orcr/internal/buildinfo.stamp=v1.2.0"): a release's, or a test's build that must be
// another version than the tree's (a node left on an older orcr).
var stamp string

// Version is the version stamped at link time, else the module version, or the VCS
// revision a source build records ("-dirty" when the tree had changes), "(devel)"
// when none is known.
func Version() string {
	if stamp != "" {
		return stamp
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.modified":
			if st.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return rev + dirty
	}
	if v == "" {
		return "(devel)"
	}
	return v
}
