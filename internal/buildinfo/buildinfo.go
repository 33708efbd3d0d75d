// Package buildinfo says which orcr this binary is: the version `orcr version` prints
// and a node's handshake compares (one reading of the build information for both).
package buildinfo

import "runtime/debug"

// Version is the module version, or the VCS revision a source build records
// ("-dirty" when the tree had changes), "(devel)" when neither is known.
func Version() string {
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
