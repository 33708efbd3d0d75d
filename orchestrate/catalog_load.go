package orchestrate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
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
	md, err := toml.Decode(string(src), &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			errs.add(pe.Position.Line, "%s", pe.Message)
		} else {
			errs.add(0, "%v", err)
		}
		return errs.err()
	}
	loc := locateTOML(src)
	reportUndecoded(errs, md.Undecoded(), loc)

	// Tiers: a [tiers.NAME] table replaces that tier's minimums.
	names := make([]string, 0, len(raw.Tiers))
	for name := range raw.Tiers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		line := loc.tiers[name]
		if !slices.Contains(TierNames, name) {
			errs.add(line, "unknown tier %q: tiers are %s", name, strings.Join(TierNames, ", "))
			continue
		}
		r := raw.Tiers[name]
		t := Tier{Name: name}
		for _, k := range ratingKeys {
			if v := r.get(k); v != nil {
				if *v < 1 || *v > 5 {
					errs.add(lineOr(loc.tierKeys[name][k], line), "tier %s: %s = %d: a minimum rating is 1 to 5 (leave the key out for no minimum)", name, k, *v)
				}
				*t.Min.field(k) = *v
			}
		}
		if r.Context != nil {
			if *r.Context < 0 {
				errs.add(lineOr(loc.tierKeys[name]["context"], line), "tier %s: context = %d must not be negative", name, *r.Context)
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
		line := 0
		if i < len(loc.models) {
			line = loc.models[i]
		}
		keyLine := func(k string) int {
			if i < len(loc.modelKeys) {
				return lineOr(loc.modelKeys[i][k], line)
			}
			return line
		}
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

func lineOr(line, fallback int) int {
	if line > 0 {
		return line
	}
	return fallback
}

// reportUndecoded turns the keys toml did not decode into unknown-key errors. toml
// names a key of an array of tables without its index, so the line comes from loc: every
// [[model]] that has the key gets its own error.
func reportUndecoded(errs *errorList, keys []toml.Key, loc tomlLocation) {
	undecoded := map[string]bool{}
	for _, k := range keys {
		undecoded[k.String()] = true
	}
	for _, k := range keys {
		if len(k) > 1 && undecoded[k[:len(k)-1].String()] {
			continue // the parent table is unknown already; one error says it
		}
		switch {
		case len(k) == 2 && k[0] == "model":
			found := false
			for _, keys := range loc.modelKeys {
				if line, ok := keys[k[1]]; ok {
					errs.add(line, "unknown key %q in [[model]]: keys are provider, id, %s, context, premium, disabled", k[1], strings.Join(ratingKeys, ", "))
					found = true
				}
			}
			if !found {
				errs.add(0, "unknown key %q in [[model]]", k[1])
			}
		case len(k) == 3 && k[0] == "tiers":
			errs.add(loc.tierKeys[k[1]][k[2]], "unknown key %q in [tiers.%s]: keys are %s, context", k[2], k[1], strings.Join(ratingKeys, ", "))
		default:
			errs.add(loc.other[k.String()], "unknown key %q: a catalog has [tiers.NAME] and [[model]] tables", k.String())
		}
	}
}

// tomlLocation is where tables and keys of a catalog file are, found by a line scan:
// BurntSushi/toml keeps key positions private and names array-of-tables keys without
// their index. The scan understands the plain "key = value" style catalog files use;
// anything it cannot place is reported without a line.
type tomlLocation struct {
	models    []int            // header line of each [[model]], in order
	modelKeys []map[string]int // per [[model]]: key → line
	tiers     map[string]int   // tier name → header line
	tierKeys  map[string]map[string]int
	other     map[string]int // any other table or root key → line
}

func locateTOML(src []byte) tomlLocation {
	loc := tomlLocation{tiers: map[string]int{}, tierKeys: map[string]map[string]int{}, other: map[string]int{}}
	var keys map[string]int // the current table's keys
	prefix := ""            // the current table's dotted name, for loc.other
	inMulti := ""           // the delimiter of a multi-line string being skipped
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		if inMulti != "" {
			if strings.Count(line, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		t := strings.TrimSpace(stripTOMLComment(line))
		switch {
		case t == "":
		case strings.HasPrefix(t, "[["):
			name := tableName(strings.TrimSuffix(strings.TrimPrefix(t, "[["), "]]"))
			if name == "model" {
				loc.models = append(loc.models, n)
				keys = map[string]int{}
				loc.modelKeys = append(loc.modelKeys, keys)
			} else {
				keys = nil
				loc.other[name] = n
			}
			prefix = name
		case strings.HasPrefix(t, "["):
			name := tableName(strings.TrimSuffix(strings.TrimPrefix(t, "["), "]"))
			prefix = name
			keys = nil
			if tier, ok := strings.CutPrefix(name, "tiers."); ok {
				loc.tiers[tier] = n
				keys = map[string]int{}
				loc.tierKeys[tier] = keys
			} else {
				loc.other[name] = n
			}
		default:
			k, v, ok := strings.Cut(t, "=")
			if !ok {
				continue
			}
			k = tableName(k)
			if keys != nil {
				keys[k] = n
			} else if prefix != "" {
				loc.other[prefix+"."+k] = n
			} else {
				loc.other[k] = n
			}
			for _, d := range []string{`"""`, `'''`} {
				if strings.Count(v, d)%2 == 1 {
					inMulti = d
				}
			}
		}
	}
	return loc
}

// tableName normalises a table or key name: spaces around dots and quotes dropped.
func tableName(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// stripTOMLComment drops a # comment that is not inside a string.
func stripTOMLComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote != 0:
			if ch == '\\' && quote == '"' {
				i++
			} else if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'':
			quote = ch
		case ch == '#':
			return line[:i]
		}
	}
	return line
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
