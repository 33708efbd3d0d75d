package pty

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// BenchmarkEmulatorLines feeds 100-line chunks to an emulator whose 5000-line
// scrollback is already full: the reader goroutine's cost per chunk of a flood.
func BenchmarkEmulatorLines(b *testing.B) {
	emu := vt.NewEmulator(200, 50)
	emu.SetScrollbackSize(5000)
	chunk := []byte(strings.Repeat(strings.Repeat("z", 120)+"\r\n", 100))
	for range 60 {
		_, _ = emu.Write(chunk)
	}
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = emu.Write(chunk)
	}
}
