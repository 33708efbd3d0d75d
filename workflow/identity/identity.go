// Package identity is DESIGN §18's identities: a persistent someone an agent acts as.
// An identity is a directory $XDG_CONFIG_HOME/orcr/identities/NAME/ holding
// identity.toml (its description) and an optional AGENTS.md (standing instructions);
// its memory is $XDG_DATA_HOME/orcr/identities/NAME/memory. An agent given an
// identity (a role's identity =, a listener action, a workflow step, agent run
// --identity) gets the instructions and the memory directory's path appended to its
// system prompt through its provider's own flag, the directory itself read-write
// (claude and codex --add-dir) and ORCR_IDENTITY / ORCR_MEMORY in its environment.
// An agent spawned from an identity's pane acts as the same identity and cannot
// choose another.
//
// It is a feature beside the kernel: it provides itself as the "identities"
// capability, which the roles resolver asks to shape every run request (the kernel
// has one resolver), and checks spawns (core.SpawnChecker) so a child never leaves
// its parent's identity even when nothing shaped its request.
package identity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"orcr/core/wire"
	"orcr/internal/regfile"
	"orcr/internal/strictfile"
)

// MaxInstructions caps what an identity adds to a system prompt (DESIGN §18: 120 KB).
// It is also the size of the longest system prompt a provider is given as one
// command-line argument (the roles resolver refuses a longer one), so the cut keeps
// the whole system prompt under it: AGENTS.md is cut, with a warning, to the room left.
const MaxInstructions = 120 << 10

// maxFile bounds the AGENTS.md read: a larger file is cut anyway, so more is never read.
const maxFile = 4 << 20

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })

// ValidName reports whether name can be an identity (its directory's name).
func ValidName(name string) bool { return nameRE().MatchString(name) }

// Identity is one loaded identity.
type Identity struct {
	Name        string
	Dir         string // its directory (identity.toml, AGENTS.md)
	Description string
	// Instructions is AGENTS.md's text, whole ("" when there is none); Size is the
	// file's size.
	Instructions string
	Size         int
	// Memory is its memory directory (not made until an agent uses it).
	Memory string
}

// file is identity.toml as written.
type file struct {
	Description string `toml:"description,required"`
}

// Dirs says where identities live: Config holds each identity's directory, Data its
// memory.
type Dirs struct {
	Config string // $XDG_CONFIG_HOME/orcr/identities
	Data   string // $XDG_DATA_HOME/orcr/identities
}

// DefaultDirs are the XDG directories of the server's user.
func DefaultDirs() Dirs {
	home, _ := os.UserHomeDir()
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		cfg = filepath.Join(home, ".config")
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		data = filepath.Join(home, ".local", "share")
	}
	return Dirs{Config: filepath.Join(cfg, "orcr", "identities"), Data: filepath.Join(data, "orcr", "identities")}
}

// MemoryDir is the memory directory of identity name.
func (d Dirs) MemoryDir(name string) string { return filepath.Join(d.Data, name, "memory") }

// Load reads identity name. An unknown name, a broken identity.toml (its line) or an
// AGENTS.md that is not a regular file inside the identity's directory is an
// unknown_identity error: nothing may start as an identity that does not load.
func Load(ctx context.Context, d Dirs, name string) (*Identity, error) {
	if !ValidName(name) {
		return nil, wire.Errorf(wire.CodeUnknownIdentity, "invalid identity name %q: use [a-z0-9][a-z0-9._-]*", name)
	}
	dir := filepath.Join(d.Config, name)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, wire.Errorf(wire.CodeUnknownIdentity, "no identity %q (looked for the directory %s with an identity.toml)", name, dir)
	}
	toml, err := inside(dir, "identity.toml")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, wire.Errorf(wire.CodeUnknownIdentity, "identity %s has no identity.toml in %s; write one with description = \"…\"", name, dir)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnknownIdentity, "identity %s: %v", name, err)
	}
	var f file
	doc, err := strictfile.Load(ctx, toml, 0, &f)
	if doc == nil || err != nil {
		return nil, wire.Errorf(wire.CodeUnknownIdentity, "identity %s does not load:\n%v", name, err)
	}
	id := &Identity{Name: name, Dir: dir, Description: strings.TrimSpace(f.Description), Memory: d.MemoryDir(name)}
	b, err := readInstructions(ctx, dir)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnknownIdentity, "identity %s: %v", name, err)
	}
	id.Instructions, id.Size = strings.TrimRight(string(b), "\n"), len(b)
	return id, nil
}

// inside is the file name of dir, refused when it is a symlink that resolves outside
// dir: an identity whose AGENTS.md points at /etc/shadow would otherwise send that file
// to a model provider (and a broken identity.toml's error would quote it). A link to a
// file beside it is followed. A missing file's error is fs.ErrNotExist.
func inside(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	lst, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if lst.Mode()&fs.ModeSymlink == 0 {
		return p, nil
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s is a symlink that does not resolve: %w", name, err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("identity directory: %w", err)
	}
	if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s is a symlink to %s, outside the identity's directory %s; refused (copy the file in instead)", name, target, dir)
	}
	return target, nil
}

// readInstructions reads dir/AGENTS.md (nil when absent), a regular file inside dir.
func readInstructions(ctx context.Context, dir string) ([]byte, error) {
	p, err := inside(dir, "AGENTS.md")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := regfile.ReadMax(ctx, p, maxFile)
	if errors.Is(err, regfile.ErrTooLarge) {
		return nil, fmt.Errorf("AGENTS.md is over %d bytes; only %d bytes of it could be given to an agent: shorten it", maxFile, MaxInstructions)
	}
	if err != nil {
		return nil, fmt.Errorf("AGENTS.md: %w", err)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("AGENTS.md is not UTF-8 text")
	}
	return b, nil
}

// List reads every identity under d.Config, sorted by name; one that does not load is
// listed with its error.
func List(ctx context.Context, d Dirs) []Listed {
	ents, _ := os.ReadDir(d.Config)
	var out []Listed
	for _, e := range ents {
		if !e.IsDir() || !ValidName(e.Name()) {
			continue
		}
		id, err := Load(ctx, d, e.Name())
		if err != nil {
			out = append(out, Listed{Name: e.Name(), Err: err})
			continue
		}
		out = append(out, Listed{Name: e.Name(), Identity: id})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Listed is one entry of List.
type Listed struct {
	Name     string
	Identity *Identity
	Err      error
}
