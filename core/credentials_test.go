package core_test

import (
	"slices"
	"testing"

	"orcr/core"
)

func TestForeignCredentials(t *testing.T) {
	env := []string{"ANTHROPIC_API_KEY=a", "OPENAI_API_KEY=o", "CODEX_API_KEY=c", "PATH=/bin", "ANTHROPIC_BASE_URL=u"}
	for _, c := range []struct {
		provider, account string
		want              []string
	}{
		{"claude", "", []string{"ANTHROPIC_API_KEY=a", "PATH=/bin", "ANTHROPIC_BASE_URL=u"}},
		{"claude", "default", []string{"ANTHROPIC_API_KEY=a", "PATH=/bin", "ANTHROPIC_BASE_URL=u"}},
		{"claude", "work", []string{"PATH=/bin", "ANTHROPIC_BASE_URL=u"}},
		{"codex", "", []string{"OPENAI_API_KEY=o", "CODEX_API_KEY=c", "PATH=/bin", "ANTHROPIC_BASE_URL=u"}},
		{"shell", "", []string{"PATH=/bin", "ANTHROPIC_BASE_URL=u"}},
		{"opencode", "", env},
	} {
		if got := core.ForeignCredentials(env, c.provider, c.account); !slices.Equal(got, c.want) {
			t.Errorf("%s/%s: %q, want %q", c.provider, c.account, got, c.want)
		}
	}
}
