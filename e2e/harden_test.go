package e2e

import (
	"context"
	"fmt"
	"orcr/testutil/clis"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/store"
	"orcr/testutil/wait"
)

// A cron that matches no date and an --every that overflows were accepted and then fired in a
// tight loop (issue 11, item 2); env names agent.run refuses were accepted by schedule.add.
func TestScheduleThatCouldNeverBeDueIsRefused(t *testing.T) {
	e := newEnv(t)
	e.serve()
	r := e.orcr("schedule", "add", "never", "--cron", "0 0 31 4 *", "--", "true")
	if r.Code == 0 || !strings.Contains(r.Err, "never fires") {
		t.Fatalf("cron 0 0 31 4 *: exit %d\n%s%s", r.Code, r.Out, r.Err)
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
		if r.Code == 0 || !strings.Contains(r.Err, fmt.Sprintf("pid %d", e.srv.PID())) {
			t.Fatalf("second serve with the socket gone: exit %d: %s", r.Code, r.Err)
		}
		if _, err := os.Lstat(sock); err != nil && !strings.Contains(r.Err, "recreates it") {
			t.Errorf("second serve does not say the socket comes back: %s", r.Err)
		}
		wait.For(t, 10*time.Second, "the socket to be recreated", func() bool {
			return e.orcr("agent", "ls").Code == 0
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
	clis.NeedRoot(t, "give the home to another uid")
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
	if r.Code == 0 || !strings.Contains(r.Err, "belongs to uid 65534") || !strings.Contains(r.Err, "chown -R 0 "+e.home) {
		t.Fatalf("serve in a home owned by uid 65534: exit %d: %s", r.Code, r.Err)
	}
	untouched()
	// Owned by us but with the links in place: refused, naming the link.
	if err := os.Chown(e.home, 0, 0); err != nil {
		t.Fatal(err)
	}
	r = e.orcr("serve")
	if r.Code == 0 || !strings.Contains(r.Err, "is a symlink") || !strings.Contains(r.Err, "rm "+e.home) {
		t.Fatalf("serve with planted links: exit %d: %s", r.Code, r.Err)
	}
	untouched()
	for name := range victims {
		os.Remove(filepath.Join(e.home, name))
	}
	e.serve()
	e.must("agent", "ls")
	untouched()
}

// On a full disk the server died of SIGBUS in badger's memtable write (item 7). Now writes
// answer store_unavailable, reads go on, and writes resume once there is room, all without a
// restart.
func TestServerOnFullDiskRefusesWritesAndRecovers(t *testing.T) {
	clis.NeedRoot(t, "mount a tmpfs")
	e := newEnv(t)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=96m,mode=0700", "tmpfs", e.home).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", e.home).Run() })
	e.serve()
	e.must("agent", "run", "before/full", "--", "sleep", "300")
	filler := filepath.Join(e.home, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	for i := range 20 {
		r := e.orcr("agent", "run", fmt.Sprintf("during/full%d", i), "--", "sleep", "300")
		if r.Code == 0 || !strings.Contains(r.Err, "store cannot write") {
			t.Fatalf("agent run on a full disk: exit %d: %s%s", r.Code, r.Out, r.Err)
		}
	}
	if out := e.must("agent", "ls"); !strings.Contains(out, "before/full") {
		t.Fatalf("reads on a full disk:\n%s", out)
	}
	resp := e.raw().roundTrip(`{"id":"w","method":"schedule.add","params":{"name":"full","everySeconds":60,"command":["true"],"cwd":"/"}}`)
	if resp.Error == nil || resp.Error.Code != wire.CodeStoreUnavailable {
		t.Fatalf("schedule.add on a full disk: %+v", resp.Error)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.must("agent", "run", "after/full", "--", "sleep", "300")
	out := e.must("agent", "ls")
	if !strings.Contains(out, "after/full") || strings.Contains(out, "during/") {
		t.Fatalf("after the disk has room again:\n%s", out)
	}
	select {
	case <-e.srv.Exited():
		t.Fatal("the server exited")
	default:
	}
}

// The same through the real server with the store directory unable to take new files, as on a
// read-only remount: badger's next memtable rotation left it a nil memtable and the write after
// that asserted, killing the server.
func TestServerWithUnwritableStoreRefusesWritesAndRecovers(t *testing.T) {
	e := newEnv(t)
	e.serve()
	e.must("agent", "run", "before/ro", "--", "sleep", "300")
	dir := filepath.Join(e.home, "store")
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make the store immutable here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	rc := e.raw()
	big := strings.Repeat("p", 50<<10) // under the value-log threshold: 100 of them rotate the 2 MiB memtable
	for i := range 100 {
		resp := rc.roundTrip(fmt.Sprintf(`{"id":"w","method":"agent.run","params":{"path":"during/ro%d","argv":["true"],"prompt":%q}}`, i, big))
		if resp.Error == nil || resp.Error.Code != wire.CodeStoreUnavailable {
			t.Fatalf("agent.run %d with an unwritable store: %+v", i, resp.Error)
		}
	}
	if out := e.must("agent", "ls"); !strings.Contains(out, "before/ro") {
		t.Fatalf("reads with an unwritable store:\n%s", out)
	}
	if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v %s", err, out)
	}
	e.must("agent", "run", "after/ro", "--", "sleep", "300")
	if out := e.must("agent", "ls"); !strings.Contains(out, "after/ro") {
		t.Fatalf("after the store can write again:\n%s", out)
	}
}

// A store whose MANIFEST is gone but whose tables are there was opened empty and its tables
// deleted. The server now refuses to start, says what to do, and leaves the tables.
func TestServerRefusesStoreWithoutManifest(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.home, "store")
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := st.AppendEvent(context.Background(), wire.Event{Event: wire.EventAgentState, Rule: strings.Repeat("r", 2000) + fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		if ts, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(ts) > 0 && i%100 == 0 {
			break
		}
		if i > 50000 {
			t.Fatal("no table file was written")
		}
	}
	st.Close()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err := os.Remove(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	r := e.orcr("serve")
	if r.Code == 0 || !strings.Contains(r.Err, "looks damaged") || !strings.Contains(r.Err, "mv "+dir+" "+dir+".damaged") {
		t.Fatalf("serve without MANIFEST: exit %d: %s", r.Code, r.Err)
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(after) != len(tables) {
		t.Fatalf("table files %d before, %d after", len(tables), len(after))
	}
}

// controlClients lists the control-mode clients attached to orcr's tmux server as "pid" lines.
func controlClients(t *testing.T, e *env) []string {
	t.Helper()
	out, err := exec.Command("tmux", "-S", filepath.Join(e.home, "tmux.sock"), "list-clients", "-F",
		"#{client_pid} #{client_control_mode}").Output()
	if err != nil {
		t.Fatalf("list-clients: %v", err)
	}
	var pids []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if pid, mode, ok := strings.Cut(l, " "); ok && mode == "1" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// After kill -9s of the server, control clients of the dead servers stayed attached to orcr's
// tmux server (5 after 25 kills, parent pid 1). A starting server closes those not its own.
func TestStaleTmuxControlClientsAreClosedAtStart(t *testing.T) {
	e := newTmuxEnv(t)
	e.serve()
	e.must("agent", "run", "w/a", "--", "sh", "-c", "exec cat")
	for i := range 20 {
		e.orcr("agent", "send", "w/a", fmt.Sprint("load", i))
		e.kill9()
		e.serve()
		e.must("agent", "ls")
		// Control clients the dead server left: at most ours, once the server has looked.
		var cs []string
		if !wait.Until(10*time.Second, func() bool { cs = controlClients(t, e); return len(cs) == 1 }) {
			out, _ := exec.Command("ps", "-o", "pid,ppid,stat,args", "-p", strings.Join(cs, ",")).Output()
			t.Fatalf("after kill %d: control clients %v, want only the new server's:\n%s", i+1, cs, out)
		}
	}
}
