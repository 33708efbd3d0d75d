package github

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveTokenOrder(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"GH_TOKEN": "gh-env", "GITHUB_TOKEN": "github-env"}
	getenv := func(k string) string { return env[k] }
	gh := script(t, `echo "from-gh $*"`)
	cases := []struct {
		configured, wantTok, wantSrc string
		unset                        []string
	}{
		{"cfg", "cfg", "config", nil},
		{"", "gh-env", "GH_TOKEN", nil},
		{"", "github-env", "GITHUB_TOKEN", []string{"GH_TOKEN"}},
		{"", "from-gh auth token", "gh auth token", []string{"GH_TOKEN", "GITHUB_TOKEN"}},
	}
	for _, c := range cases {
		for _, k := range c.unset {
			delete(env, k)
		}
		tok, src, err := ResolveToken(ctx, c.configured, DefaultAPIURL, TokenEnv{Getenv: getenv, GhPath: gh})
		if err != nil || tok != c.wantTok || src != c.wantSrc {
			t.Fatalf("configured %q: got %q from %q (%v), want %q from %q", c.configured, tok, src, err, c.wantTok, c.wantSrc)
		}
	}
	// GitHub Enterprise: gh is asked for that host's token.
	tok, _, _ := ResolveToken(ctx, "", "https://ghe.example.com/api/v3/", TokenEnv{Getenv: getenv, GhPath: gh})
	if tok != "from-gh auth token --hostname ghe.example.com" {
		t.Fatalf("enterprise: %q", tok)
	}
	if tok, src, err := ResolveToken(ctx, "", "", TokenEnv{Getenv: getenv, GhPath: "-"}); tok != "" || src != "none" || err != nil {
		t.Fatalf("nothing: %q %q %v", tok, src, err)
	}
}

func TestResolveTokenGhFailsOrHangs(t *testing.T) {
	ctx := context.Background()
	none := func(string) string { return "" }
	_, src, err := ResolveToken(ctx, "", "", TokenEnv{Getenv: none, GhPath: script(t, `echo "not logged in" >&2; exit 1`)})
	if src != "none" || err == nil || !strings.Contains(err.Error(), "not logged in") {
		t.Fatalf("failing gh: %q %v", src, err)
	}
	start := time.Now()
	_, _, err = ResolveToken(ctx, "", "", TokenEnv{Getenv: none, GhPath: script(t, `sleep 30`), Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(start) > 5*time.Second {
		t.Fatalf("hanging gh: %v after %s", err, time.Since(start))
	}
}

func TestETagCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newETagCache(nil, 10)
	c.put(&cacheEntry{url: "a", etag: "1", body: []byte("aaaa")})
	c.put(&cacheEntry{url: "b", etag: "2", body: []byte("bbbb")})
	c.get("a") // a is now the most recent
	c.put(&cacheEntry{url: "c", etag: "3", body: []byte("cccc")})
	if c.get("b") != nil || c.get("a") == nil || c.get("c") == nil || c.bytes != 8 {
		t.Fatalf("after eviction: len %d bytes %d", c.len(), c.bytes)
	}
	c.put(&cacheEntry{url: "a", etag: "4", body: []byte("a")})
	if c.bytes != 5 || c.get("a").etag != "4" {
		t.Fatalf("replace: bytes %d", c.bytes)
	}
	c.forget("a")
	if c.get("a") != nil || c.len() != 1 {
		t.Fatal("forget")
	}
}
