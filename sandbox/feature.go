// Package sandbox is DESIGN §16: agents confined with Linux Landlock. It is a feature
// beside the kernel: at each launch of an agent whose sandbox is on it builds the
// policy (the agent's folder, /tmp, its provider's state read-write; the toolchain and
// the provider's install read-execute; TCP connects to 443 and the model server's
// port; orcr's socket), writes it beside the agent's state and puts `orcr sandbox exec
// --policy FILE --` in front of the agent's command (core.LaunchWrapper), so the pane's
// program restricts itself and execs the agent, whose whole process tree stays
// confined. A sandbox asked for where the kernel has no Landlock refuses the spawn
// with the reason; it never runs the agent unconfined.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"orcr/core"
	"orcr/core/wire"

	sbapi "orcr/sandbox/api"
	"orcr/sandbox/confine"
)

// Files in an agent's state directory.
const (
	PolicyFile = "sandbox-policy.json"
	ReportFile = "sandbox-report.json"
)

// Options configure the feature.
type Options struct {
	// Home is ORCR_HOME (agents' state directories are under it).
	Home string
	// Self is the orcr binary the panes run as the launcher.
	Self string
	// Socket is the server's socket, kept reachable from inside.
	Socket string
	// Config is orcr's config folder (config.toml, secrets.toml): like Home, no grant
	// may contain it.
	Config string
	// MaxABI caps the Landlock ABI applied (0: none; NoLandlock: as on a kernel
	// without Landlock); ORCR_SANDBOX_MAX_ABI sets it (MaxABIFromEnv), to see what an
	// older kernel would confine.
	MaxABI int
	// InProcess chooses who confines the agent of a host that forks the program
	// itself (pty): the server, from a thread of its own (one process start less per
	// spawn: the launcher is a whole orcr process), or the launcher in the pane.
	// InProcessAuto (ORCR_SANDBOX_IN_PROCESS unset) and InProcessOn are the server,
	// whoever runs it, root included: the confined thread drops every capability
	// before the fork (confine.dropCapabilities), so the agent holds none, reads /proc
	// as a whole — its own /proc/self included — and Landlock keeps every other
	// process's environ, maps and memory closed to it. InProcessOff forces the
	// launcher.
	InProcess InProcessMode
	Logger    *slog.Logger
	// KernelABI replaces the kernel probe (tests of a kernel without Landlock).
	KernelABI func() (int, error)
}

// Feature is the sandbox room.
type Feature struct {
	o   Options
	k   core.Kernel
	log *slog.Logger

	once   sync.Once
	abi    int
	abiErr error

	// keep is what no grant may contain (orcr's home, its config folder), resolved
	// once.
	keepOnce sync.Once
	keep     []keptDir

	// audit reads the kernel's audit log for the agents' denials; auditErr says why
	// it does not (no CAP_AUDIT_READ, ABI < 7).
	audit    *auditLog
	auditErr error
	stop     context.CancelFunc

	// inProcess: the pty host's agents are confined from a server thread (and get
	// /proc as a whole); rulesets are the Landlock rulesets built for them, one per
	// distinct policy.
	inProcess bool
	rulesets  confine.Rulesets

	// builds keeps the policies built, per launch inputs, while what they were made
	// from holds (buildcache.go).
	builds builds

	// files are the policy and report files of in-process launches not written yet,
	// by agent ID (the latest launch's): only --explain reads them on that path, so
	// they are written once no confined launch came for filesIdle (a burst of spawns
	// does not pay their file creations: 1–3 ms of the kernel's time per spawn on this
	// machine's ext4 under load, beside the agent's own start), when maxPending wait,
	// when explain asks for an agent's (written), and at Close.
	wmu     sync.Mutex
	files   map[string]func()
	filesT  *time.Timer
	closed  bool
	writing sync.Mutex // held while files are written: one writer, in the order taken
}

// filesIdle is how long after the last confined launch its files are written.
var filesIdle = 250 * time.Millisecond

// maxPending bounds the launches whose files wait (a few KiB each).
const maxPending = 512

var (
	_ core.Feature       = (*Feature)(nil)
	_ core.LaunchWrapper = (*Feature)(nil)
	_ core.SpawnChecker  = (*Feature)(nil)
)

// New returns the feature.
func New(o Options) *Feature {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.KernelABI == nil {
		o.KernelABI = confine.KernelABI
	}
	if o.MaxABI == NoLandlock {
		o.MaxABI = 0
		o.KernelABI = func() (int, error) {
			return 0, errors.New("Landlock is switched off for this server by ORCR_SANDBOX_MAX_ABI=0 (as on a kernel without it)")
		}
	}
	f := &Feature{o: o, log: o.Logger}
	f.inProcess = o.InProcess != InProcessOff
	return f
}

func (f *Feature) Name() string { return "sandbox" }

func (f *Feature) Start(ctx context.Context, k core.Kernel) error {
	f.k = k
	k.AddGate(f)
	k.AddLaunchHook(f)
	k.Provide(Capability, f)
	f.startAudit()
	return nil
}

// startAudit follows the kernel's audit log when it can (ABI ≥ 7, CAP_AUDIT_READ).
func (f *Feature) startAudit() {
	abi, err := f.kernel()
	if err != nil {
		f.auditErr = err
		return
	}
	applied := min(abi, confine.MaxKnownABI)
	if f.o.MaxABI > 0 {
		applied = min(applied, f.o.MaxABI)
	}
	if applied < 7 {
		f.auditErr = fmt.Errorf("Landlock logs denials from ABI 7; this server applies ABI %d", applied)
		return
	}
	fd, err := openAuditLog()
	if err != nil {
		f.auditErr = err
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.stop = cancel
	f.audit = &auditLog{fd: fd, self: os.Getpid(), resolve: f.agentOfPIDs,
		pending: map[string]*auditEvent{}, domains: map[string]string{}, last: map[string]Denial{}}
	go f.audit.run(ctx)
}

func (f *Feature) Close() error {
	if f.stop != nil {
		f.stop()
	}
	f.wmu.Lock()
	f.closed = true
	if f.filesT != nil {
		f.filesT.Stop()
	}
	f.wmu.Unlock()
	f.writeFiles()
	f.rulesets.Close()
	f.builds.Close()
	return nil
}

// afterStart keeps fn (an in-process launch's files) to run off the spawn's path:
// once no confined launch came for filesIdle, or at once when maxPending wait. It
// replaces the agent's earlier launch's, not written yet (the same files).
func (f *Feature) afterStart(id string, fn func()) {
	f.wmu.Lock()
	if f.closed {
		f.wmu.Unlock() // writing is taken before wmu
		f.writing.Lock()
		defer f.writing.Unlock()
		fn()
		return
	}
	defer f.wmu.Unlock()
	if f.files == nil {
		f.files = map[string]func(){}
	}
	f.files[id] = fn
	switch {
	case len(f.files) >= maxPending:
		go f.writeFiles()
	case f.filesT == nil:
		f.filesT = time.AfterFunc(filesIdle, f.writeFiles)
	default:
		f.filesT.Reset(filesIdle)
	}
}

// writeFiles writes every launch's files that wait.
func (f *Feature) writeFiles() {
	f.writing.Lock()
	defer f.writing.Unlock()
	f.wmu.Lock()
	files := f.files
	f.files = nil
	f.wmu.Unlock()
	for _, fn := range files {
		fn()
	}
}

// forget drops the agent's files still waiting (a launch that writes its own now),
// once any being written are.
func (f *Feature) forget(id string) {
	f.writing.Lock()
	defer f.writing.Unlock()
	f.wmu.Lock()
	delete(f.files, id)
	f.wmu.Unlock()
}

// written writes the files of the agent's last launch if they wait, and returns once
// they are written (by this call or by a writer that took them before).
func (f *Feature) written(ctx context.Context, id string) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.writing.Lock()
		defer f.writing.Unlock()
		f.wmu.Lock()
		fn := f.files[id]
		delete(f.files, id)
		f.wmu.Unlock()
		if fn != nil {
			fn()
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kept is what no grant may contain: orcr's home (its store, every agent's state and
// socket) and its config folder (secrets.toml), their links resolved once.
func (f *Feature) kept() []keptDir {
	f.keepOnce.Do(func() {
		for _, k := range []keptDir{
			{f.o.Home, "orcr's home (its store, the other agents' state and sockets)"},
			{f.o.Config, "orcr's config folder (config.toml, secrets.toml)"},
		} {
			if k.path == "" || !filepath.IsAbs(k.path) {
				continue
			}
			if r, err := filepath.EvalSymlinks(k.path); err == nil {
				k.path = r
			}
			f.keep = append(f.keep, keptDir{filepath.Clean(k.path), k.what})
		}
	})
	return f.keep
}

// Capability is the name the feature provides itself under: the nodes feature reads
// the Landlock this server applies through it (Landlock), which a node reports to its
// coordinator and placement weighs.
const Capability = "sandbox"

// Landlock is the Landlock ABI this server confines agents with: the kernel's, capped
// by what this build applies and by ORCR_SANDBOX_MAX_ABI. The error says why it
// confines nothing (a sandboxed agent is then refused here).
func (f *Feature) Landlock() (int, error) {
	abi, err := f.kernel()
	if err != nil {
		return 0, err
	}
	abi = min(abi, confine.MaxKnownABI)
	if f.o.MaxABI > 0 {
		abi = min(abi, f.o.MaxABI)
	}
	return abi, nil
}

// elsewhere says whether another machine's Landlock may confine p: the nodes feature
// (provided as "nodes") says so of an agent pinned to a node, whose own server
// confines it or refuses it, and of one placement may put on a node that confines.
// This machine's kernel then does not refuse the spawn; placement keeps the agent off
// a machine that cannot confine it.
func (f *Feature) elsewhere(p wire.RunParams) bool {
	if f.k == nil {
		return false
	}
	c, ok := core.Lookup[interface{ ConfinesElsewhere(wire.RunParams) bool }](f.k, "nodes")
	return ok && c.ConfinesElsewhere(p)
}

// kernel is the Landlock ABI, probed once.
func (f *Feature) kernel() (int, error) {
	f.once.Do(func() { f.abi, f.abiErr = f.o.KernelABI() })
	return f.abi, f.abiErr
}

// Admit implements core.Gate: the sandbox holds nothing back.
func (f *Feature) Admit(context.Context, wire.Agent) (bool, string, time.Time) {
	return true, "", time.Time{}
}

// CheckSpawn implements core.SpawnChecker: a sandbox asked for on a kernel without
// Landlock (unless another machine's may confine it: elsewhere), or a grant with
// "..", is refused when the agent is asked for.
func (f *Feature) CheckSpawn(_ context.Context, p wire.RunParams) error {
	if !p.Sandbox.On() {
		return nil
	}
	if _, err := f.kernel(); err != nil && !f.elsewhere(p) {
		return wire.Errorf(wire.CodeInvalidParams, "%s asks for a sandbox, and %v; orcr will not run it unconfined "+
			"(run it with --sandbox=off to run it without one)", p.Path, err)
	}
	// The grants asked for are checked as the launch will check them ("..", $HOME
	// itself, a credentials folder, through links), so a bad one is refused here
	// instead of recording an agent that then fails.
	home := os.Getenv("HOME")
	if h, ok := p.Env["HOME"]; ok {
		home = h
	}
	var notes []string
	g := granter{home: home, notes: &notes, keep: f.kept()}
	if p.Cwd != "" && filepath.IsAbs(p.Cwd) {
		// The agent's folder is granted read-write: one that holds orcr's home would
		// give the agent the store, the other agents' state and sockets.
		var got []string
		if err := g.grant(&got, p.Cwd, "the agent's folder", true); err != nil {
			return wire.Errorf(wire.CodeInvalidParams, "sandbox of %s: %v", p.Path, err)
		}
	}
	for _, list := range [][]string{p.Sandbox.RW, p.Sandbox.ROX} {
		for _, d := range list {
			x, err := confine.ExpandHome(d, cmp.Or(home, "/home"))
			if err == nil {
				var got []string
				err = g.grant(&got, x, "asked for", true)
			}
			if err != nil {
				return wire.Errorf(wire.CodeInvalidParams, "sandbox of %s: %v", p.Path, err)
			}
		}
	}
	for _, port := range p.Sandbox.Ports {
		if port < 1 || port > 65535 {
			return wire.Errorf(wire.CodeInvalidParams, "sandbox of %s: port %d is not a TCP port (1–65535)", p.Path, port)
		}
	}
	return nil
}

// BeforeLaunch implements core.LaunchHook (the work is in WrapLaunch).
func (f *Feature) BeforeLaunch(context.Context, wire.Agent, bool) error { return nil }

// WrapLaunch implements core.LaunchWrapper: a confined agent's pane runs orcr's
// launcher with the policy written for this launch.
func (f *Feature) WrapLaunch(_ context.Context, a wire.Agent, spec *core.LaunchSpec, needs core.Confinement) (bool, error) {
	if !a.Sandbox.On() {
		return false, nil
	}
	if _, err := f.kernel(); err != nil {
		return false, fmt.Errorf("%s asks for a sandbox, and %v; orcr will not run it unconfined", a.Path, err)
	}
	if f.o.Self == "" || f.o.Home == "" {
		return false, fmt.Errorf("%s asks for a sandbox, and this server knows no orcr binary or home to confine it with", a.Path)
	}
	dir := filepath.Join(f.o.Home, "agents", a.ID)
	shared, err := f.privateTmp(a, spec)
	if err != nil {
		return false, err
	}
	file := filepath.Join(dir, PolicyFile)
	own := spec.Argv
	// A host that forks the program itself (pty) confines it from a server thread
	// (Options.InProcess): one process start less per spawn, and the policy file,
	// which only --explain reads then, is written once the launches pause. Any other
	// host runs the launcher, which reads the file: written before the pane starts.
	// Only the pty host applies Confine (tmux, herdr and nodes run the launcher's argv).
	if !f.inProcess || a.Host != "pty" || a.Node != "" {
		p, _, err := f.buildSeen(a, spec, needs, shared, f.inProcess)
		if err != nil {
			return false, fmt.Errorf("sandbox of %s: %w", a.Path, err)
		}
		f.policyFields(&p, dir)
		// An earlier in-process launch's files still waiting would overwrite these:
		// dropped.
		f.forget(a.ID)
		if err := savePolicy(dir, file, p); err != nil {
			return false, err
		}
		spec.Argv = confine.LauncherArgv(f.o.Self, file, own)
		return true, nil
	}
	spec.Argv = confine.LauncherArgv(f.o.Self, file, own)
	// The policy is made, its ruleset checked or built and a thread confined to it on
	// a goroutine of its own while the host readies the agent's start (its terminal,
	// ~0.25 ms) on the other CPU: one after the other, they were 0.4–0.6 ms of a new
	// policy's spawn (the build ~0.2, the ruleset and the thread's confinement the
	// rest). A refusal is still the launch's error, from Run.
	in := *spec
	in.Env, in.Argv = slices.Clone(spec.Env), slices.Clone(own)
	b := &readying{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		p, seen, err := f.buildSeen(a, &in, needs, shared, true)
		if err != nil {
			b.err = fmt.Errorf("sandbox of %s: %w", a.Path, err)
			return
		}
		f.policyFields(&p, dir)
		// The ruleset's check takes what this build just checked as seen.
		p.Seen, p.SeenAt = seen, time.Now()
		b.p = p
		b.pending = f.rulesets.Ready(p, f.logFlags())
	}()
	var rep confine.Report
	spec.Confine = &core.ThreadConfine{
		Argv: slices.Clone(own),
		Run: func(start func(notice string) error) error {
			<-b.done
			if b.err != nil {
				return b.err
			}
			var startErr error
			r, err := b.pending.Run(func(r confine.Report) error {
				var sb strings.Builder
				for _, w := range r.Warnings {
					fmt.Fprintf(&sb, "orcr sandbox: %s\n", w)
				}
				startErr = start(sb.String())
				return startErr
			})
			rep = r
			if err != nil && startErr == nil {
				return fmt.Errorf("sandbox of %s: %w", a.Path, err)
			}
			return err
		},
		Started: func(pid int) {
			<-b.done
			rep.PID = pid
			rep.InProcess = true
			rep := rep
			p := b.p
			// The files are --explain's (the launcher's policy is not read on this
			// path): written off the spawn's path, once the launches pause.
			f.afterStart(a.ID, func() {
				if err := savePolicy(dir, file, p); err != nil {
					f.log.Warn("sandbox policy", "agent", a.Path, "err", err)
				}
				if err := confine.WriteReport(p.Report, rep); err != nil {
					f.log.Warn("sandbox report", "agent", a.Path, "err", err)
				}
			})
		},
	}
	return true, nil
}

// readying is an in-process launch's confinement made ready beside the host's own
// start (WrapLaunch): once done is closed, the policy and its pending confinement,
// or why there is none.
type readying struct {
	done    chan struct{}
	p       confine.Policy
	pending *confine.Pending
	err     error
}

// policyFields sets what of a launch's policy is not made from its grants: where its
// report goes (the agent's folder) and whether refusals are logged (audit).
func (f *Feature) policyFields(p *confine.Policy, dir string) {
	p.Report = filepath.Join(dir, ReportFile)
	p.LogDenials = f.audit != nil
}

// savePolicy writes a launch's policy (--explain's, the launcher's) in the agent's
// folder, and clears the last report.
func savePolicy(dir, file string, p confine.Policy) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	_ = os.Remove(p.Report)
	return confine.Save(file, p)
}

// privateTmp gives the agent a temporary folder outside /tmp (TMPDIR) when /tmp holds
// $HOME or orcr's home (a test's, a container's HOME=/tmp): granting /tmp would grant
// them. It returns that /tmp ("" when it holds neither), of which nothing else is
// granted. The folder, ORCR_HOME/sandbox-tmp, is one for all confined agents, as /tmp
// is where it is granted: a folder per agent made every agent's policy a different
// one (no ruleset reused, Rulesets) and was never removed.
func (f *Feature) privateTmp(a wire.Agent, spec *core.LaunchSpec) (string, error) {
	tmp := envValue(spec.Env, "TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	t := "" // tmp resolved, once
	inside := func(dir string) bool {
		if dir == "" {
			return false
		}
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		if t == "" {
			t = tmp
			if r, err := filepath.EvalSymlinks(t); err == nil {
				t = r
			}
		}
		return dir == t || strings.HasPrefix(dir, strings.TrimSuffix(t, "/")+"/")
	}
	if !inside(envValue(spec.Env, "HOME")) && !inside(f.o.Home) {
		return "", nil
	}
	own := filepath.Join(f.o.Home, "sandbox-tmp")
	if err := os.MkdirAll(own, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: private tmp: %w", err)
	}
	spec.Env = append(spec.Env, "TMPDIR="+own)
	return tmp, nil
}

// Methods implements core.Feature.
func (f *Feature) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(sbapi.SandboxExplain, func(ctx context.Context, p *sbapi.SandboxExplainParams) (sbapi.SandboxExplanation, error) {
			return f.explain(ctx, p.Target)
		}),
		wire.Handle(sbapi.SandboxStatus, func(ctx context.Context, _ *wire.Empty) (sbapi.SandboxState, error) {
			abi, err := f.kernel()
			st := sbapi.SandboxState{ABI: abi, MaxABI: f.o.MaxABI}
			if err != nil {
				st.Error = err.Error()
			}
			return st, nil
		}),
	}
}

func (f *Feature) explain(ctx context.Context, target string) (sbapi.SandboxExplanation, error) {
	a, err := f.k.Get(ctx, target)
	if err != nil {
		return sbapi.SandboxExplanation{}, err
	}
	var ex sbapi.SandboxExplanation
	if a.Sandbox != nil {
		ex.Mode = a.Sandbox.Mode
	}
	if !a.Sandbox.On() || f.o.Home == "" {
		return ex, nil
	}
	dir := filepath.Join(f.o.Home, "agents", a.ID)
	if err := f.written(ctx, a.ID); err != nil {
		return ex, err
	}
	if p, err := confine.Load(filepath.Join(dir, PolicyFile)); err == nil {
		ex.Policy = &sbapi.SandboxPolicy{RW: p.RW, ROX: p.ROX, RO: p.RO, Dev: p.Dev, Ports: p.Ports, Socket: p.Socket,
			MaxABI: p.MaxABI, Notes: p.Notes}
	}
	if rep, ok, err := confine.ReadReport(filepath.Join(dir, ReportFile)); err == nil && ok {
		ex.Applied = &sbapi.SandboxApplied{KernelABI: rep.KernelABI, ABI: rep.ABI, Net: rep.Net, Scoped: rep.Scoped,
			Warnings: rep.Warnings, PID: rep.PID, InProcess: rep.InProcess}
	}
	switch {
	case f.audit == nil:
		ex.Audit = f.auditErr.Error()
	default:
		if on, err := auditEnabled(); err != nil {
			ex.Audit = fmt.Sprintf("the kernel's audit state cannot be read: %v", err)
		} else if !on {
			ex.Audit = "the kernel's audit is off, so Landlock logs no denial (auditctl -e 1 turns it on)"
		}
		if d, ok := f.audit.lastOf(a.ID); ok {
			ex.LastDenial = &sbapi.SandboxDenial{When: d.When, Access: d.Access, Object: d.Object, PID: d.PID, Comm: d.Comm}
		}
	}
	if r, err := f.k.Read(ctx, wire.ReadParams{Target: a.ID, Lines: 2000}); err == nil {
		ex.Refused = refusedLines(r.Text, 10)
	} else if a.LastScreen != "" {
		ex.Refused = refusedLines(a.LastScreen, 10)
	}
	return ex, nil
}

// logFlags are landlock_restrict_self's flags for an agent's domain: denials of the
// programs it execs are logged to the audit subsystem (ABI ≥ 7), where the feature
// reads them for --explain.
func (f *Feature) logFlags() uint32 {
	if f.audit == nil {
		return 0
	}
	return ll.FlagRestrictSelfLogNewExecOn
}

// InProcessMode is Options.InProcess.
type InProcessMode int

const (
	InProcessAuto InProcessMode = iota
	InProcessOn
	InProcessOff
)

// InProcessFromEnv reads ORCR_SANDBOX_IN_PROCESS: "" is auto, 1 on, 0 off.
func InProcessFromEnv(v string) (InProcessMode, error) {
	switch strings.TrimSpace(v) {
	case "":
		return InProcessAuto, nil
	case "1":
		return InProcessOn, nil
	case "0":
		return InProcessOff, nil
	}
	return 0, fmt.Errorf("ORCR_SANDBOX_IN_PROCESS=%q: give 1 or leave it unset (the server confines pty agents from a thread of its own), or 0 (the launcher in the pane does)", v)
}

// NoLandlock is Options.MaxABI for a server that confines nothing, as on a kernel
// without Landlock (ORCR_SANDBOX_MAX_ABI=0).
const NoLandlock = -1

// MaxABIFromEnv reads ORCR_SANDBOX_MAX_ABI: "" is no cap, 0 is no Landlock at all,
// 1–11 the highest ABI applied. Anything else is an error that names the variable.
func MaxABIFromEnv(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > confine.MaxKnownABI {
		return 0, fmt.Errorf("ORCR_SANDBOX_MAX_ABI=%q: give a Landlock ABI from 1 to %d, or 0 for none (unset it for the kernel's)", v, confine.MaxKnownABI)
	}
	if n == 0 {
		return NoLandlock, nil
	}
	return n, nil
}
