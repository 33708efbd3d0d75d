package planning

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"orcr/internal/regfile"
)

// DefaultFS holds the embedded default catalog.toml.
//
//go:embed catalog.toml
var DefaultFS embed.FS

// DefaultCatalogFile is the name of the catalog inside DefaultFS.
const DefaultCatalogFile = "catalog.toml"

// Tier names, lowest first. The set is fixed (DESIGN §8); a user catalog may change a
// tier's minimums but not add tiers, so a plan's `tier:` can be checked without one.
const (
	TierSmall  = "small"
	TierMedium = "medium"
	TierHigh   = "high"
)

// TierNames lists the tiers lowest first.
var TierNames = []string{TierSmall, TierMedium, TierHigh}

// KnownProviders are the providers a catalog model may name: the ones orcr runs.
var KnownProviders = []string{"claude", "codex", "opencode", "pi"}

// Ratings are 1 (weak) to 5 (best). In a Tier, 0 means "no minimum".
type Ratings struct {
	Reasoning            int `json:"reasoning"`
	Coding               int `json:"coding"`
	Architecture         int `json:"architecture"`
	InstructionFollowing int `json:"instructionFollowing"`
	ToolUse              int `json:"toolUse"`
	Planning             int `json:"planning"`
	Speed                int `json:"speed"`
}

// ratingKeys are the TOML keys of Ratings, in column order.
var ratingKeys = []string{"reasoning", "coding", "architecture", "instruction_following", "tool_use", "planning", "speed"}

// field returns the rating stored under a TOML key.
func (r *Ratings) field(key string) *int {
	switch key {
	case "reasoning":
		return &r.Reasoning
	case "coding":
		return &r.Coding
	case "architecture":
		return &r.Architecture
	case "instruction_following":
		return &r.InstructionFollowing
	case "tool_use":
		return &r.ToolUse
	case "planning":
		return &r.Planning
	case "speed":
		return &r.Speed
	}
	return nil
}

// ByKey returns the ratings above 0 by their TOML key: a tier's minimums as catalog.get
// shows them.
func (r Ratings) ByKey() map[string]int {
	out := map[string]int{}
	for i, v := range r.values() {
		if v > 0 {
			out[ratingKeys[i]] = v
		}
	}
	return out
}

func (r Ratings) values() []int {
	return []int{r.Reasoning, r.Coding, r.Architecture, r.InstructionFollowing, r.ToolUse, r.Planning, r.Speed}
}

func (r Ratings) sum() int {
	n := 0
	for _, v := range r.values() {
		n += v
	}
	return n
}

// Model is one model as one provider runs it. Provider and ID together name it: the same
// upstream model reached through opencode and through pi are two entries.
type Model struct {
	Provider string `json:"provider"`
	// ID is what the provider's --model flag takes (opencode and pi: "vendor/model").
	ID      string `json:"id"`
	Ratings        // embedded so m.Coding reads naturally
	Context int    `json:"context"` // tokens
	Premium bool   `json:"premium,omitempty"`
}

// Ref is "provider:id", the form `--lead` and a plan's `model:` take.
func (m Model) Ref() string { return m.Provider + ":" + m.ID }

// Tier is a tier's minimums: a model qualifies when every rating and its context are at
// least these.
type Tier struct {
	Name       string  `json:"name"`
	Min        Ratings `json:"min"`
	MinContext int     `json:"minContext,omitempty"`
}

// Catalog is the merged catalog: the default, then the user's file over it.
type Catalog struct {
	Models []Model // default order, then models the user added, in file order
	Tiers  []Tier  // TierNames order
}

// DefaultUserCatalogPath is $XDG_CONFIG_HOME/orcr/catalog.toml (~/.config when unset).
func DefaultUserCatalogPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "orcr", "catalog.toml")
}

// Default returns the embedded catalog alone. It panics if the embedded file is broken,
// which a test rules out.
func Default() *Catalog {
	c, err := Load(DefaultFS, "")
	if err != nil {
		panic(fmt.Sprintf("planning: embedded catalog: %v", err))
	}
	return c
}

// Load reads catalog.toml from defaults, then merges the user's file at userPath over
// it. An empty userPath or a missing file means no overrides. Every problem in either
// file is reported at once as Errors, each naming its file and line.
func Load(defaults fs.FS, userPath string) (*Catalog, error) {
	src, err := fs.ReadFile(defaults, DefaultCatalogFile)
	if err != nil {
		return nil, fmt.Errorf("read default catalog: %w", err)
	}
	c := &Catalog{}
	if err := c.merge(DefaultCatalogFile, src, true); err != nil {
		return nil, err
	}
	if userPath == "" {
		return c, nil
	}
	user, err := regfile.Read(userPath)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	if err := c.merge(userPath, user, false); err != nil {
		return nil, err
	}
	return c, nil
}

// Tier returns the named tier.
func (c *Catalog) Tier(name string) (Tier, bool) {
	for _, t := range c.Tiers {
		if t.Name == name {
			return t, true
		}
	}
	return Tier{}, false
}

// Meets reports whether m has every minimum of t.
func Meets(m Model, t Tier) bool {
	have, want := m.Ratings.values(), t.Min.values()
	for i := range have {
		if have[i] < want[i] {
			return false
		}
	}
	return m.Context >= t.MinContext
}

// Qualifies returns the highest tier m meets, or "" when it meets none.
func (c *Catalog) Qualifies(m Model) string {
	for i := len(c.Tiers) - 1; i >= 0; i-- {
		if Meets(m, c.Tiers[i]) {
			return c.Tiers[i].Name
		}
	}
	return ""
}

// Pick returns the models that can do work of tier, best choice first; nil when the tier
// is unknown or nothing fits. Premium models are left out unless allowPremium; models
// whose provider available reports false are left out (nil available: all are).
//
// The order spends the least model the job needs: models whose highest tier is this one
// come before over-qualified ones (lower surplus tier first), non-premium before premium,
// then faster, then higher rated overall, then catalog order.
func (c *Catalog) Pick(tier string, allowPremium bool, available func(provider string) bool) []Model {
	t, ok := c.Tier(tier)
	if !ok {
		return nil
	}
	rank := map[string]int{}
	for i, name := range TierNames {
		rank[name] = i
	}
	type cand struct {
		m     Model
		level int
		pos   int
	}
	var cands []cand
	for i, m := range c.Models {
		if !Meets(m, t) || (m.Premium && !allowPremium) || (available != nil && !available(m.Provider)) {
			continue
		}
		cands = append(cands, cand{m, rank[c.Qualifies(m)], i})
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		return cmp.Or(
			cmp.Compare(a.level, b.level),
			cmpBool(a.m.Premium, b.m.Premium),
			cmp.Compare(b.m.Speed, a.m.Speed),
			cmp.Compare(b.m.sum(), a.m.sum()),
			cmp.Compare(a.pos, b.pos),
		)
	})
	out := make([]Model, len(cands))
	for i, x := range cands {
		out[i] = x.m
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// Lookup finds a model by "provider:id", or by id alone when exactly one provider
// offers it. Providers never contain ':', so "pi:vendor/model:high" is provider pi and
// id "vendor/model:high".
func (c *Catalog) Lookup(ref string) (Model, error) {
	if p, id, ok := strings.Cut(ref, ":"); ok && slices.Contains(KnownProviders, p) {
		for _, m := range c.Models {
			if m.Provider == p && m.ID == id {
				return m, nil
			}
		}
		return Model{}, fmt.Errorf("model %q is not in the catalog (see `orcr catalog`)", ref)
	}
	var found []Model
	for _, m := range c.Models {
		if m.ID == ref {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Model{}, fmt.Errorf("model %q is not in the catalog (see `orcr catalog`)", ref)
	}
	refs := make([]string, len(found))
	for i, m := range found {
		refs[i] = m.Ref()
	}
	return Model{}, fmt.Errorf("model %q is offered by several providers: name one of %s", ref, strings.Join(refs, ", "))
}

func (c *Catalog) index(provider, id string) int {
	return slices.IndexFunc(c.Models, func(m Model) bool { return m.Provider == provider && m.ID == id })
}

// Knows says whether the catalog lists ref (provider:model); a nil catalog lists nothing.
func (c *Catalog) Knows(ref string) bool {
	if c == nil {
		return false
	}
	_, err := c.Lookup(ref)
	return err == nil
}
