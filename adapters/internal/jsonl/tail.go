// Package jsonl reads the newline-delimited JSON transcripts that coding-agent CLIs
// append to while they run. A Tail remembers the byte offset it has consumed, so each
// poll reads only new bytes; a torn last line (the CLI is mid-write) is left for the
// next poll; lines of many megabytes are fine up to a cap, and longer ones are skipped
// rather than held in memory.
package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// DefaultMaxLine caps one line (codex embeds whole files in a line).
const DefaultMaxLine = 16 << 20

// Tail follows one append-only JSONL file.
type Tail struct {
	Path string
	// MaxLine is the longest line delivered; longer lines are skipped. 0: DefaultMaxLine.
	MaxLine int

	off      int64  // bytes consumed (always just after a newline)
	skipping bool   // inside an over-long line, discarding until its newline
	buf      []byte // reused read buffer
	Skipped  int    // over-long lines skipped so far
}

// Offset is how many bytes have been consumed.
func (t *Tail) Offset() int64 { return t.off }

// Reset starts over from the beginning of the file (e.g. after it was replaced).
func (t *Tail) Reset() {
	t.off, t.skipping = 0, false
}

// ErrShrunk reports that the file is now shorter than what was consumed: it was
// truncated or replaced. The tail has been reset; the caller should drop what it
// derived from the old content and read again.
var ErrShrunk = errors.New("jsonl: file shrank")

// Read calls fn for each complete new line (without its newline) and returns how many
// lines it delivered. A missing file is not an error (fs.ErrNotExist is returned
// unwrapped so callers can tell "not yet"). The line slice is only valid during fn.
func (t *Tail) Read(ctx context.Context, fn func(line []byte)) (int, error) {
	f, err := os.Open(t.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, fs.ErrNotExist
		}
		return 0, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat transcript: %w", err)
	}
	if st.Size() < t.off {
		t.Reset()
		return 0, ErrShrunk
	}
	if st.Size() == t.off {
		return 0, nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return 0, fmt.Errorf("seek transcript: %w", err)
	}
	maxLine := t.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	if t.buf == nil {
		t.buf = make([]byte, 0, 1<<20)
	}
	// pending holds the bytes of the current line read so far, starting at t.off.
	pending := t.buf[:0]
	chunk := make([]byte, 1<<20)
	n := 0
	for {
		if n&63 == 0 && ctx.Err() != nil {
			break
		}
		r, rerr := f.Read(chunk)
		data := chunk[:r]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if t.skipping {
					t.off += int64(len(data))
				} else if len(pending)+len(data) > maxLine {
					t.skipping = true
					t.Skipped++
					t.off += int64(len(pending) + len(data))
					pending = pending[:0]
				} else {
					pending = append(pending, data...)
				}
				break
			}
			seg := data[:i]
			data = data[i+1:]
			if t.skipping {
				t.off += int64(len(seg) + 1)
				t.skipping = false
				continue
			}
			var line []byte
			if len(pending) == 0 {
				line = seg
			} else {
				pending = append(pending, seg...)
				line = pending
			}
			t.off += int64(len(line) + 1)
			if len(line) > maxLine {
				t.Skipped++
			} else if len(bytes.TrimSpace(line)) > 0 {
				fn(line)
				n++
			}
			pending = pending[:0]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, fmt.Errorf("read transcript: %w", rerr)
		}
	}
	if cap(pending) <= 4<<20 {
		t.buf = pending[:0]
	}
	return n, ctx.Err()
}
