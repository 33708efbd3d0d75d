package daemon

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"orcr/config"
	"orcr/github/githubtest"
	"orcr/orchestrate/run"
)

// The GitHub client follows a reload of [github]: an unchanged section keeps the
// client (and its ETag cache); another token or api_url makes a new one, for the
// listeners and for the pull requests runs open alike.
func TestGitHubClientsFollowReload(t *testing.T) {
	t.Setenv("GH_TOKEN", "")
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("PATH", t.TempDir()) // no gh: the config's token is the only one
	one := githubtest.New(t, githubtest.WithToken("tok-one", "bot"))
	one.AddRepo("acme/app")
	two := githubtest.New(t, githubtest.WithToken("tok-two", "bot"))
	two.AddRepo("acme/app")
	ctx := context.Background()
	gh := newGitHubClients(config.GitHub{APIURL: one.URL, Token: "tok-one"}, slog.New(slog.DiscardHandler))

	c1, err := gh.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gh.reload(ctx, config.GitHub{APIURL: one.URL, Token: "tok-one"}) {
		t.Fatal("an unchanged [github] counted as a change")
	}
	if c, _ := gh.get(ctx); c != c1 {
		t.Fatal("an unchanged [github] made a new client")
	}

	open := openPR(gh)
	remote := func(api string) string { return strings.TrimSuffix(api, "/") + "/acme/app.git" }
	url, err := open(ctx, run.PullRequest{Remote: remote(one.URL), Head: "feature", Base: "main", Title: "One"})
	if err != nil || !strings.HasPrefix(url, one.URL) {
		t.Fatalf("pull request on one: %q %v", url, err)
	}

	if !gh.reload(ctx, config.GitHub{APIURL: two.URL, Token: "tok-two"}) {
		t.Fatal("another api_url and token did not count as a change")
	}
	c2, err := gh.get(ctx)
	if err != nil || c2 == c1 {
		t.Fatalf("no new client: %v", err)
	}
	url, err = open(ctx, run.PullRequest{Remote: remote(two.URL), Head: "feature", Base: "main", Title: "Two"})
	if err != nil || !strings.HasPrefix(url, two.URL) {
		t.Fatalf("pull request after the reload: %q %v", url, err)
	}
	// A token that no longer works is a new client too (and its error is GitHub's).
	if !gh.reload(ctx, config.GitHub{APIURL: two.URL, Token: "tok-revoked"}) {
		t.Fatal("a new token did not count as a change")
	}
	if _, err := open(ctx, run.PullRequest{Remote: remote(two.URL), Head: "other", Base: "main", Title: "Three"}); err == nil ||
		!strings.Contains(err.Error(), "401") {
		t.Fatalf("a revoked token: %v", err)
	}
}
