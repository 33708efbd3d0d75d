package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger answers some damage by deleting data: opened without its MANIFEST it starts a new one
// and removes every table file the new one does not list, so a lost MANIFEST emptied the store
// and deleted the tables that could have rebuilt it. And without checksum verification, zeroed
// bytes inside a table opened cleanly while reads silently skipped what the bad blocks held (a
// subscriber from the start missed 1,259 events). So a store that looks damaged is refused
// with what to do, before badger touches it; tables are verified when opened.

// DamagedError reports a store orcr will not open.
type DamagedError struct {
	Dir, Why string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the store %s looks damaged (%s); orcr will not open it, so nothing in it is deleted. "+
		"Restore it from a backup, or move it aside to start with an empty store: mv %s %s.damaged",
		e.Dir, e.Why, e.Dir, e.Dir)
}

// checkIntact refuses a directory that holds table files but no MANIFEST.
func checkIntact(dir string) error {
	if _, err := os.Lstat(filepath.Join(dir, "MANIFEST")); err == nil || !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		return nil // a new store, or one whose data is all in its logs
	}
	return &DamagedError{Dir: dir, Why: fmt.Sprintf("%d table files but no MANIFEST", len(tables))}
}

// damagedOpen turns badger's open errors that mean damage into a DamagedError.
func damagedOpen(dir string, err error) error {
	msg := err.Error()
	// "Invalid datakey id": a value log whose header is garbage (orcr never encrypts, so
	// any key id there is damage).
	for _, sign := range []string{"checksum", "Checksum", "corrupt", "MANIFEST", "manifest", "bad magic", "Invalid datakey id"} {
		if strings.Contains(msg, sign) {
			return &DamagedError{Dir: dir, Why: msg}
		}
	}
	return nil
}

// verifyTables checks every table the MANIFEST lists against its checksums before badger opens
// them. Badger's own check at open (ChecksumVerificationMode OnTableRead) dereferences a nil
// block on the first unreadable one and kills the process from a goroutine nobody can recover,
// so the check runs here, on this goroutine, and a panic in it counts as damage.
func verifyTables(dir string, opt badger.Options) error {
	mfPath := filepath.Join(dir, "MANIFEST")
	fp, err := os.Open(mfPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open store %s: %w", dir, err)
	}
	m, _, err := badger.ReplayManifestFile(fp, opt.ExternalMagicVersion, opt)
	fp.Close()
	if err != nil {
		return &DamagedError{Dir: dir, Why: "unreadable MANIFEST: " + err.Error()}
	}
	for id, tm := range m.Tables {
		if tm.KeyID != 0 {
			continue // encrypted; orcr never encrypts, so not ours to check
		}
		path := table.NewFilename(id, dir)
		if _, err := os.Stat(path); err != nil {
			return &DamagedError{Dir: dir, Why: fmt.Sprintf("the MANIFEST lists table %s, which is missing", filepath.Base(path))}
		}
		if err := verifyTable(path, table.Options{ChkMode: options.NoVerification, Compression: tm.Compression,
			BlockSize: opt.BlockSize, BloomFalsePositive: opt.BloomFalsePositive, TableSize: uint64(opt.BaseTableSize)}); err != nil {
			return &DamagedError{Dir: dir, Why: fmt.Sprintf("table %s: %v", filepath.Base(path), err)}
		}
	}
	return nil
}

func verifyTable(path string, topt table.Options) (err error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer mf.Close(-1) // never Table.DecrRef: dropping the last reference deletes the file
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a block does not decode (zeroed or overwritten bytes)")
		}
	}()
	t, err := table.OpenTable(mf, topt)
	if err != nil {
		return err
	}
	return t.VerifyChecksum()
}
