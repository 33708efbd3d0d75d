package core_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
)

// TestRestartAndFork: agent.fork starts an agent's spec on a new path and agent.restart
// stops an agent and starts its spec again on its path — both with the env values a
// client only ever sees redacted, so only the server can build them.
func TestRestartAndFork(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	tr, err := socket.NewInProcess(core.KernelMethods(r.eng))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	orig, err := r.eng.Run(ctx, wire.RunParams{Path: "a/orig", Env: map[string]string{"SECRET_WORD": "swordfish"},
		Argv: []string{"sh", "-c", `echo "word=$SECRET_WORD"; exec cat`}})
	if err != nil {
		t.Fatal(err)
	}
	says := func(target, want string) {
		t.Helper()
		waitFor(t, target+" to say "+want, 30*time.Second, func() bool {
			rd, err := r.eng.Read(ctx, wire.ReadParams{Target: target})
			return err == nil && strings.Contains(rd.Text, want)
		})
	}
	says("a/orig", "word=swordfish")
	if got, _ := r.eng.Get(ctx, "a/orig"); got.Env["SECRET_WORD"] == "swordfish" {
		t.Fatal("the record shows the env value: the test would not prove the server builds the spawn")
	}

	fork, err := wire.Call(ctx, tr, wire.AgentFork, wire.ForkParams{Target: "a/orig", Path: "a/copy"})
	if err != nil {
		t.Fatal(err)
	}
	if fork.Agent.Path != "a/copy" || fork.Agent.ID == orig.ID {
		t.Fatalf("fork: %+v", fork.Agent)
	}
	says("a/copy", "word=swordfish")
	if got, _ := r.eng.Get(ctx, "a/orig"); got.ID != orig.ID || !got.State.Live() {
		t.Fatalf("the fork touched the original: %s %s", got.ID, got.State)
	}
	if _, err := wire.Call(ctx, tr, wire.AgentFork, wire.ForkParams{Target: "a/orig", Path: "a/copy"}); wire.CodeOf(err) != wire.CodePathTaken {
		t.Fatalf("a fork onto a live path: %v", err)
	}

	re, err := wire.Call(ctx, tr, wire.AgentRestart, wire.TargetParams{Target: "a/orig"})
	if err != nil {
		t.Fatal(err)
	}
	if re.Agent.Path != "a/orig" || re.Agent.ID == orig.ID {
		t.Fatalf("restart: %+v", re.Agent)
	}
	if old, err := r.eng.Get(ctx, orig.ID); err != nil || !old.State.Terminal() {
		t.Fatalf("the restarted agent's old record: %v %v", old.State, err)
	}
	says(re.Agent.ID, "word=swordfish")
}
