package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	herdrhost "orcr/herdr"
	"orcr/tmux"

	"orcr/config"
)

// hostStatus is one host's availability as doctor shows it.
type hostStatus struct {
	Name   string `json:"name"`
	Found  bool   `json:"found"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// hostStatuses looks for each host's program without starting anything.
func hostStatuses(ctx context.Context, cfg config.Config) []hostStatus {
	var out []hostStatus
	herdr := hostStatus{Name: "herdr", Fix: "install herdr and put it on PATH, or set herdr.bin in config.toml / $ORCR_HERDR_BIN"}
	for _, cand := range []string{cfg.Herdr.Bin, os.Getenv("ORCR_HERDR_BIN")} {
		if cand != "" {
			if st, err := os.Stat(cand); err == nil && !st.IsDir() {
				herdr.Found, herdr.Detail = true, cand
				break
			}
		}
	}
	if !herdr.Found {
		if p, ok := lookPath("herdr"); ok {
			herdr.Found, herdr.Detail = true, p
		}
	}
	if herdr.Found {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, proto, err := herdrhost.Probe(ctx, herdrhost.Options{Bin: herdr.Detail, Session: cfg.Herdr.Session})
		cancel()
		switch {
		case err == nil:
			herdr.Detail += fmt.Sprintf(" (session running: herdr %s, protocol %d)", v, proto)
		case errors.Is(err, herdrhost.ErrUnavailable):
			herdr.Detail += " (session not running; orcr starts it headless)"
		default:
			herdr.Detail += " (" + err.Error() + ")"
		}
	}
	out = append(out, herdr)
	tm := hostStatus{Name: "tmux", Fix: "apt-get install tmux (or your package manager's tmux)"}
	bin := cfg.Tmux.Bin
	if bin == "" {
		bin = "tmux"
	}
	if p, ok := lookPath(bin); ok {
		tm.Found, tm.Detail = true, p
		if v, err := tmux.Version(ctx, p); err == nil {
			tm.Detail = v + " at " + p
		}
	}
	out = append(out, tm)
	out = append(out, hostStatus{Name: "pty", Found: true, Detail: "embedded (always available; agents end with the server)"})
	return out
}

// pickHostName applies DESIGN §6 discovery to the statuses.
func pickHostName(cfg config.Config, hs []hostStatus) (string, string) {
	want := cfg.Host
	if h := os.Getenv("ORCR_HOST"); h != "" {
		want = h
	}
	if want != "" && want != "auto" {
		return want, "chosen explicitly (config host or $ORCR_HOST)"
	}
	for _, h := range hs {
		if h.Found {
			switch h.Name {
			case "herdr":
				return "herdr", "auto: herdr found at " + h.Detail
			case "tmux":
				return "tmux", "auto: herdr not found; using " + h.Detail
			}
		}
	}
	return "pty", "auto: neither herdr nor tmux found; using the embedded pty host"
}
