package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// viewStates are the dashboard states the View purity test draws: the tree with agents
// (moved, folded, filtered), the preview scrolled, every panel tab scrolled, and every
// dialog in each of its modes. Each is reached through Update only, as the program
// reaches it.
var viewStates = []struct {
	name string
	open func(t *testing.T) *Model
}{
	{"tree", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		press(m, "down", "down", "down", "left")
		return m
	}},
	{"tree_filter", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		press(m, "/")
		typeText(m, "auth")
		return m
	}},
	{"tree_find", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		m.Update(listMsg{agents: manyAgents(300)})
		press(m, "/")
		typeText(m, "ag12 state:blocked")
		return m
	}},
	{"tree_status_sorted", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		m.Update(listMsg{agents: manyAgents(300)})
		press(m, "f", ">", ">", ".", "G")
		return m
	}},
	{"tree_many", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		m.Update(listMsg{agents: manyAgents(300)})
		press(m, "G", "pgdown", "up", "space")
		return m
	}},
	{"theme_switched", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		withPreview(m)
		press(m, "T")
		return m
	}},
	{"preview_scrolled", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		withPreview(m)
		m.Update(readMsg{id: "0007", res: wire.ReadResult{Live: true, Text: strings.Repeat("a line of the screen\n", 80)}})
		press(m, "tab")
		for range 120 {
			press(m, "up")
		}
		return m
	}},
	{"preview_colour_scrollback", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		withPreview(m)
		m.Update(readMsg{id: "0007", res: wire.ReadResult{Live: true, Text: colourScreen(80)}})
		press(m, "tab", "pgup", "pgup")
		m.Update(readMsg{id: "0007", res: wire.ReadResult{Live: true, Text: colourScreen(200)}})
		press(m, "pgup")
		return m
	}},
	{"diff", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		withPreview(m)
		press(m, "D")
		d := m.dialogs[len(m.dialogs)-1].(*diffDialog)
		m.Update(diffMsg{d: d, seq: d.seq, res: sampleDiff()})
		for range 100 {
			press(m, "down")
		}
		return m
	}},
	{"panel_tabs", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		for i := range 20 {
			a := fixture()[i%len(fixture())]
			a.UpdatedAt = a.UpdatedAt.Add(time.Duration(i+1) * time.Second)
			m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: uint64(20 + i), At: t0, Agent: &a}}})
		}
		m.Update(listenersMsg{ls: fixtureListeners()})
		press(m, "tab", "tab")
		for range 5 { // every tab, scrolled past its end, ending on the listeners
			press(m, "]", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down")
		}
		press(m, "up")
		return m
	}},
	{"help", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		press(m, "?")
		for range 40 {
			press(m, "down")
		}
		return m
	}},
	{"quit", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{EmbeddedHost: true})
		a := agent("0040", "demo/pty", wire.StateWorking, "shell", "", time.Minute, 0, nil)
		a.Host = "pty"
		m.Update(listMsg{agents: []wire.Agent{a}})
		press(m, "q", "down")
		return m
	}},
	{"fork", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		selectPath(t, m, "demo/a")
		press(m, "F")
		return m
	}},
	{"restart", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		selectPath(t, m, "demo/a")
		press(m, "ctrl+r")
		return m
	}},
	{"plan_new", func(t *testing.T) *Model {
		m := openPlans(t, 100, 30)
		press(m, "n")
		return m
	}},
	{"offline", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{Mode: "connected"})
		m.Update(subEndedMsg{})
		return m
	}},
	{"spawn", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		press(m, "n")
		typeText(m, "demo/x")
		return m
	}},
	{"steer", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		selectPath(t, m, "demo/a")
		press(m, "s")
		typeText(m, "run the tests")
		return m
	}},
	{"steer_multi", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		selectPath(t, m, "demo/a")
		press(m, "S")
		typeText(m, "one")
		press(m, "enter")
		typeText(m, "two")
		return m
	}},
	{"kill", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		selectPath(t, m, "demo/a")
		press(m, "K")
		m.Update(dryRunMsg{glob: "demo/a", agents: fixture()[:1]})
		press(m, "enter")
		return m
	}},
	{"answer_permission", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		press(m, "b", "r", "down", "down")
		return m
	}},
	{"answer_plan_scrolled", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		blockedOn(t, m, planPrompt())
		press(m, "r")
		for range 10 {
			press(m, "pgdown")
		}
		return m
	}},
	{"answer_typing", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		blockedOn(t, m, planPrompt())
		press(m, "r", "3")
		typeText(m, "split it in two")
		return m
	}},
	{"answer_question", func(t *testing.T) *Model {
		m := newTestModel(t, 100, 30, Options{})
		blockedOn(t, m, &wire.Blocked{Kind: "question", Detail: "Which branch?", Question: "Which branch?"})
		press(m, "r")
		typeText(m, "main")
		return m
	}},
	{"plans_list", func(t *testing.T) *Model { return openPlans(t, 100, 30) }},
	{"plans_view", func(t *testing.T) *Model {
		m := openPlans(t, 100, 30)
		press(m, "enter")
		for range 30 {
			press(m, "pgdown")
		}
		return m
	}},
	{"plans_form", func(t *testing.T) *Model {
		m := openPlans(t, 100, 30)
		press(m, "enter", "A")
		return m
	}},
	{"runs_list", func(t *testing.T) *Model { return openRunsView(t, 100, 30, Options{}) }},
	{"runs_view", func(t *testing.T) *Model {
		m := openRun(t, 100, 30, Options{})
		press(m, "down")
		return m
	}},
	{"runs_summary", func(t *testing.T) *Model {
		m := openRunsView(t, 100, 30, Options{})
		press(m, "down", "s")
		m.Update(runSummaryMsg{name: "auth", path: "/src/app/.orcr/runs/auth/summary.md", text: fixtureSummary})
		for range 30 {
			press(m, "pgdown")
		}
		return m
	}},
	{"runs_form", func(t *testing.T) *Model {
		m := openRun(t, 100, 30, Options{})
		press(m, "down", "a")
		return m
	}},
	{"history", func(t *testing.T) *Model {
		m, _ := openHistory(t, 100, 30, Options{})
		press(m, "down", "down")
		return m
	}},
	{"history_filter", func(t *testing.T) *Model {
		m, _ := openHistory(t, 100, 30, Options{})
		press(m, "/")
		typeText(m, "review/**")
		return m
	}},
	{"history_resume", func(t *testing.T) *Model {
		m, _ := openHistory(t, 100, 30, Options{})
		press(m, "enter")
		typeText(m, "go on")
		return m
	}},
}

// viewSizes are the terminal sizes each state is drawn at after a resize: the base
// size, too small to lay out, the smallest laid out, huge, and a common one.
var viewSizes = [][2]int{{100, 30}, {20, 6}, {40, 10}, {400, 120}, {80, 24}}

// TestViewChangesNothing: View is a pure function of the model. For every state and
// every size, the model after drawing it (three times, and each pane on its own) is
// field for field the model before: layout, clamping and the preview's selection
// happen in Update and SetSize, never in View.
func TestViewChangesNothing(t *testing.T) {
	for _, st := range viewStates {
		t.Run(st.name, func(t *testing.T) {
			m := st.open(t)
			for _, sz := range viewSizes {
				m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				viewIsPure(t, m, fmt.Sprintf("%s at %dx%d", st.name, sz[0], sz[1]))
			}
		})
	}
}

// viewIsPure draws m and fails when drawing changed anything in it.
func viewIsPure(t *testing.T, m *Model, what string) {
	t.Helper()
	before := snapshot(m)
	for range 3 {
		_ = m.View()
		_ = m.tree.View()
		_ = m.preview.View()
		_ = m.panel.View()
		_ = m.status.View(m.statusInfo())
	}
	if d := snapshotDiff(before, snapshot(m)); d != "" {
		t.Fatalf("drawing %s changed the model:\n%s", what, d)
	}
}
