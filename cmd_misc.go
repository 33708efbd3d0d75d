package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"orcr/adapters/hook"
	"orcr/config"
	"orcr/core"
	"orcr/core/wire"
)

// runTop prints the live agent tree, redrawing in place on every event.
func runTop(ctx context.Context, io *streams, once bool) error {
	cl, err := dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	draw := func(prev int) (int, error) {
		as, err := cl.List(ctx, wire.ListParams{})
		if err != nil {
			return prev, err
		}
		lines := treeLines(as, time.Now())
		var b strings.Builder
		if prev > 0 {
			fmt.Fprintf(&b, "\x1b[%dA\x1b[J", prev)
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		_, err = io.out.Write([]byte(b.String()))
		return len(lines), err
	}
	n, err := draw(0)
	if err != nil || once {
		return err
	}
	info, err := cl.Info(ctx)
	if err != nil {
		return err
	}
	ch, err := cl.Subscribe(ctx, wire.SubscribeParams{After: info.LastSeq})
	if err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Second) // ages advance even when nothing happens
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-ch:
			if !ok {
				return fmt.Errorf("event stream ended: the server stopped")
			}
			// Coalesce bursts: drain what is already there before redrawing.
			for drained := false; !drained; {
				select {
				case <-ch:
				default:
					drained = true
				}
			}
		case <-tick.C:
		}
		if n, err = draw(n); err != nil {
			return err
		}
	}
}

// treeLines renders agents as an indented path tree.
func treeLines(as []wire.Agent, now time.Time) []string {
	if len(as) == 0 {
		return []string{"no agents — start one with: orcr agent run demo/hello -- sh"}
	}
	byPath := map[string]wire.Agent{}
	for _, a := range as {
		byPath[a.Path] = a
	}
	var out []string
	seen := map[string]bool{}
	for _, a := range as { // as is sorted by path
		segs := strings.Split(a.Path, "/")
		for i := range segs {
			p := strings.Join(segs[:i+1], "/")
			if seen[p] {
				continue
			}
			seen[p] = true
			indent := strings.Repeat("  ", i)
			if ag, ok := byPath[p]; ok {
				out = append(out, fmt.Sprintf("%s%s  %s%s  %s  %s  %s  %s", indent, segs[i], ag.State, exitSuffix(ag), ag.Provider,
					core.FormatAge(now.Sub(ag.CreatedAt)), core.FormatTokens(ag.Usage), core.FormatCost(ag)))
			} else {
				out = append(out, indent+segs[i]+"/")
			}
		}
	}
	return out
}

func runQueue(ctx context.Context, io *streams, asJSON bool) error {
	cl, err := dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	q, err := cl.Queue(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(io.out, q)
	}
	capStr := func(n int) string {
		if n <= 0 {
			return "∞"
		}
		return fmt.Sprint(n)
	}
	fmt.Fprintf(io.out, "running %d / %s (global)", q.Total, capStr(q.Global))
	for _, p := range sortedKeys(q.Running) {
		fmt.Fprintf(io.out, "  %s %d/%s", p, q.Running[p], capStr(q.Caps[p]))
	}
	fmt.Fprintf(io.out, "\nfree memory %d MB (guard %d MB)\n", q.FreeMB, q.MinFreeMB)
	if len(q.Entries) == 0 {
		fmt.Fprintln(io.out, "queue empty")
		return nil
	}
	tw := newTabWriter(io.out)
	fmt.Fprintln(tw, "POS\tPATH\tPROVIDER\tPRIORITY\tQUEUED\tWAITING FOR")
	for _, e := range q.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Pos, e.Path, e.Provider, e.Priority, core.FormatAge(time.Since(e.QueuedAt)), e.Waiting)
	}
	return tw.Flush()
}

func runUsage(ctx context.Context, io *streams, provider string, asJSON bool) error {
	cl, err := dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	u, err := cl.Usage(ctx, wire.UsageParams{Provider: provider})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(io.out, u)
	}
	tw := newTabWriter(io.out)
	fmt.Fprintln(tw, "PROVIDER\tMODEL\tWINDOW\tAGENTS\tIN\tOUT\tCACHE R/W\tCOST")
	for _, r := range u.Rows {
		c := core.FormatUsageCost(r.Usage)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s/%s\t%s\n", r.Provider, core.Dash(r.Model), r.Window, r.Agents,
			core.HumanCount(r.Usage.InputTokens), core.HumanCount(r.Usage.OutputTokens), core.HumanCount(r.Usage.CacheReadTokens), core.HumanCount(r.Usage.CacheWriteTokens), c)
	}
	tw.Flush()
	for _, rd := range u.Readings {
		s := fmt.Sprintf("%s %s window: %.0f%% used", rd.Provider, rd.Window, rd.UsedPct)
		if rd.LimitHit {
			s += " — LIMIT HIT"
		}
		if rd.ResetsAt != nil {
			s += ", resets " + rd.ResetsAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		fmt.Fprintln(io.out, s)
	}
	return nil
}

// runDoctor explains the host choice and what each provider has or lacks.
func runDoctor(ctx context.Context, io *streams, asJSON bool) error {
	cfg, cfgErr := config.Load(config.DefaultPath())
	type report struct {
		Home      string                `json:"home"`
		Config    string                `json:"config"`
		ConfigErr string                `json:"configError,omitempty"`
		Server    *wire.InfoResult      `json:"server"`
		Hosts     []hostStatus          `json:"hosts"`
		Host      string                `json:"host"`
		HostWhy   string                `json:"hostWhy"`
		Providers []core.ProviderStatus `json:"providers"`
	}
	r := report{Home: homeDir(), Config: config.DefaultPath()}
	if cfgErr != nil {
		r.ConfigErr = cfgErr.Error()
	}
	if cl, err := dial(ctx); err == nil {
		if info, err := cl.Info(ctx); err == nil {
			r.Server = &info
		}
		cl.Close()
	}
	r.Hosts = hostStatuses(ctx, cfg)
	r.Host, r.HostWhy = pickHostName(cfg, r.Hosts)
	for _, p := range providers(cfg, nil) {
		r.Providers = append(r.Providers, p.Detect(ctx))
	}
	if asJSON {
		return printJSON(io.out, r)
	}
	w := io.out
	fmt.Fprintf(w, "home     %s\n", r.Home)
	if r.ConfigErr != "" {
		fmt.Fprintf(w, "config   %s — ERROR: %s\n", r.Config, r.ConfigErr)
	} else {
		fmt.Fprintf(w, "config   %s\n", r.Config)
	}
	if r.Server != nil {
		fmt.Fprintf(w, "server   running (pid %d, host %s, %d agents)\n", r.Server.PID, r.Server.Host, r.Server.Agents)
	} else {
		fmt.Fprintln(w, "server   not running — start it with `orcr serve` or open the dashboard with `orcr`")
	}
	fmt.Fprintf(w, "host     %s — %s\n", r.Host, r.HostWhy)
	for _, h := range r.Hosts {
		mark := "found  "
		if !h.Found {
			mark = "missing"
		}
		line := fmt.Sprintf("  %-6s %s %s", h.Name, mark, h.Detail)
		if !h.Found && h.Fix != "" {
			line += " — fix: " + h.Fix
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(w, "providers")
	for _, p := range r.Providers {
		mark := "found  "
		if !p.Found {
			mark = "missing"
		}
		line := fmt.Sprintf("  %-8s %s %s %s", p.Name, mark, p.Version, strings.Join(p.Notes, "; "))
		if p.Fix != "" {
			line += " — fix: " + p.Fix
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	return nil
}

// runHook is `orcr hook PROVIDER EVENT`, run by agents' hook settings: it reports the
// payload as the agent named by ORCR_ID and never blocks or fails the agent.
func runHook(ctx context.Context, io *streams, provider, event string) error {
	return hook.Run(ctx, provider, event, io.in, io.out, os.Getenv, func(ctx context.Context, p wire.HookParams) error {
		cl, err := dial(ctx)
		if err != nil {
			return err
		}
		defer cl.Close()
		return cl.Hook(ctx, p)
	})
}
