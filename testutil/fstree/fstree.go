// Package fstree snapshots a folder for tests that must leave one byte for byte as
// they found it (orcr install and remove).
package fstree

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Snapshot is every file and folder under dir with its mode, and a regular file's
// bytes: two snapshots equal means byte for byte the same folder.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		v := st.Mode().String()
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
