// Package secretenv keeps the values of an agent's environment (--env, a role's env) out of
// everything orcr shows or stores: the record keeps the names with Redacted for each value,
// and the values live in a 0600 file in the agent's state directory that only the launch
// reads. A value may name a secret, {{secret.NAME}}, kept in secrets.toml beside
// config.toml; it is resolved at launch and written nowhere.
package secretenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"orcr/internal/strictfile"
)

// Redacted stands for every value in a record's env.
const Redacted = "<redacted>"

// FileName is the values file in an agent's state directory.
const FileName = "env.json"

// maxFile bounds what Load and the secrets file read; both are a handful of lines.
const maxFile = 1 << 20

// visible says whether a name's value may stay in the record: the ORCR_* names are orcr's
// own lineage and listener bookkeeping (§4), set by orcr and read back from records (a
// listener recognises its agents by ORCR_LISTENER_EVENT after a restart), never a
// credential.
func visible(name string) bool { return strings.HasPrefix(name, "ORCR_") }

// Redact returns env with every value but the ORCR_* ones replaced by Redacted.
func Redact(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if visible(k) {
			out[k] = v
		} else {
			out[k] = Redacted
		}
	}
	return out
}

// IsRedacted reports whether a record's env hides values (they are in the values file).
func IsRedacted(env map[string]string) bool {
	for k, v := range env {
		if v == Redacted && !visible(k) {
			return true
		}
	}
	return false
}

// saveSeq names each Save's temporary file.
var saveSeq atomic.Uint64

// Save writes env's values into dir/env.json, mode 0600, never through a link; dir is made
// 0700 when missing.
func Save(dir string, env map[string]string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("keep env values: %w", err)
	}
	b, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("keep env values: %w", err)
	}
	path := filepath.Join(dir, FileName)
	// A fresh file beside it, renamed over: a reader never sees half a file, and O_EXCL
	// with O_NOFOLLOW never writes through whatever might sit at the name. Its name is
	// this save's own: two saves of one agent at once (a spawn handed over twice after
	// a restart) each rename a whole file, where one shared name let the second remove
	// the first's file under it and fail the agent's launch.
	var f *os.File
	var tmp string
	for i := 0; ; i++ {
		tmp = fmt.Sprintf("%s.new-%d-%d", path, os.Getpid(), saveSeq.Add(1))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i >= 100 {
			return fmt.Errorf("keep env values: %w", err)
		}
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("keep env values: %w", err)
	}
	return nil
}

// Load reads the values Save kept in dir; ok is false when there is no file (a record
// written before values were kept apart holds them itself).
func Load(dir string) (env map[string]string, ok bool, err error) {
	path := filepath.Join(dir, FileName)
	b, err := readNoFollow(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read env values: %w", err)
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, false, fmt.Errorf("read env values %s: %w", path, err)
	}
	return env, true, nil
}

func openNoFollow(path string) (*os.File, error) {
	// O_NONBLOCK: a FIFO put in the file's place must not hold the spawn in open(2).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink; orcr will not follow it: remove it (rm %s)", path, path)
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file; make it one (rm %s and write it again)", path, path)
	}
	return f, nil
}

func readNoFollow(path string) ([]byte, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFile))
}

var secretRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*secret\.([A-Za-z0-9_.-]+)\s*\}\}`) })

// Names returns the secret names env's values refer to, sorted.
func Names(env map[string]string) []string {
	seen := map[string]bool{}
	for _, v := range env {
		for _, m := range secretRef().FindAllStringSubmatch(v, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resolve returns env with each {{secret.NAME}} replaced by its value from the secrets
// file at path. An env naming no secret is returned as is, without reading the file.
func Resolve(env map[string]string, path string) (map[string]string, error) {
	names := Names(env)
	if len(names) == 0 {
		return env, nil
	}
	secrets, err := LoadSecrets(path)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := secrets[n]; !ok {
			return nil, fmt.Errorf("secret %q is not in %s: add it there (%s = \"…\")", n, path, n)
		}
	}
	out := maps.Clone(env)
	for k, v := range out {
		out[k] = secretRef().ReplaceAllStringFunc(v, func(ref string) string {
			return secrets[secretRef().FindStringSubmatch(ref)[1]]
		})
	}
	return out, nil
}

// LoadSecrets reads the secrets file (NAME = "value" lines). It must be a regular file of
// this user that nobody else can read or write (0600): anything else is refused with the fix.
func LoadSecrets(path string) (map[string]string, error) {
	if path == "" {
		return nil, errors.New("an env value names a {{secret.NAME}} but no secrets file is set")
	}
	f, err := openNoFollow(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("an env value names a {{secret.NAME}} but %s does not exist: create it (NAME = \"value\" lines) with mode 0600", path)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	defer f.Close()
	// The checks are on the file opened, not on the name, which could change in between.
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: orcr reads secrets only from a plain file of yours", path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s belongs to uid %d, not to this server's user (uid %d): orcr reads secrets only from your own file; "+
			"chown %d %s", path, sys.Uid, os.Geteuid(), os.Geteuid(), path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable or writable by other users (mode %#o): orcr reads secrets only from a private file; chmod 600 %s",
			path, st.Mode().Perm(), path)
	}
	// One byte past the bound tells a file over it from one at it: a longer file is
	// refused, never cut (a cut file silently lost the secrets past the cut).
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s is larger than %d MiB; orcr reads no more, so shorten it", path, maxFile>>20)
	}
	// The one strict loader: a value that is not a string is named at its line.
	var out map[string]string
	if _, err := strictfile.Decode(path, b, &out); err != nil {
		return nil, fmt.Errorf("secrets (NAME = \"value\" lines): %w", err)
	}
	if out == nil {
		out = map[string]string{}
	}
	return out, nil
}
