package codex

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"orcr/adapters/internal/clitest"
	"orcr/core"
	"orcr/core/wire"
	"orcr/testutil/modelserver"
)

// TestRealCodexSystemPrompt: a role's system prompt given as developer_instructions
// reaches the model request beside codex's own instructions (verified with 0.171.0),
// and survives a quote and a newline.
func TestRealCodexSystemPrompt(t *testing.T) {
	rig := newRealRig(t, "review it")
	rig.agent.SystemPrompt = "You are ROLE-MARKER-7 \"strict\".\nSKILL-MARKER-9: check error paths."
	var err error
	rig.plan, err = rig.prov.Prepare(context.Background(), core.LaunchRequest{Agent: rig.agent, Self: rig.self,
		StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	rig.srv.Push(modelserver.Turn{Text: "Reviewed.", Usage: modelserver.Usage{Input: 10, Output: 3}})
	run := rig.start(t)
	run.Wait(90*time.Second, "turn done", func(v clitest.View) bool { return v.State == wire.StateDone && v.LastMessage == "Reviewed." })
	found := false
	for _, q := range rig.srv.Requests() {
		if q.Scripted && bytes.Contains(q.Body, []byte(`ROLE-MARKER-7 \"strict\".\nSKILL-MARKER-9: check error paths.`)) &&
			bytes.Contains(q.Body, []byte(`"developer"`)) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no request carried the system prompt as a developer message (%d requests)", len(rig.srv.Requests()))
	}
}
