package sandbox

import (
	"encoding/binary"
	"testing"
)

// Records as this kernel (6.18) writes them: a denied write, the domain's first
// record, the system call; the event maps to the agent whose process tree holds the
// denied process, and its last denial is the path, the access and the process.
func TestAuditEvent(t *testing.T) {
	var asked []int
	l := &auditLog{self: 100, resolve: func(pids []int) string {
		asked = pids
		return "agent-1"
	}, pending: map[string]*auditEvent{}, domains: map[string]string{}, last: map[string]Denial{}}
	frame := func(typ int, text string) []byte {
		b := make([]byte, 16+len(text))
		binary.NativeEndian.PutUint32(b, uint32(len(b)))
		binary.NativeEndian.PutUint16(b[4:], uint16(typ))
		copy(b[16:], text)
		return b
	}
	var dgram []byte
	dgram = append(dgram, frame(1423, `audit(1796217477.495:2): domain=16ecb0623 blockers=fs.make_reg path="/root/x" dev="vda" ino=1224`)...)
	for len(dgram)%4 != 0 {
		dgram = append(dgram, 0)
	}
	dgram = append(dgram, frame(1424, `audit(1796217477.495:2): domain=16ecb0623 status=allocated mode=enforcing pid=100 uid=0 exe="/usr/bin/orcr" comm="orcr"`)...)
	auditFrames(dgram, l.record)
	auditFrames(frame(1300, `audit(1796217477.495:2): arch=c000003e syscall=257 success=no exit=-13 ppid=200 pid=201 comm="sh" exe="/usr/bin/dash"`), l.record)
	d, ok := l.lastOf("agent-1")
	if !ok || d.Access != "fs.make_reg" || d.Object != "/root/x" || d.PID != 201 || d.Comm != "sh" || d.When.Unix() != 1796217477 {
		t.Fatalf("denial %+v %v", d, ok)
	}
	if len(asked) != 2 || asked[0] != 201 || asked[1] != 200 {
		t.Fatalf("resolved from %v, want the refused process and its parent (not the server's own pid)", asked)
	}
	// A connect, with a hex-encoded comm; the domain is known now.
	auditFrames(frame(1423, `audit(1796217478.001:3): domain=16ecb0623 blockers=net.connect_tcp daddr=127.0.0.1 dest=5432`), l.record)
	auditFrames(frame(1300, `audit(1796217478.001:3): pid=202 ppid=200 comm=6D7920636D64`), l.record)
	if d, _ := l.lastOf("agent-1"); d.Object != "127.0.0.1:5432" || d.Comm != "my cmd" {
		t.Fatalf("connect denial %+v", d)
	}
	// Other audit records are ignored; a system call record with no Landlock one too.
	auditFrames(frame(1300, `audit(1796217479.000:4): pid=1 comm="init"`), l.record)
	if len(l.pending) != 0 {
		t.Fatalf("pending %v", l.pending)
	}
}

func FuzzAuditRecord(f *testing.F) {
	f.Add(1423, `audit(1796217477.495:2): domain=16ecb0623 blockers=fs.make_reg path="/root" dev="vda" ino=1224`)
	f.Add(1300, `audit(1.2:3): pid=5 comm=6869`)
	f.Fuzz(func(t *testing.T, typ int, text string) {
		l := &auditLog{resolve: func([]int) string { return "a" }, pending: map[string]*auditEvent{},
			domains: map[string]string{}, last: map[string]Denial{}}
		l.record(typ, text)
		b := []byte(text)
		auditFrames(b, func(int, string) {})
	})
}
