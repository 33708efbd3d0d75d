// Package nodes is the feature room of DESIGN §14: the machines orcr runs agents on
// beyond this one, reached over SSH. It keeps the registry (`orcr node add|ls|show|
// drain|rm` and config.toml's [[nodes]]), holds one link per node (link.go: one SSH
// connection, every call and the event stream multiplexed over streamlocal channels to
// the node's own `orcr serve`), and answers node.hello, the handshake every server
// gives a coordinator that links to it.
package nodes

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// Name is the feature's name: its buckets' namespace.
const Name = "nodes"

// Options configure the nodes feature.
type Options struct {
	Logger *slog.Logger
	// Home is this server's ORCR_HOME: orcr's own known_hosts lives under it.
	Home string
	// Secrets is secrets.toml: the {{secret.NAME}}s of an agent's env are resolved
	// from it when an agent admitted before a restart is handed to its node.
	Secrets string
	// Providers are this server's provider adapters: node.facts reports what their
	// Detect finds.
	Providers []core.Provider
	// Self is the running orcr binary: what node.hello hashes and what a node on
	// another version is sent.
	Self string
	// Config are the [[nodes]] of config.toml.
	Config []nodeapi.Node
	// SSHDir is ~/.ssh (its config and known_hosts); "" takes the user's.
	SSHDir string
	// Keepalive is how often the link asks the node's sshd whether it is there (default
	// 5 s); a node that does not answer within Keepalive×2 is unreachable.
	Keepalive time.Duration
	// BackoffMax caps the wait between attempts to link a node that is unreachable
	// (default 15 s); tests of a long cut shorten it.
	BackoffMax time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// LocalMax caps the agents placement puts on this machine while nodes are
	// registered ([limits] local; 0: no cap of its own). placerun.go.
	LocalMax int
}

// Service is the nodes feature.
type Service struct {
	opts   Options
	log    *slog.Logger
	k      core.Kernel
	store  core.Buckets
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	nodes map[string]*node
	// onNode is where each live agent placed on a node is: what the node caps count.
	onNode map[string]string
	// foldedAt is the node's UpdatedAt of the last record folded per agent.
	foldedAt map[string]time.Time
	// handOver are the agents admitted to a node that the link's re-read hands over
	// (remote.go): found starting when this server started (admitted before a
	// restart), or whose spawn was in flight when the link dropped. An agent admission
	// placed while this server runs is handed over by its own launch, never by the
	// re-read as well.
	handOver map[string]bool
	// Placement (place.go): the memory placements reserved per machine ("" : this
	// one), this machine's reading of the admission pass, and the RSS measured here
	// per provider.
	reserved map[string][]reservation
	here     core.LocalRoom
	localRSS map[string]int
	// local are the live agents on this machine, for its cap localMax ([limits]
	// local, which a config reload changes: SetLocalMax; placerun.go).
	local    map[string]struct{}
	localMax int
	// cloneMu serialises the pushes into one clone (git.go): node+dir → *sync.Mutex.
	cloneMu sync.Map

	factsMu   sync.Mutex
	factsAt   time.Time
	factsLast nodeapi.FactsResult

	// upServe serves the calls a node's panes make over its link (upstream.go);
	// upReady is closed once it is set.
	upMu    sync.Mutex
	upServe func(net.Conn, core.Caller)
	upReady chan struct{}

	rssMu sync.Mutex
	rssAt time.Time
	rss   map[string]int
}

var _ core.Feature = (*Service)(nil)

// New builds the feature from its options; Start loads the registry and links.
func New(o Options) (*Service, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Keepalive <= 0 {
		o.Keepalive = 5 * time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = backoffMax
	}
	seen := map[string]bool{}
	for _, n := range o.Config {
		if err := checkName(n.Name); err != nil {
			return nil, err
		}
		if seen[n.Name] {
			return nil, wire.Errorf(wire.CodeInvalidParams, "[[nodes]] names %q twice", n.Name)
		}
		seen[n.Name] = true
	}
	return &Service{opts: o, log: o.Logger, nodes: map[string]*node{}, onNode: map[string]string{}, foldedAt: map[string]time.Time{}, handOver: map[string]bool{},
		reserved: map[string][]reservation{}, localRSS: map[string]int{}, local: map[string]struct{}{}, localMax: o.LocalMax, upReady: make(chan struct{})}, nil
}

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start loads the registry (the config's nodes, then the ones added with node add) and
// starts a link to each.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("nodes need the kernel")
	}
	s.k, s.store = k, k.Buckets()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.load(ctx); err != nil {
		return err
	}
	if err := s.startAgents(ctx); err != nil {
		return err
	}
	if err := s.startLocal(ctx); err != nil {
		return err
	}
	k.Provide(Name, s)
	k.AddLaunchHook(s)
	s.mu.Lock()
	for _, n := range s.nodes {
		s.startLinkLocked(n)
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.measureLoop()
	}()
	return nil
}

// Close ends every link and waits for them.
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Lock()
	for _, n := range s.nodes {
		if n.link != nil {
			n.link.stop()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
