package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

func (app *app) queue(ctx context.Context, asJSON bool) error {
	cl := service(ctx)
	q, err := wire.Call(ctx, cl, wire.QueueGet, wire.Empty{})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(app.out, q)
	}
	capStr := func(n int) string {
		if n <= 0 {
			return "∞"
		}
		return fmt.Sprint(n)
	}
	// Each cap says where its value came from (config, orcr queue caps, or how the
	// default was derived from this machine's memory), so "why only 16?" answers itself.
	origin := func(name string) string {
		if o := q.Origins[name]; o != "" {
			return " — " + o
		}
		return ""
	}
	fmt.Fprintf(app.out, "running %d / %s (global)%s\n", q.Total, capStr(q.Global), origin(core.CapGlobal))
	providers := map[string]int{}
	for p := range q.Caps {
		providers[p] = 0
	}
	for p := range q.Running {
		providers[p] = 0
	}
	tw := newTabWriter(app.out)
	for _, p := range sortedKeys(providers) {
		fmt.Fprintf(tw, "  %s\t%d / %s\t%s\n", p, q.Running[p], capStr(q.Caps[p]), strings.TrimPrefix(origin(p), " — "))
	}
	tw.Flush()
	guard := fmt.Sprintf("guard %d MB", q.MinFreeMB)
	if q.MinFreeMB <= 0 {
		guard = "no guard"
	}
	fmt.Fprintf(app.out, "free memory %d MB (%s)%s\n", q.FreeMB, guard, origin(core.CapMinFree))
	if q.MaxLaunching > 0 {
		fmt.Fprintf(app.out, "launching %d / %d at once\n", q.Launching, q.MaxLaunching)
	}
	if len(q.Entries) == 0 {
		fmt.Fprintln(app.out, "queue empty")
		return nil
	}
	tw = newTabWriter(app.out)
	fmt.Fprintln(tw, "POS\tPATH\tPROVIDER\tPRIORITY\tQUEUED\tWAITING FOR")
	for _, e := range q.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Pos, e.Path, e.Provider, e.Priority, core.FormatAge(time.Since(e.QueuedAt)), e.Waiting)
	}
	return tw.Flush()
}

func (app *app) usage(ctx context.Context, provider string, asJSON bool) error {
	cl := service(ctx)
	u, err := wire.Call(ctx, cl, wire.UsageGet, wire.UsageParams{Provider: provider})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(app.out, u)
	}
	printUsageRows(app.out, u.Rows, provider == "shell")
	for _, rd := range u.Readings {
		name := rd.Provider
		if rd.Account != "" {
			name += "/" + rd.Account
		}
		win := rd.Window
		if rd.Family != "" {
			win += " " + rd.Family
		}
		s := fmt.Sprintf("%s %s window: %.0f%% used", name, win, rd.UsedPct)
		if rd.LimitHit {
			s += " — LIMIT HIT"
		}
		if rd.ResetsAt != nil {
			s += ", resets " + rd.ResetsAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		fmt.Fprintln(app.out, s)
	}
	return nil
}

// printUsageRows prints one row per provider, account and model: the totals, then
// what of them fell in the 5h and weekly windows. The report's rows are one per
// window, and printed as they come the same numbers stood three times over whenever
// every agent was recent. Shell agents use no tokens: their rows are left out unless
// asked for by --provider shell.
func printUsageRows(w io.Writer, rows []wire.UsageRow, shell bool) {
	type key struct{ provider, account, model string }
	var order []key
	byWindow := map[key]map[string]wire.UsageRow{}
	for _, r := range rows {
		if r.Provider == "shell" && !shell {
			continue
		}
		k := key{r.Provider, r.Account, r.Model}
		if byWindow[k] == nil {
			byWindow[k] = map[string]wire.UsageRow{}
			order = append(order, k)
		}
		byWindow[k][r.Window] = r
	}
	if len(order) == 0 {
		fmt.Fprintln(w, "no token use yet")
		return
	}
	window := func(r wire.UsageRow, ok bool) string {
		if !ok || r.Agents == 0 {
			return "-"
		}
		t := core.TotalOf(r.Usage)
		if c := t.Cost(); c != "-" && c != "unpriced" {
			return t.Tokens() + " " + c
		}
		return t.Tokens()
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "PROVIDER\tACCOUNT\tMODEL\tAGENTS\tIN\tOUT\tCACHE R/W\tCOST\t5H\tWEEKLY")
	for _, k := range order {
		ws := byWindow[k]
		r := ws["total"]
		h5, ok5 := ws["5h"]
		wk, okw := ws["weekly"]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", k.provider, core.Dash(k.account), core.Dash(k.model), r.Agents,
			core.HumanCount(r.Usage.InputTokens), core.HumanCount(r.Usage.OutputTokens), core.HumanCount(r.Usage.CacheReadTokens),
			core.HumanCount(r.Usage.CacheWriteTokens), core.FormatUsageCost(r.Usage), window(h5, ok5), window(wk, okw))
	}
	tw.Flush()
}

// checkProvider refuses a provider the server does not run, naming the ones it does.
func checkProvider(ctx context.Context, cl wire.Transport, provider string) error {
	if provider == "" {
		return nil
	}
	info, err := wire.Call(ctx, cl, wire.Info, wire.Empty{})
	if err != nil {
		return err
	}
	if len(info.Providers) == 0 || slices.Contains(info.Providers, provider) {
		return nil
	}
	return fmt.Errorf("--provider %s: no such provider; this server runs %s", provider, strings.Join(info.Providers, ", "))
}
