package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"orcr/config"
	"orcr/core"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	sbapi "orcr/sandbox/api"
	webapi "orcr/web/api"
)

// doctorReport is `orcr doctor --json`.
type doctorReport struct {
	Home      string           `json:"home"`
	Config    string           `json:"config"`
	ConfigErr string           `json:"configError,omitempty"`
	Server    *wire.InfoResult `json:"server"`
	// Web is the running server's web gateway (nil when no server runs).
	Web *webapi.StatusResult `json:"web,omitempty"`
	// Landlock is the sandbox's view of this kernel (DESIGN §16).
	Landlock sbapi.SandboxState `json:"landlock"`
	// Nodes are the running server's nodes, each checked (DESIGN §14).
	Nodes []nodeapi.CheckResult `json:"nodes,omitempty"`
	Probe
}

// doctor explains the host choice and what each provider has or lacks. The host it
// names is the one `orcr serve` would use: both take it from the daemon's one host
// discovery.
func (app *app) doctor(ctx context.Context, asJSON bool) error {
	cfg, cfgErr := config.Load(config.DefaultPath())
	r := doctorReport{Home: config.Home(), Config: config.DefaultPath()}
	if cfgErr != nil {
		r.ConfigErr = cfgErr.Error()
	}
	if cl := service(ctx); cl != nil {
		if info, err := wire.Call(ctx, cl, wire.Info, wire.Empty{}); err == nil {
			r.Server = &info
			if st, err := wire.Call(ctx, cl, webapi.Status, wire.Empty{}); err == nil {
				r.Web = &st
			}
		}
	}
	if app.daemon.Probe == nil {
		return notBuiltIn("doctor's look at this machine")
	}
	r.Probe = app.daemon.Probe(ctx, cfg)
	r.Landlock = landlockStatus(ctx)
	if r.Server != nil {
		r.Nodes = checkNodes(ctx, service(ctx))
	}
	if asJSON {
		return printJSON(app.out, r)
	}
	w := app.out
	fmt.Fprintf(w, "home     %s\n", r.Home)
	if r.ConfigErr != "" {
		fmt.Fprintf(w, "config   %s — ERROR: %s\n", r.Config, r.ConfigErr)
	} else {
		fmt.Fprintf(w, "config   %s\n", r.Config)
	}
	if r.Server != nil {
		fmt.Fprintf(w, "server   running (pid %d, host %s, %d agents)\n", r.Server.PID, r.Server.Host, r.Server.Agents)
		if l := r.Server.Limits; l != nil {
			fmt.Fprintf(w, "limits   %d of %d connections open; per connection %d requests at once, %d MiB of unread answers ([server] in the config)\n",
				l.Connections, l.MaxConnections, l.MaxInFlight, l.MaxUnread>>20)
		}
		fmt.Fprintln(w, webLine(r.Web, cfg.HTTP.Listen))
	} else {
		fmt.Fprintln(w, "server   not running — start it with `orcr serve` or open the dashboard with `orcr`")
	}
	if r.HostErr != "" {
		fmt.Fprintf(w, "host     none — serve refuses to start: %s\n", r.HostErr)
	} else {
		fmt.Fprintf(w, "host     %s — %s\n", r.Host, r.HostWhy)
	}
	// Each section's rows are a table: the names, found/missing and versions each
	// start in one column whatever their lengths.
	tw := newTabWriter(w)
	for _, h := range r.Hosts {
		detail := h.Detail
		if !h.Found && h.Fix != "" {
			detail += " — fix: " + h.Fix
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", h.Name, foundMark(h.Found), detail)
	}
	tw.Flush()
	fmt.Fprintln(w, shellLine(r.Shell))
	fmt.Fprintln(w, landlockLine(r.Landlock))
	fmt.Fprintln(w, "providers")
	tw = newTabWriter(w)
	for _, p := range r.Providers {
		notes := strings.Join(p.Notes, "; ")
		if p.Fix != "" {
			notes += " — fix: " + p.Fix
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, foundMark(p.Found), core.Dash(p.Version), strings.TrimPrefix(notes, " — "))
	}
	tw.Flush()
	caps, from := r.Caps, "as serve would start"
	if r.Server != nil {
		if q, err := wire.Call(ctx, service(ctx), wire.QueueGet, wire.Empty{}); err == nil {
			caps, from = &q, "in force"
			r.Caps = &q
		}
	}
	if caps != nil {
		printCaps(w, caps, from)
	}
	fmt.Fprintln(w, "accounts")
	if r.AccountsErr != "" {
		fmt.Fprintf(w, "  ERROR: %s\n", r.AccountsErr)
	}
	tw = newTabWriter(w)
	for _, a := range r.Accounts {
		var line string
		switch {
		case a.Problem != "":
			line = "NOT USABLE: " + a.Problem
		case a.PerToken:
			line = "per-token (API key)"
		case a.LoggedIn:
			line = "logged in"
		default:
			line = "login not found (the implicit account: the CLI's own login decides)"
		}
		if a.Implicit {
			line += " [implicit]"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.Provider, a.Label, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printNodes(w, r.Nodes)
	return nil
}

// checkNodes asks the server to check each of its nodes (none when it has none).
func checkNodes(ctx context.Context, cl wire.Transport) []nodeapi.CheckResult {
	ls, err := wire.Call(ctx, cl, nodeapi.List, wire.Empty{})
	if err != nil {
		return nil
	}
	var out []nodeapi.CheckResult
	for _, n := range ls.Nodes {
		c, err := wire.Call(ctx, cl, nodeapi.Check, nodeapi.NameParams{Name: n.Name})
		if err != nil {
			c = nodeapi.CheckResult{Node: n, Problems: []string{err.Error()}}
		}
		out = append(out, c)
	}
	return out
}

// printNodes is doctor's nodes section: per node its link (ssh and tmux), its orcr,
// its providers and accounts, then each problem with its fix.
func printNodes(w io.Writer, ns []nodeapi.CheckResult) {
	if len(ns) == 0 {
		return
	}
	fmt.Fprintln(w, "nodes")
	for _, c := range ns {
		n := c.Node
		link := "ssh ok, tmux ok"
		if n.State != nodeapi.StateUp && n.State != nodeapi.StateDraining {
			link = "not reachable"
		}
		ver := "orcr " + core.Dash(n.Version)
		if c.SameBinary {
			ver += " (this binary)"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", n.Name, n.State, link, ver)
		if f := c.Facts; f != nil {
			var ps []string
			for _, p := range f.Providers {
				v := "missing"
				if p.Found {
					v = "found"
					if p.Version != "" {
						v = p.Version
					}
				}
				ps = append(ps, p.Name+" "+v)
			}
			fmt.Fprintf(w, "    providers: %s\n", strings.Join(ps, ", "))
			acc := "none"
			if len(f.Accounts) > 0 {
				acc = strings.Join(f.Accounts, ", ")
			}
			fmt.Fprintf(w, "    accounts:  %s\n", acc)
		}
		for _, p := range c.Problems {
			fmt.Fprintf(w, "    PROBLEM: %s\n", p)
		}
	}
}

func foundMark(found bool) string {
	if found {
		return "found"
	}
	return "missing"
}

// printCaps shows the admission caps, each with where its value came from: the config,
// `orcr queue caps`, or how the default was derived from this machine.
func printCaps(w io.Writer, q *wire.QueueResult, from string) {
	capStr := func(n int) string {
		if n <= 0 {
			return "unlimited"
		}
		return fmt.Sprint(n)
	}
	origin := func(name string) string {
		if o := q.Origins[name]; o != "" {
			return " (" + o + ")"
		}
		return ""
	}
	fmt.Fprintf(w, "caps     %s ([limits] in the config; `orcr queue caps` at runtime)\n", from)
	tw := newTabWriter(w)
	fmt.Fprintf(tw, "  global\t%s%s\n", capStr(q.Global), origin(core.CapGlobal))
	names := make([]string, 0, len(q.Caps))
	for p := range q.Caps {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		fmt.Fprintf(tw, "  %s\t%s%s\n", p, capStr(q.Caps[p]), origin(p))
	}
	guard := "off"
	if q.MinFreeMB > 0 {
		guard = fmt.Sprintf("%d MB free", q.MinFreeMB)
	}
	fmt.Fprintf(tw, "  min_free_mb\t%s%s\n", guard, origin(core.CapMinFree))
	if q.MaxLaunching > 0 {
		fmt.Fprintf(tw, "  launching\t%d at once (the rest of a burst waits queued)\n", q.MaxLaunching)
	}
	tw.Flush()
}

// shellLine says whether the panes' login shell finds orcr and, when it does not,
// that runs work anyway and how to put orcr on its PATH.
func shellLine(s ShellStatus) string {
	sh := s.Shell + " -l"
	switch {
	case s.Err != "":
		return fmt.Sprintf("shell    %s: %s — agents' briefs call orcr by its path (ORCR_BIN=%s), so runs work either way", sh, s.Err, s.Bin)
	case s.Found && s.Other:
		return fmt.Sprintf("shell    %s finds orcr at %s (this orcr is %s; agents' briefs call this one, by its path in ORCR_BIN)", sh, s.Path, s.Bin)
	case s.Found:
		return fmt.Sprintf("shell    %s finds orcr at %s", sh, s.Path)
	}
	return fmt.Sprintf("shell    %s does not find orcr on its PATH — agents' briefs call orcr by its path (ORCR_BIN=%s), so runs still work; "+
		"to type `orcr` in an agent's shell too, add %s to PATH in your login setup (%s)", sh, s.Bin, filepath.Dir(s.Bin), loginFiles(s.Shell))
}

// loginFiles names the files a login shell of sh reads, where PATH is set.
func loginFiles(sh string) string {
	switch filepath.Base(sh) {
	case "zsh":
		return "~/.zprofile or ~/.zshenv"
	case "bash":
		return "~/.bash_profile or ~/.profile"
	case "fish":
		return "fish_add_path in ~/.config/fish/config.fish"
	}
	return "~/.profile"
}

// webLine is doctor's line on the web gateway.
func webLine(st *webapi.StatusResult, configured string) string {
	switch {
	case st == nil:
		return "web      unknown (the server does not serve web.status)"
	case st.Error != "":
		return "web      NOT SERVING: " + st.Error
	case st.Listen == "":
		if configured != "" {
			return fmt.Sprintf("web      off in this server ([http] listen = %q is read at start: restart the server)", configured)
		}
		return "web      off — serve it with `orcr serve --http 127.0.0.1:7070` or [http] listen in the config"
	}
	n := func(k int, one, many string) string {
		if k == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", k, many)
	}
	push := 0
	for _, d := range st.Devices {
		if d.Push {
			push++
		}
	}
	return fmt.Sprintf("web      %s (%s, %d with push; %s; %s open; pair one: orcr web pair)",
		st.URL, n(len(st.Devices), "paired browser", "paired browsers"), push, n(st.Tokens, "token", "tokens"),
		n(st.Clients, "event stream", "event streams"))
}
