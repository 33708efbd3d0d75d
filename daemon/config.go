package daemon

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"orcr/config"
	"orcr/core"
)

// configLimits turns config [limits] into queue caps: the machine's defaults
// (core.DefaultLimits: memory ÷ each provider's footprint, a memory guard) with every key
// the config sets over them, 0 meaning unlimited as written. aging_seconds is the aging
// step (default core.DefaultAging); local caps this machine among the nodes (the nodes
// feature's); every other key but global and min_free_mb is a provider.
func configLimits(cfg config.Config) core.Limits {
	set := map[string]int{}
	for k, v := range cfg.Limits {
		set[k] = v
	}
	l := core.DefaultLimits(core.MemTotalMB())
	if v, ok := set["aging_seconds"]; ok {
		l.Aging = time.Duration(v) * time.Second
		delete(set, "aging_seconds")
	}
	delete(set, "local") // this machine's own cap among the nodes: the nodes feature's
	return l.Override(set, core.OriginConfig)
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
	return core.GCRules{ExitedGrace: d(cfg.GC.ExitedGrace), IdleAfter: d(cfg.GC.IdleAfter), Retain: d(cfg.GC.Retain), IdleAction: cfg.GC.IdleAction}
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
	if s.nodes != nil {
		s.nodes.SetLocalMax(cfg.LocalCap()) // [limits] local: this machine's cap among the nodes
	}
	if s.github != nil && s.github.reload(context.Background(), cfg.GitHub) && s.listen != nil {
		// A failing github listener (a bad token, the wrong api_url) tries again now
		// rather than at the end of its back-off.
		s.listen.RetryGitHub(context.Background())
	}
	l := s.engine.Limits()
	s.log.Info("config reloaded", "path", path, "global", l.Global, "provider", fmt.Sprint(l.Provider), "minFreeMb", l.MinFreeMB, "local", cfg.LocalCap())
}

// configWorkflows is how long finished workflow runs are kept: [workflows] retain,
// else gc.retain, else the feature's default; keep as given (0: the default).
func configWorkflows(cfg config.Config) (keep int, retain time.Duration) {
	for _, s := range []string{cfg.Workflows.Retain, cfg.GC.Retain} {
		if v, err := time.ParseDuration(s); err == nil && v > 0 {
			return cfg.Workflows.Keep, v
		}
	}
	return cfg.Workflows.Keep, 0
}
