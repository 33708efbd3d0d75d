// Package web is the web cockpit (DESIGN §15): an HTTP gateway that serves every
// socket method as POST /api/v1/{method} from the server's own handler table, the
// events as Server-Sent Events, agents' screens rendered with their colours, and a
// page embedded in the binary; with bearer tokens, paired browsers and their scopes.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"orcr/core"
	"orcr/core/wire"
	webapi "orcr/web/api"
)

// Name is the feature's name: its buckets' namespace.
const Name = "web"

// Options configure the gateway.
type Options struct {
	// Listen is the address to serve on ("" : the gateway is off). An address other
	// than loopback needs a token to exist.
	Listen string
	Logger *slog.Logger
	// Heartbeat is the interval of an event stream's keep-alive comment (default 15 s).
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a stream's client: one that stops reading is
	// dropped after it (default 10 s).
	WriteTimeout time.Duration
	// MaxClients bounds the event and screen streams open at once (default 4096).
	MaxClients int
	// ScreenEvery is the least time between two frames of a live screen (default 100 ms).
	ScreenEvery time.Duration
	// NotifyCommand ([notify] command) runs through sh -c with a Notice as JSON on its
	// stdin for each event that needs the user; NotifyOff are the kinds turned off.
	NotifyCommand string
	NotifyOff     map[string]bool
	// Home is orcr's state directory, where the Web Push (VAPID) key is kept.
	Home string
	// PushSubject is the VAPID sub claim (a mailto: or https: URL the push services
	// may contact; default mailto:orcr@localhost); PushClient sends the pushes
	// (default: one with no redirects).
	PushSubject string
	PushClient  *http.Client
}

// Service is the web feature.
type Service struct {
	log          *slog.Logger
	listen       string
	heartbeat    time.Duration
	writeTimeout time.Duration
	maxClients   int
	screenEvery  time.Duration
	notifyCmd    string
	notifyOff    map[string]bool
	notifyCancel context.CancelFunc
	push         *pusher

	auth *auth
	k    core.Kernel
	// list is k.List (a test puts a fleet of records in its place).
	list     func(context.Context, wire.ListParams) ([]wire.Agent, error)
	stopping chan struct{}
	// clients counts the open event and screen streams, of every gateway.
	clients atomic.Int64
	// lazyMu guards what starts with the first gateway (startHub): the hub, the
	// notifier. A server without a gateway has neither: no ring of encoded events, no
	// goroutine.
	lazyMu    sync.Mutex
	hub       *hub
	hubCancel context.CancelFunc
	closed    bool

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	handlers []wire.Handler
	serveErr string // why the gateway does not serve although asked to
	wg       sync.WaitGroup
}

var _ core.Feature = (*Service)(nil)

// New makes the feature; Serve starts the gateway once the server's handlers exist.
func New(o Options) *Service {
	s := &Service{log: o.Logger, listen: o.Listen, heartbeat: o.Heartbeat, writeTimeout: o.WriteTimeout,
		maxClients: o.MaxClients, screenEvery: o.ScreenEvery, auth: newAuth(), stopping: make(chan struct{}),
		notifyCmd: o.NotifyCommand, notifyOff: o.NotifyOff}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.heartbeat <= 0 {
		s.heartbeat = 15 * time.Second
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = 10 * time.Second
	}
	if s.maxClients <= 0 {
		s.maxClients = 4096
	}
	if s.screenEvery <= 0 {
		s.screenEvery = 100 * time.Millisecond
	}
	s.push = &pusher{home: o.Home, sub: o.PushSubject, client: o.PushClient, log: s.log}
	if s.push.sub == "" {
		s.push.sub = defaultPushSubject
	}
	if s.push.client == nil {
		s.push.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return s
}

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start loads the tokens.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("the web feature needs the kernel")
	}
	s.k = k
	if s.list == nil {
		s.list = k.List
	}
	if err := s.auth.load(ctx, k.Buckets()); err != nil {
		return err
	}
	if err := s.push.load(ctx, k.Buckets()); err != nil {
		return fmt.Errorf("load push subscriptions: %w", err)
	}
	if s.notifyCmd != "" {
		// [notify] command tells the user with or without a gateway.
		s.lazyMu.Lock()
		s.startNotifierLocked()
		s.lazyMu.Unlock()
	}
	return nil
}

// startHub starts the hub, and the notifier, once: when the first gateway is made
// (Serve, Handler). Web Push goes to browsers paired through a gateway, so without
// one only [notify] command needs the notifier.
func (s *Service) startHub() (*hub, error) {
	s.lazyMu.Lock()
	defer s.lazyMu.Unlock()
	if s.closed {
		return nil, errors.New("the web feature is closed")
	}
	if s.k == nil {
		return nil, errors.New("the web feature has not started")
	}
	if s.hub != nil {
		return s.hub, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := startHub(ctx, s.k)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("subscribe to the events: %w", err)
	}
	s.hub, s.hubCancel = h, cancel
	s.startNotifierLocked()
	return h, nil
}

// startNotifierLocked starts the notifier unless it runs (lazyMu held).
func (s *Service) startNotifierLocked() {
	if s.notifyCancel != nil || s.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.notifyCancel = cancel
	s.wg.Add(1)
	go s.notifier(ctx, s.k)
}

// ErrNoToken is Serve's refusal of an address other than loopback while no token
// exists: anyone who reaches the address could otherwise only be refused, and the
// user would not know why.
var ErrNoToken = errors.New("no web token exists")

// Serve starts the gateway on the configured address over the server's handlers
// (the same table the socket serves). It returns the address served ("" when off).
// An address other than loopback with no token is refused with ErrNoToken: the
// gateway then starts once a token is made (web.token.new).
func (s *Service) Serve(hs []wire.Handler) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers = hs
	return s.serveLocked()
}

func (s *Service) serveLocked() (string, error) {
	if s.listen == "" || s.srv != nil {
		return s.addrLocked(), nil
	}
	if s.k == nil {
		return "", errors.New("the web feature has not started")
	}
	if err := checkListen(s.listen); err != nil {
		s.serveErr = err.Error()
		return "", err
	}
	if !isLoopback(s.listen) && s.auth.count(webapi.KindToken) == 0 {
		s.serveErr = fmt.Sprintf("%s is not a loopback address and no web token exists: make one (orcr web token new --scope act) and the gateway starts", s.listen)
		return "", fmt.Errorf("web gateway on %s: %w; make one first (orcr web token new --scope act), the gateway then starts", s.listen, ErrNoToken)
	}
	gw, err := newGateway(s, s.handlers)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		s.serveErr = err.Error()
		return "", fmt.Errorf("web gateway: %w", err)
	}
	srv := &http.Server{Handler: gw.routes(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.srv, s.ln, s.serveErr = srv, ln, ""
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("web gateway stopped", "err", err)
		}
	}()
	s.log.Info("web gateway serving", "addr", ln.Addr().String(), "loopback", isLoopback(s.listen))
	return ln.Addr().String(), nil
}

// checkListen refuses an address the gateway could never listen on, before the
// beyond-loopback rule reads it (a typo is not "another address").
func checkListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n uint64
		n, err = strconv.ParseUint(port, 10, 16)
		if err == nil && n == 0 && port != "0" {
			err = errors.New("bad port")
		}
		if err != nil {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err == nil && strings.ContainsAny(host, " /") {
		err = fmt.Errorf("host %q is not a host name or address", host)
	}
	if err != nil {
		return fmt.Errorf("web gateway address %q: %v; want HOST:PORT, e.g. 127.0.0.1:7070 (or 0.0.0.0:7070 beyond this machine, with a token)", addr, err)
	}
	return nil
}

// Addr is the address the gateway serves on ("" when it does not).
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrLocked()
}

func (s *Service) addrLocked() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Handler is the gateway's HTTP handler over hs, for tests that serve it themselves.
func (s *Service) Handler(hs []wire.Handler) (http.Handler, error) {
	gw, err := newGateway(s, hs)
	if err != nil {
		return nil, err
	}
	return gw.routes(), nil
}

// Close stops the gateway: streams end, requests in flight get a moment.
func (s *Service) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.srv, s.ln = nil, nil
	select {
	case <-s.stopping:
	default:
		close(s.stopping)
	}
	s.mu.Unlock()
	s.lazyMu.Lock()
	s.closed = true
	if s.notifyCancel != nil {
		s.notifyCancel()
	}
	s.lazyMu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}
	s.wg.Wait()
	s.lazyMu.Lock()
	if s.hubCancel != nil {
		s.hubCancel()
	}
	s.lazyMu.Unlock()
	return nil
}

// baseURL is how a browser reaches the gateway: a wildcard address is replaced by
// this machine's first address that is not loopback.
func baseURL(addr string) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", ""
	}
	warn := ""
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if a := outward(); a != "" {
			host = a
		} else {
			warn = "the gateway listens on every address but this machine has none other than loopback"
		}
	}
	return "http://" + net.JoinHostPort(host, port), warn
}

// outward is this machine's first IPv4 address that is not loopback.
func outward() string {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// Methods are the web.* socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(webapi.TokenNew, func(ctx context.Context, p *webapi.TokenNewParams) (webapi.TokenNewResult, error) {
			t, secret, err := s.auth.create(ctx, p.Name, webapi.KindToken, p.Scope, time.Duration(p.TTLSeconds)*time.Second, "")
			if err != nil {
				return webapi.TokenNewResult{}, err
			}
			s.mu.Lock()
			if s.srv == nil && s.handlers != nil && s.listen != "" {
				if _, err := s.serveLocked(); err != nil {
					s.log.Warn("web gateway still not serving", "err", err)
				}
			}
			s.mu.Unlock()
			return webapi.TokenNewResult{Token: t, Secret: secret}, nil
		}),
		wire.Handle(webapi.TokenList, func(ctx context.Context, _ *wire.Empty) (webapi.TokenListResult, error) {
			return webapi.TokenListResult{Tokens: s.auth.list(ctx)}, nil
		}),
		wire.Handle(webapi.TokenRemove, func(ctx context.Context, p *webapi.TokenNameParams) (wire.Empty, error) {
			if err := s.auth.remove(ctx, p.Name); err != nil {
				return wire.Empty{}, err
			}
			s.push.drop(ctx, p.Name)
			return wire.Empty{}, nil
		}),
		wire.Handle(webapi.Pair, func(ctx context.Context, p *webapi.PairParams) (webapi.PairResult, error) {
			s.mu.Lock()
			addr, serveErr := s.addrLocked(), s.serveErr
			s.mu.Unlock()
			if addr == "" {
				why := "it is off: start the server with --http 127.0.0.1:7070 or set [http] listen in the config"
				if serveErr != "" {
					why = "it does not serve: " + serveErr
				}
				return webapi.PairResult{}, wire.Errorf(wire.CodeUnavailable, "no web gateway to pair with; %s", why)
			}
			code, exp, err := s.auth.pair(p.Scope, time.Duration(p.TTLSeconds)*time.Second)
			if err != nil {
				return webapi.PairResult{}, err
			}
			base, warn := baseURL(addr)
			return webapi.PairResult{URL: base + "/pair?code=" + code, ExpiresAt: exp, Listen: addr, Warning: warn}, nil
		}),
		wire.Heavy(wire.Handle(webapi.Agents, func(ctx context.Context, p *webapi.AgentsParams) (webapi.AgentsResult, error) {
			as, err := s.list(ctx, wire.ListParams{Glob: p.Glob})
			if err != nil {
				return webapi.AgentsResult{}, err
			}
			return webapi.AgentsResult{Agents: rows(as)}, nil
		})),
		wire.Handle(webapi.Status, func(ctx context.Context, _ *wire.Empty) (webapi.StatusResult, error) {
			r := webapi.StatusResult{Listen: s.Addr(), Devices: []webapi.Token{}}
			s.mu.Lock()
			r.Error = s.serveErr
			r.Clients = int(s.clients.Load())
			s.mu.Unlock()
			if r.Listen != "" {
				r.URL, _ = baseURL(r.Listen)
			}
			for _, t := range s.auth.list(ctx) {
				if t.Kind == webapi.KindSession {
					t.Push = s.push.has(t.Name)
					r.Devices = append(r.Devices, t)
				} else {
					r.Tokens++
				}
			}
			return r, nil
		}),
	}
}

// rows are agents as the page draws them (web.agents).
func rows(as []wire.Agent) []webapi.AgentRow {
	out := make([]webapi.AgentRow, len(as))
	for i, a := range as {
		out[i] = webapi.AgentRow{ID: a.ID, Path: a.Path, State: a.State}
		if a.Blocked != nil {
			b := *a.Blocked
			b.Text = ""
			out[i].Blocked = &b
		}
	}
	return out
}
