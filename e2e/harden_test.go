package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/wait"
)

// A cron that matches no date and an --every that overflows were accepted and then fired in a
// tight loop (issue 11, item 2); env names agent.run refuses were accepted by schedule.add.
func TestScheduleThatCouldNeverBeDueIsRefused(t *testing.T) {
	e := newEnv(t)
	e.serve()
	r := e.orcr("schedule", "add", "never", "--cron", "0 0 31 4 *", "--", "true")
	if r.code == 0 || !strings.Contains(r.err, "never fires") {
		t.Fatalf("cron 0 0 31 4 *: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc := e.raw()
	for _, c := range []struct{ params, want string }{
		{`"everySeconds":18446744075`, "limit is 31622400"},
		{`"everySeconds":9223372036854775807`, "limit is 31622400"},
		{`"everySeconds":60,"env":{"":"x"}`, "invalid env name"},
		{`"everySeconds":60,"env":{"A=B":"x"}`, "invalid env name"},
	} {
		resp := rc.roundTrip(`{"id":"s","method":"schedule.add","params":{"name":"bad","command":["true"],"cwd":"/",` + c.params + `}}`)
		if resp.Error == nil || resp.Error.Code != wire.CodeInvalidParams || !strings.Contains(resp.Error.Message, c.want) {
			t.Errorf("%s: %+v", c.params, resp.Error)
		}
	}
	if out := e.must("schedule", "ls"); strings.Contains(out, "never") || strings.Contains(out, "bad") {
		t.Fatalf("a refused schedule was stored:\n%s", out)
	}
}

// A socket deleted while the server runs left it unreachable for good, and a new serve said
// only "another server is running" (issue 11, item 8). The server now recreates it.
func TestDeletedSocketIsRecreated(t *testing.T) {
	e := newEnv(t)
	e.serve()
	e.must("agent", "run", "keep/me", "--", "sleep", "300")
	sock := socket.SocketPath(e.home)
	for _, replace := range []bool{false, true} {
		if err := os.Remove(sock); err != nil {
			t.Fatal(err)
		}
		if replace { // a plain file where the socket was
			if err := os.WriteFile(sock, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r := e.orcr("serve")
		if r.code == 0 || !strings.Contains(r.err, fmt.Sprintf("pid %d", e.srv.Process.Pid)) {
			t.Fatalf("second serve with the socket gone: exit %d: %s", r.code, r.err)
		}
		if _, err := os.Lstat(sock); err != nil && !strings.Contains(r.err, "recreates it") {
			t.Errorf("second serve does not say the socket comes back: %s", r.err)
		}
		wait.For(t, 10*time.Second, "the socket to be recreated", func() bool {
			return e.orcr("agent", "ls").code == 0
		})
		if out := e.must("agent", "ls"); !strings.Contains(out, "keep/me") {
			t.Fatalf("agents after the socket came back:\n%s", out)
		}
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("recreated socket: %v %v", st.Mode(), err)
	}
}

// A home owned by another user, holding symlinks where the server keeps its lock and log, made
// a root server truncate the lock's target and append log lines to the log's (item 9).
func TestHostileHomeIsRefusedAndLinksNotFollowed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the home to another uid")
	}
	e := newEnv(t)
	dir := t.TempDir()
	victims := map[string]string{"orcr.lock": filepath.Join(dir, "lock-target"), "orcr.log": filepath.Join(dir, "log-target")}
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range victims {
		if err := os.WriteFile(target, []byte("precious "+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(e.home, name)); err != nil {
			t.Fatal(err)
		}
	}
	untouched := func() {
		t.Helper()
		for name, target := range victims {
			if b, _ := os.ReadFile(target); string(b) != "precious "+name+"\n" {
				t.Fatalf("%s's target was written: %q", name, b)
			}
		}
	}
	if err := os.Chown(e.home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	r := e.orcr("serve")
	if r.code == 0 || !strings.Contains(r.err, "belongs to uid 65534") || !strings.Contains(r.err, "chown -R 0 "+e.home) {
		t.Fatalf("serve in a home owned by uid 65534: exit %d: %s", r.code, r.err)
	}
	untouched()
	// Owned by us but with the links in place: refused, naming the link.
	if err := os.Chown(e.home, 0, 0); err != nil {
		t.Fatal(err)
	}
	r = e.orcr("serve")
	if r.code == 0 || !strings.Contains(r.err, "is a symlink") || !strings.Contains(r.err, "rm "+e.home) {
		t.Fatalf("serve with planted links: exit %d: %s", r.code, r.err)
	}
	untouched()
	for name := range victims {
		os.Remove(filepath.Join(e.home, name))
	}
	e.serve()
	e.must("agent", "ls")
	untouched()
}
