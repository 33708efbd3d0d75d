package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"orcr/github/githubtest"
	planapi "orcr/orchestrate/api"
	"orcr/orchestrate/run"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// runRig is a real `orcr serve` on the tmux host whose runs' lead, coders and reviewer
// are the real claude CLI, all talking to one scripted model server that routes each
// request by the working directory claude names in its system prompt: the repository
// (the plan's and the run's lead), a milestone's worktree (whoever codes it) or the
// reviewer's checkout (by the milestone under review). A fake GitHub answers finish.
type runRig struct {
	*env
	t      *testing.T
	name   string
	repo   string
	bare   string
	models *modelserver.Server
	gh     *githubtest.Server
}

const ghRepo = "octo/app"

// extra are more variables of the server's environment (later ones win).
func newRunRig(t *testing.T, name string, extra ...string) *runRig {
	t.Helper()
	return newRunRigConfig(t, name, "", extra...)
}

// newRunRigConfig is newRunRig whose server reads config (more lines of its
// config.toml) at its start.
func newRunRigConfig(t *testing.T, name, config string, extra ...string) *runRig {
	t.Helper()
	ms, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	gh := githubtest.New(t, githubtest.WithToken("gh-test-token", "octo"))
	gh.AddRepo(ghRepo)
	dir := settledTempDir(t)
	claude := clis.ScriptedClaude(t, dir, ms.URL)
	r := &runRig{t: t, name: name, repo: filepath.Join(dir, "app"), bare: filepath.Join(dir, "origin.git"), models: ms, gh: gh}
	// HOME is empty: claude's Bash sources no user shell setup (a pyenv rehash there
	// held commands for a minute and dropped orcr from PATH).
	os.MkdirAll(filepath.Join(dir, "user"), 0o700)
	r.env = newTmuxEnv(t, append(append(claude, "HOME="+filepath.Join(dir, "user"), "GH_TOKEN=gh-test-token", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"), extra...)...)
	cfg := r.configDir()
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "config.toml"), []byte(fmt.Sprintf("[github]\napi_url = %q\n", gh.URL+"/")+config), 0o600); err != nil {
		t.Fatal(err)
	}
	r.git(dir, "init -q --bare "+r.bare)
	os.MkdirAll(r.repo, 0o755)
	r.git(r.repo, "init -q -b main")
	os.WriteFile(filepath.Join(r.repo, "README.md"), []byte("# app\n"), 0o644)
	os.WriteFile(filepath.Join(r.repo, "check.sh"), []byte(checkScript), 0o755)
	r.git(r.repo, "add -A")
	r.git(r.repo, "commit -qm init")
	// origin is "on GitHub" (the fake's host) for the PR; pushes go to the bare repo.
	remote := gh.URL + "/" + ghRepo + ".git"
	r.git(r.repo, "remote add origin "+remote)
	r.git(r.repo, "config url."+r.bare+".pushInsteadOf "+remote)
	ms.Route(r.route)
	r.serve()
	t.Cleanup(func() {
		if t.Failed() {
			r.dump()
		}
		r.stopAgents()
	})
	return r
}

// checkScript is the plan's check: every *.txt must end with the line "signed-off".
const checkScript = `#!/bin/sh
status=0
for f in *.txt; do
	[ -e "$f" ] || continue
	last=$(tail -n 1 "$f")
	if [ "$last" != "signed-off" ]; then
		echo "FAIL $f: its last line must be signed-off, not: $last"
		status=1
	fi
done
[ $status = 0 ] && echo "PASS: every file signed off"
exit $status
`

func (r *runRig) configDir() string {
	for _, kv := range r.vars {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			return filepath.Join(v, "orcr")
		}
	}
	r.t.Fatal("no XDG_CONFIG_HOME")
	return ""
}

func (r *runRig) git(dir, args string) string {
	r.t.Helper()
	cmd := exec.Command("git", strings.Fields(args)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

var reReview = regexp.MustCompile(`You review milestone (M\d+)`)

// route is the script key of a request: "lead" in the repository, the milestone in
// its worktree, "review/M1" in the reviewer's checkout (the milestone it was last
// asked about).
func (r *runRig) route(q modelserver.Request) string {
	cwd := modelserver.ClaudeCwd(q)
	switch {
	case cwd == r.repo:
		return "lead"
	case cwd == run.ReviewDir(r.home, r.name):
		all := reReview.FindAllSubmatch(q.Body, -1)
		if len(all) == 0 {
			return "review/?"
		}
		return "review/" + string(all[len(all)-1][1])
	case filepath.Dir(cwd) == filepath.Dir(r.worktree("M1")):
		return filepath.Base(cwd)
	}
	return "" // not an agent of the run: the main script's default reply
}

func (r *runRig) worktree(m string) string { return run.WorktreeDir(r.home, r.name, m) }

// The scripted turns: each is a tool call the CLI really runs, or what the model says.

func write(path, content string) modelserver.Turn {
	return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": path, "content": content}}},
		Usage: modelserver.Usage{Input: 120, Output: 30}}
}

func read(path string) modelserver.Turn {
	return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Read", Input: map[string]any{"file_path": path}}},
		Usage: modelserver.Usage{Input: 80, Output: 10}}
}

func edit(path, old, new string) modelserver.Turn {
	return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": path, "old_string": old, "new_string": new}}},
		Usage: modelserver.Usage{Input: 110, Output: 25}}
}

func bash(command string) modelserver.Turn {
	return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{"command": command, "description": "run " + strings.Fields(command)[0]}}},
		Usage: modelserver.Usage{Input: 100, Output: 20}}
}

func say(text string) modelserver.Turn {
	return modelserver.Turn{Text: text, Usage: modelserver.Usage{Input: 60, Output: 15}}
}

// saying is t (a tool call) with text before it in the same message.
func saying(text string, t modelserver.Turn) modelserver.Turn {
	t.Text = text
	return t
}

// when plays t only on a request that carries text (a message the autopilot sent);
// any other request gets the default reply and t waits.
func when(text string, t modelserver.Turn) modelserver.Turn {
	t.Match = func(q modelserver.Request) bool { return strings.Contains(q.LastUser(), text) }
	return t
}

// commitDone is the coder's last step: commit everything and report the milestone.
func commitDone(m, msg string) modelserver.Turn {
	return bash(fmt.Sprintf("git add -A && git commit -qm %q && orcr run done %s", m+": "+msg, m))
}

// request is the request that played turn n of script key.
func (r *runRig) request(key string, n int) modelserver.Request {
	r.t.Helper()
	for _, q := range r.models.Requests() {
		if q.Scripted && q.Script == key && q.Turn == n {
			return q
		}
	}
	r.t.Fatalf("no request played turn %d of %s", n, key)
	return modelserver.Request{}
}

// saw reports whether a request of script key carried text in its last user message
// (a tool's result, a message typed into the pane).
func (r *runRig) saw(key, text string) bool {
	for _, q := range r.models.Requests() {
		if q.Script == key && strings.Contains(q.LastUser(), text) {
			return true
		}
	}
	return false
}

// approvePlan has the plan's lead (real claude) write the plan file, then approves it.
func (r *runRig) approvePlan(plan string) {
	r.t.Helper()
	file := filepath.Join(r.repo, ".orcr", "plans", r.name+".md")
	r.models.PushTo("lead", write(file, plan), say("The plan is written."))
	r.must("plan", "new", r.name, "the request", "--repo", r.repo, "--lead", "claude")
	waitPlanState(r.t, r.env, r.name, "drafted", 120*time.Second)
	r.must("plan", "approve", r.name)
}

func waitPlanState(t *testing.T, e *env, name, state string, d time.Duration) {
	t.Helper()
	var got planapi.PlanGetResult
	if !wait.Until(d, func() bool {
		json.Unmarshal([]byte(e.orcr("plan", "show", name, "--json").Out), &got)
		return got.Plan.State == state || got.Plan.State == "failed"
	}) || got.Plan.State != state {
		t.Fatalf("plan %s never became %s: %+v", name, state, got.Plan)
	}
}

func (r *runRig) status() runapi.RunView {
	v, err := r.client().RunStatus(context.Background(), r.name)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

func (r *runRig) milestone(v runapi.RunView, id string) runapi.RunMilestone {
	for _, m := range v.Milestones {
		if m.ID == id {
			return m
		}
	}
	r.t.Fatalf("no milestone %s in %+v", id, v.Milestones)
	return runapi.RunMilestone{}
}

// waitState waits until milestone m is in state; the failure shows the run's log.
func (r *runRig) waitState(m, state string, d time.Duration) runapi.RunMilestone {
	r.t.Helper()
	var got runapi.RunMilestone
	if !wait.Until(d, func() bool { got = r.milestone(r.status(), m); return got.State == state }) {
		r.t.Fatalf("%s never became %s in %v (it is %s, waits for %s)", m, state, d, got.State, got.Waits)
	}
	return got
}

func (r *runRig) events() []runapi.RunEntry {
	es, err := r.client().RunEvents(context.Background(), runapi.RunEventsParams{Name: r.name})
	if err != nil {
		r.t.Fatal(err)
	}
	return es
}

// facts is the run's log of facts about milestone m (or all, for ""), as "kind M".
func (r *runRig) facts(m string) string {
	var out []string
	for _, e := range r.events() {
		if e.Type == "fact" && (m == "" || e.M == m) {
			out = append(out, e.Kind)
		}
	}
	return strings.Join(out, " ")
}

// notes is the text of the run's log entries about milestone m.
func (r *runRig) notes(m string) string {
	var out []string
	for _, e := range r.events() {
		if e.M == m {
			out = append(out, e.Text)
		}
	}
	return strings.Join(out, "\n")
}

// dump logs what a failed run test needs: the run's log, the agents' screens, the
// model server's requests.
func (r *runRig) dump() {
	t := r.t
	if r.srv == nil {
		return
	}
	var b strings.Builder
	es, _ := r.client().RunEvents(context.Background(), runapi.RunEventsParams{Name: r.name})
	for _, e := range es {
		fmt.Fprintf(&b, "%d %s %s %s %s\n", e.Seq, e.Type, e.Kind, e.M, firstLine(e.Text))
	}
	t.Logf("run log:\n%s", b.String())
	for _, who := range []string{"lead", "coder-1", "coder-2", "coder-3", "reviewer"} {
		if res := r.orcr("agent", "read", run.AgentPath(r.name, who)); res.Code == 0 {
			t.Logf("%s screen:\n%s", who, res.Out)
		}
	}
	for _, q := range r.models.Requests() {
		if len(modelserver.Conversation([]modelserver.Request{q})) == 1 {
			t.Logf("request %q (cwd %s) turn %d scripted %v status %d: %.300q", q.Script, modelserver.ClaudeCwd(q), q.Turn, q.Scripted, q.Status, q.LastUser())
		}
	}
	t.Logf("server output:\n%s", r.srv.Output())
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// stopAgents ends the run's and the plan's agents (claude processes on the test's
// tmux server) and waits until they are gone, so none writes into the test's
// folders while they are removed.
func (r *runRig) stopAgents() { stopAgentProcs(r.t, r.env, "runs/**", "plans/**") }

// pullRequest reads pull request n of the fake GitHub as a client would.
func (r *runRig) pullRequest(n int) (title, head, base, body string) {
	r.t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/repos/%s/pulls/%d", r.gh.URL, ghRepo, n), nil)
	req.Header.Set("Authorization", "Bearer gh-test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var pr struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  struct {
			Ref string `json:"ref"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pr); err != nil || resp.StatusCode != 200 {
		r.t.Fatalf("pull request %d: %d %v", n, resp.StatusCode, err)
	}
	return pr.Title, pr.Head.Ref, pr.Base.Ref, pr.Body
}
