package ui

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atotto/clipboard"
)

// fakeTool writes an executable script named name into dir.
func fakeTool(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The dashboard's text inputs copy and paste through orcr's stand-in for
// atotto/clipboard (third_party/clipboard): the first installed tool in PATH, looked up
// when asked; xclip is a script here (this machine has no X display for the real one),
// keeping the clipboard in a file, so the test sees the arguments and the bytes.
func TestClipboardCopiesAndPastesThroughTheInstalledTool(t *testing.T) {
	bin, store := t.TempDir(), filepath.Join(t.TempDir(), "clip")
	fakeTool(t, bin, "xclip", `case "$*" in
"-in -selection clipboard") cat > "`+store+`" ;;
"-out -selection clipboard") cat "`+store+`" ;;
*) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
`)
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("WAYLAND_DISPLAY", "")
	const text = "two\nlines\tand a tab ✓"
	if err := clipboard.WriteAll(text); err != nil {
		t.Fatal(err)
	}
	got, err := clipboard.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got != text {
		t.Fatalf("pasted %q, copied %q", got, text)
	}
	if clipboard.Unsupported {
		t.Fatal("Unsupported is set, yet a tool is installed")
	}
}

// Under Wayland, wl-copy/wl-paste come first even where xclip is installed too.
func TestClipboardPrefersWaylandsToolsInAWaylandSession(t *testing.T) {
	bin := t.TempDir()
	fakeTool(t, bin, "xclip", "echo from-xclip\n")
	fakeTool(t, bin, "wl-copy", "cat >/dev/null\n")
	fakeTool(t, bin, "wl-paste", `[ "$*" = "--no-newline" ] || exit 2; printf from-wayland`+"\n")
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("WAYLAND_DISPLAY", "wayland-0")
	got, err := clipboard.ReadAll()
	if err != nil || got != "from-wayland" {
		t.Fatalf("ReadAll = %q, %v; want wl-paste's answer", got, err)
	}
	t.Setenv("WAYLAND_DISPLAY", "")
	if got, err := clipboard.ReadAll(); err != nil || got != "from-xclip\n" {
		t.Fatalf("ReadAll outside Wayland = %q, %v; want xclip's answer", got, err)
	}
}

// With no tool, a paste says what to install and a failing tool's own message reaches
// the user; a copy goes to the terminal as OSC 52.
func TestClipboardWithoutAToolSaysSoAndCopiesThroughTheTerminal(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("WAYLAND_DISPLAY", "")
	if _, err := clipboard.ReadAll(); err == nil || !strings.Contains(err.Error(), "xclip") {
		t.Fatalf("ReadAll with no tool: %v, want an error naming the tools to install", err)
	}
	bin := t.TempDir()
	fakeTool(t, bin, "xclip", "echo 'Error: Can'\\''t open display: (null)' >&2; exit 1\n")
	t.Setenv("PATH", bin)
	if _, err := clipboard.ReadAll(); err == nil || !strings.Contains(err.Error(), "open display") {
		t.Fatalf("ReadAll with a failing xclip: %v, want its message", err)
	}
	var b bytes.Buffer
	if err := clipboard.WriteOSC52(&b, "hé"); err != nil {
		t.Fatal(err)
	}
	if want := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte("hé")) + "\x07"; b.String() != want {
		t.Fatalf("OSC 52 = %q, want %q", b.String(), want)
	}
}
