package nodes

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// The part of ssh_config(5) a node's link honours, read by a small parser of our own:
// Host blocks (patterns with * ? and !negation), Include, and the keywords HostName,
// User, Port, IdentityFile, UserKnownHostsFile, plus ProxyJump and ProxyCommand, which
// the link cannot follow and so refuses by name rather than connecting somewhere
// else. First value wins, as in ssh; IdentityFile adds up. A line that is not
// "Keyword value" (or "Keyword=value"), an unterminated quote, or an Include too deep
// is an error naming file:line. Match blocks are not evaluated: their lines apply to
// no host, which is said in Target.Notes when such a block exists.

// sshConfig is a parsed ~/.ssh/config (with its Includes inlined).
type sshConfig struct {
	lines []sshLine
	// match: the file has Match blocks the link did not evaluate.
	match bool
}

// sshLine is one "Keyword args" line and the Host patterns it sits under (nil: before
// any Host, applies to every host; matchBlock: under a Match, applies to none).
type sshLine struct {
	key        string // lower case
	args       []string
	at         string // file:line
	patterns   []string
	matchBlock bool
}

const maxIncludeDepth = 16

// parseSSHConfig reads path (a missing file is an empty config). dir is where
// relative Include paths are looked up (~/.ssh).
func parseSSHConfig(path, dir string) (*sshConfig, error) {
	c := &sshConfig{}
	if err := c.readFile(path, dir, 0, nil, false); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *sshConfig) readFile(path, dir string, depth int, patterns []string, inMatch bool) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read ssh config: %w", err)
	}
	_, _, err = c.parse(string(b), path, dir, depth, patterns, inMatch)
	return err
}

// parse adds the lines of text; it returns the Host patterns and Match state in force
// at its end (an Include's blocks do not leak into the including file in ssh either,
// but its leading lines sit under the includer's block).
func (c *sshConfig) parse(text, name, dir string, depth int, patterns []string, inMatch bool) ([]string, bool, error) {
	for i, raw := range strings.Split(text, "\n") {
		at := fmt.Sprintf("%s:%d", name, i+1)
		key, args, err := splitSSHLine(raw)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", at, err)
		}
		if key == "" {
			continue
		}
		if len(args) == 0 {
			return nil, false, fmt.Errorf("%s: %s needs a value", at, key)
		}
		switch strings.ToLower(key) {
		case "host":
			patterns, inMatch = args, false
			continue
		case "match":
			patterns, inMatch, c.match = nil, true, true
			continue
		case "include":
			if depth >= maxIncludeDepth {
				return nil, false, fmt.Errorf("%s: Include nested deeper than %d", at, maxIncludeDepth)
			}
			for _, pat := range args {
				pat = expandTilde(pat)
				if !filepath.IsAbs(pat) {
					pat = filepath.Join(dir, pat)
				}
				files, err := filepath.Glob(pat)
				if err != nil {
					return nil, false, fmt.Errorf("%s: Include %s: %w", at, pat, err)
				}
				for _, f := range files {
					if err := c.readFile(f, dir, depth+1, patterns, inMatch); err != nil {
						return nil, false, err
					}
				}
			}
			continue
		}
		c.lines = append(c.lines, sshLine{key: strings.ToLower(key), args: args, at: at, patterns: patterns, matchBlock: inMatch})
	}
	return patterns, inMatch, nil
}

// splitSSHLine splits one line into its keyword and arguments ("" for a blank or
// comment line). Arguments may be double-quoted.
func splitSSHLine(s string) (string, []string, error) {
	s = strings.TrimSpace(strings.TrimSuffix(s, "\r"))
	if s == "" || s[0] == '#' {
		return "", nil, nil
	}
	end := strings.IndexAny(s, " \t=")
	if end < 0 {
		return s, nil, nil
	}
	key := s[:end]
	rest := strings.TrimLeft(s[end:], " \t")
	if strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	var args []string
	for rest != "" {
		if rest[0] == '"' {
			j := strings.IndexByte(rest[1:], '"')
			if j < 0 {
				return "", nil, fmt.Errorf("%s: unterminated quote", key)
			}
			args = append(args, rest[1:1+j])
			rest = strings.TrimLeft(rest[2+j:], " \t")
			continue
		}
		j := strings.IndexAny(rest, " \t")
		if j < 0 {
			args = append(args, rest)
			break
		}
		args = append(args, rest[:j])
		rest = strings.TrimLeft(rest[j:], " \t")
	}
	return key, args, nil
}

// applies says whether a line's Host patterns select host.
func (l sshLine) applies(host string) bool {
	if l.matchBlock {
		return false
	}
	if l.patterns == nil {
		return true
	}
	ok := false
	for _, p := range l.patterns {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if wildMatch(p, host) {
			if neg {
				return false
			}
			ok = true
		}
	}
	return ok
}

// wildMatch matches s against a pattern of * (any run) and ? (one character),
// case-insensitively as ssh matches host names.
func wildMatch(p, s string) bool {
	p, s = strings.ToLower(p), strings.ToLower(s)
	// Iterative match with one backtrack point: linear in practice, never exponential.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// hostConfig is what the config says of one host: each keyword's first value (and
// every IdentityFile).
type hostConfig struct {
	first     map[string][]string
	firstAt   map[string]string
	identity  []string
	hasBlocks bool // some Host block (not only the global lines) named this host
}

func (c *sshConfig) lookup(host string) hostConfig {
	h := hostConfig{first: map[string][]string{}, firstAt: map[string]string{}}
	if c == nil {
		return h
	}
	for _, l := range c.lines {
		if !l.applies(host) {
			continue
		}
		if l.patterns != nil {
			h.hasBlocks = true
		}
		if l.key == "identityfile" {
			h.identity = append(h.identity, l.args[0])
			continue
		}
		if _, seen := h.first[l.key]; !seen {
			h.first[l.key], h.firstAt[l.key] = l.args, l.at
		}
	}
	return h
}

func (h hostConfig) get(key string) (string, string) {
	if v := h.first[key]; len(v) > 0 {
		return v[0], h.firstAt[key]
	}
	return "", ""
}

// target is where a node's link connects, and as whom.
type target struct {
	User       string
	Addr       string // host name or address
	Port       int
	Identities []string // key files, in order
	KnownHosts []string // UserKnownHostsFile of the config, if any
	// Alias is the Host alias the spec named ("" when it named an address).
	Alias string
}

// hostport is Addr:Port as a dial address.
func (t target) hostport() string {
	if strings.Contains(t.Addr, ":") {
		return fmt.Sprintf("[%s]:%d", t.Addr, t.Port)
	}
	return fmt.Sprintf("%s:%d", t.Addr, t.Port)
}

// resolveTarget reads spec — user@host[:port], host[:port] or a Host alias of the ssh
// config — into where to connect. identity is the node's own key file ("" : the
// config's, then ssh's defaults).
func resolveTarget(spec, identity string, cfg *sshConfig) (target, error) {
	if spec == "" {
		return target{}, errors.New("ssh destination is empty: give user@host, user@host:port or a Host alias of ~/.ssh/config")
	}
	if strings.ContainsAny(spec, " \t\n\x00/") || strings.HasPrefix(spec, "-") {
		return target{}, fmt.Errorf("ssh destination %q: use user@host, user@host:port or a Host alias of ~/.ssh/config", spec)
	}
	var t target
	userPart, hostPart, hasUser := strings.Cut(spec, "@")
	if !hasUser {
		hostPart, userPart = userPart, ""
	} else if userPart == "" || strings.Contains(hostPart, "@") {
		return target{}, fmt.Errorf("ssh destination %q: the user before @ is empty or @ appears twice", spec)
	}
	portStr := ""
	if strings.HasPrefix(hostPart, "[") {
		end := strings.Index(hostPart, "]")
		if end < 0 {
			return target{}, fmt.Errorf("ssh destination %q: unclosed [", spec)
		}
		rest := hostPart[end+1:]
		hostPart = hostPart[1:end]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return target{}, fmt.Errorf("ssh destination %q: expected :PORT after ]", spec)
			}
			portStr = rest[1:]
		}
	} else if h, p, ok := strings.Cut(hostPart, ":"); ok {
		hostPart, portStr = h, p
	}
	if hostPart == "" {
		return target{}, fmt.Errorf("ssh destination %q has no host", spec)
	}
	hc := cfg.lookup(hostPart)
	if v, at := hc.get("proxyjump"); v != "" && !strings.EqualFold(v, "none") {
		return target{}, fmt.Errorf("%s: ProxyJump %s: orcr's link connects directly and cannot jump; give the node's own address", at, v)
	}
	if v, at := hc.get("proxycommand"); v != "" && !strings.EqualFold(v, "none") {
		return target{}, fmt.Errorf("%s: ProxyCommand: orcr's link connects directly and cannot run a proxy command; give the node's own address", at)
	}
	t.Addr = hostPart
	if hn, _ := hc.get("hostname"); hn != "" {
		t.Addr = strings.ReplaceAll(strings.ReplaceAll(hn, "%h", hostPart), "%%", "%")
		t.Alias = hostPart
	} else if hc.hasBlocks {
		t.Alias = hostPart
	}
	t.User = userPart
	if t.User == "" {
		t.User, _ = hc.get("user")
	}
	if t.User == "" {
		if u, err := user.Current(); err == nil {
			t.User = u.Username
		}
	}
	t.Port = 22
	if portStr == "" {
		if v, at := hc.get("port"); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 65535 {
				return target{}, fmt.Errorf("%s: Port %q is not a port number", at, v)
			}
			t.Port = p
		}
	} else {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 {
			return target{}, fmt.Errorf("ssh destination %q: port %q is not a port number (1-65535)", spec, portStr)
		}
		t.Port = p
	}
	expand := func(s string) string {
		s = expandTilde(s)
		home, _ := os.UserHomeDir()
		r := strings.NewReplacer("%d", home, "%u", currentUser(), "%r", t.User, "%h", t.Addr, "%n", hostPart, "%p", strconv.Itoa(t.Port), "%%", "%")
		return r.Replace(s)
	}
	if identity != "" {
		t.Identities = append(t.Identities, expand(identity))
	}
	for _, id := range hc.identity {
		t.Identities = append(t.Identities, expand(id))
	}
	if v := hc.first["userknownhostsfile"]; len(v) > 0 {
		for _, f := range v {
			if f != "none" {
				t.KnownHosts = append(t.KnownHosts, expand(f))
			}
		}
	}
	return t, nil
}

func expandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, _ := os.UserHomeDir()
		return filepath.Join(home, p[1:])
	}
	return p
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
