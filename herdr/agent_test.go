package herdr

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/herdr/herdrtest"
)

// fakePi is a stand-in agent named like a herdr-known kind, as herdr's own tests do:
// it shows "Working..." until a line arrives, then clears and waits at a prompt.
const fakePi = "#!/bin/sh\necho Working...\nread x\nprintf '\\033[2J\\033[H'\necho \"got $x\"\nprintf 'ready> '\nwhile read y; do :; done\n"

// herdr detects the agent in an argv pane through orcr's wrapper and reports its
// status; WaitAgent blocks in herdr until it settles.
func TestAgentStatusThroughWrapper(t *testing.T) {
	bin := shortDir(t)
	if err := os.WriteFile(filepath.Join(bin, "pi"), []byte(fakePi), 0o755); err != nil {
		t.Fatal(err)
	}
	_, env := fakeServer(t, func(o *herdrtest.Options) { o.AgentReady = 200 * time.Millisecond })
	h := newHost(t, env)
	record(t, h)
	info, err := h.Launch(testCtx(t), core.LaunchSpec{Name: "a/pi", Argv: []string{"pi"},
		Env: []string{"PATH=" + bin + ":/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "herdr to see pi working", func() bool {
		st, err := h.AgentStatus(testCtx(t), info.ID)
		return err == nil && st.Agent == "pi" && st.Status == "working"
	})
	if err := h.SendText(testCtx(t), info.ID, "hello\r"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := h.WaitAgent(ctx, info.ID)
	if err != nil || !st.Settled() || st.Agent != "pi" {
		t.Fatalf("WaitAgent = %+v, %v; want pi settled", st, err)
	}
	// Headless, nobody saw the turn finish: herdr says done, not idle.
	if st.Status != "done" {
		t.Errorf("status %q, want done (unseen idle)", st.Status)
	}
	// A wait that cannot be met ends with herdr's timeout, on ctx's deadline.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := h.WaitAgent(short, info.ID, "blocked"); !errors.Is(err, &Error{Code: "timeout"}) {
		t.Fatalf("unmeetable wait = %v", err)
	}
	plain := launch(t, h, "cat")
	if _, err := h.WaitAgent(testCtx(t), plain.ID); !errors.Is(err, &Error{Code: "agent_not_found"}) {
		t.Fatalf("wait on a plain pane = %v; want agent_not_found", err)
	}
}

func TestRequireIntegration(t *testing.T) {
	bin := buildFake(t)
	env := fakeEnv(t)
	h, err := New(testCtx(t), Options{Bin: bin, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.StopServer(testCtx(t)) })
	record(t, h)
	if err := h.RequireIntegration(testCtx(t), "shell"); err != nil {
		t.Fatalf("shell needs no integration: %v", err)
	}
	err = h.RequireIntegration(testCtx(t), "codex")
	if !errors.Is(err, wire.ErrMissingProgram) || !strings.Contains(err.Error(), "herdr integration install codex") {
		t.Fatalf("missing codex integration = %v; want missing_program with the fix", err)
	}
}
