package nodes

import (
	"strings"
	"testing"
)

func TestValidCloneName(t *testing.T) {
	for s, want := range map[string]bool{
		"csv": true, "M1": true, "a.b_c-d": true, strings.Repeat("a", 128): true,
		"": false, ".hidden": false, "-x": false, "a/b": false, "..": false, "a b": false,
		strings.Repeat("a", 129): false, "é": false,
	} {
		if got := validCloneName(s); got != want {
			t.Errorf("validCloneName(%q) = %v, want %v", s, got, want)
		}
	}
}
