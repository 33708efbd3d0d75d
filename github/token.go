package github

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// TokenEnv is where ResolveToken looks besides the configured value; the zero value is
// the real environment and the gh on PATH.
type TokenEnv struct {
	Getenv  func(string) string // default os.Getenv
	GhPath  string              // default: gh from PATH; "-" never runs gh
	Timeout time.Duration       // for gh auth token (default 5 s)
}

// ResolveToken finds a token as gh users expect: the configured value, then GH_TOKEN,
// then GITHUB_TOKEN, then `gh auth token` (for apiURL's host when it is not
// github.com). It returns the token and where it came from ("config", "GH_TOKEN",
// "GITHUB_TOKEN", "gh auth token"); no token anywhere is "" and "none", not an error:
// anonymous requests still work on public repositories. A gh that fails or hangs is
// skipped (its error is returned only when nothing else gave a token).
func ResolveToken(ctx context.Context, configured, apiURL string, env TokenEnv) (token, source string, err error) {
	if t := strings.TrimSpace(configured); t != "" {
		return t, "config", nil
	}
	getenv := env.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, name := range []string{"GH_TOKEN", "GITHUB_TOKEN"} {
		if t := strings.TrimSpace(getenv(name)); t != "" {
			return t, name, nil
		}
	}
	bin := env.GhPath
	if bin == "-" {
		return "", "none", nil
	}
	if bin == "" {
		p, lerr := exec.LookPath("gh")
		if lerr != nil {
			return "", "none", nil
		}
		bin = p
	}
	timeout := env.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"auth", "token"}
	if host := ghHost(apiURL); host != "" && host != "github.com" {
		args = append(args, "--hostname", host)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = time.Second // a gh whose children hold stdout open still returns
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if rerr := cmd.Run(); rerr != nil {
		if ctx.Err() != nil {
			rerr = fmt.Errorf("timed out after %s", timeout)
		}
		return "", "none", fmt.Errorf("gh auth token: %w: %s", rerr, strings.TrimSpace(stderr.String()))
	}
	if t := strings.TrimSpace(out.String()); t != "" {
		return t, "gh auth token", nil
	}
	return "", "none", nil
}

// ghHost is the host gh knows an API root by: api.github.com is github.com, an
// Enterprise https://HOST/api/v3 is HOST.
func ghHost(apiURL string) string {
	if apiURL == "" {
		return "github.com"
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return ""
	}
	if u.Hostname() == "api.github.com" {
		return "github.com"
	}
	return u.Host
}
