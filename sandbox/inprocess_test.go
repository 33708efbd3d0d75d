package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/sandbox/confine"
	"orcr/testutil/clis"
	"orcr/testutil/wait"
)

// TestInProcessConfinesOnlyTheChild: on the pty host the server confines a sandboxed
// agent from a thread of its own, without the launcher. The agent cannot write outside
// its folder; the server — every one of its threads, new ones included — still can,
// after several confined launches; the report says the server applied it.
func TestInProcessConfinesOnlyTheChild(t *testing.T) {
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	work, outside := filepath.Join(root, "work"), filepath.Join(root, "outside")
	os.MkdirAll(work, 0o700)
	os.MkdirAll(outside, 0o700)
	self, _ := os.Executable()
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: self, Socket: filepath.Join(root, "orcr", "orcr.sock"), InProcess: InProcessOn})
	defer f.Close()
	h := pty.New(pty.Options{})
	defer h.Shutdown(context.Background())

	for i := range 3 {
		id := fmt.Sprint("a", i)
		// kill -0 of the server: refused unless the agent shares its domain (the
		// server's main thread confined, ABI ≥ 6 scopes signals).
		script := fmt.Sprintf(`echo in > %[1]s/in%[3]d && echo in-ok; echo out > %[2]s/out%[3]d && echo out-WRITTEN; `+
			`kill -0 %[4]d 2>/dev/null && echo SIGNALLED-SERVER; echo done; exec sleep 60`, work, outside, i, os.Getpid())
		spec := &core.LaunchSpec{Argv: []string{"sh", "-c", script}, Cwd: work, Env: []string{"HOME=" + root + "/nohome", "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: id, Path: id, Host: "pty", Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
		ok, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{})
		if err != nil || !ok || spec.Confine == nil {
			t.Fatalf("wrap: %v %v %+v", ok, err, spec.Confine)
		}
		info, err := h.Launch(context.Background(), *spec)
		if err != nil {
			t.Fatal(err)
		}
		var screen string
		wait.For(t, 20*time.Second, "the agent's lines", func() bool {
			s, _ := h.Read(context.Background(), info.ID, core.ReadOpts{Lines: 50})
			screen = s.Text
			return strings.Contains(screen, "done")
		})
		if !strings.Contains(screen, "in-ok") || strings.Contains(screen, "out-WRITTEN") || !strings.Contains(screen, "Permission denied") {
			t.Fatalf("the confined agent:\n%s", screen)
		}
		if abi, _ := confine.KernelABI(); abi >= 6 && strings.Contains(screen, "SIGNALLED-SERVER") {
			t.Fatalf("the agent signalled its server: the server's main thread shares its domain\n%s", screen)
		}
		if strings.Contains(screen, "sandbox exec") {
			t.Fatalf("the launcher ran:\n%s", screen)
		}
		if err := f.written(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		rep, ok, err := confine.ReadReport(filepath.Join(f.o.Home, "agents", id, ReportFile))
		if err != nil || !ok || !rep.InProcess || rep.PID != info.PID {
			t.Fatalf("report %+v %v %v (pane pid %d)", rep, ok, err, info.PID)
		}
	}
	// The server: this goroutine, and goroutines forced onto threads of their own.
	if err := os.WriteFile(filepath.Join(outside, "server"), []byte("x"), 0o600); err != nil {
		t.Fatalf("the server was confined: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			time.Sleep(5 * time.Millisecond) // hold the thread so others need new ones
			errs <- os.WriteFile(filepath.Join(outside, fmt.Sprint("t", i)), []byte("x"), 0o600)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a thread of the server was confined: %v", err)
		}
	}
}
