package e2e

import (
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/testutil/clis"
	"orcr/testutil/wait"
)

// auditSet switches the kernel's audit on or off (AUDIT_SET, enabled) and returns
// whether it was on before.
func auditSet(t *testing.T, on bool) (was bool) {
	t.Helper()
	ask := func(typ uint16, body []byte) []byte {
		fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 9)
		if err != nil {
			t.Fatalf("audit socket: %v", err)
		}
		defer syscall.Close(fd)
		req := make([]byte, 16+len(body))
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], typ)
		binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK)
		copy(req[16:], body)
		if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
			t.Fatalf("audit: %v", err)
		}
		tv := syscall.Timeval{Sec: 2}
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
		buf := make([]byte, 4096)
		for range 4 {
			n, _, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil {
				t.Fatalf("audit reply: %v", err)
			}
			if n >= 20 && binary.NativeEndian.Uint16(buf[4:]) == syscall.NLMSG_ERROR {
				if e := int32(binary.NativeEndian.Uint32(buf[16:])); e != 0 {
					t.Fatalf("audit %d: %v", typ, syscall.Errno(-e))
				}
				if typ != 1000 {
					return nil
				}
				continue
			}
			if binary.NativeEndian.Uint16(buf[4:]) == typ {
				return append([]byte(nil), buf[16:n]...)
			}
		}
		t.Fatal("no audit reply")
		return nil
	}
	st := ask(1000, nil) // AUDIT_GET
	was = len(st) >= 8 && binary.NativeEndian.Uint32(st[4:]) != 0
	body := make([]byte, 40)
	binary.NativeEndian.PutUint32(body[0:], 1) // AUDIT_STATUS_ENABLED
	if on {
		binary.NativeEndian.PutUint32(body[4:], 1)
	}
	ask(1001, body) // AUDIT_SET
	return was
}

// TestSandboxDenialFromAudit: with the kernel's audit on, `agent get --explain` shows
// the last access Landlock refused a confined agent — the path, the access and the
// process — read from the audit log, on the pty host (confined from a server thread,
// the default, root included), on tmux and on the pty host forced to the launcher
// (ORCR_SANDBOX_IN_PROCESS=0); with audit off it says so and why.
func TestSandboxDenialFromAudit(t *testing.T) {
	clis.NeedRoot(t, "read and switch the kernel's audit log")
	for _, host := range []string{"pty", "tmux", "pty-launcher"} {
		t.Run(host, func(t *testing.T) {
			var extra []string
			switch host {
			case "tmux":
				extra = []string{"ORCR_HOST=tmux", "TMUX_TMPDIR=" + t.TempDir()}
			case "pty-launcher":
				extra = []string{"ORCR_SANDBOX_IN_PROCESS=0"}
			}
			s := newSandboxEnv(t, extra...)
			if host == "tmux" {
				t.Cleanup(func() { exec.Command("tmux", "-S", filepath.Join(s.home, "tmux.sock"), "kill-server").Run() })
			}
			s.serve()
			was := auditSet(t, false)
			t.Cleanup(func() { auditSet(t, was) })

			s.must("agent", "run", "box/off", "--sandbox", "--cwd", s.work, "--", "sh", "-c", "exec cat")
			wait.For(t, 20*time.Second, "the agent's report", func() bool {
				return strings.Contains(s.orcr("agent", "get", "box/off", "--explain").Out, "on: Landlock ABI")
			})
			ex := s.must("agent", "get", "box/off", "--explain")
			if !strings.Contains(ex, "the kernel's audit is off") {
				t.Fatalf("--explain with audit off:\n%s", ex)
			}
			if inProcess := strings.Contains(ex, "no launcher"); inProcess != (host == "pty") {
				t.Fatalf("confined by the server's thread: %v on %s:\n%s", inProcess, host, ex)
			}

			auditSet(t, true)
			target := filepath.Join(s.outside, "denied.txt")
			s.must("agent", "run", "box/a", "--sandbox", "--cwd", s.work, "--", "sh", "-c",
				"sleep 0.5; echo x > "+target+"; echo tried; exec cat")
			ex = ""
			deadline := time.Now().Add(wait.Scale(20 * time.Second))
			for {
				r := s.orcr("agent", "get", "box/a", "--explain")
				ex = r.Out + r.Err
				if strings.Contains(ex, "refused last") && strings.Contains(ex, "fs.") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no denial in --explain:\n%s", ex)
				}
				time.Sleep(100 * time.Millisecond)
			}
			for _, w := range []string{"fs.make_reg", s.outside, "by sh", "(the kernel's audit log)"} {
				if !strings.Contains(ex, w) {
					t.Errorf("--explain lacks %q:\n%s", w, ex)
				}
			}
			if strings.Contains(ex, "audit\tnot read") || strings.Contains(ex, "audit  ") && strings.Contains(ex, "not read:") {
				t.Errorf("--explain says the audit log is not read:\n%s", ex)
			}
		})
	}
}
