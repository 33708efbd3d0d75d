package shell

import (
	"context"
	"slices"
	"testing"

	"orcr/core"
	"orcr/core/wire"
)

// TestPreparePromptAsEnv: a shell agent's --prompt reaches its program as
// $ORCR_PROMPT rather than being dropped; no prompt, no variable.
func TestPreparePromptAsEnv(t *testing.T) {
	p := New()
	plan, err := p.Prepare(context.Background(), core.LaunchRequest{Agent: wire.Agent{Argv: []string{"cat"}, Prompt: "fix it; rm -rf /"}})
	if err != nil || !slices.Equal(plan.Argv, []string{"cat"}) || !slices.Equal(plan.Env, []string{"ORCR_PROMPT=fix it; rm -rf /"}) {
		t.Fatalf("plan %+v err %v", plan, err)
	}
	plan, _ = p.Prepare(context.Background(), core.LaunchRequest{Agent: wire.Agent{Argv: []string{"cat"}}})
	if len(plan.Env) != 0 {
		t.Fatalf("env without a prompt: %v", plan.Env)
	}
	if _, err := p.Prepare(context.Background(), core.LaunchRequest{Agent: wire.Agent{Prompt: "x"}}); err == nil {
		t.Fatal("no argv accepted")
	}
}
