package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/wire"
	"orcr/themes"
)

// withPreview selects the blocked agent and feeds it a screen, so the goldens show the
// preview, its state explanation and the blocked block.
func withPreview(m *Model) {
	press(m, "b")
	m.Update(readMsg{id: "0007", res: wire.ReadResult{Live: true, Text: "╭────────────────────────────╮\n│ Bash command               │\n│   rm -rf build             │\n│ Do you want to proceed?    │\n│ ❯ 1. Yes                   │\n│   2. Yes, and don't ask    │\n│   3. No                    │\n╰────────────────────────────╯\n"}})
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 11, At: t0, Agent: &fixture()[6], From: wire.StateWorking, To: wire.StateBlocked}}})
}

func TestGolden(t *testing.T) {
	for _, theme := range themes.BuiltinNames {
		for _, sz := range [][2]int{{80, 24}, {160, 48}} {
			t.Run(fmt.Sprintf("%s_%dx%d", theme, sz[0], sz[1]), func(t *testing.T) {
				m := newTestModel(t, sz[0], sz[1], Options{Theme: theme})
				withPreview(m)
				golden.RequireEqual(t, screen(t, m))
			})
		}
	}
}

func TestGoldenDialogs(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		name := fmt.Sprintf("%dx%d", sz[0], sz[1])
		t.Run("help_"+name, func(t *testing.T) {
			m := newTestModel(t, sz[0], sz[1], Options{})
			press(m, "?")
			golden.RequireEqual(t, screen(t, m))
		})
		t.Run("kill_"+name, func(t *testing.T) {
			m := newTestModel(t, sz[0], sz[1], Options{})
			selectPath(t, m, "demo")
			press(m, "K")
			m.Update(dryRunMsg{glob: "demo/**", agents: fixture()[:4]})
			press(m, "enter")
			golden.RequireEqual(t, screen(t, m))
		})
		t.Run("spawn_"+name, func(t *testing.T) {
			m := newTestModel(t, sz[0], sz[1], Options{})
			press(m, "n")
			golden.RequireEqual(t, screen(t, m))
		})
		t.Run("usage_"+name, func(t *testing.T) {
			m := newTestModel(t, sz[0], sz[1], Options{})
			press(m, "tab", "tab", "]")
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

// TestNoOverflowAnyWidth renders every width from the minimum up, with every panel tab
// and a dialog, and checks that no line is wider or narrower than the terminal.
func TestNoOverflowAnyWidth(t *testing.T) {
	for _, h := range []int{10, 24, 37} {
		for w := minW; w <= 200; w += 3 {
			m := newTestModel(t, w, h, Options{Theme: "high-contrast"})
			withPreview(m)
			for tab := 0; tab < int(nTabs); tab++ {
				m.panel.tab = panelTab(tab)
				screen(t, m)
			}
			press(m, "?")
			screen(t, m)
			press(m, "esc", "K")
			screen(t, m)
			for _, k := range []string{"n", "r", "s", "S"} {
				press(m, "esc", k)
				if len(m.dialogs) != 1 {
					t.Fatalf("%dx%d: %s opened no dialog", w, h, k)
				}
				screen(t, m)
			}
			press(m, "esc")
		}
	}
	// below the minimum: a one-line notice, still exactly w×h
	m := newTestModel(t, 30, 5, Options{})
	if !strings.Contains(plain(screen(t, m)), "needs at least") {
		t.Fatal("no notice below the minimum size")
	}
}

func TestThemeCycle(t *testing.T) {
	user := map[string]map[string]string{"mine": {"accent": "#123456"}}
	m := newTestModel(t, 100, 30, Options{UserThemes: user})
	first := screen(t, m)
	var seen []string
	for i := 0; i < 4; i++ {
		press(m, "T")
		seen = append(seen, m.themeName)
	}
	if strings.Join(seen, ",") != "light,high-contrast,mine,dark" {
		t.Fatalf("cycle = %v", seen)
	}
	m.status.notice = ""
	if screen(t, m) != first {
		t.Fatal("back on dark, the frame differs")
	}
	press(m, "T")
	if screen(t, m) == first {
		t.Fatal("light renders like dark")
	}
	if _, err := New(t.Context(), nil, Options{Theme: "nope"}); err == nil {
		t.Fatal("unknown theme accepted")
	}
}

// TestGoldenQuit: the quit dialog of an in-process dashboard, on the embedded host
// (its agents stop) and on tmux (only the server's listeners, schedules and runs do).
func TestGoldenQuit(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {200, 50}} {
		for _, host := range []string{"pty", "tmux"} {
			t.Run(fmt.Sprintf("%s_%dx%d", host, sz[0], sz[1]), func(t *testing.T) {
				m := newTestModel(t, sz[0], sz[1], Options{EmbeddedHost: host == "pty"})
				m.Update(infoMsg{info: wire.InfoResult{Version: 1, Host: host, LastSeq: 10}})
				ags := fixture()
				for i := range ags {
					ags[i].Host = host
				}
				m.Update(listMsg{agents: ags})
				press(m, "q")
				golden.RequireEqual(t, screen(t, m))
			})
		}
	}
}
