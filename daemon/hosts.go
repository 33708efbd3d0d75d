package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"orcr/accounts"
	acctapi "orcr/accounts/api"
	"orcr/cli"
	"orcr/config"
	"orcr/core"
	"orcr/core/wire"
	"orcr/herdr"
	"orcr/pty"
	"orcr/tmux"
)

// Host discovery (DESIGN §6) is one function, discover, used by `orcr serve` (and the
// dashboard's in-process server) to pick the host it starts and by `orcr doctor` to
// say which host serve would pick, so the two cannot disagree. It looks at the config,
// the environment and the programs on this machine and starts nothing. The rules:
//
//   - The host is $ORCR_HOST, else config `host`, else "auto".
//   - herdr's binary is config `herdr.bin`, then $ORCR_HERDR_BIN, then $PATH. A binary
//     named in config or the environment that is not an executable is an error, also
//     under "auto": the user chose it, so falling through to tmux would hide the typo.
//   - tmux is config `tmux.bin` (default "tmux") on $PATH, usable when `tmux -V` runs.
//   - "auto" takes herdr if found, else tmux if usable, else the embedded pty host.
//   - A host chosen explicitly that is missing is an error (exit 2, with the fix).
//
// serve starts exactly the host discover chose. When that host's program is there but
// does not start, serve fails with the reason and the way to choose another host,
// rather than quietly running agents on a different host than doctor names.

const tmuxFix = "apt-get install tmux (or your package manager's tmux)"

// hostChoice is discover's answer.
type hostChoice struct {
	Name string // herdr, tmux or pty; "" when Err is set
	Bin  string // the host's program (herdr, tmux)
	Why  string // why this host, for `orcr doctor` and `info.hostWhy`
	// Err is why no host can be used; serve refuses with it. It is a wire.Error with
	// code missing_program (exit 2) for a missing program, invalid_params for an
	// unknown host name.
	Err error
	// Hosts is every host's availability, in discovery order.
	Hosts []cli.HostStatus
	// explicit is true when the host was named, not "auto".
	explicit bool
}

// discover applies the rules above.
func discover(ctx context.Context, cfg config.Config) hostChoice {
	want, how := cfg.Host, "config host"
	if h := os.Getenv("ORCR_HOST"); h != "" {
		want, how = h, "$ORCR_HOST"
	}
	if want == "" {
		want = "auto"
	}
	c := hostChoice{explicit: want != "auto"}
	missing := func(name, fix string, err error) error {
		msg := fmt.Sprintf("%s = %q but %s is not usable: %v", how, name, name, err)
		if fix != "" {
			msg += "; " + fix
		}
		return &wire.Error{Code: wire.CodeMissingProgram, Message: msg}
	}

	herdrBin, herdrWhy, herdrErr := herdr.FindBin(cfg.Herdr.Bin)
	hs := cli.HostStatus{Name: "herdr", Fix: "install herdr and put it on PATH, or set herdr.bin in config.toml / $ORCR_HERDR_BIN"}
	herdrNamed := cfg.Herdr.Bin != "" || os.Getenv("ORCR_HERDR_BIN") != ""
	switch {
	case herdrErr == nil:
		hs.Found, hs.Detail = true, herdrBin
	case !herdrNamed:
		hs.Detail = "not in config herdr.bin, $ORCR_HERDR_BIN or $PATH"
	default:
		// Found nothing where the user pointed: say so, and how to fix that setting.
		hs.Detail = herdrErr.Error()
		hs.Fix = "point it at the herdr executable, or unset it"
	}
	c.Hosts = append(c.Hosts, hs)

	tmuxBin := cfg.Tmux.Bin
	if tmuxBin == "" {
		tmuxBin = "tmux"
	}
	ts := cli.HostStatus{Name: "tmux", Fix: tmuxFix}
	tmuxPath, tmuxErr := exec.LookPath(tmuxBin)
	if tmuxErr != nil {
		tmuxErr = fmt.Errorf("%s not found in PATH", tmuxBin)
		ts.Detail = tmuxErr.Error()
	} else {
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := tmux.Version(vctx, tmuxPath)
		cancel()
		if err != nil {
			tmuxErr = fmt.Errorf("%s does not run: %w", tmuxPath, err)
			ts.Detail = tmuxErr.Error()
		} else {
			ts.Found, ts.Detail = true, v+" at "+tmuxPath
		}
	}
	c.Hosts = append(c.Hosts, ts)
	c.Hosts = append(c.Hosts, cli.HostStatus{Name: "pty", Found: true, Detail: "embedded (always available; agents end with the server)"})

	switch want {
	case "herdr":
		if herdrErr != nil {
			fix := "" // FindBin's message has the install pointer
			if herdrNamed {
				fix = "point it at the herdr executable, or unset it"
			}
			c.Err = missing("herdr", fix, herdrErr)
			return c
		}
		c.Name, c.Bin, c.Why = "herdr", herdrBin, fmt.Sprintf("chosen by %s; herdr at %s (%s)", how, herdrBin, herdrWhy)
	case "tmux":
		if tmuxErr != nil {
			c.Err = missing("tmux", "install tmux: apt-get install tmux", tmuxErr)
			return c
		}
		c.Name, c.Bin, c.Why = "tmux", tmuxPath, "chosen by "+how+"; tmux at "+tmuxPath
	case "pty":
		c.Name, c.Why = "pty", "chosen by "+how+" (embedded pty host)"
	case "auto":
		switch {
		case herdrErr == nil:
			c.Name, c.Bin, c.Why = "herdr", herdrBin, fmt.Sprintf("auto: herdr at %s (%s)", herdrBin, herdrWhy)
		case herdrNamed:
			c.Err = &wire.Error{Code: wire.CodeMissingProgram, Message: fmt.Sprintf(
				"auto: %v; point it at the herdr executable, or unset it to use tmux or the embedded host", herdrErr)}
		case tmuxErr == nil:
			c.Name, c.Bin, c.Why = "tmux", tmuxPath, "auto: herdr not found; tmux found at "+tmuxPath
		case tmuxPath != "":
			c.Name, c.Why = "pty", fmt.Sprintf("auto: herdr not found; tmux not usable (%v); using the embedded pty host", tmuxErr)
		default:
			c.Name, c.Why = "pty", "auto: neither herdr nor tmux found; using the embedded pty host"
		}
	default:
		c.Err = &wire.Error{Code: wire.CodeInvalidParams,
			Message: fmt.Sprintf("unknown host %q in %s; use auto, herdr, tmux or pty", want, how)}
	}
	return c
}

// startHost starts the host discover chose. A host whose program is there but does
// not start is an error naming the way out, never a silent switch to another host.
func startHost(ctx context.Context, c hostChoice, cfg config.Config, home string, log *slog.Logger, mem core.MemoryReport) (core.Host, error) {
	if c.Err != nil {
		return nil, c.Err
	}
	failed := func(err error) error {
		fix := `fix it, or choose another host: host = "pty" in config.toml or ORCR_HOST=pty`
		if c.explicit {
			fix = "fix it, or choose another host in config.toml `host` / $ORCR_HOST"
		}
		return &wire.Error{Code: wire.CodeMissingProgram,
			Message: fmt.Sprintf("%s at %s (%s) did not start: %v; %s", c.Name, c.Bin, c.Why, err, fix)}
	}
	switch c.Name {
	case "herdr":
		h, err := herdr.New(ctx, herdr.Options{Bin: c.Bin, Session: cfg.Herdr.Session, Logger: log,
			StateDir: filepath.Join(home, "herdr")})
		if err != nil {
			return nil, failed(err)
		}
		return h, nil
	case "tmux":
		// ORCR_TMUX_SPARE=0: every confined pane starts its own launcher (no spare
		// launcher waiting, tmux/spare.go), as before it existed; =N keeps N spares
		// waiting (tmux.DefaultSpares when unset).
		noSpare := os.Getenv("ORCR_TMUX_SPARE") == "0"
		spares, _ := strconv.Atoi(os.Getenv("ORCR_TMUX_SPARE"))
		h, err := tmux.New(ctx, tmux.Options{Socket: filepath.Join(home, "tmux.sock"), Bin: c.Bin, Logger: log, Memory: mem,
			NoSpare: noSpare, Spares: spares})
		if err != nil {
			return nil, failed(err)
		}
		return h, nil
	}
	return pty.New(pty.Options{Logger: log, Memory: mem}), nil
}

// Probe is doctor's look at this machine: the hosts, the one serve would choose (from
// discover, like serve), whether herdr's session runs, and each provider's programs.
func Probe(ctx context.Context, cfg config.Config) cli.Probe {
	c := discover(ctx, cfg)
	p := cli.Probe{Hosts: c.Hosts, Host: c.Name, HostWhy: c.Why}
	if c.Err != nil {
		p.HostErr = c.Err.Error()
	}
	if h := &p.Hosts[0]; h.Found {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, proto, err := herdr.Probe(pctx, herdr.Options{Bin: h.Detail, Session: cfg.Herdr.Session})
		cancel()
		switch {
		case err == nil:
			h.Detail += fmt.Sprintf(" (session running: herdr %s, protocol %d)", v, proto)
		case errors.Is(err, herdr.ErrUnavailable):
			h.Detail += " (session not running; orcr starts it headless)"
		default:
			h.Detail += " (" + err.Error() + ")"
		}
	}
	for _, pr := range providers(cfg, nil) {
		p.Providers = append(p.Providers, pr.Detect(ctx))
	}
	l := configLimits(cfg)
	p.Caps = &wire.QueueResult{Global: l.Global, Caps: l.Provider, MinFreeMB: l.MinFreeMB, Origins: l.Origin,
		MaxLaunching: core.MaxLaunching}
	p.Accounts = []acctapi.Account{}
	opts, err := configAccounts(cfg, nil)
	var acct *accounts.Service
	if err == nil {
		acct, err = accounts.New(opts)
	}
	if err != nil {
		p.AccountsErr = err.Error()
	} else if l, err := acct.Accounts(ctx); err == nil {
		p.Accounts = l.Accounts
	}
	p.Shell = probeShell(ctx)
	return p
}
