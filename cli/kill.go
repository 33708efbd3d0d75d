package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/charmbracelet/x/term"

	"orcr/core/wire"
)

// killParallel bounds how many of the confirmed agents the command line kills at once;
// each is one agent.kill call by id, and the server's own kill of a glob uses the same
// bound.
const killParallel = 8

// agentKill is `orcr agent kill GLOB`. A glob that selects more than one agent is a
// fleet-sized action, so it is confirmed as kubectl and gh confirm theirs: on a terminal
// the matches are listed and the user types y; elsewhere (a script, a pipe) it needs
// --yes, and without it nothing stops. What was confirmed is what gets killed: the
// agents are killed by id, not by matching the glob a second time, so an agent spawned
// while the question was open is never killed unseen. One match, an id or a plain path
// kills at once.
func (app *app) agentKill(ctx context.Context, glob string, dryRun, yes, asJSON bool) error {
	if glob == "" {
		return fmt.Errorf("agent kill needs a GLOB, an id or a path, e.g. orcr agent kill 'demo/**' --dry-run")
	}
	cl := service(ctx)
	if dryRun || yes {
		r, err := wire.Call(ctx, cl, wire.AgentKill, wire.KillParams{Glob: glob, DryRun: dryRun})
		if err != nil {
			return err
		}
		return app.printKilled(r, asJSON)
	}
	m, err := wire.Call(ctx, cl, wire.AgentKill, wire.KillParams{Glob: glob, DryRun: true})
	if err != nil {
		return err
	}
	if n := len(m.Agents); n > 1 {
		app.listKillTargets(glob, m.Agents)
		if !app.stdinIsTerminal() {
			return fmt.Errorf("%q matches %d agents and nothing was killed: add --yes to kill them all, or narrow the glob (see them with --dry-run)", glob, n)
		}
		ok, err := app.confirm(ctx, fmt.Sprintf("kill these %d agents? [y/N] ", n))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("kill cancelled; nothing was killed")
		}
	}
	return app.killEach(ctx, cl, m.Agents, asJSON)
}

// killEach kills the agents by id, killParallel at a time, printing each as it ends so
// a slow fleet shows progress. An agent that ended on its own meanwhile is reported and
// is no failure; any other error makes the command fail after the rest were tried.
func (app *app) killEach(ctx context.Context, cl wire.Transport, targets []wire.Agent, asJSON bool) error {
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		killed []wire.Agent
		failed int
		slots  = make(chan struct{}, killParallel)
	)
	for _, a := range targets {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			r, err := wire.Call(ctx, cl, wire.AgentKill, wire.KillParams{Glob: a.ID})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, wire.ErrNotFound):
				fmt.Fprintf(app.err, "%s (%s) had already ended; not killed\n", a.Path, shortID(a.ID))
			case err != nil:
				failed++
				fmt.Fprintf(app.err, "%s (%s): %v\n", a.Path, shortID(a.ID), err)
			default:
				killed = append(killed, r.Agents...)
				if !asJSON {
					for _, k := range r.Agents {
						fmt.Fprintf(app.out, "killed %s (%s, %s)\n", k.Path, shortID(k.ID), k.Provider)
					}
				}
			}
		})
	}
	wg.Wait()
	if asJSON {
		sort.Slice(killed, func(i, j int) bool { return killed[i].Path < killed[j].Path })
		if err := printJSON(app.out, wire.KillResult{Agents: killed}); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("killed %d of %d agents; the errors are above, see orcr agent ls", len(killed), len(targets))
	}
	return nil
}

func (app *app) printKilled(r wire.KillResult, asJSON bool) error {
	if asJSON {
		return printJSON(app.out, r)
	}
	verb := "killed"
	if r.DryRun {
		verb = "would kill"
	}
	for _, a := range r.Agents {
		fmt.Fprintf(app.out, "%s %s (%s, %s)\n", verb, a.Path, shortID(a.ID), a.Provider)
	}
	return nil
}

// listKillTargets shows what a confirmation is about, on stderr so --json output stays
// one document.
func (app *app) listKillTargets(glob string, as []wire.Agent) {
	fmt.Fprintf(app.err, "%q matches %d agents:\n", glob, len(as))
	for _, a := range as {
		fmt.Fprintf(app.err, "  %s (%s, %s, %s)\n", a.Path, shortID(a.ID), a.Provider, a.State)
	}
}

// stdinIsTerminal says whether someone can answer a question: stdin is a terminal.
func (app *app) stdinIsTerminal() bool {
	f, ok := app.in.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// confirm asks question on stderr and reads one line: only y or yes agree. The read
// gives up when ctx ends (ctrl-c), which counts as no.
func (app *app) confirm(ctx context.Context, question string) (bool, error) {
	fmt.Fprint(app.err, question)
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(app.in).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "y", "yes":
			return true, nil
		}
		return false, nil
	case <-ctx.Done():
		fmt.Fprintln(app.err)
		return false, fmt.Errorf("kill cancelled; nothing was killed: %w", ctx.Err())
	}
}
