package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"

	"orcr/accounts"
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
	"orcr/listen"
	"orcr/mcp"
	"orcr/nodes"
	"orcr/orchestrate"
	"orcr/orchestrate/run"
	"orcr/planning"
	"orcr/pty"
	"orcr/roles"
	"orcr/sandbox"
	"orcr/schedule"
	"orcr/store"
	"orcr/web"
	webapi "orcr/web/api"
	"orcr/workflow"
	"orcr/workflow/identity"
	"orcr/workflow/spawnpolicy"
)

// newLogger writes slog records to a rotated file under home — never to the
// terminal, which the dashboard owns.
func newLogger(home string) *slog.Logger {
	if socket.CheckHome(home) != nil {
		return slog.New(slog.DiscardHandler) // never write through a link planted in a home not ours
	}
	w := &lumberjack.Logger{Filename: filepath.Join(home, "orcr.log"), MaxSize: 10, MaxBackups: 3}
	level := slog.LevelInfo
	if os.Getenv("ORCR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// server is a running orcr server: lock, store, host, engine, the features and the
// socket.
type server struct {
	home   string
	lock   *socket.Lock
	store  *store.Store
	engine *core.Engine
	// features are started in this order and closed in reverse (see startServer).
	features []core.Feature
	// listen and github are what a config reload (SIGHUP) changes of the features:
	// the listeners' GitHub client is remade and a failing github listener retried.
	listen *listen.Service
	github *githubClients // the listeners' GitHub client, remade on a reload
	nodes  *nodes.Service // its [limits] local follows a reload
	// web is the HTTP gateway over the same handlers as the socket (DESIGN §15);
	// webAddr is where it serves ("" when off), webErr why it does not although asked.
	web     *web.Service
	webAddr string
	webErr  error
	// httpFlag is `--http ADDR` of the command that started this server ("" when the
	// config's [http] listen, or nothing, is in force): a hand-off passes it on.
	httpFlag string
	// methods are every socket method's handler: the kernel's and each feature's.
	methods []wire.Handler
	sock    *socket.Server
	host    core.Host
	mem     *memPolicy // when memory goes back to the OS (mempolicy.go); the host reports to it
	log     *slog.Logger
	done    chan error
}

// startServer takes the home's lock and brings up everything the server owns.
func startServer(ctx context.Context) (*server, error) {
	home := config.Home()
	lock, err := socket.AcquireLock(home)
	if err != nil {
		return nil, homeErr(home, err)
	}
	s := &server{home: home, lock: lock, log: newLogger(home), mem: newMemPolicy()}
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
		host = pty.New(pty.Options{Logger: s.log, Adopt: adopt, IDFloor: lastID, Memory: s.mem})
		why = fmt.Sprintf("embedded pty host (adopted %d panes from the dashboard)", len(adopt))
	} else {
		c := discover(ctx, cfg)
		if host, err = startHost(ctx, c, cfg, home, s.log, s.mem); err != nil {
			return nil, err
		}
		why = c.Why
	}
	s.host = host
	self, err := stableSelf(home)
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	sockPath := socket.SocketPath(home)
	aopts, err := configAccounts(cfg, s.log)
	if err != nil {
		return nil, err
	}
	acct, err := accounts.New(aopts)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.Path, err)
	}
	rs := roles.New(roles.Options{Logger: s.log, Bin: self})
	sched, err := schedule.New(schedule.Options{Logger: s.log, Home: home, Socket: sockPath})
	if err != nil {
		return nil, err
	}
	provs := providers(cfg, s.log)
	plans, err := orchestrate.NewService(orchestrate.ServiceOptions{Detect: detector(provs),
		CatalogPath: planning.DefaultUserCatalogPath(), TemplatePath: orchestrate.DefaultLeadTemplatePath(), Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.github = newGitHubClients(cfg.GitHub, s.log)
	ls, err := listen.NewService(listen.ServiceOptions{GitHub: s.github.get, Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.listen = ls
	runs, err := run.NewService(run.Options{Home: home, Bin: self, CatalogPath: planning.DefaultUserCatalogPath(),
		Available: available(provs), OpenPR: openPR(s.github), Logger: s.log, NoSandbox: cfg.Run.Sandbox == "off", MCP: cfg.Run.MCP})
	if err != nil {
		return nil, err
	}
	wfKeep, wfRetain := configWorkflows(cfg)
	wf := workflow.New(workflow.Options{Home: home, Logger: s.log, Keep: wfKeep, Retain: wfRetain,
		Settled: s.mem.Settled})
	// The features, in the order they start (and the reverse of their close). Each
	// finds the others through the kernel's registry when it needs them, so the order
	// matters only for what runs inside a Start: roles first, so a listener or
	// schedule that spawns while starting has the role resolver. Admission opens
	// once all of them started (core.Engine.Start).
	maxABI, err := sandbox.MaxABIFromEnv(os.Getenv("ORCR_SANDBOX_MAX_ABI"))
	if err != nil {
		return nil, err
	}
	inProc, err := sandbox.InProcessFromEnv(os.Getenv("ORCR_SANDBOX_IN_PROCESS"))
	if err != nil {
		return nil, err
	}
	sb := sandbox.New(sandbox.Options{Home: home, Self: self, Socket: sockPath, MaxABI: maxABI, InProcess: inProc, Logger: s.log,
		Config: filepath.Dir(config.DefaultPath())})
	nds, err := newNodes(cfg, home, self, provs, s.log)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.Path, err)
	}
	s.nodes = nds
	// Identities and the spawn policy shape and check spawns from their first one on.
	ids, spawns := identity.New(identity.Options{Logger: s.log}), spawnpolicy.New()
	listenHTTP := cfg.HTTP.Listen
	if a, ok := webapi.ListenFrom(ctx); ok {
		listenHTTP, s.httpFlag = a, a
	}
	notifyOff := map[string]bool{}
	for kind, on := range cfg.Notify.Kinds() {
		notifyOff[kind] = !on
	}
	s.web = web.New(web.Options{Listen: listenHTTP, Logger: s.log, NotifyCommand: cfg.Notify.Command, NotifyOff: notifyOff, Home: home})
	s.features = []core.Feature{rs, ids, spawns, acct, sched, plans, ls, runs, wf, nds, sb, mcp.New(), s.web}
	eng, err := core.NewEngine(core.Options{
		Store: st, Host: host, HostWhy: why, Providers: provs, Logger: s.log,
		Home: home, Socket: sockPath, Self: self, Secrets: secretsPath(),
		Limits: configLimits(cfg), GC: configGC(cfg),
	})
	if err != nil {
		return nil, err
	}
	if err := eng.ApplyLimits(configLimits(cfg)); err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.Path, err)
	}
	s.engine = eng
	if err := eng.Start(ctx, s.features...); err != nil {
		return nil, fmt.Errorf("start engine: %w", err)
	}
	s.methods = serverMethods(eng, s.features...)
	sock, err := socket.Listen(sockPath, s.methods, s.log)
	if err != nil {
		return nil, err
	}
	s.sock = sock
	nds.ServeForwarded(sock.ServeConn) // calls from node panes, over their links
	// The gateway serves the very table the socket serves.
	s.webAddr, s.webErr = s.web.Serve(s.methods)
	if s.webErr != nil && !errors.Is(s.webErr, web.ErrNoToken) {
		return nil, s.webErr
	}
	s.done = make(chan error, 1)
	sock.SetLimits(socket.Limits{MaxConnections: cfg.Server.MaxConnections, MaxInFlight: cfg.Server.MaxInFlight,
		MaxUnread: cfg.Server.MaxUnreadMB << 20})
	go func() { s.done <- sock.Serve() }()
	s.log.Info("server started", "home", home, "host", host.Name(), "why", why, "pid", os.Getpid())
	ok = true
	return s, nil
}

// serverMethods are every socket method the server serves: the kernel's, then each
// feature's. TestEveryDeclaredMethodIsServed holds them to the declarations.
func serverMethods(eng *core.Engine, features ...core.Feature) []wire.Handler {
	hs := core.KernelMethods(eng)
	for _, f := range features {
		hs = append(hs, f.Methods()...)
	}
	return hs
}

// Shutdown always completes (DESIGN §13): each part of the server gets closeEach to
// close and all of them closeTotal, then the home's lock is released and the process
// may exit, so a new `orcr serve` can start. A part that does not finish in time is left
// running (the process is about to end) with a dump of every goroutine in the log, which
// says where it was stuck: a budget held the accounts feature for 24 minutes once, the
// socket already gone and the lock still held.
const (
	closeEach  = 3 * time.Second
	closeTotal = 4 * time.Second
	// closeFloor is the least a part gets once the total is spent, and storeFloor the
	// store's: a store that closes releases badger's directory lock while this process
	// lives on (a dashboard handing its panes to a new server), and its next open has no
	// log to replay.
	closeFloor = 100 * time.Millisecond
	storeFloor = time.Second
)

func (s *server) close(ctx context.Context) {
	deadline := time.Now().Add(closeTotal)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c := closer{log: s.log, deadline: deadline}
	if s.sock != nil {
		c.do("socket server", func() { s.sock.Close() })
	}
	for i := len(s.features) - 1; i >= 0; i-- {
		f := s.features[i]
		c.do(f.Name(), func() {
			if err := f.Close(); err != nil {
				s.log.Warn("shutdown: close a feature", "feature", f.Name(), "err", err)
			}
		})
	}
	if s.engine != nil {
		c.do("engine", func() { s.engine.Close(ctx) })
	} else if s.host != nil {
		c.do("host", func() { s.host.Shutdown(ctx) })
	}
	s.mem.close()
	if s.store != nil {
		c.floor = storeFloor
		c.do("store", func() { s.store.Close() })
	}
	s.lock.Release()
}

// closer runs the steps of a shutdown, each with a bound.
type closer struct {
	log      *slog.Logger
	deadline time.Time
	floor    time.Duration // the least the next part gets (closeFloor when zero)
	dumped   bool
}

// do runs fn and waits for it at most closeEach, and no longer than the shutdown's
// deadline allows (but closeFloor, or the floor set, at least). Past that it logs which
// part hung and, once per shutdown, every goroutine's stack, and goes on.
func (c *closer) do(name string, fn func()) {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		fn()
	}()
	wait := max(min(closeEach, time.Until(c.deadline)), closeFloor, c.floor)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	attrs := []any{"part", name, "waited", time.Since(start).Round(time.Millisecond)}
	if !c.dumped {
		c.dumped = true
		var b bytes.Buffer
		if p := pprof.Lookup("goroutine"); p != nil {
			_ = p.WriteTo(&b, 2)
		}
		attrs = append(attrs, "goroutines", b.String())
	}
	c.log.Error("shutdown: a part did not close in time; going on without it", attrs...)
}

// secretsPath is secrets.toml beside config.toml (DESIGN §16).
func secretsPath() string {
	return filepath.Join(filepath.Dir(config.DefaultPath()), "secrets.toml")
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

// detector reports a provider's program as its adapter finds it; the plan service
// asks before it starts a lead, so a missing one is an exit-2 error naming the fix.
func detector(provs []core.Provider) func(ctx context.Context, name string) core.ProviderStatus {
	return func(ctx context.Context, name string) core.ProviderStatus {
		for _, p := range provs {
			if p.Name() == name {
				return p.Detect(ctx)
			}
		}
		return core.ProviderStatus{Name: name}
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

// Serve runs the headless server until ctx ends (a signal), reloading the config on
// SIGHUP. It says on stderr where it serves.
func Serve(ctx context.Context, stderr io.Writer) (err error) {
	sampleHeapFinely()
	stopProfile, err := startCPUProfile()
	if err != nil {
		return err
	}
	defer func() {
		if perr := stopProfile(); err == nil {
			err = perr
		}
	}()
	stopTrace, err := startTrace()
	if err != nil {
		return err
	}
	defer func() {
		if terr := stopTrace(); err == nil {
			err = terr
		}
	}()
	softLimit := os.Getenv("GOMEMLIMIT") == ""
	if softLimit {
		// A soft limit keeps badger's write bursts from growing the heap for good;
		// the GC works harder near it instead. GOMEMLIMIT overrides. (The dashboard,
		// which also holds the UI, keeps Go's default.)
		debug.SetMemoryLimit(memLimitFloor)
	}
	if os.Getenv("GOGC") == "" {
		// The server's live heap is small (~20 MB with 1,000 records) and most of what
		// it allocates is short-lived (requests, screens, events), so collecting at
		// +50 % instead of +100 % keeps the resident size ~5 MB lower for a cost of a
		// few more sub-millisecond collections (BenchmarkServerRSS1000). GOGC overrides.
		debug.SetGCPercent(serverGCPercent)
	}
	s, err := startServer(ctx)
	if err != nil {
		return err
	}
	// SIGHUP reloads the config (only headless: the dashboard's terminal hanging up
	// must still end the dashboard).
	s.watchReload(ctx)
	watchMemProfile(ctx, s.log)
	if softLimit {
		go followMemLimit(ctx)
	}
	info, _ := s.engine.Info(ctx)
	fmt.Fprintf(stderr, "orcr: serving %s on %s (host %s: %s)\n", info.Home, info.Socket, info.Host, info.HostWhy)
	s.sayWeb(stderr)
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

// The server's soft memory limit: the floor, or twice the live heap plus the goroutine
// stacks when that is more, set again at the end of every collection (the live heap
// is what a collection finds). A fixed 64 MiB was right for 1,000 records (~20 MB
// live) but with 10,000 (~50 MB live) every history.list started a full collection.
// The live heap plus a fixed 44 MiB was not enough either: with 100 embedded-pty panes
// (~650 MB live) it sat below the collector's own target (live × 1.5 at GOGC=50), so
// each collection ended above the limit and the next began at once (24 % of the time
// in GC, 89 % of idle CPU samples marking). Twice the live heap keeps the limit above
// that target: it only bites when the heap grows by more than the whole live heap
// between two collections, which is what it is for (badger's write bursts). Stacks
// are not heap but count against the limit (10,000 idle connections' stacks alone once
// filled 64 MiB), so they are added.
//
// It was re-read on a 5 s ticker: 100 pty agents started at once grow the live heap
// from ~5 to ~250 MB in a few seconds (each pane's screens, until they pack), and
// until the next tick every collection found the heap over the old limit and the
// next began at once — 90 back-to-back collections of up to 140 ms of marking each,
// 1–2.5 s of CPU in the minute the agents went idle (issue 27's 100 idle agents: ≤
// 1 % of a core). Set at each collection's end, the limit follows the heap as fast
// as the collector learns it; an idle server, which does not collect, is not woken.
const (
	memLimitFloor    = 64 << 20
	memLimitHeadroom = 44 << 20
	// serverGCPercent is the server's GOGC (see Serve).
	serverGCPercent = 50
)

// followMemLimit moves the soft limit with the live heap, now and after every
// collection, until ctx ends. Reading the metrics costs no collection.
func followMemLimit(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	ends := gcEnds(ctx)
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			var stacks uint64
			if sample[1].Value.Kind() == metrics.KindUint64 {
				stacks = sample[1].Value.Uint64()
			}
			debug.SetMemoryLimit(memLimit(sample[0].Value.Uint64(), stacks))
		}
		select {
		case <-ctx.Done():
			return
		case <-ends:
		}
	}
}

// gcEnds sends (never blocking: one pending at most) after each garbage collection
// until ctx ends: an object of no use but to be collected, whose cleanup makes the
// next one.
func gcEnds(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	var arm func()
	arm = func() {
		// Big enough not to share a tiny-allocator block (whose cleanup would wait for
		// its neighbours).
		s := new([64]byte)
		runtime.AddCleanup(s, func(struct{}) {
			if ctx.Err() != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
			arm()
		}, struct{}{})
	}
	arm()
	return ch
}

// memLimit is the soft limit for a live heap of live bytes and stacks of stacks bytes.
func memLimit(live, stacks uint64) int64 {
	l, st := int64(live), int64(stacks)
	return max(memLimitFloor, l+max(memLimitHeadroom, l)+st)
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

// homeErr says why the home's lock could not be taken and what to do. Only a lock held by
// another server means "connect to it"; a read-only home said so too, and the user went
// looking for a server that did not exist.
func homeErr(home string, err error) error {
	switch {
	case errors.Is(err, socket.ErrLocked):
		return fmt.Errorf("%w; connect to it instead (orcr agent ls), or stop it first", err)
	case errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("ORCR_HOME %s is not writable (%w): the server keeps its store, socket and log there; "+
			"make it writable, or point ORCR_HOME at a writable directory (e.g. ORCR_HOME=$HOME/.local/state/orcr)", home, err)
	}
	return fmt.Errorf("ORCR_HOME %s: %w", home, err)
}

// sayWeb tells on stderr where the web gateway serves, or why it does not.
func (s *server) sayWeb(stderr io.Writer) {
	switch {
	case s.webErr != nil:
		fmt.Fprintf(stderr, "orcr: warning: %v\n", s.webErr)
	case s.webAddr != "":
		if !webLoopback(s.webAddr) {
			fmt.Fprintf(stderr, "orcr: warning: the web gateway listens on %s, beyond this machine: anyone who can reach it and holds a token acts as you; serve it behind TLS\n", s.webAddr)
		}
		fmt.Fprintf(stderr, "orcr: web gateway on http://%s (pair a browser: orcr web pair)\n", s.webAddr)
	}
}

func webLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
