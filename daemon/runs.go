package daemon

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"orcr/core"
	"orcr/core/secretenv"

	"orcr/github"
	"orcr/orchestrate/run"
)

// openPR is how a finished run opens its pull request: the GitHub client at
// github.api_url with the token gh users expect (github.token, GH_TOKEN, GITHUB_TOKEN,
// `gh auth token`), as [github] stands now (a SIGHUP reload changes it). A remote that
// is not on that GitHub, or no token, is an error finish reports as not done.
func openPR(gh *githubClients) func(ctx context.Context, pr run.PullRequest) (string, error) {
	return func(ctx context.Context, pr run.PullRequest) (string, error) {
		cfg := gh.config()
		apiURL := cfg.APIURL
		repo, ok := githubRepo(pr.Remote, apiURL)
		if !ok {
			return "", fmt.Errorf("the remote %s is not on GitHub (%s)", pr.Remote, orDefault(apiURL, github.DefaultAPIURL))
		}
		configured, err := secretValue(cfg.Token)
		if err != nil {
			return "", fmt.Errorf("github.token: %w", err)
		}
		token, _, err := github.ResolveToken(ctx, configured, apiURL, github.TokenEnv{})
		if err != nil || token == "" {
			return "", fmt.Errorf("no GitHub token: set GH_TOKEN or GITHUB_TOKEN, or log in with `gh auth login`")
		}
		c, err := github.New(github.Options{Token: token, APIURL: apiURL})
		if err != nil {
			return "", err
		}
		if p, found, err := c.FindPullRequest(ctx, repo, pr.Head, pr.Base); err == nil && found {
			return p.URL, nil
		}
		p, err := c.CreatePullRequest(ctx, repo, github.NewPullRequest{Title: pr.Title, Head: pr.Head, Base: pr.Base, Body: pr.Body})
		if err != nil {
			return "", err
		}
		return p.URL, nil
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

var reRemote = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[a-z+]+://)?(?:[^@/]+@)?([^/:]+)(?::\d+)?[:/](.+?)(?:\.git)?/?$`)
})

// githubRepo is "owner/name" of a remote URL on the GitHub that apiURL serves
// (github.com for the default; the API's host otherwise, so a test server's bare
// remote named after it counts too).
func githubRepo(remote, apiURL string) (string, bool) {
	m := reRemote().FindStringSubmatch(remote)
	if m == nil {
		return "", false
	}
	host, path := m[1], m[2]
	want := "github.com"
	if apiURL != "" && !strings.Contains(apiURL, "api.github.com") {
		u, err := url.Parse(apiURL)
		if err != nil {
			return "", false
		}
		want = u.Hostname()
	}
	if host != want {
		return "", false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 2 {
		return "", false
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1], true
}

// available reports whether a provider's program is installed, asking its adapter
// once per provider (the catalog's pick for a coder skips what is not there).
func available(provs []core.Provider) func(string) bool {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		if ok, done := seen[name]; done {
			return ok
		}
		ok := false
		for _, p := range provs {
			if p.Name() == name {
				ok = p.Detect(context.Background()).Found
			}
		}
		seen[name] = ok
		return ok
	}
}

// secretValue is a config value with its {{secret.NAME}} references resolved from
// secrets.toml (DESIGN §16): github.token = "{{secret.GH}}" keeps the token out of
// config.toml. A value naming no secret is returned as is.
func secretValue(v string) (string, error) {
	m := map[string]string{"v": v}
	if len(secretenv.Names(m)) == 0 {
		return v, nil
	}
	r, err := secretenv.Resolve(m, secretsPath())
	if err != nil {
		return "", err
	}
	return r["v"], nil
}
