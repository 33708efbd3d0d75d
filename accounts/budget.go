package accounts

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core"
	"orcr/core/wire"
)

// Budgets (DESIGN §10): a bound on the cost or tokens of every agent under a glob,
// rolled up along the tree (an agent counts for a budget when its path or any of its
// ancestors' matches). At the bound new spawns under it are held (queue reason:
// budget); with action stop the live ones get one wrap-up message and are stopped
// after the grace period. Stored in bucket "budgets" under the glob.

const bucketBudgets = "budgets"

// WrapUp is the message a stop budget sends its live agents once.
const WrapUp = "orcr: this subtree's budget is spent. Wrap up now: save your work and summarise where you stopped; you will be stopped shortly."

type budget struct {
	b    acctapi.Budget
	glob core.Glob // compiled once, when the budget is set or loaded
	// under caches glob.MatchUnder per agent path (guarded by Service.mu). A path never
	// changes, so each distinct path is matched once — before the lock where it can be
	// (warm) — and every later event or admission decision is a map lookup.
	under map[string]bool
}

type budgetRecord struct {
	V      int            `json:"v"`
	Budget acctapi.Budget `json:"budget"`
}

// maxUnderCache bounds a budget's path cache (paths of spawns that were refused add
// entries too); past it the cache starts again and paths are matched afresh.
const maxUnderCache = 1 << 16

func newBudget(b acctapi.Budget, g core.Glob) *budget {
	return &budget{b: b, glob: g, under: map[string]bool{}}
}

// underLocked: path or one of its ancestors matches the glob.
func (b *budget) underLocked(path string) bool {
	m, ok := b.under[path]
	if !ok {
		m = b.glob.MatchUnder(path)
		b.cacheLocked(path, m)
	}
	return m
}

func (b *budget) cacheLocked(path string, m bool) {
	if len(b.under) >= maxUnderCache {
		clear(b.under)
	}
	b.under[path] = m
}

// add counts one agent's usage in (sign 1) or out of (sign -1) the budget's totals.
func (b *budget) add(in *agentInfo, sign int) {
	b.b.SpentUSD += float64(sign) * in.costUSD
	b.b.SpentTokens += int64(sign) * in.tokens
	b.b.Agents += sign
	if b.b.Agents == 0 {
		b.b.SpentUSD, b.b.SpentTokens = 0, 0 // no rounding left over from sums taken back
	}
}

func (b *budget) spentText() string {
	if b.b.USD != nil {
		return fmt.Sprintf("$%.2f of $%.2f spent", b.b.SpentUSD, *b.b.USD)
	}
	return fmt.Sprintf("%d of %d tokens used", b.b.SpentTokens, *b.b.Tokens)
}

// warm matches paths against every budget that has not seen them yet, without the
// service's lock — admission waits for that lock while it holds the engine's, so no glob
// is matched there when it can be helped — and caches the answers.
func (s *Service) warm(paths ...string) {
	type job struct {
		b    *budget
		path string
	}
	var jobs []job
	s.mu.Lock()
	for _, b := range s.budgetList {
		for _, p := range paths {
			if _, ok := b.under[p]; !ok {
				jobs = append(jobs, job{b, p})
			}
		}
	}
	s.mu.Unlock()
	if len(jobs) == 0 {
		return
	}
	m := make([]bool, len(jobs))
	for i, j := range jobs {
		m[i] = j.b.glob.MatchUnder(j.path) // the glob is immutable: no lock needed
	}
	s.mu.Lock()
	for i, j := range jobs {
		j.b.cacheLocked(j.path, m[i])
	}
	s.mu.Unlock()
}

// budgetHoldLocked is the reason a spawn at path is held by a reached budget. It runs
// under the engine's lock: a walk over the budgets and a map lookup each.
func (s *Service) budgetHoldLocked(path string) string {
	for _, b := range s.budgetList {
		if b.b.Reached && b.underLocked(path) {
			return "budget " + b.b.Glob + ": " + b.spentText()
		}
	}
	return ""
}

// listBudgetsLocked rebuilds the budgets in glob order after one is set or removed.
func (s *Service) listBudgetsLocked() {
	s.budgetList = s.budgetList[:0]
	for _, b := range s.budgets {
		s.budgetList = append(s.budgetList, b)
	}
	sort.Slice(s.budgetList, func(i, j int) bool { return s.budgetList[i].b.Glob < s.budgetList[j].b.Glob })
}

// countsLocked: agent id's usage is in budget b's totals. A record a later resume
// continues is not (its usage is inside the newer one's: the session is shared), nor one
// created before the budget's Since.
func (s *Service) countsLocked(id string, in *agentInfo, b *budget) bool {
	return !s.continued[id] && (b.b.Since == nil || !in.created.Before(*b.b.Since)) && b.underLocked(in.path)
}

// addLocked counts one agent in (sign 1) or out of (-1) every budget it falls under.
// What it knows of an agent changes between a -1 and a +1, so the totals follow each
// usage or cost event in O(budgets), never by summing every record again.
func (s *Service) addLocked(id string, in *agentInfo, sign int) {
	for _, b := range s.budgetList {
		if s.countsLocked(id, in, b) {
			b.add(in, sign)
		}
	}
}

// totalLocked sums one budget afresh: when it is set or loaded.
func (s *Service) totalLocked(b *budget) {
	b.b.SpentUSD, b.b.SpentTokens, b.b.Agents = 0, 0, 0
	for id, in := range s.agents {
		if s.countsLocked(id, in, b) {
			b.add(in, 1)
		}
	}
}

// reachedLocked marks the budgets whose totals have reached their bound and returns
// those that just did.
func (s *Service) reachedLocked() []acctapi.Budget {
	var reached []acctapi.Budget
	for _, b := range s.budgetList {
		hit := (b.b.USD != nil && b.b.SpentUSD >= *b.b.USD) || (b.b.Tokens != nil && b.b.SpentTokens >= *b.b.Tokens)
		if hit && !b.b.Reached {
			now := s.now().UTC()
			b.b.Reached, b.b.ReachedAt = true, &now
			reached = append(reached, b.b)
			s.gen++
		}
	}
	return reached
}

// budgetReached stores the reached budget, says so in an event and, for stop, winds
// its live agents down. It runs without the lock.
func (s *Service) budgetReached(b acctapi.Budget) {
	s.saveBudget(b)
	if s.k != nil {
		if _, err := s.k.Publish(s.ctx, wire.Event{Event: acctapi.EventBudgetReached, At: s.now(),
			Data: map[string]any{"glob": b.Glob, "action": b.Action, "spent": b.SpentUSD}}); err != nil {
			s.log.Warn("budget: publish reached", "glob", b.Glob, "err", err)
		}
	}
	s.log.Info("budget reached", "glob", b.Glob, "action", b.Action, "usd", b.SpentUSD, "tokens", b.SpentTokens)
	if b.Action != "stop" {
		return
	}
	s.mu.Lock()
	bb := s.budgets[b.Glob]
	var live []string
	for id, in := range s.agents {
		if bb != nil && in.live && bb.underLocked(in.path) {
			live = append(live, id)
		}
	}
	grace := s.opts.Settings.BudgetGrace
	s.mu.Unlock()
	sort.Strings(live)
	for _, id := range live {
		s.wg.Add(1)
		go s.windDown(id, grace)
	}
}

// windDown gives one agent its wrap-up message and stops it after the grace period.
// The message goes in once the agent's turn has settled (at most one grace period
// later): keys typed into a CLI that is mid-turn may be dropped.
func (s *Service) windDown(id string, grace time.Duration) {
	defer s.wg.Done()
	secs := max(1, int(grace/time.Second))
	if _, err := s.k.Wait(s.ctx, wire.WaitParams{Glob: id, Until: "settled", TimeoutSeconds: secs}); err != nil {
		s.log.Warn("budget: wait for the turn to settle", "id", id, "err", err)
	}
	// An agent waiting on a prompt gets the message once the prompt is answered,
	// within the grace period; typed into the prompt it would answer it.
	wctx, cancel := context.WithTimeout(s.ctx, grace)
	err := core.SendWhenFree(wctx, s.k, wire.SendParams{Target: id, Text: WrapUp, Enter: true})
	cancel()
	if err != nil {
		s.log.Warn("budget wrap-up message", "id", id, "err", err)
	}
	select {
	case <-s.ctx.Done():
		return
	case <-time.After(grace):
	}
	if _, err := s.k.Kill(s.ctx, wire.KillParams{Glob: id}); err != nil {
		s.log.Warn("budget stop", "id", id, "err", err)
	}
}

// typeLine types text into an agent and submits it. The kernel's send waits for the
// screen to be still, pastes the text, presses Enter once it shows and again while no
// turn starts (core/submit.go): claude 2.1.328 garbles keys typed while it redraws
// after a turn and keeps an Enter that follows a burst of text as a newline.
func (s *Service) typeLine(id, text string) error {
	return s.k.Send(s.ctx, wire.SendParams{Target: id, Text: text, Enter: true})
}

func (s *Service) saveBudget(b acctapi.Budget) {
	if s.store == nil {
		return
	}
	v, _ := json.Marshal(budgetRecord{V: 1, Budget: b})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.Put(ctx, bucketBudgets, b.Glob, v); err != nil {
		s.log.Warn("accounts: store budget", "glob", b.Glob, "err", err)
	}
}

func (s *Service) loadBudgetsLocked(ctx context.Context) error {
	return s.store.Scan(ctx, bucketBudgets, func(key string, v []byte) bool {
		var rec budgetRecord
		if err := json.Unmarshal(v, &rec); err != nil || rec.V != 1 {
			s.log.Warn("accounts: stored budget unreadable, skipped", "glob", key, "err", err)
			return true
		}
		g, err := core.ParseGlob("", rec.Budget.Glob)
		if err != nil {
			s.log.Warn("accounts: stored budget glob invalid, skipped", "glob", key, "err", err)
			return true
		}
		s.budgets[rec.Budget.Glob] = newBudget(rec.Budget, g)
		s.listBudgetsLocked()
		return true
	})
}

// BudgetSet serves its socket method (methods.go).
func (s *Service) BudgetSet(ctx context.Context, p acctapi.BudgetSetParams) (acctapi.Budget, error) {
	if (p.USD == nil) == (p.Tokens == nil) {
		return acctapi.Budget{}, wire.Errorf(wire.CodeInvalidParams, "a budget needs exactly one of --usd and --tokens")
	}
	if p.USD != nil && (*p.USD <= 0 || math.IsNaN(*p.USD) || math.IsInf(*p.USD, 0)) {
		return acctapi.Budget{}, wire.Errorf(wire.CodeInvalidParams, "--usd %v must be a positive amount", *p.USD)
	}
	if p.Tokens != nil && *p.Tokens <= 0 {
		return acctapi.Budget{}, wire.Errorf(wire.CodeInvalidParams, "--tokens %d must be positive", *p.Tokens)
	}
	switch p.Action {
	case "":
		p.Action = "hold"
	case "hold", "stop":
	default:
		return acctapi.Budget{}, wire.Errorf(wire.CodeInvalidParams, "--action %q: use hold or stop", p.Action)
	}
	g, err := core.ParseGlob("", p.Glob)
	if err != nil {
		return acctapi.Budget{}, err
	}
	b := newBudget(acctapi.Budget{Glob: g.String(), USD: p.USD, Tokens: p.Tokens, Action: p.Action, CreatedAt: s.now().UTC(),
		Role: p.Role, Since: p.Since}, g)
	// Every known path is matched here, before the lock (b is not shared yet); only
	// agents that appear meanwhile are matched under it.
	s.mu.Lock()
	paths := make([]string, 0, len(s.agents))
	for _, in := range s.agents {
		paths = append(paths, in.path)
	}
	if old := s.budgets[b.b.Glob]; old != nil {
		maps.Copy(b.under, old.under) // the same glob: the same answers
	}
	s.mu.Unlock()
	for _, p := range paths {
		if _, ok := b.under[p]; !ok {
			b.cacheLocked(p, g.MatchUnder(p))
		}
	}
	s.mu.Lock()
	if old := s.budgets[b.b.Glob]; old != nil {
		b.b.CreatedAt = old.b.CreatedAt
	}
	s.budgets[b.b.Glob] = b
	s.listBudgetsLocked()
	s.totalLocked(b)
	reached := s.reachedLocked()
	s.gen++
	out := b.b
	s.mu.Unlock()
	s.saveBudget(out)
	s.kick() // a raised or replaced budget may let held spawns go now
	for _, r := range reached {
		s.budgetReached(r)
	}
	return out, nil
}

// Budgets serves its socket method (methods.go).
func (s *Service) Budgets(context.Context) ([]acctapi.Budget, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []acctapi.Budget{}
	for _, b := range s.budgetList {
		out = append(out, b.b)
	}
	return out, nil
}

// BudgetRemove serves its socket method (methods.go); held spawns are admitted again.
func (s *Service) BudgetRemove(ctx context.Context, glob string) error {
	s.mu.Lock()
	b := s.budgets[glob]
	if b == nil {
		if g, err := core.ParseGlob("", glob); err == nil {
			b = s.budgets[g.String()]
		}
	}
	if b == nil {
		var gs []string
		for _, b := range s.budgetList {
			gs = append(gs, b.b.Glob)
		}
		s.mu.Unlock()
		return wire.Errorf(wire.CodeNotFound, "no budget on %q; budgets: %s", glob, strings.Join(gs, ", "))
	}
	delete(s.budgets, b.b.Glob)
	s.listBudgetsLocked()
	s.gen++
	s.mu.Unlock()
	s.kick()
	if s.store != nil {
		if err := s.store.Delete(ctx, bucketBudgets, b.b.Glob); err != nil {
			return fmt.Errorf("remove budget: %w", err)
		}
	}
	return nil
}
