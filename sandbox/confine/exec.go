package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Exec is `orcr sandbox exec --policy FILE -- argv`: it loads the policy, restricts
// the thread that will exec with Landlock, writes what it applied to the policy's report file and
// execs argv, which (and all it starts) stays confined. Warnings (a path that does not
// exist, a network left open by an old ABI) go to stderr, the agent's pane. It returns
// only on an error, and then nothing was exec'd.
func Exec(policyPath string, argv []string, stderr io.Writer) error {
	return execWith(policyPath, argv, stderr, nil)
}

// execWith is Exec; pre, when it holds a ruleset of the policy's key (a spare
// launcher's, built before its launch came: Await), confines with it brought up to
// date instead of building one (restrictHere).
func execWith(policyPath string, argv []string, stderr io.Writer, pre *Rulesets) error {
	if len(argv) == 0 {
		return errors.New("no command: orcr sandbox exec --policy FILE -- CMD [ARGS…]")
	}
	// The launcher execs within milliseconds: a collection, and the wakeups of the GC's
	// workers that come with it, would be work nothing uses.
	debug.SetGCPercent(-1)
	p, err := Load(policyPath)
	if err != nil {
		return err
	}
	// The program is found before the restriction, on the PATH the agent was given;
	// the exec itself then needs it inside the policy's read-execute paths.
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	var report *os.File
	if p.Report != "" {
		// Opened before the restriction: the report's directory is not in the policy.
		report, err = os.OpenFile(p.Report, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("sandbox report: %w", err)
		}
	}
	// Only this thread is confined, and it is the one that execs: the program starts
	// from its credentials alone (execve ends the other threads), so the domain need
	// not be pushed to every thread of the Go runtime (go-landlock's Restrict signals
	// each one), which is work a launcher that execs at once never uses.
	runtime.LockOSThread()
	var flags uint32
	if p.LogDenials {
		flags = ll.FlagRestrictSelfLogNewExecOn
	}
	var rep Report
	if pre != nil && pre.prepared(p) {
		rep, err = pre.restrictHere(p, flags)
	} else {
		rep, err = restrictThread(p, flags)
	}
	if err != nil {
		runtime.UnlockOSThread()
		if report != nil {
			report.Close()
		}
		return err
	}
	rep.PID = os.Getpid()
	for _, w := range rep.Warnings {
		fmt.Fprintf(stderr, "orcr sandbox: %s\n", w)
	}
	if report != nil {
		b, _ := json.Marshal(rep)
		_, werr := report.Write(b)
		if cerr := report.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			fmt.Fprintf(stderr, "orcr sandbox: report: %v\n", werr)
		}
	}
	err = syscall.Exec(bin, argv, os.Environ())
	// The thread stays locked: it is confined, so the runtime ends it with the
	// goroutine instead of reusing it; the caller exits.
	return fmt.Errorf("sandbox: exec %s: %w", bin, err)
}

// ReadReport reads what a launcher applied; ok is false before one ran.
func ReadReport(path string) (rep Report, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Report{}, false, nil
	}
	if err != nil {
		return Report{}, false, err
	}
	if len(b) == 0 {
		return Report{}, false, nil
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return Report{}, false, fmt.Errorf("sandbox report %s: %w", path, err)
	}
	return rep, true, nil
}

// WriteReport writes rep to path (mode 0600): what the in-process confinement of a
// pty host applied, as the launcher writes it for the other hosts.
func WriteReport(path string, rep Report) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("sandbox report: %w", err)
	}
	return nil
}

// LauncherArgv is the command line of a confined pane's launcher: self (the orcr
// binary) applies the policy in the file policy, then execs cmd. The sandbox feature
// builds it; ParseLauncherArgv reads it back (the tmux host's spare launcher takes
// such launches).
func LauncherArgv(self, policy string, cmd []string) []string {
	return append([]string{self, "sandbox", "exec", "--policy", policy, "--"}, cmd...)
}

// ParseLauncherArgv is LauncherArgv's inverse: ok when argv is a launcher's command
// line with an absolute binary and a command to exec.
func ParseLauncherArgv(argv []string) (self, policy string, cmd []string, ok bool) {
	if len(argv) > 6 && filepath.IsAbs(argv[0]) && argv[1] == "sandbox" && argv[2] == "exec" && argv[3] == "--policy" && argv[5] == "--" {
		return argv[0], argv[4], argv[6:], true
	}
	return "", "", nil, false
}
