// Package regfile reads the files a user hands orcr — config, plans, the catalog, roles,
// skills, listeners, per-repo hooks, templates — refusing anything that is not a regular
// file, anything over a size bound, and any read that does not finish in time.
//
// Why: a plan symlinked to /dev/zero was read without bound until the server was
// OOM-killed (and a run whose plan was swapped re-crashed 36 s after every restart), and a
// plan that was a FIFO parked one OS thread in open(2) per `run status` until the process
// could create no more threads. Symlinks are followed on purpose (users keep their config
// in a dotfiles repository); what counts is the file the link ends at.
package regfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// MaxConfig bounds every config-like file: config.toml, plans, the catalog, roles,
// listeners, hooks, templates. The largest real one (a 40-milestone plan) is ~30 KiB.
const MaxConfig = 4 << 20

// Timeout bounds one read. A regular file on a local disk reads in microseconds; one on
// a hung network or FUSE mount would otherwise hold the caller (and its OS thread) forever.
const Timeout = 10 * time.Second

// ErrNotRegular and ErrTooLarge are what a refused file's error wraps.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
	ErrTimeout    = errors.New("read timed out")
)

// Read reads the regular file at path (symlinks followed), at most MaxConfig bytes,
// within Timeout. A missing file's error satisfies errors.Is(err, fs.ErrNotExist).
func Read(path string) ([]byte, error) {
	return ReadMax(context.Background(), path, MaxConfig)
}

// ReadMax is Read with the caller's context and bound.
func ReadMax(ctx context.Context, path string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	type result struct {
		b   []byte
		err error
	}
	// The open and the read run on their own goroutine so a mount that never answers
	// costs that goroutine, not the caller: the caller gets an error it can report.
	done := make(chan result, 1)
	go func() {
		b, err := read(path, max)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w after %s; check the file system it is on", path, ErrTimeout, Timeout)
	}
}

func read(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, holding
	// an OS thread per call. On a regular file the flag changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %w (it is %s); point it at a regular file", path, ErrNotRegular, kind(st.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %s (%w); orcr reads no more, so shorten it", path, size(max), ErrTooLarge)
	}
	return b, nil
}

// kind names a non-regular file's type for the refusal.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
