package accounts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"orcr/core/wire"
	"orcr/internal/regfile"
)

// The optional usage-endpoint poller ([accounts] poll = "10m"): one per account with
// a token, never more often than MinPoll, backing off on 429 by its retry-after (or
// doubling the interval), and never reading an unreachable or failing endpoint as an
// exhausted account: a failed poll just yields no reading.

// MinPoll is the least time between two polls of one account's endpoint.
const MinPoll = 5 * time.Minute

// Default usage endpoints, overridable per account (usage_url).
const (
	ClaudeUsageURL = "https://api.anthropic.com"
	CodexUsageURL  = "https://chatgpt.com"
)

func (s *Service) startPollers() {
	if s.opts.Settings.Poll <= 0 {
		return
	}
	s.mu.Lock()
	var ps []*poller
	for _, p := range s.providerOrderLocked() {
		for _, a := range s.accts[p] {
			if a.perToken {
				continue
			}
			ps = append(ps, &poller{s: s, spec: a.spec, every: s.opts.Settings.Poll, client: &http.Client{Timeout: 20 * time.Second}})
		}
	}
	s.mu.Unlock()
	for _, p := range ps {
		s.wg.Add(1)
		go p.run(s.ctx)
	}
}

type poller struct {
	s      *Service
	spec   Spec
	every  time.Duration
	client *http.Client
}

func (p *poller) run(ctx context.Context) {
	defer p.s.wg.Done()
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		rs, next, err := p.poll(ctx)
		if err != nil {
			p.s.log.Info("accounts: usage poll failed (no reading)", "provider", p.spec.Provider, "account", p.spec.Label, "err", err)
		}
		for _, r := range rs {
			p.s.Observe(r)
		}
		wait = max(next, p.every)
	}
}

// poll asks the endpoint once; next is the back-off the server asked for (0: none).
func (p *poller) poll(ctx context.Context) ([]wire.LimitReading, time.Duration, error) {
	req, err := p.request(ctx)
	if err != nil {
		return nil, 0, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("unreachable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		return nil, RetryAfter(resp.Header.Get("Retry-After"), p.s.now(), 2*p.every), fmt.Errorf("429 from the usage endpoint")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("usage endpoint answered %s", resp.Status)
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&body); err != nil {
		return nil, 0, fmt.Errorf("usage endpoint: %w", err)
	}
	return parseUsage(p.spec, body, p.s.now().UTC()), 0, nil
}

func (p *poller) request(ctx context.Context) (*http.Request, error) {
	base, path, token := p.spec.UsageURL, "", ""
	switch p.spec.Provider {
	case "claude":
		if base == "" {
			base = ClaudeUsageURL
		}
		path, token = "/api/oauth/usage", claudeToken(p.spec)
	case "codex":
		if base == "" {
			base = CodexUsageURL
		}
		path, token = "/backend-api/wham/usage", codexToken(p.spec)
	default:
		return nil, fmt.Errorf("no usage endpoint for %s", p.spec.Provider)
	}
	if token == "" {
		return nil, fmt.Errorf("no token to ask the usage endpoint with (not logged in)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("anthropic-beta", "oauth-2025-04-20")
	return req, nil
}

// RetryAfter reads a Retry-After header (seconds or an HTTP date); def when absent.
func RetryAfter(h string, now time.Time, def time.Duration) time.Duration {
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return def
}

func claudeToken(sp Spec) string {
	if t := sp.Env["CLAUDE_CODE_OAUTH_TOKEN"]; t != "" {
		return t
	}
	var c struct {
		OAuth struct {
			AccessToken string `json:"accessToken"`
		} `json:"claudeAiOauth"`
	}
	readCredentials(sp.ConfigDir, ".claude", ".credentials.json", &c)
	return c.OAuth.AccessToken
}

func codexToken(sp Spec) string {
	var c struct {
		Tokens struct {
			AccessToken string `json:"access_token"`
		} `json:"tokens"`
	}
	readCredentials(sp.Home, ".codex", "auth.json", &c)
	return c.Tokens.AccessToken
}

// readCredentials decodes a CLI's credentials file, file in dir (default ~/home), into
// v. A missing or unreadable file leaves v empty: the account then has no token, and
// its poll reports that rather than failing here.
func readCredentials(dir, home, file string, v any) {
	if dir == "" {
		h, _ := os.UserHomeDir()
		dir = filepath.Join(h, home)
	}
	b, _ := regfile.Read(filepath.Join(dir, file))
	_ = json.Unmarshal(b, v)
}

// parseUsage maps an endpoint's answer to readings; parts it cannot read are left out.
func parseUsage(sp Spec, body map[string]json.RawMessage, now time.Time) []wire.LimitReading {
	var out []wire.LimitReading
	add := func(win, fam string, used float64, reset *time.Time) {
		out = append(out, wire.LimitReading{Provider: sp.Provider, Account: sp.Label, Window: win, Family: fam,
			UsedPct: used, ResetsAt: reset, LimitHit: used >= 100, ObservedAt: now})
	}
	switch sp.Provider {
	case "claude":
		for key, wf := range map[string][2]string{"five_hour": {"5h", ""}, "seven_day": {"weekly", ""},
			"seven_day_opus": {"weekly", "opus"}, "seven_day_sonnet": {"weekly", "sonnet"}} {
			var w *struct {
				Utilization *float64   `json:"utilization"`
				ResetsAt    *time.Time `json:"resets_at"`
			}
			if raw, ok := body[key]; !ok || json.Unmarshal(raw, &w) != nil || w == nil || w.Utilization == nil {
				continue
			}
			add(wf[0], wf[1], *w.Utilization, w.ResetsAt)
		}
	case "codex":
		var rl struct {
			Primary   *codexWindow `json:"primary_window"`
			Secondary *codexWindow `json:"secondary_window"`
		}
		if raw, ok := body["rate_limit"]; !ok || json.Unmarshal(raw, &rl) != nil {
			return nil
		}
		for _, w := range []*codexWindow{rl.Primary, rl.Secondary} {
			if w == nil {
				continue
			}
			win := "5h"
			if w.Seconds > 24*3600 {
				win = "weekly"
			}
			var reset *time.Time
			if w.ResetAt > 0 {
				t := time.Unix(w.ResetAt, 0).UTC()
				reset = &t
			}
			add(win, "", w.UsedPercent, reset)
		}
	}
	return out
}

type codexWindow struct {
	UsedPercent float64 `json:"used_percent"`
	ResetAt     int64   `json:"reset_at"`
	Seconds     int64   `json:"limit_window_seconds"`
}
