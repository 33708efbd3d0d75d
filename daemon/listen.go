package daemon

import (
	"context"
	"log/slog"
	"sync"

	"orcr/config"
	"orcr/core"
	"orcr/github"
	"orcr/listen"
)

var _ core.ListenerService = (*listen.Service)(nil)

// startListeners builds the listener service over the store and the kernel. Its GitHub
// client is made at the first github poll: resolving the token may run `gh auth token`,
// which must not slow the server's start.
func startListeners(ctx context.Context, st listen.Store, eng *core.Engine, cfg config.Config, log *slog.Logger) (*listen.Service, error) {
	var (
		mu     sync.Mutex
		client *github.Client
	)
	getGitHub := func(ctx context.Context) (*github.Client, error) {
		mu.Lock()
		defer mu.Unlock()
		if client != nil {
			return client, nil
		}
		token, from, err := github.ResolveToken(ctx, cfg.GitHub.Token, cfg.GitHub.APIURL, github.TokenEnv{})
		if err != nil && token == "" {
			log.Warn("github token", "err", err)
		}
		c, err := github.New(github.Options{Token: token, APIURL: cfg.GitHub.APIURL})
		if err != nil {
			return nil, err
		}
		log.Info("github client", "api", cfg.GitHub.APIURL, "token", from)
		client = c
		return c, nil
	}
	svc, err := listen.NewService(listen.ServiceOptions{Store: st, Kernel: eng, Agents: eng,
		GitHub: getGitHub, Logger: log,
		// Roles (§12) and plans (§8) are not in this orcr yet: listeners naming them
		// are refused at load with the line.
		Features: listen.Features{}})
	if err != nil {
		return nil, err
	}
	if err := svc.Start(ctx); err != nil {
		return nil, err
	}
	return svc, nil
}
