package daemon

import (
	"context"
	"log/slog"
	"sync"

	"orcr/config"
	"orcr/github"
)

// githubClients is the listeners' GitHub client, made from config [github] at the
// first github poll (resolving the token may run `gh auth token`, which must not slow
// the server's start) and made again when a reload (SIGHUP) brings another api_url
// or token.
type githubClients struct {
	log *slog.Logger

	mu     sync.Mutex
	cfg    config.GitHub
	client *github.Client
	token  string // the client's token, as resolved
}

func newGitHubClients(cfg config.GitHub, log *slog.Logger) *githubClients {
	return &githubClients{cfg: cfg, log: log}
}

// config is [github] as it stands now.
func (g *githubClients) config() config.GitHub {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cfg
}

func (g *githubClients) get(ctx context.Context) (*github.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client != nil {
		return g.client, nil
	}
	token, from := g.resolve(ctx, g.cfg)
	c, err := github.New(github.Options{Token: token, APIURL: g.cfg.APIURL})
	if err != nil {
		return nil, err
	}
	g.log.Info("github client", "api", g.cfg.APIURL, "token", from)
	g.client, g.token = c, token
	return c, nil
}

func (g *githubClients) resolve(ctx context.Context, cfg config.GitHub) (token, from string) {
	configured, err := secretValue(cfg.Token)
	if err != nil {
		g.log.Warn("github token", "err", err)
		return "", "none"
	}
	token, from, err = github.ResolveToken(ctx, configured, cfg.APIURL, github.TokenEnv{})
	if err != nil && token == "" {
		g.log.Warn("github token", "err", err)
	}
	return token, from
}

// reload takes [github] as a config reload read it, and says whether the client
// changed: another api_url, or a token that resolves differently now (a new one in
// the config, the environment's, or `gh auth login` run again). An unchanged client
// keeps its ETag cache, so idle polls stay free.
func (g *githubClients) reload(ctx context.Context, cfg config.GitHub) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client == nil {
		changed := g.cfg != cfg
		g.cfg = cfg
		return changed
	}
	if cfg == g.cfg {
		if token, _ := g.resolve(ctx, cfg); token == g.token {
			return false
		}
	}
	g.cfg, g.client, g.token = cfg, nil, ""
	g.log.Info("github client reloaded", "api", cfg.APIURL)
	return true
}
