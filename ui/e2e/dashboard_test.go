package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestDashboard is the operator's whole loop on the real binary: agents spawned by the
// CLI appear in the tree, attach and detach leave the dashboard intact, steering types
// into the agent, kill by glob
// goes through the dialog with its match list and confirmation, and quitting and
// restarting keeps the tree.
func TestDashboard(t *testing.T) {
	r := newRig(t)
	r.start()
	r.waitText(20*time.Second, "agents 0", "in-process")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := r.orcr("agent", "read", "ops/three")
			t.Logf("ops/three's screen:\n%s", out)
		}
	})

	// Three agents spawned by the CLI against the dashboard's in-process server.
	for _, p := range []string{"demo/one", "demo/two", "ops/three"} {
		name := p[strings.LastIndexByte(p, '/')+1:]
		r.mustOrcr("agent", "run", p, "--", r.fake, "--name", name)
	}
	s := r.waitScreen("three agents in the tree", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "agents 3") && treeLine(s, "one") != "" && treeLine(s, "two") != "" && treeLine(s, "three") != ""
	})
	if !strings.Contains(treeLine(s, "demo/"), "2 agents") {
		t.Fatalf("no roll-up on demo/:\n%s", s)
	}

	// Resize to the smallest supported size and back: the frame follows, nothing wraps.
	r.tmux("resize-window", "-t", "ui", "-x", "80", "-y", "24")
	r.waitScreen("an 80×24 frame", 10*time.Second, func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 24 && strings.HasPrefix(lines[0], "╭─ agents 3 ") && strings.HasSuffix(lines[0], "╮") &&
			len([]rune(lines[0])) == 80 && strings.HasPrefix(lines[22], "╰") && strings.HasSuffix(lines[22], "╯")
	})
	r.tmux("resize-window", "-t", "ui", "-x", "160", "-y", "48")
	r.waitScreen("a 160×48 frame", 10*time.Second, func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 48 && len([]rune(lines[0])) == 160 && strings.HasSuffix(lines[46], "╯")
	})

	// Find ops/three fuzzily (the finder selects its best match as it is typed), see
	// its live screen in the preview, attach.
	r.keys("/")
	r.typeText("opthr")
	r.keys("Enter")
	r.waitText(10*time.Second, "/ opthr  1 match")
	r.waitText(10*time.Second, "─ ops/three ", "three>")
	r.keys("Enter")
	r.waitScreen("the attached agent's own screen", 15*time.Second, func(s string) bool {
		return !strings.Contains(s, "─ ops/three ") && strings.Contains(s, "three>")
	})
	r.typeText("echo attached-ok")
	r.keys("Enter")
	r.waitText(10*time.Second, "attached-ok")
	r.keys("C-]")
	r.waitText(15*time.Second, "─ ops/three ", "detached", "/ opthr")
	// Steer: one line typed into the agent; its answer shows in the live preview.
	r.keys("s")
	r.waitText(10*time.Second, "steer", "to ops/three")
	r.typeText("echo steered-ok")
	r.keys("Enter")
	r.waitScreen("the steered line echoed in the preview", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "─ ops/three ") && strings.Count(s, "steered-ok") >= 2 // typed and echoed
	})

	r.keys("Escape") // clear the filter
	r.waitScreen("filter cleared", 10*time.Second, func(s string) bool {
		return treeLine(s, "one") != "" && !strings.Contains(s, "/ opthr")
	})

	// Spawn through the form: path, provider (shell), command.
	r.keys("n")
	r.waitText(10*time.Second, "spawn agent", "provider")
	r.keys("C-u")
	r.typeText("ops/four")
	r.keys("Enter")
	// Step the provider select to shell, one confirmed step at a time (a key sent
	// while the form is still moving focus lands on the previous field).
	for i := 0; !strings.Contains(r.screen(), "← shell →"); i++ {
		if i == 20 {
			t.Fatalf("provider select never reached shell:\n%s", r.screen())
		}
		before := providerShown(r.screen())
		r.keys("Right")
		r.pollScreen(time.Second, func(s string) bool { return providerShown(s) != before })
	}
	r.keys("Enter", "Enter", "Enter") // provider, model, cwd
	r.typeText(r.fake + " --name four")
	r.waitText(10*time.Second, "--name four")
	r.keys("Enter", "Enter") // command, prompt: submit
	s = r.waitScreen("the spawned agent selected", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "agents 4") && strings.Contains(treeLine(s, "four"), "›")
	})

	// Kill demo/** through the dialog: live matches, confirmation, result.
	r.keys("K")
	r.waitText(10*time.Second, "kill by glob", "glob ›")
	r.keys("C-u")
	r.typeText("demo/**")
	r.waitText(10*time.Second, "2 agents match:", "demo/one", "demo/two")
	r.keys("Enter")
	r.waitText(10*time.Second, "kill 2 agents matching demo/**?")
	r.keys("y")
	s = r.waitText(20*time.Second, "killed 2 of 2 matching demo/**")
	// Ended agents leave the tree (the title counts them); `.` shows them.
	r.waitScreen("the killed agents hidden", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "2 ended hidden") && treeLine(s, "one") == "" && treeLine(s, "two") == ""
	})
	r.keys(".")
	s = r.waitScreen("demo agents shown killed", 20*time.Second, func(s string) bool {
		return strings.Contains(treeLine(s, "one"), "✕") && strings.Contains(treeLine(s, "two"), "✕") &&
			live(treeLine(s, "three"))
	})
	out := r.mustOrcr("agent", "ls", "--all")
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "demo/one", "demo/two":
			if f[1] != "killed" {
				t.Fatalf("agent ls after kill:\n%s", out)
			}
		case "ops/three":
			if f[1] == "killed" {
				t.Fatalf("ops/three killed too:\n%s", out)
			}
		}
	}

	// Both survivors must show live before quitting: the dialog counts what the tree
	// knows at the key press (under load ops/four can still be queued behind the
	// memory gate).
	r.waitScreen("ops/three and ops/four live", 30*time.Second, func(s string) bool {
		return live(treeLine(s, "three")) && live(treeLine(s, "four"))
	})
	// Quit: an agent still runs on the embedded host, so the dashboard asks. Stop it.
	// A key that lands while the kill dialog is still closing goes to it, so press q
	// again while no quit dialog has come up.
	for i := 0; i < 4; i++ {
		r.keys("q")
		if r.pollScreen(3*time.Second, func(s string) bool { return strings.Contains(s, "agents on the embedded host") }) {
			break
		}
	}
	r.waitText(10*time.Second, "2 agents on the embedded host", "keep running in the background", "stop them")
	r.keys("s")
	r.waitScreen("the dashboard to exit", 20*time.Second, func(string) bool { return r.paneDead() })

	// Restart: the tree comes back from the store.
	r.start()
	r.waitText(20*time.Second, "agents 4", "every agent has ended — press . to show them")
	r.keys(".")
	s = r.waitScreen("the tree after restart", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "agents 4") && treeLine(s, "one") != "" && treeLine(s, "three") != "" && treeLine(s, "four") != ""
	})
	if l := treeLine(s, "three") + treeLine(s, "four"); live(l) {
		t.Fatalf("ops/three still shown live after stop:\n%s", s)
	}
	r.keys("q")
	r.waitScreen("the dashboard to exit again", 20*time.Second, func(string) bool { return r.paneDead() })
}

// live reports whether a tree row shows a live state's glyph.
func live(row string) bool {
	return strings.ContainsAny(row, "◔○●▲✓")
}

// providerShown is the spawn form's current provider ("← claude →" → "claude").
func providerShown(s string) string {
	i := strings.Index(s, "← ")
	if i < 0 {
		return ""
	}
	rest := s[i+len("← "):]
	if j := strings.Index(rest, " →"); j >= 0 {
		return rest[:j]
	}
	return ""
}
