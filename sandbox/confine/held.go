package confine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// heldPolicy is a policy whose paths are opened once (O_PATH), each with the rights
// of its rule: the part that agents in folders of their own share, from which every
// spare ruleset after the first is made (spares). A spare from it is a
// landlock_create_ruleset and a landlock_add_rule per path, where one from the paths
// (newRuleset) is a stat, an open, a landlock_add_rule and a close per path — ~25
// paths, ~0.25 ms of CPU on this two-CPU VM, made beside each new policy's agent
// starting. The rules hold the inodes the descriptors were opened on, which ids
// record: a spare is checked against its paths before it is used (ruleset.valid), and
// one found changed has the held policy dropped (spares.forget) and opened again.
//
// A descriptor held keeps its mount busy (umount answers EBUSY, where a ruleset's
// rule does not), so a held policy not used for heldIdle is closed.
type heldPolicy struct {
	cfg   landlock.Config
	net   []landlock.Rule
	rules []heldRule
	ids   []pathID
	rep   Report
	// mu guards the descriptors against close while a ruleset is made from them.
	mu     sync.Mutex
	closed bool
	idle   *time.Timer
}

type heldRule struct {
	fd   int
	mask uint64
}

// heldIdle is how long a held policy stays open unused.
var heldIdle = 2 * time.Minute

// holdPolicy opens p's paths (p.Entries and p.ProcSelf aside, as the spares' policies
// have neither) and records what build would: the same rules, skipped paths and
// warnings.
func holdPolicy(p Policy) (*heldPolicy, error) {
	if p.Entries != nil || p.ProcSelf {
		return nil, errors.New("confine: a held policy has no entries and no /proc/PID")
	}
	cfg, rep, err := planHead(p)
	if err != nil {
		return nil, err
	}
	h := &heldPolicy{cfg: cfg, rep: rep, net: netRules(p, rep)}
	hold := func(path string, kind listKind, missingOK bool) error {
		fd, err := syscall.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if !missingOK {
				return fmt.Errorf("open %s: %w", path, err)
			}
			h.ids = append(h.ids, pathID{path: path})
			h.rep.Warnings = append(h.rep.Warnings, skipped(path, err))
			return nil
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			syscall.Close(fd)
			return fmt.Errorf("fstat %s: %w", path, err)
		}
		h.ids = append(h.ids, pathID{path: path, id: fileID{dev: st.Dev, ino: st.Ino}})
		if mask := rights(kind, st.Mode&syscall.S_IFMT == syscall.S_IFDIR, cfg, rep.ABI); mask != 0 {
			h.rules = append(h.rules, heldRule{fd: fd, mask: mask})
		} else {
			syscall.Close(fd)
		}
		return nil
	}
	for _, l := range p.lists() {
		for _, path := range l.paths {
			if err := hold(path, l.kind, true); err != nil {
				h.close()
				return nil, err
			}
		}
	}
	if p.Socket != "" && rep.ABI >= 9 {
		// build's rule for the socket's folder (connecting to a pathname socket is a
		// filesystem access from ABI 9) is not skipped when it is missing.
		dir := filepath.Dir(p.Socket)
		fd, err := syscall.Open(dir, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
		id, _ := FstatID(fd)
		h.ids = append(h.ids, pathID{path: dir, id: id})
		h.rules = append(h.rules, heldRule{fd: fd, mask: ll.AccessFSResolveUnix & uint64(cfg.HandledAccessFS)})
	}
	return h, nil
}

// ruleset is a new ruleset of h's rules, as newRuleset would build it from its paths.
func (h *heldPolicy) ruleset() (*ruleset, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("confine: held policy closed")
	}
	if h.idle != nil {
		h.idle.Reset(heldIdle)
	}
	fd, fl, err := h.cfg.NewRulesetFD(h.net...)
	if err != nil {
		return nil, fmt.Errorf("landlock (ABI %d): %w", h.rep.ABI, err)
	}
	if fd < 0 {
		return nil, fmt.Errorf("landlock (ABI %d): nothing to restrict", h.rep.ABI)
	}
	for _, r := range h.rules {
		attr := ll.PathBeneathAttr{ParentFd: r.fd, AllowedAccess: r.mask}
		if err := ll.LandlockAddPathBeneathRule(fd, &attr, 0); err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("landlock_add_rule: %w", err)
		}
	}
	rs := &ruleset{fd: fd, flags: fl, rep: h.rep, ids: slices.Clone(h.ids)}
	rs.rep.Warnings = slices.Clone(h.rep.Warnings)
	rs.dirMask, rs.fileMask = rwMasks(h.cfg, h.rep.ABI)
	return rs, nil
}

// close closes h's descriptors; no ruleset is made from it after.
func (h *heldPolicy) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	if h.idle != nil {
		h.idle.Stop()
	}
	for _, r := range h.rules {
		syscall.Close(r.fd)
	}
	h.rules = nil
}
