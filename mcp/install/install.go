// Package install is `orcr install PROVIDER [--mcp] [--remove]` (DESIGN §17): it writes
// orcr's skills orcr-plan, orcr-run and orcr-status into the user's own agent CLI in
// that CLI's native format, and with --mcp registers `orcr mcp` in its MCP config.
// Every file it writes or changes is recorded first in a manifest under orcr's home
// with the bytes it had (or that it did not exist), so --remove puts back exactly what
// was there; a file the user changed since is not overwritten blindly (see Remove).
package install

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Options say what to install where.
type Options struct {
	Provider string
	MCP      bool
	// Bin is how agents call orcr (the absolute path of this orcr).
	Bin string
	// Home is orcr's home (ORCR_HOME): the manifests live under it.
	Home string
	// Env reads the environment (the config-dir variables, HOME).
	Env func(string) string
}

// Report says what was done, a line per thing.
type Report struct {
	Dir     string
	Lines   []string
	Changed bool
}

// manifest records what install changed in one provider's config dir.
type manifest struct {
	Provider string `json:"provider"`
	Dir      string `json:"dir"`
	// Files by absolute path, in the order they were first changed.
	Files []fileEntry `json:"files"`
	// Dirs are the folders install made, outermost first.
	Dirs []string `json:"dirs"`
}

type fileEntry struct {
	Path string `json:"path"`
	// Existed: the file was there before; Original its bytes and Mode its mode.
	Existed  bool        `json:"existed"`
	Original []byte      `json:"original,omitempty"`
	Mode     fs.FileMode `json:"mode,omitempty"`
	// Written is the sha256 of what install last wrote.
	Written string `json:"written"`
	// MCP marks the provider's MCP config (Remove can take orcr out of a changed one).
	MCP bool `json:"mcp,omitempty"`
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func lookup(name string) (provider, error) {
	p, ok := providers[name]
	if !ok {
		return provider{}, fmt.Errorf("unknown provider %q: orcr installs into %s", name, strings.Join(Names, ", "))
	}
	return p, nil
}

// configDir is the provider's config dir, which must exist and take writes.
func configDir(p provider, env func(string) string) (string, error) {
	dir, from := p.dir(env)
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s's config dir %q (%s) is not an absolute path", p.name, dir, from)
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s's config dir %s (%s) does not exist: run %s once, or point %s at its config dir", p.name, dir, from, p.name, strings.TrimPrefix(from, "$"))
	case err != nil:
		return "", fmt.Errorf("%s's config dir %s: %w", p.name, dir, err)
	case !st.IsDir():
		return "", fmt.Errorf("%s's config dir %s (%s) is not a folder", p.name, dir, from)
	}
	f, err := os.CreateTemp(dir, ".orcr-install-probe-*")
	if err != nil {
		return "", fmt.Errorf("%s's config dir %s is not writable (%v): nothing was changed", p.name, dir, errors.Unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return filepath.Clean(dir), nil
}

func manifestPath(home, provider, dir string) string {
	return filepath.Join(home, "installs", provider+"-"+sum([]byte(dir))[:12]+".json")
}

func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("orcr's install manifest %s is damaged (%v): remove orcr's files by hand, then delete it", path, err)
	}
	return &m, nil
}

func writeManifest(path string, m *manifest) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, b, 0o600)
}

// writeAtomic writes b to path through a temporary file in the same folder.
func writeAtomic(path string, b []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".orcr-install-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, mode)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Install writes the skills (and with MCP the registration). It is idempotent: a file
// that already holds what it would write is left alone.
func Install(o Options) (Report, error) {
	p, err := lookup(o.Provider)
	if err != nil {
		return Report{}, err
	}
	if o.MCP && p.mcp == nil {
		return Report{}, fmt.Errorf("%s has no MCP support: its prompts call the orcr CLI, so install it without --mcp", p.name)
	}
	dir, err := configDir(p, o.Env)
	if err != nil {
		return Report{}, err
	}
	mpath := manifestPath(o.Home, p.name, dir)
	m, err := readManifest(mpath)
	if err != nil {
		return Report{}, err
	}
	if m == nil {
		m = &manifest{Provider: p.name, Dir: dir}
	}
	if o.MCP {
		if err := m.canRegister(p, p.mcp.path(dir, o.Env), o.Bin); err != nil {
			return Report{}, err
		}
	}
	rep := Report{Dir: dir}
	// Every change is recorded in the manifest before it is made.
	want := p.files(o.Bin)
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		changed, err := m.write(mpath, path, false, func(old []byte) ([]byte, error) { return []byte(want[n]), nil })
		if err != nil {
			return rep, err
		}
		rep.note(changed, "wrote "+path, "up to date "+path)
	}
	if o.MCP {
		path := p.mcp.path(dir, o.Env)
		changed, err := m.write(mpath, path, true, func(old []byte) ([]byte, error) {
			b, err := p.mcp.add(old, o.Bin)
			if err != nil {
				return nil, fmt.Errorf("register orcr mcp in %s: %w", path, err)
			}
			return b, nil
		})
		if err != nil {
			return rep, err
		}
		rep.note(changed, "registered `"+o.Bin+" mcp` as MCP server orcr in "+path, "orcr mcp already registered in "+path)
	}
	if !rep.Changed {
		rep.Lines = append(rep.Lines, "orcr is installed into "+p.name+" already; nothing changed")
	} else {
		rep.Lines = append(rep.Lines, "in "+p.name+": "+p.invoke+" (run it under orcr: `orcr agent run me --provider "+p.name+"`); undo with `orcr install "+p.name+" --remove`")
	}
	return rep, nil
}

// canRegister says whether orcr's MCP registration can go into the provider's MCP
// config at path as it is now (a config that does not parse, is a folder, or has an
// `orcr` server the user registered refuses it), before any skill is written: a
// refused install changes nothing.
func (m *manifest) canRegister(p provider, path, bin string) error {
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: nothing was changed", err)
	}
	if err == nil && slices.ContainsFunc(m.Files, func(f fileEntry) bool { return f.Path == path }) {
		if cleaned, err := p.mcp.del(cur); err == nil {
			cur = cleaned // ours from an earlier install: it is registered again on top
		}
	}
	if _, err := p.mcp.add(cur, bin); err != nil {
		return fmt.Errorf("register orcr mcp in %s: %w; nothing was changed", path, err)
	}
	return nil
}

func (r *Report) note(changed bool, yes, no string) {
	if changed {
		r.Changed = true
		r.Lines = append(r.Lines, yes)
	} else {
		r.Lines = append(r.Lines, no)
	}
}

// write makes path hold what make returns from its current bytes (nil when missing),
// recording the original first. A file install wrote before whose bytes still are
// what it wrote is only rewritten when make gives something else; for the MCP config,
// a file already holding orcr's registration (ours) is left as is.
func (m *manifest) write(mpath, path string, mcp bool, make func(old []byte) ([]byte, error)) (bool, error) {
	cur, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err // "read PATH: …" already
	}
	i := slices.IndexFunc(m.Files, func(f fileEntry) bool { return f.Path == path })
	if i >= 0 && exists && sum(cur) == m.Files[i].Written {
		if mcp {
			return false, nil // our registration is there, untouched
		}
		next, err := make(cur)
		if err != nil {
			return false, err
		}
		if bytes.Equal(next, cur) {
			return false, nil
		}
	}
	var base []byte
	if exists {
		base = cur
	}
	if i >= 0 && mcp && exists && sum(cur) != m.Files[i].Written {
		// Changed since install (the CLI rewrites its config): register again on top.
		if cleaned, err := providersDel(m.Provider)(cur); err == nil {
			base = cleaned
		}
	}
	next, err := make(base)
	if err != nil {
		return false, err
	}
	if exists && bytes.Equal(next, cur) {
		return false, nil
	}
	mode := fs.FileMode(0o644)
	if mcp {
		mode = 0o600 // a config that may hold tokens
	}
	if i < 0 {
		e := fileEntry{Path: path, Existed: exists, MCP: mcp}
		if exists {
			e.Original = cur
			if st, err := os.Stat(path); err == nil {
				e.Mode = st.Mode().Perm()
				mode = e.Mode
			}
		}
		m.Files = append(m.Files, e)
		i = len(m.Files) - 1
		if err := m.mkdirs(mpath, filepath.Dir(path)); err != nil {
			return false, err
		}
	} else if m.Files[i].Existed && m.Files[i].Mode != 0 {
		mode = m.Files[i].Mode
	}
	m.Files[i].Written = sum(next)
	if err := writeManifest(mpath, m); err != nil {
		return false, fmt.Errorf("record what orcr install changes in %s: %w", mpath, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	if err := writeAtomic(path, next, mode); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

func providersDel(name string) func([]byte) ([]byte, error) {
	p := providers[name]
	if p.mcp == nil {
		return func([]byte) ([]byte, error) { return nil, errors.New("no MCP config") }
	}
	return p.mcp.del
}

// mkdirs records the folders of dir that do not exist yet (outermost first) before
// they are made, so Remove takes them away again.
func (m *manifest) mkdirs(mpath, dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for _, d := range missing {
		if !slices.Contains(m.Dirs, d) {
			m.Dirs = append(m.Dirs, d)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return writeManifest(mpath, m)
}

// Remove undoes Install: each file gets back the bytes it had (or goes, when install
// made it), and the folders install made go when empty. A file changed since install
// is not overwritten: a skill file the user edited is kept and named; an MCP config the
// CLI rewrote has just orcr's entry taken out.
func Remove(o Options) (Report, error) {
	p, err := lookup(o.Provider)
	if err != nil {
		return Report{}, err
	}
	dir, from := p.dir(o.Env)
	dir = filepath.Clean(dir)
	mpath := manifestPath(o.Home, p.name, dir)
	m, err := readManifest(mpath)
	if err != nil {
		return Report{}, err
	}
	if m == nil {
		return Report{Dir: dir}, fmt.Errorf("orcr is not installed into %s at %s (%s): nothing to remove", p.name, dir, from)
	}
	rep := Report{Dir: dir}
	var kept []string
	for i := len(m.Files) - 1; i >= 0; i-- {
		f := m.Files[i]
		cur, err := os.ReadFile(f.Path)
		gone := errors.Is(err, fs.ErrNotExist)
		if err != nil && !gone {
			return rep, fmt.Errorf("read %s: %w", f.Path, err)
		}
		switch {
		case !gone && sum(cur) == f.Written && f.Existed:
			if err := writeAtomic(f.Path, f.Original, f.Mode); err != nil {
				return rep, fmt.Errorf("restore %s: %w", f.Path, err)
			}
			rep.Lines = append(rep.Lines, "restored "+f.Path)
		case !gone && sum(cur) == f.Written:
			if err := os.Remove(f.Path); err != nil {
				return rep, err
			}
			rep.Lines = append(rep.Lines, "removed "+f.Path)
		case gone:
			rep.Lines = append(rep.Lines, "already gone "+f.Path)
		case f.MCP:
			next, err := p.mcp.del(cur)
			if err != nil {
				return rep, fmt.Errorf("%s changed since orcr install and %w", f.Path, err)
			}
			if err := writeAtomic(f.Path, next, f.Mode|0o600); err != nil {
				return rep, err
			}
			rep.Lines = append(rep.Lines, "took orcr out of "+f.Path+" (it changed since install, so the rest of it stays as it is now)")
		default:
			kept = append(kept, f.Path)
			rep.Lines = append(rep.Lines, "kept "+f.Path+": it changed since install (delete it yourself if you do not want it)")
		}
		rep.Changed = true
	}
	for i := len(m.Dirs) - 1; i >= 0; i-- {
		if err := os.Remove(m.Dirs[i]); err == nil {
			rep.Lines = append(rep.Lines, "removed "+m.Dirs[i]+"/")
		}
	}
	if err := os.Remove(mpath); err != nil {
		return rep, err
	}
	if len(kept) > 0 {
		rep.Lines = append(rep.Lines, fmt.Sprintf("%d file(s) you changed were kept", len(kept)))
	}
	return rep, nil
}
