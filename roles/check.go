package roles

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Providers a role may name: the ones orcr runs.
var Providers = []string{"claude", "codex", "opencode", "pi", "shell"}

// claudeAliases are the model aliases claude's --model takes.
var claudeAliases = []string{"sonnet", "opus", "haiku", "opusplan", "default", "sonnet[1m]", "opus[1m]"}

var (
	codexModelRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(gpt-[0-9][a-z0-9.-]*|o[0-9][a-z0-9.-]*|codex-[a-z0-9.-]+)$`)
	})
	slashModelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._:-]*$`) })
)

// Catalog is the model catalog as roles asks it: does it list provider:model? The
// plans feature provides it (CatalogCapability); roles imports no feature.
type Catalog interface {
	Knows(ref string) bool
}

// CatalogChecker checks a provider:model against the model catalog, accepting also
// what each provider's --model takes beyond it: claude's aliases and claude-… ids,
// codex's gpt-…/o…/codex-… ids, and vendor/model ids for opencode and pi. So a role
// may name a model newer than the catalog, but not a typo of a provider or a model
// of another provider's family.
func CatalogChecker(cat Catalog) Checker {
	return func(provider, model string) error {
		if !slices.Contains(Providers, provider) {
			return fmt.Errorf("unknown provider %q; known: %s", provider, strings.Join(Providers, ", "))
		}
		if model == "" {
			return nil
		}
		if provider == "shell" {
			return fmt.Errorf("the shell provider takes no model")
		}
		if cat != nil && cat.Knows(provider+":"+model) {
			return nil
		}
		ok := false
		switch provider {
		case "claude":
			ok = slices.Contains(claudeAliases, model) || strings.HasPrefix(model, "claude-")
		case "codex":
			ok = codexModelRE().MatchString(model)
		case "opencode", "pi":
			ok = slashModelRE().MatchString(model)
		}
		if !ok {
			return fmt.Errorf("unknown model %q for %s: not in the catalog (orcr catalog) and not a %s model name (%s)",
				model, provider, provider, modelHint(provider))
		}
		return nil
	}
}

func modelHint(provider string) string {
	switch provider {
	case "claude":
		return "sonnet, opus, haiku or claude-…"
	case "codex":
		return "gpt-…, o… or codex-…"
	}
	return "vendor/model"
}
