// Package accounts is DESIGN §10: a provider's auth sources (accounts), their usage
// windows read without spending tokens, the admission gate that places work on the
// account with room before a window is hit, the staggered resume after a reset, and
// budgets on any subtree. It is a feature beside the kernel: it plugs into admission
// as a core.Gate (a core.Placer and core.SpawnChecker too), keeps its own store
// buckets, and learns what happens from the kernel's event stream (readings, agents'
// usage and states) through the core.Kernel its Start gets, like any other feature.
package accounts

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Spec is one configured account ([[accounts.claude]] / [[accounts.codex]]).
type Spec struct {
	Provider  string
	Label     string
	ConfigDir string // claude: CLAUDE_CONFIG_DIR
	Home      string // codex: CODEX_HOME
	Env       map[string]string
	// UsageURL is the base URL of the provider's usage endpoint for the poller
	// ("" : the provider's own; the poller runs only when Settings.Poll is set).
	UsageURL string
}

// Settings is the [accounts] table.
type Settings struct {
	Policy
	ResumeStagger time.Duration // default 20s
	// Poll is how often each account's usage endpoint is polled (0: never; at least
	// 5 minutes otherwise).
	Poll time.Duration
	// BudgetGrace is how long a stop budget's agents get after the wrap-up message.
	BudgetGrace time.Duration
}

// Defaults of the [accounts] table.
const (
	DefaultHeadroom      = 0.9
	DefaultHoldBelow     = 5
	DefaultResumeStagger = 20 * time.Second
	DefaultBudgetGrace   = 2 * time.Minute
	// DefaultLabel is the label of a provider's implicit account.
	DefaultLabel = "default"
)

// WindowProviders get an implicit account when none is configured: the providers
// whose CLIs report usage windows.
var WindowProviders = []string{"claude", "codex", "opencode", "pi"}

// Options configure a Service; Start hands it the kernel and its buckets.
type Options struct {
	Logger   *slog.Logger
	Now      func() time.Time
	Settings Settings
	Accounts []Spec
	// HomeDir expands "~" in dirs (tests); default the user's home.
	HomeDir string
}

// Service is the accounts feature: the gate and its socket methods (methods.go).
type Service struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
	// store and k are set by Start: the feature's buckets, and the kernel that wakes
	// admission when a gate fact changes, publishes this feature's events and drives
	// agents (a budget's wrap-up and stop, a resume after a reset).
	store core.Buckets
	k     core.Kernel

	mu      sync.Mutex
	accts   map[string][]*account // provider → accounts in config order
	agents  map[string]*agentInfo // by agent id, from events and placements
	budgets map[string]*budget    // by glob
	// budgetList is budgets in glob order (admission walks it per decision).
	budgetList []*budget
	// continued are the records a later resume continues (their usage is in the newer
	// record's), by id; they count in no budget.
	continued map[string]bool
	seq       uint64                    // placement sequence (round-robin)
	gen       uint64                    // bumped whenever a decision could change
	live      map[string]map[string]int // provider → account → live agents
	cacheList []cached
	cacheGen  uint64
	lastSeen  time.Time // newest reading's clock, to notice jumps
	wake      chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ core.Placer       = (*Service)(nil)
	_ core.SpawnChecker = (*Service)(nil)
)

// account is one account's state. Guarded by Service.mu.
type account struct {
	spec     Spec
	implicit bool
	perToken bool
	loggedIn bool
	problem  string
	lastUsed uint64
	series   map[seriesKey]*series
}

type seriesKey struct{ window, family string }

// agentInfo is what the service follows of one agent.
type agentInfo struct {
	provider, account, path string
	model                   string
	live                    bool
	blocked                 *wire.Blocked // a usage-limit block, while blocked on one
	costUSD                 float64
	tokens                  int64
	resumed                 time.Time // when it was last told to continue
	created                 time.Time
	// resumedFrom is the record this one continues; that record's usage is inside
	// this one's (the session is shared), so a budget counts only the newest.
	resumedFrom string
}

// New validates the accounts (two with one label are an error naming both) and builds
// the service; Start begins following the kernel.
func New(opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st := &opts.Settings
	if st.Mode == "" {
		st.Mode = ModeOrdered
	}
	if st.Mode != ModeOrdered && st.Mode != ModeDistribute {
		return nil, fmt.Errorf("accounts: mode %q: use ordered or distribute", st.Mode)
	}
	if math.IsNaN(st.Headroom) || st.Headroom < 0 || st.Headroom > 1 {
		return nil, fmt.Errorf("accounts: headroom %v must be between 0 and 1 (0.9 is 90%%)", st.Headroom)
	}
	if st.ResumeStagger == 0 {
		st.ResumeStagger = DefaultResumeStagger
	}
	if st.BudgetGrace == 0 {
		st.BudgetGrace = DefaultBudgetGrace
	}
	if st.Poll > 0 && st.Poll < MinPoll {
		return nil, fmt.Errorf("accounts: poll %s is too often: at least %s apart", st.Poll, MinPoll)
	}
	if opts.HomeDir == "" {
		opts.HomeDir, _ = os.UserHomeDir()
	}
	s := &Service{opts: opts, log: opts.Logger, now: opts.Now,
		accts: map[string][]*account{}, agents: map[string]*agentInfo{}, budgets: map[string]*budget{},
		continued: map[string]bool{}, live: map[string]map[string]int{}, wake: make(chan struct{}, 1)}
	seen := map[string]bool{}
	for _, sp := range opts.Accounts {
		if sp.Label == "" {
			return nil, fmt.Errorf("accounts: a %s account has no label", sp.Provider)
		}
		if seen[sp.Provider+"/"+sp.Label] {
			return nil, fmt.Errorf("accounts: two %s accounts are labelled %q; labels must be unique per provider", sp.Provider, sp.Label)
		}
		seen[sp.Provider+"/"+sp.Label] = true
		sp.ConfigDir, sp.Home = s.expand(sp.ConfigDir), s.expand(sp.Home)
		s.accts[sp.Provider] = append(s.accts[sp.Provider], s.newAccount(sp, false))
	}
	for _, p := range WindowProviders {
		if len(s.accts[p]) == 0 {
			s.accts[p] = []*account{s.newAccount(Spec{Provider: p, Label: DefaultLabel}, true)}
		}
	}
	return s, nil
}

func (s *Service) expand(p string) string {
	if p == "~" {
		return s.opts.HomeDir
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(s.opts.HomeDir, p[2:])
	}
	return p
}

func (s *Service) newAccount(sp Spec, implicit bool) *account {
	a := &account{spec: sp, implicit: implicit, series: map[seriesKey]*series{}}
	a.perToken, a.loggedIn, a.problem = checkLogin(sp, implicit, s.opts.HomeDir)
	return a
}

// follow applies the kernel's events.
func (s *Service) follow(ch <-chan wire.Event) {
	defer s.wg.Done()
	for ev := range ch {
		s.onEvent(ev)
	}
}

func (s *Service) onEvent(ev wire.Event) {
	if ev.Event == wire.EventUsageReading {
		r, err := readingOf(ev.Data["reading"])
		if err != nil {
			s.log.Warn("accounts: unparseable reading kept out", "err", err)
			return
		}
		s.Observe(r)
		return
	}
	if ev.Agent == nil {
		return
	}
	s.warm(ev.Agent.Path) // a new agent's path is matched here, once, not under the lock
	s.mu.Lock()
	gen := s.gen
	s.noteAgentLocked(*ev.Agent)
	reached := s.reachedLocked()
	changed := s.gen != gen
	s.mu.Unlock()
	if changed {
		s.kick()
	}
	for _, b := range reached {
		s.budgetReached(b)
	}
}

// noteAgentLocked updates what the service knows of one agent, and the budgets' totals
// with it.
func (s *Service) noteAgentLocked(a wire.Agent) {
	in := s.agents[a.ID]
	if in == nil {
		in = &agentInfo{}
		s.agents[a.ID] = in
	} else {
		s.addLocked(a.ID, in, -1)
	}
	defer s.addLocked(a.ID, in, 1)
	if rf := a.ResumedFrom; rf != "" && rf != a.ID && !s.continued[rf] {
		if x := s.agents[rf]; x != nil {
			s.addLocked(rf, x, -1)
		}
		s.continued[rf] = true
	}
	before := *in
	in.provider, in.path, in.model = a.Provider, a.Path, a.Model
	in.created, in.resumedFrom = a.CreatedAt, a.ResumedFrom
	acct := in.account
	if a.Account != "" {
		acct = a.Account
	}
	s.setLiveLocked(in, a.State.Live() && a.State != wire.StateQueued, acct)
	in.blocked = nil
	if a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedLimit {
		in.blocked = a.Blocked
		if before.blocked == nil {
			s.gen++ // the resume loop has a new reset to wait for
		}
	}
	if a.Usage.CostUSD != nil {
		in.costUSD = *a.Usage.CostUSD
	}
	in.tokens = a.Usage.InputTokens + a.Usage.OutputTokens + a.Usage.CacheReadTokens + a.Usage.CacheWriteTokens
}

// kick wakes the resume loop and admission: something a decision rests on changed.
func (s *Service) kick() {
	if s.k != nil {
		s.k.Readmit()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// accountLocked finds an account by provider and label.
func (s *Service) accountLocked(provider, label string) *account {
	for _, a := range s.accts[provider] {
		if a.spec.Label == label {
			return a
		}
	}
	return nil
}

// labelsLocked lists a provider's labels for messages.
func (s *Service) labelsLocked(provider string) string {
	var ls []string
	for _, a := range s.accts[provider] {
		ls = append(ls, a.spec.Label)
	}
	sort.Strings(ls)
	return strings.Join(ls, ", ")
}
