package ui

import (
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	listenapi "orcr/listen/api"
)

// runDialog feeds keys to a dialog and runs the commands it returns (form internals,
// never service calls: dialogs do no I/O) to their end, feeding their messages back,
// until it returns an action (see doCmd: only timers and blinks are not run).
func runDialog(t *testing.T, d dialog, keys ...tea.Msg) action {
	t.Helper()
	for _, msg := range doCmd(t, d.Init()) {
		feed(t, msg, d.Update)
	}
	for _, k := range keys {
		if act := feed(t, k, d.Update); act != nil {
			return act
		}
	}
	return nil
}

func keys(ss ...string) []tea.Msg {
	out := make([]tea.Msg, 0, len(ss))
	for _, s := range ss {
		out = append(out, key(s))
	}
	return out
}

func textKeys(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return out
}

func selectPath(t *testing.T, m *Model, path string) {
	t.Helper()
	n, ok := m.idx.byPath[path]
	if !ok {
		t.Fatalf("no %s", path)
	}
	before := m.selectedID()
	m.tree.selectNode(n)
	m.afterSelection(before)
}

func TestSteerOneLine(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo/a")
	press(m, "s")
	if len(m.dialogs) != 1 {
		t.Fatal("s did not open the steer dialog")
	}
	d := m.dialogs[0]
	act := runDialog(t, d, append(textKeys("run the tests"), key("enter"))...)
	sa, ok := act.(sendAction)
	if !ok || !reflect.DeepEqual(sa.p, wire.SendParams{Target: "0001", Text: "run the tests", Enter: true}) {
		t.Fatalf("action = %#v", act)
	}
	if cmd := m.updateAction(act); cmd == nil || len(m.dialogs) != 0 {
		t.Fatal("send action did not close the dialog with a command")
	}
}

func TestSteerMultiLine(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo/a")
	press(m, "S")
	msgs := append(textKeys("line one"), key("enter"))
	msgs = append(msgs, textKeys("line two")...)
	act := runDialog(t, m.dialogs[0], append(msgs, key("ctrl+s"))...)
	sa, ok := act.(sendAction)
	if !ok || sa.p.Text != "line one\nline two" || !sa.p.Enter {
		t.Fatalf("action = %#v", act)
	}
}

func TestSteerRefusedOnEndedAgent(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "build/lint")
	press(m, "s")
	if len(m.dialogs) != 0 || !strings.Contains(m.status.notice, "cannot take input") {
		t.Fatalf("steer on exited agent: dialogs %d notice %q", len(m.dialogs), m.status.notice)
	}
}

func TestAnswerNeedsBlocked(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo/a")
	press(m, "r")
	if len(m.dialogs) != 0 || !strings.Contains(m.status.notice, "not blocked") {
		t.Fatal("answer opened on a working agent")
	}
}

func TestSpawnForm(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo/a")
	press(m, "n")
	if len(m.dialogs) != 1 {
		t.Fatal("n did not open the spawn form")
	}
	msgs := textKeys("x")                                         // path is prefilled with the selection's parent "demo/"
	msgs = append(msgs, key("enter"), key("right"), key("enter")) // provider: codex
	msgs = append(msgs, textKeys("gpt-5")...)
	msgs = append(msgs, key("enter"))
	msgs = append(msgs, textKeys("/tmp")...)
	msgs = append(msgs, key("enter"))
	msgs = append(msgs, textKeys("--permission-mode default")...)
	msgs = append(msgs, key("enter"))
	msgs = append(msgs, textKeys("fix it")...)
	act := runDialog(t, m.dialogs[0], append(msgs, key("enter"))...)
	ra, ok := act.(runAction)
	if !ok {
		t.Fatalf("action = %#v", act)
	}
	want := wire.RunParams{Path: "demo/x", Provider: "codex", Model: "gpt-5", Cwd: "/tmp",
		Argv: []string{"--permission-mode", "default"}, Prompt: "fix it"}
	if !reflect.DeepEqual(ra.p, want) {
		t.Fatalf("run params = %#v", ra.p)
	}
}

// TestSpawnFormOffersTheServersProviders: the form offers the providers the server
// says it runs (server.info), not a list of the dashboard's own: on a server with pi
// and shell only, pi is the first choice and shell the next.
func TestSpawnFormOffersTheServersProviders(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	m.Update(infoMsg{info: wire.InfoResult{Version: 1, Host: "tmux", LastSeq: 10, Providers: []string{"pi", "shell"}}})
	press(m, "n")
	msgs := textKeys("demo/p")
	msgs = append(msgs, key("enter"), key("right"), key("enter")) // provider: the next after the first
	msgs = append(msgs, key("enter"), key("enter"))               // model, cwd
	msgs = append(msgs, textKeys("true")...)
	msgs = append(msgs, key("enter"), key("enter"))
	ra, ok := runDialog(t, m.dialogs[0], msgs...).(runAction)
	if !ok || ra.p.Provider != "shell" {
		t.Fatalf("run params = %#v; want the server's second provider, shell", ra.p)
	}
}

// TestSpawnFormQuotedCommand: the command field splits like a shell, so a quoted
// script reaches the server as one argument; an unterminated quote keeps the form open
// with the reason instead of spawning something else.
func TestSpawnFormQuotedCommand(t *testing.T) {
	spawn := func(command string) (action, *Model) {
		m := newTestModel(t, 100, 30, Options{})
		press(m, "n")
		msgs := textKeys("demo/q")
		msgs = append(msgs, key("enter"), key("left"), key("enter")) // provider: shell (last, wraps)
		msgs = append(msgs, key("enter"), key("enter"))              // model, cwd
		msgs = append(msgs, textKeys(command)...)
		msgs = append(msgs, key("enter"), key("enter"))
		return runDialog(t, m.dialogs[0], msgs...), m
	}
	act, _ := spawn(`sh -c 'echo ok; exec cat'`)
	ra, ok := act.(runAction)
	if !ok {
		t.Fatalf("action = %#v", act)
	}
	if want := []string{"sh", "-c", "echo ok; exec cat"}; ra.p.Provider != "shell" || !reflect.DeepEqual(ra.p.Argv, want) {
		t.Fatalf("run params = %#v", ra.p)
	}
	act, m := spawn(`sh -c 'echo ok`)
	if act != nil {
		t.Fatalf("an unterminated quote submitted %#v", act)
	}
	if v := plain(screen(t, m)); !strings.Contains(v, "unterminated ' quote") {
		t.Fatalf("no reason shown:\n%s", v)
	}
}

func TestSpawnFormRejectsBadPath(t *testing.T) {
	for _, p := range []string{"", "Bad/Path", "a//b", "-x"} {
		if validPath(p) == nil {
			t.Errorf("%q accepted", p)
		}
	}
	for _, p := range []string{"review/auth", "a.b/c_d-1"} {
		if err := validPath(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestKillByGlob(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo")
	press(m, "K")
	if len(m.dialogs) != 1 {
		t.Fatal("K did not open the kill dialog")
	}
	d := m.dialogs[0].(*killDialog)
	if d.in.Value() != "demo/**" {
		t.Fatalf("glob prefilled %q", d.in.Value())
	}
	d.Init()
	// The dialog asks for a dry run of the prefilled glob on its first update.
	_, act := d.Update(key("end"))
	if act != (dryRunAction{"demo/**"}) {
		t.Fatalf("first action = %#v", act)
	}
	// Enter before the matches are known does nothing: no blind kills.
	if _, act := d.Update(key("enter")); act != nil || d.confirm {
		t.Fatal("enter confirmed without a match list")
	}
	matches := []wire.Agent{fixture()[0], fixture()[1], fixture()[2]}
	m.Update(dryRunMsg{glob: "demo/**", agents: matches})
	v := plain(screen(t, m))
	if !strings.Contains(v, "3 agents match") || !strings.Contains(v, "demo/b") {
		t.Fatalf("match list:\n%s", v)
	}
	press(m, "enter")
	if !d.confirm || !strings.Contains(plain(screen(t, m)), "kill 3 agents matching demo/**?") {
		t.Fatal("enter did not ask for confirmation")
	}
	press(m, "n")
	if d.confirm || len(m.dialogs) != 1 {
		t.Fatal("n did not back out of the confirmation")
	}
	press(m, "enter")
	_, act = d.Update(key("y"))
	// The action carries the agents the user saw: exactly those are killed.
	if ka, ok := act.(killAction); !ok || ka.glob != "demo/**" || !reflect.DeepEqual(ka.agents, matches) {
		t.Fatalf("confirm action = %#v", act)
	}
	if cmd := m.updateAction(act); cmd == nil || len(m.dialogs) != 0 {
		t.Fatal("kill action did not close the dialog with a command")
	}
}

func TestKillDialogCoalescesDryRuns(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	d := newKillDialog(m.c, "")
	d.Init()
	var acts []action
	for _, r := range "demo" {
		_, a := d.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		if a != nil {
			acts = append(acts, a)
		}
	}
	if len(acts) != 1 || acts[0] != (dryRunAction{"d"}) {
		t.Fatalf("dry runs while typing = %#v", acts)
	}
	// The answer for "d" arrives; the glob moved on, so exactly one more is asked.
	_, a := d.Update(dryRunMsg{glob: "d"})
	if a != (dryRunAction{"demo"}) {
		t.Fatalf("follow-up = %#v", a)
	}
}

func TestQuitEmbedded(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{EmbeddedHost: true})
	for _, a := range fixture() {
		a.Host = "pty"
		m.idx.upsert(a)
	}
	if cmd := press(m, "q"); len(m.dialogs) != 1 || cmd != nil {
		t.Fatal("q with live embedded agents did not ask")
	}
	if s := plain(screen(t, m)); !strings.Contains(s, "6 agents on the embedded host") || !strings.Contains(s, "2 schedules") {
		t.Fatalf("quit dialog:\n%s", plain(screen(t, m)))
	}
	press(m, "esc")
	if len(m.dialogs) != 0 || m.quitting {
		t.Fatal("esc did not cancel")
	}
	press(m, "q")
	cmd := press(m, "k")
	if m.Quit() != QuitKeepInBackground || cmd == nil {
		t.Fatalf("k: choice %v", m.Quit())
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("k did not quit")
	}

	m = newTestModel(t, 100, 30, Options{EmbeddedHost: true})
	for _, a := range fixture() {
		a.Host = "pty"
		m.idx.upsert(a)
	}
	press(m, "q", "s")
	if m.Quit() != QuitStopAgents {
		t.Fatalf("s: %v", m.Quit())
	}
}

func TestQuitPlain(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	m.Update(infoMsg{info: wire.InfoResult{Version: 1, Host: "tmux", Home: "/home/u/.local/state/orcr", LastSeq: 10}})
	m.Update(schedulesMsg{}) // nothing but the agents, which live on in tmux
	cmd := press(m, "q")
	if cmd == nil || m.Quit() != QuitPlain || len(m.dialogs) != 0 {
		t.Fatal("q did not quit plainly on a non-embedded host with nothing to stop")
	}
	// On tmux the agents outlive the dashboard: the farewell says so and how to get back.
	want := "orcr: 6 agents keep running in tmux; `orcr` (or `orcr serve`) watches them again, " +
		"`tmux -S /home/u/.local/state/orcr/tmux.sock attach` shows their panes"
	if got := m.Farewell(); got != want {
		t.Fatalf("farewell:\n got %q\nwant %q", got, want)
	}
}

// TestQuitSaysWhatStops: an in-process dashboard on tmux whose server has schedules,
// listeners and a run's autopilot says so on quit and offers to keep them running
// (the hand-off to a background server is not only for the embedded host); "s"
// quits plainly with the farewell, "k" keeps everything in the background.
func TestQuitSaysWhatStops(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	m.Update(listenersMsg{ls: []listenapi.Listener{{Name: "issues", State: "enabled"}}})
	m.Update(listMsg{agents: runAgents()})
	press(m, "q")
	if len(m.dialogs) != 1 {
		t.Fatal("q with schedules, a listener and a run did not ask")
	}
	s := plain(screen(t, m))
	for _, want := range []string{"quitting stops", "1 listener", "2 schedules", "1 run's autopilot", "k keep running in the background", "agents keep running in tmux"} {
		if !strings.Contains(s, want) {
			t.Fatalf("quit dialog lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "embedded host") {
		t.Fatalf("the dialog counts tmux agents as stopping:\n%s", s)
	}
	cmd := press(m, "s")
	if m.Quit() != QuitPlain || cmd == nil || !strings.Contains(m.Farewell(), "keep running in tmux") {
		t.Fatalf("s: choice %v farewell %q", m.Quit(), m.Farewell())
	}
	m = newTestModel(t, 100, 30, Options{})
	press(m, "q", "k")
	if m.Quit() != QuitKeepInBackground {
		t.Fatalf("k on tmux: %v", m.Quit())
	}
	// Connected to a server of its own, nothing stops: no question.
	m = newTestModel(t, 100, 30, Options{Mode: "connected"})
	press(m, "q")
	if len(m.dialogs) != 0 || !m.quitting {
		t.Fatal("a connected dashboard asked on quit")
	}
}

func TestQuitFarewell(t *testing.T) {
	// Connected to a separate server: it keeps watching.
	m := newTestModel(t, 100, 30, Options{Mode: "connected"})
	m.Update(infoMsg{info: wire.InfoResult{Version: 1, PID: 4242, Host: "pty", LastSeq: 10}})
	press(m, "q")
	if got := m.Farewell(); !strings.HasPrefix(got, "orcr: 6 agents keep running under the orcr server (pid 4242); `orcr` reconnects") {
		t.Fatalf("connected farewell %q", got)
	}
	// Nothing live: nothing to say.
	m = newTestModel(t, 100, 30, Options{})
	for _, n := range m.idx.byID {
		a := *n.agent
		a.State, a.UpdatedAt = wire.StateKilled, t0.Add(time.Hour)
		m.upsert(a)
	}
	press(m, "q", "s")
	if got := m.Farewell(); got != "" {
		t.Fatalf("farewell with nothing running: %q", got)
	}
	// One agent on herdr.
	m = newTestModel(t, 100, 30, Options{})
	m.Update(infoMsg{info: wire.InfoResult{Version: 1, Host: "herdr", LastSeq: 10}})
	for _, n := range m.idx.byID {
		if a := *n.agent; a.ID != "0001" {
			a.State, a.UpdatedAt = wire.StateExited, t0.Add(time.Hour)
			m.upsert(a)
		}
	}
	press(m, "q", "s")
	if got := m.Farewell(); got != "orcr: 1 agent keeps running in the herdr session orcr; `orcr` (or `orcr serve`) watches it again" {
		t.Fatalf("herdr farewell %q", got)
	}
}

func TestHelpGeneratedFromKeymap(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{Keymap: "vim", KeyOverrides: map[string][]string{"tree.kill": {"X"}}})
	press(m, "?")
	v := plain(screen(t, m))
	for _, want := range []string{"keys — vim", "k/↑", "kill by glob (confirms)", "X "} {
		if !strings.Contains(v, want) {
			t.Fatalf("help lacks %q:\n%s", want, v)
		}
	}
	press(m, "?")
	if len(m.dialogs) != 0 {
		t.Fatal("? did not close help")
	}
	// the override is live: X opens the kill dialog, K no longer does
	press(m, "K")
	if len(m.dialogs) != 0 {
		t.Fatal("K still kills after override")
	}
	press(m, "X")
	if _, ok := m.dialogs[0].(*killDialog); !ok {
		t.Fatal("X did not open kill")
	}
}
