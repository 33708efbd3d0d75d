package agentkit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVersion(t *testing.T) {
	if v := Version(context.Background(), script(t, `echo "tool 2.1.4 (build abc)"`)); v != "2.1.4" {
		t.Fatalf("version %q", v)
	}
	// A CLI that hangs (and leaves a grandchild holding its output open) is cut off at
	// the deadline, with no data race on the process (run under -race).
	hang := script(t, `sleep 30 & sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if v := Version(ctx, hang); v != "" {
		t.Fatalf("hanging cli gave %q", v)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("version probe took %s", d)
	}
}
