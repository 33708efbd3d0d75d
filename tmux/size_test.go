package tmux

import (
	"context"
	"os"
	"testing"

	"orcr/core"
)

// TestSizesIndependent checks that each pane keeps its own launch size: launching a
// pane of another size, or resizing one, changes no other pane.
func TestSizesIndependent(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	sizes := [][2]int{{200, 50}, {80, 24}, {120, 40}}
	var ids []string
	for i, sz := range sizes {
		info, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "size/" + string(rune('a'+i)), Argv: []string{"sh", "-c", "stty size; exec cat"},
			Env: baseEnv(), Cwd: os.TempDir(), Cols: sz[0], Rows: sz[1]})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	if err := h.Resize(ctxT(t), ids[1], 100, 30); err != nil {
		t.Fatal(err)
	}
	sizes[1] = [2]int{100, 30}
	for i, id := range ids {
		s, err := h.Read(ctxT(t), id, core.ReadOpts{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Cols != sizes[i][0] || s.Rows != sizes[i][1] {
			t.Errorf("pane %d is %dx%d, want %dx%d", i, s.Cols, s.Rows, sizes[i][0], sizes[i][1])
		}
	}
}
