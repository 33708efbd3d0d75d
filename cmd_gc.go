package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/config"
	"orcr/core"
	"orcr/core/wire"
)

// gcCommand is `orcr gc [--dry-run]`.
func gcCommand(io *streams) *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "close ended panes, stop long-idle agents, prune old records (gc.* rules)",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "dry-run", Usage: "say what would be collected and by which rule"}, jsonFlag()},
		Action: func(ctx context.Context, c *cli.Command) error {
			cl, err := dial(ctx)
			if err != nil {
				return err
			}
			defer cl.Close()
			r, err := cl.GC(ctx, wire.GCParams{DryRun: c.Bool("dry-run")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(io.out, r)
			}
			rule := func(s int) string {
				if s <= 0 {
					return "off"
				}
				return (time.Duration(s) * time.Second).String()
			}
			fmt.Fprintf(io.out, "rules: exited_grace %s, idle_after %s, retain %s\n",
				rule(r.ExitedGraceSeconds), rule(r.IdleAfterSeconds), rule(r.RetainSeconds))
			if len(r.Actions) == 0 {
				fmt.Fprintln(io.out, "nothing to collect")
				return nil
			}
			verb := "did"
			if r.DryRun {
				verb = "would"
			}
			tw := newTabWriter(io.out)
			fmt.Fprintf(tw, "%s\tRULE\tPATH\tDETAIL\n", strings.ToUpper(verb))
			for _, a := range r.Actions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Action, a.Rule, dash(a.Path), a.Detail)
			}
			return tw.Flush()
		},
	}
}

// queueCapsCommand is `orcr queue caps --global N --provider claude=3`.
func queueCapsCommand(io *streams) *cli.Command {
	return &cli.Command{
		Name:  "caps",
		Usage: "change admission caps now (until the server restarts or reloads its config)",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "global", Usage: "global cap (0: unlimited)"},
			&cli.StringSliceFlag{Name: "provider", Usage: "PROVIDER=N per-provider cap (0 removes it; repeatable)"},
			&cli.IntFlag{Name: "min-free-mb", Usage: "hold admission while free memory is below this (0: off)"},
			&cli.DurationFlag{Name: "aging", Usage: "waiting time worth one priority level (0: off)"},
			jsonFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			var p wire.CapsParams
			if c.IsSet("global") {
				v := int(c.Int("global"))
				p.Global = &v
			}
			if c.IsSet("min-free-mb") {
				v := int(c.Int("min-free-mb"))
				p.MinFreeMB = &v
			}
			if c.IsSet("aging") {
				v := int(c.Duration("aging") / time.Second)
				p.AgingSeconds = &v
			}
			for _, kv := range c.StringSlice("provider") {
				k, v, ok := strings.Cut(kv, "=")
				n, err := strconv.Atoi(v)
				if !ok || k == "" || err != nil {
					return fmt.Errorf("--provider %q: use PROVIDER=N, e.g. --provider claude=3", kv)
				}
				if p.Provider == nil {
					p.Provider = map[string]int{}
				}
				p.Provider[k] = n
			}
			if p.Global == nil && p.MinFreeMB == nil && p.AgingSeconds == nil && p.Provider == nil {
				return fmt.Errorf("nothing to change: give --global, --provider, --min-free-mb or --aging")
			}
			cl, err := dial(ctx)
			if err != nil {
				return err
			}
			defer cl.Close()
			if _, err := cl.SetCaps(ctx, p); err != nil {
				return err
			}
			cl.Close()
			return runQueue(ctx, io, c.Bool("json"))
		},
	}
}

// configLimits turns config [limits] into queue caps. aging_seconds is the aging step
// (default core.DefaultAging); every other key but global and min_free_mb is a provider.
func configLimits(cfg config.Config) core.Limits {
	caps := cfg.ProviderCaps()
	aging := core.DefaultAging
	if v, ok := caps["aging_seconds"]; ok {
		aging = time.Duration(v) * time.Second
		delete(caps, "aging_seconds")
	}
	for k, v := range caps {
		if v == 0 {
			delete(caps, k)
		}
	}
	return core.Limits{Global: cfg.GlobalCap(), Provider: caps, MinFreeMB: cfg.MinFreeMB(), Aging: aging}
}

// configGC turns config [gc] into rules: absent means the default, "0" turns a rule off.
// config.Validate has already checked the durations parse.
func configGC(cfg config.Config) core.GCRules {
	d := func(s string) time.Duration {
		if s == "" {
			return 0
		}
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			return -1
		}
		return v
	}
	return core.GCRules{ExitedGrace: d(cfg.GC.ExitedGrace), IdleAfter: d(cfg.GC.IdleAfter), Retain: d(cfg.GC.Retain)}
}

// watchReload reloads the config on SIGHUP until ctx ends. A config that does not
// load leaves the running one in force, and the log says why.
func (s *server) watchReload(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				s.reload()
			}
		}
	}()
}

func (s *server) reload() {
	path := config.DefaultPath()
	cfg, err := config.Load(path)
	if err != nil {
		s.log.Error("config reload failed; keeping the running config", "path", path, "err", err)
		return
	}
	if err := s.engine.ApplyLimits(configLimits(cfg)); err != nil {
		s.log.Error("config reload failed; keeping the running config", "path", path, "err", err)
		return
	}
	s.engine.SetGCRules(configGC(cfg))
	l := s.engine.Limits()
	s.log.Info("config reloaded", "path", path, "global", l.Global, "provider", fmt.Sprint(l.Provider), "minFreeMb", l.MinFreeMB)
}
