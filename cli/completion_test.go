package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/cli"
	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/orchestrate"
	"orcr/orchestrate/run"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/wait"
)

// shellComplete completes the words of line (a command line ending where the user
// presses tab) with the completion script of sh run by the real shell, and returns
// the candidates it offers.
func shellComplete(t *testing.T, e *binEnv, sh, line string) []string {
	t.Helper()
	script := filepath.Join(e.Dir, "orcr."+sh)
	if err := os.WriteFile(script, []byte(e.must("completion", sh)), 0o644); err != nil {
		t.Fatal(err)
	}
	var prog []string
	switch sh {
	case "bash":
		// As bash does on tab: COMP_WORDS split at blanks, the cursor word last.
		prog = []string{"bash", "--norc", "--noprofile", "-c", `source "$1"; complete -p orcr >&2
read -ra COMP_WORDS <<< "$2"; [[ "$2" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _orcr_complete; printf '%s\n' "${COMPREPLY[@]}"`, "bash", script, line}
	case "zsh":
		// compadd and _files are stood in for by functions that print what they are
		// given: outside an interactive completion zsh has no menu to fill.
		prog = []string{"zsh", "-f", "-c", `compdef() { print -u2 "compdef $*" }; compadd() { shift $(( ${@[(i)--]} )); print -l -- "$@" }
_files() { print -- "(files)" }; source "$1"; words=(${=2}); [[ "$2" == *" " ]] && words+=(""); CURRENT=${#words}; _orcr`, "zsh", script, line}
	case "fish":
		prog = []string{"fish", "--no-config", "-c", `source $argv[1]; complete -C"$argv[2]"`, script, line}
	}
	cmd := exec.Command(prog[0], prog[1:]...)
	cmd.Env = e.Vars
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s completing %q: %v\n%s", sh, line, err, errb.String())
	}
	switch sh {
	case "bash":
		if !strings.Contains(errb.String(), "complete -o default -F _orcr_complete orcr") {
			t.Errorf("complete -p orcr after sourcing: %q", errb.String())
		}
	case "zsh":
		if !strings.Contains(errb.String(), "compdef _orcr orcr") {
			t.Errorf("the zsh script does not compdef orcr: %q", errb.String())
		}
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l, _, _ = strings.Cut(l, "\t"); l != "" { // fish: "candidate\tdescription"
			got = append(got, l)
		}
	}
	return got
}

// TestCompletionScripts sources `orcr completion bash|zsh|fish` in the real shells
// (zsh and fish when installed) and completes commands, flags, --state values and the
// running server's agent paths; with no server the paths are left out without a word
// on the terminal.
func TestCompletionScripts(t *testing.T) {
	e := newBinEnv(t)
	shells := []string{"bash"}
	for _, sh := range []string{"zsh", "fish"} {
		if _, err := exec.LookPath(sh); err == nil {
			shells = append(shells, sh)
		} else {
			t.Logf("%s is not installed: its script is not run (apt-get install %s)", sh, sh)
		}
	}
	// No server yet: commands complete, agent paths are quietly none.
	for _, sh := range shells {
		if got := shellComplete(t, e, sh, "orcr ag"); !slices.Equal(got, []string{"agent"}) {
			t.Errorf("%s: orcr ag⇥ offers %q, want agent", sh, got)
		}
		if got := shellComplete(t, e, sh, "orcr agent get "); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "orcr") }) {
			t.Errorf("%s: with no server, orcr agent get ⇥ offers %q", sh, got)
		}
	}
	e.serve()
	for _, p := range []string{"web/a2", "web/a10", "api/x"} {
		e.must("agent", "run", p, "--", "sleep", "300")
	}
	wait.For(t, 20*time.Second, "three agents listed", func() bool {
		return len(strings.Split(strings.TrimSpace(e.must("agent", "ls")), "\n")) == 4
	})
	for _, sh := range shells {
		for line, want := range map[string][]string{
			"orcr agent l":            {"ls"},
			"orcr agent get web/":     {"web/a10", "web/a2"},
			"orcr agent kill w":       {"web/**", "web/a10", "web/a2"},
			"orcr agent ls --st":      {"--state"},
			"orcr agent ls --state b": {"blocked"},
			"orcr top a":              {"api/**", "api/x"},
			"orcr completion ":        {"bash", "fish", "zsh"},
		} {
			got := shellComplete(t, e, sh, line)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s⇥ offers %q, want %q", sh, line, got, want)
			}
		}
	}
}

// TestCompletionOfPlansAndRuns: plan commands complete plan names and run commands
// run names, from the server (a plan and a run in its store).
func TestCompletionOfPlansAndRuns(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	repo := t.TempDir()
	for _, name := range []string{"csv-import", "auth"} {
		rec, err := orchestrate.NewRecord(name, "r", repo, "claude", time.Now().UTC())
		if err != nil {
			t.Fatal(err)
		}
		if err := orchestrate.NewPlans(core.FeatureBuckets(st, orchestrate.Name)).Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	// A stopped run: listed, not resumed.
	if _, err := run.NewRuns(core.FeatureBuckets(st, run.Name)).Create(ctx, run.Record{Run: run.Run{Name: "csv-import", Stopped: true}, Repo: repo}, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	plans, err := orchestrate.NewService(orchestrate.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := run.NewService(run.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		runs.Close()
		plans.Close()
		eng.Close(ctx)
		st.Close()
	})
	if err := eng.Start(ctx, plans, runs); err != nil {
		t.Fatal(err)
	}
	ip, err := socket.NewInProcess(core.KernelMethods(eng), plans.Methods(), runs.Methods())
	if err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		var out bytes.Buffer
		code := cli.Run(ctx, append([]string{"orcr", "__complete"}, words...), cli.Options{Stdout: &out, Stderr: &out,
			Connect: func(context.Context) (wire.Transport, error) { return ip, nil }})
		if code != 0 {
			t.Fatalf("__complete %q: exit %d: %s", words, code, out.String())
		}
		got := strings.Fields(out.String())
		slices.Sort(got)
		return got
	}
	for words, want := range map[string][]string{
		"plan show _":    {"auth", "csv-import"},
		"plan approve c": {"csv-import"},
		"run status _":   {"csv-import"},
		"run stop _":     {"csv-import"},
		"run start a":    {"auth"},
		"plan show x _":  nil,
	} {
		w := strings.Fields(strings.ReplaceAll(words, "_", "''"))
		if w[len(w)-1] == "''" {
			w[len(w)-1] = ""
		}
		if got := complete(w...); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", words, got, want)
		}
	}
}
