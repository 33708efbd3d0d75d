package planning

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"orcr/internal/strictfile"
)

// rawRatings holds a table's ratings as written: nil means the key is absent, which is
// how a user entry patches only what it names.
type rawRatings struct {
	Reasoning            *int `toml:"reasoning"`
	Coding               *int `toml:"coding"`
	Architecture         *int `toml:"architecture"`
	InstructionFollowing *int `toml:"instruction_following"`
	ToolUse              *int `toml:"tool_use"`
	Planning             *int `toml:"planning"`
	Speed                *int `toml:"speed"`
	Context              *int `toml:"context"`
}

// get returns the rating under a TOML key (ratingKeys or "context").
func (r *rawRatings) get(key string) *int {
	switch key {
	case "reasoning":
		return r.Reasoning
	case "coding":
		return r.Coding
	case "architecture":
		return r.Architecture
	case "instruction_following":
		return r.InstructionFollowing
	case "tool_use":
		return r.ToolUse
	case "planning":
		return r.Planning
	case "speed":
		return r.Speed
	case "context":
		return r.Context
	}
	return nil
}

type rawModel struct {
	Provider *string `toml:"provider"`
	ID       *string `toml:"id"`
	rawRatings
	Premium  *bool `toml:"premium"`
	Disabled *bool `toml:"disabled"`
}

type rawCatalog struct {
	Tiers map[string]rawRatings `toml:"tiers"`
	Model []rawModel            `toml:"model"`
}

// merge applies one catalog file to c. complete is set for the default file, whose
// every model and tier must be whole; a user file may patch.
func (c *Catalog) merge(file string, src []byte, complete bool) error {
	errs := &errorList{file: file}
	var raw rawCatalog
	doc, err := strictfile.Decode(file, src, &raw)
	var strict strictfile.Errors
	errors.As(err, &strict)
	for _, e := range strict {
		errs.list = append(errs.list, LineError{File: file, Line: e.Line, Msg: e.Msg, Code: CodeSyntax})
	}
	if doc == nil {
		return errs.err()
	}
	tierLine := func(name string, key ...string) int {
		return doc.Line(strictfile.Key(append([]string{"tiers", name}, key...)...))
	}

	// Tiers: a [tiers.NAME] table replaces that tier's minimums.
	names := make([]string, 0, len(raw.Tiers))
	for name := range raw.Tiers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		line := tierLine(name)
		if !slices.Contains(TierNames, name) {
			errs.add(line, "unknown tier %q: tiers are %s", name, strings.Join(TierNames, ", "))
			continue
		}
		r := raw.Tiers[name]
		t := Tier{Name: name}
		for _, k := range ratingKeys {
			if v := r.get(k); v != nil {
				if *v < 1 || *v > 5 {
					errs.add(tierLine(name, k), "tier %s: %s = %d: a minimum rating is 1 to 5 (leave the key out for no minimum)", name, k, *v)
				}
				*t.Min.field(k) = *v
			}
		}
		if r.Context != nil {
			if *r.Context < 0 {
				errs.add(tierLine(name, "context"), "tier %s: context = %d must not be negative", name, *r.Context)
			}
			t.MinContext = *r.Context
		}
		c.setTier(t)
	}
	if complete {
		for _, name := range TierNames {
			if _, ok := c.Tier(name); !ok {
				errs.add(0, "tier %q is not defined: add [tiers.%s]", name, name)
			}
		}
	}

	seen := map[string]int{}
	for i, rm := range raw.Model {
		line := doc.Line(fmt.Sprintf("model[%d]", i))
		keyLine := func(k string) int { return doc.Line(fmt.Sprintf("model[%d].%s", i, strictfile.Key(k))) }
		if rm.Provider == nil || rm.ID == nil {
			errs.add(line, "a [[model]] needs provider and id")
			continue
		}
		p, id := *rm.Provider, *rm.ID
		if !slices.Contains(KnownProviders, p) {
			errs.add(keyLine("provider"), "unknown provider %q: providers are %s", p, strings.Join(KnownProviders, ", "))
			continue
		}
		if id == "" {
			errs.add(keyLine("id"), "id must not be empty")
			continue
		}
		ref := p + ":" + id
		if first, dup := seen[ref]; dup {
			errs.add(line, "model %s is listed twice in this file (first at line %d)", ref, first)
			continue
		}
		seen[ref] = line
		at := c.index(p, id)
		if rm.Disabled != nil && *rm.Disabled {
			if at < 0 {
				errs.add(keyLine("disabled"), "model %s is not in the catalog, so there is nothing to disable (see `orcr catalog`)", ref)
				continue
			}
			c.Models = slices.Delete(c.Models, at, at+1)
			continue
		}
		var m Model
		if at >= 0 {
			m = c.Models[at]
		} else {
			m = Model{Provider: p, ID: id}
			var missing []string
			for _, k := range append(slices.Clone(ratingKeys), "context") {
				if rm.get(k) == nil {
					missing = append(missing, k)
				}
			}
			if len(missing) > 0 {
				errs.add(line, "model %s is new, so it needs every rating and its context; missing: %s", ref, strings.Join(missing, ", "))
				continue
			}
		}
		bad := false
		for _, k := range ratingKeys {
			if v := rm.get(k); v != nil {
				if *v < 1 || *v > 5 {
					errs.add(keyLine(k), "model %s: %s = %d: ratings are 1 to 5", ref, k, *v)
					bad = true
				}
				*m.Ratings.field(k) = *v
			}
		}
		if rm.Context != nil {
			if *rm.Context <= 0 {
				errs.add(keyLine("context"), "model %s: context = %d: the context size in tokens must be positive", ref, *rm.Context)
				bad = true
			}
			m.Context = *rm.Context
		}
		if rm.Premium != nil {
			m.Premium = *rm.Premium
		}
		if bad {
			continue
		}
		if at >= 0 {
			c.Models[at] = m
		} else {
			c.Models = append(c.Models, m)
		}
	}
	return errs.err()
}

func (c *Catalog) setTier(t Tier) {
	for i := range c.Tiers {
		if c.Tiers[i].Name == t.Name {
			c.Tiers[i] = t
			return
		}
	}
	c.Tiers = append(c.Tiers, t)
	order := func(name string) int { return slices.Index(TierNames, name) }
	slices.SortFunc(c.Tiers, func(a, b Tier) int { return order(a.Name) - order(b.Name) })
}

// String names a tier's minimums, e.g. "reasoning≥5 coding≥5".
func (t Tier) String() string {
	var parts []string
	for i, v := range t.Min.values() {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s≥%d", ratingKeys[i], v))
		}
	}
	if t.MinContext > 0 {
		parts = append(parts, fmt.Sprintf("context≥%s", formatContext(t.MinContext)))
	}
	if len(parts) == 0 {
		return "no minimums"
	}
	return strings.Join(parts, " ")
}
