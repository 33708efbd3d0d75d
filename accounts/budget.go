package accounts

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

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
	b    wire.Budget
	glob core.Glob
}

type budgetRecord struct {
	V      int         `json:"v"`
	Budget wire.Budget `json:"budget"`
}

// matches: path or one of its ancestors matches the glob.
func (b *budget) matches(path string) bool {
	for p := path; p != ""; {
		if b.glob.Match(p) {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return false
}

func (b *budget) spentText() string {
	if b.b.USD != nil {
		return fmt.Sprintf("$%.2f of $%.2f spent", b.b.SpentUSD, *b.b.USD)
	}
	return fmt.Sprintf("%d of %d tokens used", b.b.SpentTokens, *b.b.Tokens)
}

// budgetHoldLocked is the reason a spawn at path is held by a reached budget.
func (s *Service) budgetHoldLocked(path string) string {
	if len(s.budgets) == 0 {
		return ""
	}
	for _, g := range s.budgetOrderLocked() {
		b := s.budgets[g]
		if b.b.Reached && b.matches(path) {
			return "budget " + b.b.Glob + ": " + b.spentText()
		}
	}
	return ""
}

func (s *Service) budgetOrderLocked() []string {
	gs := make([]string, 0, len(s.budgets))
	for g := range s.budgets {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	return gs
}

// recomputeBudgetsLocked sums every budget's subtree and returns the budgets that
// have just reached their bound.
func (s *Service) recomputeBudgetsLocked() []wire.Budget {
	var reached []wire.Budget
	var continued map[string]bool // records a later resume continues
	for _, in := range s.agents {
		if in.resumedFrom != "" {
			if continued == nil {
				continued = map[string]bool{}
			}
			continued[in.resumedFrom] = true
		}
	}
	for _, g := range s.budgetOrderLocked() {
		b := s.budgets[g]
		usd, tok, n := 0.0, int64(0), 0
		for id, in := range s.agents {
			if continued[id] || b.b.Since != nil && in.created.Before(*b.b.Since) {
				continue
			}
			if b.matches(in.path) {
				usd += in.costUSD
				tok += in.tokens
				n++
			}
		}
		b.b.SpentUSD, b.b.SpentTokens, b.b.Agents = usd, tok, n
		hit := (b.b.USD != nil && usd >= *b.b.USD) || (b.b.Tokens != nil && tok >= *b.b.Tokens)
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
func (s *Service) budgetReached(b wire.Budget) {
	s.saveBudget(b)
	if k, ok := s.svc.(interface {
		Publish(context.Context, wire.Event) (wire.Event, error)
	}); ok {
		k.Publish(s.ctx, wire.Event{Event: wire.EventBudgetReached, At: s.now(),
			Data: map[string]any{"glob": b.Glob, "action": b.Action, "spent": b.SpentUSD}})
	}
	s.log.Info("budget reached", "glob", b.Glob, "action", b.Action, "usd", b.SpentUSD, "tokens", b.SpentTokens)
	if b.Action != "stop" {
		return
	}
	s.mu.Lock()
	bb := s.budgets[b.Glob]
	var live []string
	for id, in := range s.agents {
		if bb != nil && in.live && bb.matches(in.path) {
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
	if _, err := s.svc.Wait(s.ctx, wire.WaitParams{Glob: id, Until: "settled", TimeoutSeconds: secs}); err != nil {
		s.log.Warn("budget: wait for the turn to settle", "id", id, "err", err)
	}
	// An agent waiting on a prompt gets the message once the prompt is answered,
	// within the grace period; typed into the prompt it would answer it.
	wctx, cancel := context.WithTimeout(s.ctx, grace)
	err := core.SendWhenFree(wctx, s.svc, wire.SendParams{Target: id, Text: WrapUp, Enter: true})
	cancel()
	if err != nil {
		s.log.Warn("budget wrap-up message", "id", id, "err", err)
	}
	select {
	case <-s.ctx.Done():
		return
	case <-time.After(grace):
	}
	if _, err := s.svc.Kill(s.ctx, wire.KillParams{Glob: id}); err != nil {
		s.log.Warn("budget stop", "id", id, "err", err)
	}
}

// typeLine types text into an agent and submits it. The kernel's send waits for the
// screen to be still, pastes the text, presses Enter once it shows and again while no
// turn starts (core/submit.go): claude 2.1.328 garbles keys typed while it redraws
// after a turn and keeps an Enter that follows a burst of text as a newline.
func (s *Service) typeLine(id, text string) error {
	return s.svc.Send(s.ctx, wire.SendParams{Target: id, Text: text, Enter: true})
}

func (s *Service) saveBudget(b wire.Budget) {
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
		s.budgets[rec.Budget.Glob] = &budget{b: rec.Budget, glob: g}
		return true
	})
}

// BudgetSet implements core.AccountService.
func (s *Service) BudgetSet(ctx context.Context, p wire.BudgetSetParams) (wire.Budget, error) {
	if (p.USD == nil) == (p.Tokens == nil) {
		return wire.Budget{}, wire.Errorf(wire.CodeInvalidParams, "a budget needs exactly one of --usd and --tokens")
	}
	if p.USD != nil && (*p.USD <= 0 || math.IsNaN(*p.USD) || math.IsInf(*p.USD, 0)) {
		return wire.Budget{}, wire.Errorf(wire.CodeInvalidParams, "--usd %v must be a positive amount", *p.USD)
	}
	if p.Tokens != nil && *p.Tokens <= 0 {
		return wire.Budget{}, wire.Errorf(wire.CodeInvalidParams, "--tokens %d must be positive", *p.Tokens)
	}
	switch p.Action {
	case "":
		p.Action = "hold"
	case "hold", "stop":
	default:
		return wire.Budget{}, wire.Errorf(wire.CodeInvalidParams, "--action %q: use hold or stop", p.Action)
	}
	g, err := core.ParseGlob("", p.Glob)
	if err != nil {
		return wire.Budget{}, err
	}
	b := &budget{glob: g, b: wire.Budget{Glob: g.String(), USD: p.USD, Tokens: p.Tokens, Action: p.Action, CreatedAt: s.now().UTC(),
		Role: p.Role, Since: p.Since}}
	s.mu.Lock()
	if old := s.budgets[b.b.Glob]; old != nil {
		b.b.CreatedAt = old.b.CreatedAt
	}
	s.budgets[b.b.Glob] = b
	reached := s.recomputeBudgetsLocked()
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

// Budgets implements core.AccountService.
func (s *Service) Budgets(context.Context) ([]wire.Budget, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recomputeBudgetsLocked()
	out := []wire.Budget{}
	for _, g := range s.budgetOrderLocked() {
		out = append(out, s.budgets[g].b)
	}
	return out, nil
}

// BudgetRemove implements core.AccountService; held spawns are admitted again.
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
		gs = append(gs, s.budgetOrderLocked()...)
		s.mu.Unlock()
		return wire.Errorf(wire.CodeNotFound, "no budget on %q; budgets: %s", glob, strings.Join(gs, ", "))
	}
	delete(s.budgets, b.b.Glob)
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
