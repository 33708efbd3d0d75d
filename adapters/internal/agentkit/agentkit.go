// Package agentkit holds what the provider adapters share: reading usage-limit reset
// times out of CLI wording, shell-quoting hook commands, finding a CLI binary, and
// a small "what did we already tell the engine" tracker so observers only send news.
package agentkit

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"orcr/core/wire"
)

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FindBin looks for a CLI: an explicit path, then the env override, then the pinned
// CLI cache the test scripts install into, then PATH.
func FindBin(explicit, envVar, cacheName, bin string) (string, bool) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err == nil {
			return explicit, true
		}
		return explicit, false
	}
	if v := os.Getenv(envVar); v != "" {
		if _, err := os.Stat(v); err == nil {
			return v, true
		}
	}
	if p, err := exec.LookPath(bin); err == nil {
		return p, true
	}
	cache := os.Getenv("ORCR_CLI_CACHE")
	if cache == "" {
		if h, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(h, ".cache", "orcr", "clis")
		}
	}
	if cache != "" {
		p := filepath.Join(cache, cacheName, "node_modules", ".bin", bin)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return bin, false
}

// versionTimeout bounds a version probe: a CLI that hangs must not hang doctor.
const versionTimeout = 5 * time.Second

// Version runs "<bin> --version" with a short timeout and returns the first
// version-looking token. The command is killed when the
// deadline passes (exec.CommandContext) and WaitDelay bounds the wait for output pipes
// a grandchild may hold open, so nothing here touches the process from another
// goroutine.
func Version(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.WaitDelay = time.Second
	out, _ := cmd.Output()
	if m := versionRE().FindString(string(out)); m != "" {
		return m
	}
	return strings.TrimSpace(string(out))
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d+\.\d+\.\d+[0-9A-Za-z.+-]*`) })

// EnvValue returns KEY's value in a KEY=VALUE list (the last one wins).
func EnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// Home returns $HOME from env, falling back to the process's.
func Home(env []string) string {
	if h := EnvValue(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// RealDir resolves symlinks so paths match what the CLI records.
func RealDir(dir string) string {
	if dir == "" {
		return dir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

var (
	resetClockRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)resets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+\-0-9]+)*)\))?`)
	})
	tryAtRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)try again at ([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}),? (\d{1,2}):(\d{2})\s*(AM|PM)`)
	})
	tryInRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)try again in ((?:\d+\s*(?:days?|hours?|minutes?|mins?|seconds?|secs?)[\s,]*(?:and\s+)?)+)`)
	})
	durPartRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(\d+)\s*(day|hour|min|sec)`) })
	legacyRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`usage limit reached\|(\d{9,11})`) })
)

// ParseReset reads a usage-limit reset instant out of CLI wording:
//
//	"You've hit your session limit · resets 9:50pm (Asia/Saigon)"  (claude)
//	"5-hour limit reached ∙ resets 3pm"                            (claude)
//	"Claude AI usage limit reached|1767400000"                     (legacy claude)
//	"… or try again at Dec 1st, 2026 12:59 AM."                    (codex, local time)
//	"… or try again in 4 days 20 hours"                            (codex)
//
// Clock times without a date are the next such time after now, in the named zone or
// loc (nil: local). It returns nil when the text names no reset.
func ParseReset(text string, now time.Time, loc *time.Location) *time.Time {
	if loc == nil {
		loc = time.Local
	}
	if m := legacyRE().FindStringSubmatch(text); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		t := time.Unix(sec, 0).UTC()
		return plausible(t, now)
	}
	if m := tryAtRE().FindStringSubmatch(text); m != nil {
		hh, _ := strconv.Atoi(m[4])
		mm, _ := strconv.Atoi(m[5])
		hh = to24(hh, m[6])
		s := m[1] + " " + m[2] + " " + m[3]
		day, err := time.ParseInLocation("Jan 2 2006", s, loc)
		if err == nil && hh <= 23 && mm <= 59 {
			t := time.Date(day.Year(), day.Month(), day.Day(), hh, mm, 0, 0, loc).UTC()
			return plausible(t, now)
		}
	}
	if m := tryInRE().FindStringSubmatch(text); m != nil {
		var d time.Duration
		for _, p := range durPartRE().FindAllStringSubmatch(m[1], -1) {
			unit := time.Second
			switch strings.ToLower(p[2]) {
			case "day":
				unit = 24 * time.Hour
			case "hour":
				unit = time.Hour
			case "min":
				unit = time.Minute
			}
			n, err := strconv.ParseInt(p[1], 10, 64)
			if err != nil || n > int64(maxResetAhead/unit) {
				return nil // more than any limit window: not a reset
			}
			d += time.Duration(n) * unit
		}
		if d > 0 {
			return plausible(now.Add(d).UTC().Truncate(time.Second), now)
		}
	}
	if m := resetClockRE().FindStringSubmatch(text); m != nil && (m[2] != "" || m[3] != "") {
		zone := loc
		if m[4] != "" {
			if z, err := time.LoadLocation(m[4]); err == nil {
				zone = z
			}
		}
		hh, _ := strconv.Atoi(m[1])
		mm, _ := strconv.Atoi(m[2])
		if m[3] != "" {
			hh = to24(hh, m[3])
		}
		if hh > 23 || mm > 59 {
			return nil
		}
		n := now.In(zone)
		t := time.Date(n.Year(), n.Month(), n.Day(), hh, mm, 0, 0, zone)
		if !t.After(now) {
			t = t.AddDate(0, 0, 1)
		}
		t = t.UTC()
		return &t
	}
	return nil
}

// maxResetAhead bounds how far ahead a reset may lie (the longest limit window is a
// week; a month's plan reset is the longest anyone has reported).
const maxResetAhead = 400 * 24 * time.Hour

// plausible returns &t when t could be a reset: not absurdly far ahead (garbled or
// hostile text must not put an agent on the bench for centuries) and not before 2000.
// A past reset stays: an old transcript line still says when that limit ended.
func plausible(t, now time.Time) *time.Time {
	if t.Year() < 2000 || t.After(now.Add(maxResetAhead)) {
		return nil
	}
	return &t
}

func to24(h int, ampm string) int {
	switch strings.ToLower(ampm) {
	case "am":
		if h == 12 {
			return 0
		}
	case "pm":
		if h < 12 {
			return h + 12
		}
	}
	return h
}

// WindowName maps a limit window length to orcr's names.
func WindowName(minutes int) string {
	switch {
	case minutes <= 0:
		return ""
	case minutes <= 6*60:
		return "5h"
	case minutes >= 6*24*60:
		return "weekly"
	}
	return ""
}

// Readings queues limit readings: a Signal carries one, so an observer that learns
// two at once (5h and weekly) hands the rest out on the following calls.
type Readings struct{ q []*wire.LimitReading }

// Add queues readings.
func (r *Readings) Add(rs ...*wire.LimitReading) {
	for _, x := range rs {
		if x != nil {
			r.q = append(r.q, x)
		}
	}
}

// Next pops the oldest queued reading, or nil.
func (r *Readings) Next() *wire.LimitReading {
	if len(r.q) == 0 {
		return nil
	}
	x := r.q[0]
	r.q = r.q[1:]
	return x
}

// Len is how many readings wait.
func (r *Readings) Len() int { return len(r.q) }

// InstallRoot is what a sandbox must let a provider's program read and run (§16): the
// node_modules folder its binary is installed in (the package, its platform package
// with the native binary, and its dependencies), else the binary's own folder.
func InstallRoot(bin string) string {
	if bin == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		real = bin
	}
	if i := strings.LastIndex(real, "/node_modules/"); i >= 0 {
		return real[:i+len("/node_modules")]
	}
	return filepath.Dir(real)
}

// URLPort is the TCP port of a URL (its scheme's default when it names none), 0 for
// a URL that is not one.
func URLPort(raw string) int {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return 0
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return 0
		}
		return n
	}
	switch u.Scheme {
	case "https", "wss":
		return 443
	case "http", "ws":
		return 80
	}
	return 0
}
