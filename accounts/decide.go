package accounts

import (
	"fmt"
	"strings"
	"time"

	acctapi "orcr/accounts/api"
)

// The admission decision, pure: which account of a provider a queued agent would run
// on now, given each account's windows. The gate builds a View from what it knows
// and caches the answer for the rest of an admission pass; tests drive it with a
// fake clock.

// Modes of choosing between accounts.
const (
	ModeOrdered    = "ordered"    // the first account that may take the work
	ModeDistribute = "distribute" // the least used; round-robin between equals
)

// Policy is the [accounts] table's admission settings.
type Policy struct {
	Mode      string
	Headroom  float64 // fraction of a window (0.9); above it only priority ≥ HoldBelow runs
	HoldBelow int
}

// View is one provider's accounts as admission sees them at Now.
type View struct {
	Now      time.Time
	Policy   Policy
	Provider string
	Accounts []AccountView // in config order
}

// AccountView is one account's facts for a decision.
type AccountView struct {
	Label    string
	Problem  string // not usable (missing dir, not logged in): the reason
	PerToken bool   // no windows apply
	Live     int
	LastUsed uint64 // placement sequence of its latest placement (0: never): round-robin
	Windows  []WindowView
}

// WindowView is one window reading.
type WindowView struct {
	Window   string
	Family   string // "" for every model
	UsedPct  float64
	ResetsAt *time.Time
	// Burn is the rise in percent per hour over the last 30 minutes (0: unknown).
	Burn float64
}

// Request is what admission knows of the work.
type Request struct {
	Family   string // the agent's model family ("" when its model is not known)
	Priority int
	Pin      string // the account asked for with --account
}

// Decision is the answer for one request.
type Decision struct {
	Account string // "" when the work waits
	Reason  string // why it waits (the first account's reason), or why this account
	RetryAt time.Time
	Choices []acctapi.Choice
}

// applies says whether window w counts for work of family f: an all-models window
// always does, a family window only for that family.
func applies(w WindowView, f string) bool { return w.Family == "" || w.Family == f }

// windowName is "5h", "weekly opus".
func windowName(w WindowView) string {
	if w.Family != "" {
		return w.Window + " " + w.Family
	}
	return w.Window
}

// judge says whether account a may take request r now: ok, why not (or a note), the
// time worth asking again, and its load (the highest share used of the windows that
// apply, for distribute).
func judge(v *View, a *AccountView, r Request) (ok bool, why string, retry time.Time, load float64) {
	name := v.Provider + "/" + a.Label
	if a.Problem != "" {
		return false, name + ": " + a.Problem, time.Time{}, 0
	}
	if a.PerToken {
		return true, name + ": per-token, no windows", time.Time{}, 0
	}
	headroom := v.Policy.Headroom * 100
	var throttled string
	for i := range a.Windows {
		w := &a.Windows[i]
		if !applies(*w, r.Family) {
			continue
		}
		if w.ResetsAt != nil && !w.ResetsAt.After(v.Now) {
			continue // the window has reset since this reading: nothing used yet
		}
		load = max(load, w.UsedPct)
		reset := ""
		if w.ResetsAt != nil {
			reset = ", resets " + w.ResetsAt.Local().Format("15:04")
		}
		if w.UsedPct >= 100 {
			at := time.Time{}
			if w.ResetsAt != nil {
				at = *w.ResetsAt
			}
			return false, fmt.Sprintf("%s %s window full%s", name, windowName(*w), reset), at, load
		}
		if r.Priority >= v.Policy.HoldBelow || throttled != "" {
			continue
		}
		switch {
		case headroom > 0 && w.UsedPct >= headroom:
			throttled = fmt.Sprintf("%s %s at %.0f%%, over headroom %.0f%% (priority < %d waits)%s",
				name, windowName(*w), w.UsedPct, headroom, v.Policy.HoldBelow, reset)
		case w.Burn > 0 && w.ResetsAt != nil &&
			w.UsedPct+w.Burn*w.ResetsAt.Sub(v.Now).Hours() >= 100:
			throttled = fmt.Sprintf("%s %s at %.0f%% burning %.0f%%/h: full before its reset (priority < %d waits)%s",
				name, windowName(*w), w.UsedPct, w.Burn, v.Policy.HoldBelow, reset)
		}
	}
	if throttled != "" {
		// Asked again in a minute: the burn rate and the readings move.
		return false, throttled, v.Now.Add(time.Minute), load
	}
	return true, fmt.Sprintf("%s: %.0f%% used", name, load), time.Time{}, load
}

// Decide picks the account for r.
func Decide(v View, r Request) Decision {
	var d Decision
	best, bestLoad := -1, 0.0
	for i := range v.Accounts {
		a := &v.Accounts[i]
		if r.Pin != "" && a.Label != r.Pin {
			continue
		}
		ok, why, retry, load := judge(&v, a, r)
		d.Choices = append(d.Choices, acctapi.Choice{Account: a.Label, OK: ok, Why: why})
		if !ok {
			if d.Reason == "" {
				d.Reason = why
			}
			if !retry.IsZero() && (d.RetryAt.IsZero() || retry.Before(d.RetryAt)) {
				d.RetryAt = retry
			}
			continue
		}
		if best < 0 {
			best, bestLoad = i, load
			if v.Policy.Mode != ModeDistribute {
				break
			}
			continue
		}
		if better(a, load, &v.Accounts[best], bestLoad) {
			best, bestLoad = i, load
		}
	}
	if best < 0 {
		if d.Reason == "" {
			if r.Pin != "" {
				d.Reason = fmt.Sprintf("no %s account %q", v.Provider, r.Pin)
			} else {
				d.Reason = "no " + v.Provider + " account configured"
			}
		}
		return d
	}
	d.Account, d.Reason, d.RetryAt = v.Accounts[best].Label, "", time.Time{}
	for _, c := range d.Choices {
		if c.Account == d.Account {
			d.Reason = c.Why
		}
	}
	return d
}

// better orders accounts for distribute: less used first (to the whole percent, so
// readings a hair apart count as equal), then fewer agents live on it, then the one
// placed on longest ago (round-robin between equals).
func better(a *AccountView, aLoad float64, b *AccountView, bLoad float64) bool {
	if pa, pb := int(aLoad), int(bLoad); pa != pb {
		return pa < pb
	}
	if a.Live != b.Live {
		return a.Live < b.Live
	}
	return a.LastUsed < b.LastUsed
}

// Family is the model family of a model name ("claude-opus-4-5" → "opus"); "" when
// none is known (the account's all-model windows still apply).
func Family(model string) string {
	m := model
	if strings.ContainsFunc(m, func(r rune) bool { return r >= 'A' && r <= 'Z' }) {
		m = strings.ToLower(m) // ids are lower case; a display name may not be
	}
	for _, f := range []string{"opus", "sonnet", "haiku"} {
		if strings.Contains(m, f) {
			return f
		}
	}
	return ""
}
