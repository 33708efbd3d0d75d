// Package confine is the launcher side of orcr's sandbox (DESIGN §16): the policy file
// the server writes for one agent, and `orcr sandbox exec`, which restricts itself with
// Landlock to that policy and execs the agent, so the whole process tree the agent
// starts stays confined. It links nothing of the server: the CLI runs it in the pane.
package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Policy is what one agent may touch. The server writes it (0600, in the agent's
// state directory) and the launcher applies it; paths are absolute.
type Policy struct {
	// RW are read-write paths: the agent's worktree or cwd, /tmp, the provider's state.
	RW []string `json:"rw"`
	// Own are the paths of RW that are this agent's alone (its folder, its git dir):
	// a server that confines agents from its threads keeps a ruleset of the rest
	// ready for the next agent in a folder of its own (Rulesets). They grant nothing
	// RW does not.
	Own []string `json:"own,omitempty"`
	// ROX are read-execute paths: the toolchain, the provider's install, orcr itself.
	ROX []string `json:"rox"`
	// RO are read-only paths (/etc, the adapter's settings file).
	RO []string `json:"ro,omitempty"`
	// Entries grants read-write each entry of a folder but some (a /tmp that holds
	// $HOME or orcr's home), read when the rules are made.
	Entries *Entries `json:"entries,omitempty"`
	// Dev are device paths opened read-write with their ioctls (the terminal, /dev/null).
	Dev []string `json:"dev,omitempty"`
	// Ports are the TCP ports the agent may connect to (ABI ≥ 4); every other
	// connect fails with EACCES. Binding is left alone.
	Ports []int `json:"ports"`
	// Socket is orcr's own unix socket, kept reachable (`orcr run done` inside).
	Socket string `json:"socket,omitempty"`
	// ProcSelf grants reading /proc/PID of the launcher, which the exec makes the
	// agent's own process.
	ProcSelf bool `json:"procSelf,omitempty"`
	// MaxABI caps the Landlock ABI used (0: the highest the kernel and orcr know); a
	// test forces an older kernel's behaviour with it.
	MaxABI int `json:"maxAbi,omitempty"`
	// LogDenials asks Landlock to log the denials of the programs the agent execs to
	// the kernel's audit (ABI ≥ 7), where the server reads them.
	LogDenials bool `json:"logDenials,omitempty"`
	// Report is a file the launcher writes what it applied into (opened before it
	// restricts itself, so the file need not be in the policy).
	Report string `json:"report,omitempty"`
	// Notes are the server's account of how it built the policy (for --explain); the
	// launcher ignores them.
	Notes []string `json:"notes,omitempty"`
	// Seen are paths the server found to be these files (a stat each, following
	// links) while it made this launch's policy: Rulesets takes them as still so
	// for a check in the same launch (SeenAt within seenFor) instead of a stat
	// again. Never written to the file.
	Seen   map[string]FileID `json:"-"`
	SeenAt time.Time         `json:"-"`
}

// Report is what the launcher applied, written to Policy.Report.
type Report struct {
	// KernelABI is the Landlock ABI the kernel has; ABI the one applied.
	KernelABI int `json:"kernelAbi"`
	ABI       int `json:"abi"`
	// Net says TCP connects are confined (ABI ≥ 4); Scoped that abstract unix
	// sockets and signals out of the sandbox are (ABI ≥ 6).
	Net    bool `json:"net"`
	Scoped bool `json:"scoped"`
	// Warnings are what the launcher skipped (a path that does not exist) or could
	// not confine at this ABI.
	Warnings []string `json:"warnings,omitempty"`
	PID      int      `json:"pid"`
	// InProcess says the server confined the agent itself, from a thread of its own
	// (the pty host), without the launcher; its /proc/PID is then not granted.
	InProcess bool `json:"inProcess,omitempty"`
}

// maxPolicy bounds a policy file: a few hundred paths at most.
const maxPolicy = 1 << 20

// Load reads and checks a policy file.
func Load(path string) (Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return Policy{}, fmt.Errorf("sandbox policy: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Policy{}, fmt.Errorf("sandbox policy: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Policy{}, fmt.Errorf("sandbox policy %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPolicy+1))
	if err != nil {
		return Policy{}, fmt.Errorf("sandbox policy: %w", err)
	}
	if len(b) > maxPolicy {
		return Policy{}, fmt.Errorf("sandbox policy %s is over %d bytes", path, maxPolicy)
	}
	var p Policy
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("sandbox policy %s: %w", path, err)
	}
	if err := p.Check(); err != nil {
		return Policy{}, fmt.Errorf("sandbox policy %s: %w", path, err)
	}
	return p, nil
}

// Save writes p to path, mode 0600.
func Save(path string, p Policy) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".new"
	_ = os.Remove(tmp)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write sandbox policy: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write sandbox policy: %w", err)
	}
	return nil
}

// Check refuses a policy whose paths are relative or climb with "..", and ports out
// of range.
func (p Policy) Check() error {
	for _, list := range [][]string{p.RW, p.ROX, p.RO, p.Dev, p.Own} {
		for _, path := range list {
			if err := CheckPath(path); err != nil {
				return err
			}
		}
	}
	for _, o := range p.Own {
		if !slices.Contains(p.RW, o) {
			return fmt.Errorf("own path %q is not among the rw paths", o)
		}
	}
	if p.Entries != nil {
		if err := CheckPath(p.Entries.Dir); err != nil {
			return fmt.Errorf("entries: %w", err)
		}
		for _, k := range p.Entries.Keep {
			if err := CheckPath(k); err != nil {
				return fmt.Errorf("entries kept out: %w", err)
			}
		}
	}
	if p.Socket != "" && !filepath.IsAbs(p.Socket) {
		return fmt.Errorf("socket %q is not an absolute path", p.Socket)
	}
	for _, port := range p.Ports {
		if port < 1 || port > 65535 {
			return fmt.Errorf("port %d is not a TCP port (1–65535)", port)
		}
	}
	if p.MaxABI < 0 {
		return fmt.Errorf("maxAbi %d is negative", p.MaxABI)
	}
	return nil
}

// CheckPath refuses a path that is empty, relative, or has a ".." element: a policy
// names what it grants plainly, and "worktree/../.." would grant what it hides.
func CheckPath(path string) error {
	if path == "" {
		return errors.New("an empty path")
	}
	if hasDotDot(path) {
		return fmt.Errorf("%q has a \"..\" element: name the directory itself", path)
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%q is not an absolute path", path)
	}
	return nil
}

// hasDotDot says path has a ".." element (without splitting it: a launch checks
// every path of its policy).
func hasDotDot(path string) bool {
	for rest := filepath.ToSlash(path); rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if seg == ".." {
			return true
		}
	}
	return false
}

// ExpandHome turns a leading ~ into home and checks the result with CheckPath: a
// role's or a run's [sandbox] rw/rox entry. ".." is refused before anything is joined.
func ExpandHome(path, home string) (string, error) {
	if slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "..") {
		return "", fmt.Errorf("%q has a \"..\" element: name the directory itself", path)
	}
	if path == "~" || strings.HasPrefix(path, "~/") {
		if home == "" {
			return "", fmt.Errorf("%q starts with ~ but HOME is not set", path)
		}
		path = home + strings.TrimPrefix(path, "~")
	}
	if err := CheckPath(path); err != nil {
		return "", err
	}
	return filepath.Clean(path), nil
}
