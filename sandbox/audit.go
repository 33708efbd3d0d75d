package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"orcr/core/wire"
)

// Landlock's denials reach the kernel's audit subsystem (ABI ≥ 7, when the domain was
// made with LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON): one event per denial, several
// records sharing a serial — AUDIT_LANDLOCK_ACCESS (what was refused), the domain's
// AUDIT_LANDLOCK_DOMAIN on its first denial (who made it), AUDIT_SYSCALL (the process
// refused). The feature reads them from the audit netlink socket's read-log multicast
// group, which needs CAP_AUDIT_READ, and only sees records while the kernel's audit is
// on (`auditctl -e 1`): orcr never switches it on itself.
const (
	netlinkAudit       = 9 // NETLINK_AUDIT
	auditGroupReadLog  = 1 // AUDIT_NLGRP_READLOG
	auditGet           = 1000
	auditSyscall       = 1300
	auditLandlockAcces = 1423 // AUDIT_LANDLOCK_ACCESS
	auditLandlockDom   = 1424 // AUDIT_LANDLOCK_DOMAIN
	maxDomains         = 4096 // domains remembered (an agent each, at most)
)

// Denial is one access Landlock refused an agent.
type Denial struct {
	When time.Time
	// Access is what was refused, Landlock's blockers ("fs.write_file",
	// "net.connect_tcp").
	Access string
	// Object is the path, or the address and port, refused.
	Object string
	// PID and Comm are the process refused.
	PID  int
	Comm string
}

// auditRecord is one record's fields.
type auditRecord struct {
	typ    int
	serial string
	when   time.Time
	kv     map[string]string
}

// parseAuditRecord reads `audit(SEC.MS:SERIAL): k=v k="v" …` (values quoted, bare,
// or hex-encoded as the kernel writes untrusted strings).
func parseAuditRecord(typ int, text string) (auditRecord, bool) {
	rest, ok := strings.CutPrefix(text, "audit(")
	if !ok {
		return auditRecord{}, false
	}
	stamp, rest, ok := strings.Cut(rest, "):")
	if !ok {
		return auditRecord{}, false
	}
	ts, serial, ok := strings.Cut(stamp, ":")
	if !ok {
		return auditRecord{}, false
	}
	r := auditRecord{typ: typ, serial: serial, kv: map[string]string{}}
	if sec, ms, ok := strings.Cut(ts, "."); ok {
		s, err1 := strconv.ParseInt(sec, 10, 64)
		m, err2 := strconv.ParseInt(ms, 10, 64)
		if err1 == nil && err2 == nil && m >= 0 && m < 1000 {
			r.when = time.Unix(s, m*int64(time.Millisecond))
		}
	}
	for f := range strings.FieldsSeq(rest) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			continue
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		} else if k == "path" || k == "exe" || k == "comm" {
			if b, err := hex.DecodeString(v); err == nil {
				v = string(b)
			}
		}
		if len(r.kv) < 64 {
			r.kv[k] = v
		}
	}
	return r, true
}

// auditLog follows the audit read-log group and keeps the last denial of each agent.
type auditLog struct {
	fd      int
	resolve func(pids []int) string // agent ID of the first pid in an agent's tree
	self    int

	mu      sync.Mutex             // guards the maps; never held while listing agents
	pending map[string]*auditEvent // by serial
	domains map[string]string      // Landlock domain → agent ID ("" unresolved)
	last    map[string]Denial      // agent ID → its last denial
}

type auditEvent struct {
	access, domain, syscall *auditRecord
}

// openAuditLog binds the read-log group; the error says why denials cannot be read.
func openAuditLog() (int, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, netlinkAudit)
	if err != nil {
		return -1, fmt.Errorf("no audit netlink socket: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: 1 << (auditGroupReadLog - 1)}); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("cannot read the kernel's audit log (%w; it needs CAP_AUDIT_READ, which a server run as root has)", err)
	}
	return fd, nil
}

// auditEnabled asks the kernel whether its audit is on (AUDIT_GET).
func auditEnabled() (bool, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, netlinkAudit)
	if err != nil {
		return false, err
	}
	defer syscall.Close(fd)
	req := make([]byte, 16)
	binary.NativeEndian.PutUint32(req[0:], 16)
	binary.NativeEndian.PutUint16(req[4:], auditGet)
	binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return false, err
	}
	tv := syscall.Timeval{Sec: 1}
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	buf := make([]byte, 4096)
	for range 4 {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return false, err
		}
		if n < 16 {
			continue
		}
		switch binary.NativeEndian.Uint16(buf[4:]) {
		case auditGet:
			if n < 16+8 {
				return false, errors.New("short AUDIT_GET reply")
			}
			return binary.NativeEndian.Uint32(buf[20:]) != 0, nil
		case syscall.NLMSG_ERROR:
			if n >= 20 {
				if e := int32(binary.NativeEndian.Uint32(buf[16:])); e != 0 {
					return false, syscall.Errno(-e)
				}
			}
		}
	}
	return false, errors.New("no AUDIT_GET reply")
}

// run reads records until ctx ends (the socket is closed then).
func (l *auditLog) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		syscall.Shutdown(l.fd, syscall.SHUT_RDWR)
		syscall.Close(l.fd)
	}()
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(l.fd, buf, 0)
		if err != nil {
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ENOBUFS) {
				continue
			}
			return
		}
		auditFrames(buf[:n], l.record)
	}
}

// auditFrames splits a netlink datagram into its messages (type, text); a malformed
// length ends it.
func auditFrames(b []byte, fn func(typ int, text string)) {
	for len(b) >= 16 {
		size := int(binary.NativeEndian.Uint32(b[0:]))
		if size < 16 || size > len(b) {
			return
		}
		fn(int(binary.NativeEndian.Uint16(b[4:])), strings.TrimRight(string(b[16:size]), "\x00\n"))
		b = b[min((size+3)&^3, len(b)):]
	}
}

// record adds one record; an event is complete at its AUDIT_SYSCALL record (or, for
// a denial with no system call, when the next event starts).
func (l *auditLog) record(typ int, text string) {
	if typ != auditLandlockAcces && typ != auditLandlockDom && typ != auditSyscall {
		return
	}
	r, ok := parseAuditRecord(typ, text)
	if !ok {
		return
	}
	for _, ev := range l.add(r) {
		l.finish(ev)
	}
}

// add files r under its event and returns the events it completed.
func (l *auditLog) add(r auditRecord) (done []*auditEvent) {
	typ := r.typ
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.pending[r.serial]
	if ev == nil {
		if typ == auditSyscall {
			return nil // no Landlock record came first: not ours
		}
		for s, old := range l.pending { // an event without a syscall record
			done = append(done, old)
			delete(l.pending, s)
		}
		ev = &auditEvent{}
		l.pending[r.serial] = ev
	}
	switch typ {
	case auditLandlockAcces:
		ev.access = &r
	case auditLandlockDom:
		ev.domain = &r
	case auditSyscall:
		ev.syscall = &r
		done = append(done, ev)
		delete(l.pending, r.serial)
	}
	return done
}

// finish maps a complete event to its agent (through the domain, learnt once) and
// keeps it as the agent's last denial. The agents are listed without the lock held.
func (l *auditLog) finish(ev *auditEvent) {
	if ev.access == nil {
		return
	}
	dom := ev.access.kv["domain"]
	l.mu.Lock()
	id := l.domains[dom]
	l.mu.Unlock()
	if id == "" {
		var pids []int
		add := func(r *auditRecord, key string) {
			if r == nil {
				return
			}
			if p, err := strconv.Atoi(r.kv[key]); err == nil && p > 1 && p != l.self {
				pids = append(pids, p)
			}
		}
		add(ev.domain, "pid") // the launcher that made the domain is the agent's process
		add(ev.syscall, "pid")
		add(ev.syscall, "ppid")
		if id = l.resolve(pids); id == "" {
			return
		}
		l.mu.Lock()
		if len(l.domains) >= maxDomains {
			clear(l.domains)
		}
		l.domains[dom] = id
		l.mu.Unlock()
	}
	d := Denial{When: ev.access.when, Access: ev.access.kv["blockers"]}
	switch {
	case ev.access.kv["path"] != "":
		d.Object = ev.access.kv["path"]
	case ev.access.kv["dest"] != "":
		d.Object = ev.access.kv["daddr"] + ":" + ev.access.kv["dest"]
	default:
		for _, k := range []string{"opid", "ocomm", "name"} {
			if v := ev.access.kv[k]; v != "" {
				d.Object += k + "=" + v + " "
			}
		}
		d.Object = strings.TrimSpace(d.Object)
	}
	if ev.syscall != nil {
		d.PID, _ = strconv.Atoi(ev.syscall.kv["pid"])
		d.Comm = ev.syscall.kv["comm"]
	}
	l.mu.Lock()
	if len(l.last) >= maxDomains {
		clear(l.last)
	}
	l.last[id] = d
	l.mu.Unlock()
}

// lastOf is an agent's last denial.
func (l *auditLog) lastOf(id string) (Denial, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.last[id]
	return d, ok
}

// parentOf is pid's parent from /proc/PID/stat (0 when gone).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// agentOfPIDs is the ID of the confined agent whose process tree holds one of pids:
// each pid and its ancestors (up to 64) against the agents' pane processes.
func (f *Feature) agentOfPIDs(pids []int) string {
	if len(pids) == 0 || f.k == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	agents, err := f.k.List(ctx, wire.ListParams{})
	if err != nil {
		return ""
	}
	byPID := map[int]string{}
	for _, a := range agents {
		if a.PID > 0 && a.Sandbox.On() {
			byPID[a.PID] = a.ID
		}
	}
	self := os.Getpid()
	for _, p := range pids {
		for i := 0; p > 1 && p != self && i < 64; i++ {
			if id, ok := byPID[p]; ok {
				return id
			}
			p = parentOf(p)
		}
	}
	return ""
}
