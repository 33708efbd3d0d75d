package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"

	"orcr/adapters/claude"
	"orcr/adapters/codex"
	"orcr/adapters/opencode"
	"orcr/adapters/pi"
	"orcr/adapters/prices"
	"orcr/adapters/shell"
	"orcr/config"
	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/herdr"
	"orcr/pty"
	"orcr/schedule"
	"orcr/store"
	"orcr/tmux"
)

// homeDir is $ORCR_HOME, else $XDG_STATE_HOME/orcr, else ~/.local/state/orcr.
func homeDir() string {
	if h := os.Getenv("ORCR_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "orcr")
	}
	h, _ := os.UserHomeDir()
	return filepath.Join(h, ".local", "state", "orcr")
}

// socketPath is the server socket a client should use: the one of the agent it runs
// inside (ORCR_SOCKET), else the home's.
func socketPath() string {
	if s := os.Getenv("ORCR_SOCKET"); s != "" {
		return s
	}
	return socket.SocketPath(homeDir())
}

// dial connects a CLI client to the running server.
func dial(ctx context.Context) (*socket.Client, error) {
	return socket.Dial(ctx, socketPath(), os.Getenv("ORCR_ID"))
}

// newLogger writes slog records to a rotated file under home — never to the
// terminal, which the dashboard owns.
func newLogger(home string) *slog.Logger {
	w := &lumberjack.Logger{Filename: filepath.Join(home, "orcr.log"), MaxSize: 10, MaxBackups: 3}
	level := slog.LevelInfo
	if os.Getenv("ORCR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// server is a running orcr server: lock, store, host, engine and socket.
type server struct {
	home   string
	lock   *socket.Lock
	store  *store.Store
	engine *core.Engine
	sched  *schedule.Service
	svc    core.Service // the engine and the feature services, composed
	sock   *socket.Server
	host   core.Host
	log    *slog.Logger
	done   chan error
}

// startServer takes the home's lock and brings up everything the server owns.
func startServer(ctx context.Context) (*server, error) {
	home := homeDir()
	lock, err := socket.AcquireLock(home)
	if err != nil {
		return nil, fmt.Errorf("%w; connect to it instead (orcr agent ls), or stop it first", err)
	}
	s := &server{home: home, lock: lock, log: newLogger(home)}
	ok := false
	defer func() {
		if !ok {
			s.close(context.Background())
		}
	}()
	cfg, err := config.Load(config.DefaultPath())
	if err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(home, "store"), s.log)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.store = st
	// A quitting dashboard may have handed us its running agents' panes (handoff.go).
	adopt, lastID, err := adoptedPanes()
	if err != nil {
		s.log.Error("pty hand-off", "err", err)
		return nil, err
	}
	var host core.Host
	var why string
	if len(adopt) > 0 {
		host = pty.New(pty.Options{Logger: s.log, Adopt: adopt, IDFloor: lastID})
		why = fmt.Sprintf("embedded pty host (adopted %d panes from the dashboard)", len(adopt))
	} else if host, why, err = chooseHost(ctx, cfg, home, s.log); err != nil {
		return nil, err
	}
	s.host = host
	self, err := stableSelf(home)
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	sockPath := socket.SocketPath(home)
	eng, err := core.NewEngine(core.Options{
		Store: st, Host: host, HostWhy: why, Providers: providers(cfg, s.log), Logger: s.log,
		Home: home, Socket: sockPath, Self: self,
		Limits: configLimits(cfg), GC: configGC(cfg),
	})
	if err != nil {
		return nil, err
	}
	if err := eng.ApplyLimits(configLimits(cfg)); err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.Path, err)
	}
	if err := eng.Start(ctx); err != nil {
		return nil, fmt.Errorf("start engine: %w", err)
	}
	s.engine = eng
	sched, err := schedule.New(schedule.Options{Store: st, Kernel: eng, Logger: s.log, Home: home, Socket: sockPath})
	if err != nil {
		return nil, err
	}
	if err := sched.Start(ctx); err != nil {
		return nil, fmt.Errorf("start schedules: %w", err)
	}
	s.sched = sched
	s.svc = core.Composed{KernelService: eng, ScheduleService: sched}
	sock, err := socket.Listen(sockPath, s.svc, s.log)
	if err != nil {
		return nil, err
	}
	s.sock = sock
	s.done = make(chan error, 1)
	go func() { s.done <- sock.Serve() }()
	s.log.Info("server started", "home", home, "host", host.Name(), "why", why, "pid", os.Getpid())
	ok = true
	return s, nil
}

func (s *server) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if s.sock != nil {
		s.sock.Close()
	}
	if s.sched != nil {
		s.sched.Close()
	}
	if s.engine != nil {
		s.engine.Close(ctx)
	} else if s.host != nil {
		s.host.Shutdown(ctx)
	}
	if s.store != nil {
		s.store.Close()
	}
	s.lock.Release()
}

// providers builds the provider adapters.
func providers(cfg config.Config, log *slog.Logger) []core.Provider {
	table := priceTable(cfg, log)
	return []core.Provider{
		shell.New(),
		claude.New(claude.Options{Bin: cfg.Providers["claude"].Bin, Logger: log, Prices: table}),
		codex.New(codex.Options{Bin: cfg.Providers["codex"].Bin, Logger: log, Prices: table}),
		pi.New(pi.Options{Bin: cfg.Providers["pi"].Bin, Logger: log, Prices: table}),
		opencode.New(opencode.Options{Bin: cfg.Providers["opencode"].Bin, Logger: log, Prices: table}),
	}
}

// priceTable is the embedded price table with the config's [prices] overrides.
func priceTable(cfg config.Config, log *slog.Logger) *prices.Table {
	var rows []prices.Row
	for model, p := range cfg.Prices {
		rows = append(rows, prices.Row{Model: model, Input: p.Input, Output: p.Output, CacheRead: p.CacheRead,
			CacheWrite5m: p.CacheWrite, Date: "config", Source: cfg.Path})
	}
	t, err := prices.New(rows)
	if err != nil {
		if log != nil {
			log.Warn("price overrides ignored", "err", err)
		}
		return prices.Default()
	}
	return t
}

// chooseHost picks the host (DESIGN §6): config host or $ORCR_HOST; "auto" prefers
// herdr, then tmux, then the embedded pty host. An explicitly chosen host that is
// missing is an error with exit code 2 and the install pointer.
func chooseHost(ctx context.Context, cfg config.Config, home string, log *slog.Logger) (core.Host, string, error) {
	want, how := cfg.Host, "config host"
	if h := os.Getenv("ORCR_HOST"); h != "" {
		want, how = h, "$ORCR_HOST"
	}
	if want == "" {
		want = "auto"
	}
	explicit := want != "auto"
	missing := func(name, fix string, err error) error {
		return &wire.Error{Code: wire.CodeMissingProgram,
			Message: fmt.Sprintf("%s = %q but %s is not usable: %v; %s", how, name, name, err, fix)}
	}
	if want == "herdr" || want == "auto" {
		bin, why, err := herdr.FindBin(cfg.Herdr.Bin)
		if err == nil {
			h, err := herdr.New(ctx, herdr.Options{Bin: bin, Session: cfg.Herdr.Session, Logger: log,
				StateDir: filepath.Join(home, "herdr")})
			if err == nil {
				return h, fmt.Sprintf("herdr at %s (%s)", bin, why), nil
			}
			if explicit {
				return nil, "", missing("herdr", herdr.InstallHint, err)
			}
			log.Warn("herdr found but unusable; trying tmux", "err", err)
		} else if explicit {
			return nil, "", missing("herdr", herdr.InstallHint, err)
		}
	}
	if want == "tmux" || want == "auto" {
		bin := cfg.Tmux.Bin
		if bin == "" {
			bin = "tmux"
		}
		if path, ok := lookPath(bin); ok {
			h, err := tmux.New(ctx, tmux.Options{Socket: filepath.Join(home, "tmux.sock"), Bin: path, Logger: log})
			if err == nil {
				why := "auto: herdr not found; tmux found at " + path
				if explicit {
					why = "chosen by " + how + "; tmux at " + path
				}
				return h, why, nil
			}
			if explicit {
				return nil, "", missing("tmux", "install tmux: apt-get install tmux", err)
			}
			log.Warn("tmux found but unusable; using the embedded host", "err", err)
		} else if explicit {
			return nil, "", missing("tmux", "install tmux: apt-get install tmux", fmt.Errorf("%s not found in PATH", bin))
		}
	}
	switch want {
	case "pty":
		return pty.New(pty.Options{Logger: log}), "chosen by " + how + " (embedded pty host)", nil
	case "auto", "herdr", "tmux":
		return pty.New(pty.Options{Logger: log}), "auto: neither herdr nor tmux found; using the embedded pty host", nil
	}
	return nil, "", &wire.Error{Code: wire.CodeInvalidParams, Message: fmt.Sprintf("unknown host %q in %s; use auto, herdr, tmux or pty", want, how)}
}

func lookPath(name string) (string, bool) {
	p, err := exec.LookPath(name)
	return p, err == nil
}

// runServe runs the headless server until a signal.
func runServe(ctx context.Context, io *streams) error {
	if os.Getenv("GOMEMLIMIT") == "" {
		// A soft limit keeps badger's write bursts from growing the heap for good;
		// the GC works harder near it instead. GOMEMLIMIT overrides. (The dashboard,
		// which also holds the UI, keeps Go's default.)
		debug.SetMemoryLimit(64 << 20)
	}
	s, err := startServer(ctx)
	if err != nil {
		return err
	}
	// SIGHUP reloads the config (only headless: the dashboard's terminal hanging up
	// must still end the dashboard).
	s.watchReload(ctx)
	info, _ := s.engine.Info(ctx)
	fmt.Fprintf(io.err, "orcr: serving %s on %s (host %s: %s)\n", info.Home, info.Socket, info.Host, info.HostWhy)
	select {
	case <-ctx.Done():
	case err = <-s.done:
	}
	s.close(context.Background())
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// stableSelf is the orcr binary that agents' hooks call back. Under `go run .` the
// binary lives in a temporary build directory that disappears when go run exits,
// while agents on tmux or herdr keep running and keep calling their hooks; so such a
// binary is copied to $ORCR_HOME/bin first.
func stableSelf(home string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if !strings.Contains(self, string(filepath.Separator)+"go-build") {
		return self, nil
	}
	src, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dir := filepath.Join(home, "bin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".orcr-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return "", fmt.Errorf("copy %s: %w", self, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "orcr")
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", err
	}
	return dst, nil
}
