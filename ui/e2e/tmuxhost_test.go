package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"orcr/testutil/proc"
	"orcr/testutil/wait"
)

// TestTmuxHostSpawnQuitAndBack runs the dashboard with its agents on orcr's own tmux
// server: a shell agent spawned from the form with a quoted command gets the argv a
// shell would build; one that exits at once shows its last screen; quitting says that
// the running agent keeps running and how to get back;
// the agent is still running in tmux, and `orcr` again shows it.
func TestTmuxHostSpawnQuitAndBack(t *testing.T) {
	r := newRig(t)
	for i, kv := range r.env {
		if kv == "ORCR_HOST=pty" {
			r.env[i] = "ORCR_HOST=tmux"
		}
	}
	agentSock := filepath.Join(r.home, "tmux.sock")
	t.Cleanup(func() {
		// The dashboard goes first: while it runs, its tmux host would start the agents'
		// tmux server again. Then the agents' server, which outlives orcr by design.
		_ = exec.Command("tmux", "-S", r.sock, "kill-server").Run()
		for _, pid := range r.pids {
			wait.For(t, 15*time.Second, "the dashboard to exit", func() bool { return proc.Gone(pid) })
		}
		_ = exec.Command("tmux", "-S", agentSock, "kill-server").Run()
	})

	r.start()
	r.waitText(20*time.Second, "agents 0", "host tmux")
	r.spawnShell("keep/sh", `sh -c 'echo quoted-ok; exec cat'`)
	// The quoted script ran as one argument: its echo is on the agent's screen.
	r.waitScreen("the spawned agent's output in the preview", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "─ keep/sh ") && strings.Contains(s, "quoted-ok")
	})
	var got struct{ Agent struct{ Argv []string } }
	if out := r.mustOrcr("agent", "get", "keep/sh", "--json"); json.Unmarshal([]byte(out), &got) != nil ||
		!reflect.DeepEqual(got.Agent.Argv, []string{"sh", "-c", "echo quoted-ok; exec cat"}) {
		t.Fatalf("argv %q from agent get:\n%s", got.Agent.Argv, out)
	}

	// An agent that exits at once shows its last screen in the preview without moving
	// the selection away and back. It exits once tmux has drawn its output: tmux before
	// 3.7 throws away what it has not read from a pane's pty when it reaps the pane's
	// process first (its window_pane_destroy_ready checks FIONREAD only for a piped
	// pane), which under load left the pane, and so the last screen, empty.
	// (A script: the command field shows about 55 characters.)
	once := filepath.Join(r.dir, "once.sh")
	if err := os.WriteFile(once, []byte("echo gone-at-once\nuntil tmux capture-pane -p -t \"$TMUX_PANE\" | grep -q gone-at-once; do sleep 0.1; done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.spawnShell("keep/once", "sh "+once)
	r.waitScreen("the exited agent's last screen", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "─ keep/once (last screen) ") && strings.Contains(s, "gone-at-once") &&
			strings.Contains(treeLine(s, "once"), "›")
	})
	// The preview's read can say the pane ended before the agent's exit reaches the
	// tree (an event, not a read); the farewell counts what the tree knows. Once under
	// a full suite's load the quit came between the two: "2 agents keep running".
	r.waitScreen("the exited agent ended in the tree", 20*time.Second, func(s string) bool {
		return strings.Contains(treeLine(s, "once"), "■")
	})

	r.keys("q")
	want := "orcr: 1 agent keeps running in tmux; `orcr` (or `orcr serve`) watches it again, `tmux -S " + agentSock + " attach` shows its pane"
	r.waitScreen("the dashboard to exit", 20*time.Second, func(string) bool { return r.paneDead() })
	// tmux moves a dead pane's last lines into its history, so read that too.
	var all string
	if !wait.Until(10*time.Second, func() bool {
		all = r.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "ui")
		return strings.Contains(all, want)
	}) {
		// Once under a full suite's load (session 16): the terminal's text says why.
		t.Fatalf("the farewell %q not on the terminal:\n%s", want, all)
	}
	out, err := exec.Command("tmux", "-S", agentSock, "list-panes", "-a", "-F", "#{pane_dead} #{pane_current_command}").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 cat") {
		t.Fatalf("the agent is not running in tmux after the quit: %v\n%s", err, out)
	}

	r.start()
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := r.orcr("agent", "ls", "--all")
			t.Logf("agent ls --all:\n%s", out)
		}
	})
	r.waitScreen("the agents back in the tree", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "agents 2 · 1 ended hidden") && live(treeLine(s, "sh")) && treeLine(s, "once") == ""
	})
	r.keys(".") // the exited agent, shown on demand
	r.waitScreen("the exited agent shown", 20*time.Second, func(s string) bool {
		return live(treeLine(s, "sh")) && strings.Contains(treeLine(s, "once"), "■")
	})
}

// spawnShell spawns a shell agent through the dashboard's form.
func (r *rig) spawnShell(path, command string) {
	t := r.t
	t.Helper()
	r.keys("n")
	r.waitText(10*time.Second, "spawn agent", "provider")
	r.keys("C-u")
	r.typeText(path)
	r.keys("Enter")
	for i := 0; !strings.Contains(r.screen(), "← shell →"); i++ {
		if i == 20 {
			t.Fatalf("provider select never reached shell:\n%s", r.screen())
		}
		before := providerShown(r.screen())
		r.keys("Right")
		r.pollScreen(time.Second, func(s string) bool { return providerShown(s) != before })
	}
	// Step to the command field one confirmed step at a time: a key typed while the
	// form is still moving focus lands in the previous field.
	for _, field := range []string{"model", "cwd", "command"} {
		r.keys("Enter")
		r.waitScreen("focus on "+field, 10*time.Second, func(string) bool { return r.formFocus(field) })
	}
	r.typeText(command)
	r.waitText(10*time.Second, "command  > "+command)
	r.keys("Enter", "Enter") // command, prompt: submit
}

var sgrColour = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// formFocus reports whether the spawn form's field title is drawn in the focused
// colour: the colour of the dialog's own title (both are the accent).
func (r *rig) formFocus(title string) bool {
	s := r.tmux("capture-pane", "-p", "-e", "-t", "ui")
	return colourBefore(s, " spawn agent ") != "" && colourBefore(s, title+"  ") == colourBefore(s, " spawn agent ")
}

// colourBefore is the foreground colour in effect where word first occurs, following
// the SGR sequences before it ("" for the default colour).
func colourBefore(s, word string) string {
	i := strings.Index(s, word)
	if i < 0 {
		return ""
	}
	fg := ""
	for _, seq := range sgrColour.FindAllString(s[:i], -1) {
		ps := strings.Split(strings.TrimSuffix(strings.TrimPrefix(seq, "\x1b["), "m"), ";")
		for k := 0; k < len(ps); k++ {
			switch ps[k] {
			case "", "0", "39":
				fg = ""
			case "38":
				n := 3 // 38;5;N
				if k+1 < len(ps) && ps[k+1] == "2" {
					n = 5 // 38;2;R;G;B
				}
				fg = strings.Join(ps[k:min(len(ps), k+n)], ";")
				k += n - 1
			case "48":
				if k+1 < len(ps) && ps[k+1] == "2" {
					k += 4
				} else {
					k += 2
				}
			}
		}
	}
	return fg
}
