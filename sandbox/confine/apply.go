package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// MaxKnownABI is the newest Landlock ABI this build of orcr can apply.
const MaxKnownABI = 11

// KernelABI is the Landlock ABI this kernel offers, or an error that says why there
// is none (not built in, or not enabled at boot).
func KernelABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return 0, errors.New("this kernel has no Landlock (landlock_create_ruleset: ENOSYS; Linux ≥ 5.13 built with CONFIG_SECURITY_LANDLOCK)")
	case errors.Is(err, syscall.EOPNOTSUPP):
		return 0, errors.New("Landlock is built into this kernel but not enabled at boot (add landlock to the lsm= kernel parameter)")
	case err != nil:
		return 0, fmt.Errorf("landlock_create_ruleset: %w", err)
	case v < 1:
		return 0, fmt.Errorf("this kernel reports Landlock ABI %d", v)
	}
	return v, nil
}

func configFor(abi int) landlock.Config {
	return [...]landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
		landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}[abi]
}

// Plan is a policy turned into Landlock rules at one ABI, with what was skipped.
type Plan struct {
	Config landlock.Config
	Rules  []landlock.Rule
	Report Report
}

// Build turns p into the Landlock config and rules for this kernel, without applying
// them; p.Entries is not among the rules (they are added to the ruleset made from
// them: addEntries, Rulesets). A kernel without Landlock is an error: a sandbox that was asked for never
// becomes none.
func Build(p Policy) (Plan, error) {
	pl, _, err := build(p)
	return pl, err
}

// fileID is what a path was when its rule was built: the inode a Landlock rule holds
// (a rule follows the inode it was opened on, not the name). A zero fileID is a path
// that did not exist, and was skipped.
type fileID struct{ dev, ino uint64 }

// FileID is a file's device and inode number, as StatID and FstatID give them:
// comparable, the zero value none (the sandbox's kept policies check their paths
// with it as the ruleset cache checks its own).
type FileID = fileID

// StatID is path's inode (links followed); ok false when it does not exist.
func StatID(path string) (id FileID, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// FstatID is the inode fd is open on.
func FstatID(fd int) (id FileID, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// pathID is one path a plan's rules were built from, and what it was then.
type pathID struct {
	path string
	id   fileID
}

// build is Build, with the paths its rules were opened on and their identities (what
// a cached ruleset is checked against before it is used again).
func build(p Policy) (Plan, []pathID, error) {
	cfg, rep, err := planHead(p)
	if err != nil {
		return Plan{}, nil, err
	}
	abi := rep.ABI
	var rules []landlock.Rule
	var ids []pathID
	add := func(list []string, kind listKind) {
		for _, path := range list {
			var st syscall.Stat_t
			if err := syscall.Stat(path, &st); err != nil {
				ids = append(ids, pathID{path: path})
				rep.Warnings = append(rep.Warnings, skipped(path, err))
				continue
			}
			ids = append(ids, pathID{path: path, id: fileID{dev: st.Dev, ino: st.Ino}})
			// A path can vanish between this stat and the ruleset's open (a shared
			// /tmp's entries come and go): skipped then, not a failed launch.
			mask := rights(kind, st.Mode&syscall.S_IFMT == syscall.S_IFDIR, cfg, abi)
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(mask), path).IgnoreIfMissing())
		}
	}
	for _, l := range p.lists() {
		add(l.paths, l.kind)
	}
	if p.ProcSelf {
		add([]string{fmt.Sprintf("/proc/%d", os.Getpid())}, listRO)
	}
	if p.Socket != "" && abi >= 9 {
		// From ABI 9 connecting to a pathname unix socket is a filesystem access.
		dir := filepath.Dir(p.Socket)
		var st syscall.Stat_t
		id := fileID{}
		if syscall.Stat(dir, &st) == nil {
			id = fileID{dev: st.Dev, ino: st.Ino}
		}
		ids = append(ids, pathID{path: dir, id: id})
		rules = append(rules, landlock.PathAccess(ll.AccessFSResolveUnix, dir))
	}
	rules = append(rules, netRules(p, rep)...)
	return Plan{Config: cfg, Rules: rules, Report: rep}, ids, nil
}

// planHead is the Landlock config a plan of p uses at the ABI this kernel and p allow,
// and its report before any path (what the ABI cannot confine).
func planHead(p Policy) (landlock.Config, Report, error) {
	kabi, err := KernelABI()
	if err != nil {
		return landlock.Config{}, Report{}, err
	}
	abi := min(kabi, MaxKnownABI)
	if p.MaxABI > 0 {
		abi = min(abi, p.MaxABI)
	}
	rep := Report{KernelABI: kabi, ABI: abi, Net: abi >= 4, Scoped: abi >= 6}
	cfg := configFor(abi)
	// TCP connect only: binding stays free (a test server on port 0), and UDP (ABI ≥ 10)
	// is left alone so DNS keeps working.
	cfg.HandledAccessNet &= ll.AccessNetConnectTCP
	if !rep.Net {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("network not confined: Landlock ABI %d < 4 cannot restrict TCP connect", abi))
	}
	return cfg, rep, nil
}

// netRules are the ports p may connect to, when the ABI confines connects.
func netRules(p Policy, rep Report) []landlock.Rule {
	if !rep.Net {
		return nil
	}
	var rules []landlock.Rule
	for _, port := range p.Ports {
		rules = append(rules, landlock.ConnectTCP(uint16(port)))
	}
	return rules
}

// skipped is the warning of a path of a policy that cannot be granted (it does not
// exist, or cannot be reached).
func skipped(path string, err error) string {
	return fmt.Sprintf("%s: skipped (%v)", path, err)
}

// listKind is one of a policy's lists of paths, by the rights its rules give.
type listKind int

const (
	listRW listKind = iota
	listROX
	listRO
	listDev
)

// kindedList is one of a policy's lists of paths with its kind.
type kindedList struct {
	paths []string
	kind  listKind
}

// lists are p's lists of paths granted, each with the kind of its rules, in the order
// rules are made from them (build, holdPolicy).
func (p Policy) lists() []kindedList {
	return []kindedList{{p.RW, listRW}, {p.ROX, listROX}, {p.RO, listRO}, {p.Dev, listDev}}
}

// The rights a rule of each list gives (go-landlock's RWDirs and RWFiles, RODirs and
// ROFiles make the same sets).
const (
	accessRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	accessWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym | ll.AccessFSTruncate
	// accessFileOnly are the rights that apply to a file (a rule on a file with any
	// other is refused: EINVAL).
	accessFileOnly = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile
)

// rights are the Landlock rights a rule for a path of list kind gives, on a folder or
// a file, as far as cfg handles them: read-write (and, on a folder from ABI 2, moving
// files within it), read-execute, read, or a device's read-write with its ioctls.
// Every rule of a policy is made with them — from paths (build) or from descriptors
// held (heldPolicy) — so both grant the same.
func rights(kind listKind, isDir bool, cfg landlock.Config, abi int) uint64 {
	var m uint64
	switch kind {
	case listRW:
		m = accessRead | accessWrite
		if isDir && abi >= 2 {
			m |= ll.AccessFSRefer
		}
	case listROX:
		m = accessRead
	case listRO:
		m = ll.AccessFSReadFile | ll.AccessFSReadDir
	case listDev:
		m = accessRead | accessWrite
	}
	if !isDir {
		m &= accessFileOnly
	}
	if kind == listDev {
		m |= ll.AccessFSIoctlDev
	}
	return m & uint64(cfg.HandledAccessFS)
}

// restrictThread confines the calling OS thread to p for good: the launcher's, which
// then execs the agent (p.ProcSelf grants this process's /proc/PID, which the exec
// makes the agent's). The server's own path is Rulesets.Ready.
func restrictThread(p Policy, flags uint32) (Report, error) {
	pl, err := Build(p)
	if err != nil {
		return Report{}, err
	}
	fd, fl, err := pl.Config.NewRulesetFD(pl.Rules...)
	if err != nil {
		return pl.Report, fmt.Errorf("landlock (ABI %d): %w", pl.Report.ABI, err)
	}
	if fd < 0 {
		return pl.Report, fmt.Errorf("landlock (ABI %d): nothing to restrict", pl.Report.ABI)
	}
	defer syscall.Close(fd)
	if p.Entries != nil {
		dm, fm := rwMasks(pl.Config, pl.Report.ABI)
		warn, err := addEntries(fd, p.Entries, dm, fm)
		if err != nil {
			return pl.Report, err
		}
		if warn != "" {
			pl.Report.Warnings = append(pl.Report.Warnings, warn)
		}
	}
	if pl.Report.ABI < 7 {
		flags = 0
	}
	if err := restrictSelf(fd, fl|flags); err != nil {
		return pl.Report, fmt.Errorf("landlock (ABI %d): %w", pl.Report.ABI, err)
	}
	return pl.Report, nil
}
